// Pictures of gradient flow: a Dense-ReLU-Dense model with a frozen (stop_gradient) branch and a
// variable it never reads. Writes model.dot and, when Graphviz is installed, model.svg (into the
// directory given as the first argument, else the current one), then prints what the tape holds.
//
//   ./graph_svg /tmp && xdg-open /tmp/model.svg
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : ".";
  tf::Tensor x = tf::constant({{0.5f, -1.0f, 2.0f}, {1.5f, 0.25f, -0.5f}});  // 2 examples, 3 features
  tf::Tensor labels = tf::constant({{1.0f}, {-1.0f}});
  tf::Variable w1(
      tf::constant({{0.1f, -0.2f, 0.3f, 0.4f}, {0.5f, 0.6f, -0.7f, 0.8f}, {-0.9f, 1.0f, 1.1f, -1.2f}}),
      {.name = "dense1/kernel"});
  tf::Variable b1(tf::zeros({4}), {.name = "dense1/bias"});
  tf::Variable w2(tf::constant({{1.0f}, {-1.0f}, {0.5f}, {2.0f}}), {.name = "dense2/kernel"});
  tf::Variable b2(tf::zeros({1}), {.name = "dense2/bias"});
  // A pretrained embedding we do not want to train: its output enters through stop_gradient.
  tf::Variable pretrained(
      tf::constant({{0.2f, 0.2f, 0.2f, 0.2f}, {0.1f, 0.1f, 0.1f, 0.1f}, {0.3f, 0.3f, 0.3f, 0.3f}}),
      {.name = "pretrained"});
  tf::Variable head2(tf::zeros({4, 1}), {.name = "head2/kernel"});  // never read: gets no gradient

  tf::GradientTape tape({.persistent = true});
  tf::Tensor frozen = tf::stop_gradient(tf::matmul(x, pretrained));
  // One op per statement: C++ leaves the order of evaluating `matmul(x, w1) + b1`'s operands (and
  // so of the variable reads, which are recorded ops) to the compiler, and the record numbers
  // printed below would differ between GCC and Clang.
  tf::Tensor z1 = tf::matmul(x, w1);
  z1 = z1 + b1;
  tf::Tensor h = tf::nn::relu(z1 + frozen);
  tf::Tensor z2 = tf::matmul(h, w2);
  tf::Tensor prediction = z2 + b2;
  tf::Tensor loss = tf::reduce_mean(tf::square(prediction - labels));

  const std::vector<tf::Variable> variables = {w1, b1, w2, b2, pretrained, head2};
  const tf::GraphOptions options{.title = "Dense-ReLU-Dense: gradient of the loss"};
  {
    std::ofstream f(dir / "model.dot");
    f << tf::debug::to_dot(tape, loss, variables, options);
  }
  std::cout << "wrote " << (dir / "model.dot").filename().string() << "\n";
  if (tf::graphviz_available()) {
    tf::debug::write_svg((dir / "model.svg").string(), tape, loss, variables, options);
    std::cerr << "wrote " << (dir / "model.svg").string() << "\n";
  } else {
    std::cerr << "Graphviz's dot is not installed: render model.dot elsewhere (dot -Tsvg model.dot)\n";
  }
  std::cout << "\n" << tf::debug::memory_report(tape).to_string();
  return 0;
}
