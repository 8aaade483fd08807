#pragma once
// What the code that runs passes over a GradientTape needs from it: jacobian.cpp, the fused
// optimizer step (src/optim) and the diagnostics (src/debug), which see the tape read-only
// through TapeState and run the one backward pass (backward.h) with their observers.

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "autodiff/backward.h"
#include "autodiff/tape_state.h"
#include "core/check.h"
#include "tapeflow/tape.h"

namespace tapeflow::detail {

/// A GradientTape's state (the one friend of GradientTape).
struct TapeAccess {
  static const std::shared_ptr<TapeState>& state(const GradientTape& tape) { return tape.state_; }
};

}  // namespace tapeflow::detail

namespace tapeflow::autodiff {

inline constexpr std::string_view kConsumedMessage =
    "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)";

/// Throws FailedPreconditionError naming `what` (the function called: "GradientTape::gradient",
/// "debug::explain", ...) unless called from the tape's thread.
void require_owner(const detail::TapeState& tape, std::string_view what);

/// Throws InvalidArgumentError naming `what` for an undefined Tensor or a
/// moved-from Variable among the targets or sources.
void validate_targets_and_sources(std::span<const Source> ys, std::span<const Source> sources,
                                  std::string_view what);

/// Ends a non-persistent tape's recording for good and drops its records.
void consume(detail::TapeState& tape);

/// What a source no cotangent reached gets: zeros of `shape` under UnconnectedGradients::Zero,
/// otherwise a missing Gradient naming the source and why (from the tape's facts at hand).
Gradient unconnected_result(const detail::TapeState& tape, const Source& s, const Shape& shape,
                            UnconnectedGradients u);

/// Counts a pass as running on the tape while alive: reset() refuses then.
class RunningPass {
 public:
  explicit RunningPass(detail::TapeState& tape) : tape_(tape) { ++tape_.running_passes; }
  ~RunningPass() { --tape_.running_passes; }
  RunningPass(const RunningPass&) = delete;
  RunningPass& operator=(const RunningPass&) = delete;

 private:
  detail::TapeState& tape_;
};

/// Runs `body(tape, release)` as a backward pass over the tape (gradient, jacobian, minimize):
/// the pass is never recorded on this tape. A non-persistent tape is consumed from now on and
/// releases its records when the pass ends (`release` tells the body it may drop each record's
/// saved values once used); a persistent one, or any tape with `keep_records`, is paused while
/// the pass runs and keeps its records.
///
/// NOTE: a gradient function may destroy the GradientTape (or run gradient() again on a
/// persistent one). The pass holds its own reference to the state and `body` must read the tape
/// only through it: the records it walks and the producer map stay alive.
template <class F>
auto run_pass(const std::shared_ptr<detail::TapeState>& state, std::string_view what, F&& body,
              bool keep_records = false) {
  const std::shared_ptr<detail::TapeState> keep = state;
  detail::TapeState& tape = *keep;
  require_owner(tape, what);
  TAPEFLOW_REQUIRE(!tape.consumed, FailedPreconditionError, "{}", kConsumedMessage);
  TAPEFLOW_REQUIRE(!tape.pause_ended_elsewhere.load(std::memory_order_relaxed), FailedPreconditionError,
                   "[{}] a stop_recording() guard of this tape was destroyed on another thread than the one "
                   "that created the tape: the tape stays paused, so ops since then may be missing from it. "
                   "Destroy the guard on the tape's thread",
                   what);
  const bool persistent = tape.options.persistent || keep_records;
  std::optional<GradientTape::RecordingPause> pause;
  if (persistent) {
    pause.emplace(keep);
  } else {
    tape.consumed = true;
    recount_observers();
  }
  const RunningPass running(tape);
  struct Release {
    detail::TapeState& tape;
    bool persistent;
    ~Release() {
      if (!persistent) tape.release_records();
    }
  } release{tape, persistent};
  return body(tape, !persistent);
}

/// gradient()'s work on a tape's state, its pass watched by `observer` (may be null); see
/// run_pass for `keep_records`. `what` names the caller in errors.
std::vector<Gradient> gradient_pass(const std::shared_ptr<detail::TapeState>& state, std::string_view what,
                                    const Targets& targets, std::span<const Source> sources,
                                    const std::vector<Tensor>& output_gradients,
                                    UnconnectedGradients unconnected, BackwardObserver* observer = nullptr,
                                    bool keep_records = false);

}  // namespace tapeflow::autodiff
