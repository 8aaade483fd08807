// Gradient-check rows for the array family (see op_cases.h).

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_array_cases(std::vector<OpCase>& c) {
  using In = std::vector<Tensor>;
  c.push_back({"Reshape", {{{6}}, {{2, 3}}, {{1, 0, 3}}}, [](const In& x) { return reshape(x[0], {-1, 3}) * 1.5; }});
  c.push_back({"BroadcastTo", {{{}}, {{3}}, {{1, 3}}, {{2, 1}}},
               [](const In& x) { return broadcast_to(x[0], Shape{2, 3}); }});
}

}  // namespace tapeflow::testing
