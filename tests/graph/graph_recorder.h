#pragma once
// A small stand-in for tf::function's tracer and executor, for the function-file tests and the
// fuzz harness's seeds (fuzz/fuzz_function_file.cpp): record() runs a callable once with an
// autodiff::Tracer installed and turns what the dispatch path reports (ops with their typed
// attributes, variable reads and assignments, aliases) into a graph::ExportedFunction; a tensor the
// callable did not make becomes a constant. run() replays such a graph with each op's forward.

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autodiff/tracer.h"
#include "graph/serialize.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

class GraphRecorder : public autodiff::Tracer {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  /// Records f(inputs) as a function named `name`; the variables' values are read after f ran.
  static graph::ExportedFunction record(std::string name, const std::vector<Tensor>& inputs, const Fn& f) {
    GraphRecorder rec;
    graph::ExportedFunction out;
    out.name = std::move(name);
    out.output_structure = "[flat]";
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& x = inputs[i];
      const graph::ValueId v = rec.graph_.add_value(x.shape(), x.dtype());
      rec.ids_[x.id()] = v;
      rec.graph_.inputs.push_back(v);
      const auto d = x.shape().dims();
      out.inputs.push_back({{d.begin(), d.end()}, x.dtype(), "x" + std::to_string(i)});
    }
    std::vector<Tensor> results;
    {
      Tracer* saved = autodiff::t_tracer;
      autodiff::t_tracer = &rec;
      try {
        results = f(inputs);
      } catch (...) {
        autodiff::t_tracer = saved;
        throw;
      }
      autodiff::t_tracer = saved;
    }
    for (const Tensor& r : results) rec.graph_.outputs.push_back(rec.value_of(r));
    for (const Variable& v : rec.variables_) out.variable_values.push_back(v.value());
    out.graph = std::move(rec.graph_);
    return out;
  }

  void op(const autodiff::OpDef& op, const std::shared_ptr<const void>& attrs,
          std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) override {
    graph::Node n;
    n.kind = graph::NodeKind::kOp;
    n.op = &op;
    n.attrs = attrs;
    for (const Tensor* t : inputs) n.inputs.push_back(value_of(*t));
    for (const Tensor& t : outputs) n.outputs.push_back(define(t));
    graph_.nodes.push_back(std::move(n));
  }
  void variable_read(const Variable& var, const Tensor& value) override {
    graph::Node n;
    n.kind = graph::NodeKind::kReadVariable;
    n.variable = variable_index(var);
    n.outputs.push_back(define(value));
    graph_.nodes.push_back(std::move(n));
  }
  void variable_assigned(std::string_view op, const Variable& var, const Tensor& operand) override {
    graph::Node n;
    n.kind = op == "AssignAddVariableOp"   ? graph::NodeKind::kAssignAdd
             : op == "AssignSubVariableOp" ? graph::NodeKind::kAssignSub
                                           : graph::NodeKind::kAssign;
    n.variable = variable_index(var);
    n.inputs.push_back(value_of(operand));
    graph_.nodes.push_back(std::move(n));
  }
  void aliased(const Tensor& original, const Tensor& alias) override {
    ids_[alias.id()] = value_of(original);
  }
  void opaque_gradient(std::string_view op) override { graph_.opaque_gradient = op; }

 private:
  graph::ValueId define(const Tensor& t) {
    const graph::ValueId v = graph_.add_value(t.shape(), t.dtype());
    ids_[t.id()] = v;
    return v;
  }
  // The value of a tensor seen before, or a new constant holding it.
  graph::ValueId value_of(const Tensor& t) {
    if (auto it = ids_.find(t.id()); it != ids_.end()) return it->second;
    const graph::ValueId v = define(t);
    graph_.constants.emplace_back(v, t);
    return v;
  }
  std::int32_t variable_index(const Variable& var) {
    for (std::size_t i = 0; i < variables_.size(); ++i)
      if (variables_[i].handle_id() == var.handle_id()) return static_cast<std::int32_t>(i);
    variables_.push_back(var);
    graph_.variables.push_back({{}, var.name(), var.shape(), var.dtype(), var.trainable()});
    return static_cast<std::int32_t>(variables_.size() - 1);
  }

  graph::Graph graph_;
  std::unordered_map<TensorId, graph::ValueId> ids_;
  std::vector<Variable> variables_;
};

/// Runs `f`'s graph on `inputs` with each op's forward; the variables start at f.variable_values
/// and end in `*variables` when given.
inline std::vector<Tensor> run(const graph::ExportedFunction& f, const std::vector<Tensor>& inputs,
                               std::vector<Tensor>* variables = nullptr) {
  const graph::Graph& g = f.graph;
  std::vector<Tensor> vals(g.values.size());
  std::vector<Tensor> vars = f.variable_values;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) vals[static_cast<std::size_t>(g.inputs[i])] = inputs[i];
  for (const auto& [v, t] : g.constants) vals[static_cast<std::size_t>(v)] = t;
  auto at = [&](graph::ValueId v) -> Tensor& { return vals[static_cast<std::size_t>(v)]; };
  for (const graph::Node& n : g.nodes) {
    std::vector<Tensor> in;
    for (graph::ValueId v : n.inputs) in.push_back(at(v));
    Tensor* var = n.variable >= 0 ? &vars[static_cast<std::size_t>(n.variable)] : nullptr;
    switch (n.kind) {
      case graph::NodeKind::kOp: {
        std::vector<Tensor> out = n.op->forward(n.attrs.get(), in);
        for (std::size_t k = 0; k < n.outputs.size(); ++k) at(n.outputs[k]) = out.at(k);
        break;
      }
      case graph::NodeKind::kReadVariable:
        at(n.outputs[0]) = *var;
        break;
      case graph::NodeKind::kAssign:
        *var = in[0];
        break;
      case graph::NodeKind::kAssignAdd:
        *var = *var + in[0];
        break;
      case graph::NodeKind::kAssignSub:
        *var = *var - in[0];
        break;
      case graph::NodeKind::kFused:
        throw InternalError("run: fused nodes are not supported here");
    }
  }
  if (variables != nullptr) *variables = vars;
  std::vector<Tensor> out;
  for (graph::ValueId v : g.outputs) out.push_back(at(v));
  return out;
}

}  // namespace tapeflow::testing
