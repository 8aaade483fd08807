#pragma once
/// \file nn/layer.h
/// Layer: the common base of the Keras-style layers (Dense, Conv2D, Flatten, Dropout, ...), so
/// that a Sequential can hold and call any of them.
///
///   std::shared_ptr<tf::layers::Layer> l = tf::layers::dropout(0.5);   // see sequential.h
///   tf::Tensor y = l->call(x, /*training=*/true);
///
/// `call(x, training)` is Keras's Layer.call: `training` switches layers that behave differently
/// while training (Dropout); the others ignore it. Each layer also has `operator()(x)`, the
/// inference call (training = false).

#include <optional>
#include <string>

#include "tapeflow/mixed_precision.h"
#include "tapeflow/module.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// What every Keras-style layer is: a Module (it owns its variables) with call(x, training),
/// so a Sequential can hold and call any of them.
class Layer : public Module {
 public:
  /// A layer named `name` (Module::name()) with the dtype policy `policy`, or without one the
  /// global policy of the moment (mixed_precision.h).
  explicit Layer(std::string name, std::optional<mixed_precision::Policy> policy = std::nullopt);
  /// The layer applied to `x`; `training` is true inside a training step.
  virtual Tensor call(const Tensor& x, bool training) = 0;
  /// The layer's class as Keras names it in summaries: "Dense", "Conv2D", ... (the C++ class
  /// name without its namespace; a layer subclassed in Python gives its Python class name).
  virtual std::string class_name() const;
  /// The layer's dtype policy (Keras's dtype_policy); std::nullopt: it computes in its first
  /// input's dtype and creates its variables in it.
  const std::optional<mixed_precision::Policy>& dtype_policy() const { return policy_; }

 protected:
  /// `x` cast to the policy's compute dtype when it is floating (Keras's autocast); `x` itself
  /// without a policy.
  Tensor autocast(const Tensor& x) const;
  /// The dtype of the variables a layer builds for inputs of dtype `input`: the policy's
  /// variable dtype, or `input` without a policy.
  DType variable_dtype(DType input) const;

 private:
  std::optional<mixed_precision::Policy> policy_;
};

}  // namespace tapeflow::layers
#pragma GCC visibility pop
