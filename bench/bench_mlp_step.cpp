// One training step of the MLP of bench/compare's MLP row (784-512-512-10, batch 256, ReLU,
// sparse softmax cross-entropy, SGD), one thread: the step as apply_gradients(tape.gradient(...))
// and fused into the backward pass (Optimizer::minimize). Both leave the same variables; this
// measures what the fusion costs or saves in time (its memory is bench/compare's workload 5b).

#include <benchmark/benchmark.h>

#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr std::int64_t kB = 256, kIn = 784, kH = 512, kOut = 10;

struct Mlp {
  std::vector<tf::Variable> vars = {tf::Variable(tf::random::normal({kIn, kH}, 0, 0.05, tf::float32, 11)),
                                    tf::Variable(tf::zeros({kH})),
                                    tf::Variable(tf::random::normal({kH, kH}, 0, 0.05, tf::float32, 12)),
                                    tf::Variable(tf::zeros({kH})),
                                    tf::Variable(tf::random::normal({kH, kOut}, 0, 0.05, tf::float32, 13)),
                                    tf::Variable(tf::zeros({kOut}))};
  tf::Tensor x = tf::random::uniform({kB, kIn}, 0, 1, tf::float32, 14);
  tf::Tensor labels = [] {
    std::vector<std::int32_t> lab(kB);
    for (std::int64_t i = 0; i < kB; ++i)
      lab[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % kOut);
    return tf::constant(lab, tf::Shape{kB});
  }();
  tf::Tensor loss() const {
    tf::Tensor h = tf::nn::relu(tf::matmul(x, vars[0].read_value()) + vars[1].read_value());
    h = tf::nn::relu(tf::matmul(h, vars[2].read_value()) + vars[3].read_value());
    const tf::Tensor logits = tf::matmul(h, vars[4].read_value()) + vars[5].read_value();
    return tf::losses::sparse_categorical_crossentropy(labels, logits, true);
  }
};

/// Times `step(model, optimizer)` on one thread.
template <class Step>
void time_steps(benchmark::State& state, Step step) {
  tf::set_num_threads(1);
  Mlp m;
  tf::optimizers::SGD sgd(0.01);
  for (auto _ : state) step(m, sgd);
}

void BM_MlpStep(benchmark::State& state) {
  time_steps(state, [](Mlp& m, tf::optimizers::SGD& sgd) {
    tf::GradientTape tape;
    const tf::Tensor loss = m.loss();
    sgd.apply_gradients(tape.gradient(loss, m.vars), m.vars);
  });
}
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMillisecond);

void BM_MlpStepFused(benchmark::State& state) {
  time_steps(state, [](Mlp& m, tf::optimizers::SGD& sgd) {
    tf::GradientTape tape;
    sgd.minimize(m.loss(), m.vars, tape);
  });
}
BENCHMARK(BM_MlpStepFused)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
