// Learning-rate schedules: Keras's formulas at chosen steps and their checks (an optimizer that
// takes one: optimizer_test.cpp).

#include "tapeflow/optim/schedules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace sched = tf::optimizers::schedules;
using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::ThrowsMessage;

namespace {

/// Relative closeness: the ops' float64 pow and cos are SLEEF's (1 ulp), not std's.
void expect_rate(const sched::LearningRateSchedule& s, std::int64_t step, double expected) {
  EXPECT_NEAR(s.at(step), expected, 4e-16 * std::abs(expected)) << s.name() << " at step " << step;
}

TEST(ExponentialDecay, DecaysByTheRateEveryDecayStepsSmoothly) {
  const sched::ExponentialDecay s(0.1, 100, 0.5);
  for (std::int64_t step : {0, 1, 50, 100, 150, 1000})
    expect_rate(s, step, 0.1 * std::pow(0.5, step / 100.0));
}

TEST(ExponentialDecay, StaircaseChangesTheRateOnlyAtWholePeriods) {
  const sched::ExponentialDecay s(1e-3, 469, 0.8, /*staircase=*/true);
  expect_rate(s, 0, 1e-3);
  expect_rate(s, 468, 1e-3);
  expect_rate(s, 469, 1e-3 * 0.8);
  expect_rate(s, 937, 1e-3 * 0.8);
  expect_rate(s, 938, 1e-3 * 0.8 * 0.8);
  expect_rate(s, 469 * 14 + 3, 1e-3 * std::pow(0.8, 14));
}

TEST(PiecewiseConstantDecay, EachValueHoldsUpToAndIncludingItsBoundary) {
  const sched::PiecewiseConstantDecay s({100, 200}, {1.0, 0.5, 0.1});
  expect_rate(s, 0, 1.0);
  expect_rate(s, 100, 1.0);
  expect_rate(s, 101, 0.5);
  expect_rate(s, 200, 0.5);
  expect_rate(s, 201, 0.1);
  expect_rate(s, 1 << 30, 0.1);
  // No boundary: a constant.
  expect_rate(sched::PiecewiseConstantDecay({}, {0.25}), 7, 0.25);
}

TEST(CosineDecay, FallsAlongHalfACosineToAlphaThenStays) {
  const sched::CosineDecay s(0.2, 1000, {.alpha = 0.1});
  auto keras = [](double step) {
    const double cosine = 0.5 * (1 + std::cos(std::numbers::pi * std::min(step, 1000.0) / 1000));
    return 0.2 * (0.9 * cosine + 0.1);
  };
  for (std::int64_t step : {0, 1, 250, 500, 999}) expect_rate(s, step, keras(static_cast<double>(step)));
  expect_rate(s, 0, 0.2);
  expect_rate(s, 500, 0.2 * 0.55);
  EXPECT_NEAR(s.at(1000), 0.02, 1e-17);
  EXPECT_NEAR(s.at(5000), 0.02, 1e-17);
}

TEST(CosineDecay, WarmsUpLinearlyFromTheInitialRateToTheTargetFirst) {
  const sched::CosineDecay s(0.0, 100, {.warmup_steps = 10, .warmup_target = 1e-3});
  expect_rate(s, 0, 0.0);
  expect_rate(s, 5, 0.5e-3);
  expect_rate(s, 10, 1e-3);  // the decay starts from the target
  expect_rate(s, 60, 0.5e-3);
  EXPECT_NEAR(s.at(110), 0.0, 1e-19);
}

TEST(LearningRateSchedule, TakesAnInt32OrInt64ScalarStepAndCountsANegativeOneAsZero) {
  const sched::ExponentialDecay s(1.0, 10, 0.5);
  EXPECT_EQ(s(tf::constant(std::int32_t{20})).item<double>(), 0.25);
  EXPECT_EQ(s(tf::constant(std::int64_t{-5})).item<double>(), 1.0);
  EXPECT_EQ(s(tf::constant(std::int64_t{20})).dtype(), tf::float64);
  EXPECT_THAT([&] { s(tf::constant(2.0)); }, ThrowsMessage<tf::InvalidArgumentError>(AllOf(
                                                 HasSubstr("[ExponentialDecay]"),
                                                 HasSubstr("int32 or int64 scalar"), HasSubstr("float64"))));
  EXPECT_THAT(
      [&] {
        s(tf::constant({std::int64_t{1}, std::int64_t{2}}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("shape (2,)")));
  EXPECT_THAT([&] { s(tf::Tensor()); }, ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("undefined")));
}

TEST(LearningRateSchedule, BadArgumentsNameTheScheduleAndTheValue) {
  using Error = tf::InvalidArgumentError;
  EXPECT_THAT(
      [] { sched::ExponentialDecay(0.0, 10, 0.5); },
      ThrowsMessage<Error>(AllOf(HasSubstr("[ExponentialDecay]"), HasSubstr("initial_learning_rate"))));
  EXPECT_THAT([] { sched::ExponentialDecay(1.0, 0, 0.5); }, ThrowsMessage<Error>(HasSubstr("decay_steps")));
  EXPECT_THAT([] { sched::ExponentialDecay(1.0, 10, NAN); }, ThrowsMessage<Error>(HasSubstr("decay_rate")));
  EXPECT_THAT([] { sched::PiecewiseConstantDecay({10}, {1.0}); },
              ThrowsMessage<Error>(
                  AllOf(HasSubstr("[PiecewiseConstantDecay]"), HasSubstr("1 boundaries and 1 values"))));
  EXPECT_THAT(
      [] {
        sched::PiecewiseConstantDecay({10, 10}, {1.0, 0.5, 0.1});
      },
      ThrowsMessage<Error>(HasSubstr("increase strictly")));
  EXPECT_THAT(
      [] {
        sched::PiecewiseConstantDecay({10}, {1.0, -0.5});
      },
      ThrowsMessage<Error>(HasSubstr("-0.5")));
  EXPECT_THAT([] { sched::CosineDecay(1.0, 10, {.alpha = 1.5}); },
              ThrowsMessage<Error>(AllOf(HasSubstr("[CosineDecay]"), HasSubstr("alpha"))));
  EXPECT_THAT([] { sched::CosineDecay(1.0, 10, {.warmup_steps = 5}); },
              ThrowsMessage<Error>(HasSubstr("warmup_target")));
  EXPECT_THAT([] { sched::CosineDecay(1.0, 10, {.warmup_target = 2.0}); },
              ThrowsMessage<Error>(HasSubstr("warmup_target")));
  EXPECT_THAT([] { sched::CosineDecay(0.0, 10); }, ThrowsMessage<Error>(HasSubstr("initial_learning_rate")));
}

TEST(PolynomialDecay, IsLinearByDefaultThenHoldsTheEndRate) {
  const sched::PolynomialDecay s(0.1, 100);
  for (std::int64_t step : {0, 25, 50, 99, 100})
    expect_rate(s, step, (0.1 - 0.0001) * (1 - step / 100.0) + 0.0001);
  expect_rate(s, 500, 0.0001);
}

TEST(PolynomialDecay, PowerAndCycleFollowKerasFormula) {
  const sched::PolynomialDecay squared(1.0, 10, {.end_learning_rate = 0.0, .power = 2.0});
  expect_rate(squared, 5, 0.25);
  // cycle: the period is decay_steps times ceil(step / decay_steps), and decay_steps at step 0
  const sched::PolynomialDecay cycling(1.0, 10, {.end_learning_rate = 0.5, .cycle = true});
  expect_rate(cycling, 0, 1.0);
  expect_rate(cycling, 10, 0.5);
  expect_rate(cycling, 15, 0.5 * (1 - 15.0 / 20.0) + 0.5);
  expect_rate(cycling, 20, 0.5);
  expect_rate(cycling, 21, 0.5 * (1 - 21.0 / 30.0) + 0.5);
}

TEST(InverseTimeDecay, DividesByOnePlusRateTimesPeriods) {
  const sched::InverseTimeDecay smooth(0.1, 10, 0.5);
  for (std::int64_t step : {0, 5, 10, 35}) expect_rate(smooth, step, 0.1 / (1 + 0.5 * step / 10.0));
  const sched::InverseTimeDecay stairs(0.1, 10, 0.5, /*staircase=*/true);
  expect_rate(stairs, 9, 0.1);
  expect_rate(stairs, 35, 0.1 / (1 + 0.5 * 3));
}

TEST(PolynomialAndInverseTimeDecay, RejectBadArguments) {
  EXPECT_THAT(
      [] { sched::PolynomialDecay(0.1, 0); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[PolynomialDecay] decay_steps must be at least 1")));
  EXPECT_THAT([] { sched::PolynomialDecay(0.1, 10, {.power = 0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[PolynomialDecay] power must be positive")));
  EXPECT_THAT([] { sched::InverseTimeDecay(0.1, 10, -1); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[InverseTimeDecay] decay_rate must be finite and >= 0")));
}

TEST(PolynomialDecay, DrivesAnOptimizersRate) {
  tf::Variable w(tf::constant(0.0), {.name = "w", .keras_style = true});
  tf::optimizers::SGD opt(sched::PolynomialDecay(1.0, 2, {.end_learning_rate = 0.0}));
  opt.apply_gradients({tf::constant(1.0)}, {w});  // rate 1 at step 0
  opt.apply_gradients({tf::constant(1.0)}, {w});  // rate 0.5 at step 1
  EXPECT_DOUBLE_EQ(w.value().item<double>(), -1.5);
  EXPECT_DOUBLE_EQ(opt.learning_rate(), 0.0);
}

}  // namespace
