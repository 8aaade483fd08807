// layers::LayerNormalization: each example normalised over its feature axes, Keras's parameter
// layout, float32 statistics for bfloat16 inputs, and errors. Gradients: layer_gradients_test.cpp.

#include "tapeflow/nn/layer_normalization.h"

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

std::vector<double> values(const tf::Tensor& t) { return t.to_vector<double>(); }

TEST(LayerNormalization, NormalisesEachExampleOverItsLastAxis) {
  // Row 1: mean 2.5, variance 1.25. Row 2: mean 20, variance 200 (each example its own).
  tf::layers::LayerNormalization norm;
  const tf::Tensor y = norm(tf::constant({{1.0, 2.0, 3.0, 4.0}, {0.0, 10.0, 30.0, 40.0}}));
  const double s1 = 1.0 / std::sqrt(1.25 + 1e-3), s2 = 1.0 / std::sqrt(250.0 + 1e-3);
  EXPECT_THAT(values(y),
              Pointwise(DoubleNear(1e-12), std::vector<double>{-1.5 * s1, -0.5 * s1, 0.5 * s1, 1.5 * s1,
                                                               -20 * s2, -10 * s2, 10 * s2, 20 * s2}));
  // Keras's layout: gamma ones and beta zeros of the normalised axis, trainable, in that order.
  ASSERT_EQ(norm.trainable_variables().size(), 2u);
  EXPECT_EQ(norm.gamma().name(), "gamma");
  EXPECT_EQ(norm.beta().name(), "beta");
  EXPECT_EQ(norm.gamma().shape(), tf::Shape{4});
  EXPECT_THAT(values(norm.gamma().value()), Pointwise(DoubleNear(0), std::vector<double>{1, 1, 1, 1}));
}

TEST(LayerNormalization, GammaScalesAndBetaShiftsEachFeature) {
  tf::layers::LayerNormalization norm({.epsilon = 1e-6});
  const tf::Tensor x = tf::constant({{1.0, 3.0}});  // mean 2, variance 1
  norm(x);
  tf::Variable gamma = norm.gamma(), beta = norm.beta();  // handles to the layer's variables
  gamma.assign(tf::constant({2.0, 3.0}));
  beta.assign(tf::constant({10.0, 20.0}));
  const double s = 1.0 / std::sqrt(1.0 + 1e-6);
  EXPECT_THAT(values(norm(x)), Pointwise(DoubleNear(1e-12), std::vector<double>{10 - 2 * s, 20 + 3 * s}));
}

TEST(LayerNormalization, SeveralAxesShareOneMeanAndTheParametersHaveTheirShape) {
  tf::layers::LayerNormalization norm({.axis = {1, 2}});
  const tf::Tensor x = tf::reshape(tf::range(0.0, 12.0, 1.0, tf::float64), {2, 2, 3});
  const tf::Tensor y = norm(x);
  EXPECT_EQ(norm.gamma().shape(), (tf::Shape{2, 3}));
  // Each example's six values 0..5 (and 6..11): mean 2.5 and 8.5, variance 35/12.
  const double s = 1.0 / std::sqrt(35.0 / 12.0 + 1e-3);
  std::vector<double> want;
  for (int e = 0; e < 2; ++e)
    for (int i = 0; i < 6; ++i) want.push_back((i - 2.5) * s);
  EXPECT_THAT(values(y), Pointwise(DoubleNear(1e-12), want));
}

TEST(LayerNormalization, WithoutCenterAndScaleItHasNoVariables) {
  tf::layers::LayerNormalization norm({.center = false, .scale = false});
  norm(tf::ones({2, 3}));
  EXPECT_TRUE(norm.variables().empty());
  EXPECT_THAT(error_of<tf::FailedPreconditionError>([&] { norm.gamma(); }), HasSubstr("scale is false"));
  EXPECT_THAT(error_of<tf::FailedPreconditionError>([&] { norm.beta(); }), HasSubstr("center is false"));
}

TEST(LayerNormalization, ABFloat16InputIsNormalisedInFloat32) {
  tf::layers::LayerNormalization norm;
  const tf::Tensor x = tf::constant({{1.0f, 2.0f, 3.0f, 4.0f}});
  const tf::Tensor y = norm(tf::cast(x, tf::bfloat16));
  EXPECT_EQ(y.dtype(), tf::bfloat16);
  EXPECT_EQ(norm.gamma().dtype(), tf::float32);
  const tf::Tensor want = tf::cast(tf::layers::LayerNormalization()(x), tf::bfloat16);
  EXPECT_EQ(tf::cast(y, tf::float32).to_vector<float>(), tf::cast(want, tf::float32).to_vector<float>());
}

TEST(LayerNormalization, BadInputNamesTheLayerTheShapeAndTheDtype) {
  EXPECT_THAT(error_of([] { tf::layers::LayerNormalization({.epsilon = 0}); }),
              HasSubstr("epsilon must be positive"));
  EXPECT_THAT(error_of([] { tf::layers::LayerNormalization({.axis = std::vector<std::int64_t>{}}); }),
              HasSubstr("at least one axis"));
  tf::layers::LayerNormalization norm({.name = "ln"});
  EXPECT_THAT(
      error_of([&] {
        norm(tf::ones({2, 3}, tf::int32));
      }),
      HasSubstr("[LayerNormalization] layer 'ln' needs floating inputs, got shape (2, 3) and dtype int32"));
  EXPECT_THAT(error_of([&] {
                tf::layers::LayerNormalization({.axis = 2})(tf::ones({2, 3}));
              }),
              HasSubstr("axis 2, which an input of shape (2, 3) (rank 2) does not have"));
  EXPECT_THAT(error_of([&] {
                tf::layers::LayerNormalization({.axis = {1, -1}})(tf::ones({2, 3}));
              }),
              HasSubstr("was given axis -1 twice"));
  EXPECT_THAT(error_of([&] { norm(tf::ones({2, 0})); }), HasSubstr("has nothing to normalise over"));
  norm(tf::ones({2, 3}));
  EXPECT_THAT(error_of([&] {
                norm(tf::ones({2, 4}));
              }),
              HasSubstr("was built for float32 inputs whose normalised dimensions are (3,); got an input of "
                        "shape (2, 4)"));
  EXPECT_THAT(error_of([&] { norm(tf::ones({2, 3}, tf::float64)); }), HasSubstr("dtype float64"));
  EXPECT_THAT(error_of([&] { norm(tf::Tensor()); }), HasSubstr("undefined"));
}

}  // namespace
