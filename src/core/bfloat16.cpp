#include "core/bfloat16.h"

#include "core/check.h"
#include "core/tensor_impl.h"
#include "kernels/cpu/elementwise.h"

namespace tapeflow::detail {

Tensor bfloat16_to_float32(const Tensor& x, std::string_view op) {
  TAPEFLOW_ASSERT(x.dtype() == DType::BFloat16, "[{}] widening a {} tensor", op, dtype_name(x.dtype()));
  Tensor out = empty(x.shape(), DType::Float32, op);
  cpu::map(x.values<bfloat16_t>().data(), mutable_data<float>(out), x.num_elements(),
           [](bfloat16_t v) { return static_cast<float>(v); });
  return out;
}

Tensor widen_if_bfloat16(const Tensor& x, std::string_view op) {
  return x.dtype() == DType::BFloat16 ? bfloat16_to_float32(x, op) : x;
}

Tensor float32_to_bfloat16(const Tensor& x, std::string_view op) {
  TAPEFLOW_ASSERT(x.dtype() == DType::Float32, "[{}] rounding a {} tensor", op, dtype_name(x.dtype()));
  Tensor out = empty(x.shape(), DType::BFloat16, op);
  cpu::map(x.values<float>().data(), mutable_data<bfloat16_t>(out), x.num_elements(),
           [](float v) { return bfloat16_t(v); });
  return out;
}

}  // namespace tapeflow::detail
