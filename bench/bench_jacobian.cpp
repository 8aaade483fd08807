// Jacobians and Hessians: vectorised (stacked cotangents through one backward pass) against the
// row-by-row loop, both in the same run.
//   Jacobian of y = tanh(W x + b), x in R^256, W 256x256      (float32)
//   Hessian of f = sum(tanh(W x)), x in R^256                  (float32)

#include <benchmark/benchmark.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr std::int64_t kN = 256;

struct Problem {
  tf::Tensor w = tf::random::normal({kN, kN}, 0, 0.1, tf::float32, 1);
  tf::Tensor b = tf::random::normal({kN, 1}, 0, 0.1, tf::float32, 2);
  tf::Tensor x = tf::random::normal({kN, 1}, 0, 1, tf::float32, 3);
};

void BM_JacobianDense(benchmark::State& state) {
  const bool parallel = state.range(0) != 0;
  Problem p;
  for (auto _ : state) {
    tf::GradientTape tape;
    tape.watch(p.x);
    tf::Tensor y = tf::tanh(tf::matmul(p.w, p.x) + p.b);
    benchmark::DoNotOptimize(tape.jacobian(y, p.x, tf::UnconnectedGradients::None, parallel));
  }
  state.SetLabel(parallel ? "vectorised" : "row by row");
}
BENCHMARK(BM_JacobianDense)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_HessianTanh(benchmark::State& state) {
  const bool parallel = state.range(0) != 0;
  Problem p;
  for (auto _ : state) {
    tf::GradientTape outer;
    outer.watch(p.x);
    tf::Tensor g;
    {
      tf::GradientTape inner;
      inner.watch(p.x);
      g = *inner.gradient(tf::reduce_sum(tf::tanh(tf::matmul(p.w, p.x))), p.x);
    }
    benchmark::DoNotOptimize(outer.jacobian(g, p.x, tf::UnconnectedGradients::None, parallel));
  }
  state.SetLabel(parallel ? "vectorised" : "row by row");
}
BENCHMARK(BM_HessianTanh)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
