#pragma once
// What the diagnostics know about the ops a tape did *not* record, kept while tapes record by the
// recording listener this file's trace.cpp installs (autodiff/recording_listener.h).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "autodiff/tape_state.h"

namespace tapeflow::debug {

/// Why the tape saw an op on a tracked tensor and did not record it.
enum class CutReason : std::uint8_t {
  kIntegerInput,    // a tracked input is an integer/bool tensor, or the output of an earlier cut
  kVariableUpdate,  // assign / assign_add / assign_sub of a tracked value into a variable
};

/// An op the tape did not record although one of its inputs is tracked: the cheap trace explain
/// uses to say where a path was cut. Only ids, no values or shapes.
struct CutRecord {
  std::string_view op;  // the OpDef's name (the registry owns the string) or a static name
  CutReason reason;
  std::size_t position;  // number of records before it: its place in execution order
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;  // for kVariableUpdate: the variable's handle id
  std::string variable;           // for kVariableUpdate: the variable's name
};

/// The trace of one tape (its TapeState's notes).
struct TapeTrace final : detail::TapeNotes {
  /// Tensors with ids below this existed before the tape was created (ids grow in creation order).
  TensorId first_id = 0;
  /// Ops seen on tracked inputs but not recorded, in execution order (bounded by kMaxCuts).
  std::vector<CutRecord> cuts;
  /// Outputs of `cuts`: an op on one of them is a cut too, so a cut path can be followed.
  std::unordered_set<TensorId> cut_ids;
  /// Tensor id ranges [first, last) allocated while recording was paused; last = max while paused.
  std::vector<std::pair<TensorId, TensorId>> paused_ids;
  static constexpr std::size_t kMaxCuts = std::size_t{1} << 16;
};

/// The trace of `tape` (an empty one for a tape created before the listener was installed).
const TapeTrace& trace_of(const detail::TapeState& tape);

/// The thread that computed tensor `id` while it had no tape and another thread had one, if it
/// is among the most recent such tensors (explain's "computed on another thread").
std::optional<std::thread::id> unrecorded_thread_of(TensorId id);

}  // namespace tapeflow::debug
