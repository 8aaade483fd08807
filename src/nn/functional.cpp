#include "tapeflow/nn/functional.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "nn/summary_table.h"
#include "nn/symbolic_node.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kFunctional = "Functional";

using Node = detail::SymbolicNode;

/// A row of the summary and an entry of Keras's layer order: a layer, or an Input (which Keras
/// shows as an InputLayer).
using RowKey = const void*;
RowKey row_key(const Node& node) { return node.layer ? static_cast<RowKey>(node.layer.get()) : &node; }

}  // namespace

struct Functional::Graph {
  std::vector<KerasTensor> inputs, outputs;
  /// The nodes in an order where each node's inputs come first (Keras's nodes in decreasing
  /// depth), Inputs included.
  std::vector<const Node*> order;
  /// Per node of `order`: its position there; per non-Input node: the positions of its inputs.
  std::unordered_map<const Node*, std::size_t> slot;
  std::vector<std::vector<std::size_t>> input_slots;
  /// The rows in Keras's order and, per row, its nodes (by creation) and its Input node or layer.
  std::vector<RowKey> rows;
  std::map<RowKey, std::vector<const Node*>> row_nodes;
  std::vector<std::shared_ptr<Layer>> layers;
  bool sequential_like = true;
};

namespace {

/// Keras's _build_map: a depth-first walk from the outputs, post-order, numbering rows in the
/// order they are first reached. Throws "Graph disconnected" for an Input not among `inputs`.
void build_map(const KerasTensor& tensor, const std::set<const Node*>& inputs, const std::string& model,
               std::set<const Node*>& finished, std::vector<const Node*>& order,
               std::map<RowKey, int>& row_index, std::vector<std::string>& accessed) {
  const Node& node = *tensor.node();
  if (finished.contains(&node)) return;
  row_index.emplace(row_key(node), static_cast<int>(row_index.size()));
  if (!node.layer) {
    TAPEFLOW_REQUIRE(
        inputs.contains(&node), InvalidArgumentError,
        "[{}] model '{}': Graph disconnected: cannot obtain value for {}: it is not among the model's "
        "inputs. The following previous layers were accessed without issue: [{}]",
        kFunctional, model, tensor.to_string(), fmt::join(accessed, ", "));
  }
  for (const KerasTensor& in : node.inputs)
    build_map(in, inputs, model, finished, order, row_index, accessed);
  finished.insert(&node);
  order.push_back(&node);
  if (node.layer) accessed.push_back(fmt::format("'{}'", node.layer->name()));
}

}  // namespace

Functional::Functional(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs, std::string name)
    : Model(std::move(name)), graph_(std::make_unique<Graph>()) {
  Graph& g = *graph_;
  TAPEFLOW_REQUIRE(!inputs.empty() && !outputs.empty(), InvalidArgumentError,
                   "[{}] model '{}' needs at least one input and one output, got {} and {}", kFunctional,
                   this->name(), inputs.size(), outputs.size());
  std::set<const Node*> input_nodes;
  for (const KerasTensor& in : inputs) {
    TAPEFLOW_REQUIRE(!in.node()->layer, InvalidArgumentError,
                     "[{}] model '{}': an input must come from tf::layers::Input(), got {}, made by a layer",
                     kFunctional, this->name(), in.to_string());
    TAPEFLOW_REQUIRE(input_nodes.insert(in.node().get()).second, InvalidArgumentError,
                     "[{}] model '{}': the input {} is given twice", kFunctional, this->name(),
                     in.to_string());
  }
  g.inputs = std::move(inputs);
  g.outputs = std::move(outputs);

  std::set<const Node*> finished;
  std::map<RowKey, int> row_index;
  std::vector<std::string> accessed;
  for (const KerasTensor& out : g.outputs)
    build_map(out, input_nodes, this->name(), finished, g.order, row_index, accessed);
  for (const KerasTensor& in : g.inputs)  // an input no output needs still has its row
    if (!finished.contains(in.node().get())) {
      row_index.emplace(row_key(*in.node()), -1);
      g.order.insert(g.order.begin(), in.node().get());
    }

  g.input_slots.resize(g.order.size());
  for (std::size_t i = 0; i < g.order.size(); ++i) g.slot[g.order[i]] = i;
  for (std::size_t i = 0; i < g.order.size(); ++i)
    for (const KerasTensor& in : g.order[i]->inputs) g.input_slots[i].push_back(g.slot.at(in.node().get()));

  // Keras's depths: the outputs at 0, each node one deeper than its deepest consumer, a shared
  // layer as deep as its deepest node.
  std::unordered_map<const Node*, int> node_depth;
  std::map<RowKey, int> row_depth;
  for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
    const Node* node = *it;
    int depth = std::max(node_depth[node], row_depth[row_key(*node)]);
    row_depth[row_key(*node)] = depth;
    node_depth[node] = depth;
    for (const KerasTensor& in : node->inputs)
      node_depth[in.node().get()] = std::max(node_depth[in.node().get()], depth + 1);
  }
  std::map<int, int> nodes_at_depth;
  for (const Node* node : g.order) {
    ++nodes_at_depth[node_depth[node]];
    g.row_nodes[row_key(*node)].push_back(node);
    if (node->inputs.size() > 1) g.sequential_like = false;
  }
  for (const auto& [depth, count] : nodes_at_depth)
    if (count > 1) g.sequential_like = false;
  for (auto& [key, nodes] : g.row_nodes) {
    if (nodes.size() > 1) g.sequential_like = false;
    std::sort(nodes.begin(), nodes.end(),
              [](const Node* a, const Node* b) { return a->sequence < b->sequence; });
  }
  for (const auto& [key, index] : row_index) g.rows.push_back(key);
  std::sort(g.rows.begin(), g.rows.end(), [&](RowKey a, RowKey b) {
    return row_depth[a] != row_depth[b] ? row_depth[a] > row_depth[b] : row_index[a] < row_index[b];
  });
  for (RowKey key : g.rows) {
    const Node* node = g.row_nodes.at(key).front();
    if (!node->layer) continue;
    TAPEFLOW_REQUIRE(node->layer.get() != this, InvalidArgumentError, "[{}] model '{}' cannot contain itself",
                     kFunctional, this->name());
    track(*node->layer);  // the nodes' shared_ptrs keep the layer alive as long as this model
    g.layers.push_back(node->layer);
  }
}

Functional::Functional(const KerasTensor& input, const KerasTensor& output, std::string name)
    : Functional(std::vector<KerasTensor>{input}, std::vector<KerasTensor>{output}, std::move(name)) {}

Functional::~Functional() = default;

std::vector<Tensor> Functional::call(const std::vector<Tensor>& inputs, bool training) {
  const Graph& g = *graph_;
  TAPEFLOW_REQUIRE(inputs.size() == g.inputs.size(), InvalidArgumentError,
                   "[{}] model '{}' expects {} input(s), got {}", kFunctional, name(), g.inputs.size(),
                   inputs.size());
  std::vector<Tensor> values(g.order.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& spec = g.inputs[i].spec();
    Tensor x = inputs[i];
    // Keras conforms an input to its Input's dtype; a cast between floats and integers would
    // change the values' meaning, so only one within a kind is made.
    if (x.defined() && x.dtype() != spec.dtype && is_floating(x.dtype()) == is_floating(spec.dtype) &&
        is_integer(x.dtype()) == is_integer(spec.dtype))
      x = cast(x, spec.dtype);
    TAPEFLOW_REQUIRE(
        x.defined() && spec.matches(x), InvalidArgumentError,
        "[{}] model '{}': input {} ('{}') is incompatible with the model: expected shape={} dtype={}, "
        "found shape={} dtype={}",
        kFunctional, name(), i, spec.name, g.inputs[i].shape_string(), dtype_name(spec.dtype),
        x.defined() ? x.shape().to_string() : "(undefined)",
        x.defined() ? dtype_name(inputs[i].dtype()) : "none");
    values[g.slot.at(g.inputs[i].node().get())] = std::move(x);
  }
  std::vector<Tensor> args;
  for (std::size_t i = 0; i < g.order.size(); ++i) {
    const Node& node = *g.order[i];
    if (!node.layer) continue;
    args.clear();
    for (const std::size_t s : g.input_slots[i]) args.push_back(values[s]);
    values[i] = node.invoke(args, training);
  }
  std::vector<Tensor> out;
  for (const KerasTensor& o : g.outputs) out.push_back(values[g.slot.at(o.node().get())]);
  return out;
}

Tensor Functional::call(const Tensor& x, bool training) {
  TAPEFLOW_REQUIRE(
      graph_->inputs.size() == 1 && graph_->outputs.size() == 1, InvalidArgumentError,
      "[{}] model '{}' has {} inputs and {} outputs: call it with a list of tensors, which gives one "
      "tensor per output",
      kFunctional, name(), graph_->inputs.size(), graph_->outputs.size());
  return call(std::vector<Tensor>{x}, training).front();
}

const std::vector<KerasTensor>& Functional::inputs() const { return graph_->inputs; }
const std::vector<KerasTensor>& Functional::outputs() const { return graph_->outputs; }
const std::vector<std::shared_ptr<Layer>>& Functional::layers() const { return graph_->layers; }

std::string Functional::summary() const {
  const Graph& g = *graph_;
  // Names as Keras would have made them unique: a later layer of a name already shown gets "_1", ...
  std::map<RowKey, std::string> shown;
  std::set<std::string> taken;
  for (RowKey key : g.rows) {
    const Node& node = *g.row_nodes.at(key).front();
    const std::string base = node.layer ? node.layer->name() : node.spec.name;
    std::string name = base;
    for (int n = 1; taken.contains(name); ++n) name = fmt::format("{}_{}", base, n);
    taken.insert(name);
    shown[key] = name;
  }
  const std::vector<int>& columns =
      g.sequential_like ? summary::kSequentialColumns : summary::kConnectedColumns;
  const auto line_length = static_cast<std::size_t>(columns.back());
  std::string out = summary::header(name(), columns);
  for (std::size_t r = 0; r < g.rows.size(); ++r) {
    const std::vector<const Node*>& nodes = g.row_nodes.at(g.rows[r]);
    const Node& first = *nodes.front();
    std::vector<std::string> fields;
    std::string shape = detail::shape_with_none(first.spec.dims);
    for (const Node* node : nodes)
      if (node->spec.dims != first.spec.dims) shape = "multiple";
    if (first.layer) {
      fields = {fmt::format("{} ({})", shown[g.rows[r]], first.layer->class_name()), shape,
                std::to_string(summary::parameters(first.layer->variables()))};
    } else {
      fields = {fmt::format("{} (InputLayer)", shown[g.rows[r]]), "[" + shape + "]", "0"};
    }
    if (!g.sequential_like) {
      std::vector<std::string> connections;
      for (const Node* node : nodes)
        for (const KerasTensor& in : node->inputs) {
          const std::vector<const Node*>& producers = g.row_nodes.at(row_key(*in.node()));
          const auto index =
              std::find(producers.begin(), producers.end(), in.node().get()) - producers.begin();
          connections.push_back(fmt::format("'{}[{}][0]'", shown[row_key(*in.node())], index));
        }
      fields.push_back(fmt::format("[{}]", fmt::join(connections, ", ")));
    }
    out += summary::row(fields, columns);
    out += std::string(line_length, r + 1 == g.rows.size() ? '=' : '_') + '\n';
  }
  out += summary::totals(variables(), trainable_variables(), columns.back());
  return out;
}

}  // namespace tapeflow::layers
