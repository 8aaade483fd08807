// Layer's own members: Keras's get_weights and set_weights (in variables() order, all or nothing)
// and the trainable flag (what freezing a layer or a model changes).

#include "tapeflow/nn/layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Layer, SetWeightsAssignsInTheOrderOfVariablesAndGetWeightsReadsThemBack) {
  tf::layers::Dense dense(2, {.name = "head"});
  (void)dense(tf::ones({1, 3}));
  dense.set_weights({tf::fill({3, 2}, 1.5f), tf::constant({-1.f, 2.f})});
  const std::vector<tf::Tensor> weights = dense.get_weights();
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0].to_vector<float>(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(weights[1].to_vector<float>(), (std::vector<float>{-1.f, 2.f}));
  EXPECT_EQ(dense(tf::ones({1, 3})).to_vector<float>(), (std::vector<float>{3.5f, 6.5f}));
}

TEST(Layer, SetWeightsOfTheWrongCountShapeOrDtypeNamesTheLayerAndAssignsNothing) {
  tf::layers::Dense dense(2, {.name = "head"});
  (void)dense(tf::ones({1, 3}));
  const std::vector<tf::Tensor> before = dense.get_weights();
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("layer 'head' has 2 weights, got a list of 1")));
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2}), tf::ones({3})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("weight 1 'bias' is float32 (2,), got float32 (3,)")));
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2}), tf::ones({2}, tf::float64)});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("got float64 (2,)")));
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2}), tf::Tensor()});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("got an undefined tensor")));
  const std::vector<tf::Tensor> after = dense.get_weights();
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(after[i].to_vector<float>(), before[i].to_vector<float>());
}

TEST(Layer, AFrozenLayerHasNoTrainableVariablesAndFitLeavesItAsItIs) {
  auto base = tf::layers::dense(4, "relu", {.name = "base", .seed = 1});
  auto head = tf::layers::dense(2, {.name = "head", .seed = 2});
  tf::layers::Sequential model({base, head});
  const tf::Tensor x = tf::random::uniform({16, 3}, -1, 1, tf::float32, 3);
  const tf::Tensor y = tf::cast(tf::random::uniform({16}, 0, 2, tf::float32, 4), tf::int64);
  (void)model(x);
  base->set_trainable(false);
  EXPECT_FALSE(base->trainable());
  EXPECT_TRUE(model.trainable());
  EXPECT_TRUE(base->trainable_variables().empty());
  EXPECT_EQ(model.trainable_variables().size(), 2u);  // the head's kernel and bias
  EXPECT_EQ(model.trainable_variables()[0].handle_id(), head->kernel().handle_id());
  EXPECT_EQ(model.non_trainable_variables().size(), 2u);
  EXPECT_EQ(model.non_trainable_variables()[0].handle_id(), base->kernel().handle_id());

  const std::vector<tf::Tensor> base_before = base->get_weights(), head_before = head->get_weights();
  model.compile(std::make_shared<tf::optimizers::SGD>(0.5),
                tf::losses::Loss("sparse_categorical_crossentropy", {.from_logits = true}));
  (void)model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0});
  const std::vector<tf::Tensor> base_after = base->get_weights(), head_after = head->get_weights();
  for (std::size_t i = 0; i < base_before.size(); ++i)
    EXPECT_EQ(base_after[i].to_vector<float>(), base_before[i].to_vector<float>());
  EXPECT_NE(head_after[0].to_vector<float>(), head_before[0].to_vector<float>());
}

TEST(Layer, FreezingAModelFreezesEveryLayerItHoldsAndUnfreezingRestoresThem) {
  auto a = tf::layers::dense(3, {.seed = 1});
  auto b = tf::layers::dense(1, {.seed = 2});
  tf::layers::Sequential model({a, b});
  (void)model(tf::ones({1, 2}));
  model.set_trainable(false);
  EXPECT_FALSE(a->trainable());
  EXPECT_FALSE(b->trainable());
  EXPECT_TRUE(model.trainable_variables().empty());
  EXPECT_EQ(model.non_trainable_variables().size(), 4u);
  model.set_trainable(true);
  EXPECT_TRUE(a->trainable() && b->trainable());
  EXPECT_EQ(model.trainable_variables().size(), 4u);
  EXPECT_TRUE(model.non_trainable_variables().empty());
}

TEST(Layer, AFrozenBatchNormalizationRunsInInferenceModeAndKeepsItsMovingStatistics) {
  tf::layers::BatchNormalization bn;
  const tf::Tensor x = tf::random::normal({32, 3}, 5, 2, tf::float32, 7);
  (void)bn(x, /*training=*/true);  // builds it and moves the statistics once
  bn.set_trainable(false);
  const std::vector<tf::Tensor> before = bn.get_weights();
  const tf::Tensor frozen = bn(x, /*training=*/true);
  const tf::Tensor inference = bn(x, /*training=*/false);
  EXPECT_EQ(frozen.to_vector<float>(), inference.to_vector<float>());
  const std::vector<tf::Tensor> after = bn.get_weights();
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(after[i].to_vector<float>(), before[i].to_vector<float>());
  EXPECT_EQ(bn.trainable_variables().size(), 0u);
  EXPECT_EQ(bn.non_trainable_variables().size(), 4u);  // gamma, beta and the moving statistics
}
