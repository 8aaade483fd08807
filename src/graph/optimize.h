#pragma once
// The graph passes that need no kernel of their own: dead code, common subexpressions and
// constant folding. Fusion is its own pass (fusion.h). Each keeps the node order topological and
// never removes, merges or moves a stateful node (variable reads and assignments, and ops marked
// OpDef::stateful: an If or While whose branches assign variables, never folded either).

#include "graph/graph.h"

namespace tapeflow::graph {

/// Removes op nodes and variable reads whose outputs nothing uses (not the graph's outputs, not
/// a later node), and values nothing refers to afterwards stay as unused slots.
void eliminate_dead_code(Graph& g);

/// Merges op nodes with the same op, the same inputs and equal attributes (compared by the op's
/// attribute codec, autodiff/attr_codec.h; without one, only nodes sharing one attribute object).
void eliminate_common_subexpressions(Graph& g);

/// Runs op nodes whose inputs are all constants once, at build time, if their outputs are small
/// (at most 64 KiB each), and makes the outputs constants.
void fold_constants(Graph& g);

/// Rewrites ReluGrad(MaxPoolGrad(x, dy), x), a ReLU followed by max pooling differentiated, as
/// MaxPoolGrad(x, ReluGrad(dy, MaxPool(x))) where the graph has that MaxPool: the same bits, with
/// the mask over the pooled tensor instead of a full-size pass (a CNN's conv -> ReLU -> pool step).
void relu_gradient_before_max_pool_gradient(Graph& g);

/// Removes StopGradient nodes, each use of one's output reading its input instead: StopGradient's
/// forward is the identity (sharing its input's buffer), and it only stops observers (tapes and
/// accumulators watching replayed nodes; the tracer adds one after each op a body runs inside a
/// NoRecordingScope of its own: 86 in an Adam step of a three-layer MLP, where they also split
/// the update's fusion groups). For the fast graph, which runs unobserved.
void drop_stop_gradients(Graph& g);

/// Whether two op nodes of one op have equal attributes (by the op's codec; without one, only
/// when they share one attribute object).
bool attrs_equal(const Node& a, const Node& b);

}  // namespace tapeflow::graph
