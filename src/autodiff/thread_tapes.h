#pragma once
// This thread's registry of live tapes: what the dispatch path walks (recording.cpp) and what a
// tape's lifecycle changes (gradient_tape.cpp).

#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
#include <span>
#include <vector>

#include "autodiff/tape_state.h"
#include "core/check.h"

namespace tapeflow::autodiff {

extern constinit thread_local int t_recording_tapes;

/// This thread's tape registry. An op visits only recording(): 40,000 live tapes of which few
/// record cost an op no more than those few. Creating a tape and destroying the newest or the
/// oldest are O(1) (amortised): the live list removes by swapping with its last entry, a new
/// tape goes to the end of recording() (it has the newest nesting id), the oldest leaves by
/// moving its start, and `t_recording_tapes` moves by one. A tape is on recording() while it
/// wants to record (alive, not paused, not consumed): one that stops leaves at the next recount,
/// which every other state change runs; one that starts again is re-listed in creation order
/// (the pause guard, reset()).
struct ThreadTapes {
  std::vector<std::shared_ptr<detail::TapeState>> live;  // any order; explain() looks through it
  /// Tapes of this thread destroyed on another thread: their states wait in `live` until this
  /// thread's next tape is created or destroyed.
  std::atomic<int> orphans{0};

  void add(const std::shared_ptr<detail::TapeState>& tape) {
    const bool dropped = drop_orphans();
    tape->live_index = live.size();
    live.push_back(tape);
    list_if_recording(*tape);
    // A new tape records and is visible: accumulators hide only tapes older than themselves.
    t_recording_tapes = dropped ? recount() : t_recording_tapes + 1;
  }
  void remove(detail::TapeState& tape) {
    const bool counted = tape.listed_recording && !tape_hidden(tape.nesting_id);
    unlist(tape);
    remove_live(tape);
    const bool dropped = drop_orphans();  // after: `tape` is no longer in_stack either
    t_recording_tapes = dropped ? recount() : t_recording_tapes - (counted ? 1 : 0);
  }
  /// The tapes that want to record, in creation (nesting id) order: what an op visits.
  std::span<detail::TapeState* const> recording() const {
    return std::span<detail::TapeState* const>(recording_).subspan(head_);
  }
  /// Puts a tape that wants to record (again) on recording(), keeping creation order.
  void list_if_recording(detail::TapeState& tape) {
    if (tape.listed_recording || !tape.wants_to_record()) return;
    compact();
    const auto at =
        std::upper_bound(recording_.begin(), recording_.end(), tape.nesting_id,
                         [](std::uint64_t id, const detail::TapeState* t) { return id < t->nesting_id; });
    recording_.insert(at, &tape);
    tape.listed_recording = true;
  }
  /// Forgets every tape (the thread is exiting: tapes alive elsewhere keep their own state).
  void clear() {
    recording_.clear();
    head_ = 0;
    live.clear();
  }
  /// Drops the tapes that stopped recording from recording() and counts the visible rest.
  int recount() {
    compact();
    std::erase_if(recording_, [](detail::TapeState* t) {
      if (t->wants_to_record()) return false;
      t->listed_recording = false;
      return true;
    });
    int n = 0;
    for (const detail::TapeState* t : recording_) n += tape_hidden(t->nesting_id) ? 0 : 1;
    return n;
  }

 private:
  std::vector<detail::TapeState*> recording_;  // [head_, end): recording()
  std::size_t head_ = 0;                       // entries before it belong to removed tapes

  /// Removes `tape` from recording(), found by its nesting id. The oldest leaves by moving
  /// head_ (a program that destroys its tapes oldest first pays no shift of all the others);
  /// the dead prefix is dropped once it is half the array, so the array stays within twice the
  /// listed tapes.
  void unlist(detail::TapeState& tape) {
    if (!tape.listed_recording) return;
    const auto first = recording_.begin() + static_cast<std::ptrdiff_t>(head_);
    const auto it =
        std::lower_bound(first, recording_.end(), tape.nesting_id,
                         [](const detail::TapeState* t, std::uint64_t id) { return t->nesting_id < id; });
    TAPEFLOW_ASSERT(it != recording_.end() && *it == &tape, "a listed tape is on the recording list");
    if (it == first) {
      ++head_;
      if (2 * head_ >= recording_.size()) compact();
    } else {
      recording_.erase(it);
    }
    tape.listed_recording = false;
  }
  void compact() {
    recording_.erase(recording_.begin(), recording_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  void remove_live(detail::TapeState& tape) {
    const std::size_t i = tape.live_index;
    if (i + 1 != live.size()) {
      live[i] = std::move(live.back());
      live[i]->live_index = i;
    }
    live.pop_back();
  }
  bool drop_orphans() {
    if (orphans.exchange(0, std::memory_order_acquire) == 0) return false;
    for (std::size_t i = live.size(); i-- > 0;)
      if (!live[i]->in_stack.load(std::memory_order_relaxed)) {
        unlist(*live[i]);
        remove_live(*live[i]);
      }
    return true;
  }
};

/// This thread's registry (tapes keep it alive: a tape destroyed on another thread reports there).
const std::shared_ptr<ThreadTapes>& thread_tapes_ptr();

}  // namespace tapeflow::autodiff
