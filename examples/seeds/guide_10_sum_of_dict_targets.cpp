// TensorFlow guide, Gradients of non-scalar targets: several targets give the gradient of their
// sum.
//
//   x = tf.Variable(2.0)
//   with tf.GradientTape() as tape:
//     y0 = x**2
//     y1 = 1 / x
//   print(tape.gradient({'y0': y0, 'y1': y1}, x).numpy())
//                                       -> 3.75

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y0 = tf::pow(x, 2);
  tf::Tensor y1 = 1 / x;

  seeds::print(tape.gradient({{"y0", y0}, {"y1", y1}}, x)->numpy());
}
