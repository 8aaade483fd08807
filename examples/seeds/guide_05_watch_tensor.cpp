// TensorFlow guide, Controlling what the tape watches: watch() a tensor to get its gradient.
//
//   x = tf.constant(3.0)
//   with tf.GradientTape() as tape:
//     tape.watch(x)
//     y = x**2
//   # dy = 2x * dx
//   dy_dx = tape.gradient(y, x)
//   print(dy_dx.numpy())                -> 6.0

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::pow(x, 2);

  // dy = 2x * dx
  tf::Gradient dy_dx = tape.gradient(y, x);
  seeds::print(dy_dx->numpy());
}
