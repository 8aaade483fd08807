// TensorFlow guide, Controlling what the tape watches: with watch_accessed_variables=False only
// what is watched explicitly gets a gradient.
//
//   x0 = tf.Variable(0.0)
//   x1 = tf.Variable(10.0)
//   with tf.GradientTape(watch_accessed_variables=False) as tape:
//     tape.watch(x1)
//     y0 = tf.math.sin(x0)
//     y1 = tf.nn.softplus(x1)
//     y = y0 + y1
//     ys = tf.reduce_sum(y)
//   # dys/dx1 = exp(x1) / (1 + exp(x1)) = sigmoid(x1)
//   grad = tape.gradient(ys, {'x0': x0, 'x1': x1})
//   print('dy/dx0:', grad['x0'])        -> dy/dx0: None
//   print('dy/dx1:', grad['x1'].numpy())
//                                       -> dy/dx1: 0.9999546

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x0(0.0f);
  tf::Variable x1(10.0f);

  tf::GradientTape tape({.watch_accessed_variables = false});
  tape.watch(x1);
  tf::Tensor y0 = tf::sin(x0);
  tf::Tensor y1 = tf::softplus(x1);
  tf::Tensor y = y0 + y1;
  tf::Tensor ys = tf::reduce_sum(y);

  // dys/dx1 = exp(x1) / (1 + exp(x1)) = sigmoid(x1)
  // Companion line (not in the seed): what explain() says about the None, before gradient()
  // consumes the tape.
  const std::string why = tf::debug::explain(tape, ys, x0).to_string();

  std::map<std::string, tf::Gradient> grad = tape.gradient(ys, {{"x0", x0}, {"x1", x1}});
  seeds::print("dy/dx0:", grad["x0"]);
  seeds::print("dy/dx1:", grad["x1"]->numpy());
  std::cout << "explain: " << why << "\n";
}
