// layers::GlobalAveragePooling1D/2D: the mean over steps or positions per channel, keepdims, and
// errors. Gradients: layer_gradients_test.cpp.

#include "tapeflow/nn/global_pooling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tf::testing::error_of;

namespace {

TEST(GlobalAveragePooling1D, AveragesTheStepsOfEachChannel) {
  // Two sequences of three steps with two channels.
  const tf::Tensor x =
      tf::constant({{{1.0, 10.0}, {2.0, 20.0}, {6.0, 60.0}}, {{0.0, -3.0}, {0.0, 3.0}, {3.0, 0.0}}});
  tf::layers::GlobalAveragePooling1D pool;
  EXPECT_EQ(pool.name(), "global_average_pooling1d");
  const tf::Tensor y = pool(x);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(3.0, 30.0, 1.0, 0.0));
  EXPECT_EQ(tf::layers::GlobalAveragePooling1D({.keepdims = true})(x).shape(), (tf::Shape{2, 1, 2}));
}

TEST(GlobalAveragePooling2D, AveragesThePositionsOfEachChannel) {
  const tf::Tensor x = tf::reshape(tf::range(0.0, 8.0, 1.0, tf::float64), {1, 2, 2, 2});
  const tf::Tensor y = tf::layers::GlobalAveragePooling2D()(x);
  EXPECT_EQ(y.shape(), (tf::Shape{1, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(3.0, 4.0));  // (0+2+4+6)/4, (1+3+5+7)/4
  EXPECT_EQ(tf::layers::GlobalAveragePooling2D({.keepdims = true})(x).shape(), (tf::Shape{1, 1, 1, 2}));
}

TEST(GlobalAveragePooling, BadInputNamesTheLayerTheShapeAndTheDtype) {
  tf::layers::GlobalAveragePooling1D pool1({.name = "pool"});
  EXPECT_THAT(
      error_of([&] {
        pool1(tf::ones({2, 3}));
      }),
      HasSubstr("[GlobalAveragePooling1D] layer 'pool' needs floating inputs of rank 3 (channels last), got "
                "shape (2, 3) and dtype float32"));
  EXPECT_THAT(error_of([&] { pool1(tf::ones({2, 3, 4}, tf::int64)); }), HasSubstr("dtype int64"));
  EXPECT_THAT(error_of([&] { pool1(tf::ones({2, 0, 4})); }), HasSubstr("has no steps"));
  EXPECT_THAT(
      error_of([] {
        tf::layers::GlobalAveragePooling2D()(tf::ones({2, 3, 4}));
      }),
      HasSubstr("[GlobalAveragePooling2D] layer 'global_average_pooling2d' needs floating inputs of rank 4"));
  EXPECT_THAT(error_of([] {
                tf::layers::GlobalAveragePooling2D()(tf::ones({1, 0, 2, 3}));
              }),
              HasSubstr("has no positions"));
}

}  // namespace
