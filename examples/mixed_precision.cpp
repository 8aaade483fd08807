// Mixed precision as in Keras: layers compute in bfloat16 while the variables, the loss and the
// optimizer stay float32; a LossScaleOptimizer skips the steps whose gradients overflow, and
// counts them. The example starts from a scale so large that the first steps overflow.
#include <cstdint>
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main() {
  std::cout << "bfloat16(1.1) = " << tf::cast(tf::constant(1.1f), tf::bfloat16) << "\n";

  tf::mixed_precision::set_global_policy("mixed_bfloat16");
  tf::layers::Dense hidden(32, "relu", {.seed = 1});
  // The logits layer computes in float32 (Keras's advice): the softmax sees float32.
  tf::layers::Dense logits(2, {.seed = 2, .dtype_policy = tf::mixed_precision::Policy("float32")});
  tf::mixed_precision::set_global_policy(std::nullopt);

  // Two classes: whether the first feature is positive.
  const tf::Tensor x = tf::random::normal({256, 4}, 0, 1, tf::float32, 3);
  const tf::Tensor y =
      tf::reshape(tf::cast(tf::greater(tf::slice(x, {0, 0}, {256, 1}), tf::zeros({1})), tf::int32), {256});

  tf::optimizers::Adam adam(0.01);
  tf::mixed_precision::LossScaleOptimizer opt(adam, {.initial_scale = 1e38});
  const tf::Tensor h = hidden(x);
  std::cout << "hidden activations: " << tf::dtype_name(h.dtype())
            << ", kernel: " << tf::dtype_name(hidden.kernel().dtype()) << "\n";

  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    tf::GradientTape tape;
    // The summed loss (the mean times the batch): about 180 at first, which the initial scale
    // takes past float32's largest value.
    const tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(y, logits(hidden(x)), true) * 256.0;
    std::vector<tf::Variable> vars = hidden.trainable_variables();
    for (const auto& v : logits.trainable_variables()) vars.push_back(v);
    opt.minimize(loss, vars, tape);
    (step == 0 ? first : last) = loss.item<float>();
  }
  std::cout << "loss: " << (last < first / 4 ? "fell more than fourfold" : "did not fall") << "\n";
  std::cout << "steps skipped (gradients overflowed): " << opt.skipped_steps().value().item<std::int64_t>()
            << ", loss scale now " << opt.loss_scale().value().item<float>() << "\n";
}
