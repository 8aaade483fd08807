// TensorFlow guide, Gradients of non-scalar targets: for an element-wise op, the gradient of the
// sum is the derivative of each element.
//
//   x = tf.linspace(-10.0, 10.0, 200+1)
//   with tf.GradientTape() as tape:
//     tape.watch(x)
//     y = tf.nn.sigmoid(x)
//   dy_dx = tape.gradient(y, x)
//   plt.plot(x, y, label='y')
//   plt.plot(x, dy_dx, label='dy/dx')
//   plt.legend()
//   _ = plt.xlabel('x')
//
// The seed prints nothing; it draws a plot. This program writes the same plot as an SVG file
// (the path given as the first argument, or sigmoid_gradient.svg) and checks what the plot shows:
// dy/dx = y * (1 - y) at every point.

#include <cmath>

#include "py_print.h"
#include "svg_plot.h"

namespace tf = tapeflow;

namespace {
std::vector<double> to_double(const tf::Tensor& t) {
  auto v = t.values<float>();
  return {v.begin(), v.end()};
}
}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "sigmoid_gradient.svg";

  tf::Tensor x = tf::linspace(-10.0, 10.0, 200 + 1);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::sigmoid(x);
  tf::Gradient dy_dx = tape.gradient(y, x);

  seeds::LinePlot plt;
  plt.add("y", to_double(x), to_double(y));
  plt.add("dy/dx", to_double(x), to_double(*dy_dx));
  plt.xlabel = "x";
  plt.write(path);
  std::cerr << "wrote " << path << "\n";

  auto ys = y.values<float>(), ds = dy_dx->values<float>();
  for (std::size_t i = 0; i < ys.size(); ++i)
    if (std::abs(ds[i] - ys[i] * (1 - ys[i])) > 1e-6f) {
      std::cerr << "dy/dx[" << i << "] = " << ds[i] << " but y*(1-y) = " << ys[i] * (1 - ys[i]) << "\n";
      return 1;
    }
}
