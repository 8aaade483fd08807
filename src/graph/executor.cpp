#include "graph/executor.h"

#include <fmt/format.h>

#include "autodiff/dispatch.h"
#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "core/error_context.h"
#include "core/float_mode.h"
#include "graph/fusion.h"

namespace tapeflow::graph {
namespace {

std::size_t bytes_of(const Value& v) {
  return static_cast<std::size_t>(v.shape.num_elements()) * dtype_size(v.dtype);
}

}  // namespace

std::string Node::name() const {
  switch (kind) {
    case NodeKind::kOp:
      return op->name();
    case NodeKind::kReadVariable:
      return "ReadVariableOp";
    case NodeKind::kAssign:
      return "AssignVariableOp";
    case NodeKind::kAssignAdd:
      return "AssignAddVariableOp";
    case NodeKind::kAssignSub:
      return "AssignSubVariableOp";
    case NodeKind::kFused: {
      std::string ops;
      for (const std::string& op : fused->ops) ops += (ops.empty() ? "" : ", ") + op;
      return "Fused(" + ops + ")";
    }
  }
  return "?";
}

std::string Graph::to_string() const {
  auto list = [](const std::vector<ValueId>& ids) {
    std::string s;
    for (ValueId v : ids) s += (s.empty() ? "v" : ", v") + std::to_string(v);
    return s;
  };
  std::string out = fmt::format("inputs: {}\n", list(inputs));
  for (const auto& [v, t] : constants)
    out += fmt::format("v{} = constant {}\n", v, values[v].shape.to_string());
  for (const Node& n : nodes) {
    std::string target = n.variable >= 0 ? fmt::format(" '{}'", variables[n.variable].name) : "";
    out += fmt::format("{}{}{}({})\n", n.outputs.empty() ? "" : list(n.outputs) + " = ", n.name(), target,
                       list(n.inputs));
  }
  return out + fmt::format("outputs: {}\n", list(outputs));
}

Variable captured_variable(const Graph& g, std::int32_t index, std::string_view function) {
  const CapturedVariable& c = g.variables[static_cast<std::size_t>(index)];
  std::optional<Variable> v = detail::VariableHandle::lock(c.state);
  TAPEFLOW_REQUIRE(v.has_value(), FailedPreconditionError,
                   "[{}] the variable '{}' (shape {}, dtype {}) that the function captured when it "
                   "was traced has been destroyed; keep it alive as long as the function is called",
                   function, c.name, c.shape.to_string(), dtype_name(c.dtype));
  return *std::move(v);
}

AssignedVariables::AssignedVariables(const Graph& g, std::string_view function) {
  for (const Node& n : g.nodes)
    if (n.kind == NodeKind::kAssign || n.kind == NodeKind::kAssignAdd || n.kind == NodeKind::kAssignSub) {
      const Variable v = captured_variable(g, n.variable, function);
      before_.emplace_back(v, v.value());
    }
}

void AssignedVariables::restore() {
  for (auto it = before_.rbegin(); it != before_.rend(); ++it) it->first.assign(it->second);
}

Executor::Executor(Graph graph, std::string name) : graph_(std::move(graph)), name_(std::move(name)) {
  plan();
}

void Executor::plan() {
  const std::size_t n = graph_.nodes.size();
  // last_use[v] = the last node reading v; graph outputs are read after every node.
  std::vector<std::ptrdiff_t> last_use(graph_.values.size(), -1);
  for (std::size_t k = 0; k < n; ++k)
    for (ValueId v : graph_.nodes[k].inputs) last_use[v] = static_cast<std::ptrdiff_t>(k);
  for (ValueId v : graph_.outputs) last_use[v] = static_cast<std::ptrdiff_t>(n);
  release_after_.assign(n, {});
  for (std::size_t v = 0; v < last_use.size(); ++v)
    if (last_use[v] >= 0 && last_use[v] < static_cast<std::ptrdiff_t>(n))
      release_after_[static_cast<std::size_t>(last_use[v])].push_back(static_cast<ValueId>(v));
  // Peak of live intermediate bytes (inputs and constants are held by their owners). One flag per
  // value: a body holding a constant per op releases one at about every node.
  std::vector<bool> owned(graph_.values.size(), false);
  for (ValueId v : graph_.inputs) owned[v] = true;
  for (const auto& [v, t] : graph_.constants) owned[v] = true;
  std::size_t live = 0;
  for (std::size_t k = 0; k < n; ++k) {
    for (ValueId v : graph_.nodes[k].outputs) live += bytes_of(graph_.values[v]);
    planned_peak_bytes_ = std::max(planned_peak_bytes_, live);
    for (ValueId v : release_after_[k])
      if (!owned[v]) live -= std::min(live, bytes_of(graph_.values[v]));
  }
}

void Executor::run_node(const Node& n, std::vector<Tensor>& env, RunMode mode) const {
  std::vector<Tensor> ins;
  ins.reserve(n.inputs.size());
  for (ValueId v : n.inputs) ins.push_back(env[v]);
  std::vector<Tensor> outs;
  switch (n.kind) {
    case NodeKind::kOp:
      outs = mode == RunMode::kDispatch ? autodiff::run_op(*n.op, n.attrs, ins)
                                        : n.op->forward(n.attrs.get(), ins);
      break;
    case NodeKind::kFused:
      TAPEFLOW_ASSERT(mode == RunMode::kFast, "[{}] a fused graph runs only without observers", name_);
      outs = run_fused(*n.fused, ins);
      break;
    case NodeKind::kReadVariable: {
      const Variable var = captured_variable(graph_, n.variable, name_);
      outs.push_back(mode == RunMode::kDispatch ? var.read_value() : var.value());
      break;
    }
    case NodeKind::kAssign:
      captured_variable(graph_, n.variable, name_).assign(ins[0]);
      break;
    case NodeKind::kAssignAdd:
      captured_variable(graph_, n.variable, name_).assign_add(ins[0]);
      break;
    case NodeKind::kAssignSub:
      captured_variable(graph_, n.variable, name_).assign_sub(ins[0]);
      break;
  }
  if (outs.size() != n.outputs.size()) [[unlikely]] {
    // run() puts the function and the node in front.
    const std::string what =
        fmt::format("{} gave {} outputs, the node lists {}", n.name(), outs.size(), n.outputs.size());
    TAPEFLOW_REQUIRE(graph_.file.empty(), DataLossError, "function file '{}' is corrupt: {}", graph_.file,
                     what);
    TAPEFLOW_ASSERT(false, "[{}] {}", name_, what);
  }
  for (std::size_t i = 0; i < outs.size(); ++i) env[n.outputs[i]] = std::move(outs[i]);
}

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs, RunMode mode,
                                  std::vector<Shape>* shapes) const {
  TAPEFLOW_ASSERT(inputs.size() == graph_.inputs.size(), "[{}] {} inputs for a graph of {}", name_,
                  inputs.size(), graph_.inputs.size());
  const cpu::FloatModeScope float_mode;  // for fused nodes, which run no op's forward
  std::vector<Tensor> env(graph_.values.size());
  for (const auto& [v, t] : graph_.constants) env[v] = t;
  for (std::size_t i = 0; i < inputs.size(); ++i) env[graph_.inputs[i]] = inputs[i];
  if (shapes != nullptr) shapes->assign(graph_.values.size(), Shape());
  for (std::size_t k = 0; k < graph_.nodes.size(); ++k) {
    const Node& n = graph_.nodes[k];
    try {
      run_node(n, env, mode);
    } catch (const Error& e) {
      rethrow_with_context(e,
                           fmt::format("[{}, node {} of {}: {}] ", name_, k, graph_.nodes.size(), n.name()));
    }
    if (shapes != nullptr)
      for (ValueId v : n.outputs) (*shapes)[v] = env[v].shape();
    for (ValueId v : release_after_[k]) env[v] = Tensor();
  }
  std::vector<Tensor> out;
  out.reserve(graph_.outputs.size());
  for (ValueId v : graph_.outputs) out.push_back(env[v]);
  return out;
}

}  // namespace tapeflow::graph
