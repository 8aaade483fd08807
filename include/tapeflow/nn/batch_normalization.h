#pragma once
/// \file nn/batch_normalization.h
/// BatchNormalization: normalises each feature (channel) to zero mean and unit variance, then
/// scales by `gamma` and shifts by `beta`, like tf.keras.layers.BatchNormalization.
///
///   tf::layers::BatchNormalization bn;              // axis -1: the channels of NHWC or (batch, features)
///   tf::Tensor y = bn(x, /*training=*/true);        // batch statistics; updates the moving ones
///   tf::Tensor z = bn(x);                           // training = false: the moving statistics
///
/// While training, the statistics are those of the batch: the mean and the (biased, divide by N)
/// variance over every axis but `axis`, and y = gamma * (x - mean) / sqrt(var + epsilon) + beta.
/// Each training call also updates the moving statistics, which are what inference uses:
///   moving_mean     = moving_mean * momentum + mean * (1 - momentum)
///   moving_variance = moving_variance * momentum + var * (1 - momentum)
/// These updates are stateful assignments: no tape records them, and gradients flow only through
/// the batch statistics, as in Keras. A call is one op, nn::fused_batch_norm while training (with
/// one op for its gradient) and nn::fused_batch_norm_inference otherwise, oneDNN's batch
/// normalization in float32. A layer that is not trainable (set_trainable(false), nn/layer.h)
/// runs in inference mode even when called with training = true, as Keras's does.
///
/// The layer is built lazily by its first call: gamma (ones, "gamma") and beta (zeros, "beta")
/// are trainable; moving_mean (zeros) and moving_variance (ones) are not, but are variables of
/// the module, so checkpoints save and restore them. All have shape (channels,) and the input's
/// dtype.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of BatchNormalization (Keras's constructor arguments).
struct BatchNormalizationOptions {
  /// The feature axis (negative counts from the end): Keras's default -1.
  std::int64_t axis = -1;
  /// Weight of the old value in the moving statistics, in [0, 1].
  double momentum = 0.99;
  /// Added to the variance before the square root; must be positive.
  double epsilon = 1e-3;
  /// Add beta (Keras's center).
  bool center = true;
  /// Multiply by gamma (Keras's scale).
  bool scale = true;
  /// The layer's name (Module::name()).
  std::string name = "batch_normalization";
};

/// Batch normalization (tf.keras.layers.BatchNormalization): normalises with the batch's
/// statistics in training and with the moving ones at inference (see the file comment).
class BatchNormalization : public Layer {
 public:
  /// Throws InvalidArgumentError (naming BatchNormalization) for a momentum outside [0, 1] or a
  /// non-positive or non-finite epsilon.
  explicit BatchNormalization(BatchNormalizationOptions options = {});

  /// Normalised x. Throws InvalidArgumentError naming the layer, the shape and the dtype for a
  /// non-float input, an axis outside the input's rank, an input whose channel count or dtype
  /// differs from what the layer was built for, or (training) a batch with no elements to
  /// average over.
  Tensor operator()(const Tensor& x, bool training = false) { return call(x, training); }
  Tensor call(const Tensor& x, bool training) override;

  /// Whether the variables exist: after the first call, which sizes them from its input.
  bool built() const { return moving_mean_.has_value(); }
  /// The variables; each throws FailedPreconditionError before the layer is built (gamma and
  /// beta also when disabled by scale / center).
  ///@{
  const Variable& gamma() const;
  const Variable& beta() const;
  const Variable& moving_mean() const;
  const Variable& moving_variance() const;
  ///@}

 private:
  void build(std::int64_t channels, DType dtype);

  BatchNormalizationOptions options_;
  std::optional<Variable> gamma_, beta_, moving_mean_, moving_variance_;
};

/// A BatchNormalization layer in a std::shared_ptr, ready for Sequential:
/// tf::layers::batch_normalization({.momentum = 0.9}). The options and errors are the constructor's.
inline std::shared_ptr<BatchNormalization> batch_normalization(BatchNormalizationOptions options = {}) {
  return std::make_shared<BatchNormalization>(std::move(options));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
