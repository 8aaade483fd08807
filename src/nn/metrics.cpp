// Streaming metrics: plain double accumulators fed by ops run with tape recording suspended.

#include "tapeflow/nn/metrics.h"

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::metrics {

namespace {

void require_defined(std::string_view metric, const Tensor& t, std::string_view arg) {
  TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "[{}] {} is an undefined (default-constructed) Tensor",
                   metric, arg);
}

/// Throws InvalidArgumentError naming `metric` unless y_pred has rank >= 1 and a class axis that
/// is not empty (argmax over no classes has no answer).
void require_classes(std::string_view metric, const Tensor& y_pred) {
  TAPEFLOW_REQUIRE(y_pred.rank() >= 1 && y_pred.shape()[y_pred.rank() - 1] > 0, InvalidArgumentError,
                   "[{}] y_pred needs rank >= 1 (batch, ..., classes) and at least one class, got shape {}",
                   metric, y_pred.shape().to_string());
}

/// The sum of every element as a double.
double sum_of(const Tensor& t) { return reduce_sum(cast(t, DType::Float64)).item<double>(); }

}  // namespace

void Mean::update_state(const Tensor& values, const std::optional<Tensor>& sample_weight) {
  require_defined(name_, values, "values");
  const NoRecordingScope no_recording;
  const Tensor v = cast(values, DType::Float64);
  if (!sample_weight) {
    total_ += sum_of(v);
    count_ += static_cast<double>(v.num_elements());
    return;
  }
  const Tensor w = layers::detail::broadcast_sample_weight(name_, *sample_weight, v);
  total_ += sum_of(v * w);
  count_ += sum_of(w);
}

void Accuracy::update_state(const Tensor& y_true, const Tensor& y_pred,
                            const std::optional<Tensor>& sample_weight) {
  require_defined(name(), y_true, "y_true");
  require_defined(name(), y_pred, "y_pred");
  TAPEFLOW_REQUIRE(
      y_true.shape() == y_pred.shape() && y_true.dtype() == y_pred.dtype(), InvalidArgumentError,
      "[{}] y_true and y_pred must have the same shape and dtype, got y_true {} {} and y_pred {} {}", name(),
      y_true.shape().to_string(), dtype_name(y_true.dtype()), y_pred.shape().to_string(),
      dtype_name(y_pred.dtype()));
  const NoRecordingScope no_recording;
  mean_.update_state(equal(y_true, y_pred), sample_weight);
}

void BinaryAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred,
                                  const std::optional<Tensor>& sample_weight) {
  require_defined(name(), y_true, "y_true");
  require_defined(name(), y_pred, "y_pred");
  const Tensor labels = layers::detail::match_rank(y_true, y_pred.rank());
  TAPEFLOW_REQUIRE(labels.shape() == y_pred.shape(), InvalidArgumentError,
                   "[{}] y_true and y_pred must have the same shape (up to a trailing size-1 axis), got "
                   "y_true {} and y_pred {}",
                   name(), y_true.shape().to_string(), y_pred.shape().to_string());
  const NoRecordingScope no_recording;
  // As Keras: only y_pred is thresholded; y_true is compared as it is (a label of 0.3 matches nothing).
  const Tensor predicted = cast(cast(y_pred, DType::Float64) > threshold_, DType::Float64);
  mean_.update_state(equal(cast(labels, DType::Float64), predicted), sample_weight);
}

void CategoricalAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred,
                                       const std::optional<Tensor>& sample_weight) {
  require_defined(name(), y_true, "y_true");
  require_defined(name(), y_pred, "y_pred");
  TAPEFLOW_REQUIRE(y_true.shape() == y_pred.shape(), InvalidArgumentError,
                   "[{}] y_true and y_pred must have the same shape (batch, ..., classes), got y_true {} and "
                   "y_pred {}",
                   name(), y_true.shape().to_string(), y_pred.shape().to_string());
  require_classes(name(), y_pred);
  const NoRecordingScope no_recording;
  mean_.update_state(equal(argmax(y_true, -1), argmax(y_pred, -1)), sample_weight);
}

void SparseCategoricalAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred,
                                             const std::optional<Tensor>& sample_weight) {
  require_defined(name(), y_true, "y_true");
  require_defined(name(), y_pred, "y_pred");
  TAPEFLOW_REQUIRE(y_true.dtype() == DType::Int32 || y_true.dtype() == DType::Int64, InvalidArgumentError,
                   "[{}] y_true holds class ids and must be int32 or int64, got shape {} and dtype {}",
                   name(), y_true.shape().to_string(), dtype_name(y_true.dtype()));
  require_classes(name(), y_pred);
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.shape()[labels.rank() - 1] == 1)
    labels = squeeze(labels, {-1});
  const Shape expected(y_pred.shape().dims().first(static_cast<std::size_t>(y_pred.rank() - 1)));
  TAPEFLOW_REQUIRE(
      labels.shape() == expected, InvalidArgumentError,
      "[{}] y_true must have y_pred's shape without the class axis, {}, got y_true {} and y_pred {}", name(),
      expected.to_string(), y_true.shape().to_string(), y_pred.shape().to_string());
  const NoRecordingScope no_recording;
  mean_.update_state(equal(cast(labels, DType::Int64), argmax(y_pred, -1)), sample_weight);
}

}  // namespace tapeflow::metrics
