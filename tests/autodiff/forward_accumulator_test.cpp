// ForwardAccumulator: JVPs, nesting with tapes and other accumulators, variables, errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <thread>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

TEST(ForwardAccumulator, JvpOfAnElementwiseChain) {
  tf::Tensor x = tf::constant({0.5, 2.0});
  tf::Tensor v = tf::constant({1.0, -3.0});
  tf::ForwardAccumulator acc;
  acc.watch(x, v);
  tf::Tensor y = tf::sin(x) * x;
  auto jv = acc.jvp(y)->to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    const double xi = x.to_vector<double>()[static_cast<std::size_t>(i)],
                 vi = v.to_vector<double>()[static_cast<std::size_t>(i)];
    EXPECT_NEAR(jv[static_cast<std::size_t>(i)], (std::cos(xi) * xi + std::sin(xi)) * vi, 1e-12);
  }
}

TEST(ForwardAccumulator, UnwatchedTensorsHaveNoTangent) {
  tf::Tensor x = tf::constant(1.0), z = tf::constant(2.0);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::Tensor y = z * z;
  EXPECT_FALSE(acc.jvp(y).has_value());
  EXPECT_EQ(acc.jvp(y, tf::UnconnectedGradients::Zero)->item<double>(), 0.0);
}

TEST(ForwardAccumulator, ReadingAMissingTangentThrowsNamingTheTensorAndWhy) {
  tf::Tensor x = tf::constant(1.0), z = tf::constant({2.0, 3.0});
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  const tf::Gradient t = acc.jvp(z * z);
  try {
    (void)*t;
    FAIL() << "reading a missing tangent must throw";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("shape (2,) and dtype float64"));
    EXPECT_THAT(e.what(), HasSubstr("the ForwardAccumulator has no tangent for it"));
  }
}

TEST(ForwardAccumulator, WatchingTwiceThrowsTensorFlowsMessage) {
  tf::Tensor x = tf::constant(1.0);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  try {
    acc.watch(x, tf::constant(2.0));
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("was specified as a primal multiple times. This may indicate an error. If it was "
                          "intended, please sum the corresponding tangents."));
  }
}

TEST(ForwardAccumulator, TangentMustMatchThePrimal) {
  tf::ForwardAccumulator acc;
  EXPECT_THROW(acc.watch(tf::constant({1.0, 2.0}), tf::constant(1.0)), tf::InvalidArgumentError);
  EXPECT_THROW(acc.watch(tf::constant(1.0), tf::constant(1.0f)), tf::InvalidArgumentError);
}

TEST(ForwardAccumulator, PausedItComputesNoTangentsAndKeepsTheEarlierOnes) {
  tf::Tensor x = tf::constant(3.0);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::Tensor before = x * x;
  acc.set_recording(false);
  tf::Tensor during = x * x;
  EXPECT_DOUBLE_EQ(acc.jvp(before)->item<double>(), 6.0);
  EXPECT_FALSE(acc.jvp(during).has_value());
}

TEST(ForwardAccumulator, ResumedItComputesTangentsAgain) {
  tf::Tensor x = tf::constant(3.0);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  acc.set_recording(false);
  acc.set_recording(true);
  EXPECT_DOUBLE_EQ(acc.jvp(x * x)->item<double>(), 6.0);
}

TEST(ForwardAccumulator, PausingFromAnotherThreadThrows) {
  tf::ForwardAccumulator acc;
  std::thread([&] { EXPECT_THROW(acc.set_recording(false), tf::FailedPreconditionError); }).join();
}

TEST(ForwardAccumulator, VariablesCarryTheirTangentIntoReads) {
  tf::Variable w(3.0);
  tf::ForwardAccumulator acc;
  acc.watch(w, tf::constant(1.0));
  tf::Tensor y = w * w;
  EXPECT_DOUBLE_EQ(acc.jvp(y)->item<double>(), 6.0);
}

TEST(ForwardAccumulator, ForwardOverReverseGivesHessianVectorProducts) {
  // f(x) = sum(x)^2 + sum(sin(x)): H v = 2 * sum(v) - sin(x) * v
  tf::Tensor x = tf::constant({0.2, -0.5, 1.0});
  tf::Tensor v = tf::constant({1.0, 2.0, -1.0});
  tf::ForwardAccumulator acc;
  acc.watch(x, v);
  tf::Tensor g;
  {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor s = tf::reduce_sum(x);
    tf::Tensor f = s * s + tf::reduce_sum(tf::sin(x));
    g = *tape.gradient(f, x);
  }
  auto hv = acc.jvp(g)->to_vector<double>();
  const auto xv = x.to_vector<double>(), vv = v.to_vector<double>();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(hv[i], 2.0 * 2.0 - std::sin(xv[i]) * vv[i], 1e-12);
}

TEST(ForwardAccumulator, ReverseOverForwardThroughAnOuterTape) {
  // d/dx of (d/dx sin(x) * 1) = -sin(x)
  tf::Tensor x = tf::constant(0.7);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor jv;
  {
    tf::ForwardAccumulator acc;
    acc.watch(x, tf::constant(1.0));
    jv = *acc.jvp(tf::sin(x));
  }
  EXPECT_NEAR(jv.item<double>(), std::cos(0.7), 1e-12);
  EXPECT_NEAR(tape.gradient(jv, x)->item<double>(), -std::sin(0.7), 1e-12);
}

TEST(ForwardAccumulator, InnerTapesIgnoreAnOuterAccumulatorsProducts) {
  tf::Tensor x = tf::constant(2.0);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x * x;
  // The tape sees y's computation but not the accumulator's tangent computation.
  EXPECT_DOUBLE_EQ(tape.gradient(y, x)->item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(acc.jvp(y)->item<double>(), 12.0);
}

TEST(ForwardAccumulator, ForwardOverForwardGivesSecondDerivatives) {
  tf::Tensor x = tf::constant(0.3);
  tf::ForwardAccumulator outer;
  outer.watch(x, tf::constant(1.0));
  tf::Tensor first;
  {
    tf::ForwardAccumulator inner;
    inner.watch(x, tf::constant(1.0));
    tf::Tensor y = tf::exp(x) * x;  // y' = e^x (x + 1), y'' = e^x (x + 2)
    first = *inner.jvp(y);
  }
  EXPECT_NEAR(first.item<double>(), std::exp(0.3) * 1.3, 1e-12);
  EXPECT_NEAR(outer.jvp(first)->item<double>(), std::exp(0.3) * 2.3, 1e-12);
}

TEST(ForwardAccumulator, OpWithoutGradientRaisesLookupError) {
  tf::Tensor image = tf::constant({{{0.5f, 0.0f, 0.0f}}});
  tf::ForwardAccumulator acc;
  acc.watch(image, tf::ones_like(image));
  EXPECT_THROW((void)tf::image::adjust_contrast(image, tf::constant(0.1f)), tf::LookupError);
}

// An accumulator belongs to the thread that created it; destroyed on another thread it only
// stops, and its owner's later ops neither read it nor lose their other accumulators (a use after
// free before: the owner's list kept a pointer to the freed state).
namespace {
/// A new accumulator watching `x` with the tangent `v`.
std::unique_ptr<tf::ForwardAccumulator> watching(const tf::Tensor& x, double v) {
  auto acc = std::make_unique<tf::ForwardAccumulator>();
  acc->watch(x, tf::constant(v));
  return acc;
}
}  // namespace

TEST(ForwardAccumulator, DestroyedOnAnotherThreadItStopsAndItsOwnerKeepsWorking) {
  tf::Tensor x = tf::constant(3.0);
  const auto kept = watching(x, 1.0);
  auto moved = watching(x, 2.0);
  std::thread([&] { moved.reset(); }).join();
  tf::Tensor y = x * x;
  EXPECT_DOUBLE_EQ(kept->jvp(y)->item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(watching(x, -1.0)->jvp(x * x)->item<double>(), -6.0);
}

TEST(ForwardAccumulator, WatchFromAnotherThreadThrows) {
  tf::ForwardAccumulator acc;
  std::thread([&] {
    EXPECT_THROW(acc.watch(tf::constant(1.0), tf::constant(1.0)), tf::FailedPreconditionError);
  }).join();
}

// A JVP derived from a gradient runs the gradient function, which may create and destroy
// accumulators while the op's tangents are being computed: the others still get theirs.
TEST(ForwardAccumulator, GradientFunctionsMayCreateAndDestroyAccumulatorsDuringAJvp) {
  tf::Tensor x = tf::constant(3.0);
  const auto first = watching(x, 1.0);
  auto doomed = watching(x, 5.0);
  const auto last = watching(x, 2.0);
  std::vector<std::unique_ptr<tf::ForwardAccumulator>> created;
  tf::Tensor y = tf::custom_gradient({x}, [&](const std::vector<tf::Tensor>& in) {
    return tf::CustomGradientResult{
        {in[0] * 4.0}, [&](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
          doomed.reset();
          for (int i = 0; i < 8; ++i) created.push_back(std::make_unique<tf::ForwardAccumulator>());
          return {dy[0] * 4.0};
        }};
  })[0];
  EXPECT_DOUBLE_EQ(first->jvp(y)->item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(last->jvp(y)->item<double>(), 8.0);
}
