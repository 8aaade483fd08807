#include "ops/families.h"

namespace tapeflow::ops {

void register_all(autodiff::Registry& registry) {
  Registrar r(registry);
  register_binary_arithmetic_ops(r);
  register_unary_math_ops(r);
  register_compare_ops(r);
  register_gradient_control_ops(r);
  register_reduce_ops(r);
  register_shape_ops(r);
  register_join_ops(r);
  register_index_ops(r);
  register_tile_pad_ops(r);
  register_linalg_ops(r);
  register_matrix_ops(r);
  register_scan_ops(r);
  register_sort_ops(r);
  register_segment_ops(r);
  register_activation_ops(r);
  register_loss_ops(r);
  register_conv_ops(r);
  register_batch_norm_ops(r);
  register_layer_norm_ops(r);
  register_training_ops(r);
  register_image_ops(r);
  register_creation_ops(r);
  register_collective_ops(r);
}

}  // namespace tapeflow::ops
