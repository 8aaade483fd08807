// NoRecordingScope (no_recording.h): every tape of the thread that exists when the scope begins
// records nothing while it lives; tapes created inside record; scopes end in any order.
#include "tapeflow/no_recording.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

TEST(NoRecordingScope, OpsInsideAreRecordedByNoTapeOfTheThread) {
  tf::Variable x(3.0f);
  tf::GradientTape first;
  tf::GradientTape second;
  tf::Tensor y;
  {
    const tf::NoRecordingScope off;
    y = x * x;
  }
  EXPECT_EQ(first.num_recorded_ops(), 0u);
  EXPECT_FALSE(first.gradient(y, x).has_value());
  EXPECT_FALSE(second.gradient(y, x).has_value());
}

TEST(NoRecordingScope, TapesRecordAgainWhenItEnds) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  { const tf::NoRecordingScope off; }
  tf::Tensor y = x * x;
  EXPECT_FLOAT_EQ(tape.gradient(y, x)->item<float>(), 6.0f);
}

TEST(NoRecordingScope, ATapeCreatedInsideRecordsDuringAndAfterIt) {
  tf::Variable x(3.0f);
  std::optional<tf::GradientTape> inner;
  tf::Tensor during;
  {
    const tf::NoRecordingScope off;
    inner.emplace(tf::TapeOptions{.persistent = true});
    during = x * x;
  }
  tf::Tensor after = x * x * x;
  EXPECT_FLOAT_EQ(inner->gradient(during, x)->item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(inner->gradient(after, x)->item<float>(), 27.0f);
}

TEST(NoRecordingScope, ScopesEndingOutOfOrderKeepTheTapesSilentUntilTheLastEnds) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  auto outer = std::make_unique<tf::NoRecordingScope>();
  auto inner = std::make_unique<tf::NoRecordingScope>();
  outer.reset();  // the outer scope ends first
  tf::Tensor silent = x * x;
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
  inner.reset();
  tf::Tensor recorded = x * x * x;
  EXPECT_FLOAT_EQ(tape.gradient({silent, recorded}, x)->item<float>(), 12.0f);  // 3x^2 only
}

TEST(NoRecordingScope, APauseEndingInsideDoesNotTurnRecordingBackOn) {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y;
  {
    const tf::NoRecordingScope off;
    { auto pause = tape.stop_recording(); }
    y = x * x;
  }
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
}

// TensorFlow's ForwardpropTest.testShouldRecordAndStopRecord: inside the block neither the tape
// nor the accumulator records; both do again after it.
TEST(NoRecordingScope, PausesForwardAccumulatorsAsWellAsTapes) {
  const tf::Tensor c = tf::constant(1.0f);
  tf::ForwardAccumulator acc;
  acc.watch(c, tf::constant(2.0f));
  tf::GradientTape tape;
  tape.watch(c);
  tf::Tensor d;
  {
    const tf::NoRecordingScope off;
    d = c * 2.0f;
  }
  const tf::Tensor e = c * 3.0f;
  EXPECT_FALSE(acc.jvp(d).has_value());
  EXPECT_FALSE(tape.gradient(d, c).has_value());
  EXPECT_FLOAT_EQ(acc.jvp(e)->item<float>(), 6.0f);
}

TEST(NoRecordingScope, AccumulatorsCreatedInsideComputeTangents) {
  const tf::Tensor x = tf::constant(3.0);
  const tf::NoRecordingScope off;
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  const tf::Tensor y = x * x;
  EXPECT_DOUBLE_EQ(acc.jvp(y)->item<double>(), 6.0);
}

}  // namespace
