// Debugging gradients: why a gradient is None or zero (tf::debug::explain) and the check of
// every variable's gradient before a training run (tf::debug::gradient_report). The README's
// "Debugging gradients" section shows this program's output, checked by its golden test.

#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main() {
  // A two-layer network whose first layer is dead: every pre-activation is negative.
  tf::Variable w1(tf::constant({{0.5f, -1.0f}, {1.5f, 2.0f}}), {.name = "w1"});
  tf::Variable b1(tf::constant({-10.0f, -10.0f}), {.name = "b1"});
  tf::Variable w2(tf::constant({{1.0f}, {-1.0f}}), {.name = "w2"});
  tf::Variable b2(tf::constant({0.5f}), {.name = "b2"});
  tf::Variable scale(2.0f, {.name = "scale", .trainable = false});
  const tf::Tensor x = tf::constant({{1.0f, 2.0f}});

  tf::GradientTape tape({.persistent = true});
  tf::Tensor hidden = tf::nn::relu(tf::matmul(x, w1) + b1);
  tf::Tensor loss = tf::reduce_sum(tf::square(tf::matmul(hidden, w2) + b2)) * scale;
  // Rounding through int32 cuts the path.
  tf::Tensor rounded = tf::reduce_sum(tf::cast(tf::cast(tf::matmul(x, w1), tf::int32), tf::float32));

  std::cout << "explain(loss, b2):    " << tf::debug::explain(tape, loss, b2).to_string() << "\n";
  std::cout << "explain(loss, w1):    " << tf::debug::explain(tape, loss, w1).to_string() << "\n";
  std::cout << "explain(loss, scale): " << tf::debug::explain(tape, loss, scale).to_string() << "\n";
  std::cout << "explain(rounded, w1): " << tf::debug::explain(tape, rounded, w1).to_string() << "\n";

  // A stateful update is not differentiable: y reads x1 after the assignment.
  tf::Variable x0(3.0f, {.name = "x0"});
  tf::Variable x1(0.0f, {.name = "x1"});
  {
    tf::GradientTape t;
    x1.assign_add(x0);
    tf::Tensor y = tf::pow(x1, 2);
    std::cout << "explain(y, x0):       " << tf::debug::explain(t, y, x0).to_string() << "\n";
  }

  std::cout << "\ngradient_report(loss, {w1, b1, w2, b2, scale}):\n"
            << tf::debug::gradient_report(tape, loss, {w1, b1, w2, b2, scale}).to_string();
}
