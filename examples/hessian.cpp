// Second derivatives: a Hessian through nested tapes, and a Hessian-vector product with
// forward mode over reverse mode (one pass, no Hessian materialised).
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

tf::Tensor f(const tf::Tensor& x) {
  return tf::reduce_sum(x * x * x) + tf::reduce_sum(x) * tf::reduce_sum(x);
}

int main() {
  tf::Tensor x = tf::constant({1.0, 2.0});
  std::cout << "H =\n" << tf::numpy_str(tf::hessian(f, x)) << "\n";  // 6 diag(x) + 2

  tf::Tensor v = tf::constant({1.0, 0.0});
  tf::ForwardAccumulator acc;  // forward mode outside ...
  acc.watch(x, v);
  tf::Tensor g;
  {
    tf::GradientTape tape;  // ... reverse mode inside
    tape.watch(x);
    g = *tape.gradient(f(x), x);
  }
  std::cout << "H v = " << tf::numpy_str(*acc.jvp(g)) << "\n";
}
