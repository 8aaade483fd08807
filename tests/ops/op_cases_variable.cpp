// Rows for ops defined outside the op families: gradient control, custom gradients, recomputation.

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_variable_cases(std::vector<OpCase>& c) {
  using In = std::vector<Tensor>;
  c.push_back({"Identity", {{{}}, {{3}}, {{0}}, {{1, 0, 3}}}, [](const In& x) { return identity(x[0]); }});
  // A custom gradient that is the true derivative must pass the check like any op.
  c.push_back({"CustomGradient", {{{}, {}}, {{3}, {3}}, {{2, 1}, {2, 1}}}, [](const In& x) {
                 return custom_gradient(x, [](const In& in) {
                   return CustomGradientResult{{in[0] * in[1] * in[1]},
                                               [in](const In& dy, const std::vector<Variable>&) -> Grads {
                                                 return {dy[0] * in[1] * in[1], dy[0] * in[0] * in[1] * 2};
                                               }};
                 })[0];
               }});
  c.push_back({"RecomputeGrad", {{{}}, {{4}}, {{0}}, {{2, 3}}}, [](const In& x) {
                 auto block =
                     recompute_grad([](const In& in) { return In{sin(in[0]) * in[0] + exp(in[0])}; });
                 return block(x)[0];
               }});
}

}  // namespace tapeflow::testing
