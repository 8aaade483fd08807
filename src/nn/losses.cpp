// Keras losses as compositions of tapeflow ops (their gradients come from the ops').

#include "tapeflow/nn/losses.h"

#include "core/check.h"
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

/// Keras's squeeze_or_expand_to_same_rank: y_true loses a trailing size-1 dimension, or gains one,
/// when its rank differs from `rank` by one.
Tensor match_rank(const Tensor& y_true, int rank) {
  const Shape& s = y_true.shape();
  if (y_true.rank() == rank + 1 && s[s.rank() - 1] == 1) return squeeze(y_true, {-1});
  if (y_true.rank() + 1 == rank) return expand_dims(y_true, -1);
  return y_true;
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
  const Tensor t = match_rank(y_true, y_pred.rank());
  TAPEFLOW_REQUIRE(t.shape() == y_pred.shape(), InvalidArgumentError,
                   "[{}] y_true and y_pred must have the same shape, got y_true {} and y_pred {}", loss,
                   y_true.shape().to_string(), y_pred.shape().to_string());
  return t;
}

/// y_pred / sum(y_pred, axis -1) clipped to [eps, 1 - eps] (Keras's handling of probabilities).
Tensor normalised_clipped(const Tensor& y_pred) {
  return clip_by_value(y_pred / reduce_sum(y_pred, {-1}, true), kEpsilon, 1.0 - kEpsilon);
}

}  // namespace

Tensor categorical_crossentropy(const Tensor& y_true_in, const Tensor& y_pred_in, bool from_logits) {
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  const Tensor t = checked_float_labels("categorical_crossentropy", y_true, y_pred, 1);
  if (from_logits) return reduce_mean(nn::softmax_cross_entropy_with_logits(t, y_pred));
  return reduce_mean(-reduce_sum(t * log(normalised_clipped(y_pred)), {-1}));
}

Tensor sparse_categorical_crossentropy(const Tensor& y_true_in, const Tensor& y_pred_in, bool from_logits) {
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
  return reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
}

Tensor binary_crossentropy(const Tensor& y_true_in, const Tensor& y_pred_in, bool from_logits) {
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  const Tensor t = checked_float_labels("binary_crossentropy", y_true, y_pred, 0);
  if (from_logits) return reduce_mean(nn::sigmoid_cross_entropy_with_logits(t, y_pred));
  const Tensor p = clip_by_value(y_pred, kEpsilon, 1.0 - kEpsilon);
  return reduce_mean(-(t * log(p) + (1.0 - t) * log(1.0 - p)));
}

Tensor mean_squared_error(const Tensor& y_true_in, const Tensor& y_pred_in) {
  const Tensor y_true = widen_bfloat16(y_true_in), y_pred = widen_bfloat16(y_pred_in);
  const Tensor t = checked_float_labels("mean_squared_error", y_true, y_pred, 0);
  return reduce_mean(squared_difference(t, y_pred));
}

}  // namespace tapeflow::losses
