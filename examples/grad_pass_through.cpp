// grad_pass_through: the straight-through estimator. The forward pass runs a step that has no
// gradient (here rounding through an integer cast); the backward pass treats it as the identity.
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using In = std::vector<tf::Tensor>;

// Quantizes to steps of 0.5 (toward zero): the int32 cast carries no gradient.
In quantize(const In& in) { return {tf::cast(tf::cast(in[0] * 2.0f, tf::int32), tf::float32) / 2.0f}; }

int main() {
  tf::Tensor x = tf::constant({0.3f, -1.2f, 2.7f});
  tf::Tensor upstream = tf::constant({1.0f, 2.0f, 3.0f});
  {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor q = quantize({x})[0];
    std::cout << "quantized:         " << q.numpy() << "\n";
    std::cout << "plain gradient:    " << tape.gradient(tf::reduce_sum(q * upstream), x) << "\n";
  }
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor q = tf::grad_pass_through(quantize)({x})[0];
  std::cout << "straight-through:  " << q.numpy() << "\n";
  std::cout << "gradient:          " << tape.gradient(tf::reduce_sum(q * upstream), x)->numpy() << "\n";
}
