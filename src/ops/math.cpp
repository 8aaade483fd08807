// The math family's registration: one line per file of the family.

#include "autodiff/op_def.h"
#include "ops/families.h"

namespace tapeflow::ops {
void register_binary_arithmetic_ops(autodiff::Registry& r);  // math_binary.cpp
void register_unary_math_ops(autodiff::Registry& r);         // math_unary.cpp
void register_compare_ops(autodiff::Registry& r);            // math_compare.cpp
void register_gradient_control_ops(autodiff::Registry& r);   // gradient_control.cpp
}  // namespace tapeflow::ops

namespace tapeflow::autodiff {
void register_math_ops(Registry& r) {
  ops::register_binary_arithmetic_ops(r);
  ops::register_unary_math_ops(r);
  ops::register_compare_ops(r);
  ops::register_gradient_control_ops(r);
}
}  // namespace tapeflow::autodiff
