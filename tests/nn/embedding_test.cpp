// layers::Embedding: Keras's table layout and initialiser range, lookups of ids of any shape,
// the mask of padding ids, gradients only in the rows looked up, training, errors.

#include "tapeflow/nn/embedding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

TEST(Embedding, HasAKerasTableDrawnFromPlusMinusFiveHundredths) {
  tf::layers::Embedding embed(100, 8, {.seed = 3});
  EXPECT_EQ(embed.embeddings().shape(), tf::Shape({100, 8}));
  EXPECT_EQ(embed.embeddings().dtype(), tf::float32);
  EXPECT_THAT(tf::testing::names(embed.trainable_variables()), ElementsAre("embeddings"));
  const std::vector<float> table = embed.embeddings().value().to_vector<float>();
  EXPECT_LE(*std::max_element(table.begin(), table.end()), 0.05f);
  EXPECT_GE(*std::min_element(table.begin(), table.end()), -0.05f);
  EXPECT_GT(*std::max_element(table.begin(), table.end()), 0.04f);  // the whole range is used
}

TEST(Embedding, LooksUpTheRowOfEachIdForIdsOfAnyShape) {
  tf::layers::Embedding embed(4, 2);
  tf::Variable table = embed.embeddings();
  table.assign(tf::constant({{0.f, 0.f}, {1.f, 10.f}, {2.f, 20.f}, {3.f, 30.f}}));
  const tf::Tensor y = embed(tf::constant(std::vector<std::int64_t>{3, 1, 1, 0, 2, 3}, tf::Shape{2, 3}));
  EXPECT_EQ(y.shape(), tf::Shape({2, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 30, 1, 10, 1, 10, 0, 0, 2, 20, 3, 30}));
  EXPECT_EQ(embed(tf::constant(std::int32_t{2})).shape(), tf::Shape({2}));  // a scalar id: one vector
  // Float ids are cast to int32, as Keras casts them.
  EXPECT_EQ(embed(tf::constant({2.0f})).to_vector<float>(), (std::vector<float>{2, 20}));
}

TEST(Embedding, TheGradientIsNonZeroOnlyInTheRowsLookedUpAndAddsRepeats) {
  tf::layers::Embedding embed(4, 2);
  const tf::Tensor ids = tf::constant(std::vector<std::int32_t>{1, 3, 1}, tf::Shape{3});
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(embed(ids));
  const auto g = tape.gradient(loss, embed.trainable_variables());
  EXPECT_EQ(g[0]->to_vector<float>(), (std::vector<float>{0, 0, 2, 2, 0, 0, 1, 1}));
}

TEST(Embedding, MaskZeroMarksPaddingForTheLoss) {
  tf::layers::Embedding embed(5, 3, {.mask_zero = true});
  const tf::Tensor ids = tf::constant(std::vector<std::int32_t>{4, 2, 0, 0}, tf::Shape{2, 2});
  const std::optional<tf::Tensor> mask = embed.compute_mask(ids);
  ASSERT_TRUE(mask.has_value());
  EXPECT_EQ(mask->to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  EXPECT_FALSE(tf::layers::Embedding(5, 3).compute_mask(ids).has_value());
}

TEST(Embedding, UnderMixedBfloat16KeepsAFloat32TableAndOutputsBfloat16) {
  tf::layers::Embedding embed(10, 4, {.dtype_policy = tf::mixed_precision::Policy("mixed_bfloat16")});
  EXPECT_EQ(embed.embeddings().dtype(), tf::float32);
  EXPECT_EQ(embed(tf::constant(std::vector<std::int32_t>{1, 2}, tf::Shape{2})).dtype(), tf::bfloat16);
}

TEST(Embedding, LearnsToSeparateTwoTokens) {
  // Token 0 should score +1 and token 1 -1 through a scalar per token (width 1): plain SGD on MSE.
  tf::layers::Embedding embed(2, 1, {.seed = 5});
  tf::optimizers::SGD opt(0.5);
  const tf::Tensor ids = tf::constant(std::vector<std::int32_t>{0, 1}, tf::Shape{2});
  const tf::Tensor target = tf::constant({{1.f}, {-1.f}});
  for (int i = 0; i < 50; ++i) {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::losses::mean_squared_error(target, embed(ids));
    opt.apply_gradients(tape.gradient(loss, embed.trainable_variables()), embed.trainable_variables());
  }
  EXPECT_THAT(embed(ids).to_vector<float>(),
              ::testing::Pointwise(::testing::FloatNear(1e-3f), std::vector<float>{1.f, -1.f}));
}

TEST(Embedding, BadArgumentsAndIdsNameTheLayer) {
  EXPECT_THAT([] { tf::layers::Embedding(0, 4); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[Embedding] input_dim and output_dim must be positive")));
  tf::layers::Embedding embed(10, 4, {.name = "tokens"});
  EXPECT_THAT(
      [&] {
        embed(tf::constant(std::vector<std::int32_t>{3, 10}, tf::Shape{2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Embedding] layer 'tokens' has 10 ids, [0, 10)"), HasSubstr("10"))));
  EXPECT_THAT([&] { embed(tf::constant(std::vector<std::int32_t>{-1}, tf::Shape{1})); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Embedding] layer 'tokens'")));
  EXPECT_THAT(
      [&] { embed(tf::constant(std::vector<bool>{true}, tf::Shape{1})); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("needs integer ids"), HasSubstr("bool"))));
  EXPECT_EQ(embed(tf::zeros({2, 0}, tf::int32)).shape(), tf::Shape({2, 0, 4}));  // no ids, no vectors
}

}  // namespace
