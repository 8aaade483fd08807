#include "tapeflow/nn/layer_normalization.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kLayerNorm = "LayerNormalization";

}  // namespace

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer(options.name), options_(std::move(options)) {
  TAPEFLOW_REQUIRE(!options_.axis.empty(), InvalidArgumentError,
                   "[{}] axis must name at least one axis to normalise over", kLayerNorm);
  TAPEFLOW_REQUIRE(std::isfinite(options_.epsilon) && options_.epsilon > 0.0, InvalidArgumentError,
                   "[{}] epsilon must be positive and finite, got {}", kLayerNorm, options_.epsilon);
}

const Variable& LayerNormalization::gamma() const {
  TAPEFLOW_REQUIRE(gamma_.has_value(), FailedPreconditionError, "[{}] layer '{}' has no gamma: {}",
                   kLayerNorm, name(), options_.scale ? "it is built by its first call" : "scale is false");
  return *gamma_;
}

const Variable& LayerNormalization::beta() const {
  TAPEFLOW_REQUIRE(beta_.has_value(), FailedPreconditionError, "[{}] layer '{}' has no beta: {}", kLayerNorm,
                   name(), options_.center ? "it is built by its first call" : "center is false");
  return *beta_;
}

Tensor LayerNormalization::call(const Tensor& input, bool /*training*/) {
  TAPEFLOW_REQUIRE(input.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kLayerNorm,
                   name());
  // A bfloat16 input (a mixed-precision model) is normalised in float32, as Keras does.
  const bool narrow = input.dtype() == DType::BFloat16;
  const Tensor x = narrow ? cast(input, DType::Float32) : input;
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] layer '{}' needs floating inputs, got shape {} and dtype {}", kLayerNorm, name(),
                   input.shape().to_string(), dtype_name(input.dtype()));
  const std::int64_t rank = x.rank();
  Axes axes;
  for (std::int64_t a : options_.axis) {
    const std::int64_t axis = a < 0 ? a + rank : a;
    TAPEFLOW_REQUIRE(axis >= 0 && axis < rank, InvalidArgumentError,
                     "[{}] layer '{}' normalises axis {}, which an input of shape {} (rank {}) does not have",
                     kLayerNorm, name(), a, x.shape().to_string(), rank);
    TAPEFLOW_REQUIRE(std::ranges::find(axes, axis) == axes.end(), InvalidArgumentError,
                     "[{}] layer '{}' was given axis {} twice (for an input of rank {})", kLayerNorm, name(),
                     a, rank);
    axes.push_back(axis);
  }
  std::ranges::sort(axes);
  // The parameters have the normalised dims; they broadcast through a shape with 1 elsewhere.
  std::vector<std::int64_t> param_dims, broadcast(static_cast<std::size_t>(rank), 1);
  std::int64_t count = 1;
  for (std::int64_t axis : axes) {
    param_dims.push_back(x.shape()[static_cast<int>(axis)]);
    broadcast[static_cast<std::size_t>(axis)] = param_dims.back();
    count *= param_dims.back();
  }
  TAPEFLOW_REQUIRE(
      count > 0, InvalidArgumentError,
      "[{}] layer '{}' has nothing to normalise over: the axes {} of an input of shape {} hold no "
      "elements",
      kLayerNorm, name(), fmt::join(options_.axis, ", "), x.shape().to_string());
  const Shape params{std::span<const std::int64_t>(param_dims)};
  if (!built_) {
    if (options_.scale)
      gamma_ = track(Variable(ones(params, x.dtype()), {.name = "gamma", .keras_style = true}));
    if (options_.center)
      beta_ = track(Variable(zeros(params, x.dtype()), {.name = "beta", .keras_style = true}));
    params_shape_ = params;
    params_dtype_ = x.dtype();
    built_ = true;
  }
  TAPEFLOW_REQUIRE(
      params == params_shape_ && x.dtype() == params_dtype_, InvalidArgumentError,
      "[{}] layer '{}' was built for {} inputs whose normalised dimensions are {}; got an input of "
      "shape {} and dtype {}",
      kLayerNorm, name(), dtype_name(params_dtype_), params_shape_.to_string(), x.shape().to_string(),
      dtype_name(input.dtype()));

  // Trailing axes (Keras's default, the last) take the fused op; any other set, the formula.
  if (axes.front() + static_cast<std::int64_t>(axes.size()) == rank) {  // sorted, distinct: they end last
    const Tensor y = nn::fused_layer_norm(x, gamma_ ? Tensor(*gamma_) : ones(params, x.dtype()),
                                          beta_ ? Tensor(*beta_) : zeros(params, x.dtype()), options_.epsilon,
                                          axes.front())
                         .y;
    return narrow ? cast(y, DType::BFloat16) : y;
  }
  const Tensor mean = reduce_mean(x, axes, /*keepdims=*/true);
  const Tensor centered = x - mean;
  const Tensor variance = reduce_mean(square(centered), axes, /*keepdims=*/true);
  Tensor y = centered * rsqrt(variance + options_.epsilon);
  if (gamma_) y = y * reshape(*gamma_, broadcast);
  if (beta_) y = y + reshape(*beta_, broadcast);
  return narrow ? cast(y, DType::BFloat16) : y;
}

}  // namespace tapeflow::layers
