#pragma once
// What a GradientTape holds. See tape.cpp for the algorithm.

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autodiff/op_def.h"
#include "tapeflow/tape.h"

namespace tapeflow::autodiff {

/// One input or output of a recorded op: its identity and metadata always, its value only if the
/// op's gradient reads it (Saves).
struct Slot {
  TensorId id;
  Shape shape;
  DType dtype;
  Tensor saved;
};

/// One executed op as the tape remembers it.
struct OpRecord {
  const OpDef* op;
  std::uint32_t num_inputs;
  std::vector<Slot> slots;  // inputs first, then outputs
  std::shared_ptr<const void> attrs;

  std::span<const Slot> inputs() const { return {slots.data(), num_inputs}; }
  std::span<const Slot> outputs() const { return std::span<const Slot>(slots).subspan(num_inputs); }
};

}  // namespace tapeflow::autodiff

namespace tapeflow::detail {

struct TapeState {
  TapeOptions options;
  std::thread::id owner = std::this_thread::get_id();
  bool in_stack = true;   // between construction and destruction
  bool paused = false;    // a stop_recording() guard is alive
  bool consumed = false;  // a non-persistent tape after its gradient() call
  bool warned_dtype = false;

  /// Tensor id -> index of the op that produced it in `ops`, or -1 for a watched tensor/variable.
  std::unordered_map<TensorId, std::int64_t> producer;
  std::vector<autodiff::OpRecord> ops;
  std::vector<Variable> watched_variables;

  bool recording() const { return in_stack && !paused && !consumed; }
};

}  // namespace tapeflow::detail
