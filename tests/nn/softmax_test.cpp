// layers::Softmax: nn::softmax over the layer's axis, and errors. Gradients:
// layer_gradients_test.cpp.

#include "tapeflow/nn/softmax.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using tf::testing::error_of;

namespace {

TEST(SoftmaxLayer, NormalisesTheExponentialsOverItsAxis) {
  const tf::Tensor x = tf::constant({{1.0, 2.0, 3.0}, {0.0, 0.0, 0.0}});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_THAT(
      tf::layers::Softmax()(x).to_vector<double>(),
      Pointwise(DoubleNear(1e-15), std::vector<double>{std::exp(1.0) / z, std::exp(2.0) / z,
                                                       std::exp(3.0) / z, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
  // Over the batch axis: each column sums to 1.
  const std::vector<double> columns = tf::layers::Softmax({.axis = 0})(x).to_vector<double>();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(columns[j] + columns[3 + j], 1.0, 1e-15);
}

TEST(SoftmaxLayer, BadInputNamesTheLayerTheShapeAndTheDtype) {
  EXPECT_THAT(
      error_of([] { tf::layers::Softmax()(tf::ones({2}, tf::int32)); }),
      HasSubstr("[Softmax] layer 'softmax' needs floating inputs with an axis -1, got shape (2,) and dtype "
                "int32"));
  EXPECT_THAT(error_of([] { tf::layers::Softmax({.axis = 2})(tf::ones({2, 3})); }), HasSubstr("axis 2"));
  EXPECT_THAT(error_of([] { tf::layers::Softmax()(tf::Tensor()); }), HasSubstr("undefined"));
}

}  // namespace
