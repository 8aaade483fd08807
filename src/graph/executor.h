#pragma once
// Runs a graph. The plan is made once per graph: for each node, the values whose last reader it
// is, so each intermediate is released the moment nothing needs it (its buffer goes back to the
// allocator's caches and the next op of the same size reuses it: no page faults in steady state).
//
// Two ways to run:
// - kFast: nodes run straight through OpDef::forward and the fused kernels, nothing recorded;
// - kDispatch: every node goes through the dispatch path (autodiff::run_op, Variable::read_value),
//   so tapes record it, accumulators push tangents through it and an enclosing trace sees it: how
//   a graph runs where its ops must be observed (forward mode, higher order, a loaded function
//   called inside another function's trace). Only an unfused graph runs this way.

#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapeflow::graph {

enum class RunMode { kFast, kDispatch };

class Executor {
 public:
  /// `name` labels errors: "[function 'loss' (train.cpp:12), node 3 of 9: MatMul] ...".
  Executor(Graph graph, std::string name);

  /// With `shapes`, also gives the shape of every value the run produced (indexed by ValueId;
  /// others stay empty): how a graph shared across sizes learns its values' shapes at a new size.
  std::vector<Tensor> run(std::span<const Tensor> inputs, RunMode mode,
                          std::vector<Shape>* shapes = nullptr) const;

  const Graph& graph() const { return graph_; }
  const std::string& name() const { return name_; }
  /// Bytes of the largest set of values alive at once under the plan (trace-time shapes).
  std::size_t planned_peak_bytes() const { return planned_peak_bytes_; }

 private:
  void plan();
  void run_node(const Node& n, std::vector<Tensor>& env, RunMode mode) const;

  Graph graph_;
  std::string name_;
  std::vector<std::vector<ValueId>> release_after_;  // per node
  std::size_t planned_peak_bytes_ = 0;
};

/// The variable a node reads or writes, or FailedPreconditionError naming the function and the
/// variable if it has been destroyed since the trace.
Variable captured_variable(const Graph& g, std::int32_t index, std::string_view function);

/// The values of the variables a graph assigns, taken before it runs: restore() gives them back.
/// A graph run at new sizes of a function's unknown dimensions that fails must leave no
/// assignment behind, since the function's body then runs (traced) at those sizes.
class AssignedVariables {
 public:
  AssignedVariables(const Graph& g, std::string_view function);
  void restore();

 private:
  std::vector<std::pair<Variable, Tensor>> before_;
};

}  // namespace tapeflow::graph
