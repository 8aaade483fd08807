#pragma once
// The passes a graph goes through before it runs, as one ordered list. Each is a named unit that
// rewrites a graph in place and keeps what check.h checks; with checking_after_passes() (debug
// builds, the test suite) the graph is checked before the first pass and after each, and a broken
// one is an InternalError naming the pass.
//
//   1. eliminate_dead_code                        optimize.h
//   2. fold_constants                             optimize.h
//   3. eliminate_common_subexpressions            optimize.h
//   4. eliminate_dead_code (what 2 and 3 freed)   optimize.h
//   5. drop_stop_gradients                        optimize.h   fast graph only
//   6. relu_gradient_before_max_pool_gradient     optimize.h   fast graph only
//   7. fuse_elementwise                           fusion.h     fast graph only
//
// The fast graph runs unobserved (FunctionCore's fast path); the others (the unfused graph that
// the dispatch path runs, a function file holds and the ONNX exporter reads) keep every op a
// tape or accumulator must see. recompute.h's pass works on a forward and a backward graph
// together, so concrete.cpp runs it between the two lists' uses and checks both graphs after it.

#include <span>
#include <string_view>

#include "graph/graph.h"

namespace tapeflow::graph {

struct Pass {
  std::string_view name;
  void (*run)(Graph&);
  bool fast_only = false;  ///< only for the graph the fast path runs, unobserved
};

/// The passes, in the order they run.
std::span<const Pass> passes();

/// `g` after the passes: every one with `fuse` (the fast graph), else those that are not
/// fast_only.
Graph optimized(Graph g, bool fuse);

}  // namespace tapeflow::graph
