#pragma once
/// \file nn/sequential.h
/// Sequential: a stack of layers called in order, like tf.keras.Sequential.
///
///   tf::layers::Sequential model{tf::layers::flatten(), tf::layers::dense(16, "relu"),
///                                tf::layers::dense(10)};
///   model.add(tf::layers::dropout(0.1));
///   tf::Tensor y = model(x);                       // inference (training = false)
///   tf::Tensor y_train = model(x, /*training=*/true);
///   model.trainable_variables();                   // layer by layer, in order
///
/// The lower-case factories (tf::layers::dense, conv2d, max_pool2d, average_pool2d, flatten,
/// dropout, batch_normalization, sequential) return each layer in a std::shared_ptr: layers are
/// Modules, which track their sub-modules by address, so they are neither copied nor moved, and a
/// model shares ownership of its layers. Any class derived from Layer goes in with
/// std::make_shared. variables() lists the variables layer by layer in the order the layers were
/// added (each layer's own order inside, e.g. kernel then bias).
///
/// A Conv2D whose activation is "relu" directly followed by a MaxPool2D runs as convolution,
/// pooling, then ReLU: the same values and gradients (max and ReLU commute), with the ReLU and its
/// gradient over the pooled tensor instead of the convolution's output. A tape then records the
/// Relu after the MaxPool.
///
/// summary() prints Keras's table of the layers (tf.keras 2's layout):
///
///   Model: "sequential"
///   _________________________________________________________________
///    Layer (type)                Output Shape              Param #
///   =================================================================
///    dense (Dense)               (None, 16)                80
///   _________________________________________________________________
///    dense_1 (Dense)             (None, 1)                 17
///   =================================================================
///   Total params: 97
///   Trainable params: 97
///   Non-trainable params: 0
///   _________________________________________________________________

#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tapeflow/nn/layer.h"
#include "tapeflow/nn/model.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// A stack of layers called in order (tf.keras.Sequential); a Model (compile, fit, evaluate,
/// predict: nn/model.h) and so a Layer, so models nest.
class Sequential : public Model {
 public:
  /// An empty model named `name`; add layers with add().
  explicit Sequential(std::string name = "sequential") : Model(std::move(name)) {}
  /// A model of the given layers, in order, named `name`, like keras.Sequential([...], name):
  /// Sequential model{dense(16, "relu"), dense(1)} or Sequential model({...}, "mlp").
  /// NOTE: braces fix the order the layers are created in (left to right), and with it the seeds
  /// that layers without an explicit seed draw from the process-wide sequence; the arguments of a
  /// call with parentheses, Sequential(dense(16), dense(1)), are evaluated in an unspecified order.
  Sequential(std::initializer_list<std::shared_ptr<Layer>> layers, std::string name = "sequential")
      : Model(std::move(name)) {
    for (const auto& layer : layers) add(layer);
  }
  /// A model of the given layers, in order.
  template <class... Ls>
  requires(sizeof...(Ls) > 0 &&
           (std::is_base_of_v<Layer, Ls> && ...)) explicit Sequential(std::shared_ptr<Ls>... layers)
      : Model("sequential") {
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

  /// Keras's model.summary() as text (see the file comment): a row per layer with its name and
  /// class_name(), its output shape with the batch dimension as None, and its parameters (the
  /// elements of all its variables, trainable or not), then the model's totals (each variable
  /// counted once). The output shapes come from running the layers in inference mode, unrecorded,
  /// on one example of zeros shaped as the model's last input (its shape without the batch
  /// dimension, and its dtype), or as `input_shape` (without the batch dimension) of `dtype`.
  /// Throws FailedPreconditionError (Keras's "This model has not yet been built") when the model
  /// has never been called and no input shape is given, and what the layers throw for an input
  /// shape they do not take.
  std::string summary(std::optional<Shape> input_shape = std::nullopt, DType dtype = DType::Float32);

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
  std::mutex input_mutex_;  // guards last_input_: a model may be called from several threads
  /// The shape without the batch dimension and the dtype of the last input, for summary().
  std::optional<std::pair<Shape, DType>> last_input_;
};

/// A Sequential in a std::shared_ptr, like keras.Sequential([...]), e.g. as a layer of another
/// model: tf::layers::sequential({tf::layers::dense(16, "relu"), tf::layers::dense(1)}), or an
/// empty one, tf::layers::sequential().
///@{
inline std::shared_ptr<Sequential> sequential(std::initializer_list<std::shared_ptr<Layer>> layers,
                                              std::string name = "sequential") {
  return std::make_shared<Sequential>(layers, std::move(name));
}
inline std::shared_ptr<Sequential> sequential(std::string name = "sequential") {
  return std::make_shared<Sequential>(std::move(name));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
