// recompute_grad: the tape keeps only a block's inputs and recomputes it during backward.
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using In = std::vector<tf::Tensor>;

In deep_block(const In& in) {
  tf::Tensor h = in[0];
  for (int i = 0; i < 50; ++i) h = tf::tanh(h) * 0.9f + h * 0.1f;
  return {h};
}

int main() {
  tf::Tensor x = tf::random::normal({10000}, 0, 1, tf::float32, 1);
  for (bool recompute : {false, true}) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reduce_sum(recompute ? tf::recompute_grad(deep_block)({x})[0] : deep_block({x})[0]);
    std::cout << (recompute ? "recompute_grad: " : "plain:          ") << tape.saved_bytes()
              << " bytes held, ";
    std::cout << "gradient sum " << tf::numpy_str(tf::reduce_sum(*tape.gradient(y, x))) << "\n";
  }
}
