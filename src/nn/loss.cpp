#include "tapeflow/nn/loss.h"

#include <fmt/format.h>

#include <utility>

#include "tapeflow/errors.h"
#include "tapeflow/nn/losses.h"

namespace tapeflow::losses {
namespace {

/// The loss Keras calls `name` (or one of its aliases), bound to `options`; empty if unknown.
Loss::Function builtin(const std::string& name, LossOptions options, std::string& canonical) {
  const bool from_logits = options.from_logits;
  if (name == "sparse_categorical_crossentropy") {
    canonical = name;
    return [from_logits](const Tensor& y, const Tensor& p, const std::optional<Tensor>& w) {
      return sparse_categorical_crossentropy(y, p, from_logits, w);
    };
  }
  if (name == "categorical_crossentropy") {
    canonical = name;
    return [from_logits](const Tensor& y, const Tensor& p, const std::optional<Tensor>& w) {
      return categorical_crossentropy(y, p, from_logits, w);
    };
  }
  if (name == "binary_crossentropy") {
    canonical = name;
    return [from_logits](const Tensor& y, const Tensor& p, const std::optional<Tensor>& w) {
      return binary_crossentropy(y, p, from_logits, w);
    };
  }
  if (name == "mean_squared_error" || name == "mse") {
    canonical = "mean_squared_error";
    return [](const Tensor& y, const Tensor& p, const std::optional<Tensor>& w) {
      return mean_squared_error(y, p, w);
    };
  }
  return {};
}

}  // namespace

Loss::Loss(const std::string& name, LossOptions options) : function_(builtin(name, options, name_)) {
  if (!function_)
    throw InvalidArgumentError(fmt::format(
        "Loss: unknown loss '{}': expected sparse_categorical_crossentropy, categorical_crossentropy, "
        "binary_crossentropy, mean_squared_error (mse), or a function of (y_true, y_pred, sample_weight)",
        name));
}

Loss::Loss(std::string name, Function function) : name_(std::move(name)), function_(std::move(function)) {
  if (!function_) throw InvalidArgumentError(fmt::format("Loss '{}': the loss function is empty", name_));
}

}  // namespace tapeflow::losses
