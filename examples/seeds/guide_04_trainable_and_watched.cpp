// TensorFlow guide, Controlling what the tape watches: only trainable variables are watched by
// default; a tensor is not, even one computed from a variable.
//
//   # A trainable variable
//   x0 = tf.Variable(3.0, name='x0')
//   # Not trainable
//   x1 = tf.Variable(3.0, name='x1', trainable=False)
//   # Not a Variable: A variable + tensor returns a tensor.
//   x2 = tf.Variable(2.0, name='x2') + 1.0
//   # Not a variable
//   x3 = tf.constant(3.0, name='x3')
//   with tf.GradientTape() as tape:
//     y = (x0**2) + (x1**2) + (x2**2)
//   grad = tape.gradient(y, [x0, x1, x2, x3])
//   for g in grad:
//     print(g)                          -> tf.Tensor(6.0, shape=(), dtype=float32)
//                                          None
//                                          None
//                                          None
//   [var.name for var in tape.watched_variables()]
//                                       -> ['x0:0']

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  // A trainable variable
  tf::Variable x0(3.0f, {.name = "x0"});
  // Not trainable
  tf::Variable x1(3.0f, {.name = "x1", .trainable = false});
  // Not a Variable: A variable + tensor returns a tensor.
  tf::Tensor x2 = tf::Variable(2.0f, {.name = "x2"}) + 1.0;
  // Not a variable (tapeflow's constants carry no name)
  tf::Tensor x3 = tf::constant(3.0f);

  tf::GradientTape tape;
  tf::Tensor y = tf::pow(x0, 2) + tf::pow(x1, 2) + tf::pow(x2, 2);

  // Companion lines (not in the seed): what explain() says about each None. explain() reads the
  // tape's records, so it runs before gradient() consumes the non-persistent tape.
  const std::vector<std::string> why = {tf::debug::explain(tape, y, x1).to_string(),
                                        tf::debug::explain(tape, y, x2).to_string(),
                                        tf::debug::explain(tape, y, x3).to_string()};

  std::vector<tf::Gradient> grad = tape.gradient(y, {x0, x1, x2, x3});
  for (const auto& g : grad) seeds::print(g);

  std::vector<std::string> names;
  for (const tf::Variable& var : tape.watched_variables()) names.push_back(var.name());
  seeds::display(names);

  for (const std::string& line : why) std::cout << "explain: " << line << "\n";
}
