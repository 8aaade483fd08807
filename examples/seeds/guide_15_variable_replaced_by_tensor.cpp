// TensorFlow guide, Cases where gradient returns None, 1. Replaced a variable with a tensor:
//
//   x = tf.Variable(2.0)
//   for epoch in range(2):
//     with tf.GradientTape() as tape:
//       y = x+1
//     print(type(x).__name__, ":", tape.gradient(y, x))
//     x = x + 1   # This should be `x.assign_add(1)`
//                                       -> ResourceVariable : tf.Tensor(1.0, shape=(), dtype=float32)
//                                          EagerTensor : None
//
// Python rebinds the name x from a Variable to a Tensor. A C++ name has one type, so x is a
// std::variant holding either; the second epoch sees a Tensor, which the tape does not watch.

#include <variant>

#include "py_print.h"

namespace tf = tapeflow;

namespace {

using VariableOrTensor = std::variant<tf::Variable, tf::Tensor>;

/// type(x).__name__ in TensorFlow's words.
std::string type_name(const VariableOrTensor& x) {
  return std::holds_alternative<tf::Variable>(x) ? "ResourceVariable" : "EagerTensor";
}

/// The value of x: reading a variable (recorded on an active tape), or the tensor itself.
tf::Tensor value(const VariableOrTensor& x) {
  return std::visit([](const auto& v) { return tf::Tensor(v); }, x);
}

}  // namespace

int main() {
  VariableOrTensor x = tf::Variable(2.0f);
  std::vector<std::string> why;  // companion lines (not in the seed): what explain() says each epoch
  for (int epoch = 0; epoch < 2; ++epoch) {
    tf::GradientTape tape;
    tf::Tensor y = value(x) + 1;
    why.push_back(
        std::visit([&](const auto& source) { return tf::debug::explain(tape, y, source).to_string(); }, x));
    tf::Gradient dy_dx = std::visit([&](const auto& source) { return tape.gradient(y, source); }, x);
    seeds::print(type_name(x), ":", dy_dx);
    x = value(x) + 1;  // This should be `x.assign_add(1)`
  }
  for (const std::string& line : why) std::cout << "explain: " << line << "\n";
}
