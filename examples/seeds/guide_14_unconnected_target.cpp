// TensorFlow guide, Cases where gradient returns None: a target not connected to the source.
//
//   x = tf.Variable(2.)
//   y = tf.Variable(3.)
//   with tf.GradientTape() as tape:
//     z = y * y
//   print(tape.gradient(z, x))          -> None

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x(2.f);
  tf::Variable y(3.f);
  tf::GradientTape tape;
  tf::Tensor z = y * y;

  // Companion line (not in the seed): what explain() says, asked before gradient() consumes the tape.
  const std::string why = tf::debug::explain(tape, z, x).to_string();
  seeds::print(tape.gradient(z, x));
  std::cout << "explain: " << why << "\n";
}
