// The nn family's registration: one line per file of the family.

#include "autodiff/op_def.h"
#include "ops/families.h"

namespace tapeflow::ops {
void register_activation_ops(autodiff::Registry& r);  // nn_activations.cpp
void register_loss_ops(autodiff::Registry& r);        // nn_losses.cpp
void register_conv_ops(autodiff::Registry& r);        // nn_conv.cpp
}  // namespace tapeflow::ops

namespace tapeflow::autodiff {
void register_nn_ops(Registry& r) {
  ops::register_activation_ops(r);
  ops::register_loss_ops(r);
  ops::register_conv_ops(r);
}
}  // namespace tapeflow::autodiff
