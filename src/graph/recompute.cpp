#include "graph/recompute.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "kernels/cpu/block_op.h"

namespace tapeflow::graph {
namespace {

/// The forward graph as recomputation reads it: who produces each value.
class Producers {
 public:
  explicit Producers(const Graph& g) : g_(g), producer_(g.values.size(), -1), input_(g.values.size(), -1) {
    for (std::size_t k = 0; k < g.nodes.size(); ++k)
      for (ValueId v : g.nodes[k].outputs) producer_[v] = static_cast<std::ptrdiff_t>(k);
    for (std::size_t i = 0; i < g.inputs.size(); ++i) input_[g.inputs[i]] = static_cast<std::ptrdiff_t>(i);
    for (const auto& [v, t] : g.constants) constant_.emplace(v, &t);
  }

  /// The input index of `v`, or -1.
  std::ptrdiff_t input(ValueId v) const { return input_[v]; }
  /// The constant `v` is, or nullptr.
  const Tensor* constant(ValueId v) const {
    auto it = constant_.find(v);
    return it == constant_.end() ? nullptr : it->second;
  }

  /// The nodes computing `v` from inputs and constants, in execution order, if `v` is cheap to
  /// recompute (recompute.h); otherwise std::nullopt.
  std::optional<std::vector<std::size_t>> cone(ValueId v) const {
    if (producer_[v] < 0) return std::nullopt;  // an input or a constant: saved as it is
    const Shape& shape = g_.values[v].shape;
    std::vector<std::size_t> nodes;
    std::vector<ValueId> stack{v};
    absl::flat_hash_set<ValueId> seen;
    std::size_t array_leaves = 0;
    while (!stack.empty()) {
      const ValueId u = stack.back();
      stack.pop_back();
      if (!seen.insert(u).second) continue;
      if (input_[u] >= 0 || constant_.contains(u)) {
        if (g_.values[u].shape.num_elements() > 1 && ++array_leaves > 2) return std::nullopt;
        continue;
      }
      if (producer_[u] < 0) return std::nullopt;
      const auto k = static_cast<std::size_t>(producer_[u]);
      const Node& n = g_.nodes[k];
      const bool cheap = n.kind == NodeKind::kOp && n.op->block != nullptr && !n.op->stateful &&
                         n.op->block->kind == cpu::BlockOp::Kind::kElementwise && n.op->block->cheap &&
                         n.outputs.size() == 1;
      if (!cheap || g_.values[u].shape != shape) return std::nullopt;
      nodes.push_back(k);
      if (nodes.size() > kMaxRecomputedOps) return std::nullopt;
      stack.insert(stack.end(), n.inputs.begin(), n.inputs.end());
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  }

 private:
  const Graph& g_;
  std::vector<std::ptrdiff_t> producer_, input_;
  absl::flat_hash_map<ValueId, const Tensor*> constant_;
};

}  // namespace

void recompute_cheap_saved_values(const Graph& forward, std::span<const Tensor> forward_args, Graph& backward,
                                  std::size_t num_cotangents, SavedValues& saved) {
  const Producers producers(forward);
  std::vector<std::optional<std::vector<std::size_t>>> cones;
  for (ValueId v : saved.forward) cones.push_back(producers.cone(v));
  if (std::none_of(cones.begin(), cones.end(), [](const auto& c) { return c.has_value(); })) return;

  // What stays saved, and the backward value of every forward value the recomputation reads.
  SavedValues kept;
  absl::flat_hash_map<ValueId, ValueId> in_backward;
  for (std::size_t i = 0; i < saved.forward.size(); ++i) {
    in_backward.emplace(saved.forward[i], saved.backward_inputs[i]);
    if (cones[i]) continue;
    kept.forward.push_back(saved.forward[i]);
    kept.backward_inputs.push_back(saved.backward_inputs[i]);
    kept.tensors.push_back(saved.tensors[i]);
  }
  // The recomputing nodes, copies of the forward's, run first in the backward graph.
  std::vector<Node> prologue;
  absl::flat_hash_set<std::size_t> copied;
  auto backward_value = [&](ValueId v) {
    if (auto it = in_backward.find(v); it != in_backward.end()) return it->second;
    const ValueId b = backward.add_value(forward.values[v].shape, forward.values[v].dtype);
    if (const Tensor* c = producers.constant(v)) {
      backward.constants.emplace_back(b, *c);
    } else if (const std::ptrdiff_t i = producers.input(v); i >= 0) {
      // An input the record keeps anyway: saved at no cost.
      kept.forward.push_back(v);
      kept.backward_inputs.push_back(b);
      kept.tensors.push_back(forward_args[static_cast<std::size_t>(i)]);
    }
    in_backward.emplace(v, b);
    return b;
  };
  for (const auto& cone : cones) {
    if (!cone) continue;
    for (std::size_t k : *cone) {
      if (!copied.insert(k).second) continue;
      Node n = forward.nodes[k];
      for (ValueId& v : n.inputs) v = backward_value(v);
      n.outputs[0] = backward_value(n.outputs[0]);
      prologue.push_back(std::move(n));
    }
  }
  prologue.insert(prologue.end(), std::make_move_iterator(backward.nodes.begin()),
                  std::make_move_iterator(backward.nodes.end()));
  backward.nodes = std::move(prologue);
  backward.inputs.resize(num_cotangents);
  backward.inputs.insert(backward.inputs.end(), kept.backward_inputs.begin(), kept.backward_inputs.end());
  saved = std::move(kept);
}

}  // namespace tapeflow::graph
