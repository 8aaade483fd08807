#include "graph/optimize.h"

#include <algorithm>
#include <map>
#include <optional>

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
    // Equal output counts too: a file's node may list any (the executor refuses it when it runs).
    auto same = std::find_if(bucket.begin(), bucket.end(), [&](std::size_t k) {
      return nodes[k].outputs.size() == n.outputs.size() && attrs_equal(nodes[k], n);
    });
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
    std::optional<std::vector<Tensor>> outs;
    try {
      outs = n.op->forward(n.attrs.get(), ins);
    } catch (const Error&) {
    }
    // A file's node may also list another count than the op gives: it stays, for the executor to
    // refuse when it runs.
    if (!outs || outs->size() != n.outputs.size()) {
      nodes.push_back(std::move(n));
      continue;
    }
    for (std::size_t i = 0; i < outs->size(); ++i) {
      known.emplace(n.outputs[i], (*outs)[i]);
      g.constants.emplace_back(n.outputs[i], (*outs)[i]);
    }
  }
  g.nodes = std::move(nodes);
  eliminate_dead_code(g);
}

void drop_stop_gradients(Graph& g) {
  static const autodiff::OpDef& stop = autodiff::registry().get("StopGradient");
  std::vector<ValueId> rep(g.values.size());
  for (std::size_t v = 0; v < rep.size(); ++v) rep[v] = static_cast<ValueId>(v);
  std::vector<Node> nodes;
  for (Node& n : g.nodes) {
    // A file's node may list other counts (the executor refuses it when it runs).
    if (n.kind == NodeKind::kOp && n.op == &stop && n.inputs.size() == 1 && n.outputs.size() == 1)
      rep[n.outputs[0]] = rep[n.inputs[0]];  // in order, so a chain of them reaches its first input
    else
      nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  rename_uses(g, rep);
}

void relu_gradient_before_max_pool_gradient(Graph& g) {
  std::vector<std::ptrdiff_t> producer(g.values.size(), -1);
  std::vector<int> readers(g.values.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    for (ValueId v : g.nodes[k].outputs) producer[v] = static_cast<std::ptrdiff_t>(k);
    for (ValueId v : g.nodes[k].inputs) ++readers[v];
  }
  for (ValueId v : g.outputs) ++readers[v];
  // With the counts its op takes and gives: a file's node may list any (the executor refuses it
  // when it runs), and the rewrite reads them.
  auto is_op = [](const Node& n, std::string_view name, std::size_t inputs) {
    return n.kind == NodeKind::kOp && n.op->name() == name && n.inputs.size() == inputs &&
           n.outputs.size() == 1;
  };
  // The MaxPool of each pooled value, to find the pooled output the mask is taken from.
  std::vector<std::pair<ValueId, std::size_t>> pools;
  for (std::size_t k = 0; k < g.nodes.size(); ++k)
    if (is_op(g.nodes[k], "MaxPool", 1)) pools.emplace_back(g.nodes[k].inputs[0], k);
  std::vector<ValueId> rep(g.values.size());
  for (std::size_t v = 0; v < rep.size(); ++v) rep[v] = static_cast<ValueId>(v);
  std::vector<std::optional<Node>> before(g.nodes.size());  // a node to insert before node k
  std::vector<bool> drop(g.nodes.size(), false);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& relu = g.nodes[k];
    if (!is_op(relu, "ReluGrad", 2) || producer[relu.inputs[0]] < 0) continue;
    const auto m = static_cast<std::size_t>(producer[relu.inputs[0]]);
    Node& grad = g.nodes[m];
    if (!is_op(grad, "MaxPoolGrad", 2) || grad.inputs[0] != relu.inputs[1] || readers[relu.inputs[0]] != 1 ||
        before[m].has_value())
      continue;
    auto pool = std::find_if(pools.begin(), pools.end(), [&](const auto& p) {
      return p.first == grad.inputs[0] && p.second < m && attrs_equal(g.nodes[p.second], grad);
    });
    if (pool == pools.end()) continue;
    // ReluGrad(MaxPoolGrad(x, dy), x) = MaxPoolGrad(x, ReluGrad(dy, MaxPool(x))), bit for bit: the
    // pooling gradient routes dy[o] to the window's first maximum p, where x[p] equals the pooled
    // y[o] (NaN included), so the mask x[p] > 0 is y[o] > 0; positions nothing is routed to are 0
    // either way. The mask then runs over the pooled tensor, a quarter of x's size for 2x2 windows,
    // and one full-size pass goes.
    Node masked = relu;
    const ValueId dy = grad.inputs[1];
    masked.inputs = {dy, g.nodes[pool->second].outputs[0]};
    masked.outputs = {g.add_value(g.values[dy].shape, g.values[dy].dtype)};
    grad.inputs[1] = masked.outputs[0];
    rep[relu.outputs[0]] = grad.outputs[0];
    before[m] = std::move(masked);
    drop[k] = true;
  }
  std::vector<Node> nodes;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (before[k].has_value()) nodes.push_back(*std::move(before[k]));
    if (!drop[k]) nodes.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(nodes);
  for (std::size_t v = rep.size(); v < g.values.size(); ++v)
    rep.push_back(static_cast<ValueId>(v));  // the masks
  rename_uses(g, rep);
}

}  // namespace tapeflow::graph
