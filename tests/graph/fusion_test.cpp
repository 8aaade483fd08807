// Elementwise fusion (src/graph/fusion.h): which nodes become one fused kernel, and that a
// fused graph computes what the unfused graph computes. Elementwise results are bitwise equal
// (a fused kernel runs each op's own element or array function); sums are added in another
// order, so they agree to float rounding.

#include "graph/fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "function/concrete.h"
#include "function/trace.h"
#include "graph/executor.h"
#include "graph/passes.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::graph::Graph;
using tf::graph::NodeKind;
using tf::testing::expect_close;

namespace {

using Body = std::function<std::vector<tf::Tensor>(const std::vector<tf::Tensor>&)>;

/// The graph of `body` traced on `args`, with the passes run (fused or not).
Graph traced(const Body& body, const std::vector<tf::Tensor>& args, bool fuse) {
  tf::graph::GraphTracer tracer;
  std::vector<tf::Tensor> in;
  for (const tf::Tensor& a : args) in.push_back(tracer.input(a));
  const std::vector<tf::Tensor> out = body(in);
  return tf::graph::optimized(tracer.finish(out), fuse);
}

std::vector<tf::Tensor> run(const Graph& g, const std::vector<tf::Tensor>& args) {
  return tf::graph::Executor(g, "test").run(args, tf::graph::RunMode::kFast);
}

int count(const Graph& g, NodeKind kind) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.kind == kind ? 1 : 0;
  return n;
}

/// Whether a and b have one dtype, shape and bit pattern (NaNs compare equal).
void expect_bitwise_equal(const tf::Tensor& a, const tf::Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  const std::size_t bytes = static_cast<std::size_t>(a.num_elements()) * tf::dtype_size(a.dtype());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), bytes), 0);
}

tf::Tensor uniform(const tf::Shape& s, tf::DType dtype, std::uint64_t seed) {
  return tf::random::uniform(s, -2, 2, dtype, static_cast<std::int64_t>(seed));
}

/// Runs `body` unfused and fused on `args`: `stored` results (not sums) bitwise equal, all within
/// `tol`; returns the fused graph.
Graph expect_fused_matches(const Body& body, const std::vector<tf::Tensor>& args, double tol = 1e-6) {
  const Graph plain = traced(body, args, false);
  const Graph fused = traced(body, args, true);
  const auto want = run(plain, args), got = run(fused, args);
  EXPECT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) expect_close(got[i], want[i], tol);
  return fused;
}

/// Runs `g` on one thread and on two: every result bitwise the same.
void expect_same_on_one_and_two_threads(const Graph& g, const std::vector<tf::Tensor>& args) {
  const int threads = tf::num_threads();
  tf::set_num_threads(1);
  const auto one = run(g, args);
  tf::set_num_threads(2);
  const auto two = run(g, args);
  tf::set_num_threads(threads);
  for (std::size_t i = 0; i < one.size(); ++i) expect_bitwise_equal(one[i], two[i]);
}

// y = sum(exp(-(sin(x) * x + x * x))) and dy/dx: the benchmark chain, forward and backward.
std::vector<tf::Tensor> chain_and_gradient(const std::vector<tf::Tensor>& in) {
  tf::GradientTape tape;
  tape.watch(in[0]);
  const tf::Tensor x = in[0];
  const tf::Tensor s = tf::reduce_sum(tf::exp(-(tf::sin(x) * x + x * x)));
  return {s, *tape.gradient(s, x)};
}

TEST(Fusion, TheForwardAndBackwardOfAnElementwiseChainAreOneKernel) {
  // 20,000 elements: the gradient's broadcast of the sum's cotangent (a scalar 1) is too large to
  // fold into a constant, so it stays a BroadcastTo, which the kernel reads as one element.
  const std::vector<tf::Tensor> args = {uniform({20000}, tf::float32, 1)};
  const Graph fused = expect_fused_matches(chain_and_gradient, args);
  EXPECT_EQ(count(fused, NodeKind::kFused), 1) << fused.to_string();
  EXPECT_EQ(count(fused, NodeKind::kOp), 0) << fused.to_string();
  // x and the cotangent's one element in; the sum and the gradient out: no intermediate is stored.
  EXPECT_EQ(fused.nodes[0].inputs.size(), 2u) << fused.to_string();
  EXPECT_EQ(fused.nodes[0].outputs.size(), 2u);
  // The gradient's elements are bitwise those of the unfused graph.
  expect_bitwise_equal(run(fused, args)[1], run(traced(chain_and_gradient, args, false), args)[1]);
}

TEST(Fusion, ManyBlocksOnTwoThreadsGiveTheSameResultsAsOneThread) {
  const std::vector<tf::Tensor> args = {uniform({3 * 1024 * 1024 + 17}, tf::float32, 2)};
  // Partial sums are per chunk and added in chunk order: any split gives the same bits.
  expect_same_on_one_and_two_threads(expect_fused_matches(chain_and_gradient, args, 1e-5), args);
}

TEST(Fusion, Float64KernelsMatchToTheLastBit) {
  const std::vector<tf::Tensor> args = {uniform({4, 300}, tf::float64, 3), uniform({300}, tf::float64, 4)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor y = tf::tanh(in[0] * in[1] + 0.5) / (tf::abs(in[1]) + 1);
    return std::vector<tf::Tensor>{tf::sqrt(tf::square(y) + 1e-3) - tf::sigmoid(in[0])};
  };
  const Graph fused = expect_fused_matches(body, args, 0);
  // |in[1]| + 1 has in[1]'s shape, [300]: a kernel of its own, before the [4, 300] one.
  EXPECT_EQ(count(fused, NodeKind::kFused), 2) << fused.to_string();
  EXPECT_EQ(count(fused, NodeKind::kOp), 0) << fused.to_string();
  expect_bitwise_equal(run(fused, args)[0], run(traced(body, args, false), args)[0]);
}

TEST(Fusion, OperandsOfOtherShapesAreBroadcastIntoTheKernel) {
  // A bias row, a column and a scalar around a [5, 7] domain.
  const std::vector<tf::Tensor> args = {uniform({5, 7}, tf::float32, 5), uniform({7}, tf::float32, 6),
                                        uniform({5, 1}, tf::float32, 7), uniform({}, tf::float32, 8)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    return std::vector<tf::Tensor>{tf::nn::relu(in[0] + in[1]) * in[2] - in[3] * tf::exp(in[2])};
  };
  const Graph fused = expect_fused_matches(body, args, 0);
  // in[3] * exp(column) has the column's shape, not the domain's: a kernel of its own, before.
  EXPECT_EQ(count(fused, NodeKind::kFused), 2) << fused.to_string();
  EXPECT_EQ(fused.nodes.back().inputs.size(), 4u) << fused.to_string();
}

TEST(Fusion, ComparisonsAndWhereFuseWithBoolValuesInside) {
  const std::vector<tf::Tensor> args = {uniform({64}, tf::float32, 9)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor& x = in[0];
    const tf::Tensor positive = x > 0.0f;
    const tf::Tensor leaky = tf::where(positive, x, x * 0.1f);
    // A bool result is stored as bool.
    return std::vector<tf::Tensor>{leaky * 2.0f, tf::logical_and(positive, x < 1.0f)};
  };
  const Graph fused = expect_fused_matches(body, args, 0);
  EXPECT_EQ(count(fused, NodeKind::kFused), 1) << fused.to_string();
  const auto got = run(fused, args);
  EXPECT_EQ(got[1].dtype(), tf::DType::Bool);
  expect_bitwise_equal(got[1], tf::logical_and(args[0] > 0.0f, args[0] < 1.0f));
}

TEST(Fusion, AValueAnOpOutsideReadsIsStoredAndStillFused) {
  const std::vector<tf::Tensor> args = {uniform({8, 16}, tf::float32, 10), uniform({16, 4}, tf::float32, 11)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor h = tf::tanh(in[0] * 2.0f + 1.0f);  // read by matmul and by the sum of squares
    const tf::Tensor z = tf::matmul(h, in[1]);
    return std::vector<tf::Tensor>{z, tf::reduce_sum(h * h)};
  };
  const Graph fused = expect_fused_matches(body, args, 1e-6);
  // The matmul reads h, so the first kernel stores it (and ends there); the second reads it back.
  ASSERT_EQ(count(fused, NodeKind::kFused), 2) << fused.to_string();
  EXPECT_EQ(fused.nodes[0].outputs.size(), 1u) << fused.to_string();
}

TEST(Fusion, AMemberNeverReadsItsOwnGroupsSum) {
  // x - mean(x): the mean ends one kernel, the subtraction starts another.
  const std::vector<tf::Tensor> args = {uniform({2000}, tf::float32, 12)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor e = tf::exp(in[0]) * 0.5f;
    return std::vector<tf::Tensor>{tf::square(e - tf::reduce_mean(e))};
  };
  const Graph fused = expect_fused_matches(body, args, 1e-6);
  EXPECT_EQ(count(fused, NodeKind::kFused), 2) << fused.to_string();
}

TEST(Fusion, AScalarChainOfThousandsOfOpsIsOneKernel) {
  const std::vector<tf::Tensor> args = {tf::constant(1.0), tf::constant(0.9999)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    tf::GradientTape tape;
    tape.watch(in[0]);
    tf::Tensor y = in[0];
    for (int i = 0; i < 1000; ++i) y = y * in[1] + in[1];
    return std::vector<tf::Tensor>{y, *tape.gradient(y, in[0])};
  };
  const Graph fused = expect_fused_matches(body, args, 0);
  EXPECT_EQ(count(fused, NodeKind::kFused), 1);
  EXPECT_NEAR(run(fused, args)[1].item<double>(), std::pow(0.9999, 1000), 1e-12);
}

TEST(Fusion, EmptyTensorsGiveEmptyResultsAndTheReductionsOfNothing) {
  const std::vector<tf::Tensor> args = {tf::zeros({0, 3}, tf::float32)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor y = tf::exp(in[0]) * 2.0f;
    return std::vector<tf::Tensor>{y + 1.0f, tf::reduce_sum(y), tf::reduce_mean(y)};
  };
  const Graph fused = traced(body, args, true);
  const auto got = run(fused, args);
  EXPECT_EQ(got[0].shape(), tf::Shape({0, 3}));
  EXPECT_EQ(got[1].item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(got[2].item<float>()));  // 0 / 0, as the Mean op gives
}

TEST(Fusion, VariableReadsAndAssignmentsKeepTheirOrder) {
  tf::Variable v(tf::constant(std::vector<float>{1, 2, 3}));
  auto step = tf::function([&v](const tf::Tensor& x) {
    const tf::Tensor before = v.read_value() * 2.0f + x;
    v.assign(tf::exp(x) * 0.5f + 1.0f);
    const tf::Tensor after = v.read_value() * 2.0f + x;
    return std::vector<tf::Tensor>{before, after};
  });
  const tf::Tensor x = tf::constant(std::vector<float>{0.5f, -1, 2});
  step(x);  // the trace
  v.assign(tf::constant(std::vector<float>{1, 2, 3}));
  const auto out = step(x);  // the graph
  const tf::Tensor assigned = tf::exp(x) * 0.5f + 1.0f;
  expect_bitwise_equal(out[0], tf::constant(std::vector<float>{1, 2, 3}) * 2.0f + x);
  expect_bitwise_equal(out[1], assigned * 2.0f + x);
  expect_bitwise_equal(v.value(), assigned);
}

TEST(Fusion, ATracedFunctionRunsItsFusedGraphAndStoresLess) {
  auto f =
      tf::function([](const tf::Tensor& x) { return tf::reduce_sum(tf::exp(-(tf::sin(x) * x + x * x))); },
                   {.name = "chain"});
  auto plain =
      tf::function([](const tf::Tensor& x) { return tf::reduce_sum(tf::exp(-(tf::sin(x) * x + x * x))); },
                   {.name = "chain", .optimize = false});
  const tf::Tensor x = uniform({100000}, tf::float32, 13);
  f(x);
  plain(x);
  expect_close(f(x), plain(x), 1e-6);
  // One kernel ending with the sum (the compiler picks the order of sin(x) * x and x * x).
  EXPECT_EQ(f.stats().nodes, 1u) << f.graph_text();
  EXPECT_NE(f.graph_text().find(", Exp, Sum)("), std::string::npos) << f.graph_text();
  // Nothing but the sum is stored: the plan's peak is the scalar, against the unfused chain's
  // intermediates.
  EXPECT_LT(f.stats().planned_peak_bytes, 100u);
  EXPECT_GT(plain.stats().planned_peak_bytes, 100000u * 4);
}

TEST(Fusion, AFusedNodeChecksItsInputsAgainstTheKernel) {
  const std::vector<tf::Tensor> args = {uniform({10}, tf::float32, 14)};
  const Graph fused = traced(
      [](const std::vector<tf::Tensor>& in) { return std::vector<tf::Tensor>{tf::exp(in[0]) * 2.0f + 1.0f}; },
      args, true);
  ASSERT_EQ(fused.nodes.size(), 1u);
  const auto& kernel = *fused.nodes[0].fused;
  const std::vector<tf::Tensor> wrong_shape = {uniform({11}, tf::float32, 15)};
  const std::vector<tf::Tensor> wrong_dtype = {uniform({10}, tf::float64, 16)};
  EXPECT_THROW(tf::graph::run_fused(kernel, wrong_shape), tf::InvalidArgumentError);
  EXPECT_THROW(tf::graph::run_fused(kernel, wrong_dtype), tf::InvalidArgumentError);
  EXPECT_THROW(tf::graph::run_fused(kernel, {}), tf::InvalidArgumentError);
}

}  // namespace

namespace {

TEST(Fusion, SumsOverLeadingTrailingAndMiddleAxesEndTheKernel) {
  // A bias gradient (sum over the batch), a row mean and a middle-axis sum, each ending a kernel.
  const std::vector<tf::Tensor> args = {uniform({300, 70}, tf::float32, 20), uniform({70}, tf::float32, 21),
                                        uniform({6, 50, 7}, tf::float32, 22)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor g = tf::nn::relu(in[0] + in[1]) * 2.0f;
    const tf::Tensor h = tf::exp(in[2]) - 1.0f;
    return std::vector<tf::Tensor>{tf::reduce_sum(g, 0), tf::reduce_mean(tf::square(in[0]) + 1.0f, 1, true),
                                   tf::reduce_sum(h * h, 1)};
  };
  const Graph fused = expect_fused_matches(body, args, 1e-6);
  EXPECT_EQ(count(fused, NodeKind::kOp), 0) << fused.to_string();
}

TEST(Fusion, AFloat64SumStaysItsOpAndGivesEagersBitsOnEveryAxis) {
  // reduce_sum(tanh(x)) over 20 elements: the fused kernel's eight lanes gave 4.4209883466337239
  // where eager's sixteen give 4.420988346633723. The chain before the sum still fuses.
  const tf::Tensor x = uniform({20}, tf::float64, 25);
  auto f = tf::function([](const tf::Tensor& v) { return tf::reduce_sum(tf::tanh(v)); });
  f(uniform({20}, tf::float64, 26));  // the trace: the next call runs the graph
  expect_bitwise_equal(f(x), tf::reduce_sum(tf::tanh(x)));
  const std::vector<tf::Tensor> args = {uniform({300, 70}, tf::float64, 27),
                                        uniform({6, 50, 7}, tf::float64, 28)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor g = tf::exp(in[0]) * 0.5 - in[0];
    const tf::Tensor h = tf::sin(in[1]) * in[1];
    return std::vector<tf::Tensor>{tf::reduce_sum(g), tf::reduce_sum(g, 0), tf::reduce_mean(g, 1),
                                   tf::reduce_sum(h, 1)};
  };
  const Graph fused = traced(body, args, true);
  EXPECT_EQ(count(fused, NodeKind::kFused), 2) << fused.to_string();
  EXPECT_EQ(count(fused, NodeKind::kOp), 4) << fused.to_string();
  const std::vector<tf::Tensor> got = run(fused, args), want = body(args);
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("result " + std::to_string(i));
    expect_bitwise_equal(got[i], want[i]);
  }
}

TEST(Fusion, SumsOverAxesThatAreNotContiguousStayOps) {
  const std::vector<tf::Tensor> args = {uniform({4, 5, 6}, tf::float32, 23)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    return std::vector<tf::Tensor>{tf::reduce_sum(tf::exp(in[0]) * 3.0f, {0, 2})};
  };
  const Graph fused = expect_fused_matches(body, args, 1e-6);
  EXPECT_NE(fused.to_string().find("= Sum("), std::string::npos) << fused.to_string();
}

TEST(Fusion, ColumnSumsAreTheSameWithAnyThreadCount) {
  const std::vector<tf::Tensor> args = {uniform({4096, 300}, tf::float32, 24)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    return std::vector<tf::Tensor>{tf::reduce_sum(tf::tanh(in[0]) * in[0], 0),
                                   tf::reduce_mean(tf::square(in[0]), 1)};
  };
  const Graph fused = expect_fused_matches(body, args, 1e-6);
  EXPECT_EQ(count(fused, NodeKind::kFused), 1) << fused.to_string();
  expect_same_on_one_and_two_threads(fused, args);
}

TEST(Fusion, AReductionOverAnEmptyAxisGivesZerosAndNaNMeans) {
  const std::vector<tf::Tensor> args = {tf::zeros({0, 3}, tf::float32)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor y = tf::exp(in[0]) * 2.0f;
    return std::vector<tf::Tensor>{tf::reduce_sum(y, 0), tf::reduce_mean(y, 0)};
  };
  const auto got = run(traced(body, args, true), args);
  expect_bitwise_equal(got[0], tf::zeros({3}, tf::float32));
  for (float v : got[1].to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

TEST(Fusion, ASumOfOneElementPerOutputKeepsNegativeZeroAsEagersDoes) {
  // Eager's Sum and Mean pass one element through unchanged; a sum that starts from +0 turns -0
  // into +0 (fuzz_traced found it in a scalar's sum). These reductions stay their ops; the
  // chains before them still fuse.
  const std::vector<tf::Tensor> args = {tf::constant(-0.0f), tf::fill({3, 1}, -0.0f)};
  const Body body = [](const std::vector<tf::Tensor>& in) {
    const tf::Tensor s = tf::minimum(in[0], in[0]) * 1.0f;
    const tf::Tensor c = tf::minimum(in[1], in[1]) * 1.0f;
    return std::vector<tf::Tensor>{tf::reduce_sum(s), tf::reduce_mean(s), tf::reduce_sum(c, 1),
                                   tf::reduce_mean(c, 1, true)};
  };
  const Graph fused = traced(body, args, true);
  EXPECT_EQ(count(fused, NodeKind::kFused), 2) << fused.to_string();
  const std::vector<tf::Tensor> got = run(fused, args), want = body(args);
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("result " + std::to_string(i));
    expect_bitwise_equal(got[i], want[i]);
    for (float v : got[i].to_vector<float>()) EXPECT_TRUE(std::signbit(v));
  }
}

}  // namespace

namespace {

/// A random body: a pool of tensors grown by random ops on random members (elementwise ops of
/// every arity, comparisons and where, reductions, and a matmul and a reshape that fusion must
/// work around), with random members as results.
Body random_body(std::uint64_t seed) {
  return [seed](const std::vector<tf::Tensor>& in) {
    std::mt19937_64 rng(seed);
    std::vector<tf::Tensor> pool(in.begin(), in.end());
    auto pick = [&] { return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)]; };
    const int n = std::uniform_int_distribution<int>(4, 30)(rng);
    for (int i = 0; i < n; ++i) {
      const tf::Tensor a = pick(), b = pick(), c = pick();
      switch (std::uniform_int_distribution<int>(0, 13)(rng)) {
        case 0:
          pool.push_back(tf::tanh(a));
          break;
        case 1:
          pool.push_back(tf::sin(a) * 0.5);
          break;
        case 2:
          pool.push_back(tf::nn::relu(a - b));
          break;
        case 3:
          pool.push_back(a * b);
          break;
        case 4:
          pool.push_back(a + b);
          break;
        case 5:
          pool.push_back(tf::maximum(a, b));
          break;
        case 6:
          pool.push_back(tf::where(a > b, a, c));
          break;
        case 7:
          pool.push_back(tf::sigmoid(a) - tf::square(b) * 0.1);
          break;
        case 8:
          pool.push_back(tf::reduce_sum(a));
          break;
        case 9:
          pool.push_back(tf::reduce_mean(a, -1, true));
          break;
        case 10:
          pool.push_back(a.rank() == 2 ? tf::reduce_sum(a, 0) : -a);
          break;
        case 11:
          pool.push_back(a.shape() == tf::Shape{6, 5} ? tf::matmul(a, in[0], false, true) : tf::abs(a));
          break;
        case 12:
          pool.push_back(tf::reshape(a, {-1}));
          break;
        default:
          pool.push_back(tf::cast(tf::logical_or(a > 0.0, b < 0.0), tf::float64) * c);
          break;
      }
    }
    std::vector<tf::Tensor> out = {pool.back()};
    for (int k = 0; k < 3; ++k) out.push_back(pick());
    return out;
  };
}

TEST(Fusion, RandomFloat64ProgramsAndTheirGradientsAreEagersBitForBit) {
  const std::vector<tf::Tensor> args = {uniform({6, 5}, tf::float64, 40), uniform({5}, tf::float64, 41),
                                        uniform({6, 1}, tf::float64, 42), uniform({}, tf::float64, 43)};
  // The results, then the gradient of sum(result^2) over all of them in each argument (a zero
  // where none connects).
  const auto with_gradients = [](std::uint64_t seed) {
    return [seed](const std::vector<tf::Tensor>& in) {
      tf::GradientTape tape;
      for (const tf::Tensor& x : in) tape.watch(x);
      std::vector<tf::Tensor> out = random_body(seed)(in);
      tf::Tensor loss = tf::constant(0.0);
      for (const tf::Tensor& y : out) loss = loss + tf::reduce_sum(tf::square(y));
      const std::vector<tf::Gradient> grads =
          tape.gradient(loss, {tf::Source(in[0]), tf::Source(in[1]), tf::Source(in[2]), tf::Source(in[3])});
      for (std::size_t i = 0; i < in.size(); ++i) out.push_back(grads[i].value_or(tf::zeros_like(in[i])));
      return out;
    };
  };
  int programs = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<tf::Tensor> want;
    try {
      want = with_gradients(seed)(args);
    } catch (const tf::Error&) {
      continue;  // shapes that do not broadcast: no program
    }
    auto f = tf::function(with_gradients(seed));
    f(args);  // the trace: the next call runs the fused graph
    const std::vector<tf::Tensor> got = f(args);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) expect_bitwise_equal(got[i], want[i]);
    ++programs;
  }
  EXPECT_GT(programs, 100);
}

TEST(Fusion, RandomGraphsComputeWhatTheUnfusedGraphComputes) {
  // Operands of the domain's shape and of every shape that broadcasts to it.
  const std::vector<tf::Tensor> args = {uniform({6, 5}, tf::float64, 30), uniform({5}, tf::float64, 31),
                                        uniform({6, 1}, tf::float64, 32), uniform({}, tf::float64, 33)};
  int graphs = 0, fused_kernels = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    try {
      random_body(seed)(args);
    } catch (const tf::Error&) {
      continue;  // shapes that do not broadcast: no graph to compare
    }
    const Graph fused = expect_fused_matches(random_body(seed), args, 1e-12);
    ++graphs;
    fused_kernels += count(fused, NodeKind::kFused);
  }
  // The bodies did exercise fusion.
  EXPECT_GT(graphs, 300);
  EXPECT_GT(fused_kernels, graphs);
}

}  // namespace
