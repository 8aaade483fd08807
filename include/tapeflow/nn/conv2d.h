#pragma once
/// \file nn/conv2d.h
/// Conv2D: the 2-D convolution layer, `activation(conv2d(x, kernel) + bias)` on NHWC images, like
/// tf.keras.layers.Conv2D.
///
///   tf::layers::Conv2D conv(16, {3, 3}, "relu", {.strides = {2, 2}, .padding = "same"});
///   tf::Tensor y = conv(tf::zeros({8, 28, 28, 1}));   // (8, 14, 14, 16); builds the layer
///   conv.trainable_variables();                       // [kernel (3, 3, 1, 16), bias (16,)]
///
/// Built lazily, as in Keras: the first call creates the kernel, HWIO of shape
/// (kh, kw, input channels, filters) and the input's dtype, drawn from the kernel initialiser
/// (Glorot uniform by default, with fan_in = kh * kw * in and fan_out = kh * kw * filters), and
/// the bias, zeros of shape (filters,), named "kernel" and "bias" as Keras 3 names them.
/// Padding is Keras's "valid" or "same" (case-insensitive), with TensorFlow's SAME arithmetic.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tapeflow/nn/dense.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of Conv2D (Keras's constructor arguments).
struct Conv2DOptions {
  /// The layer's name (Module::name()).
  std::string name = "conv2d";
  /// Step of the window along height and width; both >= 1.
  std::array<std::int64_t, 2> strides = {1, 1};
  /// "valid" (windows inside the input) or "same" (output size ceil(in / stride)).
  std::string padding = "valid";
  /// Add the bias vector (Keras's use_bias).
  bool use_bias = true;
  /// Seed of the kernel initialiser; without one, the next of the process-wide sequence (as Dense).
  std::optional<std::uint64_t> seed = std::nullopt;
  /// "glorot_uniform" (default), "glorot_normal", "he_uniform", "he_normal" or "orthogonal"
  /// (see DenseOptions).
  std::string kernel_initializer = "glorot_uniform";
  /// Spacing of the kernel's taps along height and width (Keras's dilation_rate); both >= 1.
  std::array<std::int64_t, 2> dilation_rate = {1, 1};
  /// Channel groups (Keras's groups): the input's channels and `filters` must both be multiples
  /// of it; each group of input channels is convolved with its own filters/groups kernels.
  std::int64_t groups = 1;
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// A 2-D convolution layer over NHWC images (tf.keras.layers.Conv2D):
/// activation(conv2d(x, kernel) + bias).
class Conv2D : public Layer {
 public:
  /// A layer with `filters` output channels and a window of kernel_size = {kh, kw}. Throws
  /// InvalidArgumentError (naming Conv2D) if filters, a kernel size or a stride is < 1, a kernel
  /// size or stride is > 2^31 (nn::conv2d's limit), or for an unknown padding or initialiser.
  /// Building it (first call or build()) throws ResourceExhaustedError if the kernel would have
  /// more than 2^62 elements or exceed the allocation limit.
  Conv2D(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, Activation activation = {},
         Conv2DOptions options = {});
  /// No activation, with options: Conv2D(8, {3, 3}, {.padding = "same"}).
  Conv2D(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, Conv2DOptions options)
      : Conv2D(filters, kernel_size, Activation{}, std::move(options)) {}
  /// The activation by its Keras name (see activation()): Conv2D(8, {3, 3}, "relu").
  ///@{
  Conv2D(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, std::string_view activation,
         Conv2DOptions options = {});
  Conv2D(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, const char* activation,
         Conv2DOptions options = {})
      : Conv2D(filters, kernel_size, std::string_view(activation), std::move(options)) {}
  ///@}

  /// activation(conv2d(x, kernel) + bias) for x of shape (batch, height, width, channels);
  /// builds the layer on the first call. Throws InvalidArgumentError (naming Conv2D and the
  /// shapes) for a rank other than 4, a non-float dtype, a VALID window larger than the image,
  /// or, once built, an input whose channels or dtype differ from what the layer was built for.
  Tensor operator()(const Tensor& x);
  Tensor call(const Tensor& x, bool /*training*/) override { return (*this)(x); }

  /// Creates kernel and bias for inputs of `input_shape` (rank 4) and `dtype`. Called by the
  /// first operator(); throws FailedPreconditionError if already built.
  void build(const Shape& input_shape, DType dtype = DType::Float32);
  /// Whether kernel and bias exist: after the first call or build().
  bool built() const { return kernel_.has_value(); }

  /// The number of output channels.
  std::int64_t filters() const { return filters_; }
  /// The kernel, shape (kh, kw, in, filters). Throws FailedPreconditionError before the build.
  const Variable& kernel() const;
  /// The bias, shape (filters,). Throws FailedPreconditionError before the build or without bias.
  const Variable& bias() const;

 private:
  // Sequential runs a ReLU Conv2D followed by MaxPool2D as convolution, pooling, then ReLU.
  friend class Sequential;
  /// Whether the activation is ReLU (by name), which commutes with max pooling.
  bool activation_is_relu() const { return fused_activation_ == "relu"; }
  /// conv2d(x, kernel) + bias, then the activation when `activate`: operator() with `activate`.
  Tensor convolve(const Tensor& x, bool activate);

  std::int64_t filters_;
  std::array<std::int64_t, 2> kernel_size_;
  Activation activation_;
  // "relu" or "linear" when the activation is one nn::conv2d_bias_activation applies itself (the
  // layer then runs that one op), else empty.
  std::string fused_activation_;
  Conv2DOptions options_;
  std::string tf_padding_;  // "VALID" or "SAME", for nn::conv2d
  std::optional<Variable> kernel_, bias_;
};

/// A Conv2D layer in a std::shared_ptr, ready for Sequential: tf::layers::conv2d(32, {3, 3}, "relu",
/// {.padding = "same"}). The arguments and errors are the constructors'.
///@{
inline std::shared_ptr<Conv2D> conv2d(std::int64_t filters, std::array<std::int64_t, 2> kernel_size,
                                      Activation activation = {}, Conv2DOptions options = {}) {
  return std::make_shared<Conv2D>(filters, kernel_size, std::move(activation), std::move(options));
}
inline std::shared_ptr<Conv2D> conv2d(std::int64_t filters, std::array<std::int64_t, 2> kernel_size,
                                      Conv2DOptions options) {
  return std::make_shared<Conv2D>(filters, kernel_size, std::move(options));
}
inline std::shared_ptr<Conv2D> conv2d(std::int64_t filters, std::array<std::int64_t, 2> kernel_size,
                                      std::string_view activation, Conv2DOptions options = {}) {
  return std::make_shared<Conv2D>(filters, kernel_size, activation, std::move(options));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
