// Rows for ops defined outside the op families (gradient control).

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_variable_cases(std::vector<OpCase>& c) {
  c.push_back({"Identity", {{{}}, {{3}}, {{0}}, {{1, 0, 3}}}, [](const std::vector<Tensor>& x) { return identity(x[0]); }});
}

}  // namespace tapeflow::testing
