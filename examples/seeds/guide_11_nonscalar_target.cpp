// TensorFlow guide, Gradients of non-scalar targets: a non-scalar target gives the gradient of
// its sum.
//
//   x = tf.Variable(2.)
//   with tf.GradientTape() as tape:
//     y = x * [3., 4.]
//   print(tape.gradient(y, x).numpy())  -> 7.0

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x(2.f);
  tf::GradientTape tape;
  tf::Tensor y = x * tf::constant({3.f, 4.f});

  seeds::print(tape.gradient(y, x)->numpy());
}
