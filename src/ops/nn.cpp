// The nn family's registration.

#include "autodiff/op_def.h"
#include "ops/families.h"

namespace tapeflow::autodiff {
void register_nn_ops(Registry&) {}
}  // namespace tapeflow::autodiff
