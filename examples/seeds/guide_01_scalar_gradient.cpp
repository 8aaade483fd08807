// TensorFlow guide "Introduction to gradients and automatic differentiation", Gradient tapes:
//
//   x = tf.Variable(3.0)
//   with tf.GradientTape() as tape:
//     y = x**2
//   # dy = 2x * dx
//   dy_dx = tape.gradient(y, x)
//   dy_dx.numpy()                       -> 6.0
//
// A C++ GradientTape records while it is alive, as the body of Python's `with` block does.

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::pow(x, 2);

  // dy = 2x * dx
  tf::Gradient dy_dx = tape.gradient(y, x);
  seeds::print(dy_dx->numpy());  // the notebook shows the NumPy scalar: 6.0
}
