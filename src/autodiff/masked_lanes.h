#pragma once
// Masked lanes of backward-pass cotangents (see docs/design/tape-internals.md, "Masked lanes stay zero").
//
// where(cond, a, b) sends its cotangent to a in the lanes where cond holds and an exact zero to
// the others; the lanes not taken are masked: nothing the branch computed there matters. In
// TensorFlow, PyTorch and JAX the gradients behind the mask then multiply that zero by their
// local derivative, and 0 * Inf = NaN poisons the result (where(x > 0, sqrt(x), 0) at x = 0).
// Here the backward pass remembers which lanes of which cotangent are masked, and the chain rule
// of every elementwise gradient (ops::chain) keeps those lanes exact zeros. Away from an op's
// singular points only masked lanes are protected: a cotangent that is zero for a numerical
// reason (an underflow) times an overflowed local derivative (exp's) still gives 0 * Inf = NaN,
// as in TensorFlow, so a real problem is never hidden as a zero. At a singular point of the op
// itself (sqrt, rsqrt, reciprocal, log, div, pow, atan2, ... at 0) any zero cotangent gives 0, as
// TensorFlow's kernels do (ops::chain_singular; docs/design/tape-internals.md, "Zero cotangents at singular
// points").
//
// The table lives for one backward pass on one thread (MaskedLanesScope); outside a backward
// pass nothing is recorded and lookups find nothing.

#include <unordered_map>

#include "tapeflow/tensor.h"

namespace tapeflow::autodiff {

/// Records that the lanes of `cotangent` where the bool tensor `mask` (same shape) is true are
/// masked. No-op outside a backward pass.
void mark_masked_lanes(const Tensor& cotangent, const Tensor& mask);

/// The masked lanes of `cotangent`, or nullptr if none are known.
const Tensor* masked_lanes(const Tensor& cotangent);

/// Installs an empty table for the backward pass running on this thread; restores the previous
/// one (an enclosing backward pass) when it ends.
class MaskedLanesScope {
 public:
  MaskedLanesScope();
  ~MaskedLanesScope();
  MaskedLanesScope(const MaskedLanesScope&) = delete;
  MaskedLanesScope& operator=(const MaskedLanesScope&) = delete;

 private:
  std::unordered_map<TensorId, Tensor> table_;
  std::unordered_map<TensorId, Tensor>* outer_;
};

}  // namespace tapeflow::autodiff
