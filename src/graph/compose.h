#pragma once
// One graph from two that run one after the other: how a while_loop runs its body and then its
// cond on the body's results as one executor run per iteration instead of two.

#include <span>

#include "graph/graph.h"

namespace tapeflow::graph {

/// `first`, then `second` on values of `first`: second's input i reads `feed[i]`, a value of
/// `first` (an input or a node's output). The inputs are first's; the outputs are first's, then
/// second's. The captured variables are both lists, first's then second's.
Graph compose(const Graph& first, const Graph& second, std::span<const ValueId> feed);

}  // namespace tapeflow::graph
