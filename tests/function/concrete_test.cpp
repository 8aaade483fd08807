// A recorded call's gradient (src/function/concrete.h): the backward graph runs pruned to the
// gradients the tapes need, so a model called on a batch of data under a tape that watches only
// its variables never computes the batch's gradient.

#include "function/concrete.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "function/function_state.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::testing::bitwise_equal;

namespace {

std::size_t matmuls(const tf::graph::Graph& g) {
  return static_cast<std::size_t>(std::ranges::count_if(
      g.nodes, [](const tf::graph::Node& n) { return n.op != nullptr && n.op->name() == "MatMul"; }));
}

struct Layer {
  tf::Variable w{tf::random::normal({4, 3}, 0, 1, tf::float32, 1), {.name = "w"}};
  tf::Variable b{tf::zeros({3}), {.name = "b"}};
  tf::Tensor loss(const tf::Tensor& x) const {
    return tf::reduce_sum(tf::tanh(tf::matmul(x, w.read_value()) + b.read_value()));
  }
};

TEST(RecordedCall, ComputesOnlyTheGradientsItsTapesNeed) {
  Layer layer;
  auto f = tf::function([&layer](const tf::Tensor& x) { return layer.loss(x); }, {.name = "layer"});
  const tf::Tensor x = tf::random::normal({5, 4}, 0, 1, tf::float32, 2);
  std::vector<tf::Gradient> want;
  tf::Gradient want_x;
  {
    // Scoped: a tape still recording would make the calls' gradients observed (run unpruned).
    tf::GradientTape eager(tf::TapeOptions{.persistent = true});
    eager.watch(x);
    const tf::Tensor eager_loss = layer.loss(x);
    want = eager.gradient(eager_loss, {layer.w, layer.b});
    want_x = eager.gradient(eager_loss, {x})[0];
  }

  for (int call = 0; call < 2; ++call) {  // the trace, then the graph
    tf::GradientTape tape;                // watches the variables, not the batch
    const std::vector<tf::Gradient> got = tape.gradient(f(x), {layer.w, layer.b});
    EXPECT_TRUE(bitwise_equal(*got[0], *want[0])) << call;
    EXPECT_TRUE(bitwise_equal(*got[1], *want[1])) << call;
  }
  tf::GradientTape both;
  both.watch(x);
  const std::vector<tf::Gradient> all =
      both.gradient(f(x), {tf::Source(x), tf::Source(layer.w), tf::Source(layer.b)});
  EXPECT_TRUE(bitwise_equal(*all[0], *want_x));
  EXPECT_TRUE(bitwise_equal(*all[1], *want[0]));
  EXPECT_TRUE(bitwise_equal(*all[2], *want[1]));

  // The full backward multiplies twice (dx and dw); the one for the variables alone, once.
  const auto& cache = f.core()->state()->cache;
  ASSERT_EQ(cache.size(), 1u);
  const tf::graph::Differentiable* d = cache.begin()->second->differentiable();
  ASSERT_NE(d, nullptr);
  std::vector<bool> variables_only;
  for (std::size_t src : d->gradient_of)
    variables_only.push_back(!(src < d->source_inputs.size() && d->source_inputs[src] == 0));
  ASSERT_EQ(std::ranges::count(variables_only, false), 1);
  EXPECT_EQ(d->pruned_backwards(), 1u);  // the graph's calls made it; `both` needed every gradient
  EXPECT_EQ(matmuls(d->backward->graph()), 2u);
  EXPECT_EQ(matmuls(d->backward_for(variables_only)->graph()), 1u);
  EXPECT_EQ(d->pruned_backwards(), 1u);  // the one they ran
}

}  // namespace

namespace {

TEST(Differentiable, KeepsTheLatestPrunedBackwardsAndCountsWhatItDrops) {
  // A function of many inputs, recorded with tapes that watch a different subset each time:
  // each subset is one pruned backward, and the trace keeps the latest kMaxPrunedBackwards.
  constexpr int kInputs = 6;
  auto f = tf::function([](const std::vector<tf::Tensor>& xs) {
    tf::Tensor sum = tf::sin(xs[0]);
    for (std::size_t i = 1; i < xs.size(); ++i) sum = sum + tf::sin(xs[i]);
    return sum;
  });
  std::vector<tf::Tensor> xs;
  for (int i = 0; i < kInputs; ++i) xs.push_back(tf::constant(0.5 * i));
  const int subsets = static_cast<int>(tf::kMaxPrunedBackwards) + 5;
  for (int mask = 1; mask <= subsets; ++mask) {
    tf::GradientTape tape;
    std::vector<tf::Source> watched;
    for (int i = 0; i < kInputs; ++i)
      if (mask & (1 << i)) {
        tape.watch(xs[static_cast<std::size_t>(i)]);
        watched.emplace_back(xs[static_cast<std::size_t>(i)]);
      }
    const std::vector<tf::Gradient> g = tape.gradient(f(xs), watched);
    for (std::size_t k = 0, i = 0; i < kInputs; ++i) {
      if (mask & (1 << i)) {
        EXPECT_DOUBLE_EQ(g[k++]->item<double>(), std::cos(0.5 * static_cast<double>(i)));
      }
    }
  }
  const tf::graph::Differentiable* d = f.core()->state()->cache.begin()->second->differentiable();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->pruned_backwards(), tf::kMaxPrunedBackwards);
  // 21 subsets, each but perhaps the trace's own call run by a pruned graph: at least 4 dropped.
  EXPECT_EQ(f.stats().pruned_backward_evictions, static_cast<int>(d->pruned_evictions()));
  EXPECT_GE(d->pruned_evictions(), 4u);
}

}  // namespace
