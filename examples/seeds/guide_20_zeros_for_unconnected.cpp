// TensorFlow guide, Zeros instead of None: unconnected_gradients=ZERO returns zeros of the
// source's shape.
//
//   x = tf.Variable([2., 2.])
//   y = tf.Variable(3.)
//   with tf.GradientTape() as tape:
//     z = y**2
//   print(tape.gradient(z, x, unconnected_gradients=tf.UnconnectedGradients.ZERO))
//                                       -> tf.Tensor([0. 0.], shape=(2,), dtype=float32)

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x({2.f, 2.f});
  tf::Variable y(3.f);

  tf::GradientTape tape;
  tf::Tensor z = tf::pow(y, 2);

  seeds::print(tape.gradient(z, x, tf::UnconnectedGradients::Zero));
}
