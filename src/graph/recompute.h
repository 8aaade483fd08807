#pragma once
// Recomputing cheap saved values: the values a function's backward graph reads from its forward
// (the *saved* values, concrete.h) are what a recorded call keeps alive between its forward and
// its gradient, and what the forward writes to memory and the backward reads back. Where a saved
// value is a short chain of cheap elementwise ops of the call's own inputs (x * x - y, a ReLU's
// or a where's operand, a clipped value), the backward graph computes it again from those inputs
// instead, which the record keeps anyway: the forward stores nothing for it, and in the fused
// backward graph the chain runs in registers beside the gradient's own ops.
//
// Recomputed: a saved value produced by at most kMaxRecomputedOps cheap elementwise nodes
// (BlockOp::cheap: per-element functions, not the SLEEF array functions, whose second evaluation
// costs more than the memory it saves: the 16M chain's exp and sin took 1.6x as long recomputed)
// of its own shape, whose leaves are the forward's inputs or constants, reading at most two
// inputs of its size (so the backward reads no more bytes than the saved value would have cost:
// written once, read once). Everything else is still saved.

#include <span>
#include <vector>

#include "graph/graph.h"

namespace tapeflow::graph {

inline constexpr std::size_t kMaxRecomputedOps = 16;

/// The values a backward graph reads from its forward: `forward[i]` (a value of the forward
/// graph) is the backward graph's input `backward_inputs[i]`, and `tensors[i]` its value in the
/// trace.
struct SavedValues {
  std::vector<ValueId> forward;
  std::vector<ValueId> backward_inputs;
  std::vector<Tensor> tensors;
};

/// Rewrites `backward` to compute the cheap saved values from the forward's inputs (see the top
/// of this file) and updates `saved` (and backward.inputs, whose first `num_cotangents` entries
/// are the cotangents) to what is still saved. `forward_args` are the trace's values of the
/// forward graph's inputs.
void recompute_cheap_saved_values(const Graph& forward, std::span<const Tensor> forward_args, Graph& backward,
                                  std::size_t num_cotangents, SavedValues& saved);

}  // namespace tapeflow::graph
