#pragma once
/// \file nn/softmax.h
/// Softmax: the softmax of its input over one axis, as a layer (tf.keras.layers.Softmax), for
/// models that end in probabilities or normalise attention scores.
///
///   tf::layers::Softmax softmax;                // axis -1
///   softmax(logits);                            // each row sums to 1

#include <cstdint>
#include <memory>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of Softmax (Keras's constructor arguments).
struct SoftmaxOptions {
  /// The axis normalised over (negative counts from the end): Keras's default -1.
  std::int64_t axis = -1;
  /// The layer's name (Module::name()).
  std::string name = "softmax";
};

/// tf::nn::softmax over `axis`, as a layer (tf.keras.layers.Softmax).
class Softmax : public Layer {
 public:
  /// A layer with `options`; it has no variables.
  explicit Softmax(SoftmaxOptions options = {}) : Layer(options.name), axis_(options.axis) {}
  /// softmax(x) over the axis. Throws InvalidArgumentError naming the layer, the shape and the
  /// dtype for an input that is not floating or does not have the axis.
  Tensor operator()(const Tensor& x) { return call(x, false); }
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::int64_t axis_;
};

/// A Softmax layer in a std::shared_ptr, ready for Sequential: tf::layers::softmax().
inline std::shared_ptr<Softmax> softmax(SoftmaxOptions options = {}) {
  return std::make_shared<Softmax>(std::move(options));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
