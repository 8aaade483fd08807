#include "graph/compose.h"

#include <vector>

#include "core/check.h"

namespace tapeflow::graph {

Graph compose(const Graph& first, const Graph& second, std::span<const ValueId> feed) {
  TAPEFLOW_ASSERT(feed.size() == second.inputs.size(), "compose: {} values feed a graph of {} inputs",
                  feed.size(), second.inputs.size());
  Graph g = first;
  // second's value -> g's: its inputs are fed, the rest are added as they are first named.
  std::vector<ValueId> at(second.values.size(), -1);
  for (std::size_t i = 0; i < feed.size(); ++i) at[second.inputs[i]] = feed[i];
  const auto value = [&](ValueId v) {
    if (at[v] < 0) at[v] = g.add_value(second.values[v].shape, second.values[v].dtype);
    return at[v];
  };
  for (const auto& [v, t] : second.constants) g.constants.emplace_back(value(v), t);
  const auto variable_offset = static_cast<std::int32_t>(g.variables.size());
  g.variables.insert(g.variables.end(), second.variables.begin(), second.variables.end());
  for (const Node& n : second.nodes) {
    Node copy = n;
    for (ValueId& v : copy.inputs) v = value(v);
    for (ValueId& v : copy.outputs) v = value(v);
    if (copy.variable >= 0) copy.variable += variable_offset;
    g.nodes.push_back(std::move(copy));
  }
  for (ValueId v : second.outputs) g.outputs.push_back(value(v));
  if (g.opaque_gradient.empty()) g.opaque_gradient = second.opaque_gradient;
  return g;
}

}  // namespace tapeflow::graph
