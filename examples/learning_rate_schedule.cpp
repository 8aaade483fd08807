// A learning-rate schedule in place of a number, as in Keras: the optimizer computes the rate from
// its step count at each update, also inside a training step traced once with tf::function. Here
// a linear warm-up to 0.05 over 20 steps, then a cosine decay to a tenth of it over 180 steps,
// fitting y = 3x - 1 with Adam.
#include <cstdio>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace schedules = tf::optimizers::schedules;

int main() {
  const schedules::CosineDecay schedule(0.0, 180, {.alpha = 0.1, .warmup_steps = 20, .warmup_target = 0.05});
  for (std::int64_t step : {0, 10, 20, 110, 200, 300})
    std::printf("rate at step %3lld: %.4f\n", static_cast<long long>(step), schedule.at(step));

  const tf::Tensor x = tf::random::normal({64, 1}, 0, 1, tf::float32, 1);
  const tf::Tensor y = x * 3.0f - 1.0f;
  tf::layers::Dense line(1, {.seed = 2});
  line(x);  // builds the kernel and bias
  const std::vector<tf::Variable> vars = line.trainable_variables();
  tf::optimizers::Adam opt(schedule);

  // The whole step (forward, gradient, update) is one graph; the rate is computed in it from
  // opt.iterations() at every call, so the schedule goes on although the C++ ran once.
  auto train_step = tf::function([&](const tf::Tensor& features, const tf::Tensor& targets) {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::losses::mean_squared_error(targets, line(features));
    opt.minimize(loss, vars, tape);
    return loss;
  });
  for (int step = 1; step <= 200; ++step) {
    const float loss = train_step(x, y).item<float>();
    if (step == 1 || step % 50 == 0)
      std::printf("step %3d: loss %.4f, next rate %.4f\n", step, loss, opt.learning_rate());
  }
  std::printf("traces: %d\n", train_step.stats().traces);
  std::printf("kernel %.3f, bias %.3f\n", line.kernel().value().item<float>(),
              line.bias().value().item<float>());
}
