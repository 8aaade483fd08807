#include "tapeflow/nn/conv2d.h"

#include <cctype>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kConv2D = "Conv2D";
/// The largest kernel size and stride nn::conv2d accepts (TensorFlow's are int32).
constexpr std::int64_t kMaxWindow = std::int64_t{1} << 31;

/// "valid"/"same" in any case -> "VALID"/"SAME"; anything else -> "".
std::string tf_padding(std::string_view padding) {
  std::string upper(padding);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper == "VALID" || upper == "SAME" ? upper : std::string();
}

}  // namespace

Conv2D::Conv2D(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, Activation activation,
               Conv2DOptions options)
    : Layer(options.name, options.dtype_policy),
      filters_(filters),
      kernel_size_(kernel_size),
      activation_(std::move(activation)),
      fused_activation_(activation_ ? "" : "linear"),
      options_(std::move(options)),
      tf_padding_(tf_padding(options_.padding)) {
  TAPEFLOW_REQUIRE(filters > 0, InvalidArgumentError, "[{}] filters must be positive, got {}", kConv2D,
                   filters);
  const auto in_range = [](std::array<std::int64_t, 2> v) {
    return v[0] > 0 && v[1] > 0 && v[0] <= kMaxWindow && v[1] <= kMaxWindow;
  };
  TAPEFLOW_REQUIRE(in_range(kernel_size), InvalidArgumentError,
                   "[{}] kernel_size must be positive and at most 2^31, got ({}, {})", kConv2D,
                   kernel_size[0], kernel_size[1]);
  TAPEFLOW_REQUIRE(in_range(options_.strides), InvalidArgumentError,
                   "[{}] strides must be positive and at most 2^31, got ({}, {})", kConv2D,
                   options_.strides[0], options_.strides[1]);
  TAPEFLOW_REQUIRE(in_range(options_.dilation_rate), InvalidArgumentError,
                   "[{}] dilation_rate must be positive and at most 2^31, got ({}, {})", kConv2D,
                   options_.dilation_rate[0], options_.dilation_rate[1]);
  TAPEFLOW_REQUIRE(options_.groups >= 1 && filters % options_.groups == 0, InvalidArgumentError,
                   "[{}] groups must be positive and divide filters ({}), got {}", kConv2D, filters,
                   options_.groups);
  TAPEFLOW_REQUIRE(!tf_padding_.empty(), InvalidArgumentError,
                   "[{}] unknown padding '{}'; expected \"valid\" or \"same\"", kConv2D, options_.padding);
  detail::check_initializer(kConv2D, options_.kernel_initializer);
}

Conv2D::Conv2D(std::int64_t filters, std::array<std::int64_t, 2> kernel_size,
               std::string_view activation_name, Conv2DOptions options)
    : Conv2D(filters, kernel_size, detail::named_activation(kConv2D, activation_name), std::move(options)) {
  if (activation_name == "relu") fused_activation_ = "relu";
}

void Conv2D::build(const Shape& input_shape, DType dtype) {
  TAPEFLOW_REQUIRE(!built(), FailedPreconditionError, "[{}] layer '{}' is already built", kConv2D, name());
  TAPEFLOW_REQUIRE(input_shape.rank() == 4, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 4 (batch, height, width, channels), got shape {}",
                   kConv2D, name(), input_shape.to_string());
  TAPEFLOW_REQUIRE(is_floating(dtype), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs, got {}", kConv2D, name(),
                   dtype_name(dtype));
  TAPEFLOW_REQUIRE(
      input_shape[3] % options_.groups == 0, InvalidArgumentError,
      "[{}] layer '{}' has {} groups, which must divide the input's {} channels (input shape {})", kConv2D,
      name(), options_.groups, input_shape[3], input_shape.to_string());
  const std::int64_t in = input_shape[3] / options_.groups;
  // Checked first (ResourceExhaustedError beyond 2^62 elements): then the fans below, products of
  // its dimensions, cannot overflow.
  const std::array<std::int64_t, 4> kernel_dims{kernel_size_[0], kernel_size_[1], in, filters_};
  const Shape kernel_shape = Shape::checked(kernel_dims, kConv2D);
  const std::int64_t area = kernel_size_[0] * kernel_size_[1];
  const std::uint64_t seed = options_.seed ? *options_.seed : detail::next_seed();
  kernel_ = track(Variable(detail::initial_kernel(kConv2D, options_.kernel_initializer, kernel_shape,
                                                  area * in, area * filters_, dtype, seed),
                           {.name = "kernel", .keras_style = true}));
  if (options_.use_bias)
    bias_ = track(Variable(zeros({filters_}, dtype), {.name = "bias", .keras_style = true}));
}

Tensor Conv2D::operator()(const Tensor& x) { return convolve(x, /*activate=*/true); }

Tensor Conv2D::convolve(const Tensor& x, bool activate) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kConv2D,
                   name());
  TAPEFLOW_REQUIRE(x.rank() == 4, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 4 (batch, height, width, channels), got shape {}",
                   kConv2D, name(), x.shape().to_string());
  if (!built()) build(x.shape(), variable_dtype(x.dtype()));
  const Shape& k = kernel_->shape();
  const std::int64_t channels = k[2] * options_.groups;
  TAPEFLOW_REQUIRE(
      x.shape()[3] == channels, InvalidArgumentError,
      "[{}] layer '{}' was built for inputs with {} channels and has a kernel of shape {}; got an "
      "input of shape {}",
      kConv2D, name(), channels, k.to_string(), x.shape().to_string());
  const Tensor xc = autocast(x);
  const DType compute = dtype_policy() ? dtype_policy()->compute_dtype() : kernel_->dtype();
  TAPEFLOW_REQUIRE(xc.dtype() == compute, InvalidArgumentError,
                   "[{}] layer '{}' was built for {} inputs; got an input of shape {} and dtype {}", kConv2D,
                   name(), dtype_name(compute), x.shape().to_string(), dtype_name(x.dtype()));
  const auto& d = options_.dilation_rate;
  const std::int64_t extent_h = (k[0] - 1) * d[0] + 1, extent_w = (k[1] - 1) * d[1] + 1;
  if (tf_padding_ == "VALID") {
    TAPEFLOW_REQUIRE(
        x.num_elements() == 0 || (x.shape()[1] >= extent_h && x.shape()[2] >= extent_w), InvalidArgumentError,
        "[{}] layer '{}' with padding \"valid\" has a {}x{} window larger than the input of shape {}",
        kConv2D, name(), extent_h, extent_w, x.shape().to_string());
  }
  const std::vector<std::int64_t> strides{options_.strides[0], options_.strides[1]}, dilations{d[0], d[1]};
  const Tensor kernel = autocast(*kernel_);
  if (bias_ && (!fused_activation_.empty() || !activate))
    return nn::conv2d_bias_activation(xc, kernel, autocast(*bias_), strides, tf_padding_,
                                      activate ? fused_activation_ : "linear", dilations);
  Tensor y = nn::conv2d(xc, kernel, strides, tf_padding_, dilations);
  if (bias_) y = y + autocast(*bias_);
  return activate && activation_ ? activation_(y) : y;
}

const Variable& Conv2D::kernel() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no kernel yet: it is built by its first call (or build())", kConv2D,
                   name());
  return *kernel_;
}

const Variable& Conv2D::bias() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no bias yet: it is built by its first call (or build())", kConv2D,
                   name());
  TAPEFLOW_REQUIRE(bias_.has_value(), FailedPreconditionError,
                   "[{}] layer '{}' was created with use_bias = false and has no bias", kConv2D, name());
  return *bias_;
}

}  // namespace tapeflow::layers
