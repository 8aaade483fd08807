// tf::debug::explain: one test per cause of a missing or zero gradient, each building that
// situation and checking the diagnosis names the cause and the op; connected sources through many
// op families, where explain must report the path and no false cause.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "autodiff/recording_listener.h"
#include "support/forbidden_gradient.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Cause = tf::GradientCause;

namespace tapeflow {
// Test failures print the cause's name.
void PrintTo(GradientCause cause, std::ostream* os) { *os << to_string(cause); }
}  // namespace tapeflow

namespace {

// ---- Sources the tape never watched --------------------------------------------------------

// The trace explain reads is kept by a recording listener that linking the diagnostics installs
// before main (tests/debug/standalone/without_diagnostics.cpp checks the converse).
TEST(Explain, LinkingTheDiagnosticsInstallsTheRecordingListener) {
  EXPECT_NE(tf::autodiff::recording_listener(), nullptr);
}

TEST(Explain, PlainTensorNotWatched) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * x;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::TensorNotWatched);
  EXPECT_FALSE(d.has_gradient());
  EXPECT_THAT(d.to_string(), HasSubstr("tape.watch()"));
  EXPECT_FALSE(tape.gradient(y, x).has_value());
}

TEST(Explain, VariableNotTrainable) {
  tf::Variable w(3.0f, {.name = "w", .trainable = false});
  tf::GradientTape tape;
  tf::Tensor y = w * w;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, w);
  EXPECT_EQ(d.cause, Cause::VariableNotTrainable);
  EXPECT_EQ(d.source, "w:0");
  EXPECT_THAT(d.to_string(), HasSubstr("variable w:0 is not trainable"));
}

TEST(Explain, WatchAccessedVariablesFalse) {
  tf::Variable w(3.0f, {.name = "w"});
  tf::GradientTape tape({.watch_accessed_variables = false});
  tf::Tensor y = w * w;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, w);
  EXPECT_EQ(d.cause, Cause::AccessedVariablesNotWatched);
  EXPECT_THAT(d.to_string(), HasSubstr("watch_accessed_variables = false"));
}

TEST(Explain, WatchedSourceNotUsedByTheTarget) {
  tf::Variable x(2.0f, {.name = "x"});
  tf::Variable y(3.0f, {.name = "y"});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor z = y * y;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, z, x);
  EXPECT_EQ(d.cause, Cause::SourceNotUsed);
  EXPECT_TRUE(d.target_recorded);
}

TEST(Explain, TargetMadeFromHostValuesIsNotOnTheTape) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor x2 = x * x;
  tf::Tensor y = tf::constant(x2.item<float>()) * 2.0f;  // a round trip through a C++ float
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::SourceNotUsed);
  EXPECT_FALSE(d.target_recorded);
  EXPECT_THAT(d.to_string(), HasSubstr("values the tape does not track"));
}

// ---- Paths cut by an op -----------------------------------------------------------------------

TEST(Explain, StopGradientCutsThePath) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::square(tf::stop_gradient(x * 3.0f));
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::StopGradient);
  EXPECT_EQ(d.op, "StopGradient");
  EXPECT_FALSE(tape.gradient(y, x).has_value());
}

TEST(Explain, NonDifferentiableOpCutsThePath) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::raw_ops::no_gradient(x) * 2.0f;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::NonDifferentiableOp);
  EXPECT_EQ(d.op, "NoGradient");
  EXPECT_THAT(d.to_string(), HasSubstr("no_gradient"));
}

TEST(Explain, ComparisonOutputIsABoolPath) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = x > 0.0f;  // comparisons are declared non-differentiable and give bool
  tf::Tensor z = tf::cast(y, tf::float32) * x;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, z, x);
  EXPECT_EQ(d.cause, Cause::Connected) << d.to_string();  // through the Mul's other input
  const tf::GradientDiagnosis through_mask = tf::debug::explain(tape, tf::cast(y, tf::float32), x);
  EXPECT_EQ(through_mask.cause, Cause::IntegerDtype);
  EXPECT_EQ(through_mask.producer, "Greater");
  EXPECT_EQ(through_mask.dtype, tf::bool_);
  EXPECT_EQ(through_mask.op, "Cast");
}

TEST(Explain, CastToIntegerCutsThePathAndNamesTheCast) {
  tf::Variable x(2.5f);
  tf::GradientTape tape;
  tf::Tensor i = tf::cast(x, tf::int32);
  tf::Tensor y = tf::cast(i * 2, tf::float32) + 1.0f;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::IntegerDtype);
  EXPECT_EQ(d.producer, "Cast");
  EXPECT_EQ(d.op, "Mul");
  EXPECT_EQ(d.dtype, tf::int32);
  EXPECT_THAT(d.to_string(), HasSubstr("tensor of dtype int32 made by Cast and used by Mul"));
}

TEST(Explain, ArgMaxOutputIsAnIntegerPath) {
  tf::Variable x({1.0f, 3.0f, 2.0f});
  tf::GradientTape tape;
  tf::Tensor y = tf::cast(tf::argmax(x), tf::float32);
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::IntegerDtype);
  EXPECT_EQ(d.producer, "ArgMax");
  EXPECT_EQ(d.dtype, tf::int64);
}

TEST(Explain, IntegerSource) {
  tf::Tensor x = tf::constant(10);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::IntegerDtype);
  EXPECT_EQ(d.dtype, tf::int32);
  EXPECT_THAT(d.to_string(), HasSubstr("source tensor has dtype int32"));
}

TEST(Explain, StatefulAssignAddCutsThePath) {
  tf::Variable x0(3.0f, {.name = "x0"});
  tf::Variable x1(0.0f, {.name = "x1"});
  tf::GradientTape tape;
  x1.assign_add(x0);
  tf::Tensor y = tf::pow(x1, 2);
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x0);
  EXPECT_EQ(d.cause, Cause::StatefulUpdate);
  EXPECT_EQ(d.op, "AssignAddVariableOp");
  EXPECT_EQ(d.variable, "x1:0");
  EXPECT_FALSE(tape.gradient(y, x0).has_value());
}

TEST(Explain, StatefulAssignOfAComputedValueCutsThePath) {
  tf::Variable x0(3.0f, {.name = "x0"});
  tf::Variable x1(0.0f, {.name = "x1"});
  tf::GradientTape tape;
  x1.assign(x0 * 2.0f);
  tf::Tensor y = x1 * 1.0f;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x0);
  EXPECT_EQ(d.cause, Cause::StatefulUpdate);
  EXPECT_EQ(d.op, "AssignVariableOp");
}

// ---- Targets the tape did not record ----------------------------------------------------------

TEST(Explain, TargetComputedBeforeTheTape) {
  tf::Variable x(2.0f);
  tf::Tensor y = x * x;
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_EQ(tf::debug::explain(tape, y, x).cause, Cause::TargetBeforeTape);
}

TEST(Explain, TargetComputedWhileRecordingWasPaused) {
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y;
  {
    auto pause = tape.stop_recording();
    y = x * x;
  }
  tf::Tensor after = x * x;  // recording again: not a paused tensor
  EXPECT_EQ(tf::debug::explain(tape, y, x).cause, Cause::RecordingPaused);
  EXPECT_EQ(tf::debug::explain(tape, after, x).cause, Cause::Connected);
}

TEST(Explain, TargetComputedOnAnotherThread) {
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y;
  std::thread worker([&] { y = x * x; });
  worker.join();
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::TargetOnAnotherThread);
  EXPECT_THAT(d.to_string(), HasSubstr("another thread"));
}

TEST(Explain, TargetRecordedOnAnotherTape) {
  tf::Tensor x = tf::constant(2.0f);
  tf::Tensor z = tf::constant(5.0f);
  tf::GradientTape mine;
  tf::GradientTape other;
  other.watch(x);
  mine.watch(z);
  tf::Tensor y = x * x;  // recorded by `other` only
  const tf::GradientDiagnosis d = tf::debug::explain(mine, y, x);
  EXPECT_EQ(d.cause, Cause::TensorNotWatched);  // the root cause comes first
  EXPECT_EQ(tf::debug::explain(mine, y, z).cause, Cause::TargetOnAnotherTape);
  EXPECT_THAT(tf::debug::explain(mine, y, z).to_string(), HasSubstr("recorded by another tape"));
}

TEST(Explain, VariableReplacedByATensorCreatedAfterTheTarget) {
  tf::Variable v(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = v + 1.0f;
  tf::Tensor x = v + 1.0f;  // `x = x + 1`: the name now means a new tensor
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);
  EXPECT_EQ(d.cause, Cause::SourceCreatedAfterTarget);
  EXPECT_THAT(d.to_string(), HasSubstr("assign_add"));
}

// ---- Gradients that exist but are zero, and the LookupError case ------------------------------

TEST(Explain, DeadReluGivesAZeroGradientAndNamesRelu) {
  tf::Variable w(tf::constant({{1.0f, -2.0f}, {-3.0f, 1.0f}}), {.name = "w"});
  const tf::Tensor x = tf::constant({{-1.0f, -1.0f}});
  tf::GradientTape tape;
  tf::Tensor h = tf::nn::relu(tf::matmul(x, w) - 10.0f);  // every unit negative: dead
  tf::Tensor loss = tf::reduce_sum(h * 3.0f);
  const tf::GradientDiagnosis d = tf::debug::explain(tape, loss, w);
  EXPECT_EQ(d.cause, Cause::ZeroGradient);
  EXPECT_TRUE(d.has_gradient());
  EXPECT_EQ(d.op, "Relu");
  EXPECT_THAT(d.path, ElementsAre("Sum", "Mul", "Relu", "Sub", "MatMul", "ReadVariableOp"));
  EXPECT_THAT(d.to_string(), HasSubstr("became zero at Relu"));
}

// bfloat16 cotangents are read as numbers too (they were taken for non-zero, so a dead bfloat16
// path was reported as connected).
TEST(Explain, ABFloat16ZeroGradientIsZero) {
  tf::Variable w(tf::cast(tf::constant({1.0f, 2.0f}), tf::bfloat16), {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(tf::nn::relu(w - tf::cast(tf::constant(10.0f), tf::bfloat16)));
  const tf::GradientDiagnosis d = tf::debug::explain(tape, loss, w);
  EXPECT_EQ(d.cause, Cause::ZeroGradient);
  EXPECT_EQ(d.op, "Relu");
}

TEST(Explain, MissingGradientIsTheLookupErrorCase) {
  tf::Variable image(tf::constant({{{0.5f, 0.0f, 0.0f}}}));
  tf::Variable delta(0.1f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor out = tf::image::adjust_contrast(image, delta);
  const tf::GradientDiagnosis d = tf::debug::explain(tape, out, image);
  EXPECT_EQ(d.cause, Cause::NoGradientRegistered);
  EXPECT_EQ(d.op, "AdjustContrastv2");
  EXPECT_THAT(d.to_string(), HasSubstr("LookupError"));
  EXPECT_THROW((void)tape.gradient(out, image), tf::LookupError);
}

// ---- Connected sources: the path, and no false diagnosis ---------------------------------------

TEST(Explain, ConnectedSourceShowsThePath) {
  tf::Variable x0(3.0f, {.name = "x0"});
  tf::GradientTape tape;
  tf::Tensor y = tf::pow(x0, 2) + 1.0f;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x0);
  EXPECT_EQ(d.cause, Cause::Connected);
  EXPECT_THAT(d.path, ElementsAre("AddV2", "Pow", "ReadVariableOp"));
  EXPECT_EQ(d.to_string(), "connected: target <- AddV2 <- Pow <- ReadVariableOp <- x0:0");
}

TEST(Explain, RunsNoGradientFunctionBehindStopGradientAsGradientRunsNone) {
  tf::Variable x(3.0f, {.name = "x"});
  int calls = 0;
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = tf::testing::identity_with_forbidden_gradient(tf::stop_gradient(x), calls) + x;
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, x);  // runs the numeric backward pass
  EXPECT_EQ(d.cause, Cause::Connected) << d.to_string();
  EXPECT_THAT(d.path, ElementsAre("AddV2", "ReadVariableOp"));
  EXPECT_FLOAT_EQ(tape.gradient(y, x)->item<float>(), 1.0f);
  EXPECT_THAT(tf::debug::to_dot(tape, y, x),
              HasSubstr("cut: StopGradient is not differentiable"));  // with gradient norms
  EXPECT_EQ(calls, 0);
}

TEST(Explain, TargetIsTheSource) {
  tf::Tensor x = tf::constant(1.0f);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::GradientDiagnosis d = tf::debug::explain(tape, x, x);
  EXPECT_EQ(d.cause, Cause::Connected);
  EXPECT_TRUE(d.path.empty());
}

TEST(Explain, ConnectedThroughMatmulReduceAndReshape) {
  tf::Variable w(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}}), {.name = "w"});
  tf::Variable b({0.5f, -0.5f}, {.name = "b"});
  const tf::Tensor x = tf::constant({{1.0f, 1.0f}});
  tf::GradientTape tape;
  tf::Tensor y = tf::reduce_mean(tf::reshape(tf::matmul(x, w) + b, {2}));
  EXPECT_EQ(tf::debug::explain(tape, y, w).cause, Cause::Connected);
  EXPECT_EQ(tf::debug::explain(tape, y, b).cause, Cause::Connected);
  EXPECT_THAT(tf::debug::explain(tape, y, w).path,
              ElementsAre("Mean", "Reshape", "AddV2", "MatMul", "ReadVariableOp"));
}

TEST(Explain, ConnectedThroughConv2D) {
  tf::Variable filters(tf::ones({2, 2, 1, 1}), {.name = "filters"});
  const tf::Tensor images = tf::ones({1, 3, 3, 1});
  tf::GradientTape tape;
  tf::Tensor y = tf::reduce_sum(tf::nn::conv2d(images, filters));
  const tf::GradientDiagnosis d = tf::debug::explain(tape, y, filters);
  EXPECT_EQ(d.cause, Cause::Connected) << d.to_string();
  EXPECT_THAT(d.path, ElementsAre("Sum", "Conv2D", "ReadVariableOp"));
}

TEST(Explain, ConnectedThroughNestedTapes) {
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape outer({.persistent = true});
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    tf::Tensor y = x * x * x;
    EXPECT_EQ(tf::debug::explain(inner, y, x).cause, Cause::Connected);
    g = *inner.gradient(y, x);  // 3x^2, recorded on the outer tape
  }
  const tf::GradientDiagnosis d = tf::debug::explain(outer, g, x);
  EXPECT_EQ(d.cause, Cause::Connected) << d.to_string();
  EXPECT_FLOAT_EQ(outer.gradient(g, x)->item<float>(), 12.0f);
}

TEST(Explain, EveryConnectedSourceOfAGradientCallIsConnected) {
  // explain agrees with gradient() on every source of a small model.
  tf::Variable w1(tf::constant({{0.5f, -0.2f}, {0.1f, 0.3f}}), {.name = "w1"});
  tf::Variable w2(tf::constant({{1.0f}, {-1.0f}}), {.name = "w2"});
  tf::Variable unused(1.0f, {.name = "unused"});
  const tf::Tensor x = tf::constant({{1.0f, 2.0f}});
  tf::GradientTape tape({.persistent = true});
  tf::Tensor loss = tf::reduce_sum(tf::square(tf::matmul(tf::tanh(tf::matmul(x, w1)), w2)));
  for (const tf::Variable& v : {w1, w2, unused}) {
    const tf::GradientDiagnosis d = tf::debug::explain(tape, loss, v);
    EXPECT_EQ(d.has_gradient(), tape.gradient(loss, v).has_value()) << v.name() << ": " << d.to_string();
  }
}

// ---- explain leaves the tape as it was ---------------------------------------------------------

TEST(Explain, DoesNotChangeTheTapeAndRecordsNothing) {
  tf::Variable x(2.0f);
  tf::GradientTape outer;
  tf::GradientTape tape;
  tf::Tensor y = tf::nn::relu(x * x);
  const std::size_t ops = tape.num_recorded_ops(), outer_ops = outer.num_recorded_ops();
  const std::int64_t bytes = tape.saved_bytes();
  (void)tf::debug::explain(tape, y, x);
  EXPECT_EQ(tape.num_recorded_ops(), ops);
  EXPECT_EQ(outer.num_recorded_ops(), outer_ops);
  EXPECT_EQ(tape.saved_bytes(), bytes);
  EXPECT_FLOAT_EQ(tape.gradient(y, x)->item<float>(), 4.0f);  // a non-persistent tape still works
}

TEST(Explain, ConsumedNonPersistentTapeThrows) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * x;
  (void)tape.gradient(y, x);
  try {
    (void)tf::debug::explain(tape, y, x);
    FAIL() << "expected FailedPreconditionError";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("call explain() before gradient()"));
  }
}

TEST(Explain, WorksAfterGradientOnAPersistentTape) {
  tf::Variable x(2.0f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = x * x;
  (void)tape.gradient(y, x);
  EXPECT_EQ(tf::debug::explain(tape, y, x).cause, Cause::Connected);
}

TEST(Explain, UndefinedTargetThrows) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  EXPECT_THROW((void)tf::debug::explain(tape, tf::Tensor(), x), tf::InvalidArgumentError);
}

TEST(Explain, CauseNames) {
  EXPECT_EQ(tf::to_string(Cause::StatefulUpdate), "StatefulUpdate");
  EXPECT_EQ(tf::to_string(Cause::TargetOnAnotherThread), "TargetOnAnotherThread");
}

}  // namespace
