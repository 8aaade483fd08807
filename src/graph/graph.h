#pragma once
// The graph a traced function runs: values (typed, shaped slots) and nodes (ops, variable reads
// and assignments, fused elementwise kernels) in execution order, which is a topological order.
//
//   values:  v0 = input 0, v1 = input 1, v2 = constant, v3 = Mul(v0, v1), v4 = Add(v3, v2), ...
//   nodes:   [Mul v0 v1 -> v3] [Add v3 v2 -> v4] [AssignAddVariableOp var7 v4]
//
// A graph is built by the tracer (src/function/trace.cpp), rewritten by the passes (passes.h, in
// order), planned and run by the executor (executor.cpp), and written to and read from files
// (serialize.cpp); check.h says what every graph must be. It never holds a tape or a record: ops
// are OpDef pointers with their typed attributes, the same ones the dispatch path passes to the
// tape.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/op_def.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

namespace tapeflow::graph {

using ValueId = std::int32_t;

/// A slot a node writes once per run. Shapes and dtypes are those of the trace.
struct Value {
  Shape shape;
  DType dtype = DType::Float32;
};

enum class NodeKind : std::uint8_t {
  kOp,            // op->forward(attrs, inputs) -> outputs
  kReadVariable,  // outputs[0] = variables[variable].value()
  kAssign,        // variables[variable].assign(inputs[0])
  kAssignAdd,     // variables[variable].assign_add(inputs[0])
  kAssignSub,     // variables[variable].assign_sub(inputs[0])
  kFused,         // a fused elementwise kernel (fusion.h) over inputs -> outputs
};

struct FusedKernel;  // fusion.h

struct Node {
  NodeKind kind = NodeKind::kOp;
  const autodiff::OpDef* op = nullptr;  // kOp
  std::shared_ptr<const void> attrs;    // kOp: the op's Attrs as recorded (nullptr: none)
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::int32_t variable = -1;                // kReadVariable, kAssign*: index into Graph::variables
  std::shared_ptr<const FusedKernel> fused;  // kFused
  /// Variable reads and assignments, and ops that change state (OpDef::stateful: an If or While
  /// whose branches assign variables).
  bool stateful() const { return kind == NodeKind::kOp ? op->stateful : kind != NodeKind::kFused; }
  /// The name errors and listings use: the op's name, the assignment's, or "Fused".
  std::string name() const;
};

/// A variable the graph reads or writes, captured by handle: it is read at call time, and a
/// destroyed one is a typed error when the graph runs, never a dangling read.
struct CapturedVariable {
  std::weak_ptr<detail::VariableState> state;  // see autodiff/variable_handle.h
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  bool trainable = true;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // one per flat argument, in order
  std::vector<ValueId> outputs;  // one per flat result, in order (a value may appear twice)
  /// Values known when the graph is built: tensors the function captured by value.
  std::vector<std::pair<ValueId, Tensor>> constants;
  std::vector<CapturedVariable> variables;
  /// An op whose gradient the nodes do not hold (CustomGradient: a closure that runs when the
  /// body runs), "" if none. Replaying the nodes where their ops are observed (an enclosing trace,
  /// a forward accumulator) or from a file would differentiate its inner ops instead, so
  /// function.cpp runs the body again there and save_function refuses the graph.
  std::string opaque_gradient;
  /// The function file the graph was read from (serialize.h), "" for a traced graph. A node whose
  /// op gives another number of outputs than the node lists is then the file's DataLossError (a
  /// forged count the reader could not check: it depends on input sizes), not a bug in tapeflow.
  std::string file;

  ValueId add_value(const Shape& shape, DType dtype) {
    values.push_back({shape, dtype});
    return static_cast<ValueId>(values.size() - 1);
  }
  /// A listing, one node per line (tests and `tf::Function::graph_text`).
  std::string to_string() const;
};

}  // namespace tapeflow::graph
