// GradientTape behaviours, one per test, each named for the behaviour. Together with the seed
// programs' golden tests (examples/seeds) these pin down TensorFlow's documented semantics.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <list>
#include <thread>

#include "autodiff/tape_state.h"
#include "support/errors.h"
#include "support/forbidden_gradient.h"
#include "support/gradient_callback.h"
#include "support/log_capture.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using tf::testing::identity_with_forbidden_gradient;
using tf::testing::square_calling;

namespace {

float value(const tf::Gradient& g) { return g.value().item<float>(); }

/// Captures log messages for the lifetime of the object.
using tf::testing::LogCapture;

TEST(GradientTape, TrainableVariableIsWatchedWhenRead) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::square(x);
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 6.0f);
}

TEST(GradientTape, PlainTensorNeedsWatch) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * x;
  EXPECT_FALSE(tape.gradient(y, x).has_value());
}

TEST(GradientTape, WatchedTensorGetsGradient) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 6.0f);
}

TEST(GradientTape, NonTrainableVariableAndTensorsGiveNone) {
  tf::Variable x0(3.0f, {.name = "x0"});
  tf::Variable x1(3.0f, {.name = "x1", .trainable = false});
  tf::Tensor x2 = tf::Tensor(tf::Variable(2.0f, {.name = "x2"})) + 1.0f;
  tf::Tensor x3 = tf::constant(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::square(x0) + tf::square(x1) + tf::square(x2);
  auto grad = tape.gradient(y, {x0, x1, x2, x3});
  ASSERT_EQ(grad.size(), 4u);
  EXPECT_FLOAT_EQ(value(grad[0]), 6.0f);
  EXPECT_FALSE(grad[1] || grad[2] || grad[3]);
  ASSERT_EQ(tape.watched_variables().size(), 1u);
  EXPECT_EQ(tape.watched_variables()[0].name(), "x0:0");
}

TEST(GradientTape, WatchedVariablesInCreationOrderWithoutDuplicates) {
  tf::Variable a(1.0f, {.name = "a"}), b(2.0f, {.name = "b"}), c(3.0f, {.name = "c"});
  tf::GradientTape tape;
  tf::Tensor y = c * b * c;  // first accessed: c, then b
  tape.watch(a);
  tape.watch(b);
  std::vector<std::string> names;
  for (const auto& v : tape.watched_variables()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"a:0", "b:0", "c:0"}));  // as TensorFlow: sorted by id
}

TEST(GradientTape, WatchedVariablesSurviveTheNonPersistentGradientCall) {
  tf::Variable a(1.0f, {.name = "a"}), b(2.0f, {.name = "b"});
  tf::GradientTape tape;
  tf::Tensor y = b * a;
  (void)tape.gradient(y, a);
  ASSERT_EQ(tape.watched_variables().size(), 2u);
  EXPECT_EQ(tape.watched_variables()[0].name(), "a:0");
}

TEST(GradientTape, WatchAccessedVariablesFalseWatchesOnlyExplicitly) {
  tf::Variable x0(0.0f), x1(10.0f);
  tf::GradientTape tape({.watch_accessed_variables = false});
  tape.watch(x1);
  tf::Tensor y = tf::sin(x0) + tf::exp(x1);
  auto grad = tape.gradient(y, {{"x0", x0}, {"x1", x1}});
  EXPECT_FALSE(grad["x0"].has_value());
  EXPECT_FLOAT_EQ(value(grad["x1"]), std::exp(10.0f));
}

TEST(GradientTape, ExplicitWatchWorksForNonTrainableVariable) {
  tf::Variable x(2.0f, {.trainable = false});
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_FLOAT_EQ(value(tape.gradient(x * x, x)), 4.0f);
}

TEST(GradientTape, GradientWithRespectToIntermediate) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  tf::Tensor z = y * y;
  EXPECT_FLOAT_EQ(value(tape.gradient(z, y)), 18.0f);
}

TEST(GradientTape, TargetWithRespectToItselfIsOnes) {
  tf::Tensor x = tf::constant({1.f, 2.f});
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_EQ(tape.gradient(x, x)->to_vector<float>(), (std::vector<float>{1.f, 1.f}));
}

TEST(GradientTape, UnrelatedConstantTargetGivesNone) {
  tf::Tensor x = tf::constant(1.f);
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_FALSE(tape.gradient(tf::constant(5.f), x).has_value());
}

TEST(GradientTape, NonPersistentTapeAllowsOneGradientCall) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * x;
  (void)tape.gradient(y, x);
  try {
    (void)tape.gradient(y, x);
    FAIL() << "expected FailedPreconditionError";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_STREQ(
        e.what(),
        "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)");
  }
}

TEST(GradientTape, PersistentTapeAllowsManyCalls) {
  tf::Tensor x = tf::constant({1.f, 3.f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor y = x * x;
  tf::Tensor z = y * y;
  EXPECT_EQ(tape.gradient(z, x)->to_vector<float>(), (std::vector<float>{4.f, 108.f}));
  EXPECT_EQ(tape.gradient(y, x)->to_vector<float>(), (std::vector<float>{2.f, 6.f}));
}

TEST(GradientTape, SeveralTargetsGiveGradientOfTheirSum) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y0 = x * x;
  tf::Tensor y1 = 1.0f / x;
  EXPECT_FLOAT_EQ(value(tape.gradient({{"y0", y0}, {"y1", y1}}, x)), 3.75f);
}

TEST(GradientTape, NonScalarTargetGivesGradientOfItsSum) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * tf::constant({3.f, 4.f});
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 7.0f);
}

TEST(GradientTape, OutputGradientsWeightTheTargets) {
  tf::Tensor x = tf::constant({1.f, 2.f});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  auto g = tape.gradient(y, x, {tf::constant({10.f, -1.f})});
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{20.f, -4.f}));
}

TEST(GradientTape, OutputGradientsMustMatchTargets) {
  tf::Tensor x = tf::constant({1.f, 2.f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor y = x * x;
  EXPECT_THROW((void)tape.gradient(y, x, {tf::constant(1.f)}), tf::InvalidArgumentError);
  EXPECT_THROW((void)tape.gradient(y, x, {tf::constant(1.f), tf::constant(1.f)}), tf::InvalidArgumentError);
}

TEST(GradientTape, UnconnectedGradientsNoneOrZero) {
  tf::Tensor a = tf::constant(2.0f), b = tf::constant(3.0f), c = tf::constant(4.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch({a, b, c});
  tf::Tensor y = a * a;
  tf::Tensor z = b * c;
  EXPECT_FLOAT_EQ(value(tape.gradient(y, a)), 4.0f);
  EXPECT_FALSE(tape.gradient(z, a, tf::UnconnectedGradients::None).has_value());
  auto zero = tape.gradient(z, a, tf::UnconnectedGradients::Zero);
  ASSERT_TRUE(zero.has_value());
  EXPECT_EQ(zero->shape(), tf::Shape());
  EXPECT_FLOAT_EQ(zero->item<float>(), 0.0f);
}

TEST(GradientTape, ZeroUnconnectedGradientHasTheSourceShapeAndDtype) {
  tf::Variable x(tf::constant({2.0, 2.0}));
  tf::Variable y(3.0);
  tf::GradientTape tape;
  tf::Tensor z = y * y;
  auto g = tape.gradient(z, x, tf::UnconnectedGradients::Zero);
  EXPECT_EQ(g->shape(), tf::Shape{2});
  EXPECT_EQ(g->dtype(), tf::DType::Float64);
}

TEST(GradientTape, IntegerWatchLogsTensorFlowsWarningOnceAndGivesNone) {
  LogCapture log;
  tf::Tensor x = tf::constant(10);
  tf::GradientTape tape;
  tape.watch(x);
  tape.watch(x);
  tf::Tensor y = x * x;
  EXPECT_FALSE(tape.gradient(y, x).has_value());
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_EQ(log.messages[0],
            "The dtype of the watched tensor must be floating (e.g. tf.float32), got tf.int32");
}

TEST(GradientTape, IntegerCastCutsThePath) {
  tf::Variable x(2.5f);
  tf::GradientTape tape;
  tf::Tensor y = tf::cast(tf::cast(x, tf::int32), tf::float32) * x;
  // Only the direct factor x contributes: d(c * x)/dx with c = 2 constant.
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 2.0f);
}

TEST(GradientTape, AssignAddCutsThePath) {
  tf::Variable x0(3.0f), x1(0.0f);
  tf::GradientTape tape;
  x1.assign_add(x0);
  tf::Tensor y = x1 * x1;
  EXPECT_FALSE(tape.gradient(y, x0).has_value());
  EXPECT_FLOAT_EQ(x1.value().item<float>(), 3.0f);
}

TEST(GradientTape, ReplacingAVariableWithATensorLosesTheGradient) {
  tf::Variable var(2.0f);
  tf::Tensor x = var;
  {
    tf::GradientTape tape;
    tf::Tensor y = var + 1.0f;
    EXPECT_FLOAT_EQ(value(tape.gradient(y, var)), 1.0f);
  }
  x = x + 1.0f;  // "should be var.assign_add(1)"
  tf::GradientTape tape;
  tf::Tensor y = x + 1.0f;
  EXPECT_FALSE(tape.gradient(y, x).has_value());
}

TEST(GradientTape, StopGradientBlocksThePath) {
  tf::Variable x(tf::constant({2.f, 3.f})), y(tf::constant({1.f, 1.f}));
  tf::Tensor z = tf::stop_gradient(x * y + 3.0f);
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum((z - 5.0f) * (z - 5.0f));
  auto g = tape.gradient(loss, {x, y});
  EXPECT_FALSE(g[0] || g[1]);
}

TEST(GradientTape, StopGradientInsideTheTapeBlocksToo) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::stop_gradient(x * x) + x;
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 1.0f);
}

TEST(GradientTape, NonDifferentiableOpGivesNone) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::raw_ops::no_gradient(x);
  EXPECT_FALSE(tape.gradient(y, x).has_value());
}

TEST(GradientTape, NoGradientFunctionRunsBehindStopGradient) {
  tf::Variable x(3.0f);
  int calls = 0;
  tf::GradientTape tape;
  tf::Tensor y = identity_with_forbidden_gradient(tf::stop_gradient(x), calls) + x;
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 1.0f);
  EXPECT_EQ(calls, 0);
}

TEST(GradientTape, NoGradientFunctionRunsBehindANoGradientOp) {
  tf::Variable x(3.0f);
  int calls = 0;
  tf::GradientTape tape;
  tf::Tensor y = identity_with_forbidden_gradient(tf::raw_ops::no_gradient(x), calls);
  EXPECT_FALSE(tape.gradient(y, x).has_value());
  EXPECT_EQ(calls, 0);
}

TEST(GradientTape, NoGradientFunctionRunsBehindAnIntegerCast) {
  tf::Variable x(2.5f);
  int calls = 0;
  tf::GradientTape tape;
  tf::Tensor y = identity_with_forbidden_gradient(tf::cast(tf::cast(x, tf::int32), tf::float32), calls) * x;
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 2.0f);
  EXPECT_EQ(calls, 0);
}

TEST(GradientTape, NoGradientFunctionRunsBehindAVariableAssignment) {
  tf::Tensor x = tf::constant(3.0f);
  tf::Variable v(0.0f, {.trainable = false});  // read without a ReadVariableOp record
  int calls = 0;
  tf::GradientTape tape;
  tape.watch(x);
  v.assign(x * 2.0f);
  tf::Tensor y = identity_with_forbidden_gradient(v, calls) + x;
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 1.0f);  // TensorFlow: assignments are not differentiable
  EXPECT_EQ(calls, 0);
}

TEST(GradientTape, NoGradientFunctionRunsBehindAVariableInitialisedFromATrackedTensor) {
  tf::Tensor x = tf::constant(3.0f);
  int calls = 0;
  tf::GradientTape tape({.watch_accessed_variables = false});
  tape.watch(x);
  tf::Variable v(x * 2.0f);
  tf::Tensor y = identity_with_forbidden_gradient(v, calls);
  EXPECT_FALSE(tape.gradient(y, x).has_value());
  EXPECT_EQ(calls, 0);
}

TEST(GradientTape, MissingRegistryEntryRaisesLookupError) {
  tf::Variable image(tf::constant({{{0.5f, 0.0f, 0.0f}}}));
  tf::Variable delta(0.1f);
  tf::GradientTape tape;
  tf::Tensor new_image = tf::image::adjust_contrast(image, delta);
  try {
    (void)tape.gradient(new_image, {image, delta});
    FAIL() << "expected LookupError";
  } catch (const tf::LookupError& e) {
    EXPECT_STREQ(e.what(), "gradient registry has no entry for: AdjustContrastv2");
  }
}

TEST(GradientRegistry, RegisterGradientReplacesAndNoGradientDisables) {
  const auto status = tf::gradient_status("Sin");
  EXPECT_EQ(status, tf::GradientStatus::Registered);
  tf::Variable x(0.5f);
  tf::register_gradient("Sin", [](const tf::GradContext& c) -> tf::Grads { return {c.dy() * 100.0f}; });
  {
    tf::GradientTape tape;
    EXPECT_FLOAT_EQ(value(tape.gradient(tf::sin(x), x)), 100.0f);
  }
  tf::no_gradient("Sin");
  {
    tf::GradientTape tape;
    EXPECT_FALSE(tape.gradient(tf::sin(x), x).has_value());
  }
  // Restore the real gradient for the other tests: dx = dy * cos(x).
  tf::register_gradient("Sin",
                        [](const tf::GradContext& c) -> tf::Grads { return {c.dy() * tf::cos(c.input(0))}; });
  tf::GradientTape tape;
  EXPECT_FLOAT_EQ(value(tape.gradient(tf::sin(x), x)), std::cos(0.5f));
}

TEST(GradientRegistry, GradientWithWrongArityIsReported) {
  tf::register_gradient("NoGradient", [](const tf::GradContext&) -> tf::Grads { return {}; });
  tf::Variable x(1.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::raw_ops::no_gradient(x);
  try {
    (void)tape.gradient(y, x);
    FAIL() << "expected InternalError";
  } catch (const tf::InternalError& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("Recorded operation 'NoGradient' returned too few gradients. Expected 1 but received 0"));
  }
  tf::no_gradient("NoGradient");
}

TEST(GradientTape, ControlFlowIsRecordedAsExecuted) {
  tf::Tensor x = tf::constant(1.0f);
  tf::Variable v0(2.0f), v1(2.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor result = x.item<float>() > 0.0f ? tf::Tensor(v0) : tf::square(v1);
  auto g = tape.gradient(result, {v0, v1});
  EXPECT_FLOAT_EQ(value(g[0]), 1.0f);
  EXPECT_FALSE(g[1].has_value());
  EXPECT_FALSE(tape.gradient(result, x).has_value());
}

TEST(GradientTape, NestedTapesGiveSecondDerivative) {
  tf::Variable x(2.0f);
  tf::GradientTape outer;
  tf::Tensor dy_dx;
  {
    tf::GradientTape inner;
    tf::Tensor y = x * x * x;
    dy_dx = *inner.gradient(y, x);
  }
  EXPECT_FLOAT_EQ(dy_dx.item<float>(), 12.0f);
  EXPECT_FLOAT_EQ(value(outer.gradient(dy_dx, x)), 12.0f);  // d2(x^3)/dx2 = 6x
}

TEST(GradientTape, ThirdDerivativeThroughThreeTapes) {
  tf::Tensor x = tf::constant(0.3);
  tf::GradientTape t3;
  t3.watch(x);
  tf::Tensor d2;
  {
    tf::GradientTape t2;
    t2.watch(x);
    tf::Tensor d1;
    {
      tf::GradientTape t1;
      t1.watch(x);
      d1 = *t1.gradient(tf::sin(x), x);
    }
    d2 = *t2.gradient(d1, x);
  }
  EXPECT_NEAR(d2.item<double>(), -std::sin(0.3), 1e-12);
  EXPECT_NEAR(t3.gradient(d2, x)->item<double>(), -std::cos(0.3), 1e-12);
}

TEST(GradientTape, StopRecordingPausesTheTape) {
  tf::Variable x(3.0f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = x * x;
  {
    auto pause = tape.stop_recording();
    tf::Tensor unrecorded = y * x;
    EXPECT_FALSE(tape.gradient(unrecorded, x).has_value());
  }
  tf::Tensor z = y * x;
  EXPECT_FLOAT_EQ(value(tape.gradient(z, x)), 27.0f);
}

TEST(GradientTape, NestedStopRecordingGuardsResumeWhenTheLastEnds) {
  tf::Variable x(3.0f);
  tf::GradientTape tape({.persistent = true});
  std::optional<tf::Tensor> during;
  {
    auto outer = tape.stop_recording();
    { auto inner = tape.stop_recording(); }
    during = x * x;  // the outer guard still pauses the tape
  }
  tf::Tensor after = x * x;
  EXPECT_FALSE(tape.gradient(*during, x).has_value());
  EXPECT_FLOAT_EQ(value(tape.gradient(after, x)), 6.0f);
}

TEST(GradientTape, StopRecordingGuardsDestroyedOutOfOrderResumeWhenTheLastEnds) {
  tf::Variable x(3.0f);
  tf::GradientTape tape({.persistent = true});
  struct Guard {  // holds a pause without moving it (guards are not movable)
    explicit Guard(tf::GradientTape& t) : pause(t.stop_recording()) {}
    tf::GradientTape::RecordingPause pause;
  };
  auto first = std::make_unique<Guard>(tape);
  auto second = std::make_unique<Guard>(tape);
  first.reset();  // the first guard ends while the second is alive
  tf::Tensor during = x * x;
  second.reset();
  tf::Tensor after = x * x;
  EXPECT_FALSE(tape.gradient(during, x).has_value());
  EXPECT_FLOAT_EQ(value(tape.gradient(after, x)), 6.0f);
}

TEST(GradientTape, StopRecordingOnAConsumedTapeThrows) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  (void)tape.gradient(x * x, x);
  try {
    auto pause = tape.stop_recording();
    FAIL();
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Trying to stop recording a tape which is not recording."));
  }
}

TEST(GradientTape, ResetForgetsEverythingAndKeepsRecording) {
  tf::Variable x(3.0f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = x * x;
  tape.reset();
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
  EXPECT_TRUE(tape.watched_variables().empty());
  EXPECT_FALSE(tape.gradient(y, x).has_value());
  tf::Tensor z = x * x * x;
  EXPECT_FLOAT_EQ(value(tape.gradient(z, x)), 27.0f);
}

TEST(GradientTape, ResetFromAGradientFunctionOfItsOwnPassThrows) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  bool reset_inside = true;
  const auto maybe_reset = [&] {
    if (reset_inside) tape.reset();
  };
  tf::Tensor y = square_calling(x, maybe_reset) * 1.5f;
  try {
    (void)tape.gradient(y, x);
    FAIL() << "expected FailedPreconditionError";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[GradientTape::reset] cannot reset a tape while its gradient()"));
  }
  reset_inside = false;  // the refused reset left the records intact
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 9.0f);
  tape.reset();  // and it works once no pass runs
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
}

TEST(GradientTape, DestroyingTheTapeFromAGradientFunctionLetsItsPassFinish) {
  for (const bool persistent : {false, true}) {
    tf::Tensor x = tf::constant(3.0f);
    auto tape = std::make_unique<tf::GradientTape>(tf::TapeOptions{.persistent = persistent});
    tape->watch(x);
    tf::Tensor y = tf::sin(square_calling(x, [&] { tape.reset(); }));
    tf::GradientTape* const running = tape.get();
    const auto g = running->gradient(y, x);  // the tape is destroyed during this call
    EXPECT_EQ(tape, nullptr);
    EXPECT_FLOAT_EQ(value(g), std::cos(9.0f) * 6.0f) << "persistent = " << persistent;
  }
}

TEST(GradientTape, DestroyingTheTapeFromAGradientFunctionStillExplainsAMissingGradient) {
  tf::Tensor x = tf::constant(3.0f), unwatched = tf::constant(1.0f);
  auto tape = std::make_unique<tf::GradientTape>();
  tape->watch(x);
  tf::Tensor y = square_calling(x, [&] { tape.reset(); });
  tf::GradientTape* const running = tape.get();
  const std::vector<tf::Gradient> g = running->gradient(y, {x, unwatched});  // reads the tape after the pass
  EXPECT_FLOAT_EQ(value(g[0]), 6.0f);
  EXPECT_THAT(g[1].why_missing(), HasSubstr("never watched"));
}

TEST(GradientTape, GradientOfTheSamePersistentTapeFromAGradientFunction) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor x2 = x * x;
  tf::Gradient inner;
  tf::Tensor y = square_calling(x2, [&] { inner = tape.gradient(x2, x); });  // x^4
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 108.0f);                       // 4x^3
  EXPECT_FLOAT_EQ(value(inner), 6.0f);
  const auto before = tape.num_recorded_ops();
  (void)tape.gradient(y, x);
  EXPECT_EQ(tape.num_recorded_ops(), before);  // neither pass was recorded on the tape
}

TEST(GradientTape, GradientIsNotRecordedOnItsOwnPersistentTape) {
  tf::Variable x(3.0f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = x * x;
  const auto before = tape.num_recorded_ops();
  (void)tape.gradient(y, x);
  EXPECT_EQ(tape.num_recorded_ops(), before);
}

TEST(GradientTape, SourcesKeepTheirNestedStructure) {
  tf::Variable w(2.0f), b(1.0f);
  tf::Tensor c = tf::constant(5.0f);
  tf::GradientTape tape;
  tape.watch(c);
  tf::Tensor y = w * c + b;
  auto [gw, rest] = tape.gradient(y, std::pair{w, std::tuple{b, std::vector<tf::Tensor>{c}}});
  EXPECT_FLOAT_EQ(value(gw), 5.0f);
  EXPECT_FLOAT_EQ(value(std::get<0>(rest)), 1.0f);
  EXPECT_FLOAT_EQ(value(std::get<1>(rest)[0]), 2.0f);
}

TEST(GradientTape, MapSourcesKeepTheirKeys) {
  tf::Variable w(2.0f), b(1.0f);
  tf::GradientTape tape;
  tf::Tensor y = w * w + b;
  std::map<std::string, tf::Variable> vars{{"w", w}, {"b", b}};
  auto g = tape.gradient(y, vars);
  EXPECT_FLOAT_EQ(value(g.at("w")), 4.0f);
  EXPECT_FLOAT_EQ(value(g.at("b")), 1.0f);
}

TEST(GradientTape, BroadcastOperandGradientHasItsShape) {
  tf::Variable b(tf::constant({1.f, 2.f}));
  tf::Tensor x = tf::constant({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  tf::GradientTape tape;
  tf::Tensor y = x * b;
  auto g = tape.gradient(y, b);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{9.f, 12.f}));
}

TEST(GradientTape, AccumulationIsDeterministic) {
  tf::Tensor x = tf::random::normal({1000}, 0, 1, tf::float32, 7);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reduce_sum(tf::sin(x) * x + tf::exp(x) * x + x * x);
    auto g = tape.gradient(y, x)->to_vector<float>();
    if (run == 0) first = g;
    EXPECT_EQ(g, first);
  }
}

TEST(GradientTape, UndefinedTensorsAreRejected) {
  tf::GradientTape tape({.persistent = true});
  EXPECT_THROW(tape.watch(tf::Tensor()), tf::InvalidArgumentError);
  tf::Tensor x = tf::constant(1.f);
  EXPECT_THROW((void)tape.gradient(tf::Tensor(), x), tf::InvalidArgumentError);
  EXPECT_THROW((void)tape.gradient(x, tf::Tensor()), tf::InvalidArgumentError);
}

// ---- memory: what the tape keeps ------------------------------------------------------------

TEST(GradientTapeMemory, OpsKeepOnlyWhatTheirGradientReads) {
  tf::Tensor x = tf::ones({1000});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor y = x + x;  // Add keeps nothing
  EXPECT_EQ(tape.saved_bytes(), 0);
  tf::Tensor z = tf::exp(y);  // Exp keeps its output only
  EXPECT_EQ(tape.saved_bytes(), 4000);
}

TEST(GradientTapeMemory, NonPersistentTapeReleasesEverythingAfterGradient) {
  tf::Tensor x = tf::ones({1000});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor z = tf::exp(tf::sin(x));
  EXPECT_GT(tape.saved_bytes(), 0);
  (void)tape.gradient(z, x);
  EXPECT_EQ(tape.saved_bytes(), 0);
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
}

TEST(GradientTapeMemory, PersistentTapeKeepsUntilReset) {
  tf::Tensor x = tf::ones({1000});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor z = tf::exp(tf::sin(x));
  const auto held = tape.saved_bytes();
  (void)tape.gradient(z, x);
  EXPECT_EQ(tape.saved_bytes(), held);
  tape.reset();
  EXPECT_EQ(tape.saved_bytes(), 0);
}

// ---- the registry of live tapes ---------------------------------------------------------------

TEST(GradientTapeRegistry, AnOpVisitsOnlyTheTapesThatRecord) {
  // Tens of thousands of live tapes of which two record: an op walks a list of two (the dispatch
  // path iterates recording_tapes()), and ending tapes in any order keeps the registry exact.
  constexpr int kIdle = 20000;
  tf::Tensor x = tf::constant(2.0f);
  const std::size_t live_before = tf::autodiff::this_thread_tapes().size();
  const std::size_t recording_before = tf::autodiff::recording_tapes().size();
  std::vector<std::unique_ptr<tf::GradientTape>> consumed;
  for (int i = 0; i < kIdle / 2; ++i) {
    consumed.push_back(std::make_unique<tf::GradientTape>());
    (void)consumed.back()->gradient(x, x);
  }
  struct Paused {
    Paused() : pause(tape.stop_recording()) {}
    tf::GradientTape tape;
    tf::GradientTape::RecordingPause pause;
  };
  std::list<Paused> paused(kIdle / 2);
  tf::GradientTape first;
  first.watch(x);
  tf::GradientTape second({.persistent = true});
  second.watch(x);
  tf::Tensor y = x * x;
  EXPECT_EQ(tf::autodiff::this_thread_tapes().size(), live_before + kIdle + 2);
  EXPECT_EQ(tf::autodiff::recording_tapes().size(), recording_before + 2);
  EXPECT_EQ(first.num_recorded_ops(), 1u);
  EXPECT_EQ(second.num_recorded_ops(), 1u);
  for (std::size_t i = 0; i < consumed.size(); i += 2) consumed[i].reset();  // neither first nor last in
  consumed.clear();
  paused.clear();
  EXPECT_EQ(tf::autodiff::this_thread_tapes().size(), live_before + 2);
  EXPECT_FLOAT_EQ(value(first.gradient(y, x)), 4.0f);
  EXPECT_EQ(tf::autodiff::recording_tapes().size(), recording_before + 1);  // `first` was consumed
  EXPECT_FLOAT_EQ(value(second.gradient(x * x * x, x)), 12.0f);
}

TEST(GradientTapeRegistry, AResumedTapeRecordsInCreationOrder) {
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape outer;
  outer.watch(x);
  tf::Gradient g;
  tf::GradientTape inner;
  inner.watch(x);
  {
    auto pause = outer.stop_recording();  // outer leaves the list and comes back before inner
  }
  const auto tapes = tf::autodiff::recording_tapes();
  ASSERT_GE(tapes.size(), 2u);
  EXPECT_LT(tapes[tapes.size() - 2]->nesting_id, tapes.back()->nesting_id);
  // Nesting still gives second derivatives: inner's backward pass is recorded on outer.
  g = inner.gradient(x * x * x, x);
  EXPECT_FLOAT_EQ(value(outer.gradient(*g, x)), 12.0f);
}

// ---- threads ----------------------------------------------------------------------------------

TEST(GradientTapeThreads, TapesRecordOnlyTheirOwnThread) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor other;
  std::thread([&] { other = x * x; }).join();
  EXPECT_FALSE(tape.gradient(other, x).has_value());
}

TEST(GradientTapeThreads, ATapeDestroyedOnAnotherThreadStopsRecordingAndLeavesItsOwnersRegistry) {
  tf::Tensor x = tf::constant(2.0f);
  const std::size_t live_before = tf::autodiff::this_thread_tapes().size();
  auto tape = std::make_unique<tf::GradientTape>();
  tape->watch(x);
  std::thread([&] { tape.reset(); }).join();
  tf::GradientTape other;  // this thread's next registry change drops the orphan
  other.watch(x);
  tf::Tensor y = x * x;
  EXPECT_EQ(tf::autodiff::this_thread_tapes().size(), live_before + 1);
  EXPECT_EQ(other.num_recorded_ops(), 1u);
}

TEST(GradientTapeThreads, UsingATapeFromAnotherThreadThrows) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * x;
  bool threw = false;
  std::thread([&] {
    try {
      (void)tape.gradient(y, x);
    } catch (const tf::FailedPreconditionError&) {
      threw = true;
    }
  }).join();
  EXPECT_TRUE(threw);
  EXPECT_FLOAT_EQ(value(tape.gradient(y, x)), 4.0f);
}

// The pause guard belongs to the tape's thread. Destroyed elsewhere it cannot end the pause, and
// the tape missed the ops since: its gradient says so instead of coming back missing.
TEST(GradientTapeThreads, APauseEndedOnAnotherThreadMakesTheGradientAFailedPrecondition) {
  tf::Variable x(2.0f);
  tf::GradientTape tape({.persistent = true});
  // new: the guard is not movable, and only a prvalue initialises it in place.
  std::unique_ptr<tf::GradientTape::RecordingPause> pause(
      new tf::GradientTape::RecordingPause(tape.stop_recording()));
  std::thread([&] { pause.reset(); }).join();
  const tf::Tensor y = x * x;
  EXPECT_THAT([&] { (void)tape.gradient(y, x); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                  HasSubstr("stop_recording() guard of this tape was destroyed on another thread")));
  EXPECT_THROW((void)tape.jacobian(y, x), tf::FailedPreconditionError);
}

}  // namespace

namespace {

TEST(GradientTape, VariableTargetStandsForItsHandle) {
  tf::Variable v(tf::constant({1.f, 2.f})), other(3.f);
  tf::GradientTape tape({.persistent = true});
  auto pause = tape.stop_recording();
  EXPECT_EQ(tape.gradient(v, v)->to_vector<float>(), (std::vector<float>{1.f, 1.f}));
  EXPECT_FALSE(tape.gradient(v, other).has_value());
}

}  // namespace

namespace {

// A missing gradient (TensorFlow's None) is a tf::Gradient that throws when read, naming the
// source and the reason the tape found.

TEST(GradientTape, ReadingAGradientOfAnUnwatchedTensorThrowsNamingItAndWhy) {
  const tf::Tensor x = tf::constant({3.0f, 4.0f});
  tf::GradientTape tape;
  const tf::Gradient g = tape.gradient(x * x, x);
  EXPECT_FALSE(g);
  const std::string msg = tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*g; });
  EXPECT_THAT(msg, HasSubstr("tensor #" + std::to_string(x.id()) + " with shape (2,) and dtype float32"));
  EXPECT_THAT(msg, HasSubstr("the tape never watched it"));
  EXPECT_THROW((void)g->shape(), tf::FailedPreconditionError);
  EXPECT_THROW((void)g.value(), tf::FailedPreconditionError);
}

TEST(GradientTape, ReadingAGradientOfAnUnconnectedSourceThrowsSayingNotConnected) {
  const tf::Tensor x = tf::constant(1.0f), z = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch({x, z});
  const tf::Tensor y = x * 2.0f;
  const auto [dx, dz] = tape.gradient(y, std::pair{x, z});
  EXPECT_FLOAT_EQ(value(dx), 2.0f);
  EXPECT_THAT(tf::testing::error_of<tf::FailedPreconditionError>([dz = dz] { (void)*dz; }),
              HasSubstr("it is not connected to the target(s)"));
}

TEST(GradientTape, ReadingAGradientOfAnUnwatchedVariableNamesTheVariableAndWhy) {
  tf::Variable frozen(1.0f, {.name = "frozen", .trainable = false});
  tf::Variable unread(1.0f, {.name = "unread"});
  tf::Variable w(1.0f, {.name = "w"});
  tf::GradientTape tape({.persistent = true});
  const tf::Tensor y = frozen * w;
  const auto g = tape.gradient(y, {frozen, unread});
  const std::string frozen_msg = tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*g[0]; });
  EXPECT_THAT(frozen_msg, HasSubstr("variable 'frozen:0' with shape () and dtype float32"));
  EXPECT_THAT(frozen_msg, HasSubstr("the variable is not trainable"));
  EXPECT_THAT(tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*g[1]; }),
              HasSubstr("the variable was not read while the tape recorded"));

  tf::GradientTape manual({.watch_accessed_variables = false});
  const tf::Tensor y2 = w * w;
  EXPECT_THAT(tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*manual.gradient(y2, w); }),
              HasSubstr("watch_accessed_variables = false"));
}

TEST(GradientTape, ReadingAGradientOfAnIntegerSourceSaysItsDtypeCarriesNone) {
  const tf::Tensor n = tf::constant({1, 2});
  tf::GradientTape tape;
  tape.watch(n);
  const tf::Tensor y = tf::cast(n, tf::DType::Float32) * 2.0f;
  EXPECT_THAT(tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*tape.gradient(y, n); }),
              HasSubstr("with shape (2,) and dtype int32: its dtype cannot carry a gradient"));
}

TEST(GradientTape, EmptyTargetGivesZeroGradientsNotNone) {
  const tf::Tensor x = tf::constant({1.0f, 2.0f, 3.0f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::slice(x * x, {1}, {0});
  const tf::Gradient g = tape.gradient(y, x);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0.f, 0.f, 0.f}));
}

TEST(Gradient, ReadsLikeAnOptionalTensor) {
  const tf::Gradient none = std::nullopt;
  const tf::Gradient some = tf::constant(2.0f);
  EXPECT_TRUE(none == std::nullopt);
  EXPECT_TRUE(some != std::nullopt);
  EXPECT_TRUE(some.has_value());
  EXPECT_FLOAT_EQ(none.value_or(tf::constant(5.0f)).item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(some.value_or(tf::constant(5.0f)).item<float>(), 2.0f);
  EXPECT_EQ(tf::to_string(none), "None");
  EXPECT_EQ(tf::to_string(some), "tf.Tensor(2.0, shape=(), dtype=float32)");
  EXPECT_THAT(tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*none; }),
              HasSubstr("[Gradient] no gradient (std::nullopt)"));
  EXPECT_EQ(some.why_missing(), "");
}

TEST(Gradient, CannotHoldAnUndefinedTensor) {
  EXPECT_THAT(tf::testing::error_of([] { tf::Gradient g{tf::Tensor()}; }),
              HasSubstr("[Gradient] cannot hold an undefined (default-constructed) Tensor"));
}

}  // namespace
