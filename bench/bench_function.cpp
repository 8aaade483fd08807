// tf::function's own costs. (a) Tracing: a body of n scalar ops, each with a constant of its own
// (y = y * 0.999 + 0.5: what an unrolled loop or a long chain of layers traces into), traced at
// n = 10^3 ... 10^6: the trace runs the body eagerly, writes the graph, runs the passes and plans
// it, all of which must grow linearly in n, so the "s/op" counter stays flat across the rows.
// The same ops run eagerly (BM_EagerChain) for the floor; BM_Trace/ChainOfKernels cuts the chain
// into a fused kernel every three ops. (b) A tf::while_loop with a small body,
// per iteration, eagerly and from a traced function's graph.

#include <benchmark/benchmark.h>

#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// y = y * 0.999 + 0.5, `ops` / 2 times: every op reads a constant the body creates.
tf::Tensor chain_with_constants(const tf::Tensor& x, std::int64_t ops) {
  tf::Tensor y = x;
  for (std::int64_t i = 0; i < ops; i += 2) y = y * 0.999 + 0.5;
  return y;
}

/// Seconds per op of the chain (printed with an SI prefix: "1.2u" is 1.2 us).
void per_op(benchmark::State& state) {
  state.counters["s/op"] =
      benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// y = reshape(y * 0.999 + 0.5), `ops` / 3 times: the reshape, which does not fuse, ends each
/// pair of elementwise ops, so the graph holds `ops` / 3 fused kernels.
tf::Tensor chain_of_kernels(const tf::Tensor& x, std::int64_t ops) {
  tf::Tensor y = x;
  for (std::int64_t i = 0; i < ops; i += 3) y = tf::reshape(y * 0.999 + 0.5, {2});
  return y;
}

using Chain = tf::Tensor (*)(const tf::Tensor&, std::int64_t);

void BM_EagerChain(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f);
  for (auto _ : state) benchmark::DoNotOptimize(chain_with_constants(x, state.range(0)));
  per_op(state);
}

/// One trace of `chain` on ones of shape `dims` per iteration: a new function, called once.
void BM_Trace(benchmark::State& state, Chain chain, std::vector<std::int64_t> dims) {
  const tf::Tensor x = tf::ones(tf::Shape(dims));
  for (auto _ : state) {
    auto f = tf::function([chain, ops = state.range(0)](const tf::Tensor& v) { return chain(v, ops); });
    benchmark::DoNotOptimize(f(x));
  }
  per_op(state);
}

/// 10^3 ... 10^6 ops.
void chain_lengths(benchmark::internal::Benchmark* b) {
  b->ArgName("ops")->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_EagerChain)->Apply(chain_lengths);
BENCHMARK_CAPTURE(BM_Trace, Chain, &chain_with_constants, std::vector<std::int64_t>{})->Apply(chain_lengths);
BENCHMARK_CAPTURE(BM_Trace, ChainOfKernels, &chain_of_kernels, std::vector<std::int64_t>{2})
    ->Apply(chain_lengths);

constexpr std::int64_t kIterations = 10000;

/// A small-bodied loop: `kIterations` iterations of x = x * 0.999 + 0.5 on a scalar, counted by i.
tf::Tensor small_loop(const tf::Tensor& x) {
  const tf::Tensor n = tf::constant(kIterations);
  return tf::while_loop([&](const std::vector<tf::Tensor>& v) { return tf::less(v[0], n); },
                        [](const std::vector<tf::Tensor>& v) {
                          return std::vector<tf::Tensor>{v[0] + std::int64_t{1}, v[1] * 0.999f + 0.5f};
                        },
                        {tf::constant(std::int64_t{0}), x})[1];
}

/// (b) The loop eagerly (traced:0: C++ runs cond and body, op by op) and from a traced function's
/// graph (traced:1: the While node runs the cond and body graphs), per iteration.
void BM_SmallWhileLoop(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f);
  auto f = tf::function(small_loop);
  f(x);  // the trace
  for (auto _ : state) benchmark::DoNotOptimize(state.range(0) != 0 ? f(x) : small_loop(x));
  state.counters["s/iteration"] =
      benchmark::Counter(static_cast<double>(kIterations * state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SmallWhileLoop)->ArgName("traced")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
