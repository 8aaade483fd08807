#pragma once
// The extension point tf::function traces through (src/function/trace.cpp implements it). While a
// function is being traced on a thread, the core tells the thread's tracer about every op the
// dispatch path runs, every variable read and assignment, and every output that is only a fresh
// name for another tensor (custom_gradient's outputs): enough to rebuild the computation as a
// graph. The core never reads what the tracer keeps.
//
// Costs: one thread-local load per op when no function is being traced.

#include <memory>
#include <span>
#include <string_view>

#include "autodiff/op_def.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

namespace tapeflow::autodiff {

class Tracer {
 public:
  virtual ~Tracer() = default;
  /// The dispatch path ran `op` (forward succeeded) with these typed attributes (nullptr for an
  /// op without them).
  virtual void op(const OpDef& op, const std::shared_ptr<const void>& attrs,
                  std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) = 0;
  /// `var` was read (read_value or value); `value` is what the read returned.
  virtual void variable_read(const Variable& var, const Tensor& value) = 0;
  /// `op` (AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp) wrote `operand` into `var`;
  /// the ops that combine the old value with it are not traced (the assignment is one node).
  virtual void variable_assigned(std::string_view op, const Variable& var, const Tensor& operand) = 0;
  /// `alias` is `original` under a new id (same shape and bytes), made outside any op.
  virtual void aliased(const Tensor& original, const Tensor& alias) = 0;
  /// `op` (CustomGradient) ran: the traced ops compute its values, but its gradient is a closure
  /// that no node holds, so differentiating the graph's nodes would give the wrong gradient.
  virtual void opaque_gradient(std::string_view op) = 0;
};

/// The tracer of this thread, or nullptr (set by src/function while a trace runs).
extern constinit thread_local Tracer* t_tracer;

/// Hides the thread's tracer for the scope (the ops an assignment runs inside itself).
class NoTracingScope {
 public:
  NoTracingScope() : saved_(t_tracer) { t_tracer = nullptr; }
  ~NoTracingScope() { t_tracer = saved_; }
  NoTracingScope(const NoTracingScope&) = delete;
  NoTracingScope& operator=(const NoTracingScope&) = delete;

 private:
  Tracer* saved_;
};

}  // namespace tapeflow::autodiff
