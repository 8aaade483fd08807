#pragma once
// One traced signature of a tf::function: its graph, optimised and planned, and, once a call has
// been recorded on a tape, its differentiable form — the forward graph with the values the
// gradient needs as extra outputs, and the backward graph derived from the ops' registered
// gradients by tracing the one backward pass (backward.cpp) over the forward's records.

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "graph/executor.h"
#include "graph/passes.h"
#include "tapeflow/function.h"

namespace tapeflow::graph {

/// A function's gradient graph and the forward graph that saves what it reads.
struct Differentiable {
  std::unique_ptr<Executor> forward;        // results, then the saved values
  std::unique_ptr<Executor> forward_plain;  // the same, unfused: runs through the dispatch path
  std::size_t num_results = 0;
  std::unique_ptr<Executor> backward;          // optimised: cotangents, then saved values -> gradients
  std::unique_ptr<Executor> backward_plain;    // the same, unfused: runs through the dispatch path
  std::vector<std::size_t> cotangent_results;  // results whose cotangents are backward's first inputs
  std::vector<std::size_t> source_inputs;      // flat inputs that are sources (floating)
  std::vector<std::int32_t> source_variables;  // forward graph variables that are sources
  std::vector<std::size_t> gradient_of;        // per backward output: its source (inputs, then variables)
  /// The pair as traced, dead code removed, before the passes: the forward with the saved values
  /// as outputs after the results, and the backward, whose inputs are the cotangents, then the
  /// saved values. What a recorded trace at other sizes is compared with, and what a pair shared
  /// across sizes instantiates (shared_sizes.h). Set by `trace` only: a pair made at a new size
  /// by `trace_instantiated` is never compared, so it keeps no copy.
  Graph traced_forward, traced_backward;
  /// What `backward` was made from, before the passes that fuse it (the graph on the fast
  /// forward's saved values), and whether the passes run: what backward_for prunes.
  Graph backward_unfused;
  bool optimize = true;

  /// The fast backward restricted to the gradients in `needed` (one flag per backward output),
  /// made on first use per set and kept: a record whose tapes need no gradient of some of the
  /// call's inputs (a batch of data, a variable no tape watches) skips computing them, which for
  /// a model's first layer is a whole matrix product. The latest kMaxPrunedBackwards sets are
  /// kept (least recently used dropped first): the executor is shared, so a dropped one finishes
  /// the runs that hold it.
  std::shared_ptr<const Executor> backward_for(const std::vector<bool>& needed) const;
  /// How many sets backward_for holds a graph for, and how many it dropped.
  std::size_t pruned_backwards() const {
    std::lock_guard lock(pruned_mutex_);
    return pruned_.size();
  }
  std::size_t pruned_evictions() const {
    std::lock_guard lock(pruned_mutex_);
    return pruned_evictions_;
  }

 private:
  struct Pruned {
    std::shared_ptr<const Executor> executor;
    std::uint64_t last_use = 0;
  };
  mutable std::mutex pruned_mutex_;
  mutable std::map<std::vector<bool>, Pruned> pruned_;
  mutable std::uint64_t pruned_uses_ = 0;
  mutable std::size_t pruned_evictions_ = 0;
};

class ConcreteFunction {
 public:
  ConcreteFunction(std::string label, Graph traced, bool optimize, std::shared_ptr<const void> structure,
                   std::vector<TensorSpec> specs);

  /// Runs the optimised graph; nothing is recorded.
  std::vector<Tensor> call_fast(std::span<const Tensor> inputs) const;
  /// Runs the unfused graph through the dispatch path (forward mode, an enclosing trace).
  std::vector<Tensor> call_observed(std::span<const Tensor> inputs) const;
  /// Runs the differentiable forward and records the call as one op on the recording tapes.
  std::vector<Tensor> call_recorded(std::span<const Tensor> inputs) const;

  const Differentiable* differentiable() const { return differentiable_.get(); }
  void set_differentiable(std::unique_ptr<Differentiable> d) { differentiable_ = std::move(d); }
  /// Records a call whose results are `results` (the trace's, or a graph's) with `saved`.
  std::vector<Tensor> record(std::span<const Tensor> inputs, std::vector<Tensor> results,
                             std::vector<Tensor> saved) const;

  const Graph& graph() const { return fast_->graph(); }
  /// The graph as traced, before the passes but dead code: what traces at other sizes are compared
  /// with, what a graph shared across sizes instantiates (shared_sizes.h) and, for one whose
  /// template is not empty, what a file holds.
  const Graph& traced_graph() const { return traced_; }
  /// The graph without fusion: what the dispatch path runs and what a file stores.
  const Graph& unfused_graph() const { return plain_->graph(); }
  /// The flat tensor arguments it was traced for (concrete shapes).
  const std::vector<TensorSpec>& specs() const { return specs_; }
  std::size_t planned_peak_bytes() const { return fast_->planned_peak_bytes(); }
  const std::shared_ptr<const void>& structure() const { return structure_; }
  const std::string& label() const { return label_; }

  /// The Variable arguments of the call it was traced for (detail::FlatCall::variables): the
  /// variables its graphs read and assign in their place.
  void set_argument_variables(const std::vector<Variable>& vars);
  /// Whether `vars` are its argument variables, handle for handle.
  bool bound_to(const std::vector<Variable>& vars) const;
  /// A copy whose graphs read and assign `vars` (of the same kinds) where they read and assign its
  /// argument variables; nullptr when a tf::cond or tf::while_loop node's branches assign
  /// variables (their branch graphs hold the variables, out of reach).
  std::shared_ptr<ConcreteFunction> rebound(const std::vector<Variable>& vars) const;

 private:
  ConcreteFunction() = default;

  std::string label_;
  Graph traced_;
  std::unique_ptr<Executor> fast_;
  std::unique_ptr<Executor> plain_;
  std::shared_ptr<const void> structure_;
  std::shared_ptr<const Differentiable> differentiable_;
  std::vector<TensorSpec> specs_;
  std::vector<std::weak_ptr<detail::VariableState>> argument_variables_;
};

struct TraceResult {
  std::vector<Tensor> outputs;  // the call's results (the trace ran it)
  std::shared_ptr<ConcreteFunction> function;
  std::size_t nodes_traced = 0;
};

/// Traces `body` on `args` (the call's tensors); with `differentiable`, also derives the
/// gradient graph and records this call as one op on the tapes recording outside.
TraceResult trace(const std::string& label, bool optimize, std::span<const Tensor> args,
                  const detail::FunctionCore::Body& body, bool differentiable);

/// A recorded call at sizes other than those `first` was traced at, by `first`'s differentiable
/// pair instantiated at them (`forward`, `backward`: its traced_forward and traced_backward with
/// their size templates applied, shared_sizes.h), without the body: runs the forward once
/// unfused on `args` (the call's results, the saved values and every value's shape) and the
/// backward once on ones for its cotangents (its shapes), then builds the pair as a trace does
/// and records the call. If either run fails, the variables the forward assigned get their values
/// back before the error goes on.
TraceResult trace_instantiated(const ConcreteFunction& first, Graph forward, Graph backward,
                               std::span<const Tensor> args, bool optimize);

}  // namespace tapeflow::graph
