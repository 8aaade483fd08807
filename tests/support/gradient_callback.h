#pragma once
// An op whose gradient function runs the test's code first: tests use it to misuse the tape from
// inside its own backward pass (reset it, destroy it, differentiate again).

#include <functional>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// x * x, recorded as one CustomGradient op whose gradient function calls `inside` and then
/// returns the true gradient 2 x dy.
inline Tensor square_calling(const Tensor& x, std::function<void()> inside) {
  return custom_gradient({x}, [inside](const std::vector<Tensor>& in) {
    Tensor x0 = in[0];
    return CustomGradientResult{
        {x0 * x0}, [inside, x0](const std::vector<Tensor>& dy, const std::vector<Variable>&) -> Grads {
          inside();
          return {dy[0] * 2.0f * x0};
        }};
  })[0];
}

}  // namespace tapeflow::testing
