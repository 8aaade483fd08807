#pragma once
// The one extension point of the recording path: a process-wide listener told what the tapes did
// *not* record, for diagnostics that must know it later (src/debug/trace.cpp keeps the cuts and
// paused spans that tf::debug::explain reads). The core calls it and never reads what it keeps.
//
// Costs. Without a listener nothing below is called: each call site first loads one atomic
// pointer. With one, a recorded op still pays nothing: the listener hears only about ops a
// recording tape saw and did not record, pauses, resets, assignments under a recording tape, and
// ops on a thread with no tape while another thread has one.

#include <atomic>
#include <span>
#include <string_view>

#include "autodiff/op_def.h"
#include "autodiff/tape_state.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

namespace tapeflow::autodiff {

class RecordingListener {
 public:
  virtual ~RecordingListener() = default;
  /// A tape was created or reset (it may already be inside a pause: tape.pauses > 0).
  virtual void tape_started(detail::TapeState& tape) = 0;
  /// The tape's first pause began, or its last pause ended.
  virtual void pause_began(detail::TapeState& tape) = 0;
  virtual void pause_ended(detail::TapeState& tape) = 0;
  /// The tape dropped its records (a non-persistent tape's gradient() call).
  virtual void records_released(detail::TapeState& tape) = 0;
  /// A recording tape saw `op` and did not record it: none of its floating inputs is tracked.
  virtual void op_not_recorded(detail::TapeState& tape, const OpDef& op,
                               std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) = 0;
  /// `value` is being written into `var` by `op` (AssignVariableOp, AssignAddVariableOp, ...)
  /// while `tape` records; no tape records assignments.
  virtual void variable_updated(detail::TapeState& tape, std::string_view op, const Variable& var,
                                const Tensor& value) = 0;
  /// This thread has no tape, another thread has one, and an op computed `outputs`.
  virtual void computed_without_tape(std::span<const Tensor> outputs) = 0;
};

/// The installed listener, or nullptr. Installed once, before main (src/debug/trace.cpp).
extern std::atomic<RecordingListener*> g_recording_listener;
inline RecordingListener* recording_listener() {
  return g_recording_listener.load(std::memory_order_relaxed);
}

}  // namespace tapeflow::autodiff
