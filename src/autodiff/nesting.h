#pragma once
// Which tapes and forward accumulators of a thread may observe ops right now.
//
// Tapes and forward accumulators are numbered in creation order on their thread (nesting ids).
// While an accumulator computes its JVPs, the tapes and accumulators created from it onwards up
// to that moment are hidden: inner ones ignore an outer accumulator's products (TensorFlow's
// strict nesting), which is what makes forward-over-reverse and forward-over-forward compose.
// Tapes created during the JVP computation itself (the fallback's own tape) are visible. A live
// NoRecordingScope (no_recording.h) hides every tape older than itself the same way.

#include <cstdint>

namespace tapeflow::autodiff {

/// The nesting id of a new tape or accumulator.
std::uint64_t next_nesting_id();
/// The id the next tape or accumulator will get.
std::uint64_t peek_nesting_id();
extern constinit thread_local std::uint64_t t_hidden_lo;
extern constinit thread_local std::uint64_t t_hidden_hi;

inline bool nesting_hidden(std::uint64_t id) { return id >= t_hidden_lo && id < t_hidden_hi; }

/// Tapes with a nesting id below this floor do not record: the highest floor of the live
/// NoRecordingScopes on this thread, each the next nesting id when it began; 0 when none is alive.
extern constinit thread_local std::uint64_t t_suspended_below;
/// Whether a tape or forward accumulator with nesting id `id` is kept from recording by a
/// forward accumulator's computation or a NoRecordingScope.
inline bool tape_hidden(std::uint64_t id) { return id < t_suspended_below || nesting_hidden(id); }

/// How many NoRecordingScopes are alive on this thread (a trace compares the count with the one
/// at its start to know which ops its body ran unrecorded).
std::size_t live_no_recording_scopes();

/// Recounts the recording tapes and active accumulators after a state change.
void recount_observers();

/// While alive, hides tapes and accumulators with nesting id in [from, peek_nesting_id()).
class HideNestedFrom {
 public:
  explicit HideNestedFrom(std::uint64_t from) : lo_(t_hidden_lo), hi_(t_hidden_hi) {
    t_hidden_lo = from;
    t_hidden_hi = peek_nesting_id();
    recount_observers();
  }
  ~HideNestedFrom() {
    t_hidden_lo = lo_;
    t_hidden_hi = hi_;
    recount_observers();
  }
  HideNestedFrom(const HideNestedFrom&) = delete;
  HideNestedFrom& operator=(const HideNestedFrom&) = delete;

 private:
  std::uint64_t lo_, hi_;
};

}  // namespace tapeflow::autodiff
