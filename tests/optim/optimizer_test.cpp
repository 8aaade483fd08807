// Optimizer base behaviour shared by every optimizer: gradient checks and errors, skipping of
// missing gradients, clipping (free functions and options), slot variables and their names,
// the iteration counter, the learning-rate variable and a schedule in its place, hyper-parameter
// validation, and updates never being recorded.

#include "tapeflow/optim/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::ThrowsMessage;

namespace {

std::vector<std::string> names(const std::vector<std::pair<std::string, tf::Variable>>& vars) {
  std::vector<std::string> out;
  for (const auto& [n, v] : vars) out.push_back(n);
  return out;
}

tf::Variable keras_var(tf::Tensor init, std::string name) {
  return tf::Variable(init, {.name = std::move(name), .keras_style = true});
}

// tf::optimizers is the Keras name; tf::optim, the 0.x one, still names the same classes.
static_assert(std::is_same_v<tf::optim::SGD, tf::optimizers::SGD>);
static_assert(std::is_same_v<tf::optim::Adam, tf::optimizers::Adam>);

TEST(Optimizer, SkipsVariablesWhoseGradientIsMissing) {
  tf::Variable a = keras_var(tf::constant({1.0, 2.0}), "a");
  tf::Variable b = keras_var(tf::constant({5.0}), "b");
  tf::optimizers::SGD opt(0.5);
  opt.apply_gradients({tf::constant({1.0, -2.0}), std::nullopt}, {a, b});
  // a -= 0.5 * [1, -2]; b untouched
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(0.5, 3.0));
  EXPECT_THAT(b.value().to_vector<double>(), ElementsAre(5.0));
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 1);
}

TEST(Optimizer, WarnsAboutVariablesWithoutGradientLikeKeras) {
  std::vector<std::string> messages;
  tf::LogSink previous =
      tf::set_log_sink([&](tf::LogLevel, std::string_view m) { messages.emplace_back(m); });
  tf::Variable a = keras_var(tf::constant({1.0}), "a");
  tf::Variable b = keras_var(tf::constant({5.0}), "b");
  tf::optimizers::SGD opt(0.5);
  opt.apply_gradients({tf::constant({1.0}), std::nullopt}, {a, b});
  opt.apply_gradients({tf::constant({1.0}), tf::constant({1.0})}, {a, b});
  tf::set_log_sink(previous);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_THAT(messages[0], HasSubstr("Gradients do not exist for variables ['b']"));
}

TEST(Optimizer, SlotsAreCreatedOnlyForVariablesWithAGradient) {
  tf::Variable a = keras_var(tf::constant({1.0}), "a");
  tf::Variable b = keras_var(tf::constant({5.0}), "b");
  tf::optimizers::Adam opt;
  opt.apply_gradients({std::nullopt, tf::constant({1.0})}, {a, b});
  EXPECT_THAT(names(opt.variables()), ElementsAre("iterations", "b/m", "b/v"));
}

TEST(Optimizer, NoGradientsForAnyVariableThrowsKerasMessage) {
  tf::Variable k = keras_var(tf::zeros({2, 2}), "kernel");
  tf::Variable b = keras_var(tf::zeros({2}), "bias");
  tf::optimizers::SGD opt(0.1);
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({std::nullopt, std::nullopt}, {k, b});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("No gradients provided for any variable: (['kernel', 'bias'],)")));
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 0);
}

TEST(Optimizer, GradientCountMustMatchVariableCount) {
  tf::Variable k = keras_var(tf::zeros({2}), "kernel");
  tf::optimizers::SGD opt(0.1);
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({tf::zeros({2}), tf::zeros({2})}, {k});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("2 gradients for 1 variables")));
}

TEST(Optimizer, GradientShapeMismatchNamesVariableAndShapesAndChangesNothing) {
  tf::Variable k = keras_var(tf::ones({3, 2}), "kernel");
  tf::Variable b = keras_var(tf::ones({2}), "bias");
  tf::optimizers::SGD opt(0.1);
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({tf::ones({3, 2}), tf::ones({2, 3})}, {k, b});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[SGD]"), HasSubstr("'bias'"), HasSubstr("(2, 3)"), HasSubstr("(2,)"))));
  // The check runs before any update: the kernel, whose gradient was fine, is unchanged too.
  EXPECT_EQ(k.value().values<float>()[0], 1.0f);
}

TEST(Optimizer, GradientDtypeMismatchThrows) {
  tf::Variable k = keras_var(tf::ones({2}), "kernel");
  tf::optimizers::Adam opt;
  EXPECT_THAT([&] { opt.apply_gradients({tf::ones({2}, tf::DType::Float64)}, {k}); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Adam]"), HasSubstr("'kernel'"),
                                                            HasSubstr("float64"), HasSubstr("float32"))));
}

TEST(Optimizer, IntegerVariablesCannotBeOptimized) {
  tf::Variable n(std::int32_t{3}, {.name = "n", .trainable = false, .keras_style = true});
  tf::optimizers::SGD opt(0.1);
  EXPECT_THAT([&] { opt.apply_gradients({tf::constant(1)}, {n}); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("float32, float64 or bfloat16 variables; 'n' has shape () and dtype int32")));
}

TEST(Optimizer, IterationsCountApplyGradientsCalls) {
  tf::Variable w = keras_var(tf::constant({1.f}), "w");
  tf::optimizers::SGD opt(0.1);
  for (int i = 0; i < 3; ++i) opt.apply_gradients({tf::constant({1.f})}, {w});
  EXPECT_EQ(opt.iterations().value().dtype(), tf::DType::Int64);
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 3);
}

TEST(Optimizer, VariablesListsIterationsThenSlotsInFirstSeenOrder) {
  tf::layers::Dense layer(2, {.seed = 1});
  layer.build(tf::Shape{1, 3});
  tf::optimizers::Adam opt;
  opt.build(layer.trainable_variables());
  const auto vars = opt.variables();
  EXPECT_THAT(names(vars), ElementsAre("iterations", "kernel/m", "kernel/v", "bias/m", "bias/v"));
  EXPECT_EQ(vars[1].second.shape(), (tf::Shape{3, 2}));
  EXPECT_EQ(vars[3].second.shape(), (tf::Shape{2}));
  EXPECT_FALSE(vars[1].second.trainable());
  EXPECT_EQ(tf::reduce_sum(vars[1].second.value()).item<float>(), 0.f);  // slots start at zero
}

TEST(Optimizer, RepeatedVariableNamesGetNumberedSlotNames) {
  tf::layers::Dense first(2, {.seed = 1}), second(1, {.seed = 2});
  first.build(tf::Shape{1, 3});
  second.build(tf::Shape{1, 2});
  tf::optimizers::SGD opt(0.1, 0.9);
  auto vars = first.trainable_variables();
  for (const auto& v : second.trainable_variables()) vars.push_back(v);
  opt.build(vars);
  EXPECT_THAT(names(opt.variables()), ElementsAre("iterations", "kernel/momentum", "bias/momentum",
                                                  "kernel_1/momentum", "bias_1/momentum"));
}

TEST(Optimizer, SlotNamesDropTensorFlowOutputSuffix) {
  tf::Variable x(1.0f, {.name = "x0"});
  tf::optimizers::RMSprop opt;
  opt.apply_gradients({tf::constant(1.f)}, {x});
  EXPECT_THAT(names(opt.variables()), ElementsAre("iterations", "x0/velocity"));
}

TEST(Optimizer, SlotLooksUpAVariablesSlotByName) {
  tf::Variable w = keras_var(tf::constant({0.0}), "w");
  tf::optimizers::Adam opt(0.1);
  opt.apply_gradients({tf::constant({2.0})}, {w});
  // m = 0 + (2 - 0) * (1 - 0.9) = 0.2
  EXPECT_NEAR(opt.slot(w, "m").value().item<double>(), 0.2, 1e-15);
  EXPECT_THAT([&] { (void)opt.slot(w, "momentum"); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("no slot 'momentum'")));
  tf::Variable other = keras_var(tf::constant({0.0}), "other");
  EXPECT_THAT([&] { (void)opt.slot(other, "m"); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("no slots yet")));
}

TEST(Optimizer, UpdatesAreNotRecordedOnALiveTape) {
  tf::Variable w = keras_var(tf::constant({1.0}), "w");
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = w * w;
  const std::size_t before = tape.num_recorded_ops();
  tf::optimizers::Adam opt(0.1, {.base = {.clipnorm = 1.0}});
  opt.apply_gradients({*tape.gradient(y, w)}, {w});
  EXPECT_EQ(tape.num_recorded_ops(), before);
}

TEST(Optimizer, LearningRateCanBeChangedAndIsValidated) {
  tf::optimizers::SGD opt(0.1);
  opt.set_learning_rate(0.5);
  EXPECT_EQ(opt.learning_rate(), 0.5);
  EXPECT_THROW(opt.set_learning_rate(-1), tf::InvalidArgumentError);
}

TEST(Optimizer, LearningRateLivesInANonTrainableFloat64VariableOutsideTheCheckpointedState) {
  tf::optimizers::Adam opt(0.25);
  const tf::Variable& lr = opt.learning_rate_variable();
  EXPECT_EQ(lr.dtype(), tf::float64);
  EXPECT_EQ(lr.shape(), tf::Shape());
  EXPECT_FALSE(lr.trainable());
  EXPECT_EQ(lr.name(), "learning_rate");
  EXPECT_EQ(lr.value().item<double>(), 0.25);
  const tf::TensorId handle = lr.handle_id();
  opt.set_learning_rate(0.125);  // assigns the same variable
  EXPECT_EQ(opt.learning_rate_variable().handle_id(), handle);
  EXPECT_EQ(lr.value().item<double>(), 0.125);
  EXPECT_THROW(opt.set_learning_rate(0.0), tf::InvalidArgumentError);
  EXPECT_EQ(opt.learning_rate(), 0.125);  // a refused rate changes nothing
  tf::Variable w = keras_var(tf::constant({1.0}), "w");
  opt.apply_gradients({tf::constant({1.0})}, {w});
  EXPECT_THAT(names(opt.variables()), ElementsAre("iterations", "w/m", "w/v"));
}

/// One SGD-like step on sum(w): d/dw = 1, so each step moves every element by -lr. Returns w.
std::vector<double> step_on_sum(tf::optimizers::Optimizer& opt, tf::Variable& w, bool fused) {
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(w.read_value());
  if (fused)
    opt.minimize(loss, {w}, tape);
  else
    opt.apply_gradients(tape.gradient(loss, std::vector<tf::Variable>{w}), {w});
  return w.value().to_vector<double>();
}

TEST(Optimizer, AChangedLearningRateIsUsedByTheNextUpdate) {
  for (bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "minimize" : "apply_gradients");
    tf::Variable w = keras_var(tf::constant({1.0, 2.0}), "w");
    tf::optimizers::SGD opt(0.1);
    EXPECT_THAT(step_on_sum(opt, w, fused), Pointwise(DoubleNear(1e-15), {0.9, 1.9}));
    opt.set_learning_rate(0.5);
    EXPECT_THAT(step_on_sum(opt, w, fused), Pointwise(DoubleNear(1e-15), {0.4, 1.4}));
    // An assignment to the variable itself (as a traced step's would be) counts as well.
    tf::Variable lr = opt.learning_rate_variable();
    lr.assign(tf::constant(0.25));
    EXPECT_EQ(opt.learning_rate(), 0.25);
    EXPECT_THAT(step_on_sum(opt, w, fused), Pointwise(DoubleNear(1e-15), {0.15, 1.15}));
  }
}

// ---- a learning-rate schedule in place of the rate (optim/schedules.h)

TEST(OptimizerWithSchedule, EachUpdateUsesTheRateAtItsStep) {
  for (bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "minimize" : "apply_gradients");
    tf::Variable w(tf::constant({0.0}), {.name = "w"});
    tf::optimizers::SGD opt(tf::optimizers::schedules::PiecewiseConstantDecay({1, 2}, {1.0, 0.5, 0.25}));
    ASSERT_NE(opt.learning_rate_schedule(), nullptr);
    EXPECT_EQ(opt.learning_rate(), 1.0);
    EXPECT_EQ(step_on_sum(opt, w, fused)[0], -1.0);  // step 0
    EXPECT_EQ(step_on_sum(opt, w, fused)[0], -2.0);  // step 1 (<= the first boundary)
    EXPECT_EQ(opt.learning_rate(), 0.5);
    EXPECT_EQ(step_on_sum(opt, w, fused)[0], -2.5);
    EXPECT_EQ(step_on_sum(opt, w, fused)[0], -2.75);
    EXPECT_EQ(opt.learning_rate(), 0.25);
  }
}

TEST(OptimizerWithSchedule, TheRateFollowsIterationsSoARestoredCounterRestoresIt) {
  const auto schedule =
      std::make_shared<const tf::optimizers::schedules::ExponentialDecay>(1e-3, 100, 0.8, true);
  tf::optimizers::Adam a(schedule), b(schedule);  // one schedule, shared
  tf::Variable iterations = b.iterations();
  iterations.assign(tf::constant(std::int64_t{250}));  // as restore_checkpoint would
  EXPECT_EQ(a.learning_rate(), 1e-3);
  EXPECT_EQ(b.learning_rate(), schedule->at(250));
  EXPECT_NEAR(b.learning_rate(), 1e-3 * 0.64, 1e-18);
}

TEST(OptimizerWithSchedule, HasNoLearningRateVariableToSet) {
  tf::optimizers::RMSprop opt(tf::optimizers::schedules::CosineDecay(0.01, 10));
  EXPECT_THAT([&] { opt.set_learning_rate(0.1); },
              ThrowsMessage<tf::FailedPreconditionError>(
                  AllOf(HasSubstr("[RMSprop] set_learning_rate"), HasSubstr("CosineDecay"))));
  EXPECT_THAT([&] { opt.learning_rate_variable(); },
              ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("learning_rate_variable")));
  EXPECT_THAT(
      [] { tf::optimizers::SGD(std::shared_ptr<const tf::optimizers::schedules::LearningRateSchedule>()); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("nullptr")));
}

/// Minimizes mean((x * scale @ w)^2) for `calls` steps (scale 1 + 0.1 * call, in x's dtype) twice:
/// by a step traced once with tf::function (traced_w, traced_opt) and eagerly (eager_w,
/// eager_opt); expects the variables bitwise equal after every call.
void expect_traced_steps_match_eager(const tf::Tensor& x, int calls, tf::Variable& traced_w,
                                     tf::optimizers::Optimizer& traced_opt, tf::Variable& eager_w,
                                     tf::optimizers::Optimizer& eager_opt) {
  auto step_of = [&x](tf::Variable& w, tf::optimizers::Optimizer& opt) {
    return [&x, &w, &opt](const tf::Tensor& scale) {
      tf::GradientTape tape;
      const tf::Tensor loss = tf::reduce_mean(tf::square(tf::matmul(x * scale, w.read_value())));
      opt.minimize(loss, {w}, tape);
      return loss;
    };
  };
  auto traced = tf::function(step_of(traced_w, traced_opt));
  auto eager = step_of(eager_w, eager_opt);
  for (int call = 0; call < calls; ++call) {
    const tf::Tensor scale = tf::cast(tf::constant(1.0f + 0.1f * static_cast<float>(call)), x.dtype());
    traced(scale);
    eager(scale);
    EXPECT_EQ(tf::cast(traced_w.value(), tf::float32).to_vector<float>(),
              tf::cast(eager_w.value(), tf::float32).to_vector<float>())
        << "call " << call;
  }
  EXPECT_EQ(traced.stats().traces, 1);
}

TEST(OptimizerWithSchedule, ATracedStepRecomputesTheRateAtEveryCallBitwiseAsEagerly) {
  const tf::optimizers::schedules::CosineDecay schedule(0.05, 6, {.alpha = 0.2});
  const tf::Tensor x = tf::random::normal({8, 3}, 0, 1, tf::float32, 3);
  tf::Variable traced_w(tf::random::normal({3, 1}, 0, 1, tf::float32, 4), {.name = "w"});
  tf::Variable eager_w(traced_w.value(), {.name = "w"});
  tf::optimizers::AdamW traced_opt(schedule), eager_opt(schedule);
  expect_traced_steps_match_eager(x, 9, traced_w, traced_opt, eager_w, eager_opt);
  EXPECT_EQ(traced_opt.learning_rate(), schedule.at(9));
  EXPECT_NEAR(traced_opt.learning_rate(), 0.05 * 0.2, 1e-17);
}

TEST(OptimizerValidation, LearningRateMustBePositiveAndFinite) {
  EXPECT_THAT([] { tf::optimizers::SGD(0.0); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[SGD]"), HasSubstr("learning_rate"))));
  EXPECT_THAT([] { (void)tf::optimizers::Adam(std::numeric_limits<double>::quiet_NaN()); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Adam]"), HasSubstr("nan"))));
  EXPECT_THROW((void)tf::optimizers::RMSprop(std::numeric_limits<double>::infinity()),
               tf::InvalidArgumentError);
}

TEST(OptimizerValidation, MomentumMustBeInZeroOne) {
  EXPECT_THAT([] { tf::optimizers::SGD(0.1, 1.5); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[SGD] momentum"), HasSubstr("1.5"))));
  EXPECT_THROW(tf::optimizers::SGD(0.1, -0.1), tf::InvalidArgumentError);
  EXPECT_NO_THROW(tf::optimizers::SGD(0.1, 1.0));
  EXPECT_THAT([] { tf::optimizers::RMSprop(0.1, {.momentum = 2.0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[RMSprop] momentum")));
}

TEST(OptimizerValidation, BetasMustBeInZeroOneExclusive) {
  EXPECT_THAT([] { tf::optimizers::Adam(0.1, {.beta_1 = 1.0}); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Adam] beta_1"), HasSubstr("1"))));
  EXPECT_THAT([] { tf::optimizers::AdamW(0.1, 0.004, {.beta_2 = -0.5}); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[AdamW] beta_2"), HasSubstr("-0.5"))));
  EXPECT_THROW(tf::optimizers::RMSprop(0.1, {.rho = 1.0}), tf::InvalidArgumentError);
}

TEST(OptimizerValidation, EpsilonAndWeightDecayMustBeNonNegative) {
  EXPECT_THAT([] { tf::optimizers::Adam(0.1, {.epsilon = -1e-7}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Adam] epsilon")));
  EXPECT_THAT([] { tf::optimizers::AdamW(0.1, -0.1); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[AdamW] weight_decay")));
  EXPECT_NO_THROW(tf::optimizers::Adam(0.1, {.epsilon = 0.0}));
}

TEST(OptimizerValidation, AtMostOneClipOptionAndPositive) {
  EXPECT_THAT([] { tf::optimizers::SGD(0.1, 0, false, {.clipnorm = 1.0, .global_clipnorm = 1.0}); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("only one of clipnorm, clipvalue and global_clipnorm")));
  EXPECT_THAT([] { tf::optimizers::SGD(0.1, 0, false, {.clipnorm = 0.0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("clipnorm must be positive")));
}

// ---- clipping ----------------------------------------------------------------------------------

TEST(ClipByNorm, ScalesDownToTheClipNorm) {
  // |[3, 4]| = 5 > 2.5: scaled by 2.5 / 5
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({3.0, 4.0}), 2.5).to_vector<double>(),
              ElementsAre(1.5, 2.0));
}

TEST(ClipByNorm, LeavesSmallerNormsUnchanged) {
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({{3.f}, {4.f}}), 10.0).to_vector<float>(),
              ElementsAre(3.f, 4.f));
}

TEST(ClipByNorm, ZeroAndEmptyTensorsStayAsTheyAre) {
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::zeros({2}), 1.0).to_vector<float>(), ElementsAre(0.f, 0.f));
  EXPECT_EQ(tf::optimizers::clip_by_norm(tf::zeros({0, 3}), 1.0).shape(), (tf::Shape{0, 3}));
}

TEST(ClipByNorm, GradientOfZeroTensorIsFinite) {
  tf::Tensor x = tf::zeros({2}, tf::DType::Float64);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::reduce_sum(tf::optimizers::clip_by_norm(x, 1.0));
  auto g = tape.gradient(y, x);
  ASSERT_TRUE(g.has_value());
  EXPECT_THAT(g->to_vector<double>(), ElementsAre(1.0, 1.0));
}

TEST(ClipByNorm, ClipsFloat32TensorsWhoseSquaresOverflowFloat32) {
  // |[3e20, 4e20]| = 5e20, a finite float32, though 3e20^2 is not: clipped to [0.6, 0.8], not
  // zeroed by an inf norm (an exploding gradient is what clipping is for).
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({3e20f, 4e20f}), 1.0).to_vector<float>(),
              ElementsAre(FloatNear(0.6f, 1e-6f), FloatNear(0.8f, 1e-6f)));
  // t * clip_norm would overflow before the division: |3e38| scaled to 10.
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({3e38f}), 10.0).to_vector<float>(),
              ElementsAre(FloatNear(10.f, 1e-5f)));
}

TEST(ClipByNorm, ZeroTensorStaysZeroWithClipNormZero) {
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::zeros({2}), 0.0).to_vector<float>(), ElementsAre(0.f, 0.f));
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({3.0, 4.0}), 0.0).to_vector<double>(),
              ElementsAre(0.0, 0.0));
}

TEST(ClipByNorm, RejectsNegativeClipNormAndIntegers) {
  EXPECT_THAT([] { tf::optimizers::clip_by_norm(tf::ones({2}), -1.0); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[ClipByNorm] clip_norm")));
  EXPECT_THAT(
      [] {
        tf::optimizers::clip_by_norm(tf::constant({1, 2}), 1.0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("int32")));
}

TEST(ClipByGlobalNorm, ScalesAllTensorsTogetherAndPassesMissingOnes) {
  // global norm = sqrt(3^2 + 0^2 + 4^2) = 5; scale 2.5 / 5 = 0.5
  auto [clipped, norm] =
      tf::optimizers::clip_by_global_norm({tf::constant({3.0, 0.0}), std::nullopt, tf::constant({4.0})}, 2.5);
  EXPECT_DOUBLE_EQ(norm.item<double>(), 5.0);
  ASSERT_EQ(clipped.size(), 3u);
  EXPECT_THAT(clipped[0]->to_vector<double>(), ElementsAre(1.5, 0.0));
  EXPECT_FALSE(clipped[1].has_value());
  EXPECT_THAT(clipped[2]->to_vector<double>(), ElementsAre(2.0));
}

TEST(ClipByGlobalNorm, LeavesTensorsUnchangedBelowTheClipNorm) {
  auto [clipped, norm] = tf::optimizers::clip_by_global_norm({tf::constant({3.f}), tf::constant({4.f})}, 6.0);
  EXPECT_FLOAT_EQ(norm.item<float>(), 5.f);
  EXPECT_EQ(norm.dtype(), tf::DType::Float32);
  EXPECT_FLOAT_EQ(clipped[0]->item<float>(), 3.f);
  EXPECT_FLOAT_EQ(clipped[1]->item<float>(), 4.f);
}

TEST(ClipByGlobalNorm, InfiniteNormGivesNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  auto [clipped, norm] = tf::optimizers::clip_by_global_norm({tf::constant({inf, 1.0})}, 1.0);
  EXPECT_TRUE(std::isinf(norm.item<double>()));
  EXPECT_TRUE(std::isnan(clipped[0]->values<double>()[1]));
}

TEST(ClipByGlobalNorm, ClipsFloat32TensorsWhoseNormOverflowsFloat32) {
  // Squares beyond float32's range, norm 5e20 within it: scale 1 / 5e20.
  auto [clipped, norm] =
      tf::optimizers::clip_by_global_norm({tf::constant({3e20f}), tf::constant({4e20f})}, 1.0);
  EXPECT_FLOAT_EQ(norm.item<float>(), 5e20f);
  EXPECT_NEAR(clipped[0]->item<float>(), 0.6f, 1e-6f);
  EXPECT_NEAR(clipped[1]->item<float>(), 0.8f, 1e-6f);
  // Every value finite, the norm (3e38 * sqrt(2)) beyond float32's range: returned as inf, but the
  // values are still clipped, each to 1e10 / sqrt(2), not turned to NaN.
  auto [big, big_norm] = tf::optimizers::clip_by_global_norm({tf::constant({3e38f, 3e38f})}, 1e10);
  EXPECT_TRUE(std::isinf(big_norm.item<float>()));
  EXPECT_THAT(big[0]->to_vector<float>(),
              ElementsAre(FloatNear(7.0710678e9f, 1e3f), FloatNear(7.0710678e9f, 1e3f)));
}

TEST(ClipByGlobalNorm, ZeroTensorsStayZeroWithClipNormZeroAndHaveAFiniteGradient) {
  auto [clipped, norm] = tf::optimizers::clip_by_global_norm({tf::zeros({2})}, 0.0);
  EXPECT_EQ(norm.item<float>(), 0.f);
  EXPECT_THAT(clipped[0]->to_vector<float>(), ElementsAre(0.f, 0.f));
  tf::Tensor x = tf::zeros({2}, tf::DType::Float64);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::reduce_sum(*tf::optimizers::clip_by_global_norm({x}, 1.0).first[0]);
  auto g = tape.gradient(y, x);
  ASSERT_TRUE(g.has_value());
  EXPECT_THAT(g->to_vector<double>(), ElementsAre(1.0, 1.0));
}

TEST(ClipByGlobalNorm, AllMissingGivesZeroNorm) {
  auto [clipped, norm] = tf::optimizers::clip_by_global_norm({std::nullopt}, 1.0);
  EXPECT_EQ(norm.item<float>(), 0.f);
  EXPECT_FALSE(clipped[0].has_value());
}

TEST(ClipByNorm, KeepsFloat32ValuesWhoseNormOverClipNormExceedsFloat32) {
  // |[3e38, 3e38]| = 4.24e38 and norm / clip_norm is beyond float32's range: each value is still
  // clipped to 1 / sqrt(2), not divided by an infinite float32 factor into zeros.
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({3e38f, 3e38f}), 1.0).to_vector<float>(),
              ElementsAre(FloatNear(0.70710677f, 1e-7f), FloatNear(0.70710677f, 1e-7f)));
  EXPECT_THAT(tf::optimizers::clip_by_norm(tf::constant({3e38f}), 1e-3).to_vector<float>(),
              ElementsAre(FloatNear(1e-3f, 1e-10f)));
}

TEST(ClipByGlobalNorm, KeepsFloat32ValuesWhoseNormOverClipNormExceedsFloat32) {
  auto [clipped, norm] =
      tf::optimizers::clip_by_global_norm({tf::constant({3e38f}), std::nullopt, tf::constant({-3e38f})}, 1.0);
  EXPECT_TRUE(std::isinf(norm.item<float>()));
  EXPECT_NEAR(clipped[0]->item<float>(), 0.70710677f, 1e-7f);
  EXPECT_NEAR(clipped[2]->item<float>(), -0.70710677f, 1e-7f);
}

TEST(ClipByNorm, ClipsBfloat16TensorsAndKeepsTheirDtype) {
  const tf::Tensor clipped =
      tf::optimizers::clip_by_norm(tf::cast(tf::constant({3.f, 4.f}), tf::bfloat16), 2.5);
  EXPECT_EQ(clipped.dtype(), tf::bfloat16);
  EXPECT_THAT(tf::cast(clipped, tf::float32).to_vector<float>(), ElementsAre(1.5f, 2.f));
}

TEST(TopLevelClipping, ClipFunctionsAreTensorFlowsTopLevelNames) {
  // tf.clip_by_norm, tf.clip_by_global_norm, tf.linalg.global_norm and tf.clip_by_value, called
  // as TensorFlow users write them.
  EXPECT_THAT(tf::clip_by_norm(tf::constant({3.0, 4.0}), 2.5).to_vector<double>(), ElementsAre(1.5, 2.0));
  EXPECT_DOUBLE_EQ(tf::global_norm({tf::constant({3.0}), tf::constant({4.0})}).item<double>(), 5.0);
  auto [clipped, norm] = tf::clip_by_global_norm({tf::constant({3.0}), tf::constant({4.0})}, 2.5);
  EXPECT_DOUBLE_EQ(norm.item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(clipped[0]->item<double>(), 1.5);
  EXPECT_THAT(tf::clip_by_value(tf::constant({-2.0, 0.5, 2.0}), -1.0, 1.0).to_vector<double>(),
              ElementsAre(-1.0, 0.5, 1.0));
}

TEST(OptimizerClipping, ClipnormClipsEachGradientSeparately) {
  tf::Variable a = keras_var(tf::constant({0.0, 0.0}), "a");
  tf::Variable b = keras_var(tf::constant({0.0}), "b");
  tf::optimizers::SGD opt(1.0, 0, false, {.clipnorm = 1.0});
  opt.apply_gradients({tf::constant({3.0, 4.0}), tf::constant({0.5})}, {a, b});
  // a: [3, 4] / 5; b: |0.5| < 1, unchanged
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(-0.6, -0.8));
  EXPECT_THAT(b.value().to_vector<double>(), ElementsAre(-0.5));
}

TEST(OptimizerClipping, GlobalClipnormClipsAllGradientsTogether) {
  tf::Variable a = keras_var(tf::constant({0.0}), "a");
  tf::Variable b = keras_var(tf::constant({0.0}), "b");
  tf::Variable c = keras_var(tf::constant({0.0}), "c");
  tf::optimizers::SGD opt(1.0, 0, false, {.global_clipnorm = 1.0});
  opt.apply_gradients({tf::constant({3.0}), std::nullopt, tf::constant({4.0})}, {a, b, c});
  // global norm 5: scale 1 / 5
  EXPECT_DOUBLE_EQ(a.value().item<double>(), -0.6);
  EXPECT_DOUBLE_EQ(b.value().item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(c.value().item<double>(), -0.8);
}

TEST(OptimizerClipping, ClipvalueClipsEachElement) {
  tf::Variable a = keras_var(tf::constant({0.0, 0.0, 0.0}), "a");
  tf::optimizers::SGD opt(1.0, 0, false, {.clipvalue = 1.0});
  opt.apply_gradients({tf::constant({3.0, -0.5, -7.0})}, {a});
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(-1.0, 0.5, 1.0));
}

TEST(Optimizer, MovedFromVariableIsRejectedBeforeAnyUpdate) {
  tf::Variable a = keras_var(tf::constant({1.0}), "a");
  tf::Variable b = keras_var(tf::constant({2.0}), "b");
  tf::Variable taken = std::move(b);
  tf::optimizers::SGD opt(0.5);
  // NOLINTNEXTLINE(bugprone-use-after-move): the point of the test
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({tf::constant({1.0}), tf::constant({1.0})}, {a, b});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[SGD] apply_gradients: variable 1 of 2 is a moved-from Variable")));
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(1.0));
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 0);
  EXPECT_THAT(
      [&] {
        opt.build({a, b});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[SGD] build: variable 1 of 2 is a moved-from")));
}

// ---- bfloat16 variables ------------------------------------------------------------------------

using MakeOptimizer = std::function<std::unique_ptr<tf::optimizers::Optimizer>()>;

class BFloat16Variables : public ::testing::TestWithParam<std::pair<std::string, MakeOptimizer>> {};

TEST_P(BFloat16Variables, TrainLikeAFloat32CopyRoundedToBfloat16AfterEachStep) {
  // The "bfloat16" policy's variables: each step is the float32 step (float32 slots) of the
  // variable's value, rounded once to bfloat16.
  const tf::Tensor init = tf::constant({1.f, -2.f, 0.375f, 3.f});
  tf::Variable w = keras_var(tf::cast(init, tf::bfloat16), "w");
  tf::Variable reference = keras_var(init, "w");
  const auto opt = GetParam().second(), reference_opt = GetParam().second();
  for (int step = 0; step < 3; ++step) {
    const tf::Tensor g = tf::cast(tf::random::normal({4}, 0, 1, tf::float32, 7 + step), tf::bfloat16);
    opt->apply_gradients({g}, {w});
    reference_opt->apply_gradients({tf::cast(g, tf::float32)}, {reference});
    reference.assign(tf::cast(tf::cast(reference.value(), tf::bfloat16), tf::float32));
    ASSERT_EQ(w.dtype(), tf::bfloat16);
    EXPECT_EQ(tf::cast(w.value(), tf::float32).to_vector<float>(), reference.value().to_vector<float>())
        << "step " << step;
  }
  const auto slots = opt->variables(), reference_slots = reference_opt->variables();
  ASSERT_EQ(slots.size(), reference_slots.size());
  for (std::size_t i = 1; i < slots.size(); ++i) {
    EXPECT_EQ(slots[i].second.dtype(), tf::float32) << slots[i].first;
    EXPECT_EQ(slots[i].second.value().to_vector<float>(),
              reference_slots[i].second.value().to_vector<float>())
        << slots[i].first;
  }
}

TEST_P(BFloat16Variables, AreTrainedByMinimizeAsByApplyGradients) {
  tf::Variable fused = keras_var(tf::cast(tf::constant({1.f, -2.f}), tf::bfloat16), "w");
  tf::Variable plain = keras_var(fused.value(), "w");
  const auto fused_opt = GetParam().second(), plain_opt = GetParam().second();
  const tf::Tensor x = tf::cast(tf::constant({0.5f, 3.f}), tf::bfloat16);
  {
    tf::GradientTape tape;
    fused_opt->minimize(tf::reduce_sum(tf::square(fused * x)), {fused}, tape);
  }
  {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::reduce_sum(tf::square(plain * x));
    plain_opt->apply_gradients({tape.gradient(loss, plain)}, {plain});
  }
  EXPECT_EQ(tf::cast(fused.value(), tf::float32).to_vector<float>(),
            tf::cast(plain.value(), tf::float32).to_vector<float>());
  EXPECT_NE(tf::cast(fused.value(), tf::float32).to_vector<float>(), (std::vector<float>{1.f, -2.f}));
}

TEST(BFloat16Variable, TrainsInATracedStepBitwiseAsEagerly) {
  // The float32 copy the update runs on is assigned from the variable in the step, so each call of
  // the traced step starts from the variable's value at that call.
  const tf::Tensor x = tf::cast(tf::random::normal({8, 3}, 0, 1, tf::float32, 3), tf::bfloat16);
  tf::Variable traced_w(tf::cast(tf::random::normal({3, 1}, 0, 1, tf::float32, 4), tf::bfloat16),
                        {.name = "w"});
  tf::Variable eager_w(traced_w.value(), {.name = "w"});
  tf::optimizers::Adam traced_opt(0.05), eager_opt(0.05);
  expect_traced_steps_match_eager(x, 4, traced_w, traced_opt, eager_w, eager_opt);
  EXPECT_EQ(traced_w.dtype(), tf::bfloat16);
}

TEST(BFloat16Variable, GradientsAreClippedInFloat32) {
  // global_clipnorm: the bfloat16 gradients are widened to float32 and clipped together.
  tf::Variable w = keras_var(tf::cast(tf::constant({0.f, 0.f}), tf::bfloat16), "w");
  tf::optimizers::SGD opt(1.0, 0, false, {.global_clipnorm = 2.5});
  opt.apply_gradients({tf::cast(tf::constant({3.f, 4.f}), tf::bfloat16)}, {w});
  EXPECT_THAT(tf::cast(w.value(), tf::float32).to_vector<float>(), ElementsAre(-1.5f, -2.f));
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, BFloat16Variables,
    ::testing::Values(
        std::pair<std::string, MakeOptimizer>{"Sgd",
                                              [] { return std::make_unique<tf::optimizers::SGD>(0.25); }},
        std::pair<std::string, MakeOptimizer>{
            "SgdMomentum", [] { return std::make_unique<tf::optimizers::SGD>(0.25, 0.9); }},
        std::pair<std::string, MakeOptimizer>{"Adam",
                                              [] { return std::make_unique<tf::optimizers::Adam>(0.1); }},
        std::pair<std::string, MakeOptimizer>{"AdamAmsgrad",
                                              [] {
                                                return std::make_unique<tf::optimizers::Adam>(
                                                    0.1, tf::optimizers::AdamOptions{.amsgrad = true});
                                              }},
        std::pair<std::string, MakeOptimizer>{
            "AdamW", [] { return std::make_unique<tf::optimizers::AdamW>(0.1, 0.1); }},
        std::pair<std::string, MakeOptimizer>{"RmspropCenteredMomentum",
                                              [] {
                                                return std::make_unique<tf::optimizers::RMSprop>(
                                                    0.1, tf::optimizers::RMSpropOptions{.momentum = 0.5,
                                                                                        .centered = true});
                                              }}),
    [](const auto& info) { return info.param.first; });

}  // namespace
