#pragma once
/// \file nn/functional.h
/// Functional: Keras's functional API, a model made of layers applied to symbolic inputs
/// (nn/keras_tensor.h), for models that are not a straight line: branches, merges (nn/merge.h),
/// shared layers, several inputs or outputs.
///
///   auto inputs = tf::layers::Input({32});
///   auto hidden = tf::layers::dense(32, "relu")->apply(inputs);
///   auto residual = tf::layers::add()->apply({inputs, hidden});
///   auto outputs = tf::layers::dense(10)->apply(residual);
///   tf::layers::Functional model(inputs, outputs);      // keras.Model(inputs, outputs)
///   tf::Tensor logits = model(x);                       // x: (batch, 32) float32
///   model.compile(...); model.fit(x, y, {...});         // a Model (nn/model.h)
///
/// Running the model calls each layer's node once, in an order where every node's inputs come
/// first, on the tensors its inputs gave; a layer applied twice (a shared layer) runs twice with
/// one set of weights. variables() lists the layers' variables in the order of layers(), each
/// once. A model is itself a Layer, so it can be applied inside another model.
///
/// A model with one input and one output is a Layer like any other: call(x, training), fit,
/// evaluate and predict. With several, call it with a list (call(inputs, training) returns one
/// tensor per output); fit, evaluate and predict take one input and one output.
///
/// summary() prints Keras 2's table. A model that is a chain (each layer applied once to one
/// input) gets the Sequential layout with the input's row first:
///
///   Model: "model"
///   _________________________________________________________________
///    Layer (type)                Output Shape              Param #
///   =================================================================
///    input_1 (InputLayer)        [(None, 32)]              0
///   _________________________________________________________________
///    dense (Dense)               (None, 10)                330
///   =================================================================
///
/// any other gets Keras's four columns, with each layer's inputs as "name[node][tensor]":
///
///    add (Add)                      (None, 32)           0           ['input_1[0][0]',
///                                                                     'dense[0][0]']
///
/// Layers are named as created; where two layers of one model share a name, the table shows
/// the later ones as Keras would have named them ("dense_1", "dense_2", ...).

#include <memory>
#include <string>
#include <vector>

#include "tapeflow/nn/keras_tensor.h"
#include "tapeflow/nn/model.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// A model of the layers between `inputs` and `outputs` (keras.Model(inputs, outputs); Keras's
/// Functional class). See the file comment.
class Functional : public Model {
 public:
  /// The model computing `outputs` from `inputs`. Throws InvalidArgumentError naming the model
  /// for no inputs or outputs, an input that is not an Input() or given twice, and, as Keras's
  /// "Graph disconnected", an output that needs an Input() not among `inputs` (naming both).
  Functional(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs, std::string name = "model");
  /// The model of one input and one output.
  Functional(const KerasTensor& input, const KerasTensor& output, std::string name = "model");
  ~Functional() override;

  /// The outputs for `inputs`, one per model input in order. An input of another floating (or
  /// integer) dtype than its Input's is cast to it, as Keras conforms inputs. Throws
  /// InvalidArgumentError naming the model and the input for another count, rank or known
  /// dimension than the Input's, or a float for an integer Input (or the reverse).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training);
  /// The output of a model with one input and one output. Throws InvalidArgumentError naming
  /// the counts for a model with several.
  Tensor call(const Tensor& x, bool training) override;
  /// Inference calls: call(x, training) and call(inputs, training).
  ///@{
  Tensor operator()(const Tensor& x, bool training = false) { return call(x, training); }
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, bool training = false) {
    return call(inputs, training);
  }
  ///@}

  /// The symbolic inputs given at construction.
  const std::vector<KerasTensor>& inputs() const;
  /// The symbolic outputs given at construction.
  const std::vector<KerasTensor>& outputs() const;
  /// The layers (each once; not the inputs, which are not layers here), in Keras's order:
  /// deepest first (farthest from the outputs), then in order of discovery from the outputs.
  const std::vector<std::shared_ptr<Layer>>& layers() const;

  /// Keras 2's model.summary() as text (see the file comment): the inputs and layers in the
  /// order of layers(), their output shapes (None for unknown dims; "multiple" for a shared layer
  /// whose calls differ), parameters (the elements of all a layer's variables), and the model's
  /// totals (each variable once).
  std::string summary() const;

 private:
  struct Graph;
  std::unique_ptr<Graph> graph_;
};

/// A Functional in a std::shared_ptr, e.g. to apply inside another model:
/// tf::layers::model(inputs, outputs)->apply(x).
///@{
inline std::shared_ptr<Functional> model(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs,
                                         std::string name = "model") {
  return std::make_shared<Functional>(std::move(inputs), std::move(outputs), std::move(name));
}
inline std::shared_ptr<Functional> model(const KerasTensor& input, const KerasTensor& output,
                                         std::string name = "model") {
  return std::make_shared<Functional>(input, output, std::move(name));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
