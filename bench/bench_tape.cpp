// Per-op cost of the tape on tiny tensors: a chain of 20,000 elementwise ops on a one-element
// float32 tensor, run (a) without a tape, (b) recorded on a tape, and (c) backward through the
// recorded chain, and (d) a second-order pass over a 2,000-op chain. Reported as nanoseconds per
// op of the chain (the "ns/op" counter). Then (e) the recorded chain and (f) creating a tape while
// 40,000 idle tapes live (the cost of a tape must not grow with the number of live tapes), and (g)
// what the diagnostics' recording listener costs: the recorded chain and a chain of ops a
// recording tape does not record, each with the listener installed (listener:1, what every
// program that calls a tf::debug:: function has) and without it (listener:0), and (h) 20,000
// live tapes of one op each: the heap each holds, and destruction newest or oldest first.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <memory>
#include <vector>

#include "autodiff/recording_listener.h"
#include "debug/trace.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// The diagnostics' recording listener (src/debug/trace.cpp): naming trace_of links it in, and it
/// installs itself before main.
tf::autodiff::RecordingListener* trace_listener() {
  static tf::autodiff::RecordingListener* const listener = [] {
    benchmark::DoNotOptimize(&tf::debug::trace_of);
    return tf::autodiff::recording_listener();
  }();
  return listener;
}

/// Runs a benchmark with the listener installed (state.range(0) == 1) or not, and restores it.
class ListenerSetting {
 public:
  explicit ListenerSetting(const benchmark::State& state) {
    tf::autodiff::g_recording_listener.store(state.range(0) != 0 ? trace_listener() : nullptr);
  }
  ~ListenerSetting() { tf::autodiff::g_recording_listener.store(trace_listener()); }
  ListenerSetting(const ListenerSetting&) = delete;
  ListenerSetting& operator=(const ListenerSetting&) = delete;
};

constexpr int kChain = 20000;

/// y = ((x * c) + c) * c ... alternating Mul and AddV2: every op has a gradient and saves inputs.
tf::Tensor chain(const tf::Tensor& x, const tf::Tensor& c) {
  tf::Tensor y = x;
  for (int i = 0; i < kChain; i += 2) y = (y * c) + c;
  return y;
}

void per_op(benchmark::State& state) {
  state.counters["ns/op"] =
      benchmark::Counter(static_cast<double>(kChain) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ForwardNoTape(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(chain(x, c));
  per_op(state);
}
BENCHMARK(BM_ForwardNoTape)->Unit(benchmark::kMillisecond);

void BM_ForwardRecorded(benchmark::State& state) {
  const ListenerSetting listener(state);
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
BENCHMARK(BM_ForwardRecorded)->ArgName("listener")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

/// The chain on tensors a recording tape does not track (it watches another one): each op visits
/// the tape, which does not record it; with the listener, the listener checks whether the op
/// takes a tracked integer tensor (explain's cuts).
void BM_UntrackedBesideRecordingTape(benchmark::State& state) {
  const ListenerSetting listener(state);
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f), other = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(other);
  for (auto _ : state) benchmark::DoNotOptimize(chain(x, c));
  per_op(state);
}
BENCHMARK(BM_UntrackedBesideRecordingTape)
    ->ArgName("listener")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);

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

/// Gradient of a gradient: y = (y * x) + c over 2,000 ops, differentiated twice with nested
/// tapes (forward, first and second backward pass all timed), per op of the chain.
void BM_SecondOrder(benchmark::State& state) {
  constexpr int kChain2 = 2000;
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f);
  for (auto _ : state) {
    tf::GradientTape outer;
    outer.watch(x);
    tf::Tensor g;
    {
      tf::GradientTape inner;
      inner.watch(x);
      tf::Tensor y = x;
      for (int i = 0; i < kChain2; i += 2) y = (y * x) + c;
      g = *inner.gradient(y, x);
    }
    benchmark::DoNotOptimize(outer.gradient(g, x));
  }
  state.counters["ns/op"] =
      benchmark::Counter(static_cast<double>(kChain2) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SecondOrder)->Unit(benchmark::kMillisecond);

/// 40,000 live tapes that do not record (consumed by their gradient() call), as a program that
/// keeps tapes around would have.
std::vector<std::unique_ptr<tf::GradientTape>> idle_tapes(const tf::Tensor& x) {
  std::vector<std::unique_ptr<tf::GradientTape>> tapes;
  for (int i = 0; i < 40000; ++i) {
    tapes.push_back(std::make_unique<tf::GradientTape>());
    (void)tapes.back()->gradient(x, x);
  }
  return tapes;
}

/// The recorded chain of BM_ForwardRecorded beside 40,000 idle live tapes: an op visits only the
/// recording tape, so ns/op should match BM_ForwardRecorded (an op visiting every live tape would
/// take seconds).
void BM_ForwardRecordedBesideManyLiveTapes(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f), c = tf::constant(0.5f);
  const auto idle = idle_tapes(x);
  for (auto _ : state) {
    auto tape = std::make_unique<tf::GradientTape>();
    tape->watch(x);
    benchmark::DoNotOptimize(chain(x, c));
    state.PauseTiming();
    tape.reset();
    state.ResumeTiming();
  }
  per_op(state);
}
BENCHMARK(BM_ForwardRecordedBesideManyLiveTapes)->Unit(benchmark::kMillisecond);

/// Creating and destroying a tape while 40,000 others live, per tape ("ns/tape").
void BM_CreateAndDestroyTapeBesideManyLiveTapes(benchmark::State& state) {
  const tf::Tensor x = tf::constant(1.0f);
  const auto idle = idle_tapes(x);
  for (auto _ : state) {
    tf::GradientTape tape;
    benchmark::DoNotOptimize(&tape);
  }
  state.counters["ns/tape"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CreateAndDestroyTapeBesideManyLiveTapes)->Unit(benchmark::kMicrosecond);

/// 20,000 live tapes that each record one op, then destroyed newest first (order:0) or oldest
/// first (order:1): per tape, the time of creating, recording and destroying it ("ns/tape", the
/// same in both orders) and the heap it holds while alive ("bytes/tape", glibc's mallinfo2).
void BM_ManyOneOpTapes(benchmark::State& state) {
  const bool oldest_first = state.range(0) == 1;
  constexpr int kTapes = 20000;
  const tf::Tensor x = tf::constant(1.0f);
  double held = 0;
  for (auto _ : state) {
    std::vector<std::unique_ptr<tf::GradientTape>> tapes;
    tapes.reserve(kTapes);
    const std::size_t before = mallinfo2().uordblks;
    for (int i = 0; i < kTapes; ++i) {
      tapes.push_back(std::make_unique<tf::GradientTape>());
      tapes.back()->watch(x);
      benchmark::DoNotOptimize(x * x);
    }
    held = static_cast<double>(mallinfo2().uordblks - before) / kTapes;
    if (oldest_first) {
      for (auto& tape : tapes) tape.reset();
    } else {
      while (!tapes.empty()) tapes.pop_back();
    }
  }
  state.counters["ns/tape"] = benchmark::Counter(static_cast<double>(state.iterations()) * kTapes,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes/tape"] = held;
}
BENCHMARK(BM_ManyOneOpTapes)->ArgName("order")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
