#pragma once
// A metric as Model::compile names it ("accuracy", "sparse_categorical_accuracy", ...): the
// streaming metric it stands for (nn/metrics.h), with "accuracy" resolved from the shapes of the
// first batch as Keras 3 resolves it.

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "tapeflow/nn/metrics.h"
#include "tapeflow/tensor.h"

namespace tapeflow::layers {

class CompiledMetric {
 public:
  /// The metric named `name`. Throws InvalidArgumentError listing the known names otherwise.
  explicit CompiledMetric(std::string name);

  /// The name it is logged under: the name given.
  const std::string& name() const { return name_; }
  /// Accumulates a batch.
  void update(const Tensor& y_true, const Tensor& y_pred, const std::optional<Tensor>& sample_weight);
  /// The value so far (0 before any update).
  double result() const;
  /// Forgets what was accumulated.
  void reset();
  /// The (total, count) accumulated so far, result() being their ratio; (0, 0) before any update.
  std::pair<double, double> state() const;

 private:
  using Metric = std::variant<metrics::Accuracy, metrics::BinaryAccuracy, metrics::CategoricalAccuracy,
                              metrics::SparseCategoricalAccuracy>;
  std::string name_;
  std::optional<Metric> metric_;  // "accuracy": empty until the first batch shows its kind
};

}  // namespace tapeflow::layers
