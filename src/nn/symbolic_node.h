#pragma once
// The node behind a KerasTensor: one application of a layer (or an Input) in the functional
// API's graph. Nodes are immutable once made and shared by every KerasTensor and model that
// reaches them; a node only points to the nodes it was made from, so the graph has no cycles.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tapeflow/nn/keras_tensor.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/tensor_spec.h"

namespace tapeflow::layers::detail {

struct SymbolicNode {
  /// What the node computes from its inputs' values (the layer's call, or a merge over a list).
  using Invoke = std::function<Tensor(const std::vector<Tensor>& inputs, bool training)>;

  std::shared_ptr<Layer> layer;     ///< the layer applied; null for an Input
  std::vector<KerasTensor> inputs;  ///< what it was applied to, in order; none for an Input
  Invoke invoke;                    ///< empty for an Input
  TensorSpec spec;                  ///< the output's dims (-1 unknown) and dtype; name: the layer's
  std::uint64_t sequence = 0;       ///< creation order over the process: a layer's node index
};

/// "(None, 784)": dims with None for -1, as Python prints a tuple ("(None,)" for one).
std::string shape_with_none(const std::vector<std::int64_t>& dims);

/// The node of `layer` applied to `inputs`: its output's spec found by calling `invoke` on zeros
/// (see nn/keras_tensor.h); the node holds the layer. Throws InvalidArgumentError naming the
/// layer and the inputs when no std::shared_ptr owns the layer.
KerasTensor make_node(Layer& layer, std::vector<KerasTensor> inputs, SymbolicNode::Invoke invoke);

}  // namespace tapeflow::layers::detail
