#pragma once
/// \file nn/losses.h
/// Keras's loss functions, reduced to one scalar: the mean of the per-example loss over the batch
/// (Keras's default reduction "sum_over_batch_size"), 0 over an empty batch (Keras divides with
/// divide_no_nan), where the gradient is then empty rather than missing.
///
///   tf::Tensor logits = model(x);                                  // (batch, classes)
///   tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(labels, logits, true);
///   auto grads = tape.gradient(loss, model.trainable_variables());
///
/// Every loss is built from differentiable ops, so it can be differentiated with respect to
/// y_pred (and, for the float-label losses, y_true). y_true and y_pred must have the same float
/// dtype (no implicit casting), except that bfloat16 ones are cast to float32 first: losses compute
/// in float32, as mixed precision wants (mixed_precision.h), and return a float32 loss. As in Keras, a y_true
/// whose rank is one less than y_pred's, or one more with a trailing size-1 dimension, is matched to y_pred's
/// shape by adding or dropping that dimension (labels of shape (batch,) against predictions of shape (batch,
/// 1)). Without `from_logits`, probabilities are clipped to [1e-7, 1 - 1e-7] (Keras's epsilon) before the
/// log. Errors: InvalidArgumentError naming the loss, the shapes and dtypes.
///
/// Every loss takes Keras's `sample_weight` (the class losses' call argument): the per-sample
/// losses (one per example, or one per (example, step) for sequences: the loss before the mean
/// over the batch) are multiplied by the weights and summed, and the sum is divided by the number
/// of per-sample losses (Keras's "sum_over_batch_size", not by the sum of the weights). The
/// weights are cast to the loss's dtype and aligned with the leading axes of the per-sample
/// losses, as tf.keras aligns them: a (batch,) weight scales each example of (batch, steps)
/// losses, a (batch, steps) weight (a padding mask) each step, a scalar every loss; a trailing
/// size-1 axis is dropped. A weight that does not broadcast so is an InvalidArgumentError naming
/// the loss and both shapes. The loss is differentiable with respect to the weights too.

#include <optional>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::losses {

/// Keras's epsilon: probabilities are clipped to [kEpsilon, 1 - kEpsilon] before a log.
inline constexpr double kEpsilon = 1e-7;

/// mean over the batch of -sum(y_true * log(p), axis -1), where p = softmax(y_pred) when
/// `from_logits`, else y_pred normalised to sum 1 along the last axis and clipped. y_true holds
/// one probability distribution (e.g. one-hot) per row; same shape as y_pred, rank >= 1.
Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                                const std::optional<Tensor>& sample_weight = std::nullopt);

/// categorical_crossentropy with integer class ids: y_true is int32 or int64 with y_pred's shape
/// without its last (class) axis, or with a trailing size-1 axis. A label outside [0, classes)
/// throws InvalidArgumentError.
Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                                       const std::optional<Tensor>& sample_weight = std::nullopt);

/// mean over the batch of the mean over the last axis of -(y_true * log(p) + (1 - y_true) *
/// log(1 - p)), where p = sigmoid(y_pred) when `from_logits` (computed without overflow as
/// nn::sigmoid_cross_entropy_with_logits), else y_pred clipped. Same shapes. A rank-0 or rank-1
/// y_pred holds one prediction per example; an empty last axis of a larger rank gives NaN, as in
/// Keras.
Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                           const std::optional<Tensor>& sample_weight = std::nullopt);

/// mean over the batch of mean((y_true - y_pred)^2) over the last axis. Same shapes; ranks as
/// binary_crossentropy's.
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred,
                          const std::optional<Tensor>& sample_weight = std::nullopt);

}  // namespace tapeflow::losses
#pragma GCC visibility pop
