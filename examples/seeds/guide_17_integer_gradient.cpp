// TensorFlow guide, Cases where gradient returns None, 3. Took gradients through an integer:
//
//   x = tf.constant(10)
//   with tf.GradientTape() as g:
//     g.watch(x)
//     y = x * x
//   print(g.gradient(y, x))
//       stderr -> WARNING:tensorflow:The dtype of the watched tensor must be floating (e.g. tf.float32), got
//       tf.int32 stdout -> None
//
// tapeflow logs the same warning to stderr with its own logger name: "WARNING:tapeflow:...".

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant(10);  // int32, as in TensorFlow
  tf::GradientTape g;
  g.watch(x);
  tf::Tensor y = x * x;

  // Companion line (not in the seed): what explain() says, asked before gradient() consumes the tape.
  const std::string why = tf::debug::explain(g, y, x).to_string();
  seeds::print(g.gradient(y, x));
  std::cout << "explain: " << why << "\n";
}
