// Graph rewrites of the fast graph that must not change a bit (src/graph/optimize.h).

#include "graph/optimize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "function/concrete.h"
#include "function/function_state.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// y = sum(max_pool(relu(x)) * w) and its gradient with respect to x, as a training step has them.
std::pair<tf::Tensor, tf::Tensor> relu_pool_gradient(const tf::Tensor& x, const tf::Tensor& w,
                                                     std::vector<std::int64_t> ksize,
                                                     std::vector<std::int64_t> strides,
                                                     const std::string& padding) {
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(tf::nn::max_pool2d(tf::nn::relu(x), ksize, strides, padding) * w);
  return {y, *tape.gradient(y, x)};
}

using tf::testing::bitwise_equal;

TEST(ReluGradientBeforeMaxPoolGradient, TheTracedGradientIsEagersBitForBit) {
  struct Case {
    std::vector<std::int64_t> ksize, strides;
    std::string padding;
  };
  // Disjoint windows, overlapping ones (a position routed from several windows) and padding.
  for (const Case& c :
       {Case{{2, 2}, {2, 2}, "VALID"}, Case{{3, 3}, {1, 1}, "SAME"}, Case{{3, 3}, {2, 2}, "SAME"}}) {
    tf::Tensor x = tf::random::normal({2, 6, 6, 3}, 0, 1, tf::float32, 7);
    // Ties (zeros, -0 and equal maxima), a NaN and an infinity among negatives and positives.
    std::vector<float> v = x.to_vector<float>();
    v[0] = v[1] = v[3] = 0.0f;
    v[4] = -0.0f;
    v[10] = v[13] = 1.5f;
    v[20] = std::numeric_limits<float>::quiet_NaN();
    v[40] = std::numeric_limits<float>::infinity();
    x = tf::constant(v, x.shape());
    const tf::Tensor w = tf::random::normal(tf::nn::max_pool2d(x, c.ksize, c.strides, c.padding).shape(), 0,
                                            1, tf::float32, 8);
    auto traced = tf::function(
        [&](const tf::Tensor& xs) { return relu_pool_gradient(xs, w, c.ksize, c.strides, c.padding); });
    traced(x);                       // the trace: eager's ops
    const auto [y, dx] = traced(x);  // the fast graph, rewritten
    const auto [y_want, dx_want] = relu_pool_gradient(x, w, c.ksize, c.strides, c.padding);
    EXPECT_TRUE(bitwise_equal(y, y_want)) << c.padding;
    EXPECT_TRUE(bitwise_equal(dx, dx_want)) << c.padding;
    // The mask now runs before the pooling gradient, on the pooled shape.
    const std::string text = traced.graph_text();
    EXPECT_LT(text.find("ReluGrad"), text.find("MaxPoolGrad")) << text;
  }
}

TEST(ReluGradientBeforeMaxPoolGradient, ALoneMaxPoolGradientIsLeftAlone) {
  // No MaxPool of the same value in the graph (only its gradient): nothing to take the mask from.
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& dy) {
    return tf::raw_ops::relu_grad(tf::raw_ops::max_pool_grad(x, dy, {2, 2}, {2, 2}, "VALID"), x);
  });
  const tf::Tensor x = tf::random::normal({1, 4, 4, 2}, 0, 1, tf::float32, 3);
  const tf::Tensor dy = tf::ones({1, 2, 2, 2});
  f(x, dy);
  const tf::Tensor got = f(x, dy);
  const tf::Tensor want =
      tf::raw_ops::relu_grad(tf::raw_ops::max_pool_grad(x, dy, {2, 2}, {2, 2}, "VALID"), x);
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  const std::string text = f.graph_text();
  EXPECT_GT(text.find("ReluGrad"), text.find("MaxPoolGrad")) << text;
}

}  // namespace

namespace {

std::size_t stop_gradients(const tf::graph::Graph& g) {
  return static_cast<std::size_t>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const tf::graph::Node& n) {
    return n.kind == tf::graph::NodeKind::kOp && n.op->name() == "StopGradient";
  }));
}

// The tracer adds a StopGradient after each op a body runs inside its own NoRecordingScope (an
// optimizer's update): the unfused graph keeps them for its observers, the fast graph runs without.
TEST(DropStopGradients, AnAdamStepRunsWithoutTheTracesStopGradientNodesBitForBit) {
  struct Model {
    tf::Variable w{tf::random::normal({4, 3}, 0, 1, tf::float32, 1), {.name = "w"}};
    tf::Variable b{tf::zeros({3}), {.name = "b"}};
    tf::optimizers::Adam adam{0.01};
    tf::Tensor step(const tf::Tensor& x) {
      tf::GradientTape tape;
      const tf::Tensor loss = tf::reduce_sum(tf::square(tf::matmul(x, w.read_value()) + b.read_value()));
      adam.minimize(loss, {w, b}, tape);
      return loss;
    }
  };
  Model traced, eager;
  auto f = tf::function([&](const tf::Tensor& x) { return traced.step(x); }, {.name = "step"});
  for (int i = 0; i < 3; ++i) {
    const tf::Tensor x = tf::random::normal({5, 4}, 0, 1, tf::float32, static_cast<std::uint64_t>(10 + i));
    EXPECT_TRUE(bitwise_equal(f(x), eager.step(x))) << i;
  }
  EXPECT_TRUE(bitwise_equal(traced.w.value(), eager.w.value()));
  EXPECT_TRUE(bitwise_equal(traced.b.value(), eager.b.value()));
  const auto& cache = f.core()->state()->cache;
  ASSERT_EQ(cache.size(), 1u);
  const tf::graph::ConcreteFunction& cf = *cache.begin()->second;
  EXPECT_GE(stop_gradients(cf.unfused_graph()), 10u);
  EXPECT_EQ(stop_gradients(cf.graph()), 0u) << cf.graph().to_string();
  EXPECT_LT(cf.graph().nodes.size() + 10, cf.unfused_graph().nodes.size());
}

// A chain of them (a value stopped twice), one that is a result, and one whose input is an argument.
TEST(DropStopGradients, EachUseReadsTheFirstInputOfAChain) {
  auto f = tf::function([](const tf::Tensor& x) {
    tf::Tensor y;
    {
      const tf::NoRecordingScope off;
      y = tf::stop_gradient(tf::exp(x));
    }
    return std::make_pair(y * x, y);
  });
  const tf::Tensor x = tf::constant(std::vector<float>{0.5f, -1.f, 2.f});
  const auto [traced_a, traced_b] = f(x);
  const auto [a, b] = f(x);  // the fast graph
  EXPECT_TRUE(bitwise_equal(a, traced_a));
  EXPECT_TRUE(bitwise_equal(b, traced_b));
  EXPECT_TRUE(bitwise_equal(b, tf::exp(x)));
  const tf::graph::ConcreteFunction& cf = *f.core()->state()->cache.begin()->second;
  EXPECT_EQ(stop_gradients(cf.unfused_graph()), 3u);  // after Exp, the op and after it
  EXPECT_EQ(stop_gradients(cf.graph()), 0u) << cf.graph().to_string();
}

}  // namespace
