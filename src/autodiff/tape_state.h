#pragma once
// What a GradientTape holds: its options, lifecycle flags and records. recording.cpp writes it,
// backward.cpp reads it. Diagnostics keep what they need about a tape in its `notes` (see
// recording_listener.h); the core never looks inside them.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "autodiff/nesting.h"
#include "autodiff/records.h"
#include "tapeflow/tape.h"

namespace tapeflow::autodiff {
struct ThreadTapes;
}

namespace tapeflow::detail {

/// What a recording listener keeps about one tape (recording_listener.h); owned by the tape.
struct TapeNotes {
  virtual ~TapeNotes() = default;
};

struct TapeState {
  TapeOptions options;
  /// With options.watch_accessed_variables, also watch non-trainable variables on read: the inner
  /// tape of a differentiable tf::function trace, whose sources must include every variable a tape
  /// recording the call may watch (explicitly, for a non-trainable one).
  bool watches_untrainable_reads = false;
  std::thread::id owner = std::this_thread::get_id();
  /// Between construction and destruction. Atomic: a tape may be destroyed on another thread than
  /// its owner, whose dispatch path may be reading this.
  std::atomic<bool> in_stack = true;
  int pauses = 0;  // live stop_recording() guards (and gradient() of a persistent tape)
  /// A stop_recording() guard was destroyed on another thread than the owner: the pause cannot
  /// end there (the owner's registry is not that thread's to change), so the tape stays paused and
  /// its gradient calls refuse (tape_access.h, run_pass) rather than miss the ops since.
  std::atomic<bool> pause_ended_elsewhere = false;
  bool consumed = false;   // a non-persistent tape after its gradient() call
  int running_passes = 0;  // gradient()/jacobian() calls running on this tape (reset() refuses)
  bool warned_dtype = false;
  // Places in this thread's tape registry (recording.cpp): O(1) removal from the live list, and
  // whether the tape is on the list of recording tapes the dispatch path walks.
  std::size_t live_index = 0;
  bool listed_recording = false;
  /// The owner thread's registry: a tape destroyed on another thread tells it there.
  std::shared_ptr<autodiff::ThreadTapes> registry;

  /// Tensor id -> index of the op that produced it in `ops`, or -1 for a watched tensor/variable.
  autodiff::IdMap<std::int64_t> producer;
  autodiff::Records ops;
  autodiff::SlotStore slots;    // the records' slots
  autodiff::ShapeStore shapes;  // the slots' shapes
  std::vector<Variable> watched_variables;

  std::uint64_t nesting_id = autodiff::next_nesting_id();

  /// The recording listener's notes about this tape (null without a listener).
  std::unique_ptr<TapeNotes> notes;

  TapeState() = default;
  TapeState(const TapeState&) = delete;
  TapeState& operator=(const TapeState&) = delete;
  ~TapeState() {
    if (!ops.empty()) t_last_tape_records = ops.size();
  }

  /// The number of records of the last tape released on this thread: a new tape reserves room
  /// for as many (a training loop records the same ops every step), so its id map and record
  /// array do not grow and rehash their way there again.
  static constinit thread_local std::size_t t_last_tape_records;
  void reserve_like_last_tape() {
    const std::size_t n = std::min<std::size_t>(t_last_tape_records, std::size_t{1} << 20);
    ops.reserve(n);
    producer.reserve(n);
  }

  /// Drops every record (a non-persistent tape after its gradient call, reset()).
  void release_records();

  /// Whether the tape records ops of its thread, unless a forward accumulator hides it.
  bool wants_to_record() const {
    return in_stack.load(std::memory_order_relaxed) && pauses == 0 && !consumed;
  }
  bool recording() const { return wants_to_record() && !autodiff::tape_hidden(nesting_id); }
};

}  // namespace tapeflow::detail

namespace tapeflow::autodiff {

/// This thread's live tapes, in no particular order (recording.cpp).
const std::vector<std::shared_ptr<detail::TapeState>>& this_thread_tapes();
/// The tapes of this thread the dispatch path visits for each op: those that want to record
/// (maybe hidden by a forward accumulator), in creation order. Its length, not the number of live
/// tapes, is what an op costs.
std::span<detail::TapeState* const> recording_tapes();

}  // namespace tapeflow::autodiff
