#pragma once
// The backward pass: one prune and one reverse walk over a tape's records, which gradient(),
// jacobian(), batch_jacobian(), Optimizer::minimize and the diagnostics (src/debug) all run.
// See backward.cpp for the algorithm. Whatever needs to watch a pass (gradient norms, explain's
// path, a fused optimizer step, later all-reduce) passes a BackwardObserver instead of copying it.

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "autodiff/records.h"
#include "tapeflow/gradient.h"
#include "tapeflow/registry.h"
#include "tapeflow/tape.h"

namespace tapeflow::autodiff {

/// Which records a backward pass from the targets to the sources visits (step 1 of the
/// algorithm), and which of their inputs need a gradient.
struct Pruned {
  /// Per record: an output reaches a target through differentiable records' floating inputs.
  detail::RecyclingVector<char> reaches;
  /// Per record: a floating input depends on a source (is one, or is an output of a live record)
  /// and the op is differentiable (not no_gradient); whether or not it reaches a target.
  detail::RecyclingVector<char> live;
  /// Per record: live and reaches, the records the pass runs.
  detail::RecyclingVector<char> keep;
  /// Record k's input flags start at input_needed[first_input[k]]; an input is needed when it is
  /// floating and depends on a source (computed for every record, kept or not).
  detail::RecyclingVector<std::size_t> first_input;
  detail::RecyclingArray<bool> input_needed;
  IdSet source_ids;
  /// The gradient entry of each op on the tape, looked up once (an OpDef's entry is an atomic
  /// shared_ptr): the entries the pruning decided by are the ones the pass calls.
  absl::flat_hash_map<const OpDef*, std::shared_ptr<const GradientEntry>> entries;

  std::span<const bool> needed(std::size_t k, std::size_t num_inputs) const {
    return {input_needed.get() + first_input[k], num_inputs};
  }
};

/// Step 1. `producer` is the tape's id -> record map.
Pruned prune(const Records& ops, const IdMap<std::int64_t>& producer, std::span<const Source> ys,
             std::span<const Source> sources);

/// Watches one backward pass. Every call comes from the pass's own thread, in the pass's order
/// (records from the last to the first). A nested pass (a gradient function that differentiates)
/// has its own observer or none.
class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  /// Record `k` (kept, a cotangent reached an output) is next; its gradient runs after this call.
  virtual void before_record(std::size_t k) { (void)k; }
  /// Record `k`'s gradient function mapped the output cotangents `dys` to `grads`, one per input
  /// (checked: count, shapes, dtypes); only the inputs with `needed` set are used by the pass.
  virtual void after_record(std::size_t k, std::span<const Tensor> dys, std::span<const bool> needed,
                            const Grads& grads) {
    (void)k, (void)dys, (void)needed, (void)grads;
  }
  /// Source `i`'s gradient is final: no record left in the pass adds to it (nullptr: none reached
  /// it). Called once per source, as soon as the walk has passed the source's first reader and
  /// every record whose gradient runs user code (GradientEntry::runs_user_code, which may read
  /// the source's variable after the observer has updated it), and at the end for the rest. Return true to
  /// have the pass drop its reference: the source then gets no result, and the memory goes as soon as the
  /// observer lets go (a fused optimizer step). Returning true, the observer may also move *g away; the
  /// pass holds no other reference to the last source of an id that no record passes on.
  virtual bool source_final(std::size_t i, Gradient* g) {
    (void)i, (void)g;
    return false;
  }
};

/// One backward pass over the records `p` kept, as gradient() runs it.
struct BackwardPass {
  std::span<const Source> ys;
  /// One cotangent per target (ones for gradient()); integer targets carry no gradient.
  std::span<const Tensor> seeds;
  std::span<const Source> sources;
  /// Drop each record's saved values once it has been processed (a non-persistent tape).
  bool release = false;
  /// Leading dimensions of a stack of cotangents pushed through at once (vectorised Jacobians;
  /// only batchable ops run such a pass).
  std::span<const std::int64_t> batch = {};
  BackwardObserver* observer = nullptr;
};

/// Steps 2-4: each source's cotangent, std::nullopt where none arrived (or the observer took it).
std::vector<std::optional<Tensor>> backward(Records& ops, const Pruned& p, const BackwardPass& pass);

/// backward() as gradient() runs it: a gradient function may give an input's gradient as rows
/// (GradContext::set_indexed_slices), and a source reached only by rows keeps them (its Gradient's
/// indexed_slices()). Missing (no reason) where none arrived. The observer's after_record sees
/// the dense gradients only: row-sparse passes are for observers that watch sources.
std::vector<Gradient> backward_gradients(Records& ops, const Pruned& p, const BackwardPass& pass);

/// `s` with the batch dimensions `batch` in front.
Shape with_batch(std::span<const std::int64_t> batch, const Shape& s);

}  // namespace tapeflow::autodiff
