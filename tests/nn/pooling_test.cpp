// layers::MaxPool2D and AveragePool2D: values, default strides, padding, gradients, errors.

#include "tapeflow/nn/pooling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

/// 1..16 as a (1, 4, 4, 1) image.
tf::Tensor image4x4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
  return tf::constant<float>(v, tf::Shape({1, 4, 4, 1}));
}

std::vector<float> values(const tf::Tensor& t) {
  return {t.values<float>().begin(), t.values<float>().end()};
}

}  // namespace

TEST(MaxPool2D, TakesTheMaximumOfEachWindowWithStridesDefaultingToPoolSize) {
  tf::layers::MaxPool2D pool;
  EXPECT_EQ(pool.strides(), (std::array<std::int64_t, 2>{2, 2}));
  tf::Tensor y = pool(image4x4());
  EXPECT_EQ(y.shape(), tf::Shape({1, 2, 2, 1}));
  EXPECT_THAT(values(y), ElementsAre(6, 8, 14, 16));
  EXPECT_EQ(pool.name(), "max_pooling2d");
  EXPECT_TRUE(pool.variables().empty());
}

TEST(MaxPool2D, ExplicitStridesOverlapWindows) {
  tf::layers::MaxPool2D pool({2, 2}, {{1, 1}});
  tf::Tensor y = pool(image4x4());
  EXPECT_EQ(y.shape(), tf::Shape({1, 3, 3, 1}));
  EXPECT_THAT(values(y), ElementsAre(6, 7, 8, 10, 11, 12, 14, 15, 16));
}

TEST(MaxPool2D, SamePaddingKeepsCeilOfSizeOverStride) {
  tf::layers::MaxPool2D pool({3, 3}, std::nullopt, "same");
  EXPECT_EQ(pool(tf::zeros({2, 7, 5, 3})).shape(), tf::Shape({2, 3, 2, 3}));
}

TEST(MaxPool2D, GradientGoesToTheMaximumOfEachWindow) {
  tf::layers::MaxPool2D pool;
  tf::Variable v(image4x4(), {.name = "v"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(pool(v));
  auto g = tape.gradient(loss, std::vector<tf::Variable>{v})[0];
  ASSERT_TRUE(g.has_value());
  EXPECT_THAT(values(*g), ElementsAre(0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1));
}

TEST(AveragePool2D, TakesTheMeanOfEachWindow) {
  tf::layers::AveragePool2D pool;
  tf::Tensor y = pool(image4x4());
  EXPECT_THAT(values(y), ElementsAre(3.5f, 5.5f, 11.5f, 13.5f));
  EXPECT_EQ(pool.name(), "average_pooling2d");
}

TEST(AveragePool2D, SamePaddingAveragesOnlyInputElements) {
  // A 3x3 window with stride 2 on 1..16 ("SAME": pad 0 before, 1 after): the last window
  // column/row is cut by the padding, and the mean is over what remains.
  tf::layers::AveragePool2D pool({3, 3}, {{2, 2}}, "SAME");
  tf::Tensor y = pool(image4x4());
  EXPECT_EQ(y.shape(), tf::Shape({1, 2, 2, 1}));
  EXPECT_THAT(values(y), ElementsAre(6.f, 7.5f, 12.f, 13.5f));
}

TEST(AveragePool2D, GradientSpreadsEvenlyOverEachWindow) {
  tf::layers::AveragePool2D pool;
  tf::Variable v(image4x4(), {.name = "v"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(pool(v));
  auto g = tape.gradient(loss, std::vector<tf::Variable>{v})[0];
  ASSERT_TRUE(g.has_value());
  for (float x : values(*g)) EXPECT_FLOAT_EQ(x, 0.25f);
}

TEST(AveragePool2D, WorksInFloat64AndOnEmptyBatches) {
  tf::layers::AveragePool2D pool;
  EXPECT_EQ(pool(tf::ones({1, 2, 2, 1}, tf::float64)).values<double>()[0], 1.0);
  EXPECT_EQ(pool(tf::zeros({0, 4, 4, 2})).shape(), tf::Shape({0, 2, 2, 2}));
}

TEST(Pooling, RankThreeInputThrowsNamingTheLayerAndShape) {
  tf::layers::MaxPool2D pool;
  EXPECT_THAT(
      [&] {
        pool(tf::zeros({4, 4, 1}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[MaxPool2D]"), HasSubstr("rank 4"), HasSubstr("(4, 4, 1)"))));
  tf::layers::AveragePool2D avg;
  EXPECT_THAT(
      [&] {
        avg(tf::zeros({4, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[AveragePool2D]"), HasSubstr("(4, 4)"))));
}

TEST(Pooling, ValidWindowLargerThanTheImageThrows) {
  tf::layers::MaxPool2D pool({3, 3});
  EXPECT_THAT(
      [&] {
        pool(tf::zeros({1, 2, 2, 1}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[MaxPool2D]"), HasSubstr("3x3 window"), HasSubstr("(1, 2, 2, 1)"))));
}

TEST(Pooling, IntegerInputThrows) {
  tf::layers::AveragePool2D pool;
  EXPECT_THAT(
      [&] {
        pool(tf::zeros({1, 2, 2, 1}, tf::int32));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[AveragePool2D]"), HasSubstr("int32"))));
}

TEST(Pooling, InvalidConstructorArgumentsThrow) {
  EXPECT_THAT(
      [] {
        tf::layers::MaxPool2D({0, 2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[MaxPool2D] pool_size must be positive, got (0, 2)")));
  EXPECT_THAT(
      [] {
        tf::layers::AveragePool2D({2, 2}, {{2, -1}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[AveragePool2D] strides must be positive, got (2, -1)")));
  EXPECT_THAT(
      [] {
        tf::layers::MaxPool2D({2, 2}, std::nullopt, "causal");
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[MaxPool2D] unknown padding 'causal'")));
}

// ---- the factories -----------------------------------------------------------------------------

TEST(MaxPool2D, FactoryMakesTheLayerTheConstructorMakes) {
  std::shared_ptr<tf::layers::MaxPool2D> pool = tf::layers::max_pool2d();
  tf::layers::MaxPool2D by_hand;
  EXPECT_EQ(pool->name(), by_hand.name());
  EXPECT_EQ(pool->pool_size(), by_hand.pool_size());
  EXPECT_EQ(pool->strides(), by_hand.strides());
  auto same = tf::layers::max_pool2d({3, 3}, {{1, 1}}, "same", "p");
  tf::layers::MaxPool2D same_by_hand({3, 3}, {{1, 1}}, "same", "p");
  EXPECT_EQ(same->name(), "p");
  EXPECT_EQ(values((*same)(image4x4())), values(same_by_hand(image4x4())));
  EXPECT_THROW(tf::layers::max_pool2d({2, 2}, std::nullopt, "full"), tf::InvalidArgumentError);
}

TEST(AveragePool2D, FactoryMakesTheLayerTheConstructorMakes) {
  std::shared_ptr<tf::layers::AveragePool2D> pool = tf::layers::average_pool2d();
  tf::layers::AveragePool2D by_hand;
  EXPECT_EQ(pool->name(), by_hand.name());
  EXPECT_EQ(pool->pool_size(), by_hand.pool_size());
  EXPECT_EQ(values((*pool)(image4x4())), values(by_hand(image4x4())));
  auto same = tf::layers::average_pool2d({3, 3}, {{1, 1}}, "same");
  tf::layers::AveragePool2D same_by_hand({3, 3}, {{1, 1}}, "same");
  EXPECT_EQ(values((*same)(image4x4())), values(same_by_hand(image4x4())));
}
