#include "function/optimize.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "autodiff/attr_codec.h"

namespace tapeflow::graph {
namespace {

/// Replaces every use of a value by its representative (inputs of nodes and graph outputs).
void rename_uses(Graph& g, const std::vector<ValueId>& rep) {
  for (Node& n : g.nodes)
    for (ValueId& v : n.inputs) v = rep[v];
  for (ValueId& v : g.outputs) v = rep[v];
}

}  // namespace

bool attrs_equal(const Node& a, const Node& b) {
  if (a.attrs == b.attrs) return true;
  const autodiff::AttrsCodec* codec = a.op->attrs_codec;
  return a.attrs != nullptr && b.attrs != nullptr && codec != nullptr &&
         codec->equal(a.attrs.get(), b.attrs.get());
}

void eliminate_dead_code(Graph& g) {
  std::vector<bool> used(g.values.size(), false);
  for (ValueId v : g.outputs) used[v] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (std::size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    const bool pure = (n.kind == NodeKind::kOp && !n.op->stateful) || n.kind == NodeKind::kFused ||
                      n.kind == NodeKind::kReadVariable;
    keep[k] = !pure || std::any_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) { return used[v]; });
    if (keep[k])
      for (ValueId v : n.inputs) used[v] = true;
  }
  std::vector<Node> nodes;
  for (std::size_t k = 0; k < g.nodes.size(); ++k)
    if (keep[k]) nodes.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(nodes);
  std::erase_if(g.constants, [&](const auto& c) { return !used[c.first]; });
}

void eliminate_common_subexpressions(Graph& g) {
  std::vector<ValueId> rep(g.values.size());
  for (std::size_t v = 0; v < rep.size(); ++v) rep[v] = static_cast<ValueId>(v);
  // Candidates by (op, inputs); attributes are compared within a bucket.
  std::map<std::pair<const autodiff::OpDef*, std::vector<ValueId>>, std::vector<std::size_t>> seen;
  std::vector<Node> nodes;
  for (Node& n : g.nodes) {
    for (ValueId& v : n.inputs) v = rep[v];
    if (n.kind != NodeKind::kOp || n.op->stateful) {
      nodes.push_back(std::move(n));
      continue;
    }
    auto& bucket = seen[{n.op, n.inputs}];
    auto same =
        std::find_if(bucket.begin(), bucket.end(), [&](std::size_t k) { return attrs_equal(nodes[k], n); });
    if (same != bucket.end()) {
      const Node& first = nodes[*same];
      for (std::size_t i = 0; i < n.outputs.size(); ++i) rep[n.outputs[i]] = first.outputs[i];
      continue;
    }
    bucket.push_back(nodes.size());
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  rename_uses(g, rep);
}

void fold_constants(Graph& g) {
  constexpr std::size_t kMaxFoldedBytes = 64 * 1024;
  absl::flat_hash_map<ValueId, Tensor> known;
  for (const auto& [v, t] : g.constants) known.emplace(v, t);
  std::vector<Node> nodes;
  for (Node& n : g.nodes) {
    const bool foldable =
        n.kind == NodeKind::kOp && !n.op->stateful && !n.inputs.empty() &&
        std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return known.contains(v); }) &&
        std::all_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) {
          const Value& x = g.values[v];
          return static_cast<std::size_t>(x.shape.num_elements()) * dtype_size(x.dtype) <= kMaxFoldedBytes;
        });
    if (!foldable) {
      nodes.push_back(std::move(n));
      continue;
    }
    std::vector<Tensor> ins;
    for (ValueId v : n.inputs) ins.push_back(known.at(v));
    // An op that throws on these constants would throw on every call: leave it to throw then,
    // where the error names the call.
    std::vector<Tensor> outs;
    try {
      outs = n.op->forward(n.attrs.get(), ins);
    } catch (const Error&) {
      nodes.push_back(std::move(n));
      continue;
    }
    for (std::size_t i = 0; i < outs.size(); ++i) {
      known.emplace(n.outputs[i], outs[i]);
      g.constants.emplace_back(n.outputs[i], outs[i]);
    }
  }
  g.nodes = std::move(nodes);
  eliminate_dead_code(g);
}

}  // namespace tapeflow::graph
