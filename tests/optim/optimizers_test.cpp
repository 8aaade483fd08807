// The update rules: the first updates of SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, Nadam and
// Lion against values computed by hand from Keras 3's formulas (written out in each test), in
// float64; float32 works too; weight decay on any optimizer; and each optimizer trains a linear
// regression y = 3x + 2 on a GradientTape.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr double kTol = 1e-12;

/// A float64 scalar variable named "w" (Keras style).
tf::Variable scalar_var(double value) {
  return tf::Variable(tf::constant(value), {.name = "w", .keras_style = true});
}

/// Applies gradient `g` to `w` and returns w's new value.
double step(tf::optimizers::Optimizer& opt, tf::Variable& w, double g) {
  opt.apply_gradients({tf::constant(g)}, {w});
  return w.value().item<double>();
}

TEST(SGD, PlainUpdateIsLearningRateTimesGradient) {
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::SGD opt(0.1);
  EXPECT_NEAR(step(opt, w, 0.5), 1.0 - 0.1 * 0.5, kTol);    // 0.95
  EXPECT_NEAR(step(opt, w, -1.0), 0.95 + 0.1 * 1.0, kTol);  // 1.05
  EXPECT_EQ(opt.variables().size(), 1u);                    // no slots without momentum
}

TEST(SGD, MomentumAccumulatesVelocity) {
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::SGD opt(0.1, 0.9);
  // v1 = 0.9 * 0 - 0.1 * 1 = -0.1;      w = 1 - 0.1 = 0.9
  EXPECT_NEAR(step(opt, w, 1.0), 0.9, kTol);
  // v2 = 0.9 * -0.1 - 0.1 * 1 = -0.19;  w = 0.9 - 0.19 = 0.71
  EXPECT_NEAR(step(opt, w, 1.0), 0.71, kTol);
  // v3 = 0.9 * -0.19 - 0.1 * 2 = -0.371;  w = 0.71 - 0.371 = 0.339
  EXPECT_NEAR(step(opt, w, 2.0), 0.339, kTol);
  EXPECT_NEAR(opt.slot(w, "momentum").value().item<double>(), -0.371, kTol);
}

TEST(SGD, NesterovLooksAheadAlongTheVelocity) {
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::SGD opt(0.1, 0.9, /*nesterov=*/true);
  // v1 = -0.1;   w += 0.9 * -0.1 - 0.1 * 1 = -0.19   -> 0.81
  EXPECT_NEAR(step(opt, w, 1.0), 0.81, kTol);
  // v2 = 0.9 * -0.1 - 0.1 = -0.19;  w += 0.9 * -0.19 - 0.1 = -0.271  -> 0.539
  EXPECT_NEAR(step(opt, w, 1.0), 0.539, kTol);
}

TEST(SGD, UpdatesEveryElementOfAFloat32Tensor) {
  tf::Variable w(tf::constant({1.f, 2.f}), {.name = "w", .keras_style = true});
  tf::optimizers::SGD opt(0.5);
  opt.apply_gradients({tf::constant({1.f, -2.f})}, {w});
  EXPECT_THAT(w.value().to_vector<float>(), ::testing::ElementsAre(0.5f, 3.f));
}

TEST(Adam, FirstStepsFollowKerasBiasCorrectedFormula) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::Adam opt(lr);
  // t = 1, g = 1: m = 0.1, v = 0.001, lr_t = 0.1 * sqrt(1 - 0.999) / (1 - 0.9)
  double m = 0.1, v = 0.001;
  double lr_t = lr * std::sqrt(1 - b2) / (1 - b1);
  double expected = 1.0 - lr_t * m / (std::sqrt(v) + eps);  // 0.9000003162...
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
  EXPECT_NEAR(expected, 0.90000031622, 1e-10);
  // t = 2, g = -2: m = 0.1 + (-2 - 0.1) * 0.1 = -0.11, v = 0.001 + (4 - 0.001) * 0.001 = 0.004999
  m = -0.11;
  v = 0.004999;
  lr_t = lr * std::sqrt(1 - b2 * b2) / (1 - b1 * b1);
  expected -= lr_t * m / (std::sqrt(v) + eps);
  EXPECT_NEAR(step(opt, w, -2.0), expected, kTol);
  EXPECT_NEAR(opt.slot(w, "m").value().item<double>(), -0.11, kTol);
  EXPECT_NEAR(opt.slot(w, "v").value().item<double>(), 0.004999, kTol);
}

TEST(Adam, StepsOneToThreeFollowTheBiasCorrectionWithTFromIterations) {
  // lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t), t = 1, 2, 3, in float64 (within rounding: the op pow
  // and std::pow may differ in the last bit) and float32 (lr_t rounded to float32, the rest in float32).
  const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-7;
  const double grads[] = {0.5, -1.5, 2.0};
  for (tf::DType dtype : {tf::float64, tf::float32}) {
    SCOPED_TRACE(tf::dtype_name(dtype));
    tf::Variable w(tf::cast(tf::constant(1.0), dtype), {.name = "w", .keras_style = true});
    tf::optimizers::Adam opt(lr, {.beta_1 = b1, .beta_2 = b2, .epsilon = eps});
    double m = 0, v = 0, expected = 1.0;
    for (int t = 1; t <= 3; ++t) {
      const double g = grads[t - 1];
      m += (g - m) * (1 - b1);
      v += (g * g - v) * (1 - b2);
      expected -= lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t)) * m / (std::sqrt(v) + eps);
      opt.apply_gradients({tf::cast(tf::constant(g), dtype)}, {w});
      const double got = tf::cast(w.value(), tf::float64).item<double>();
      EXPECT_NEAR(got, expected, dtype == tf::float64 ? 1e-15 : 1e-6) << "t = " << t;
    }
  }
}

TEST(Adam, TheStepCountIsReadFromTheIterationsVariableWhenTheUpdateRuns) {
  // Setting iterations to 99 makes the next update use t = 100, whose bias correction differs
  // from t = 1's: the count is not kept anywhere else.
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::Adam opt(lr);
  tf::Variable iterations = opt.iterations();
  iterations.assign(tf::constant(std::int64_t{99}));
  // g = 1: m = 0.1, v = 0.001
  const double lr_t = lr * std::sqrt(1 - std::pow(b2, 100)) / (1 - std::pow(b1, 100));
  EXPECT_NEAR(step(opt, w, 1.0), 1.0 - lr_t * 0.1 / (std::sqrt(0.001) + eps), kTol);
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 100);
}

TEST(Adam, AmsgradKeepsTheLargestSecondMoment) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  tf::Variable w = scalar_var(0.0);
  tf::optimizers::Adam opt(lr, {.amsgrad = true});
  step(opt, w, 2.0);  // m = 0.2, v = v_hat = 0.004
  const double w1 = w.value().item<double>();
  // t = 2, g = 0: m = 0.2 * 0.9 = 0.18, v = 0.004 * 0.999 = 0.003996, v_hat = max(0.004, 0.003996)
  const double lr_t = lr * std::sqrt(1 - b2 * b2) / (1 - b1 * b1);
  EXPECT_NEAR(step(opt, w, 0.0), w1 - lr_t * 0.18 / (std::sqrt(0.004) + eps), kTol);
  EXPECT_NEAR(opt.slot(w, "v").value().item<double>(), 0.003996, kTol);
  EXPECT_NEAR(opt.slot(w, "v_hat").value().item<double>(), 0.004, kTol);
}

TEST(AdamW, DecaysWeightsBeforeTheAdamStep) {
  const double lr = 0.1, wd = 0.5, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::AdamW opt(lr, wd);
  // decay: w = 1 - 0.1 * 0.5 * 1 = 0.95; then Adam's t = 1 step with g = 1 (m = 0.1, v = 0.001)
  const double adam1 = lr * std::sqrt(1 - b2) / (1 - b1) * 0.1 / (std::sqrt(0.001) + eps);
  double expected = 0.95 - adam1;
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
  // t = 2, g = 1: decay by 1 - 0.05, then m = 0.19, v = 0.001999
  const double adam2 = lr * std::sqrt(1 - b2 * b2) / (1 - b1 * b1) * 0.19 / (std::sqrt(0.001999) + eps);
  expected = expected * (1 - lr * wd) - adam2;
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
}

TEST(AdamW, ZeroGradientStillDecays) {
  tf::Variable w = scalar_var(2.0);
  tf::optimizers::AdamW opt(0.1, 0.5);
  // w = 2 - 0.1 * 0.5 * 2 = 1.9; the Adam step is 0 (m = 0)
  EXPECT_NEAR(step(opt, w, 0.0), 1.9, kTol);
}

TEST(RMSprop, DividesByTheRootMeanSquare) {
  const double lr = 0.1, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::RMSprop opt(lr);
  // velocity = 0.9 * 0 + 0.1 * 1 = 0.1;  w -= 0.1 * 1 / sqrt(0.1 + 1e-7)
  double expected = 1.0 - lr / std::sqrt(0.1 + eps);  // 0.68377...
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
  // velocity = 0.9 * 0.1 + 0.1 * 4 = 0.49;  w -= 0.1 * 2 / sqrt(0.49 + 1e-7)
  expected -= lr * 2.0 / std::sqrt(0.49 + eps);
  EXPECT_NEAR(step(opt, w, 2.0), expected, kTol);
  EXPECT_NEAR(opt.slot(w, "velocity").value().item<double>(), 0.49, kTol);
}

TEST(RMSprop, CenteredSubtractsTheSquaredMeanGradient) {
  const double lr = 0.1, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::RMSprop opt(lr, {.centered = true});
  // velocity = 0.1, average_gradient = 0.1 * 1 = 0.1;  denominator = 0.1 - 0.01 + 1e-7
  double expected = 1.0 - lr / std::sqrt(0.09 + eps);
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
  // velocity = 0.09 + 0.1 = 0.19, average_gradient = 0.09 + 0.1 = 0.19;  0.19 - 0.0361 + 1e-7
  expected -= lr / std::sqrt(0.19 - 0.0361 + eps);
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
  EXPECT_NEAR(opt.slot(w, "average_gradient").value().item<double>(), 0.19, kTol);
}

TEST(RMSprop, MomentumAccumulatesIncrements) {
  const double lr = 0.1, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::RMSprop opt(lr, {.momentum = 0.5});
  const double inc1 = lr / std::sqrt(0.1 + eps);   // velocity 0.1
  const double inc2 = lr / std::sqrt(0.19 + eps);  // velocity 0.19
  // m1 = inc1; m2 = 0.5 * inc1 + inc2
  EXPECT_NEAR(step(opt, w, 1.0), 1.0 - inc1, kTol);
  EXPECT_NEAR(step(opt, w, 1.0), 1.0 - inc1 - (0.5 * inc1 + inc2), kTol);
}

TEST(Adagrad, AccumulatorStartsAtItsInitialValueAndGrowsWithSquaredGradients) {
  const double lr = 0.1, eps = 1e-7;
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::Adagrad opt(lr);
  opt.build({w});
  EXPECT_NEAR(opt.slot(w, "accumulator").value().item<double>(), 0.1, kTol);  // Keras's default
  // accumulator = 0.1 + 1 = 1.1;  w -= 0.1 * 1 / sqrt(1.1 + 1e-7)
  double expected = 1.0 - lr / std::sqrt(1.1 + eps);
  EXPECT_NEAR(step(opt, w, 1.0), expected, kTol);
  // accumulator = 1.1 + 4 = 5.1;  w -= 0.1 * -2 / sqrt(5.1 + 1e-7)
  expected += lr * 2.0 / std::sqrt(5.1 + eps);
  EXPECT_NEAR(step(opt, w, -2.0), expected, kTol);
  EXPECT_NEAR(opt.slot(w, "accumulator").value().item<double>(), 5.1, kTol);
}

TEST(Adagrad, RejectsANegativeInitialAccumulator) {
  EXPECT_THAT([] { tf::optimizers::Adagrad(0.1, {.initial_accumulator_value = -1}); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  ::testing::HasSubstr("[Adagrad] initial_accumulator_value must be in [0, inf]")));
}

TEST(Adamax, StepsFollowTheInfinityNormFormula) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  const double grads[] = {1.0, -3.0, 0.5};
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::Adamax opt(lr);
  double m = 0, u = 0, expected = 1.0;
  for (int t = 1; t <= 3; ++t) {
    const double g = grads[t - 1];
    m += (g - m) * (1 - b1);
    u = std::max(b2 * u, std::abs(g));
    expected -= lr * m / ((1 - std::pow(b1, t)) * (u + eps));
    EXPECT_NEAR(step(opt, w, g), expected, 1e-14) << "t = " << t;
  }
  EXPECT_NEAR(opt.slot(w, "u").value().item<double>(), 3.0 * b2, kTol);  // max(0.999 * 3, 0.5)
}

TEST(Nadam, StepsFollowKerasMomentumSchedule) {
  // Keras 3's Nadam, with its running product u_product of the momentum schedule.
  const double lr = 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  const double grads[] = {1.0, -2.0, 0.5, 4.0};
  for (tf::DType dtype : {tf::float64, tf::float32}) {
    SCOPED_TRACE(tf::dtype_name(dtype));
    tf::Variable w(tf::cast(tf::constant(1.0), dtype), {.name = "w", .keras_style = true});
    tf::optimizers::Nadam opt(lr);
    double m = 0, v = 0, u_product = 1.0, expected = 1.0;
    for (int t = 1; t <= 4; ++t) {
      const double g = grads[t - 1];
      u_product *= b1 * (1 - 0.5 * std::pow(0.96, t));
      const double u_t = b1 * (1 - 0.5 * std::pow(0.96, t));
      const double u_next = b1 * (1 - 0.5 * std::pow(0.96, t + 1));
      m += (g - m) * (1 - b1);
      v += (g * g - v) * (1 - b2);
      const double m_hat = u_next * m / (1 - u_product * u_next) + (1 - u_t) * g / (1 - u_product);
      const double v_hat = v / (1 - std::pow(b2, t));
      expected -= lr * m_hat / (std::sqrt(v_hat) + eps);
      opt.apply_gradients({tf::cast(tf::constant(g), dtype)}, {w});
      EXPECT_NEAR(tf::cast(w.value(), tf::float64).item<double>(), expected,
                  dtype == tf::float64 ? 1e-13 : 1e-6)
          << "t = " << t;
    }
  }
}

TEST(Nadam, TheMomentumScheduleProductFollowsTheStepCount) {
  // At t = 30 the product U_t = u_1 * ... * u_30 is about 1.5e-6, so 1 - U_t differs from 1 by
  // far more than the tolerance: the step checks the product the update computes from t alone
  // (Keras keeps it in a variable multiplied once per step; here it is the running product).
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  tf::Variable w = scalar_var(0.0);
  tf::optimizers::Nadam opt(lr, {.beta_1 = b1});
  tf::Variable iterations = opt.iterations();
  iterations.assign(tf::constant(std::int64_t{29}));
  double u_product = 1.0;
  for (int s = 1; s <= 30; ++s) u_product *= b1 * (1 - 0.5 * std::pow(0.96, s));
  ASSERT_GT(u_product, 1e-6);
  const double u_t = b1 * (1 - 0.5 * std::pow(0.96, 30)), u_next = b1 * (1 - 0.5 * std::pow(0.96, 31));
  const double m = 0.1, v = 0.001;  // from 0 with g = 1
  const double m_hat = u_next * m / (1 - u_product * u_next) + (1 - u_t) / (1 - u_product);
  const double v_hat = v / (1 - std::pow(b2, 30));
  EXPECT_NEAR(step(opt, w, 1.0), -lr * m_hat / (std::sqrt(v_hat) + eps), kTol);
}

TEST(Nadam, RejectsAmsgrad) {
  EXPECT_THAT(
      [] { tf::optimizers::Nadam(0.1, {.amsgrad = true}); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(::testing::HasSubstr("[Nadam] has no amsgrad")));
}

TEST(Lion, MovesEveryElementByTheLearningRateAlongTheInterpolatedSign) {
  const double lr = 0.1;
  tf::Variable w(tf::constant({1.0, 1.0, 1.0}), {.name = "w", .keras_style = true});
  tf::optimizers::Lion opt(lr);
  // m = 0: the sign is the gradient's; a zero gradient does not move
  opt.apply_gradients({tf::constant({2.0, -0.001, 0.0})}, {w});
  EXPECT_THAT(w.value().to_vector<double>(), ::testing::ElementsAre(0.9, 1.1, 1.0));
  // m = 0.01 * g = (0.02, -0.00001, 0); with g = (-0.1, 0, 1): 0.9 * m + 0.1 * g = (0.008, -0.000009, 0.1)
  opt.apply_gradients({tf::constant({-0.1, 0.0, 1.0})}, {w});
  EXPECT_THAT(w.value().to_vector<double>(),
              ::testing::Pointwise(::testing::DoubleNear(kTol), {0.8, 1.2, 0.9}));
  // m = 0.99 * m + 0.01 * g
  EXPECT_THAT(
      opt.slot(w, "momentum").value().to_vector<double>(),
      ::testing::Pointwise(::testing::DoubleNear(kTol), {0.99 * 0.02 - 0.001, 0.99 * -0.00001, 0.01}));
}

TEST(Lion, RejectsABeta1OfZero) {
  EXPECT_THAT([] { tf::optimizers::Lion(0.1, {.beta_1 = 0}); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  ::testing::HasSubstr("[Lion] beta_1 must be in (0, 1]")));
}

// ---- weight decay on every optimizer -----------------------------------------------------------

TEST(WeightDecay, ShrinksTheWeightByLearningRateTimesDecayBeforeTheUpdate) {
  // SGD: w = 2 - 0.1 * 0.5 * 2 = 1.9, then - 0.1 * 1 = 1.8
  tf::Variable w = scalar_var(2.0);
  tf::optimizers::SGD sgd(0.1, 0, false, {.weight_decay = 0.5});
  EXPECT_NEAR(step(sgd, w, 1.0), 1.8, kTol);
  EXPECT_DOUBLE_EQ(sgd.weight_decay(), 0.5);
  // Adagrad: w = 2 * (1 - 0.1 * 0.5) = 1.9, then - 0.1 * 1 / sqrt(1.1 + 1e-7)
  tf::Variable v = scalar_var(2.0);
  tf::optimizers::Adagrad adagrad(0.1, {.base = {.weight_decay = 0.5}});
  EXPECT_NEAR(step(adagrad, v, 1.0), 1.9 - 0.1 / std::sqrt(1.1 + 1e-7), kTol);
}

TEST(WeightDecay, AdamWIsAdamWithWeightDecay) {
  const std::vector<double> grads{0.3, -1.0, 2.0};
  tf::Variable a = scalar_var(1.5), b = scalar_var(1.5);
  tf::optimizers::AdamW adamw(0.01, 0.1);
  tf::optimizers::Adam adam(0.01, {.base = {.weight_decay = 0.1}});
  for (double g : grads) EXPECT_EQ(step(adamw, a, g), step(adam, b, g));
}

TEST(WeightDecay, ExcludedVariablesAndNamesDoNotDecay) {
  tf::Variable kernel(tf::constant(2.0), {.name = "dense/kernel", .keras_style = true});
  tf::Variable bias(tf::constant(2.0), {.name = "dense/bias", .keras_style = true});
  tf::Variable scale(tf::constant(2.0), {.name = "norm/gamma", .keras_style = true});
  tf::optimizers::SGD opt(0.1, 0, false, {.weight_decay = 0.5});
  opt.exclude_from_weight_decay({scale}, {"bias"});
  opt.apply_gradients({tf::constant(0.0), tf::constant(0.0), tf::constant(0.0)}, {kernel, bias, scale});
  EXPECT_NEAR(kernel.value().item<double>(), 1.9, kTol);
  EXPECT_EQ(bias.value().item<double>(), 2.0);
  EXPECT_EQ(scale.value().item<double>(), 2.0);
}

TEST(WeightDecay, ExclusionsAreConfiguredBeforeTheFirstUpdate) {
  tf::Variable w = scalar_var(1.0);
  tf::optimizers::Adam opt(0.1, {.base = {.weight_decay = 0.01}});
  step(opt, w, 1.0);
  EXPECT_THAT([&] { opt.exclude_from_weight_decay({w}); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                  ::testing::HasSubstr("[Adam] exclude_from_weight_decay can only be configured before")));
}

TEST(WeightDecay, RejectsANegativeDecay) {
  EXPECT_THAT([] { tf::optimizers::Lion(0.1, {.base = {.weight_decay = -0.1}}); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  ::testing::HasSubstr("[Lion] weight_decay must be in [0, inf]")));
}

TEST(WeightDecay, DecaysABfloat16VariableThroughItsFloat32Copy) {
  tf::Variable w(tf::cast(tf::constant(2.0f), tf::bfloat16), {.name = "w", .keras_style = true});
  tf::optimizers::SGD opt(0.25, 0, false, {.weight_decay = 1.0});
  opt.apply_gradients({tf::cast(tf::constant(0.0f), tf::bfloat16)}, {w});
  EXPECT_EQ(tf::cast(w.value(), tf::float32).item<float>(), 1.5f);  // 2 - 0.25 * 2
}

// ---- end to end ---------------------------------------------------------------------------------

struct Fit {
  double w, b, loss;
};

/// Fits y = w * x + b to y = 3x + 2 on 32 points in [-1, 1] (float32) for `steps` steps.
Fit fit_line(tf::optimizers::Optimizer& opt, int steps = 200) {
  const tf::Tensor x = tf::linspace(-1.0, 1.0, 32);
  const tf::Tensor y = x * 3.f + 2.f;
  tf::Variable w(0.0f, {.name = "w", .keras_style = true});
  tf::Variable b(0.0f, {.name = "b", .keras_style = true});
  double loss = 0;
  for (int i = 0; i < steps; ++i) {
    tf::GradientTape tape;
    tf::Tensor l = tf::losses::mean_squared_error(y, x * w + b);
    loss = l.item<float>();
    opt.apply_gradients(tape.gradient(l, std::vector<tf::Variable>{w, b}), {w, b});
  }
  return {w.value().item<float>(), b.value().item<float>(), loss};
}

struct TrainCase {
  std::string name;
  std::function<std::unique_ptr<tf::optimizers::Optimizer>()> make;
};

class TrainsLinearRegression : public ::testing::TestWithParam<TrainCase> {};

TEST_P(TrainsLinearRegression, ReachesSlopeThreeInterceptTwo) {
  auto opt = GetParam().make();
  const Fit fit = fit_line(*opt);
  EXPECT_LT(fit.loss, 1e-2);
  EXPECT_NEAR(fit.w, 3.0, 0.1);
  EXPECT_NEAR(fit.b, 2.0, 0.1);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, TrainsLinearRegression,
    ::testing::Values(
        TrainCase{"SGD", [] { return std::make_unique<tf::optimizers::SGD>(0.3); }},
        TrainCase{"SGDMomentum", [] { return std::make_unique<tf::optimizers::SGD>(0.05, 0.9); }},
        TrainCase{"SGDNesterov", [] { return std::make_unique<tf::optimizers::SGD>(0.05, 0.9, true); }},
        TrainCase{"Adam", [] { return std::make_unique<tf::optimizers::Adam>(0.1); }},
        TrainCase{"AdamAmsgrad",
                  [] {
                    return std::make_unique<tf::optimizers::Adam>(
                        0.1, tf::optimizers::AdamOptions{.amsgrad = true});
                  }},
        TrainCase{"AdamW", [] { return std::make_unique<tf::optimizers::AdamW>(0.1); }},
        TrainCase{"RMSprop", [] { return std::make_unique<tf::optimizers::RMSprop>(0.05); }},
        TrainCase{"RMSpropCenteredMomentum",
                  [] {
                    return std::make_unique<tf::optimizers::RMSprop>(
                        0.01, tf::optimizers::RMSpropOptions{.momentum = 0.9, .centered = true});
                  }},
        TrainCase{"SGDGlobalClipnorm",
                  [] {
                    return std::make_unique<tf::optimizers::SGD>(
                        0.3, 0, false, tf::optimizers::BaseOptions{.global_clipnorm = 1.0});
                  }},
        TrainCase{"Adagrad", [] { return std::make_unique<tf::optimizers::Adagrad>(0.5); }},
        TrainCase{"Adamax", [] { return std::make_unique<tf::optimizers::Adamax>(0.1); }},
        TrainCase{"Nadam", [] { return std::make_unique<tf::optimizers::Nadam>(0.1); }},
        TrainCase{"Lion", [] { return std::make_unique<tf::optimizers::Lion>(0.03); }},
        TrainCase{"SGDWeightDecay",
                  [] {
                    return std::make_unique<tf::optimizers::SGD>(
                        0.3, 0, false, tf::optimizers::BaseOptions{.weight_decay = 1e-4});
                  }}),
    [](const ::testing::TestParamInfo<TrainCase>& info) { return info.param.name; });

}  // namespace
