#include "function/trace.h"

#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "tapeflow/ops/gradient_control.h"

namespace tapeflow::graph {

GraphTracer::GraphTracer() : previous_(autodiff::t_tracer) { autodiff::t_tracer = this; }

GraphTracer::~GraphTracer() {
  if (installed_) autodiff::t_tracer = previous_;
}

Tensor GraphTracer::input(const Tensor& arg) {
  // An Identity the trace does not see but the tapes and accumulators outside do: a trace that is
  // not recorded as one call (under a ForwardAccumulator) still links the body's inputs to the
  // call's, so the tangents (and gradients) of its results flow from the arguments.
  Tensor fresh;
  {
    const autodiff::NoTracingScope hidden;
    fresh = identity(arg);
  }
  g_.inputs.push_back(define(fresh));
  return fresh;
}

ValueId GraphTracer::define(const Tensor& t) {
  const ValueId v = g_.add_value(t.shape(), t.dtype());
  ids_[t.id()] = v;
  return v;
}

ValueId GraphTracer::value_of(const Tensor& t) {
  if (auto it = ids_.find(t.id()); it != ids_.end()) return it->second;
  // Not an argument and made by no traced op: a value the body captured (a tensor from outside,
  // a constant it created, a seeded random draw). Ids are never reused, so it is this tensor.
  const ValueId v = define(t);
  g_.constants.emplace_back(v, t);
  return v;
}

void GraphTracer::op(const autodiff::OpDef& op, const std::shared_ptr<const void>& attrs,
                     std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) {
  Node n;
  n.op = &op;
  n.attrs = attrs;
  for (const Tensor* in : inputs) n.inputs.push_back(value_of(*in));
  for (const Tensor& out : outputs) n.outputs.push_back(define(out));
  g_.nodes.push_back(std::move(n));
}

std::int32_t GraphTracer::variable_index(const Variable& var) {
  std::weak_ptr<detail::VariableState> w = detail::VariableHandle::weak(var);
  const void* key = w.lock().get();
  if (auto it = variables_.find(key); it != variables_.end()) return it->second;
  const auto index = static_cast<std::int32_t>(g_.variables.size());
  g_.variables.push_back({std::move(w), var.name(), var.shape(), var.dtype(), var.trainable()});
  variables_.emplace(key, index);
  return index;
}

void GraphTracer::variable_read(const Variable& var, const Tensor& value) {
  Node n;
  n.kind = NodeKind::kReadVariable;
  n.variable = variable_index(var);
  n.outputs.push_back(define(value));
  g_.nodes.push_back(std::move(n));
}

void GraphTracer::variable_assigned(std::string_view op, const Variable& var, const Tensor& operand) {
  Node n;
  n.kind = op == "AssignAddVariableOp"   ? NodeKind::kAssignAdd
           : op == "AssignSubVariableOp" ? NodeKind::kAssignSub
                                         : NodeKind::kAssign;
  n.variable = variable_index(var);
  n.inputs.push_back(value_of(operand));
  g_.nodes.push_back(std::move(n));
}

void GraphTracer::aliased(const Tensor& original, const Tensor& alias) {
  ids_[alias.id()] = value_of(original);
}

Graph GraphTracer::finish(std::span<const Tensor> outputs) {
  for (const Tensor& t : outputs) g_.outputs.push_back(value_of(t));
  autodiff::t_tracer = previous_;
  installed_ = false;
  return std::move(g_);
}

}  // namespace tapeflow::graph
