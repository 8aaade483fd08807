// Activations and softmax: closed-form values, special values, dtypes, empty tensors, errors,
// and first and second derivatives against closed forms (the op table checks first derivatives
// numerically; the second derivatives here check that the *Grad ops compose).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/close.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using tf::testing::vals;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// dy/dx of the sum of f(x) (one backward pass with upstream ones).
std::vector<double> grad(tf::Tensor (*f)(const tf::Tensor&), const tf::Tensor& x) {
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = f(x);
  return vals<double>(*tape.gradient(y, x));
}

/// d2/dx2 of f at each element of x (f elementwise), by nested tapes.
std::vector<double> second(tf::Tensor (*f)(const tf::Tensor&), const tf::Tensor& x) {
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = *inner.gradient(f(x), x);
  }
  return vals<double>(*outer.gradient(g, x, {}, tf::UnconnectedGradients::Zero));
}

tf::Tensor gelu_exact(const tf::Tensor& x) { return tf::nn::gelu(x); }
tf::Tensor gelu_tanh(const tf::Tensor& x) { return tf::nn::gelu(x, true); }
tf::Tensor relu6(const tf::Tensor& x) { return tf::nn::relu6(x); }
tf::Tensor leaky(const tf::Tensor& x) { return tf::nn::leaky_relu(x); }
/// softmax(x)[0] for a 2-element x.
tf::Tensor softmax_first(const tf::Tensor& x) {
  return tf::reduce_sum(tf::nn::softmax(x) * tf::constant({1.0, 0.0}));
}

// ---- relu family ---------------------------------------------------------------------------------

TEST(Relu, Values) {
  EXPECT_THAT(vals<float>(tf::nn::relu(tf::constant({-1.f, 0.f, 2.5f}))), ElementsAre(0.f, 0.f, 2.5f));
  EXPECT_THAT(vals<std::int32_t>(tf::nn::relu(tf::constant({-3, 4}))), ElementsAre(0, 4));
  EXPECT_THAT(vals<std::int64_t>(tf::nn::relu6(tf::constant(std::vector<std::int64_t>{-3, 4, 9}))),
              ElementsAre(0, 4, 6));
}

TEST(Relu, NaNPropagates) {
  EXPECT_TRUE(std::isnan(tf::nn::relu(tf::constant(kNaN)).item<double>()));
  EXPECT_TRUE(std::isnan(tf::nn::relu6(tf::constant(kNaN)).item<double>()));
}

TEST(Relu, KeepsShapeOfEmptyTensors) {
  EXPECT_EQ(tf::nn::relu(tf::zeros({1, 0, 3})).shape(), tf::Shape({1, 0, 3}));
  EXPECT_EQ(tf::nn::gelu(tf::zeros({0}, tf::float64)).shape(), tf::Shape({0}));
}

TEST(Relu, GradientIsZeroAtZeroLikeTensorFlow) {
  EXPECT_THAT(grad(&tf::nn::relu, tf::constant({-1.0, 0.0, 2.0})), ElementsAre(0.0, 0.0, 1.0));
}

TEST(Relu, SecondDerivativeIsZeroNotUnconnected) {
  const tf::Tensor x = tf::constant({-1.0, 2.0});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = *inner.gradient(tf::nn::relu(x), x);
  }
  const auto h = outer.gradient(g, x);
  ASSERT_TRUE(h.has_value());
  EXPECT_THAT(vals<double>(*h), ElementsAre(0.0, 0.0));
}

TEST(Relu6, ValuesAndGradient) {
  EXPECT_THAT(vals<double>(tf::nn::relu6(tf::constant({-1.0, 3.0, 7.0}))), ElementsAre(0.0, 3.0, 6.0));
  EXPECT_THAT(grad(&relu6, tf::constant({-1.0, 3.0, 7.0})), ElementsAre(0.0, 1.0, 0.0));
}

TEST(LeakyRelu, ValuesAndGradient) {
  EXPECT_THAT(vals<float>(tf::nn::leaky_relu(tf::constant({-1.f, 2.f}))), ElementsAre(FloatEq(-0.2f), 2.f));
  EXPECT_THAT(vals<float>(tf::nn::leaky_relu(tf::constant({-1.f, 2.f}), 0.5)), ElementsAre(-0.5f, 2.f));
  EXPECT_THAT(grad(&leaky, tf::constant({-1.0, 2.0})), ElementsAre(DoubleNear(0.2, 1e-15), 1.0));
}

// ---- exponential linear units --------------------------------------------------------------------

TEST(Elu, ValuesGradientAndSecondDerivative) {
  const tf::Tensor x = tf::constant({-1.0, 2.0});
  EXPECT_THAT(vals<double>(tf::nn::elu(x)), ElementsAre(DoubleNear(std::exp(-1.0) - 1, 1e-15), 2.0));
  EXPECT_THAT(grad(&tf::nn::elu, x), ElementsAre(DoubleNear(std::exp(-1.0), 1e-15), 1.0));
  EXPECT_THAT(second(&tf::nn::elu, x), ElementsAre(DoubleNear(std::exp(-1.0), 1e-15), 0.0));
}

TEST(Elu, TinyNegativeInputsKeepPrecision) {
  // expm1, not exp(x) - 1: relative accuracy near 0.
  EXPECT_DOUBLE_EQ(tf::nn::elu(tf::constant(-1e-10)).item<double>(), std::expm1(-1e-10));
}

TEST(Selu, ValuesGradientAndSecondDerivative) {
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  const tf::Tensor x = tf::constant({-1.0, 2.0});
  EXPECT_THAT(
      vals<double>(tf::nn::selu(x)),
      ElementsAre(DoubleNear(kScale * kAlpha * (std::exp(-1.0) - 1), 1e-15), DoubleNear(2 * kScale, 1e-15)));
  EXPECT_THAT(grad(&tf::nn::selu, x),
              ElementsAre(DoubleNear(kScale * kAlpha * std::exp(-1.0), 1e-15), DoubleNear(kScale, 1e-15)));
  EXPECT_THAT(second(&tf::nn::selu, x),
              ElementsAre(DoubleNear(kScale * kAlpha * std::exp(-1.0), 1e-14), 0.0));
}

// ---- gelu ----------------------------------------------------------------------------------------

double phi(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(Gelu, ExactValues) {
  const std::vector<double> y = vals<double>(tf::nn::gelu(tf::constant({-1.0, 0.0, 1.0, -10.0})));
  EXPECT_NEAR(y[0], -0.15865525393145707, 1e-16);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_NEAR(y[2], 0.8413447460685429, 1e-15);
  EXPECT_NEAR(y[3], -10 * Phi(-10.0), 1e-30);  // no cancellation far in the left tail
  EXPECT_LT(y[3], 0.0);
}

TEST(Gelu, TanhApproximationValues) {
  const double x = 1.0, u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  EXPECT_NEAR(tf::nn::gelu(tf::constant(x), true).item<double>(), 0.5 * x * (1 + std::tanh(u)), 1e-15);
  EXPECT_FLOAT_EQ(tf::nn::gelu(tf::constant(1.f), true).item<float>(), 0.84119199f);
}

TEST(Gelu, ExactDerivatives) {
  const tf::Tensor x = tf::constant({-1.5, 0.3, 2.0});
  const std::vector<double> g = grad(&gelu_exact, x), h = second(&gelu_exact, x);
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = x.values<double>()[i];
    EXPECT_NEAR(g[i], Phi(v) + v * phi(v), 1e-14);
    EXPECT_NEAR(h[i], phi(v) * (2 - v * v), 1e-14);
  }
}

TEST(Gelu, TanhDerivativesMatchCentralDifferences) {
  const tf::Tensor x = tf::constant({-1.5, 0.3, 2.0});
  const std::vector<double> g = grad(&gelu_tanh, x), h = second(&gelu_tanh, x);
  const double eps = 1e-5;
  const auto f = [](double v) { return tf::nn::gelu(tf::constant(v), true).item<double>(); };
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = x.values<double>()[i];
    EXPECT_NEAR(g[i], (f(v + eps) - f(v - eps)) / (2 * eps), 1e-8);
    EXPECT_NEAR(h[i], (f(v + eps) - 2 * f(v) + f(v - eps)) / (eps * eps), 1e-4);
  }
}

TEST(Gelu, TanhSecondDerivativeIsFiniteForLargeInputs) {
  const std::vector<double> h = second(&gelu_tanh, tf::constant({-400.0, 400.0}));
  EXPECT_THAT(h, ElementsAre(0.0, 0.0));
}

// ---- softmax -------------------------------------------------------------------------------------

TEST(Softmax, Values) {
  const std::vector<double> y = vals<double>(tf::nn::softmax(tf::constant({1.0, 2.0, 3.0})));
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_THAT(y, ElementsAre(DoubleNear(std::exp(1.0) / s, 1e-15), DoubleNear(std::exp(2.0) / s, 1e-15),
                             DoubleNear(std::exp(3.0) / s, 1e-15)));
}

TEST(Softmax, RowsAndColumns) {
  const tf::Tensor x = tf::constant({{1.f, 1.f}, {0.f, 2.f}, {3.f, 0.f}});
  EXPECT_THAT(vals<float>(tf::reduce_sum(tf::nn::softmax(x), {-1})),
              ElementsAre(FloatEq(1), FloatEq(1), FloatEq(1)));
  EXPECT_THAT(vals<float>(tf::reduce_sum(tf::nn::softmax(x, 0), {0})), ElementsAre(FloatEq(1), FloatEq(1)));
  EXPECT_THAT(vals<float>(tf::nn::softmax(x)), ::testing::Contains(FloatEq(0.5f)));
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  EXPECT_THAT(vals<float>(tf::nn::softmax(tf::constant({1000.f, 1000.f}))), ElementsAre(0.5f, 0.5f));
  EXPECT_THAT(vals<float>(tf::nn::softmax(tf::constant({-1000.f, 0.f}))), ElementsAre(0.f, 1.f));
  EXPECT_THAT(vals<double>(tf::nn::softmax(tf::constant({-kInf, 0.0}))), ElementsAre(0.0, 1.0));
}

TEST(Softmax, EmptyAndSizeOneAxes) {
  EXPECT_EQ(tf::nn::softmax(tf::zeros({2, 0})).shape(), tf::Shape({2, 0}));
  EXPECT_THAT(vals<float>(tf::nn::softmax(tf::constant({{5.f}, {-3.f}}))), ElementsAre(1.f, 1.f));
}

TEST(Softmax, GradientAndSecondDerivative) {
  // With two classes, softmax(x)[0] = s = sigmoid(x0 - x1): ds/dx0 = s(1 - s) = -ds/dx1 and
  // d2s/dx0^2 = s(1 - s)(1 - 2s) = -d2s/dx0dx1.
  const tf::Tensor x = tf::constant({0.7, -0.4});
  const double s = 1 / (1 + std::exp(-(0.7 + 0.4)));
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = *inner.gradient(softmax_first(x), x);
  }
  EXPECT_THAT(vals<double>(g), ElementsAre(DoubleNear(s * (1 - s), 1e-15), DoubleNear(-s * (1 - s), 1e-15)));
  const tf::Tensor h = *outer.gradient(g * tf::constant({1.0, 0.0}), x);
  const double d2 = s * (1 - s) * (1 - 2 * s);
  EXPECT_THAT(vals<double>(h), ElementsAre(DoubleNear(d2, 1e-15), DoubleNear(-d2, 1e-15)));
}

TEST(LogSoftmax, ValuesAndStability) {
  const std::vector<double> y = vals<double>(tf::nn::log_softmax(tf::constant({1.0, 2.0, 3.0})));
  EXPECT_NEAR(y[2], 3.0 - 3.4076059644443806, 1e-15);
  EXPECT_THAT(vals<float>(tf::nn::log_softmax(tf::constant({1000.f, 0.f}))), ElementsAre(0.f, -1000.f));
  // x - max - log(sum): a large shared offset does not swallow the log term.
  EXPECT_THAT(vals<float>(tf::nn::log_softmax(tf::constant({1e8f, 1e8f}))),
              ElementsAre(FloatEq(-std::log(2.f)), FloatEq(-std::log(2.f))));
}

TEST(LogSoftmax, GradientIsDyMinusSoftmaxTimesSum) {
  const tf::Tensor x = tf::constant({{0.5, -1.0, 2.0}});
  const tf::Tensor w = tf::constant({{1.0, 2.0, -1.0}});  // sums to 2
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::nn::log_softmax(x);
  const std::vector<double> g = vals<double>(*tape.gradient(y, x, {w}));
  const std::vector<double> p = vals<double>(tf::nn::softmax(x));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(g[i], w.values<double>()[i] - 2 * p[i], 1e-15);
}

// ---- bfloat16 ---------------------------------------------------------------------------------

TEST(Activations, BFloat16IsTheFloat32ActivationOfTheSameValuesRounded) {
  // LeakyRelu, Elu, Selu, Gelu, Softmax and LogSoftmax (on any axis) widen bfloat16, compute in
  // float32 and round once; so do their gradient ops.
  using Activation = tf::Tensor (*)(const tf::Tensor&);
  const tf::Tensor x16 = tf::cast(tf::random::normal({3, 4}, 0, 2, tf::float32, 4), tf::bfloat16);
  const tf::Tensor dy16 = tf::cast(tf::random::normal({3, 4}, 0, 1, tf::float32, 5), tf::bfloat16);
  for (const Activation f : {
           Activation{[](const tf::Tensor& x) { return tf::nn::leaky_relu(x); }},
           Activation{&tf::nn::elu},
           Activation{&tf::nn::selu},
           Activation{[](const tf::Tensor& x) { return tf::nn::gelu(x); }},
           Activation{[](const tf::Tensor& x) { return tf::nn::gelu(x, true); }},
           Activation{[](const tf::Tensor& x) { return tf::nn::softmax(x, 0); }},
           Activation{[](const tf::Tensor& x) { return tf::nn::log_softmax(x, 0); }},
       }) {
    tf::GradientTape tape;
    tape.watch(x16);
    const tf::Tensor y16 = f(x16);
    ASSERT_EQ(y16.dtype(), tf::bfloat16);
    EXPECT_TRUE(tf::testing::bitwise_equal(y16, tf::cast(f(tf::cast(x16, tf::float32)), tf::bfloat16)));
    EXPECT_EQ(tape.gradient(y16, x16, {dy16})->dtype(), tf::bfloat16);
  }
}

// ---- composite activations (Keras's definitions) ---------------------------------------------

TEST(Silu, IsXTimesSigmoidOfBetaXUnderBothNames) {
  const std::vector<double> xs = {-3.0, -0.5, 0.0, 2.0};
  std::vector<double> want, want_beta2;
  for (double v : xs) {
    want.push_back(v / (1 + std::exp(-v)));
    want_beta2.push_back(v / (1 + std::exp(-2 * v)));
  }
  const tf::Tensor x = tf::constant(xs);
  EXPECT_THAT(vals<double>(tf::nn::silu(x)), Pointwise(DoubleNear(1e-15), want));
  EXPECT_THAT(vals<double>(tf::nn::silu(x, 2.0)), Pointwise(DoubleNear(1e-15), want_beta2));
  EXPECT_EQ(vals<double>(tf::nn::swish(x, 2.0)), vals<double>(tf::nn::silu(x, 2.0)));
}

TEST(Silu, GradientIsSigmoidPlusXTimesItsDerivative) {
  const double v = 0.7, s = 1 / (1 + std::exp(-v));
  EXPECT_THAT(grad([](const tf::Tensor& x) { return tf::nn::silu(x); }, tf::constant({v})),
              ElementsAre(DoubleNear(s + v * s * (1 - s), 1e-15)));
}

TEST(Mish, IsXTimesTanhOfSoftplus) {
  const std::vector<double> xs = {-4.0, -1.0, 0.0, 0.5, 3.0};
  std::vector<double> want;
  for (double v : xs) want.push_back(v * std::tanh(std::log1p(std::exp(v))));
  EXPECT_THAT(vals<double>(tf::nn::mish(tf::constant(xs))), Pointwise(DoubleNear(1e-15), want));
}

TEST(HardSigmoid, IsRelu6OfXPlusThreeOverSix) {
  // 0 up to -3, 1 from 3, x / 6 + 1/2 between (Keras 3).
  const tf::Tensor x = tf::constant({-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 5.0});
  EXPECT_THAT(vals<double>(tf::nn::hard_sigmoid(x)),
              ElementsAre(0.0, 0.0, DoubleNear(0.25, 1e-15), 0.5, DoubleNear(0.75, 1e-15), 1.0, 1.0));
  EXPECT_THAT(grad(&tf::nn::hard_sigmoid, tf::constant({-4.0, 0.0, 5.0})),
              ElementsAre(0.0, DoubleNear(1.0 / 6, 1e-15), 0.0));
}

TEST(CompositeActivations, TakeBFloat16AndRoundTheFloat32Result) {
  const tf::Tensor x = tf::constant({-2.5f, -0.5f, 0.75f, 2.f});  // exact in bfloat16
  const tf::Tensor xb = tf::cast(x, tf::bfloat16);
  for (auto f :
       {+[](const tf::Tensor& t) { return tf::nn::silu(t); }, &tf::nn::mish, &tf::nn::hard_sigmoid}) {
    const tf::Tensor yb = f(xb);
    EXPECT_EQ(yb.dtype(), tf::bfloat16);
    const std::vector<float> got = vals<float>(tf::cast(yb, tf::float32)), want = vals<float>(f(x));
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], std::abs(want[i]) / 64);
  }
}

// ---- errors --------------------------------------------------------------------------------------

TEST(ActivationErrors, FloatOnlyOpsRejectIntegers) {
  EXPECT_THAT(
      [] {
        tf::nn::elu(tf::constant({1, 2}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Elu]"), HasSubstr("int32 tensor of shape (2,)"))));
  EXPECT_THROW(tf::nn::gelu(tf::constant({1, 2})), tf::InvalidArgumentError);
  EXPECT_THROW(tf::nn::leaky_relu(tf::constant({1, 2})), tf::InvalidArgumentError);
  EXPECT_THROW(tf::nn::relu(tf::constant({true})), tf::InvalidArgumentError);
}

TEST(ActivationErrors, CompositesRejectIntegersByTheirOwnName) {
  for (const auto& c : {std::pair{"silu", +[](const tf::Tensor& t) { return tf::nn::silu(t); }},
                        std::pair{"mish", &tf::nn::mish}, std::pair{"hard_sigmoid", &tf::nn::hard_sigmoid}})
    EXPECT_THAT(
        [&c] {
          c.second(tf::constant({1, 2}));
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(
            AllOf(HasSubstr(std::string("[") + c.first + "]"), HasSubstr("'features'"), HasSubstr("int32"))));
  EXPECT_THROW(tf::nn::mish(tf::Tensor{}), tf::InvalidArgumentError);
}

TEST(ActivationErrors, GradOpsNeedMatchingShapesAndDtypes) {
  EXPECT_THAT(
      [] { tf::raw_ops::relu_grad(tf::zeros({3}), tf::zeros({4})); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[ReluGrad]"), HasSubstr("float32 tensor of shape (3,)"), HasSubstr("shape (4,)"))));
  EXPECT_THROW(tf::raw_ops::elu_grad(tf::zeros({3}), tf::zeros({3}, tf::float64)), tf::InvalidArgumentError);
}

TEST(ActivationErrors, SoftmaxNeedsRankAndValidAxis) {
  EXPECT_THAT([] { tf::nn::softmax(tf::constant(1.f)); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[Softmax]"), HasSubstr("rank >= 1"), HasSubstr("shape ()"))));
  EXPECT_THAT(
      [] {
        tf::nn::log_softmax(tf::zeros({2, 3}), 2);
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[LogSoftmax]"), HasSubstr("axis 2 is out of range"))));
  EXPECT_THROW(tf::nn::softmax(tf::constant({1, 2})), tf::InvalidArgumentError);
}

}  // namespace
