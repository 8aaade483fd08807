#include "graph/executor.h"

#include <fmt/format.h>

#include <algorithm>

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

Executor::Frame::Frame(const Executor& executor, std::span<const Tensor> fixed)
    : executor_(&executor),
      fixed_(fixed.size()),
      slots_(executor.slot_begin_.back()),
      kept_(executor.constant_slots_.data()) {
  const Graph& g = executor.graph_;
  TAPEFLOW_ASSERT(fixed.size() <= g.inputs.size(), "[{}] {} fixed inputs for a graph of {}", executor.name_,
                  fixed.size(), g.inputs.size());
  for (const auto& [v, t] : g.constants) executor.place(*this, v, t);
  if (fixed.empty()) return;
  own_kept_ = executor.constant_slots_;
  kept_ = own_kept_.data();
  const std::size_t first = g.inputs.size() - fixed.size();
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    const ValueId v = g.inputs[first + i];
    if (!executor.read(v)) continue;
    executor.place(*this, v, fixed[i]);
    for (std::size_t r = executor.reader_begin_[v]; r < executor.reader_begin_[v + 1]; ++r)
      own_kept_[executor.reader_slots_[r]] = 1;
  }
}

Executor::Executor(Graph graph, std::string name) : graph_(std::move(graph)), name_(std::move(name)) {
  plan();
}

void Executor::plan() {
  const std::size_t n = graph_.nodes.size(), num_values = graph_.values.size();
  slot_begin_.assign(n + 2, 0);
  for (std::size_t k = 0; k < n; ++k) slot_begin_[k + 1] = slot_begin_[k] + graph_.nodes[k].inputs.size();
  slot_begin_[n + 1] = slot_begin_[n] + graph_.outputs.size();
  const auto slot_value = [&](auto&& visit) {  // visit(slot, value) in slot order
    std::size_t s = 0;
    for (const Node& node : graph_.nodes)
      for (ValueId v : node.inputs) visit(s++, v);
    for (ValueId v : graph_.outputs) visit(s++, v);
  };
  reader_begin_.assign(num_values + 1, 0);
  slot_value([&](std::size_t, ValueId v) { ++reader_begin_[v + 1]; });
  for (std::size_t v = 0; v < num_values; ++v) reader_begin_[v + 1] += reader_begin_[v];
  reader_slots_.assign(slot_begin_.back(), 0);
  std::vector<std::size_t> next(reader_begin_.begin(), reader_begin_.end() - 1);
  slot_value([&](std::size_t s, ValueId v) { reader_slots_[next[v]++] = static_cast<std::uint32_t>(s); });
  constant_slots_.assign(slot_begin_.back(), 0);
  for (const auto& [v, t] : graph_.constants)
    for (std::size_t r = reader_begin_[v]; r < reader_begin_[v + 1]; ++r)
      constant_slots_[reader_slots_[r]] = 1;

  // Peak of live intermediate bytes (inputs and constants are held by their owners): a node's
  // results are alive from the node to their last reader; one nothing reads dies at once.
  std::vector<std::ptrdiff_t> last_use(num_values, -1);
  for (std::size_t k = 0; k < n; ++k)
    for (ValueId v : graph_.nodes[k].inputs) last_use[v] = static_cast<std::ptrdiff_t>(k);
  for (ValueId v : graph_.outputs) last_use[v] = static_cast<std::ptrdiff_t>(n);
  std::vector<std::size_t> freed_after(n, 0);  // bytes of the results whose last reader is node k
  for (std::size_t k = 0; k < n; ++k)
    for (ValueId v : graph_.nodes[k].outputs) {
      const std::ptrdiff_t last = std::max(last_use[v], static_cast<std::ptrdiff_t>(k));
      if (last < static_cast<std::ptrdiff_t>(n))
        freed_after[static_cast<std::size_t>(last)] += bytes_of(graph_.values[v]);
    }
  std::size_t live = 0;
  for (std::size_t k = 0; k < n; ++k) {
    for (ValueId v : graph_.nodes[k].outputs) live += bytes_of(graph_.values[v]);
    planned_peak_bytes_ = std::max(planned_peak_bytes_, live);
    live -= freed_after[k];
  }
}

void Executor::place(Frame& frame, ValueId v, const Tensor& value) const {
  for (std::size_t r = reader_begin_[v]; r < reader_begin_[v + 1]; ++r)
    frame.slots_[reader_slots_[r]] = value;
}

void Executor::place(Frame& frame, ValueId v, Tensor&& value) const {
  const std::size_t begin = reader_begin_[v], end = reader_begin_[v + 1];
  if (begin == end) return;
  for (std::size_t r = begin; r + 1 < end; ++r) frame.slots_[reader_slots_[r]] = value;
  frame.slots_[reader_slots_[end - 1]] = std::move(value);
}

void Executor::run_node(std::size_t k, Frame& frame, RunMode mode, std::vector<Shape>* shapes) const {
  const Node& n = graph_.nodes[k];
  const std::size_t first = slot_begin_[k], last = slot_begin_[k + 1];
  const std::span<const Tensor> ins(frame.slots_.data() + first, last - first);
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
  for (std::size_t s = first; s < last; ++s)
    if (!frame.kept_[s]) frame.slots_[s] = Tensor();
  if (outs.size() != n.outputs.size()) [[unlikely]] {
    // run() puts the function and the node in front.
    const std::string what =
        fmt::format("{} gave {} outputs, the node lists {}", n.name(), outs.size(), n.outputs.size());
    TAPEFLOW_REQUIRE(graph_.file.empty(), DataLossError, "function file '{}' is corrupt: {}", graph_.file,
                     what);
    TAPEFLOW_ASSERT(false, "[{}] {}", name_, what);
  }
  for (std::size_t i = 0; i < outs.size(); ++i) {
    if (shapes != nullptr) (*shapes)[n.outputs[i]] = outs[i].shape();
    place(frame, n.outputs[i], std::move(outs[i]));
  }
}

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs, RunMode mode,
                                  std::vector<Shape>* shapes) const {
  TAPEFLOW_ASSERT(inputs.size() == graph_.inputs.size(), "[{}] {} inputs for a graph of {}", name_,
                  inputs.size(), graph_.inputs.size());
  Frame frame(*this);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (read(graph_.inputs[i])) place(frame, graph_.inputs[i], inputs[i]);
  return execute(frame, mode, shapes);
}

std::vector<Tensor> Executor::run(Frame& frame, std::span<Tensor> inputs, std::size_t taken,
                                  RunMode mode) const {
  TAPEFLOW_ASSERT(frame.executor_ == this, "[{}] a frame runs only on the executor that made it", name_);
  TAPEFLOW_ASSERT(inputs.size() + frame.fixed_ == graph_.inputs.size(),
                  "[{}] {} inputs and {} fixed for a graph of {}", name_, inputs.size(), frame.fixed_,
                  graph_.inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ValueId v = graph_.inputs[i];
    if (!read(v)) continue;  // a loop variable nothing reads stays the caller's
    if (i < taken)
      place(frame, v, std::move(inputs[i]));
    else
      place(frame, v, inputs[i]);
  }
  return execute(frame, mode, nullptr);
}

std::vector<Tensor> Executor::execute(Frame& frame, RunMode mode, std::vector<Shape>* shapes) const {
  const cpu::FloatModeScope float_mode;  // for fused nodes, which run no op's forward
  if (shapes != nullptr) shapes->assign(graph_.values.size(), Shape());
  const std::size_t n = graph_.nodes.size();
  for (std::size_t k = 0; k < n; ++k) {
    try {
      run_node(k, frame, mode, shapes);
    } catch (const Error& e) {
      rethrow_with_context(e, fmt::format("[{}, node {} of {}: {}] ", name_, k, n, graph_.nodes[k].name()));
    }
  }
  std::vector<Tensor> out;
  out.reserve(graph_.outputs.size());
  for (std::size_t s = slot_begin_[n]; s < slot_begin_[n + 1]; ++s)
    out.push_back(frame.kept_[s] ? frame.slots_[s] : std::move(frame.slots_[s]));
  return out;
}

}  // namespace tapeflow::graph
