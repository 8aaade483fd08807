// One graph for every size of an unknown dimension (FunctionOptions::input_signature with -1):
// two traces at different sizes must agree, then new sizes run that graph without the body.

#include "function/shared_sizes.h"

#include <gtest/gtest.h>

#include "support/close.h"
#include "support/log_capture.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// A signature of one float32 tensor with the given dims (-1 unknown).
tf::FunctionOptions any_rows(std::vector<std::int64_t> dims, bool share = true) {
  return {.name = "f",
          .input_signature = std::vector<tf::TensorSpec>{{std::move(dims), tf::DType::Float32, "x"}},
          .share_graph_across_sizes = share};
}

tf::Tensor rows(std::int64_t n, std::int64_t cols = 3) {
  return tf::reshape(tf::range(0.0, static_cast<double>(n * cols), 1.0, tf::DType::Float32), {n, cols});
}

using tf::testing::LogCapture;

TEST(SharedSizes, TwoAgreeingTracesServeEveryLaterSizeWithoutTheBody) {
  tf::Variable w(tf::constant({{1.0f, 0.0f}, {0.5f, -1.0f}, {2.0f, 1.0f}}), {.name = "w"});
  int body_runs = 0;
  auto body = [&](const tf::Tensor& x) {
    ++body_runs;  // C++ runs when the body traces, never when the shared graph serves a size
    return tf::reduce_mean(tf::nn::relu(tf::matmul(x, w.read_value())), {1});
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {4, 7, 2, 9, 16, 5}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 1e-6);
  EXPECT_EQ(body_runs, 2 + 6);  // the traces at 4 and 7, and the eager calls of the comparison
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().shared_graph_sizes, 4);
  // Each size keeps its own fused and planned graph: a size seen before runs it.
  f(rows(9));
  EXPECT_EQ(f.stats().shared_graph_sizes, 4);
}

TEST(SharedSizes, SliceToTheEndPadAndTileServeEverySize) {
  // Their attributes hold what was asked (a -1 size, paddings, multiples), not the sizes they
  // make of it: the output shapes are derived when the ops run.
  auto body = [](const tf::Tensor& x) {
    return tf::tile(tf::pad(tf::slice(x, {1, 0}, {-1, 2}), {{0, 1}, {2, 0}}, -1.0), {1, 2});
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {3, 4, 6, 9}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().shared_graph_sizes, 2);
}

TEST(SharedSizes, SizesZeroAndOneAlwaysTrace) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::reduce_sum(x * x, {0}); }, any_rows({-1, 3}));
  f(rows(4));
  f(rows(6));  // shared from here on
  tf::testing::expect_close(f(rows(1)), tf::reduce_sum(rows(1) * rows(1), {0}), 0);
  tf::testing::expect_close(f(rows(0)), tf::zeros({3}), 0);
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
}

TEST(SharedSizes, AGraphThatDependsOnTheSizeTracesEachSizeAndSaysWhy) {
  LogCapture log(tf::LogLevel::Info);
  // A constant as long as the batch: the graphs at 2 and 3 rows differ in it.
  auto body = [](const tf::Tensor& x) { return x + tf::ones({x.shape()[0], 3}); };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 3, 4, 5}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(log.messages[0].find("traces each size of its unknown dimensions"), std::string::npos)
      << log.messages[0];
  EXPECT_NE(log.messages[0].find("the constant"), std::string::npos) << log.messages[0];
}

TEST(SharedSizes, AGraphThatAssignsAVariableIsNeverShared) {
  LogCapture log(tf::LogLevel::Info);
  tf::Variable total(tf::constant(0.0f), {.name = "total"});
  auto f = tf::function(
      [&](const tf::Tensor& x) {
        total.assign_add(tf::reduce_sum(x));
        return total.read_value();
      },
      any_rows({-1, 3}));
  float expected = 0;
  for (std::int64_t n : {2, 3, 4}) {
    f(rows(n));
    expected += static_cast<float>(n * 3 * (n * 3 - 1) / 2);
  }
  EXPECT_EQ(total.value().item<float>(), expected);
  EXPECT_EQ(f.stats().traces, 3);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(log.messages[0].find("assigns the variable 'total:0'"), std::string::npos) << log.messages[0];
}

TEST(SharedSizes, ASizeTheSharedGraphCannotRunIsTracedSoTheBodyDecides) {
  // The body branches on the size in C++ (which a body with an unknown dimension should not do):
  // even sizes pair up the rows, odd sizes pass them through. The traces at 2 and 4 agree; at 3
  // the shared graph's reshape fails, so 3 traces and the body's own branch gives the result.
  auto body = [](const tf::Tensor& x) {
    return x.shape()[0] % 2 == 0 ? tf::reshape(x, {-1, 6}) : tf::identity(x);
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  f(rows(2));
  f(rows(4));
  tf::testing::expect_close(f(rows(6)), tf::reshape(rows(6), {3, 6}), 0);
  tf::testing::expect_close(f(rows(3)), rows(3), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
  EXPECT_EQ(f.stats().traces, 3);
}

TEST(SharedSizes, TheOptionOffTracesEverySize) {
  int body_runs = 0;
  auto f = tf::function(
      [&](const tf::Tensor& x) {
        ++body_runs;
        return x * 2.0;
      },
      any_rows({-1, 3}, /*share=*/false));
  for (std::int64_t n : {2, 3, 4, 5}) f(rows(n));
  EXPECT_EQ(body_runs, 4);
  EXPECT_EQ(f.stats().specializations, 3);
}

TEST(SharedSizes, EveryUnknownDimensionMustChangeBetweenTheTwoTraces) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::reduce_max(x, {1}); }, any_rows({-1, -1}));
  f(rows(2, 3));
  f(rows(4, 3));  // the columns did not change: no evidence about them yet
  f(rows(5, 3));
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  f(rows(6, 4));  // both differ from the first trace's (2, 3): shared
  tf::testing::expect_close(f(rows(7, 5)), tf::reduce_max(rows(7, 5), {1}), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
}

TEST(SharedSizes, GradientsAtANewSizeTraceTheirGraphs) {
  tf::Variable w(tf::constant({1.0f, -2.0f, 0.5f}), {.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x) { return tf::reduce_sum(tf::tanh(x * w.read_value())); },
                        any_rows({-1, 3}));
  f(rows(2));
  f(rows(3));
  for (std::int64_t n : {5, 8}) {
    tf::GradientTape traced, eager;
    const tf::Tensor a = f(rows(n) * 0.1);
    const tf::Tensor g = *traced.gradient(a, w);
    const tf::Tensor b = tf::reduce_sum(tf::tanh(rows(n) * 0.1 * w.read_value()));
    tf::testing::expect_close(g, *eager.gradient(b, w), 1e-5);
  }
}

TEST(SharedSizes, ForwardModeAtANewSizeSeesTheOps) {
  auto f =
      tf::function([](const tf::Tensor& x) { return tf::reduce_sum(tf::sin(x), {1}); }, any_rows({-1, 3}));
  f(rows(2));
  f(rows(3));  // shared from here on
  const tf::Tensor x = rows(4) * 0.1, v = tf::ones({4, 3});
  tf::ForwardAccumulator acc;
  acc.watch(x, v);
  const tf::Tensor y = f(x);
  // d/dt sum(sin(x + t v), 1) = sum(cos(x) v, 1)
  tf::testing::expect_close(*acc.jvp(y), tf::reduce_sum(tf::cos(x), {1}), 1e-6);
}

TEST(SharedSizes, ADestroyedVariableIsATypedErrorAtANewSize) {
  auto w = std::make_unique<tf::Variable>(tf::constant({1.0f, 2.0f, 3.0f}), tf::VariableOptions{.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x) { return x * w->read_value(); }, any_rows({-1, 3}));
  f(rows(2));
  f(rows(3));
  w.reset();  // the body would now read a destroyed C++ object: it must not run
  EXPECT_THROW(f(rows(4)), tf::FailedPreconditionError);
}

TEST(SharedSizes, TheReasonNamesTheNodeWhoseAttributesChangeWithTheSize) {
  LogCapture log(tf::LogLevel::Info);
  // All rows but the last: the slice's size is the batch's, fixed in its attributes.
  auto f = tf::function(
      [](const tf::Tensor& x) {
        return tf::slice(x, {0, 0}, {x.shape()[0] - 1, 3});
      },
      any_rows({-1, 3}));
  f(rows(3));
  tf::testing::expect_close(f(rows(5)), tf::slice(rows(5), {0, 0}, {4, 3}), 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(
      log.messages[0].find("(float32[3, 3]) and (float32[5, 3]) differ: node 0 (Slice) has the attributes"),
      std::string::npos)
      << log.messages[0];
}

}  // namespace
