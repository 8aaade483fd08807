// Keras losses as compositions of tapeflow ops (their gradients come from the ops').

#include "tapeflow/nn/losses.h"

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::losses {

namespace {

void require_defined(std::string_view loss, const Tensor& y_true, const Tensor& y_pred) {
  TAPEFLOW_REQUIRE(y_true.defined() && y_pred.defined(), InvalidArgumentError,
                   "[{}] y_true and y_pred must be defined tensors", loss);
}

/// `t` in float32 if it is bfloat16: losses compute in float32 (mixed precision's rule), so a
/// bfloat16 model's loss and its softmax keep float32's precision.
Tensor widen_bfloat16(const Tensor& t) {
  return t.defined() && t.dtype() == DType::BFloat16 ? cast(t, DType::Float32) : t;
}

/// y_true matched to y_pred's rank, then checked for y_pred's float dtype and shape.
Tensor checked_float_labels(std::string_view loss, const Tensor& y_true, const Tensor& y_pred, int min_rank) {
  require_defined(loss, y_true, y_pred);
  TAPEFLOW_REQUIRE(is_floating(y_pred.dtype()) && y_true.dtype() == y_pred.dtype(), InvalidArgumentError,
                   "[{}] y_true and y_pred must have the same float dtype, got y_true {} {} and y_pred {} {}",
                   loss, y_true.shape().to_string(), dtype_name(y_true.dtype()), y_pred.shape().to_string(),
                   dtype_name(y_pred.dtype()));
  TAPEFLOW_REQUIRE(y_pred.rank() >= min_rank, InvalidArgumentError,
                   "[{}] y_pred needs rank >= {} (batch, ..., classes), got shape {}", loss, min_rank,
                   y_pred.shape().to_string());
  const Tensor t = layers::detail::match_rank(y_true, y_pred.rank());
  TAPEFLOW_REQUIRE(t.shape() == y_pred.shape(), InvalidArgumentError,
                   "[{}] y_true and y_pred must have the same shape, got y_true {} and y_pred {}", loss,
                   y_true.shape().to_string(), y_pred.shape().to_string());
  return t;
}

/// Keras's reduction "sum_over_batch_size": the sum of the per-sample losses over their count,
/// and 0 over an empty batch (Keras divides with divide_no_nan), then still a function of y_pred
/// (its gradient is empty, not missing).
Tensor mean_over_batch(const Tensor& per_sample) {
  return per_sample.num_elements() == 0 ? reduce_sum(per_sample) : reduce_mean(per_sample);
}

/// Keras's reduction of per-sample losses with an optional sample weight: the weighted losses'
/// sum over the number of losses (mean_over_batch of per_sample * weight).
Tensor reduced(std::string_view loss, const Tensor& per_sample, const std::optional<Tensor>& sample_weight) {
  if (!sample_weight) return mean_over_batch(per_sample);
  return mean_over_batch(per_sample *
                         layers::detail::broadcast_sample_weight(loss, *sample_weight, per_sample));
}

/// Keras's per-sample value of an elementwise loss: its mean over the last (class) axis, NaN for
/// an empty one as in Keras. A rank-0 or rank-1 loss is one value per sample already.
Tensor per_sample_mean(const Tensor& elementwise) {
  return elementwise.rank() <= 1 ? elementwise : reduce_mean(elementwise, {-1});
}

/// y_pred / sum(y_pred, axis -1) clipped to [eps, 1 - eps] (Keras's handling of probabilities).
Tensor normalised_clipped(const Tensor& y_pred) {
  return clip_by_value(y_pred / reduce_sum(y_pred, {-1}, true), kEpsilon, 1.0 - kEpsilon);
}

}  // namespace

Tensor categorical_crossentropy(const Tensor& y_true_in, const Tensor& y_pred_in, bool from_logits,
                                const std::optional<Tensor>& sample_weight) {
  constexpr std::string_view kLoss = "categorical_crossentropy";
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  const Tensor t = checked_float_labels(kLoss, y_true, y_pred, 1);
  if (from_logits) return reduced(kLoss, nn::softmax_cross_entropy_with_logits(t, y_pred), sample_weight);
  return reduced(kLoss, -reduce_sum(t * log(normalised_clipped(y_pred)), {-1}), sample_weight);
}

Tensor sparse_categorical_crossentropy(const Tensor& y_true_in, const Tensor& y_pred_in, bool from_logits,
                                       const std::optional<Tensor>& sample_weight) {
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  constexpr std::string_view kLoss = "sparse_categorical_crossentropy";
  require_defined(kLoss, y_true, y_pred);
  TAPEFLOW_REQUIRE(y_true.dtype() == DType::Int32 || y_true.dtype() == DType::Int64, InvalidArgumentError,
                   "[{}] y_true holds class ids and must be int32 or int64, got shape {} and dtype {}", kLoss,
                   y_true.shape().to_string(), dtype_name(y_true.dtype()));
  TAPEFLOW_REQUIRE(
      is_floating(y_pred.dtype()) && y_pred.rank() >= 1, InvalidArgumentError,
      "[{}] y_pred must be float32 or float64 of rank >= 1 (batch, ..., classes), got shape {} and "
      "dtype {}",
      kLoss, y_pred.shape().to_string(), dtype_name(y_pred.dtype()));
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.shape()[labels.rank() - 1] == 1)
    labels = squeeze(labels, {-1});
  const Shape& p = y_pred.shape();
  const Shape expected(p.dims().first(static_cast<std::size_t>(p.rank() - 1)));
  TAPEFLOW_REQUIRE(
      labels.shape() == expected, InvalidArgumentError,
      "[{}] y_true must have y_pred's shape without the class axis, {}, got y_true {} and y_pred {}", kLoss,
      expected.to_string(), y_true.shape().to_string(), y_pred.shape().to_string());
  // Probabilities go through their log as logits: log_softmax(log(p)) = log(p) when p sums to 1.
  const Tensor logits = from_logits ? y_pred : log(normalised_clipped(y_pred));
  return reduced(kLoss, nn::sparse_softmax_cross_entropy_with_logits(labels, logits), sample_weight);
}

Tensor binary_crossentropy(const Tensor& y_true_in, const Tensor& y_pred_in, bool from_logits,
                           const std::optional<Tensor>& sample_weight) {
  constexpr std::string_view kLoss = "binary_crossentropy";
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  const Tensor t = checked_float_labels(kLoss, y_true, y_pred, 0);
  if (from_logits)
    return reduced(kLoss, per_sample_mean(nn::sigmoid_cross_entropy_with_logits(t, y_pred)), sample_weight);
  const Tensor p = clip_by_value(y_pred, kEpsilon, 1.0 - kEpsilon);
  return reduced(kLoss, per_sample_mean(-(t * log(p) + (1.0 - t) * log(1.0 - p))), sample_weight);
}

Tensor mean_squared_error(const Tensor& y_true_in, const Tensor& y_pred_in,
                          const std::optional<Tensor>& sample_weight) {
  constexpr std::string_view kLoss = "mean_squared_error";
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  const Tensor t = checked_float_labels(kLoss, y_true, y_pred, 0);
  return reduced(kLoss, per_sample_mean(squared_difference(t, y_pred)), sample_weight);
}

}  // namespace tapeflow::losses
