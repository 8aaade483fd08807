// Recomputing cheap saved values (src/graph/recompute.h): what a recorded call's fast forward
// saves for its gradient, and that the gradient is unchanged.

#include "graph/recompute.h"

#include <gtest/gtest.h>

#include <cmath>

#include "function/concrete.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

using Fn = std::function<tf::Tensor(const std::vector<tf::Tensor>&)>;

/// A differentiable trace of `f` on `args` (as the first call under a tape makes it).
std::shared_ptr<tf::graph::ConcreteFunction> differentiable(const Fn& f,
                                                            const std::vector<tf::Tensor>& args) {
  const tf::detail::FunctionCore::Body body = [&f](std::vector<tf::Tensor> in) {
    return std::make_pair(std::vector<tf::Tensor>{f(in)}, std::shared_ptr<const void>());
  };
  tf::GradientTape outer;
  for (const tf::Tensor& a : args) outer.watch(a);
  return tf::graph::trace("test", /*optimize=*/true, args, body, /*differentiable=*/true).function;
}

/// How many values the fast forward saves for the gradient, and how many the unfused one does.
std::pair<std::size_t, std::size_t> saved_counts(const tf::graph::ConcreteFunction& cf) {
  const tf::graph::Differentiable& d = *cf.differentiable();
  return {d.forward->graph().outputs.size() - d.num_results,
          d.forward_plain->graph().outputs.size() - d.num_results};
}

/// The gradient of sum(f(args) * u) through tf::function and eagerly, for every argument.
void expect_gradients_match(const Fn& f, const std::vector<tf::Tensor>& args) {
  auto traced = tf::function([&f](const std::vector<tf::Tensor>& in) { return f(in); });
  for (int call = 0; call < 2; ++call) {  // the trace, then the graph
    tf::GradientTape tape, eager_tape;
    for (const tf::Tensor& a : args) tape.watch(a), eager_tape.watch(a);
    const tf::Tensor y = traced(args);
    const tf::Tensor ye = f(args);
    const auto g = tape.gradient(tf::reduce_sum(y * 0.75), args);
    const auto ge = eager_tape.gradient(tf::reduce_sum(ye * 0.75), args);
    for (std::size_t i = 0; i < args.size(); ++i) tf::testing::expect_close(*g[i], *ge[i], 1e-6);
  }
}

TEST(Recompute, ACheapChainOfTheInputsIsRecomputedNotSaved) {
  const Fn f = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor& x = in[0];
    const tf::Tensor y = x * x - x * 0.5f;
    return tf::nn::relu(y) * y;
  };
  const std::vector<tf::Tensor> args = {tf::random::uniform({5000}, -2, 2, tf::float32, 1)};
  const auto cf = differentiable(f, args);
  // Unfused, the gradient reads relu(y) and y (besides x and the constant 0.5); the fast forward
  // computes neither again for the gradient: it saves x, which the record keeps anyway, and 0.5.
  const auto [fast, plain] = saved_counts(*cf);
  EXPECT_EQ(plain - fast, 2u);
  expect_gradients_match(f, args);
}

TEST(Recompute, TranscendentalValuesStaySaved) {
  const Fn f = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor& x = in[0];
    return tf::exp(-(tf::sin(x) * x + x * x));
  };
  const std::vector<tf::Tensor> args = {tf::random::uniform({5000}, -2, 2, tf::float32, 8)};
  const auto cf = differentiable(f, args);
  // exp's output and sin(x): a second sin and exp cost more than storing and loading them.
  const auto [fast, plain] = saved_counts(*cf);
  EXPECT_EQ(fast, plain);
  expect_gradients_match(f, args);
}

TEST(Recompute, AValueOfANonElementwiseOpStaysSaved) {
  const Fn f = [](const std::vector<tf::Tensor>& in) { return tf::tanh(tf::matmul(in[0], in[1])); };
  const std::vector<tf::Tensor> args = {tf::random::uniform({4, 6}, -1, 1, tf::float32, 2),
                                        tf::random::uniform({6, 3}, -1, 1, tf::float32, 3)};
  const auto cf = differentiable(f, args);
  // tanh's output (its gradient reads y) comes from a matmul: saved, as are the matmul's inputs.
  const auto [fast, plain] = saved_counts(*cf);
  EXPECT_EQ(fast, plain);
  expect_gradients_match(f, args);
}

TEST(Recompute, ALongChainStaysSaved) {
  const Fn f = [](const std::vector<tf::Tensor>& in) {
    tf::Tensor y = in[0];
    // Square's gradient reads its operand: every y is a saved value, the deeper ones too deep to
    // recompute.
    for (std::size_t i = 0; i < tf::graph::kMaxRecomputedOps + 4; ++i) y = tf::square(y) * 0.9f;
    return y;
  };
  const std::vector<tf::Tensor> args = {tf::random::uniform({100}, -1, 1, tf::float32, 4)};
  const auto cf = differentiable(f, args);
  // The values near the input are recomputed; the ones more than 16 ops deep are saved.
  const auto [fast, plain] = saved_counts(*cf);
  EXPECT_LT(fast, plain);
  EXPECT_GE(fast, 2u);
  expect_gradients_match(f, args);
}

TEST(Recompute, TwoInputsOfTheDomainsSizeAreRecomputedFromThreeAreNot) {
  const Fn two = [](const std::vector<tf::Tensor>& in) { return tf::nn::relu(in[0] * in[1]); };
  const Fn three = [](const std::vector<tf::Tensor>& in) { return tf::nn::relu(in[0] * in[1] + in[2]); };
  const std::vector<tf::Tensor> args = {tf::random::uniform({64}, -1, 1, tf::float64, 5),
                                        tf::random::uniform({64}, -1, 1, tf::float64, 6),
                                        tf::random::uniform({64}, -1, 1, tf::float64, 7)};
  // relu's gradient reads its output: from two inputs it is recomputed (the inputs are saved for
  // Mul's gradient anyway); from three it would read more than the saved value costs.
  const auto cf2 = differentiable(two, {args[0], args[1]});
  const auto cf3 = differentiable(three, args);
  const auto [fast2, plain2] = saved_counts(*cf2);
  const auto [fast3, plain3] = saved_counts(*cf3);
  EXPECT_EQ(fast2, 2u);
  EXPECT_EQ(plain2, 3u);
  EXPECT_EQ(fast3, plain3);
  expect_gradients_match(two, {args[0], args[1]});
  expect_gradients_match(three, args);
}

}  // namespace
