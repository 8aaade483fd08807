#pragma once
// The ONNX equivalents of tapeflow's ops: one converter per op name (op_table.cpp), each writing
// one graph node as standard ONNX nodes (opset 17).

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "onnx/attr_fields.h"
#include "onnx/onnx_graph.h"

namespace tapeflow::onnx_export {

/// One op node of a tapeflow graph, as a converter sees it.
struct OpNode {
  const graph::Graph& graph;
  const graph::Node& node;
  AttrField attrs;
  std::vector<std::string> inputs;   // the ONNX names of the node's inputs
  std::vector<std::string> outputs;  // the ONNX names the converter must write its outputs to
  std::string function;              // the exported function's label, for messages

  const graph::Value& input(std::size_t i) const {
    return graph.values[static_cast<std::size_t>(node.inputs[i])];
  }
  const graph::Value& output(std::size_t i) const {
    return graph.values[static_cast<std::size_t>(node.outputs[i])];
  }
  /// "Conv2D with inputs float32 (2, 28, 28, 1), float32 (3, 3, 1, 8)".
  std::string describe() const;
  /// UnimplementedError "[export_onnx] <describe()> in <function>: <why>".
  [[noreturn]] void unsupported(std::string_view why) const;
};

using Converter = std::function<void(const OpNode&, OnnxGraph&)>;

/// The converter of op `op`, or nullptr for an op with no ONNX equivalent.
const Converter* find_converter(std::string_view op);

/// The ops that have one, sorted (tests check each).
std::vector<std::string> exportable_ops();

}  // namespace tapeflow::onnx_export
