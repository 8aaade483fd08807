#pragma once
/// \file nn/conv1d.h
/// Conv1D: the 1-D convolution layer over sequences, `activation(conv1d(x, kernel) + bias)` on
/// inputs of shape (batch, steps, channels), like tf.keras.layers.Conv1D.
///
///   tf::layers::Conv1D conv(32, 3, "relu", {.padding = "causal"});
///   tf::Tensor y = conv(tf::zeros({8, 100, 16}));   // (8, 100, 32); builds the layer
///   conv.trainable_variables();                      // [kernel (3, 16, 32), bias (32,)]
///
/// Built lazily, as in Keras: the first call creates the kernel, of shape (kernel_size, input
/// channels / groups, filters) and the input's dtype, drawn from the kernel initialiser (Glorot
/// uniform by default, fan_in = kernel_size * in, fan_out = kernel_size * filters), and the bias,
/// zeros of shape (filters,), named "kernel" and "bias" as Keras 3 names them. Padding is Keras's
/// "valid", "same" (TensorFlow's SAME arithmetic) or "causal": (kernel_size - 1) * dilation_rate
/// zeros before each sequence, so that output step t sees only input steps <= t (WaveNet's
/// convolutions; the output has as many steps as the input when the stride is 1). The
/// convolution runs as nn::conv2d over a height of 1, so it takes oneDNN's path where nn::conv2d
/// does, and its gradients are conv2d's.

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

/// Options of Conv1D (Keras's constructor arguments).
struct Conv1DOptions {
  /// The layer's name (Module::name()).
  std::string name = "conv1d";
  /// Step of the window along the sequence; >= 1.
  std::int64_t strides = 1;
  /// "valid" (windows inside the input), "same" (output steps ceil(in / stride)) or "causal"
  /// (zeros before the sequence, see the file comment); any case.
  std::string padding = "valid";
  /// Spacing of the kernel's taps (Keras's dilation_rate); >= 1.
  std::int64_t dilation_rate = 1;
  /// Channel groups (Keras's groups): the input's channels and `filters` must both be multiples
  /// of it.
  std::int64_t groups = 1;
  /// Add the bias vector (Keras's use_bias).
  bool use_bias = true;
  /// Seed of the kernel initialiser; without one, the next of the process-wide sequence (as Dense).
  std::optional<std::uint64_t> seed = std::nullopt;
  /// "glorot_uniform" (default), "glorot_normal", "he_uniform", "he_normal" or "orthogonal" (see
  /// DenseOptions).
  std::string kernel_initializer = "glorot_uniform";
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// A 1-D convolution layer over (batch, steps, channels) sequences (tf.keras.layers.Conv1D):
/// activation(conv1d(x, kernel) + bias).
class Conv1D : public Layer {
 public:
  /// A layer with `filters` output channels and a window of `kernel_size` steps. Throws
  /// InvalidArgumentError (naming Conv1D) if filters, the kernel size, the stride or the dilation
  /// rate is < 1 or > 2^31, groups does not divide filters, or for an unknown padding or
  /// initialiser.
  Conv1D(std::int64_t filters, std::int64_t kernel_size, Activation activation = {},
         Conv1DOptions options = {});
  /// No activation, with options: Conv1D(8, 3, {.padding = "same"}).
  Conv1D(std::int64_t filters, std::int64_t kernel_size, Conv1DOptions options)
      : Conv1D(filters, kernel_size, Activation{}, std::move(options)) {}
  /// The activation by its Keras name (see activation()): Conv1D(8, 3, "relu").
  ///@{
  Conv1D(std::int64_t filters, std::int64_t kernel_size, std::string_view activation,
         Conv1DOptions options = {});
  Conv1D(std::int64_t filters, std::int64_t kernel_size, const char* activation, Conv1DOptions options = {})
      : Conv1D(filters, kernel_size, std::string_view(activation), std::move(options)) {}
  ///@}

  /// activation(conv1d(x, kernel) + bias) for x of shape (batch, steps, channels); builds the
  /// layer on the first call. Throws InvalidArgumentError (naming Conv1D and the shapes) for a
  /// rank other than 3, a non-float dtype, a "valid" window longer than the sequence, or, once
  /// built, an input whose channels or dtype differ from what the layer was built for.
  Tensor operator()(const Tensor& x);
  Tensor call(const Tensor& x, bool /*training*/) override { return (*this)(x); }

  /// Creates kernel and bias for inputs of `input_shape` (rank 3) and `dtype`. Called by the
  /// first operator(); throws FailedPreconditionError if already built.
  void build(const Shape& input_shape, DType dtype = DType::Float32);
  /// Whether kernel and bias exist: after the first call or build().
  bool built() const { return kernel_.has_value(); }

  /// The number of output channels.
  std::int64_t filters() const { return filters_; }
  /// The kernel, shape (kernel_size, in / groups, filters). Throws FailedPreconditionError before
  /// the build.
  const Variable& kernel() const;
  /// The bias, shape (filters,). Throws FailedPreconditionError before the build or without bias.
  const Variable& bias() const;

 private:
  std::int64_t filters_;
  std::int64_t kernel_size_;
  Activation activation_;
  Conv1DOptions options_;
  std::string padding_;  // "valid", "same" or "causal", lower case
  std::optional<Variable> kernel_, bias_;
};

/// A Conv1D layer in a std::shared_ptr, ready for Sequential: tf::layers::conv1d(32, 3, "relu").
/// The arguments and errors are the constructors'.
///@{
inline std::shared_ptr<Conv1D> conv1d(std::int64_t filters, std::int64_t kernel_size,
                                      Activation activation = {}, Conv1DOptions options = {}) {
  return std::make_shared<Conv1D>(filters, kernel_size, std::move(activation), std::move(options));
}
inline std::shared_ptr<Conv1D> conv1d(std::int64_t filters, std::int64_t kernel_size, Conv1DOptions options) {
  return std::make_shared<Conv1D>(filters, kernel_size, std::move(options));
}
inline std::shared_ptr<Conv1D> conv1d(std::int64_t filters, std::int64_t kernel_size,
                                      std::string_view activation, Conv1DOptions options = {}) {
  return std::make_shared<Conv1D>(filters, kernel_size, activation, std::move(options));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
