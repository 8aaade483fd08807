// Gradient-check rows for the linalg family (see op_cases.h).

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_linalg_cases(std::vector<OpCase>& c) {
  (void)c;
}

}  // namespace tapeflow::testing
