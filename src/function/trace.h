#pragma once
// Tracing: a function's C++ body runs once, eagerly, on the call's real arguments, while a
// GraphTracer on the thread (autodiff/tracer.h) writes every op, variable read and assignment it
// hears of into a Graph. The trace *is* the first call: its results are that call's results and
// its assignments happened once. A tensor the body uses that no traced op produced and that is
// not an argument is captured by value as a constant (as TensorFlow captures eager tensors).

#include <span>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "autodiff/tracer.h"
#include "graph/graph.h"

namespace tapeflow::graph {

/// Throws InvalidArgumentError naming `fn`, `who` (a function's body, a cond's branch) and the
/// output's index unless every one of `outputs` (what `who` returned, flat) is defined: an
/// undefined one would reach the tracer or the caller without saying where it came from.
void check_defined(std::string_view fn, std::string_view who, std::span<const Tensor> outputs);

// Not final: a control-flow branch's trace (control_flow.cpp) also undoes its assignments.
class GraphTracer : public autodiff::Tracer {
 public:
  /// Installs itself as the thread's tracer until destroyed (the previous one is restored).
  GraphTracer();
  ~GraphTracer() override;
  GraphTracer(const GraphTracer&) = delete;
  GraphTracer& operator=(const GraphTracer&) = delete;

  /// Declares the next graph input; returns the tensor the body must receive for it: `arg` under
  /// a fresh id, so two arguments that are one tensor stay two inputs.
  Tensor input(const Tensor& arg);
  /// Ends the trace: `outputs` (the body's flat results) become the graph's outputs.
  Graph finish(std::span<const Tensor> outputs);

  void op(const autodiff::OpDef& op, const std::shared_ptr<const void>& attrs,
          std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) override;
  void variable_read(const Variable& var, const Tensor& value) override;
  void variable_assigned(std::string_view op, const Variable& var, const Tensor& operand) override;
  void aliased(const Tensor& original, const Tensor& alias) override;
  /// Marks the graph (Graph::opaque_gradient) and every enclosing trace's: they hold this one.
  void opaque_gradient(std::string_view op) override;

  /// What runs the trace, for host_read's message ("tf::function traced its body").
  virtual std::string_view tracing() const { return "tf::function traced its body"; }
  /// The body read a tensor's value into C++ (Tensor::item, to_vector: `what`): throws
  /// FailedPreconditionError if it is a value of this trace (an argument, an op's output, a
  /// variable read), whose value the graph would fix forever; constants are fine.
  void host_read(const Tensor& t, std::string_view what) const;
  /// The value `id` names in this trace (an input, a constant, or a traced op's output), or -1.
  ValueId find(TensorId id) const {
    auto it = ids_.find(id);
    return it == ids_.end() ? -1 : it->second;
  }

 private:
  ValueId value_of(const Tensor& t);
  /// A new value for `t`; `producer` says what made it, "" for a constant.
  ValueId define(const Tensor& t, std::string producer);
  void uninstall();
  std::int32_t variable_index(const Variable& var);

  /// After `node` (just added): where the body ran it inside a NoRecordingScope of its own, its
  /// floating outputs go through StopGradient, so tapes that see the graph's nodes replayed (an
  /// enclosing trace, a branch's gradient) do not differentiate what the body kept from them.
  void stop_gradients_if_unrecorded(std::span<const Tensor> outputs);

  autodiff::Tracer* previous_;
  std::size_t scopes_at_start_;  // live NoRecordingScopes when the trace began
  detail::HostReadHook previous_hook_;
  bool installed_ = true;
  Graph g_;
  absl::flat_hash_map<TensorId, ValueId> ids_;
  absl::flat_hash_map<const void*, std::int32_t> variables_;
  std::vector<std::string>
      producers_;  // per value: what made it ("an argument", "Mul", "a variable read"); "" for constants
};

}  // namespace tapeflow::graph
