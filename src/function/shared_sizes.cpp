#include "function/shared_sizes.h"

#include <fmt/format.h>

#include "autodiff/attr_codec.h"
#include "function/optimize.h"

namespace tapeflow::graph {

std::string why_not_shareable(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.kind == NodeKind::kAssign || n.kind == NodeKind::kAssignAdd || n.kind == NodeKind::kAssignSub)
      return fmt::format("it assigns the variable '{}'",
                         g.variables[static_cast<std::size_t>(n.variable)].name);
    if (n.kind != NodeKind::kOp) continue;
    if (n.op->graph_op)
      return fmt::format("it holds {}, whose graphs are built for the traced shapes", n.name());
    if (n.op->stateful) return fmt::format("its op {} changes state", n.name());
  }
  return "";
}

namespace {

std::string attrs_text(const Node& n) {
  if (n.attrs == nullptr) return "none";
  return n.op->attrs_codec != nullptr ? n.op->attrs_codec->to_string(n.attrs.get()) : "(not comparable)";
}

bool same_variable(const CapturedVariable& a, const CapturedVariable& b) {
  return !a.state.owner_before(b.state) && !b.state.owner_before(a.state);
}

}  // namespace

std::string first_difference(const Graph& a, const Graph& b) {
  if (a.nodes.size() != b.nodes.size() || a.values.size() != b.values.size())
    return fmt::format("{} nodes and {} values against {} and {}", a.nodes.size(), a.values.size(),
                       b.nodes.size(), b.values.size());
  if (a.inputs != b.inputs || a.outputs != b.outputs) return "their inputs or outputs are other values";
  for (std::size_t v = 0; v < a.values.size(); ++v)
    if (a.values[v].dtype != b.values[v].dtype || a.values[v].shape.rank() != b.values[v].shape.rank())
      return fmt::format("value v{} is {} {} against {} {}", v, dtype_name(a.values[v].dtype),
                         a.values[v].shape.to_string(), dtype_name(b.values[v].dtype),
                         b.values[v].shape.to_string());
  for (std::size_t k = 0; k < a.nodes.size(); ++k) {
    const Node &x = a.nodes[k], &y = b.nodes[k];
    if (x.kind != y.kind || x.op != y.op || x.variable != y.variable || x.inputs != y.inputs ||
        x.outputs != y.outputs)
      return fmt::format("node {} is {} against {}", k, x.name(), y.name());
    if (x.kind == NodeKind::kOp && !attrs_equal(x, y))
      return fmt::format("node {} ({}) has the attributes {} against {}", k, x.name(), attrs_text(x),
                         attrs_text(y));
  }
  if (a.constants.size() != b.constants.size())
    return fmt::format("{} constants against {}", a.constants.size(), b.constants.size());
  for (std::size_t i = 0; i < a.constants.size(); ++i) {
    const auto& [va, ta] = a.constants[i];
    const auto& [vb, tb] = b.constants[i];
    if (va != vb || !autodiff::codec_detail::FieldCodec<Tensor>::equal(ta, tb))
      return fmt::format("the constant v{} ({} {}) against v{} ({} {})", va, dtype_name(ta.dtype()),
                         ta.shape().to_string(), vb, dtype_name(tb.dtype()), tb.shape().to_string());
  }
  if (a.variables.size() != b.variables.size())
    return fmt::format("{} variables against {}", a.variables.size(), b.variables.size());
  for (std::size_t k = 0; k < a.variables.size(); ++k)
    if (!same_variable(a.variables[k], b.variables[k]))
      return fmt::format("variable {} is '{}' against '{}'", k, a.variables[k].name, b.variables[k].name);
  return "";
}

Graph resized(Graph g, const std::vector<Shape>& shapes, std::span<const Tensor> inputs) {
  for (const Node& n : g.nodes)
    for (ValueId v : n.outputs) g.values[v].shape = shapes[v];
  for (std::size_t i = 0; i < inputs.size(); ++i) g.values[g.inputs[i]].shape = inputs[i].shape();
  return g;
}

}  // namespace tapeflow::graph
