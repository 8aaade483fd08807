// The main demo: tensors, ops and a gradient, printed as TensorFlow prints them.

#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant({{1.f, 2.f}, {3.f, 4.f}});
  std::cout << "x = " << x << "\n";
  std::cout << "x * 2 + 1 = " << x * 2 + 1 << "\n";
  std::cout << "exp(x) = " << tf::exp(x) << "\n";
  std::cout << "reduce_sum(x, 0) = " << tf::reduce_sum(x, 0) << "\n";

  tf::Variable w(3.0f, {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor y = w * w;
  std::cout << "dy/dw at w = 3: " << *tape.gradient(y, w) << "\n";
}
