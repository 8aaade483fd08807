// Gradient-check rows for the reduce family (see op_cases.h).

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_reduce_cases(std::vector<OpCase>& c) {
  using In = std::vector<Tensor>;
  c.push_back({"Sum", {{{}}, {{4}}, {{2, 3}}, {{0}}, {{1, 0, 3}}}, [](const In& x) { return reduce_sum(x[0]); }});
  c.push_back({"Sum", {{{2, 3, 4}}, {{2, 1, 3}}}, [](const In& x) { return reduce_sum(x[0], {0, 2}, true); }});
}

}  // namespace tapeflow::testing
