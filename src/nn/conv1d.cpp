// Conv1D as a 2-D convolution over a height of 1: the sequence is the width, the kernel gains a
// leading height of 1, and "causal" padding is TensorFlow's EXPLICIT padding before the sequence.

#include "tapeflow/nn/conv1d.h"

#include <algorithm>
#include <cctype>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kConv1D = "Conv1D";
/// The largest kernel size, stride and dilation nn::conv2d accepts (TensorFlow's are int32).
constexpr std::int64_t kMaxWindow = std::int64_t{1} << 31;

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Conv1D::Conv1D(std::int64_t filters, std::int64_t kernel_size, Activation activation, Conv1DOptions options)
    : Layer(options.name, options.dtype_policy),
      filters_(filters),
      kernel_size_(kernel_size),
      activation_(std::move(activation)),
      options_(std::move(options)),
      padding_(lower(options_.padding)) {
  TAPEFLOW_REQUIRE(filters > 0, InvalidArgumentError, "[{}] filters must be positive, got {}", kConv1D,
                   filters);
  for (const auto& [what, value] :
       {std::pair{"kernel_size", kernel_size}, std::pair{"strides", options_.strides},
        std::pair{"dilation_rate", options_.dilation_rate}})
    TAPEFLOW_REQUIRE(value > 0 && value <= kMaxWindow, InvalidArgumentError,
                     "[{}] {} must be positive and at most 2^31, got {}", kConv1D, what, value);
  TAPEFLOW_REQUIRE(options_.groups >= 1 && filters % options_.groups == 0, InvalidArgumentError,
                   "[{}] groups must be positive and divide filters ({}), got {}", kConv1D, filters,
                   options_.groups);
  TAPEFLOW_REQUIRE(padding_ == "valid" || padding_ == "same" || padding_ == "causal", InvalidArgumentError,
                   "[{}] unknown padding '{}'; expected \"valid\", \"same\" or \"causal\"", kConv1D,
                   options_.padding);
  detail::check_initializer(kConv1D, options_.kernel_initializer);
}

Conv1D::Conv1D(std::int64_t filters, std::int64_t kernel_size, std::string_view activation_name,
               Conv1DOptions options)
    : Conv1D(filters, kernel_size, detail::named_activation(kConv1D, activation_name), std::move(options)) {}

void Conv1D::build(const Shape& input_shape, DType dtype) {
  TAPEFLOW_REQUIRE(!built(), FailedPreconditionError, "[{}] layer '{}' is already built", kConv1D, name());
  TAPEFLOW_REQUIRE(input_shape.rank() == 3, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 3 (batch, steps, channels), got shape {}", kConv1D,
                   name(), input_shape.to_string());
  TAPEFLOW_REQUIRE(is_floating(dtype), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs, got {}", kConv1D, name(),
                   dtype_name(dtype));
  TAPEFLOW_REQUIRE(
      input_shape[2] % options_.groups == 0, InvalidArgumentError,
      "[{}] layer '{}' has {} groups, which must divide the input's {} channels (input shape {})", kConv1D,
      name(), options_.groups, input_shape[2], input_shape.to_string());
  const std::int64_t in = input_shape[2] / options_.groups;
  // Checked first (ResourceExhaustedError beyond 2^62 elements): then the fans cannot overflow.
  const std::array<std::int64_t, 3> kernel_dims{kernel_size_, in, filters_};
  const Shape kernel_shape = Shape::checked(kernel_dims, kConv1D);
  const std::uint64_t seed = options_.seed ? *options_.seed : detail::next_seed();
  kernel_ = track(Variable(detail::initial_kernel(kConv1D, options_.kernel_initializer, kernel_shape,
                                                  kernel_size_ * in, kernel_size_ * filters_, dtype, seed),
                           {.name = "kernel", .keras_style = true}));
  if (options_.use_bias)
    bias_ = track(Variable(zeros({filters_}, dtype), {.name = "bias", .keras_style = true}));
}

Tensor Conv1D::operator()(const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kConv1D,
                   name());
  TAPEFLOW_REQUIRE(x.rank() == 3, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 3 (batch, steps, channels), got shape {}", kConv1D,
                   name(), x.shape().to_string());
  if (!built()) build(x.shape(), variable_dtype(x.dtype()));
  const Shape& k = kernel_->shape();
  const std::int64_t channels = k[1] * options_.groups;
  TAPEFLOW_REQUIRE(
      x.shape()[2] == channels, InvalidArgumentError,
      "[{}] layer '{}' was built for inputs with {} channels and has a kernel of shape {}; got an "
      "input of shape {}",
      kConv1D, name(), channels, k.to_string(), x.shape().to_string());
  const Tensor xc = autocast(x);
  const DType compute = dtype_policy() ? dtype_policy()->compute_dtype() : kernel_->dtype();
  TAPEFLOW_REQUIRE(xc.dtype() == compute, InvalidArgumentError,
                   "[{}] layer '{}' was built for {} inputs; got an input of shape {} and dtype {}", kConv1D,
                   name(), dtype_name(compute), x.shape().to_string(), dtype_name(x.dtype()));
  const std::int64_t extent = (kernel_size_ - 1) * options_.dilation_rate + 1;
  TAPEFLOW_REQUIRE(
      padding_ != "valid" || x.num_elements() == 0 || x.shape()[1] >= extent, InvalidArgumentError,
      "[{}] layer '{}' with padding \"valid\" has a window of {} steps, longer than the input of "
      "shape {}",
      kConv1D, name(), extent, x.shape().to_string());
  // (batch, 1, steps, channels) convolved with a (1, kernel_size, in, filters) kernel.
  const Shape& s = x.shape();
  const Tensor images = reshape(xc, {s[0], 1, s[1], s[2]});
  const Tensor kernel = reshape(autocast(*kernel_), {1, k[0], k[1], k[2]});
  const std::vector<std::int64_t> strides{1, options_.strides}, dilations{1, options_.dilation_rate};
  Tensor y =
      padding_ == "causal"
          ? nn::conv2d(images, kernel, strides, "EXPLICIT", dilations, {0, 0, 0, 0, extent - 1, 0, 0, 0})
          : nn::conv2d(images, kernel, strides, padding_ == "same" ? "SAME" : "VALID", dilations);
  y = squeeze(y, {1});
  if (bias_) y = y + autocast(*bias_);
  return activation_ ? activation_(y) : y;
}

const Variable& Conv1D::kernel() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no kernel yet: it is built by its first call (or build())", kConv1D,
                   name());
  return *kernel_;
}

const Variable& Conv1D::bias() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no bias yet: it is built by its first call (or build())", kConv1D,
                   name());
  TAPEFLOW_REQUIRE(bias_.has_value(), FailedPreconditionError,
                   "[{}] layer '{}' was created with use_bias = false and has no bias", kConv1D, name());
  return *bias_;
}

}  // namespace tapeflow::layers
