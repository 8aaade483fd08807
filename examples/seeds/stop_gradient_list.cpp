// Article on tf.stop_gradient: a loss computed from a stopped tensor has no gradient with respect
// to the variables behind it.
//
//   # Create variables
//   x = tf.Variable([2.0, 3.0], trainable=True)
//   y = tf.Variable([1.0, 1.0], trainable=True)
//   # Compute a simple function
//   z = x * y + 3
//   # Prevent backpropagation beyond this point
//   z_no_grad = tf.stop_gradient(z)
//   # Compute the gradients
//   with tf.GradientTape() as tape:
//     loss = tf.reduce_sum((z_no_grad - 5) ** 2)
//   # Calculate the gradients of loss with respect to x and y
//   gradients = tape.gradient(loss, [x, y])
//   print(gradients)                    -> [None, None]
//
// (The article prints the list without showing its output; this is what TensorFlow prints.)

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  // Create variables
  tf::Variable x({2.0f, 3.0f}, {.trainable = true});
  tf::Variable y({1.0f, 1.0f}, {.trainable = true});

  // Compute a simple function
  tf::Tensor z = x * y + 3;
  // Prevent backpropagation beyond this point
  tf::Tensor z_no_grad = tf::stop_gradient(z);

  // Compute the gradients
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(tf::pow(z_no_grad - 5, 2));

  // Calculate the gradients of loss with respect to x and y
  // Companion lines (not in the seed): what explain() says, asked before gradient() consumes the tape.
  const std::string why_x = tf::debug::explain(tape, loss, x).to_string(),
                    why_y = tf::debug::explain(tape, loss, y).to_string();
  std::vector<tf::Gradient> gradients = tape.gradient(loss, {x, y});
  seeds::print(gradients);
  std::cout << "explain: " << why_x << "\n";
  std::cout << "explain: " << why_y << "\n";
}
