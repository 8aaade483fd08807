// conv2d forward and forward + backward (both gradient ops) on the two convolutions of the
// Fashion-MNIST CNN at batch 64, float32, SAME padding, stride 1:
//   conv1: (64, 28, 28, 1) * (3, 3, 1, 32)      conv2: (64, 14, 14, 32) * (3, 3, 32, 64)
// Beside each, the GEMM the forward pass reduces to (tf::matmul, i.e. OpenBLAS, of an im2col-sized
// (64 * oh * ow, 9 * in_ch) matrix by the filters), so the ratio shows what im2col costs.
// "GFLOP" is a rate over the forward multiply-adds (2 * rows * patch * out_ch per pass; the
// backward pass does twice that again), per second of wall time (OpenBLAS and parallel_for use
// several threads).
//
//   ./build-bench/bench/bench_conv

#include <benchmark/benchmark.h>

#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

struct ConvShape {
  std::int64_t n, h, w, c, oc;
};
const ConvShape kConv1{64, 28, 28, 1, 32};
const ConvShape kConv2{64, 14, 14, 32, 64};

std::vector<float> values(std::int64_t count, int salt) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 7 + salt) % 17) - 8) / 8.f;
  return v;
}

double forward_flops(const ConvShape& s) {
  return 2.0 * static_cast<double>(s.n * s.h * s.w * 9 * s.c * s.oc);
}

void set_flops(benchmark::State& state, const ConvShape& s, double passes) {
  state.counters["GFLOP"] =
      benchmark::Counter(1e-9 * passes * forward_flops(s), benchmark::Counter::kIsIterationInvariantRate);
}

void conv_forward(benchmark::State& state, ConvShape s) {
  const tf::Tensor x = tf::constant(values(s.n * s.h * s.w * s.c, 1), tf::Shape{s.n, s.h, s.w, s.c});
  const tf::Tensor f = tf::constant(values(9 * s.c * s.oc, 2), tf::Shape{3, 3, s.c, s.oc});
  for (auto _ : state) {
    tf::Tensor y = tf::nn::conv2d(x, f, {1, 1}, "SAME");
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_flops(state, s, 1);
}

void conv_forward_backward(benchmark::State& state, ConvShape s) {
  const tf::Tensor x = tf::constant(values(s.n * s.h * s.w * s.c, 1), tf::Shape{s.n, s.h, s.w, s.c});
  const tf::Tensor f = tf::constant(values(9 * s.c * s.oc, 2), tf::Shape{3, 3, s.c, s.oc});
  const tf::Tensor dy = tf::constant(values(s.n * s.h * s.w * s.oc, 3), tf::Shape{s.n, s.h, s.w, s.oc});
  for (auto _ : state) {
    tf::GradientTape tape;
    tape.watch(x);
    tape.watch(f);
    const tf::Tensor y = tf::nn::conv2d(x, f, {1, 1}, "SAME");
    auto g = tape.gradient(y, {x, f}, {dy});
    benchmark::DoNotOptimize(g[0]->raw_data());
    benchmark::DoNotOptimize(g[1]->raw_data());
  }
  set_flops(state, s, 3);
}

void matmul_baseline(benchmark::State& state, ConvShape s) {
  const std::int64_t rows = s.n * s.h * s.w, patch = 9 * s.c;
  const tf::Tensor a = tf::constant(values(rows * patch, 1), tf::Shape{rows, patch});
  const tf::Tensor b = tf::constant(values(patch * s.oc, 2), tf::Shape{patch, s.oc});
  for (auto _ : state) {
    tf::Tensor c = tf::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(state, s, 1);
}

}  // namespace

BENCHMARK_CAPTURE(conv_forward, conv1_64x28x28x1_3x3x32, kConv1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(matmul_baseline, conv1_64x28x28x1_3x3x32, kConv1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(conv_forward_backward, conv1_64x28x28x1_3x3x32, kConv1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(conv_forward, conv2_64x14x14x32_3x3x64, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(matmul_baseline, conv2_64x14x14x32_3x3x64, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(conv_forward_backward, conv2_64x14x14x32_3x3x64, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
