// Jacobians: the full Jacobian of a layer, and per-example Jacobians of a batch.
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant({1.f, 2.f});
  tf::Variable w(tf::constant({{1.f, -1.f}, {0.5f, 2.f}, {0.f, 1.f}}));  // (3, 2)
  {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reshape(tf::matmul(w, tf::reshape(x, {2, 1})), {3}) * 2.f;  // y = 2 W x
    std::cout << "dy/dx =\n" << tf::numpy_str(*tape.jacobian(y, x)) << "\n";       // 2 W, shape (3, 2)
  }
  tf::Tensor batch = tf::constant({{1.f, 2.f}, {3.f, 4.f}});  // 2 examples of 2 features
  tf::GradientTape tape;
  tape.watch(batch);
  tf::Tensor y = batch * batch;  // example i depends on row i only
  std::cout << "per-example Jacobians =\n" << tf::numpy_str(*tape.batch_jacobian(y, batch)) << "\n";
}
