// Per-op cost of the tape on tiny tensors: a chain of 20,000 elementwise ops on a one-element
// float32 tensor, run (a) without a tape, (b) recorded on a tape, and (c) backward through the
// recorded chain. Reported as nanoseconds per op (the "ns/op" counter).

#include <benchmark/benchmark.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr int kChain = 20000;

/// y = ((x * c) + c) * c ... alternating Mul and AddV2: every op has a gradient and saves inputs.
tf::Tensor chain(const tf::Tensor& x, const tf::Tensor& c) {
  tf::Tensor y = x;
  for (int i = 0; i < kChain; i += 2) y = (y * c) + c;
  return y;
}

void per_op(benchmark::State& state) {
  state.counters["ns/op"] = benchmark::Counter(static_cast<double>(kChain) * static_cast<double>(state.iterations()),
                                               benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ForwardNoTape(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(chain(x, c));
  per_op(state);
}
BENCHMARK(BM_ForwardNoTape)->Unit(benchmark::kMillisecond);

void BM_ForwardRecorded(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f);
  for (auto _ : state) {
    auto tape = std::make_unique<tf::GradientTape>();
    tape->watch(x);
    benchmark::DoNotOptimize(chain(x, c));
    state.PauseTiming();  // freeing the records is not recording cost
    tape.reset();
    state.ResumeTiming();
  }
  per_op(state);
}
BENCHMARK(BM_ForwardRecorded)->Unit(benchmark::kMillisecond);

void BM_Backward(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f);
  for (auto _ : state) {
    state.PauseTiming();
    auto tape = std::make_unique<tf::GradientTape>();
    tape->watch(x);
    tf::Tensor y = chain(x, c);
    state.ResumeTiming();
    benchmark::DoNotOptimize(tape->gradient(y, x));
    state.PauseTiming();
    tape.reset();
    state.ResumeTiming();
  }
  per_op(state);
}
BENCHMARK(BM_Backward)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
