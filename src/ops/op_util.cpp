#include "ops/op_util.h"

#include "tapeflow/ops/array.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::ops {

std::string describe(const Tensor& t) {
  return fmt::format("{} tensor of shape {}", dtype_name(t.dtype()), t.shape().to_string());
}

void require_defined(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError, "[{}] '{}' is an undefined (default-constructed) Tensor", op,
                   arg);
}

void require_floating(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] '{}' must be a float32 or float64 tensor, got a {}", op, arg, describe(x));
}

void require_numeric(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(x.dtype() != DType::Bool, InvalidArgumentError,
                   "[{}] '{}' must be a numeric tensor, got a {}", op, arg, describe(x));
}

void require_same_dtype(const Tensor& x, const Tensor& y, std::string_view op) {
  TAPEFLOW_REQUIRE(x.dtype() == y.dtype(), InvalidArgumentError,
                   "[{}] both operands must have the same dtype (no implicit casting): x is a {}, y is a {}",
                   op, describe(x), describe(y));
}

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  // Axes where g has a dimension the target lacks or has as 1 were broadcast: sum them.
  const int lead = g.rank() - shape.rank();
  Axes axes;
  for (int i = 0; i < g.rank(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  Tensor summed = axes.empty() ? g : reduce_sum(g, axes, /*keepdims=*/true);
  const auto dims = shape.dims();
  return reshape(summed, std::vector<std::int64_t>(dims.begin(), dims.end()));
}

}  // namespace tapeflow::ops
