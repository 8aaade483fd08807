#pragma once
// An op whose gradient function must never run: tests put it behind a cut (stop_gradient, a
// no_gradient op, an integer cast, a variable assignment) and check that nothing calls it.

#include <stdexcept>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// Identity recorded as one CustomGradient op whose gradient function counts its calls in
/// `calls` and throws std::logic_error.
inline Tensor identity_with_forbidden_gradient(const Tensor& x, int& calls) {
  return custom_gradient({x}, [&calls](const std::vector<Tensor>& in) {
    return CustomGradientResult{{identity(in[0])},
                                [&calls](const std::vector<Tensor>&, const std::vector<Variable>&) -> Grads {
                                  ++calls;
                                  throw std::logic_error("a gradient function behind a cut ran");
                                }};
  })[0];
}

}  // namespace tapeflow::testing
