#include "nn/compiled_metric.h"

#include <fmt/format.h>

#include "tapeflow/errors.h"

namespace tapeflow::layers {
namespace {

bool is_accuracy(const std::string& name) { return name == "accuracy" || name == "acc"; }

}  // namespace

CompiledMetric::CompiledMetric(std::string name) : name_(std::move(name)) {
  if (name_ == "sparse_categorical_accuracy")
    metric_.emplace(metrics::SparseCategoricalAccuracy(name_));
  else if (name_ == "categorical_accuracy")
    metric_.emplace(metrics::CategoricalAccuracy(name_));
  else if (name_ == "binary_accuracy")
    metric_.emplace(metrics::BinaryAccuracy(0.5, name_));
  else if (!is_accuracy(name_))
    throw InvalidArgumentError(
        fmt::format("compile: unknown metric '{}': expected accuracy (acc), sparse_categorical_accuracy, "
                    "categorical_accuracy or binary_accuracy",
                    name_));
}

void CompiledMetric::update(const Tensor& y_true, const Tensor& y_pred, const std::optional<Tensor>& w) {
  if (!metric_) {
    // The accuracy Keras 3 takes for "accuracy" (compile_utils.get_metric): binary when y_pred
    // has one column, sparse categorical when the labels have a lower rank or one column against
    // several, categorical otherwise.
    const auto& t = y_true.shape();
    const auto& p = y_pred.shape();
    const std::int64_t t_last = t.rank() > 0 ? t[t.rank() - 1] : 1;
    const std::int64_t p_last = p.rank() > 0 ? p[p.rank() - 1] : 1;
    if (p_last == 1)
      metric_.emplace(metrics::BinaryAccuracy(0.5, name_));
    else if (t.rank() < p.rank() || (t_last == 1 && p_last > 1))
      metric_.emplace(metrics::SparseCategoricalAccuracy(name_));
    else
      metric_.emplace(metrics::CategoricalAccuracy(name_));
  }
  std::visit([&](auto& m) { m.update_state(y_true, y_pred, w); }, *metric_);
}

double CompiledMetric::result() const {
  return metric_ ? std::visit([](const auto& m) { return m.result(); }, *metric_) : 0.0;
}

void CompiledMetric::reset() {
  if (metric_) std::visit([](auto& m) { m.reset_state(); }, *metric_);
}

std::pair<double, double> CompiledMetric::state() const {
  if (!metric_) return {0.0, 0.0};
  return std::visit([](const auto& m) { return std::pair(m.total(), m.count()); }, *metric_);
}

}  // namespace tapeflow::layers
