// Elementwise kernels on 16M floats (64 MiB per array, far beyond the caches):
//   - libm against SLEEF's vector functions (AVX2 and AVX-512 widths) for exp, tanh and sin,
//     one thread, into a preallocated output: the choice behind src/kernels/cpu/vmath.h;
//   - tapeflow's kernels (vmath.h split by map_blocks) into a preallocated output, 1 and 2 threads;
//   - tapeflow's ops (allocation of the output included, as a user sees them), 1 and 2 threads;
//   - a STREAM triad a[i] = b[i] + s * c[i] at the same thread counts, measured in the same run:
//     every throughput is also reported as a fraction of that bandwidth ("of_triad").
// Bytes counted as STREAM counts them: each array read or written once (a unary op moves 8 bytes
// per float element, the triad 12).
//
//   build/bench/bench_elementwise --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Results and the machine they were taken on: docs/PERFORMANCE.md, "Elementwise kernels".

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__AVX2__)
#include <immintrin.h>
#include <sleef.h>
#undef CONST
#undef IMPORT
#endif

#include "core/parallel.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/vmath.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr std::int64_t kN = std::int64_t{16} << 20;

const std::vector<float>& inputs() {
  static const std::vector<float> x = [] {
    std::vector<float> v(static_cast<std::size_t>(kN));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-8.f, 8.f);
    for (float& e : v) e = u(rng);
    return v;
  }();
  return x;
}

void triad(float* a, const float* b, const float* c, float s) {
  tf::cpu::parallel_for(kN, tf::cpu::kParallelGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
  });
}

/// Triad bandwidth in bytes/s per thread count, measured once before the benchmarks run
/// (median of 7 runs after a warm-up).
std::map<int, double>& triad_bandwidth() {
  static std::map<int, double> bw;
  return bw;
}

void measure_triad(int threads) {
  tf::cpu::set_num_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(kN)), b(inputs()), c(inputs());
  triad(a.data(), b.data(), c.data(), 0.5f);
  std::vector<double> secs;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    triad(a.data(), b.data(), c.data(), 0.5f);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(secs.begin(), secs.begin() + 3, secs.end());
  triad_bandwidth()[threads] = 12.0 * static_cast<double>(kN) / secs[3];
}

/// Reports bytes/s and the fraction of the triad bandwidth at `threads`.
void report(benchmark::State& state, double bytes_per_element, int threads) {
  const double bytes = bytes_per_element * static_cast<double>(kN) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["of_triad"] =
      benchmark::Counter(bytes / triad_bandwidth()[threads], benchmark::Counter::kIsRate);
}

void BM_Triad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  tf::cpu::set_num_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(kN)), b(inputs()), c(inputs());
  for (auto _ : state) {
    triad(a.data(), b.data(), c.data(), 0.5f);
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  report(state, 12.0, threads);
}
BENCHMARK(BM_Triad)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- one thread, preallocated output: libm against SLEEF ---------------------------------------

template <class F>
void raw_loop(benchmark::State& state, F kernel) {
  std::vector<float> y(static_cast<std::size_t>(kN));
  const float* x = inputs().data();
  for (auto _ : state) {
    kernel(x, y.data(), kN);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report(state, 8.0, 1);
}

#define TAPEFLOW_BENCH_LIBM(fn)                                    \
  void BM_Libm_##fn(benchmark::State& state) {                     \
    raw_loop(state, [](const float* x, float* y, std::int64_t n) { \
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::fn(x[i]);   \
    });                                                            \
  }                                                                \
  BENCHMARK(BM_Libm_##fn)->UseRealTime()->Unit(benchmark::kMillisecond);
TAPEFLOW_BENCH_LIBM(exp)
TAPEFLOW_BENCH_LIBM(tanh)
TAPEFLOW_BENCH_LIBM(sin)

#if defined(__AVX2__) && defined(__FMA__)
#define TAPEFLOW_BENCH_SLEEF_AVX2(fn)                                            \
  void BM_SleefAvx2_##fn(benchmark::State& state) {                              \
    raw_loop(state, [](const float* x, float* y, std::int64_t n) {               \
      for (std::int64_t i = 0; i + 8 <= n; i += 8)                               \
        _mm256_storeu_ps(y + i, Sleef_##fn##f8_u10avx2(_mm256_loadu_ps(x + i))); \
    });                                                                          \
  }                                                                              \
  BENCHMARK(BM_SleefAvx2_##fn)->UseRealTime()->Unit(benchmark::kMillisecond);
TAPEFLOW_BENCH_SLEEF_AVX2(exp)
TAPEFLOW_BENCH_SLEEF_AVX2(tanh)
TAPEFLOW_BENCH_SLEEF_AVX2(sin)
#endif

#if defined(__AVX512F__)
#define TAPEFLOW_BENCH_SLEEF_AVX512(fn)                                              \
  void BM_SleefAvx512_##fn(benchmark::State& state) {                                \
    raw_loop(state, [](const float* x, float* y, std::int64_t n) {                   \
      for (std::int64_t i = 0; i + 16 <= n; i += 16)                                 \
        _mm512_storeu_ps(y + i, Sleef_##fn##f16_u10avx512f(_mm512_loadu_ps(x + i))); \
    });                                                                              \
  }                                                                                  \
  BENCHMARK(BM_SleefAvx512_##fn)->UseRealTime()->Unit(benchmark::kMillisecond);
TAPEFLOW_BENCH_SLEEF_AVX512(exp)
TAPEFLOW_BENCH_SLEEF_AVX512(tanh)
TAPEFLOW_BENCH_SLEEF_AVX512(sin)
#endif

// ---- tapeflow's kernels (vmath.h behind map_blocks), preallocated output, 1 and 2 threads ------

template <class F>
void kernel_loop(benchmark::State& state, F kernel) {
  const int threads = static_cast<int>(state.range(0));
  tf::cpu::set_num_threads(threads);
  std::vector<float> y(static_cast<std::size_t>(kN));
  const float* x = inputs().data();
  for (auto _ : state) {
    tf::cpu::map_blocks(x, y.data(), kN, kernel);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report(state, 8.0, threads);
}

#define TAPEFLOW_BENCH_KERNEL(fn)                                                                      \
  void BM_Kernel_##fn(benchmark::State& state) {                                                       \
    kernel_loop(state, [](const float* x, float* y, std::int64_t n) { tf::cpu::vmath::fn(x, y, n); }); \
  }                                                                                                    \
  BENCHMARK(BM_Kernel_##fn)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
TAPEFLOW_BENCH_KERNEL(exp)
TAPEFLOW_BENCH_KERNEL(tanh)
TAPEFLOW_BENCH_KERNEL(sin)

// The same exp kernel writing into a freshly allocated 64 MiB buffer each time, as an op does:
// the allocator hands back new pages (mmap) and every first write to a page faults.
void BM_KernelFreshOutput_exp(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  tf::cpu::set_num_threads(threads);
  const float* x = inputs().data();
  for (auto _ : state) {
    std::unique_ptr<float[]> y(new float[static_cast<std::size_t>(kN)]);
    tf::cpu::map_blocks(x, y.get(), kN,
                        [](const float* in, float* out, std::int64_t n) { tf::cpu::vmath::exp(in, out, n); });
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  report(state, 8.0, threads);
}
BENCHMARK(BM_KernelFreshOutput_exp)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#if defined(__linux__)
// The same with the fresh buffer backed by transparent huge pages (2 MiB: 32 faults, not 16384).
void BM_KernelFreshHugePageOutput_exp(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  tf::cpu::set_num_threads(threads);
  const float* x = inputs().data();
  constexpr std::size_t kBytes = static_cast<std::size_t>(kN) * sizeof(float);
  for (auto _ : state) {
    auto* y = static_cast<float*>(std::aligned_alloc(std::size_t{2} << 20, kBytes));
    madvise(y, kBytes, MADV_HUGEPAGE);
    tf::cpu::map_blocks(x, y, kN,
                        [](const float* in, float* out, std::int64_t n) { tf::cpu::vmath::exp(in, out, n); });
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
    std::free(y);
  }
  report(state, 8.0, threads);
}
BENCHMARK(BM_KernelFreshHugePageOutput_exp)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#endif

// ---- tapeflow ops, allocation of the output included -------------------------------------------

template <class Op>
void op_loop(benchmark::State& state, double bytes_per_element, Op op) {
  const int threads = static_cast<int>(state.range(0));
  tf::cpu::set_num_threads(threads);
  const tf::Tensor x = tf::constant(inputs(), tf::Shape{kN});  // uniform in [-8, 8]
  const tf::Tensor xp = tf::abs(x) + 0.5f;                     // positive, for sqrt and pow
  for (auto _ : state) {
    tf::Tensor y = op(x, xp);
    benchmark::DoNotOptimize(y.raw_data());
  }
  report(state, bytes_per_element, threads);
}

#define TAPEFLOW_BENCH_OP(name, bytes, expr)                                                                \
  void BM_Op_##name(benchmark::State& state) {                                                              \
    op_loop(state, bytes, []([[maybe_unused]] const tf::Tensor& x, [[maybe_unused]] const tf::Tensor& xp) { \
      return expr;                                                                                          \
    });                                                                                                     \
  }                                                                                                         \
  BENCHMARK(BM_Op_##name)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
TAPEFLOW_BENCH_OP(add, 12.0, x + xp)
TAPEFLOW_BENCH_OP(abs, 8.0, tf::abs(x))
TAPEFLOW_BENCH_OP(exp, 8.0, tf::exp(x))
TAPEFLOW_BENCH_OP(log, 8.0, tf::log(xp))
TAPEFLOW_BENCH_OP(tanh, 8.0, tf::tanh(x))
TAPEFLOW_BENCH_OP(sin, 8.0, tf::sin(x))
TAPEFLOW_BENCH_OP(sigmoid, 8.0, tf::sigmoid(x))
TAPEFLOW_BENCH_OP(softplus, 8.0, tf::softplus(x))
TAPEFLOW_BENCH_OP(sqrt, 8.0, tf::sqrt(xp))
TAPEFLOW_BENCH_OP(pow, 12.0, tf::pow(xp, x))

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (int threads : {1, 2}) measure_triad(threads);
  for (const auto& [threads, bw] : triad_bandwidth())
    benchmark::AddCustomContext("triad_GBps_threads_" + std::to_string(threads), std::to_string(bw / 1e9));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
