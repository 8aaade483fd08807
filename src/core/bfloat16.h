#pragma once
// Whole-tensor conversions between float32 and bfloat16: how ops that compute bfloat16 through
// float32 widen their inputs and round their results (docs/design/bfloat16.md, "How each op takes bfloat16").
// No tape, no validation beyond the dtype: kernels, not ops (the Cast op records).

#include <string_view>

#include "tapeflow/tensor.h"

namespace tapeflow::detail {

/// A float32 tensor holding `x`'s bfloat16 values exactly. `op` names allocation errors.
Tensor bfloat16_to_float32(const Tensor& x, std::string_view op);
/// A bfloat16 tensor holding `x`'s float32 values rounded to nearest even (NaN stays NaN).
Tensor float32_to_bfloat16(const Tensor& x, std::string_view op);
/// `x` widened to float32 if it is bfloat16, `x` itself otherwise.
Tensor widen_if_bfloat16(const Tensor& x, std::string_view op);

}  // namespace tapeflow::detail
