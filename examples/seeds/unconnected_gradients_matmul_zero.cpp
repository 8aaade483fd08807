// Article on debugging unconnected gradients: with ZERO, a variable the loss does not use gets a
// zero gradient of its own shape instead of None.
//
//   # Define a simple graph
//   x = tf.constant([[1.0, 2.0]])
//   y = tf.constant([[2.0], [3.0]])
//   z = tf.linalg.matmul(x, y)
//   # We will compute gradient for an unconnected variable
//   w = tf.Variable([[1.0], [1.0]])
//   # Calculate the gradient
//   with tf.GradientTape() as tape:
//     tape.watch(w)
//     loss = tf.reduce_sum(z)
//   # Attempt to calculate derivative w.r.t an unconnected variable
//   gradients = tape.gradient(loss, w, unconnected_gradients=tf.UnconnectedGradients.ZERO)
//   print("Gradient:", gradients.numpy())
//                                       -> Gradient: [[0.]
//                                           [0.]]

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  // Define a simple graph
  tf::Tensor x = tf::constant({{1.0f, 2.0f}});
  tf::Tensor y = tf::constant({{2.0f}, {3.0f}});
  tf::Tensor z = tf::matmul(x, y);

  // We will compute gradient for an unconnected variable
  tf::Variable w(tf::constant({{1.0f}, {1.0f}}));

  // Calculate the gradient
  tf::GradientTape tape;
  tape.watch(w);
  tf::Tensor loss = tf::reduce_sum(z);

  // Attempt to calculate derivative w.r.t an unconnected variable
  tf::Gradient gradients = tape.gradient(loss, w, tf::UnconnectedGradients::Zero);
  seeds::print("Gradient:", gradients->numpy());
}
