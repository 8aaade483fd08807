// GFLOP/s of tf::matmul against plain cblas_sgemm on the same shapes, in the same run.
//
//   ./build-bench/bench/bench_matmul                       # all shapes
//   OPENBLAS_NUM_THREADS=1 ./build-bench/bench/bench_matmul  # single-threaded GEMM on both sides
//
// Shapes are m x k x n (a is (m, k), b is (k, n)): a 1024^3 square product and the three layers
// of a 784-512-512-10 MLP at batch 256. Both sides multiply float32 row-major matrices with
// OpenBLAS; tf::matmul also validates, allocates its output (the baseline writes into a buffer
// allocated once) and goes through the dispatch path, so the ratio is what that costs.
// The baseline runs OpenBLAS's own thread pool (OPENBLAS_NUM_THREADS, default: all cores; the
// count is printed in the context and in the summary table after the runs); tf::matmul runs
// OpenBLAS single-threaded on blocks of rows split over tapeflow's pool of as many threads
// (src/kernels/cpu/gemm.h), so each side sets OpenBLAS's count before it runs. The "GFLOP" column is a
// rate: "41.0/s" reads 41.0 GFLOP/s (2 m k n floating-point operations per product).

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

struct GemmShape {
  std::int64_t m, k, n;
};
const std::vector<GemmShape> kShapes = {{1024, 1024, 1024}, {256, 784, 512}, {256, 512, 512}, {256, 512, 10}};

std::vector<float> values(std::int64_t count, int salt) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 7 + salt) % 17) - 8) / 8.f;
  return v;
}

void set_flops(benchmark::State& state, const GemmShape& s) {
  state.counters["GFLOP"] = benchmark::Counter(2e-9 * static_cast<double>(s.m * s.k * s.n),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

/// OpenBLAS's thread count at start-up, for the baseline.
const int kBlasThreads = openblas_get_num_threads();

void tf_matmul(benchmark::State& state, GemmShape s) {
  tf::set_num_threads(kBlasThreads);  // OpenBLAS single-threaded, tapeflow's pool as wide
  const tf::Tensor a = tf::constant(values(s.m * s.k, 1), tf::Shape{s.m, s.k});
  const tf::Tensor b = tf::constant(values(s.k * s.n, 2), tf::Shape{s.k, s.n});
  for (auto _ : state) {
    tf::Tensor c = tf::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(state, s);
}

void cblas_sgemm_baseline(benchmark::State& state, GemmShape s) {
  const std::vector<float> a = values(s.m * s.k, 1), b = values(s.k * s.n, 2);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  const auto m = static_cast<blasint>(s.m), k = static_cast<blasint>(s.k), n = static_cast<blasint>(s.n);
  openblas_set_num_threads(kBlasThreads);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f,
                c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, s);
}

/// The console table, then a summary: GFLOP/s of both sides per shape and their ratio.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      // With --benchmark_repetitions keep the median; otherwise the single run.
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      const auto it = r.counters.find("GFLOP");
      if (it == r.counters.end()) continue;
      const std::string& name = r.run_name.function_name;  // "tf_matmul/256x784x512"
      const auto slash = name.find('/');
      const std::string shape = name.substr(slash + 1);
      if (!gflops_.contains(shape)) order_.push_back(shape);
      gflops_[shape][name.substr(0, slash)] = it->second.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nOpenBLAS threads: %d (OPENBLAS_NUM_THREADS=%s); %s\n", kBlasThreads,
                std::getenv("OPENBLAS_NUM_THREADS") ? std::getenv("OPENBLAS_NUM_THREADS") : "unset",
                openblas_get_config());
    std::printf("%-16s %14s %14s %8s\n", "m x k x n", "cblas GFLOP/s", "tf GFLOP/s", "tf/cblas");
    for (const std::string& shape : order_) {
      const auto& by = gflops_[shape];
      const auto c = by.find("cblas_sgemm"), t = by.find("tf_matmul");
      if (c == by.end() || t == by.end()) continue;
      std::printf("%-16s %14.1f %14.1f %8.2f\n", shape.c_str(), c->second, t->second, t->second / c->second);
    }
  }

 private:
  std::vector<std::string> order_;  // shapes in the order they ran
  std::map<std::string, std::map<std::string, double>> gflops_;
};

}  // namespace

int main(int argc, char** argv) {
  for (const GemmShape& s : kShapes) {
    const std::string label = std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
    benchmark::RegisterBenchmark(("cblas_sgemm/" + label).c_str(), cblas_sgemm_baseline, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("tf_matmul/" + label).c_str(), tf_matmul, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::AddCustomContext("openblas_threads", std::to_string(kBlasThreads));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
