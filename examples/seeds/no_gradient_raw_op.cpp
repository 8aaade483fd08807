// Article on tf.no_gradient: an op declared non-differentiable gives no gradient (None) and no
// error.
//
//   # Example operation
//   @tf.function
//   def non_differentiable_op(x):
//     return tf.raw_ops.no_gradient(input=x, T=tf.float32)
//   # Attempting to compute the gradient
//   x = tf.Variable(3.0)
//   with tf.GradientTape() as tape:
//     y = non_differentiable_op(x)
//   grad = tape.gradient(y, x)
//   print("Gradient:", grad)            -> Gradient: None
//
// NOTE: TensorFlow itself has no tf.raw_ops.no_gradient (its tf.no_gradient declares an existing
// op type non-differentiable); tapeflow provides raw_ops::no_gradient, an identity registered
// with no_gradient("NoGradient"), so the article's program runs as written. tf.function has no
// counterpart here: everything runs eagerly.

#include "py_print.h"

namespace tf = tapeflow;

namespace {
// Example operation
tf::Tensor non_differentiable_op(const tf::Tensor& x) { return tf::raw_ops::no_gradient(x); }
}  // namespace

int main() {
  // Attempting to compute the gradient
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = non_differentiable_op(x);
  // Companion line (not in the seed): what explain() says, asked before gradient() consumes the tape.
  const std::string why = tf::debug::explain(tape, y, x).to_string();
  tf::Gradient grad = tape.gradient(y, x);

  seeds::print("Gradient:", grad);
  std::cout << "explain: " << why << "\n";
}
