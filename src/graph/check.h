#pragma once
// What every graph must be, checked: the graph builders (the tracer, the file reader, the
// instantiation at new sizes) and every pass keep it true. In debug builds and in the test suite
// the passes run check() after each one (passes.h), so a pass that breaks a graph is named at
// once instead of surfacing later as a wrong value or a crash in the executor.

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace tapeflow::graph {

/// What is wrong with `g`, or "" if nothing:
/// - every value the inputs, constants, nodes and outputs name exists, and is defined once (a
///   graph input, a constant or one node's output);
/// - a node reads only values defined before it (the node order is a topological order);
/// - an op node has the inputs its forward takes and the outputs its attributes give (where the
///   op's shape fixes them); a constant has its value's dtype and shape;
/// - a variable node names a captured variable and reads or assigns values of its dtype and shape;
/// - a fused node's inputs and outputs are the dtypes and shapes its kernel was built for;
/// - the graph's outputs are defined.
/// The op nodes' output dtypes and shapes are the ones their ops gave when the graph was traced;
/// the executor checks them again at run time where a graph comes from a file.
std::string check(const Graph& g);

/// Throws InternalError naming `step` (what made or last rewrote `g`: "the pass fold_constants")
/// and what check() found, if anything; DataLossError naming the file for a graph read from one
/// (Graph::file), whose bytes are to blame.
void check_after(const Graph& g, std::string_view step);

/// Whether the passes check the graph after each one: on in debug builds (no NDEBUG), off in
/// release builds unless turned on (the test suite turns it on for all its tests).
bool checking_after_passes();
void set_checking_after_passes(bool on);

}  // namespace tapeflow::graph
