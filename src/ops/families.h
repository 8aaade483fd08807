#pragma once
// The op families: the one list of them, owned by ops. Each family file registers its ops
// explicitly (no static self-registration a linker could drop); register_all calls every family
// below, in this order, with a Registrar (registrar.h), when autodiff's registry is first used. The ops
// autodiff defines itself (ReadVariableOp, CustomGradient, RecomputeGrad) are registered by autodiff, not
// here.

#include "ops/registrar.h"

namespace tapeflow::ops {

/// Registers every op family (src/ops/families.cpp); called once by autodiff's registry.
void register_all(autodiff::Registry& registry);

void register_binary_arithmetic_ops(Registrar& r);  // math_binary.cpp
void register_unary_math_ops(Registrar& r);         // math_unary.cpp
void register_compare_ops(Registrar& r);            // math_compare.cpp
void register_gradient_control_ops(Registrar& r);   // gradient_control.cpp
void register_reduce_ops(Registrar& r);             // reduce.cpp
void register_shape_ops(Registrar& r);              // array_shape.cpp
void register_join_ops(Registrar& r);               // array_join.cpp
void register_index_ops(Registrar& r);              // array_index.cpp
void register_tile_pad_ops(Registrar& r);           // array_tile_pad.cpp
void register_linalg_ops(Registrar& r);             // linalg.cpp
void register_matrix_ops(Registrar& r);             // matrix.cpp
void register_matrix_structure_ops(Registrar& r);   // matrix_structure.cpp, from register_matrix_ops
void register_decomposition_ops(Registrar& r);      // matrix_decompositions.cpp, from register_matrix_ops
void register_scan_ops(Registrar& r);               // scan.cpp
void register_sort_ops(Registrar& r);               // sort.cpp
void register_segment_ops(Registrar& r);            // segment.cpp
void register_activation_ops(Registrar& r);         // nn_activations.cpp
void register_loss_ops(Registrar& r);               // nn_losses.cpp
void register_conv_ops(Registrar& r);               // nn_conv.cpp
void register_batch_norm_ops(Registrar& r);         // nn_batch_norm.cpp
void register_layer_norm_ops(Registrar& r);         // nn_layer_norm.cpp
void register_image_ops(Registrar& r);              // image.cpp
void register_creation_ops(Registrar& r);           // creation.cpp
void register_collective_ops(Registrar& r);         // collective.cpp
void register_training_ops(Registrar& r);           // training.cpp

}  // namespace tapeflow::ops
