// TensorFlow guide, Cases where gradient returns None, 4. Took gradients through a stateful
// object:
//
//   x0 = tf.Variable(3.0)
//   x1 = tf.Variable(0.0)
//   with tf.GradientTape() as tape:
//     # Update x1 = x1 + x0.
//     x1.assign_add(x0)
//     # The tape starts recording from x1.
//     y = x1**2   # y = (x1 + x0)**2
//   # This doesn't work.
//   print(tape.gradient(y, x0))   #dy/dx0 = 2*(x1 + x0)
//                                       -> None

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x0(3.0f);
  tf::Variable x1(0.0f);

  tf::GradientTape tape;
  // Update x1 = x1 + x0.
  x1.assign_add(x0);
  // The tape starts recording from x1.
  tf::Tensor y = tf::pow(x1, 2);  // y = (x1 + x0)**2

  // Companion line (not in the seed): what explain() says, asked before gradient() consumes the tape.
  const std::string why = tf::debug::explain(tape, y, x0).to_string();
  // This doesn't work.
  seeds::print(tape.gradient(y, x0));  // dy/dx0 = 2*(x1 + x0)
  std::cout << "explain: " << why << "\n";
}
