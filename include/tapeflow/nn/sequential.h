#pragma once
/// \file nn/sequential.h
/// Sequential: a stack of layers called in order, like tf.keras.Sequential.
///
///   tf::layers::Sequential model(std::make_shared<tf::layers::Flatten>(),
///                                std::make_shared<tf::layers::Dense>(16, "relu"),
///                                std::make_shared<tf::layers::Dense>(10));
///   model.add(std::make_shared<tf::layers::Dropout>(0.1));
///   tf::Tensor y = model(x);                       // inference (training = false)
///   tf::Tensor y_train = model(x, /*training=*/true);
///   model.trainable_variables();                   // layer by layer, in order
///
/// The model shares ownership of its layers; variables() lists them layer by layer in the order
/// the layers were added (each layer's own order inside, e.g. kernel then bias).

#include <memory>
#include <string>
#include <vector>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// A stack of layers called in order (tf.keras.Sequential); itself a Layer, so models nest.
class Sequential : public Layer {
 public:
  /// An empty model named `name`; add layers with add().
  explicit Sequential(std::string name = "sequential") : Layer(std::move(name)) {}
  /// A model of the given layers, in order.
  template <class... Ls>
  requires(sizeof...(Ls) > 0 &&
           (std::is_base_of_v<Layer, Ls> && ...)) explicit Sequential(std::shared_ptr<Ls>... layers)
      : Layer("sequential") {
    (add(std::move(layers)), ...);
  }

  /// Appends a layer. Throws InvalidArgumentError (naming Sequential) for a null pointer or for
  /// the model itself.
  void add(std::shared_ptr<Layer> layer);

  /// The layers applied in order to `x`. A model without layers returns `x`.
  Tensor operator()(const Tensor& x, bool training = false) { return call(x, training); }
  Tensor call(const Tensor& x, bool training) override;

  /// The layers, in call order.
  const std::vector<std::shared_ptr<Layer>>& layers() const { return layers_; }

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace tapeflow::layers
#pragma GCC visibility pop
