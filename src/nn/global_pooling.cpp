#include "tapeflow/nn/global_pooling.h"

#include "core/check.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::layers {

namespace {

/// The mean of `x` over `axes` for the layer `type` named `name`, whose inputs have rank `rank`.
Tensor global_mean(std::string_view type, const std::string& name, const Tensor& x, int rank,
                   const Axes& axes, bool keepdims) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", type, name);
  TAPEFLOW_REQUIRE(
      x.rank() == rank && is_floating(x.dtype()), InvalidArgumentError,
      "[{}] layer '{}' needs floating inputs of rank {} (channels last), got shape {} and dtype {}", type,
      name, rank, x.shape().to_string(), dtype_name(x.dtype()));
  std::int64_t pooled = 1;
  for (std::int64_t a : axes) pooled *= x.shape()[static_cast<int>(a)];
  TAPEFLOW_REQUIRE(pooled > 0, InvalidArgumentError,
                   "[{}] layer '{}' has nothing to average: its input of shape {} has no {}", type, name,
                   x.shape().to_string(), rank == 3 ? "steps" : "positions");
  return reduce_mean(x, axes, keepdims);
}

}  // namespace

GlobalAveragePooling1D::GlobalAveragePooling1D(GlobalPoolingOptions options)
    : Layer(options.name.empty() ? "global_average_pooling1d" : options.name), keepdims_(options.keepdims) {}

Tensor GlobalAveragePooling1D::call(const Tensor& x, bool /*training*/) {
  return global_mean("GlobalAveragePooling1D", name(), x, 3, {1}, keepdims_);
}

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalPoolingOptions options)
    : Layer(options.name.empty() ? "global_average_pooling2d" : options.name), keepdims_(options.keepdims) {}

Tensor GlobalAveragePooling2D::call(const Tensor& x, bool /*training*/) {
  return global_mean("GlobalAveragePooling2D", name(), x, 4, {1, 2}, keepdims_);
}

}  // namespace tapeflow::layers
