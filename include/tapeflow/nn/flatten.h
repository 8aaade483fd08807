#pragma once
/// \file nn/flatten.h
/// Flatten: reshapes (batch, d1, d2, ...) to (batch, d1 * d2 * ...), keeping the batch
/// dimension, like tf.keras.layers.Flatten. A rank-1 input (batch,) becomes (batch, 1).
///
///   tf::layers::Flatten flatten;
///   flatten(tf::zeros({8, 4, 4, 3})).shape();   // (8, 48)

#include <memory>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Flattens every dimension but the first, the batch (tf.keras.layers.Flatten).
class Flatten : public Layer {
 public:
  /// A layer named `name`; it has no variables.
  explicit Flatten(std::string name = "flatten") : Layer(std::move(name)) {}
  /// x reshaped to (x.shape[0], product of the other dimensions). Throws InvalidArgumentError
  /// (naming Flatten and the shape) for an undefined tensor or a scalar.
  Tensor operator()(const Tensor& x);
  Tensor call(const Tensor& x, bool /*training*/) override { return (*this)(x); }
};

/// A Flatten layer in a std::shared_ptr, ready for Sequential: tf::layers::flatten().
inline std::shared_ptr<Flatten> flatten(std::string name = "flatten") {
  return std::make_shared<Flatten>(std::move(name));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
