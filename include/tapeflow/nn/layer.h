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

#include <string>

#include "tapeflow/module.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// What every Keras-style layer is: a Module (it owns its variables) with call(x, training),
/// so a Sequential can hold and call any of them.
class Layer : public Module {
 public:
  /// A layer named `name` (Module::name()).
  explicit Layer(std::string name) : Module(std::move(name)) {}
  /// The layer applied to `x`; `training` is true inside a training step.
  virtual Tensor call(const Tensor& x, bool training) = 0;
};

}  // namespace tapeflow::layers
#pragma GCC visibility pop
