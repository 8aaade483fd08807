// The array family's registration: one line per file of the family.

#include "autodiff/op_def.h"
#include "ops/families.h"

namespace tapeflow::ops {
void register_shape_ops(autodiff::Registry& r);     // array_shape.cpp
void register_join_ops(autodiff::Registry& r);      // array_join.cpp
void register_index_ops(autodiff::Registry& r);     // array_index.cpp
void register_tile_pad_ops(autodiff::Registry& r);  // array_tile_pad.cpp
}  // namespace tapeflow::ops

namespace tapeflow::autodiff {
void register_array_ops(Registry& r) {
  ops::register_shape_ops(r);
  ops::register_join_ops(r);
  ops::register_index_ops(r);
  ops::register_tile_pad_ops(r);
}
}  // namespace tapeflow::autodiff
