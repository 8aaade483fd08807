#pragma once
// Runs a graph. The plan is made once per graph: for each value, the nodes that read it, as slots
// (one per input of each node, then one per graph output). A node's result is placed in its
// readers' slots as it is made, copied into all but the last and moved into that one, and a node
// releases its slots as it finishes: each intermediate is released the moment nothing needs it
// (its buffer goes back to the allocator's caches and the next op of the same size reuses it: no
// page faults in steady state), and a tensor handle is copied only for a value read twice.
//
// The slots of a run are a Frame. run() makes one per call; a while_loop keeps one per graph it
// runs (the cond, then its body composed with the cond) across iterations, with the captures fixed
// in the frame: the constants and captures are placed once, and an iteration copies nothing it
// does not have to.
//
// Two ways to run:
// - kFast: nodes run straight through OpDef::forward and the fused kernels, nothing recorded;
// - kDispatch: every node goes through the dispatch path (autodiff::run_op, Variable::read_value),
//   so tapes record it, accumulators push tangents through it and an enclosing trace sees it: how
//   a graph runs where its ops must be observed (forward mode, higher order, a loaded function
//   called inside another function's trace). Only an unfused graph runs this way.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapeflow::graph {

enum class RunMode { kFast, kDispatch };

class Executor {
 public:
  /// The slots of one run. Between runs it holds only the graph's constants and the frame's fixed
  /// inputs. A frame belongs to the executor that made it and to one run at a time.
  class Frame {
   public:
    /// `fixed`: the values of the graph's last fixed.size() inputs for every run on this frame (a
    /// loop's captures), placed once.
    explicit Frame(const Executor& executor, std::span<const Tensor> fixed = {});
    Frame(const Frame&) = delete;  // kept_ may point into own_kept_
    Frame& operator=(const Frame&) = delete;

   private:
    friend class Executor;
    const Executor* executor_;
    std::size_t fixed_;
    std::vector<Tensor> slots_;
    /// Per slot: a constant or a fixed input, never released. The executor's constant_slots_
    /// unless the frame has fixed inputs, which mark their slots in own_kept_.
    std::vector<std::uint8_t> own_kept_;
    const std::uint8_t* kept_;
  };

  /// `name` labels errors: "[function 'loss' (train.cpp:12), node 3 of 9: MatMul] ...".
  Executor(Graph graph, std::string name);

  /// With `shapes`, also gives the shape of every value the run produced (indexed by ValueId;
  /// others stay empty): how a graph shared across sizes learns its values' shapes at a new size.
  std::vector<Tensor> run(std::span<const Tensor> inputs, RunMode mode,
                          std::vector<Shape>* shapes = nullptr) const;

  /// Runs on `frame`; `inputs` are the graph's inputs but the frame's fixed ones. The first
  /// `taken` are moved from and left empty (a loop's variables, which the caller replaces with
  /// the results), so the run releases them at their last reader; the others are copied. An input
  /// the graph never reads is not touched.
  std::vector<Tensor> run(Frame& frame, std::span<Tensor> inputs, std::size_t taken, RunMode mode) const;

  const Graph& graph() const { return graph_; }
  const std::string& name() const { return name_; }
  /// Bytes of the largest set of values alive at once under the plan (trace-time shapes).
  std::size_t planned_peak_bytes() const { return planned_peak_bytes_; }

 private:
  void plan();
  /// Whether a node or the graph's outputs read `v`.
  bool read(ValueId v) const { return reader_begin_[v] != reader_begin_[v + 1]; }
  /// Puts `value` in the slots of v's readers: copied into every one, or with an rvalue copied
  /// into all but the last and moved into that one.
  void place(Frame& frame, ValueId v, const Tensor& value) const;
  void place(Frame& frame, ValueId v, Tensor&& value) const;
  std::vector<Tensor> execute(Frame& frame, RunMode mode, std::vector<Shape>* shapes) const;
  void run_node(std::size_t k, Frame& frame, RunMode mode, std::vector<Shape>* shapes) const;

  Graph graph_;
  std::string name_;
  std::vector<std::size_t> slot_begin_;       // per node, then the outputs, then the end: first slot
  std::vector<std::size_t> reader_begin_;     // per value, then the end: into reader_slots_
  std::vector<std::uint32_t> reader_slots_;   // each value's readers' slots, in order
  std::vector<std::uint8_t> constant_slots_;  // per slot: fed by a constant
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
