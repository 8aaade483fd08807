// Gradient-check rows for the nn family (see op_cases.h).

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_nn_cases(std::vector<OpCase>& c) {
  (void)c;
}

}  // namespace tapeflow::testing
