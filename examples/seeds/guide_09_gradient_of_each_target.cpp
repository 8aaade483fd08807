// TensorFlow guide, Gradients of non-scalar targets: a persistent tape gives one gradient per
// target.
//
//   x = tf.Variable(2.0)
//   with tf.GradientTape(persistent=True) as tape:
//     y0 = x**2
//     y1 = 1 / x
//   print(tape.gradient(y0, x).numpy())  -> 4.0
//   print(tape.gradient(y1, x).numpy())  -> -0.25

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x(2.0f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y0 = tf::pow(x, 2);
  tf::Tensor y1 = 1 / x;

  seeds::print(tape.gradient(y0, x)->numpy());
  seeds::print(tape.gradient(y1, x)->numpy());
}
