// kernel_initializer option of Dense (Conv2D's is tested in conv2d_test.cpp): the Glorot default
// is unchanged, He variants use fan_in only, unknown names throw at construction.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {
double max_abs(const tf::Tensor& t) { return tf::reduce_max(tf::abs(t)).item<float>(); }
}  // namespace

TEST(DenseInitializer, DefaultIsGlorotUniform) {
  tf::layers::Dense a(64, {.seed = 3}), b(64, {.seed = 3, .kernel_initializer = "glorot_uniform"});
  a(tf::ones({1, 32}));
  b(tf::ones({1, 32}));
  EXPECT_EQ(max_abs(a.kernel() - b.kernel()), 0.0);
  EXPECT_LE(max_abs(a.kernel()), std::sqrt(6.0 / (32 + 64)));
}

TEST(DenseInitializer, HeUniformIsBoundedBySqrtSixOverFanIn) {
  tf::layers::Dense layer(64, {.seed = 3, .kernel_initializer = "he_uniform"});
  layer(tf::ones({1, 32}));
  const double limit = std::sqrt(6.0 / 32);
  EXPECT_LE(max_abs(layer.kernel()), limit);
  EXPECT_GT(max_abs(layer.kernel()), 0.9 * limit);  // 2048 draws
}

TEST(DenseInitializer, HeNormalHasStddevSqrtTwoOverFanIn) {
  tf::layers::Dense layer(256, {.seed = 5, .kernel_initializer = "he_normal"});
  layer(tf::ones({1, 64}, tf::float64));
  const tf::Tensor k = layer.kernel();
  const double stddev = std::sqrt(tf::reduce_mean(k * k).item<double>());
  EXPECT_NEAR(stddev, std::sqrt(2.0 / 64), 0.03 * std::sqrt(2.0 / 64));  // 16384 draws
}

TEST(DenseInitializer, GlorotNormalHasStddevSqrtTwoOverFanSum) {
  tf::layers::Dense layer(256, {.seed = 6, .kernel_initializer = "glorot_normal"});
  layer(tf::ones({1, 64}, tf::float64));
  const tf::Tensor k = layer.kernel();
  const double stddev = std::sqrt(tf::reduce_mean(k * k).item<double>());
  EXPECT_NEAR(stddev, std::sqrt(2.0 / (64 + 256)), 0.03 * std::sqrt(2.0 / (64 + 256)));
}

TEST(DenseInitializer, UnknownNameThrowsAtConstruction) {
  EXPECT_THAT([] { tf::layers::Dense(2, tf::layers::DenseOptions{.kernel_initializer = "lecun_normal"}); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[Dense] unknown kernel_initializer 'lecun_normal'")));
}
