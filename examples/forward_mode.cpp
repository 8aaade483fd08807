// Forward mode: Jacobian-vector products computed alongside the forward pass.
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant({0.f, 1.f, 2.f});
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant({1.f, 1.f, 1.f}));
  tf::Tensor y = tf::exp(x) * x;
  std::cout << "y     = " << y << "\n";
  std::cout << "J v   = " << *acc.jvp(y) << "\n";  // e^x (x + 1)
  std::cout << "other = " << (acc.jvp(tf::constant(1.f)) ? "a tangent" : "None") << "\n";
}
