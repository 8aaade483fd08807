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
///
/// `apply(x)` on a symbolic input (nn/keras_tensor.h) is Keras's call on a KerasTensor: it
/// builds the functional API's graph (nn/functional.h) instead of computing:
///
///   auto inputs = tf::layers::Input({784});
///   auto outputs = tf::layers::dense(10)->apply(tf::layers::dense(64, "relu")->apply(inputs));
///   tf::layers::Functional model(inputs, outputs);

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/mixed_precision.h"
#include "tapeflow/module.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

class KerasTensor;

/// What every Keras-style layer is: a Module (it owns its variables) with call(x, training),
/// so a Sequential can hold and call any of them. A layer applied to symbolic inputs is held by
/// the graph (a std::shared_ptr: the layer factories make them so).
class Layer : public Module, public std::enable_shared_from_this<Layer> {
 public:
  /// A layer named `name` (Module::name()) with the dtype policy `policy`, or without one the
  /// global policy of the moment (mixed_precision.h).
  explicit Layer(std::string name, std::optional<mixed_precision::Policy> policy = std::nullopt);
  /// The layer applied to `x`; `training` is true inside a training step.
  virtual Tensor call(const Tensor& x, bool training) = 0;
  /// The layer applied to the symbolic tensor `x` (Keras's call on a KerasTensor): the output's
  /// KerasTensor, whose node calls call(x, training) when the functional model runs. Builds the
  /// layer on its first application (see nn/keras_tensor.h). Throws InvalidArgumentError naming
  /// the layer when it is not owned by a std::shared_ptr, and rethrows what call() throws for
  /// inputs of x's shape and dtype, naming the layer and x.
  KerasTensor apply(const KerasTensor& x);
  /// The layer's class as Keras names it in summaries: "Dense", "Conv2D", ... (the C++ class
  /// name without its namespace; a layer subclassed in Python gives its Python class name).
  virtual std::string class_name() const;
  /// The layer's dtype policy (Keras's dtype_policy); std::nullopt: it computes in its first
  /// input's dtype and creates its variables in it.
  const std::optional<mixed_precision::Policy>& dtype_policy() const { return policy_; }
  /// The values of variables(), in order (Keras's get_weights).
  std::vector<Tensor> get_weights() const;
  /// Assigns `weights` to variables(), in order (Keras's set_weights). Throws InvalidArgumentError
  /// naming the layer, and the variable with both shapes and dtypes, unless the count, shapes and
  /// dtypes match; nothing is assigned then.
  void set_weights(const std::vector<Tensor>& weights);
  /// Whether the layer's weights train (Keras's layer.trainable; true at construction). A layer
  /// that is not trainable has no trainable_variables(), so Model::fit and an optimizer given
  /// them leave it as it is; BatchNormalization then also runs in inference mode.
  bool trainable() const override { return trainable_; }
  /// Sets trainable() of this layer and of every layer it tracks, at any depth (Keras's setter:
  /// freezing a model freezes its layers, unfreezing it unfreezes them all).
  void set_trainable(bool trainable);

 protected:
  /// `x` cast to the policy's compute dtype when it is floating (Keras's autocast); `x` itself
  /// without a policy.
  Tensor autocast(const Tensor& x) const;
  /// The dtype of the variables a layer builds for inputs of dtype `input`: the policy's
  /// variable dtype, or `input` without a policy.
  DType variable_dtype(DType input) const;

 private:
  std::optional<mixed_precision::Policy> policy_;
  bool trainable_ = true;
};

}  // namespace tapeflow::layers
#pragma GCC visibility pop
