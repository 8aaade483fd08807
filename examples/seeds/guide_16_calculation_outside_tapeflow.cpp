// TensorFlow guide, Cases where gradient returns None, 2. Did calculations outside of TensorFlow:
//
//   x = tf.Variable([[1.0, 2.0],
//                    [3.0, 4.0]], dtype=tf.float32)
//   with tf.GradientTape() as tape:
//     x2 = x**2
//     # This step is calculated with NumPy
//     y = np.mean(x2, axis=0)
//     # Like most ops, reduce_mean will cast the NumPy array to a constant tensor
//     # using `tf.convert_to_tensor`.
//     y = tf.reduce_mean(y, axis=0)
//   print(tape.gradient(y, x))          -> None
//
// In C++ "outside tapeflow" means copying the values out into a std::vector, computing with
// them, and building a new constant from the result: the tape sees none of it.

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable x(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}}));

  tf::GradientTape tape;
  tf::Tensor x2 = tf::pow(x, 2);

  // This step is calculated in plain C++: the mean over axis 0, like np.mean(x2, axis=0).
  const std::int64_t rows = x2.shape()[0], cols = x2.shape()[1];
  std::vector<float> values = x2.to_vector<float>();
  std::vector<float> mean(static_cast<std::size_t>(cols), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      mean[static_cast<std::size_t>(c)] +=
          values[static_cast<std::size_t>(r * cols + c)] / static_cast<float>(rows);

  // Back into tapeflow as a new constant, with no history.
  tf::Tensor y = tf::reduce_mean(tf::constant(mean), 0);

  // Companion line (not in the seed): what explain() says, asked before gradient() consumes the tape.
  const std::string why = tf::debug::explain(tape, y, x).to_string();
  seeds::print(tape.gradient(y, x));
  std::cout << "explain: " << why << "\n";
}
