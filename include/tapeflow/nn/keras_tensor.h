#pragma once
/// \file nn/keras_tensor.h
/// KerasTensor and Input: the symbolic tensors of Keras's functional API (nn/functional.h).
///
///   tf::layers::KerasTensor inputs = tf::layers::Input({784});          // (None, 784) float32
///   tf::layers::KerasTensor x = tf::layers::dense(64, "relu")->apply(inputs);
///   x.spec().to_string();                                               // "float32[?, 64]"
///
/// A KerasTensor holds no values: it records which layer made it from which KerasTensors, with
/// the shape and dtype that layer gives. Applying a layer to one builds the layer (creates its
/// weights) as Keras does, and finds the output's shape and dtype by calling the layer,
/// unrecorded, on zeros of the input's shape: twice, with an unknown batch first 1 then 2 long
/// and the other unknown dimensions (given as -1) first 7 then 11 long, so an output dimension
/// that differs between the two calls is unknown. A layer that cannot take inputs of those sizes (a valid
/// convolution wider than 7 over a length left unknown) fails there with its own error, named in context.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/dtype.h"
#include "tapeflow/tensor_spec.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

namespace detail {
struct SymbolicNode;  // the layer call that made a KerasTensor (src/nn/symbolic_node.h)
}  // namespace detail

/// A symbolic tensor (Keras's KerasTensor): the output of Input() or of a layer applied to
/// KerasTensors. Copies share the node they name.
class KerasTensor {
 public:
  /// The output of `node` (made by Input() and Layer::apply()).
  explicit KerasTensor(std::shared_ptr<const detail::SymbolicNode> node);

  /// The shape (-1 for an unknown dimension; the batch is unknown unless Input's batch_size)
  /// and dtype; the spec's name is the name of the layer (or Input) that made it.
  const TensorSpec& spec() const;
  /// The dtype, spec().dtype.
  DType dtype() const { return spec().dtype; }
  /// The shape with None for unknown dimensions, as Keras prints it: "(None, 784)".
  std::string shape_string() const;
  /// "KerasTensor(shape=(None, 784), dtype=float32, name='input_1')".
  std::string to_string() const;
  /// The node that made this tensor.
  const std::shared_ptr<const detail::SymbolicNode>& node() const { return node_; }

 private:
  std::shared_ptr<const detail::SymbolicNode> node_;
};

/// Input()'s keyword arguments (keras.Input).
struct InputOptions {
  /// A fixed batch size; std::nullopt: the batch dimension is unknown (None).
  std::optional<std::int64_t> batch_size{};
  DType dtype = DType::Float32;  ///< the dtype of the values the model is called with
  /// The input's name; empty: "input_1", "input_2", ... in order of creation, as Keras 2 names them.
  std::string name{};
};

/// A symbolic input of `shape` (without the batch dimension; -1 for a dimension of any size),
/// like keras.Input(shape=...). Throws InvalidArgumentError naming Input for a dimension below
/// -1 or a batch_size < 1.
KerasTensor Input(std::vector<std::int64_t> shape, InputOptions options = {});

}  // namespace tapeflow::layers
#pragma GCC visibility pop
