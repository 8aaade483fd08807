// The C++ twin of bench/python/bench_python.py's MLP step (784-512-512-10, ReLU, softmax
// cross-entropy, SGD by assign_sub, the same initial weights' distribution and batch): what the
// Python front end's eager and tf.function steps are compared with. Prints the median wall time
// of a step, eager and through tf::function, in milliseconds.
//
//   bench_python_mlp_step [--batch B] [--steps N]      # defaults: 128, 10 (times 7 repeats)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr float kLearningRate = 0.01f;

struct Mlp {
  std::vector<tf::Variable> vars;
  tf::Tensor step(const tf::Tensor& x, const tf::Tensor& y) {
    tf::GradientTape tape;
    tf::Tensor h = x;
    for (std::size_t i = 0; i + 2 < vars.size(); i += 2)
      h = tf::nn::relu(tf::matmul(h, vars[i].read_value()) + vars[i + 1].read_value());
    const tf::Tensor logits = tf::matmul(h, vars[vars.size() - 2].read_value()) + vars.back().read_value();
    const tf::Tensor loss = tf::reduce_mean(tf::nn::sparse_softmax_cross_entropy_with_logits(y, logits));
    const std::vector<tf::Gradient> grads = tape.gradient(loss, vars);
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign_sub(*grads[i] * kLearningRate);
    return loss;
  }
};

template <class Step>
double median_step_ms(Step step, int steps) {
  step();  // warm-up (or the trace)
  std::vector<double> ms;
  for (int r = 0; r < 7; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
                 steps);
  }
  std::nth_element(ms.begin(), ms.begin() + 3, ms.end());
  return ms[3];
}

}  // namespace

int main(int argc, char** argv) {
  tf::restart_with_openblas_kernels_for_this_cpu(argv);
  std::int64_t batch = 128;
  int steps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--batch") == 0) batch = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
  }
  const std::vector<std::int64_t> sizes = {784, 512, 512, 10};
  Mlp mlp;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    mlp.vars.emplace_back(tf::random::normal({sizes[i], sizes[i + 1]}, 0, 0.05, tf::float32, 11 + i));
    mlp.vars.emplace_back(tf::zeros({sizes[i + 1]}));
  }
  const tf::Tensor x = tf::random::uniform({batch, sizes[0]}, 0, 1, tf::float32, 14);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  const tf::Tensor y = tf::constant(labels, tf::Shape{batch});
  auto traced = tf::function([&](const tf::Tensor& xs, const tf::Tensor& ys) { return mlp.step(xs, ys); });
  const double eager_ms = median_step_ms([&] { mlp.step(x, y); }, steps);
  const double traced_ms = median_step_ms([&] { traced(x, y); }, steps);
  std::printf("%.4f %.4f\n", eager_ms, traced_ms);
}
