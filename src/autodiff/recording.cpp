// Recording: which tapes of a thread record, and what a record keeps.
//
// Every op goes through one dispatch path (dispatch.h), which calls record() when a tape on this
// thread is recording. A tape records an op only if one of its floating inputs is watched or was
// produced by an op the tape recorded (TensorFlow's ShouldRecord), so integer paths and unrelated
// work cost nothing. A record keeps the op's OpDef, the ids, shapes and dtypes of its inputs and
// outputs, and only the values its gradient declared in Saves. Variables: a read inside a
// recording tape is recorded as ReadVariableOp from the variable's handle id to a fresh tensor
// id, so gradients reach the handle; assignments are never recorded, which is why a read after
// assign_add starts a new path.
//
// Each thread keeps a registry of its live tapes (ThreadTapes below): creating a tape and
// destroying the innermost are O(1), and an op visits only the tapes that record. What the tapes
// saw and did not record goes to the recording listener, if one is installed
// (recording_listener.h).

#include <algorithm>
#include <vector>

#include "autodiff/dispatch.h"
#include "autodiff/recording_listener.h"
#include "autodiff/tape_state.h"
#include "autodiff/thread_tapes.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/no_recording.h"

namespace tapeflow {

namespace autodiff {

constinit thread_local int t_recording_tapes = 0;
constinit thread_local std::uint64_t t_hidden_lo = 0;
constinit thread_local std::uint64_t t_hidden_hi = 0;
constinit thread_local std::uint64_t t_suspended_below = 0;
std::atomic<int> g_live_tapes{0};
std::atomic<RecordingListener*> g_recording_listener{nullptr};
namespace {
thread_local std::uint64_t t_next_nesting_id = 0;
}
std::uint64_t next_nesting_id() { return t_next_nesting_id++; }
std::uint64_t peek_nesting_id() { return t_next_nesting_id; }

namespace {
/// This thread's registry. Tapes keep it alive (a tape destroyed on another thread reports there),
/// and it holds their states: the holder breaks that cycle when the thread exits.
struct ThreadTapesHolder {
  std::shared_ptr<ThreadTapes> tapes = std::make_shared<ThreadTapes>();
  ~ThreadTapesHolder() { tapes->clear(); }
};
}  // namespace

const std::shared_ptr<ThreadTapes>& thread_tapes_ptr() {
  thread_local ThreadTapesHolder holder;
  return holder.tapes;
}

namespace {

ThreadTapes& thread_tapes() { return *thread_tapes_ptr(); }

void recount_recording_tapes() { t_recording_tapes = thread_tapes().recount(); }

/// The floors of this thread's live NoRecordingScopes, in creation order. t_suspended_below is
/// their maximum, so the scopes may end in any order.
std::vector<std::uint64_t>& suspension_floors() {
  thread_local std::vector<std::uint64_t> floors;
  return floors;
}

}  // namespace

}  // namespace autodiff

NoRecordingScope::NoRecordingScope() : floor_(autodiff::peek_nesting_id()) {
  autodiff::suspension_floors().push_back(floor_);
  autodiff::t_suspended_below = std::max(autodiff::t_suspended_below, floor_);
  autodiff::recount_observers();
}

NoRecordingScope::~NoRecordingScope() {
  std::vector<std::uint64_t>& floors = autodiff::suspension_floors();
  // Searched from the end: scopes usually end innermost first.
  if (const auto it = std::find(floors.rbegin(), floors.rend(), floor_); it != floors.rend())
    floors.erase(std::next(it).base());
  autodiff::t_suspended_below = floors.empty() ? 0 : *std::max_element(floors.begin(), floors.end());
  autodiff::recount_observers();
}

namespace autodiff {

std::size_t live_no_recording_scopes() { return suspension_floors().size(); }

const std::vector<std::shared_ptr<detail::TapeState>>& this_thread_tapes() { return thread_tapes().live; }
std::span<detail::TapeState* const> recording_tapes() { return thread_tapes().recording(); }

void recount_accumulators();  // forward_accumulator.cpp

void recount_observers() {
  recount_recording_tapes();
  recount_accumulators();
}

namespace {

bool watches_a_floating_input(const detail::TapeState& tape, std::span<const Tensor* const> inputs) {
  for (const Tensor* in : inputs)
    if (is_floating(in->dtype()) && tape.producer.contains(in->id())) return true;
  return false;
}

/// Whether `tape` watches variable `v`, after watching it if the tape watches accessed variables
/// and `v` is trainable (or the tape watches untrainable reads too) and floating (a read inside
/// the tape's scope).
bool watches_variable(detail::TapeState& tape, const Variable& v) {
  if (tape.options.watch_accessed_variables && (v.trainable() || tape.watches_untrainable_reads) &&
      is_floating(v.dtype()) && tape.producer.emplace(v.handle_id(), -1).second) {
    tape.watched_variables.push_back(v);
    return true;
  }
  return tape.producer.contains(v.handle_id());
}

/// Records `op` on `tape`. The tensor input slots are written by the first tape that records the
/// op and copied by the others (`first`: that first record, or nullptr); the variable slots are
/// each tape's own.
void append(detail::TapeState& tape, const OpDef& op, std::span<const Tensor* const> inputs,
            std::span<const Variable> variables, std::span<const Tensor> outputs,
            const std::shared_ptr<const void>& attrs, const OpRecord* first) {
  const Saves saves = op.saves();
  const std::size_t num_inputs = inputs.size() + variables.size();
  const auto num_slots = static_cast<std::uint32_t>(num_inputs + outputs.size());
  Slot* slots = tape.slots.allocate(num_slots);
  if (first != nullptr) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      slots[i] = first->slots[i];
      slots[i].shape = tape.shapes.intern(*first->slots[i].shape);
    }
  } else {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& in = *inputs[i];
      slots[i] = {in.id(), tape.shapes.intern(in.shape()), in.dtype(),
                  saves.input(static_cast<int>(i)) ? in : Tensor()};
    }
  }
  // A variable this tape does not watch links to nothing: the op's read of it would not have been
  // recorded here, so (as for the eager body) no gradient may reach it through this tape.
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const Variable& v = variables[i];
    const TensorId id = tape.producer.contains(v.handle_id()) ? v.handle_id() : kNoTensor;
    slots[inputs.size() + i] = {id, tape.shapes.intern(v.shape()), v.dtype(), Tensor()};
  }
  const auto index = static_cast<std::int64_t>(tape.ops.size());
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& out = outputs[j];
    slots[num_inputs + j] = {out.id(), tape.shapes.intern(out.shape()), out.dtype(),
                             saves.output(static_cast<int>(j)) ? out : Tensor()};
    tape.producer.insert_or_assign(out.id(), index);
  }
  tape.ops.push_back({&op, static_cast<std::uint32_t>(num_inputs), num_slots, slots, attrs});
}

}  // namespace

void note_unrecorded(std::span<const Tensor> outputs) {
  RecordingListener* listener = recording_listener();
  // This thread's own tape is paused when it has one: the listener knows that from the pause.
  if (listener == nullptr || !thread_tapes().live.empty()) return;
  listener->computed_without_tape(outputs);
}

void note_variable_update(std::string_view op, const Variable& var, const Tensor& value) {
  RecordingListener* listener = recording_listener();
  if (listener == nullptr) return;
  for (detail::TapeState* tape : recording_tapes())
    if (tape->recording()) listener->variable_updated(*tape, op, var, value);
}

void record(const OpDef& op, std::span<const Tensor* const> inputs, std::span<const Tensor> outputs,
            std::shared_ptr<const void> attrs) {
  record_with_variables(op, inputs, {}, outputs, std::move(attrs));
}

void record_with_variables(const OpDef& op, std::span<const Tensor* const> inputs,
                           std::span<const Variable> variables, std::span<const Tensor> outputs,
                           std::shared_ptr<const void> attrs) {
  const OpRecord* first = nullptr;
  for (detail::TapeState* tape : recording_tapes()) {
    if (!tape->recording()) continue;
    bool watched = watches_a_floating_input(*tape, inputs);
    for (const Variable& v : variables)
      if (is_floating(v.dtype())) watched = watches_variable(*tape, v) || watched;
    if (!watched) {
      if (RecordingListener* listener = recording_listener())
        listener->op_not_recorded(*tape, op, inputs, outputs);
      continue;
    }
    append(*tape, op, inputs, variables, outputs, attrs, first);
    first = &tape->ops.back();
  }
}

void require_defined(std::string_view op, std::span<const Tensor* const> inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    TAPEFLOW_REQUIRE(inputs[i]->defined(), InvalidArgumentError,
                     "[{}] input {} is an undefined (default-constructed) Tensor", op, i);
}

struct ReadVariableOp {
  static constexpr std::string_view kName = "ReadVariableOp";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kBatchable = true;  // elementwise in dy
  static constexpr bool kGradientIsDy = true;
  // y = read(v);  dv = dy
  static Grads backward(const GradContext& c) { return {c.dy()}; }
};

void register_variable_ops(Registry& r) { r.add<ReadVariableOp>(); }

void forward_accumulate_variable_read(const Variable& var, const Tensor& read);  // forward_accumulator.cpp

/// Called by Variable::read_value() when a tape records or an accumulator is active: watches the
/// variable on tapes that auto-watch it, records the read on every tape that watches it, and
/// gives the read its tangent on accumulators. Returns the tensor the caller should use: a fresh
/// id per observed read, as each read is its own op output in TensorFlow.
Tensor record_variable_read(const Variable& var, const Tensor& value) {
  bool on_a_tape = false;
  for (detail::TapeState* tape : recording_tapes())
    if (tape->recording()) on_a_tape = watches_variable(*tape, var) || on_a_tape;
  if (!on_a_tape && !any_accumulator_active()) return value;
  Tensor read = detail::share_with_shape(value, value.shape());
  if (any_accumulator_active()) forward_accumulate_variable_read(var, read);
  const OpDef& op = op_def<ReadVariableOp>();
  const OpRecord* first = nullptr;
  // Listed again: the accumulator's JVP may have created and destroyed a tape.
  for (detail::TapeState* tape : recording_tapes()) {
    if (!tape->recording() || !tape->producer.contains(var.handle_id())) continue;
    append(*tape, op, {}, {&var, 1}, {&read, 1}, nullptr, first);
    first = &tape->ops.back();
  }
  return read;
}

}  // namespace autodiff

void detail::TapeState::release_records() {
  if (!ops.empty()) t_last_tape_records = ops.size();
  ops.clear();
  ops.shrink_to_fit();
  slots.clear();
  shapes.clear();
  producer.clear();
  if (autodiff::RecordingListener* listener = autodiff::recording_listener())
    listener->records_released(*this);
}

constinit thread_local std::size_t detail::TapeState::t_last_tape_records = 0;

}  // namespace tapeflow
