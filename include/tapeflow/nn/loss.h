#pragma once
/// \file nn/loss.h
/// Loss: a loss function as Model::compile takes it (Keras's `loss` argument), a name and a
/// function of (y_true, y_pred, sample_weight) returning the batch's scalar loss.
///
///   tf::losses::Loss a("sparse_categorical_crossentropy", {.from_logits = true});  // by Keras's name
///   tf::losses::Loss b("huber", [](const tf::Tensor& y, const tf::Tensor& p,
///                                  const std::optional<tf::Tensor>& w) { return my_huber(y, p, w); });
///   tf::Tensor loss = a(labels, logits);
///
/// The names are Keras's identifiers of the losses in nn/losses.h: "sparse_categorical_crossentropy",
/// "categorical_crossentropy", "binary_crossentropy", "mean_squared_error" (and its alias "mse").
/// As in Keras, a loss given by name expects probabilities unless `from_logits` says otherwise.

#include <functional>
#include <optional>
#include <string>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::losses {

/// Options of a loss given by name (the keyword arguments of Keras's loss classes).
struct LossOptions {
  /// Whether y_pred holds logits (the crossentropies); ignored by mean_squared_error.
  bool from_logits = false;
};

/// A named loss function (see the file comment).
class Loss {
 public:
  /// (y_true, y_pred, sample_weight) -> the batch's scalar loss, differentiable in y_pred.
  using Function = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred,
                                        const std::optional<Tensor>& sample_weight)>;

  /// The loss Keras names `name`, e.g. "sparse_categorical_crossentropy". Throws
  /// InvalidArgumentError listing the known names for another name.
  Loss(const std::string& name, LossOptions options = {});
  /// Keras's string form, `loss="mse"`: the loss named `name` with default options.
  Loss(const char* name) : Loss(std::string(name)) {}  // NOLINT(google-explicit-constructor)
  /// A loss of your own, shown as `name` (e.g. in errors). Throws InvalidArgumentError for an
  /// empty function.
  Loss(std::string name, Function function);

  /// The loss of a batch: function(y_true, y_pred, sample_weight).
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred,
                    const std::optional<Tensor>& sample_weight = std::nullopt) const {
    return function_(y_true, y_pred, sample_weight);
  }
  /// The name: Keras's canonical one for a built-in loss ("mse" gives "mean_squared_error").
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Function function_;
};

}  // namespace tapeflow::losses
#pragma GCC visibility pop
