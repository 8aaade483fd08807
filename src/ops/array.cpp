// The array family's registration: one line per file of the family.

#include "autodiff/op_def.h"
#include "ops/families.h"

namespace tapeflow::ops {
void register_shape_ops(autodiff::Registry& r);  // array_shape.cpp
}  // namespace tapeflow::ops

namespace tapeflow::autodiff {
void register_array_ops(Registry& r) { ops::register_shape_ops(r); }
}  // namespace tapeflow::autodiff
