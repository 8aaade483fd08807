// custom_gradient: a numerically stable gradient, and gradient clipping in the backward pass.
#include <iostream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using In = std::vector<tf::Tensor>;

// log(1 + e^x): the naive gradient e^x / (1 + e^x) is inf/inf = NaN for large x.
tf::Tensor log1pexp(const tf::Tensor& x) {
  return tf::custom_gradient({x}, [](const In& in) {
    tf::Tensor e = tf::exp(in[0]);
    return tf::CustomGradientResult{{tf::log(1 + e)}, [e](const In& dy, const std::vector<tf::Variable>&) {
                                      return tf::Grads{dy[0] * (1 - 1 / (1 + e))};
                                    }};
  })[0];
}

// The identity forward; gradients clipped to [-1, 1] backward.
tf::Tensor clip_gradient(const tf::Tensor& x) {
  return tf::custom_gradient({x}, [](const In& in) {
    return tf::CustomGradientResult{{tf::identity(in[0])},
                                    [](const In& dy, const std::vector<tf::Variable>&) {
                                      return tf::Grads{tf::clip_by_value(dy[0], -1.0, 1.0)};
                                    }};
  })[0];
}

int main() {
  tf::Tensor x = tf::constant(100.f);
  {
    tf::GradientTape tape;
    tape.watch(x);
    std::cout << "naive:  " << *tape.gradient(tf::log(1 + tf::exp(x)), x) << "\n";
  }
  {
    tf::GradientTape tape;
    tape.watch(x);
    std::cout << "stable: " << *tape.gradient(log1pexp(x), x) << "\n";
  }
  tf::Variable w(3.f);
  tf::GradientTape tape;
  // d(10 * clip_gradient(w))/dw: the upstream 10 is clipped to 1 on its way through.
  std::cout << "clipped: " << *tape.gradient(clip_gradient(w) * 10.f, w) << "\n";
}
