#pragma once
/// \file nn/metrics.h
/// Keras-style streaming metrics: update_state() accumulates over batches, result() reads the
/// value so far, reset_state() starts again (at the start of each epoch).
///
///   tf::metrics::Mean train_loss;
///   tf::metrics::SparseCategoricalAccuracy train_accuracy;
///   for (...) {                                   // each batch
///     train_loss.update_state(loss);
///     train_accuracy.update_state(labels, logits);
///   }
///   std::cout << train_loss.result() << " " << train_accuracy.result() << "\n";
///
/// Metrics are plain C++ state (double accumulators), never recorded on a tape, and results are
/// doubles. A metric with nothing accumulated reads 0, as Keras's does.

#include <optional>
#include <string>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::metrics {

/// The (weighted) mean of every value seen (keras.metrics.Mean): total / count.
class Mean {
 public:
  /// A metric named `name`, with nothing accumulated.
  explicit Mean(std::string name = "mean") : name_(std::move(name)) {}
  /// Adds every element of `values` (any numeric or bool dtype, any shape). With
  /// `sample_weight` (numeric), adds sum(values * w) to the total and sum(w) to the count, w being
  /// the weight aligned with the leading axes of values as in Keras, then broadcast to values'
  /// shape: a weight of lower rank gets trailing size-1 axes (a (batch,) weight weights each
  /// sample's row of a (batch, n) values, also when n == batch), and a trailing size-1 axis beyond
  /// values' rank is dropped ((batch, 1) weights for (batch,) values). Without, each element
  /// counts 1. Throws InvalidArgumentError for weights that do not broadcast so.
  void update_state(const Tensor& values, const std::optional<Tensor>& sample_weight = std::nullopt);
  /// total / count, 0 when count is 0 (Keras's divide_no_nan: nothing seen, or weights summing to 0).
  double result() const { return count_ == 0 ? 0.0 : total_ / count_; }
  /// Forgets everything accumulated (Keras: at the start of each epoch).
  void reset_state() { total_ = count_ = 0; }
  /// The name given at construction.
  const std::string& name() const { return name_; }
  /// The weighted sum and the total weight accumulated so far: result() is total / count.
  ///@{
  double total() const { return total_; }
  double count() const { return count_; }
  ///@}

 private:
  std::string name_;
  double total_ = 0, count_ = 0;
};

/// The part every accuracy metric shares (Keras's MeanMetricWrapper): a running Mean of
/// per-element matches. Subclasses add update_state(y_true, y_pred, sample_weight); with
/// `sample_weight`, each match (1 or 0) counts with its weight, aligned with the matches as
/// Mean::update_state aligns weights with values (a (batch,) weight per example).
class MeanMetricWrapper {
 public:
  /// The fraction of matching elements so far, in [0, 1]; 0 before any update.
  double result() const { return mean_.result(); }
  /// Forgets every match counted (Keras: at the start of each epoch).
  void reset_state() { mean_.reset_state(); }
  /// The name given at construction.
  const std::string& name() const { return mean_.name(); }
  /// The weighted matches and the total weight counted so far: result() is total / count. Sums
  /// over shards of the data (the ranks of a data-parallel fit) give the whole data's.
  ///@{
  double total() const { return mean_.total(); }
  double count() const { return mean_.count(); }
  ///@}

 protected:
  /// A metric named `name`, with nothing counted.
  explicit MeanMetricWrapper(std::string name) : mean_(std::move(name)) {}
  /// The running mean of per-element matches (1 for a match, 0 otherwise).
  Mean mean_;
};

/// How often y_pred equals y_true exactly (keras.metrics.Accuracy): same shape and dtype.
class Accuracy : public MeanMetricWrapper {
 public:
  /// A metric named `name`, with nothing counted.
  explicit Accuracy(std::string name = "accuracy") : MeanMetricWrapper(std::move(name)) {}
  /// Counts the elements where y_pred == y_true. Throws InvalidArgumentError (naming the metric)
  /// for an undefined tensor or different shapes or dtypes.
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const std::optional<Tensor>& sample_weight = std::nullopt);
};

/// How often y_pred > threshold, as 1 or 0, equals y_true (keras.metrics.BinaryAccuracy, default
/// threshold 0.5): y_true holds 0/1 labels and is not thresholded (a label of 0.3 matches no
/// prediction); the same shape, or as in Keras one side with a trailing size-1 axis the other
/// lacks (labels (batch,) against predictions (batch, 1)); y_true and y_pred may have different
/// numeric or bool dtypes.
class BinaryAccuracy : public MeanMetricWrapper {
 public:
  /// A metric named `name` that thresholds y_pred at `threshold`.
  explicit BinaryAccuracy(double threshold = 0.5, std::string name = "binary_accuracy")
      : MeanMetricWrapper(std::move(name)), threshold_(threshold) {}
  /// Counts the elements where (y_pred > threshold ? 1 : 0) == y_true. Throws
  /// InvalidArgumentError (naming the metric) for an undefined tensor or shapes that differ by
  /// more than that trailing size-1 axis.
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const std::optional<Tensor>& sample_weight = std::nullopt);

 private:
  double threshold_;
};

/// How often argmax(y_pred, -1) == argmax(y_true, -1) (keras.metrics.CategoricalAccuracy):
/// one-hot (or probability) y_true and scores y_pred of the same shape, rank >= 1.
class CategoricalAccuracy : public MeanMetricWrapper {
 public:
  /// A metric named `name`, with nothing counted.
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : MeanMetricWrapper(std::move(name)) {}
  /// Counts the rows whose argmax agree. Throws InvalidArgumentError (naming the metric) for an
  /// undefined tensor, different shapes, or a rank-0 input or empty class axis.
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const std::optional<Tensor>& sample_weight = std::nullopt);
};

/// How often argmax(y_pred, -1) equals the integer label y_true
/// (keras.metrics.SparseCategoricalAccuracy): y_true int32/int64 of y_pred's shape without the
/// last axis (or with a trailing size-1 axis); y_pred scores or logits, rank >= 1.
class SparseCategoricalAccuracy : public MeanMetricWrapper {
 public:
  /// A metric named `name`, with nothing counted.
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy")
      : MeanMetricWrapper(std::move(name)) {}
  /// Counts the rows whose argmax equals the label. Throws InvalidArgumentError (naming the
  /// metric and the shapes) for an undefined tensor, labels that are not int32/int64 or whose
  /// shape does not match y_pred's without its last axis, or a rank-0 y_pred or one with an
  /// empty class axis.
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const std::optional<Tensor>& sample_weight = std::nullopt);
};

}  // namespace tapeflow::metrics
#pragma GCC visibility pop
