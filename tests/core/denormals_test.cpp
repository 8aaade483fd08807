// tf::set_flush_denormal (denormals.h): ops flush subnormal operands and results to zero, as
// TensorFlow's kernels do, on every thread that computes for them, and leave the program's own
// arithmetic alone.
#include "tapeflow/denormals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "support/denormals.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::testing::KeepSubnormals;

namespace {

constexpr float kSubnormal = std::numeric_limits<float>::denorm_min() * 3;

/// A tensor of n copies of kSubnormal, large enough that tapeflow's pool splits ops on it.
tf::Tensor subnormals(const tf::Shape& shape) {
  return tf::constant(std::vector<float>(static_cast<std::size_t>(shape.num_elements()), kSubnormal), shape);
}

bool all_equal(const tf::Tensor& t, float value) {
  const std::vector<float> v = t.to_vector<float>();
  return std::all_of(v.begin(), v.end(), [&](float x) { return x == value; });
}

/// Runs `check` at one thread and at two, restoring the thread count.
template <class F>
void at_one_and_two_threads(F check) {
  const int before = tf::num_threads();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    tf::set_num_threads(threads);
    check();
  }
  tf::set_num_threads(before);
}

}  // namespace

TEST(FlushDenormal, IsOnByDefaultAsInTensorFlow) {
  EXPECT_TRUE(tf::flush_denormal());
  EXPECT_TRUE(tf::set_flush_denormal(true));  // supported on x86
  // exp(-100) = 3.7e-44 is below float32's smallest normal number (1.2e-38): TensorFlow gives 0.
  EXPECT_EQ(tf::sigmoid(tf::constant(-100.f)).item<float>(), 0.f);
  EXPECT_EQ(tf::exp(tf::constant(-100.f)).item<float>(), 0.f);
  EXPECT_EQ(tf::exp(tf::constant(-720.0)).item<double>(), 0.0);  // float64 too (below 2.2e-308)
}

TEST(FlushDenormal, SubnormalOperandsReadAsZero) {
  const tf::Tensor x = tf::constant(std::numeric_limits<float>::denorm_min());
  EXPECT_EQ((x * tf::constant(1e30f)).item<float>(), 0.f);
  const KeepSubnormals keep;
  EXPECT_FLOAT_EQ((x * tf::constant(1e30f)).item<float>(), std::numeric_limits<float>::denorm_min() * 1e30f);
}

TEST(FlushDenormal, OffGivesIeeeGradualUnderflow) {
  const KeepSubnormals keep;
  EXPECT_FALSE(tf::flush_denormal());
  EXPECT_FLOAT_EQ(tf::sigmoid(tf::constant(-100.f)).item<float>(), 3.7200760e-44f);
  EXPECT_GT(tf::exp(tf::constant(-720.0)).item<double>(), 0.0);
}

TEST(FlushDenormal, LeavesTheProgramsOwnArithmeticAlone) {
  const tf::Tensor y = tf::exp(tf::constant(-100.f));  // ran flushing
  EXPECT_EQ(y.item<float>(), 0.f);
  volatile float smallest_normal = std::numeric_limits<float>::min();
  EXPECT_GT(smallest_normal / 4, 0.f);  // this thread still underflows gradually
}

TEST(FlushDenormal, EveryThreadOfTheOpFlushes) {
  const tf::Tensor x = subnormals(tf::Shape{std::int64_t{1} << 20});  // split across the pool at two threads
  at_one_and_two_threads([&] { EXPECT_TRUE(all_equal(x + x, 0.f)); });
  const KeepSubnormals keep;
  at_one_and_two_threads([&] { EXPECT_TRUE(all_equal(x + x, 2 * kSubnormal)); });
}

TEST(FlushDenormal, TracedFunctionsFlushAsEagerOps) {
  auto twice = tf::function([](const tf::Tensor& x) { return tf::exp(tf::log(x + x)); });
  const tf::Tensor x = subnormals(tf::Shape{std::int64_t{1} << 20});
  EXPECT_TRUE(all_equal(twice(x), 0.f));                                   // traced: the ops ran eagerly
  at_one_and_two_threads([&] { EXPECT_TRUE(all_equal(twice(x), 0.f)); });  // the fused graph
}

TEST(FlushDenormal, ConvolutionsFlushOnEveryOpenMpThread) {
  // A 1x1 convolution with the identity filter copies its input exactly, subnormals included,
  // unless they are flushed; oneDNN splits the batch across its OpenMP threads.
  const tf::Tensor x = subnormals(tf::Shape{64, 8, 8, 16});
  const tf::Tensor identity = tf::reshape(tf::eye(16), {1, 1, 16, 16});
  at_one_and_two_threads([&] { EXPECT_TRUE(all_equal(tf::nn::conv2d(x, identity), 0.f)); });
  const KeepSubnormals keep;
  at_one_and_two_threads([&] { EXPECT_TRUE(all_equal(tf::nn::conv2d(x, identity), kSubnormal)); });
}
