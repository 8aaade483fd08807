#include "tapeflow/nn/dense.h"

#include <cmath>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/linalg.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kDense = "Dense";

}  // namespace

Activation activation(std::string_view name) { return detail::named_activation(kDense, name); }

Dense::Dense(std::int64_t units, Activation activation, DenseOptions options)
    : Layer(options.name, options.dtype_policy),
      units_(units),
      activation_(std::move(activation)),
      options_(std::move(options)) {
  TAPEFLOW_REQUIRE(units > 0, InvalidArgumentError, "[{}] units must be positive, got {}", kDense, units);
  detail::check_initializer(kDense, options_.kernel_initializer);
}

Dense::Dense(std::int64_t units, std::string_view activation_name, DenseOptions options)
    : Dense(units, activation(activation_name), std::move(options)) {}

void Dense::build(const Shape& input_shape, DType dtype) {
  TAPEFLOW_REQUIRE(!built(), FailedPreconditionError, "[{}] layer '{}' is already built", kDense, name());
  TAPEFLOW_REQUIRE(input_shape.rank() >= 2, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank >= 2 (batch, ..., features), got shape {}", kDense,
                   name(), input_shape.to_string());
  TAPEFLOW_REQUIRE(is_floating(dtype), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs, got {}", kDense, name(),
                   dtype_name(dtype));
  const std::int64_t fan_in = input_shape[input_shape.rank() - 1];
  const std::uint64_t seed = options_.seed ? *options_.seed : detail::next_seed();
  kernel_ = track(Variable(detail::initial_kernel(kDense, options_.kernel_initializer, {fan_in, units_},
                                                  fan_in, units_, dtype, seed),
                           {.name = "kernel", .keras_style = true}));
  if (options_.use_bias)
    bias_ = track(Variable(zeros({units_}, dtype), {.name = "bias", .keras_style = true}));
}

Tensor Dense::operator()(const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kDense,
                   name());
  TAPEFLOW_REQUIRE(x.rank() >= 2, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank >= 2 (batch, ..., features), got shape {}", kDense,
                   name(), x.shape().to_string());
  if (!built()) build(x.shape(), variable_dtype(x.dtype()));
  const Shape& k = kernel_->shape();
  TAPEFLOW_REQUIRE(
      x.shape()[x.rank() - 1] == k[0], InvalidArgumentError,
      "[{}] layer '{}' was built for inputs of shape (..., {}) and has a kernel of shape {}; got "
      "an input of shape {}",
      kDense, name(), k[0], k.to_string(), x.shape().to_string());
  const Tensor xc = autocast(x);
  const DType compute = dtype_policy() ? dtype_policy()->compute_dtype() : kernel_->dtype();
  TAPEFLOW_REQUIRE(xc.dtype() == compute, InvalidArgumentError,
                   "[{}] layer '{}' was built for {} inputs; got an input of shape {} and dtype {}", kDense,
                   name(), dtype_name(compute), x.shape().to_string(), dtype_name(x.dtype()));
  Tensor y = matmul(xc, autocast(*kernel_));
  if (bias_) y = y + autocast(*bias_);
  return activation_ ? activation_(y) : y;
}

const Variable& Dense::kernel() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no kernel yet: it is built by its first call (or build())", kDense,
                   name());
  return *kernel_;
}

const Variable& Dense::bias() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no bias yet: it is built by its first call (or build())", kDense,
                   name());
  TAPEFLOW_REQUIRE(bias_.has_value(), FailedPreconditionError,
                   "[{}] layer '{}' was created with use_bias = false and has no bias", kDense, name());
  return *bias_;
}

}  // namespace tapeflow::layers
