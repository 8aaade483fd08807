// Matrix products.

#include "autodiff/op_def.h"
#include "ops/families.h"

namespace tapeflow::autodiff {
void register_linalg_ops(Registry&) {}
}  // namespace tapeflow::autodiff
