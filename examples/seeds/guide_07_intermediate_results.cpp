// TensorFlow guide, Intermediate results: the gradient with respect to a value computed inside
// the tape.
//
//   x = tf.constant(3.0)
//   with tf.GradientTape() as tape:
//     tape.watch(x)
//     y = x * x
//     z = y * y
//   # Use the tape to compute the gradient of z with respect to the
//   # intermediate value y.
//   # dz_dy = 2 * y and y = x ** 2 = 9
//   print(tape.gradient(z, y).numpy())  -> 18.0

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  tf::Tensor z = y * y;

  // Use the tape to compute the gradient of z with respect to the
  // intermediate value y.
  // dz_dy = 2 * y and y = x ** 2 = 9
  seeds::print(tape.gradient(z, y)->numpy());
}
