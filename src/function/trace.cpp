#include "function/trace.h"

#include <fmt/format.h>

#include "autodiff/nesting.h"
#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "tapeflow/ops/gradient_control.h"

namespace tapeflow::graph {

namespace {

/// The host-read hook of a trace (tensor.h): asks the thread's tracer, if one is not hidden (an
/// assignment's own ops run with the tracer hidden).
void on_host_read(const Tensor& t, std::string_view what) {
  if (const auto* tracer = dynamic_cast<const GraphTracer*>(autodiff::t_tracer)) tracer->host_read(t, what);
}

}  // namespace

void check_defined(std::string_view fn, std::string_view who, std::span<const Tensor> outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    TAPEFLOW_REQUIRE(outputs[i].defined(), InvalidArgumentError,
                     "[{}] {} returned an undefined Tensor as output {} (of {})", fn, who, i, outputs.size());
}

GraphTracer::GraphTracer()
    : previous_(autodiff::t_tracer),
      scopes_at_start_(autodiff::live_no_recording_scopes()),
      previous_hook_(detail::t_host_read_hook) {
  autodiff::t_tracer = this;
  detail::t_host_read_hook = &on_host_read;
}

GraphTracer::~GraphTracer() {
  if (installed_) uninstall();
}

void GraphTracer::uninstall() {
  autodiff::t_tracer = previous_;
  detail::t_host_read_hook = previous_hook_;
  installed_ = false;
}

void GraphTracer::host_read(const Tensor& t, std::string_view what) const {
  const ValueId v = find(t.id());
  if (v < 0 || producers_[static_cast<std::size_t>(v)].empty()) return;
  throw FailedPreconditionError(fmt::format(
      "[{}] read the value of a traced tensor (shape {}, dtype {}, {}) into C++ while {}: the graph "
      "would keep this value for every later call (or element). Compute with tensor ops instead "
      "(tf::where, tf::cond and tf::while_loop for decisions), or read the value outside the function",
      what, t.shape().to_string(), dtype_name(t.dtype()), producers_[static_cast<std::size_t>(v)],
      tracing()));
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
  g_.inputs.push_back(define(fresh, "an argument of the function"));
  return fresh;
}

ValueId GraphTracer::define(const Tensor& t, std::string producer) {
  const ValueId v = g_.add_value(t.shape(), t.dtype());
  ids_[t.id()] = v;
  producers_.push_back(std::move(producer));
  return v;
}

ValueId GraphTracer::value_of(const Tensor& t) {
  if (auto it = ids_.find(t.id()); it != ids_.end()) return it->second;
  // Not an argument and made by no traced op: a value the body captured (a tensor from outside,
  // a constant it created, a seeded random draw). Ids are never reused, so it is this tensor.
  const ValueId v = define(t, "");
  g_.constants.emplace_back(v, t);
  return v;
}

void GraphTracer::op(const autodiff::OpDef& op, const std::shared_ptr<const void>& attrs,
                     std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) {
  // Every op the dispatch path runs has a forward entry (registrar.h); a graph must never hold a
  // node it cannot run.
  TAPEFLOW_ASSERT(op.forward != nullptr, "[{}] has no forward entry: tf::function cannot run it from a graph",
                  op.name());
  Node n;
  n.op = &op;
  n.attrs = attrs;
  for (const Tensor* in : inputs) n.inputs.push_back(value_of(*in));
  for (const Tensor& out : outputs) n.outputs.push_back(define(out, "an output of " + op.name()));
  g_.nodes.push_back(std::move(n));
  stop_gradients_if_unrecorded(outputs);
}

void GraphTracer::stop_gradients_if_unrecorded(std::span<const Tensor> outputs) {
  if (autodiff::live_no_recording_scopes() <= scopes_at_start_) return;
  static const autodiff::OpDef& stop = autodiff::registry().get("StopGradient");
  for (const Tensor& out : outputs) {
    if (!is_floating(out.dtype())) continue;
    Node n;
    n.op = &stop;
    n.inputs.push_back(ids_.at(out.id()));
    n.outputs.push_back(g_.add_value(out.shape(), out.dtype()));
    producers_.push_back("an output of StopGradient");
    ids_[out.id()] = n.outputs[0];
    g_.nodes.push_back(std::move(n));
  }
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
  n.outputs.push_back(define(value, "a read of the variable '" + var.name() + "'"));
  g_.nodes.push_back(std::move(n));
  stop_gradients_if_unrecorded({&value, 1});
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

void GraphTracer::opaque_gradient(std::string_view op) {
  if (g_.opaque_gradient.empty()) g_.opaque_gradient = op;
  if (previous_ != nullptr) previous_->opaque_gradient(op);
}

Graph GraphTracer::finish(std::span<const Tensor> outputs) {
  for (const Tensor& t : outputs) g_.outputs.push_back(value_of(t));
  uninstall();
  return std::move(g_);
}

}  // namespace tapeflow::graph
