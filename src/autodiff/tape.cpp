// The gradient tape.
//
// Terms. A *target* is a tensor we differentiate (a loss); a *source* is a tensor or variable we
// differentiate with respect to; a *cotangent* of a tensor t is dL/dt, the gradient of the summed
// targets with respect to t, with t's shape.
//
// Recording. Every op goes through one dispatch path (dispatch.h), which calls record() when a
// tape on this thread is recording. A tape records an op only if one of its floating inputs is
// watched or was produced by an op the tape recorded (TensorFlow's ShouldRecord), so integer
// paths and unrelated work cost nothing. A record keeps the op's OpDef, the ids, shapes and
// dtypes of its inputs and outputs, and only the values its gradient declared in Saves.
// Variables: a read inside a recording tape is recorded as ReadVariableOp from the variable's
// handle id to a fresh tensor id, so gradients reach the handle; assignments are never recorded,
// which is why a read after assign_add starts a new path.
//
// Backward (gradient_flat). Records are in execution order, which is already a topological
// order, so no graph sort is needed (the eager-tape observation stan-dev/math makes):
//   1. Prune. A reverse sweep from the targets marks the records whose outputs reach a target; a
//      forward sweep from the sources keeps, among those, the records with an input that depends
//      on a source. Only these run, and only their source-dependent inputs get gradients. Paths
//      are cut where gradients stop: an integer/bool input never depends on a source, and a
//      no_gradient op (StopGradient, argmax) is not kept, so nothing it feeds depends on a source
//      through it (no gradient function behind a cut is ever called). Assignments and unwatched
//      reads are cut at recording time: they give tensors the tape never linked to their inputs.
//   2. Seed each target's cotangent with its output gradient, or ones.
//   3. Walk the kept records in reverse. A record none of whose outputs has a cotangent is skipped;
//      missing output cotangents are zeros. The registry's gradient function maps output
//      cotangents to input cotangents, which are summed per tensor id in this fixed reverse order,
//      so results are bitwise reproducible.
//   4. Each source reads its id's cotangent: std::nullopt when none arrived, or zeros under
//      UnconnectedGradients::Zero.
// Gradient functions are written with public ops, so another tape that is recording while this
// one runs its backward pass records the backward ops: nested tapes give higher derivatives.
// A non-persistent tape stops recording when gradient() starts and drops each record's saved
// values as soon as that record has been processed.
//
// Lifecycle. Each thread keeps a registry of its live tapes (ThreadTapes below): creating a tape
// and destroying the innermost are O(1), and an op visits only the tapes that record. stop_recording() guards
// nest (a count). A gradient function may destroy the tape whose pass runs, or call gradient()
// again on a persistent one; reset() from there throws (run_backward).

#include "tapeflow/tape.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <numeric>
#include <unordered_set>

#include "autodiff/dispatch.h"
#include "autodiff/gradient_observer.h"
#include "autodiff/masked_lanes.h"
#include "autodiff/tape_state.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/logging.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow {

namespace autodiff {

constinit thread_local int t_recording_tapes = 0;
constinit thread_local int t_cotangent_batch_rank = 0;
constinit thread_local std::uint64_t t_hidden_lo = 0;
constinit thread_local std::uint64_t t_hidden_hi = 0;
constinit thread_local std::uint64_t t_suspended_below = 0;
std::atomic<bool> g_check_numerics{false};
constinit thread_local GradientObserver* t_gradient_observer = nullptr;  // gradient_observer.h
std::atomic<int> g_live_tapes{0};

namespace {
thread_local std::uint64_t t_next_nesting_id = 0;
}
std::uint64_t next_nesting_id() { return t_next_nesting_id++; }
std::uint64_t peek_nesting_id() { return t_next_nesting_id; }

/// This thread's tape registry. An op visits only `recording`: 40,000 live tapes of which few
/// record cost an op no more than those few (issue 13). Creating a tape and destroying the newest
/// are O(1): the live list removes by swapping with its last entry, a new tape goes to the end of
/// `recording` (it has the newest nesting id) and `t_recording_tapes` moves by one. A tape is on
/// `recording` while it wants to record (alive, not paused, not consumed): one that stops leaves
/// at the next recount, which every other state change runs; one that starts again is re-listed
/// in creation order (the pause guard, reset()).
struct ThreadTapes {
  std::vector<std::shared_ptr<detail::TapeState>> live;  // any order; explain() looks through it
  std::vector<detail::TapeState*> recording;             // creation (nesting id) order
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
  /// Puts a tape that wants to record (again) on `recording`, keeping creation order.
  void list_if_recording(detail::TapeState& tape) {
    if (tape.listed_recording || !tape.wants_to_record()) return;
    const auto at =
        std::upper_bound(recording.begin(), recording.end(), tape.nesting_id,
                         [](std::uint64_t id, const detail::TapeState* t) { return id < t->nesting_id; });
    recording.insert(at, &tape);
    tape.listed_recording = true;
  }
  /// Drops the tapes that stopped recording from `recording` and counts the visible rest.
  int recount() {
    std::erase_if(recording, [](detail::TapeState* t) {
      if (t->wants_to_record()) return false;
      t->listed_recording = false;
      return true;
    });
    int n = 0;
    for (const detail::TapeState* t : recording) n += tape_hidden(t->nesting_id) ? 0 : 1;
    return n;
  }

 private:
  void unlist(detail::TapeState& tape) {
    if (!tape.listed_recording) return;
    // Searched from the end: tapes usually end innermost first.
    const auto it = std::find(recording.rbegin(), recording.rend(), &tape);
    recording.erase(std::next(it).base());
    tape.listed_recording = false;
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

namespace {

/// This thread's registry. Tapes keep it alive (a tape destroyed on another thread reports there),
/// and it holds their states: the holder breaks that cycle when the thread exits.
struct ThreadTapesHolder {
  std::shared_ptr<ThreadTapes> tapes = std::make_shared<ThreadTapes>();
  ~ThreadTapesHolder() {
    tapes->recording.clear();
    tapes->live.clear();
  }
};

const std::shared_ptr<ThreadTapes>& thread_tapes_ptr() {
  thread_local ThreadTapesHolder holder;
  return holder.tapes;
}
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
  autodiff::recount_recording_tapes();
}

NoRecordingScope::~NoRecordingScope() {
  std::vector<std::uint64_t>& floors = autodiff::suspension_floors();
  // Searched from the end: scopes usually end innermost first.
  if (const auto it = std::find(floors.rbegin(), floors.rend(), floor_); it != floors.rend())
    floors.erase(std::next(it).base());
  autodiff::t_suspended_below = floors.empty() ? 0 : *std::max_element(floors.begin(), floors.end());
  autodiff::recount_recording_tapes();
}

namespace autodiff {

const std::vector<std::shared_ptr<detail::TapeState>>& this_thread_tapes() { return thread_tapes().live; }
std::span<detail::TapeState* const> recording_tapes() { return thread_tapes().recording; }

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
/// and `v` is trainable and floating (a read inside the tape's scope).
bool watches_variable(detail::TapeState& tape, const Variable& v) {
  if (tape.options.watch_accessed_variables && v.trainable() && is_floating(v.dtype()) &&
      tape.producer.emplace(v.handle_id(), -1).second) {
    tape.watched_variables.push_back(v);
    return true;
  }
  return tape.producer.contains(v.handle_id());
}

/// Records `op` on `tape`. The input slots are written by the first tape that records the op and
/// copied by the others (`first`: that first record, or nullptr).
void append(detail::TapeState& tape, const OpDef& op, std::span<const Tensor* const> inputs,
            std::span<const Variable> variables, std::span<const Tensor> outputs,
            const std::shared_ptr<const void>& attrs, const OpRecord* first) {
  const Saves saves = op.saves();
  const std::size_t num_inputs = inputs.size() + variables.size();
  const auto num_slots = static_cast<std::uint32_t>(num_inputs + outputs.size());
  Slot* slots = tape.slots.allocate(num_slots);
  if (first != nullptr) {
    for (std::size_t i = 0; i < num_inputs; ++i) {
      slots[i] = first->slots[i];
      slots[i].shape = tape.shapes.intern(*first->slots[i].shape);
    }
  } else {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& in = *inputs[i];
      slots[i] = {in.id(), tape.shapes.intern(in.shape()), in.dtype(),
                  saves.input(static_cast<int>(i)) ? in : Tensor()};
    }
    for (std::size_t i = 0; i < variables.size(); ++i) {
      const Variable& v = variables[i];
      slots[inputs.size() + i] = {v.handle_id(), tape.shapes.intern(v.shape()), v.dtype(), Tensor()};
    }
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

// ---- Cut records for explain(): what a tape saw on tracked tensors but did not record. These run
// only for ops a recording tape does not record, never for recorded ones.

namespace {

/// Whether an op the tape does not record takes a tracked input: an integer/bool tensor the tape
/// produced or watched, or the output of an earlier cut.
bool takes_cut_input(const detail::TapeState& tape, std::span<const Tensor* const> inputs) {
  for (const Tensor* in : inputs)
    if ((!is_floating(in->dtype()) && tape.producer.contains(in->id())) ||
        (!tape.cut_ids.empty() && tape.cut_ids.contains(in->id())))
      return true;
  return false;
}

void add_cut(detail::TapeState& tape, std::string_view op, CutReason reason, std::vector<TensorId> inputs,
             std::vector<TensorId> outputs, std::string variable = {}) {
  if (tape.cuts.size() >= detail::TapeState::kMaxCuts) return;
  for (TensorId id : outputs) tape.cut_ids.insert(id);
  tape.cuts.push_back(
      {op, reason, tape.ops.size(), std::move(inputs), std::move(outputs), std::move(variable)});
}

void note_cut(detail::TapeState& tape, const OpDef& op, std::span<const Tensor* const> inputs,
              std::span<const Tensor> outputs) {
  if (!takes_cut_input(tape, inputs)) return;
  std::vector<TensorId> in_ids, out_ids;
  for (const Tensor* in : inputs) in_ids.push_back(in->id());
  for (const Tensor& out : outputs) out_ids.push_back(out.id());
  add_cut(tape, op.name(), CutReason::kIntegerInput, std::move(in_ids), std::move(out_ids));
}

struct UnrecordedRing {
  static constexpr std::size_t kSize = 4096;
  std::mutex mutex;
  std::array<std::pair<TensorId, std::thread::id>, kSize> entries{};
  std::size_t next = 0;
};
UnrecordedRing& unrecorded_ring() {
  static UnrecordedRing ring;
  return ring;
}

}  // namespace

void note_unrecorded(std::span<const Tensor> outputs) {
  if (!thread_tapes().live.empty()) return;  // this thread's own tape is paused: explain uses paused_ids
  UnrecordedRing& ring = unrecorded_ring();
  const std::lock_guard lock(ring.mutex);
  for (const Tensor& out : outputs)
    ring.entries[ring.next++ % UnrecordedRing::kSize] = {out.id(), std::this_thread::get_id()};
}

std::optional<std::thread::id> unrecorded_thread_of(TensorId id) {
  UnrecordedRing& ring = unrecorded_ring();
  const std::lock_guard lock(ring.mutex);
  for (const auto& [t, thread] : ring.entries)
    if (t == id && id != 0) return thread;
  return std::nullopt;
}

void note_variable_update(std::string_view op, const Variable& var, const Tensor& value) {
  for (detail::TapeState* tape : recording_tapes())
    if (tape->recording() && (tape->producer.contains(value.id()) || tape->cut_ids.contains(value.id())))
      add_cut(*tape, op, CutReason::kVariableUpdate, {value.id()}, {var.handle_id()}, var.name());
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
      note_cut(*tape, op, inputs, outputs);
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

// ---------------------------------------------------------------------------------------------
// GradContext

std::string_view GradContext::op_name() const { return record_.op->name(); }
int GradContext::num_inputs() const { return static_cast<int>(record_.num_inputs); }
int GradContext::num_outputs() const { return static_cast<int>(record_.outputs().size()); }

const Tensor& GradContext::dy(int i) const {
  TAPEFLOW_ASSERT(i >= 0 && i < num_outputs(), "[{}] dy({}) of {} outputs", op_name(), i, num_outputs());
  return dys_[static_cast<std::size_t>(i)];
}
const Tensor& GradContext::input(int i) const {
  TAPEFLOW_ASSERT(i >= 0 && i < num_inputs(), "[{}] input({}) of {} inputs", op_name(), i, num_inputs());
  const Tensor& t = record_.inputs()[static_cast<std::size_t>(i)].saved;
  TAPEFLOW_ASSERT(t.defined(),
                  "[{}] the gradient reads input {} but the op's Saves does not keep it, "
                  "or a non-persistent tape already released it",
                  op_name(), i);
  return t;
}
const Tensor& GradContext::output(int i) const {
  TAPEFLOW_ASSERT(i >= 0 && i < num_outputs(), "[{}] output({}) of {} outputs", op_name(), i, num_outputs());
  const Tensor& t = record_.outputs()[static_cast<std::size_t>(i)].saved;
  TAPEFLOW_ASSERT(t.defined(), "[{}] the gradient reads output {} but the op's Saves does not keep it",
                  op_name(), i);
  return t;
}
const Shape& GradContext::input_shape(int i) const {
  return *record_.inputs()[static_cast<std::size_t>(i)].shape;
}
DType GradContext::input_dtype(int i) const { return record_.inputs()[static_cast<std::size_t>(i)].dtype; }
const Shape& GradContext::output_shape(int i) const {
  return *record_.outputs()[static_cast<std::size_t>(i)].shape;
}
int GradContext::batch_rank() const { return autodiff::t_cotangent_batch_rank; }
Shape GradContext::batched(const Shape& s) const {
  const int k = batch_rank();
  if (k == 0) return s;
  const auto batch = dys_[0].shape().dims().first(static_cast<std::size_t>(k));
  std::vector<std::int64_t> dims(batch.begin(), batch.end());
  dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return Shape::checked(dims, op_name());
}
const void* GradContext::attrs_ptr() const {
  TAPEFLOW_ASSERT(record_.attrs != nullptr, "[{}] the gradient reads attributes the op did not record",
                  op_name());
  return record_.attrs.get();
}

// ---------------------------------------------------------------------------------------------
// Targets and sources

Targets::Targets(std::initializer_list<std::pair<const std::string, Tensor>> named) {
  const std::map<std::string, Tensor> sorted(named);
  for (const auto& [name, t] : sorted) targets_.emplace_back(t);
}

TensorId Source::id() const { return variable_ ? variable_->handle_id() : tensor_.id(); }
const Shape& Source::shape() const { return variable_ ? variable_->shape() : tensor_.shape(); }
DType Source::dtype() const { return variable_ ? variable_->dtype() : tensor_.dtype(); }

// ---------------------------------------------------------------------------------------------
// GradientTape

namespace {

void require_owner(const detail::TapeState& s, std::string_view what) {
  TAPEFLOW_REQUIRE(s.owner == std::this_thread::get_id(), FailedPreconditionError,
                   "[GradientTape::{}] a tape records the thread that created it and must be used "
                   "from that thread",
                   what);
}

constexpr std::string_view kConsumedMessage =
    "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)";

}  // namespace

constinit thread_local std::size_t detail::TapeState::t_last_tape_records = 0;

GradientTape::GradientTape(TapeOptions options) : state_(std::make_shared<detail::TapeState>()) {
  state_->options = options;
  state_->reserve_like_last_tape();
  state_->first_id = detail::next_tensor_id();
  state_->registry = autodiff::thread_tapes_ptr();
  state_->registry->add(state_);
  autodiff::g_live_tapes.fetch_add(1, std::memory_order_relaxed);
}

// NOTE: a gradient function may destroy the tape whose gradient() is running; that pass holds its
// own reference to the state (run_backward), so only the registry entry goes here.
GradientTape::~GradientTape() {
  autodiff::g_live_tapes.fetch_sub(1, std::memory_order_relaxed);
  state_->in_stack.store(false, std::memory_order_relaxed);
  if (state_->owner != std::this_thread::get_id()) {
    // The owner thread's registry is not ours to change: it drops the state at its next change.
    state_->registry->orphans.fetch_add(1, std::memory_order_release);
    return;
  }
  state_->registry->remove(*state_);
}

void GradientTape::watch(const Source& source) {
  require_owner(*state_, "watch");
  TAPEFLOW_REQUIRE(!state_->consumed, FailedPreconditionError,
                   "[GradientTape::watch] {}; create a new tape to watch more tensors", kConsumedMessage);
  if (!source.is_variable()) {
    TAPEFLOW_REQUIRE(source.tensor().defined(), InvalidArgumentError,
                     "[GradientTape::watch] the tensor is undefined (default-constructed Tensor)");
  }
  if (!is_floating(source.dtype()) && !state_->warned_dtype) {
    state_->warned_dtype = true;
    log(LogLevel::Warning,
        fmt::format("The dtype of the watched {} must be floating (e.g. tf.float32), got tf.{}",
                    source.is_variable() ? "variable" : "tensor", dtype_name(source.dtype())));
  }
  const bool inserted = state_->producer.emplace(source.id(), -1).second;
  if (inserted && source.is_variable()) state_->watched_variables.push_back(source.variable());
}

std::vector<Variable> GradientTape::watched_variables() const {
  // Kept in first-watched order (appending is what the recording path can afford); TensorFlow
  // answers in creation order, its VariableWatcher's set ordered by id.
  std::vector<Variable> by_creation = state_->watched_variables;
  std::ranges::sort(by_creation, {}, &Variable::handle_id);
  return by_creation;
}

void GradientTape::reset() {
  require_owner(*state_, "reset");
  TAPEFLOW_REQUIRE(
      state_->running_passes == 0, FailedPreconditionError,
      "[GradientTape::reset] cannot reset a tape while its gradient() or jacobian() is running (was "
      "reset() called from a gradient function?): that backward pass reads the records reset() "
      "would discard");
  state_->release_records();
  state_->watched_variables.clear();
  state_->paused_ids.clear();
  // Inside a stop_recording() block the fresh tape is paused too, from now on.
  if (state_->pauses > 0) state_->paused_ids.emplace_back(detail::next_tensor_id(), ~TensorId{0});
  state_->first_id = detail::next_tensor_id();
  state_->consumed = false;
  state_->warned_dtype = false;
  state_->registry->list_if_recording(*state_);
  autodiff::recount_observers();
}

// Pauses nest: the tape records again when its last guard is gone, whatever order the guards are
// destroyed in. paused_ids holds one id range per outermost pause.
GradientTape::RecordingPause::RecordingPause(std::shared_ptr<detail::TapeState> s) : state_(std::move(s)) {
  if (state_->pauses++ == 0) state_->paused_ids.emplace_back(detail::next_tensor_id(), ~TensorId{0});
  autodiff::recount_observers();
}
GradientTape::RecordingPause::~RecordingPause() {
  if (--state_->pauses == 0 && !state_->paused_ids.empty())
    state_->paused_ids.back().second = detail::next_tensor_id();
  if (state_->owner != std::this_thread::get_id()) return;  // only the owner thread's registry changes
  state_->registry->list_if_recording(*state_);
  autodiff::recount_observers();
}

GradientTape::RecordingPause GradientTape::stop_recording() {
  require_owner(*state_, "stop_recording");
  TAPEFLOW_REQUIRE(!state_->consumed, FailedPreconditionError,
                   "[GradientTape::stop_recording] Trying to stop recording a tape which is not recording.");
  return RecordingPause(state_);
}

bool GradientTape::persistent() const { return state_->options.persistent; }

std::int64_t GradientTape::saved_bytes() const {
  // Count each buffer once: x * x saves the same tensor twice.
  std::unordered_set<const void*> seen;
  std::int64_t bytes = 0;
  for (const auto& rec : state_->ops)
    for (const auto& slot : rec.all_slots())
      if (slot.saved.defined() && seen.insert(slot.saved.raw_data()).second)
        bytes += static_cast<std::int64_t>(slot.saved.nbytes());
  return bytes;
}

std::size_t GradientTape::num_recorded_ops() const { return state_->ops.size(); }

namespace {

/// Cotangents by tensor id, summed with the public (differentiable) add.
class Cotangents {
 public:
  void add(TensorId id, Tensor g) {
    auto [it, inserted] = map_.try_emplace(id, std::move(g));
    if (inserted) return;
    // A lane stays masked only if it is masked in every contribution.
    const Tensor* m1 = autodiff::masked_lanes(it->second);
    const Tensor* m2 = autodiff::masked_lanes(g);
    const Tensor both = m1 && m2 ? logical_and(*m1, *m2) : Tensor();
    it->second = it->second + g;
    if (both.defined()) autodiff::mark_masked_lanes(it->second, both);
  }
  const Tensor* find(TensorId id) const {
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : &it->second;
  }
  std::optional<Tensor> get(TensorId id) const {
    const Tensor* g = find(id);
    return g ? std::optional<Tensor>(*g) : std::nullopt;
  }
  /// Removes and returns id's cotangent.
  std::optional<Tensor> take(TensorId id) {
    auto it = map_.find(id);
    if (it == map_.end()) return std::nullopt;
    std::optional<Tensor> g(std::move(it->second));
    map_.erase(it);
    return g;
  }

 private:
  autodiff::IdMap<Tensor> map_;
};

/// `s` with the batch dimensions `batch` in front.
Shape with_batch(std::span<const std::int64_t> batch, const Shape& s) {
  if (batch.empty()) return s;
  std::vector<std::int64_t> dims(batch.begin(), batch.end());
  dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return Shape::checked(dims, "GradientTape");
}

void check_input_gradient(const autodiff::OpRecord& rec, std::size_t i, const Tensor& g,
                          std::span<const std::int64_t> batch) {
  const autodiff::Slot& in = rec.inputs()[i];
  TAPEFLOW_REQUIRE(g.defined() && g.shape() == with_batch(batch, *in.shape) && g.dtype() == in.dtype,
                   InternalError,
                   "Recorded operation '{}' returned a gradient for input {} with shape {} and dtype "
                   "{}, but the input has shape {} and dtype {}",
                   rec.op->name(), i, g.defined() ? g.shape().to_string() : "(undefined)",
                   g.defined() ? dtype_name(g.dtype()) : "-", in.shape->to_string(), dtype_name(in.dtype));
}

}  // namespace

namespace {

void validate_targets_and_sources(std::span<const Source> ys, std::span<const Source> sources,
                                  std::string_view what) {
  auto usable = [](const Source& s) {
    return s.is_variable() ? !s.variable().moved_from() : s.tensor().defined();
  };
  auto unusable = [](const Source& s) {
    return s.is_variable() ? "a moved-from Variable" : "an undefined (default-constructed) Tensor";
  };
  for (std::size_t i = 0; i < ys.size(); ++i)
    TAPEFLOW_REQUIRE(usable(ys[i]), InvalidArgumentError, "[GradientTape::{}] target {} is {}", what, i,
                     unusable(ys[i]));
  for (std::size_t i = 0; i < sources.size(); ++i)
    TAPEFLOW_REQUIRE(usable(sources[i]), InvalidArgumentError, "[GradientTape::{}] source {} is {}", what, i,
                     unusable(sources[i]));
}

/// Which records a backward pass from `ys` to `sources` visits (step 1 of the algorithm above),
/// and which of their inputs need a gradient (floating and depending on a source).
struct Pruned {
  detail::RecyclingVector<char> keep;
  detail::RecyclingVector<std::size_t>
      first_input;  // record k's input flags start at input_needed[first_input[k]]
  detail::RecyclingArray<bool> input_needed;
  autodiff::IdSet source_ids;
  /// The gradient entry of each op on a kept record, looked up once (an OpDef's entry is an atomic
  /// shared_ptr): the entries the pruning decided by are the ones the backward pass calls.
  absl::flat_hash_map<const autodiff::OpDef*, std::shared_ptr<const autodiff::GradientEntry>> entries;

  std::span<const bool> needed(std::size_t k, std::size_t num_inputs) const {
    return {input_needed.get() + first_input[k], num_inputs};
  }
};

/// `producer` is the tape's id -> record map: both sweeps follow it instead of building sets of
/// ids (a record's inputs come from earlier records; a later index is the id re-used as an
/// output, e.g. a custom gradient's function returning its input, and counts as a leaf).
Pruned prune(const autodiff::Records& ops, const autodiff::IdMap<std::int64_t>& producer,
             std::span<const Source> ys, std::span<const Source> sources) {
  const auto producer_before = [&](TensorId id, std::size_t k) -> std::int64_t {
    const auto it = producer.find(id);
    return it != producer.end() && it->second >= 0 && static_cast<std::size_t>(it->second) < k ? it->second
                                                                                               : -1;
  };
  Pruned p;
  // Reverse sweep: a record is kept if it produced a target or an input of a kept record.
  p.keep.assign(ops.size(), 0);
  for (const Source& y : ys)
    if (const std::int64_t j = producer_before(y.id(), ops.size()); j >= 0)
      p.keep[static_cast<std::size_t>(j)] = 1;
  for (std::size_t k = ops.size(); k-- > 0;) {
    if (!p.keep[k]) continue;
    for (const auto& in : ops[k].inputs())
      if (const std::int64_t j = producer_before(in.id, k); j >= 0) p.keep[static_cast<std::size_t>(j)] = 1;
  }
  // Forward sweep: among those, keep the records with an input that depends on a source (is one,
  // or comes from a kept record); only those inputs need gradients.
  for (const Source& s : sources) p.source_ids.insert(s.id());
  p.first_input.resize(ops.size());
  std::size_t num_inputs = 0;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    p.first_input[k] = num_inputs;
    num_inputs += ops[k].num_inputs;
  }
  p.input_needed = detail::RecyclingArray<bool>(num_inputs);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!p.keep[k]) continue;
    bool depends = false;
    bool* needed = p.input_needed.get() + p.first_input[k];
    for (const auto& in : ops[k].inputs()) {
      if (is_floating(in.dtype)) {
        const std::int64_t j = producer_before(in.id, k);
        *needed = p.source_ids.contains(in.id) || (j >= 0 && p.keep[static_cast<std::size_t>(j)]);
      }
      depends = depends || *needed;
      ++needed;
    }
    // A no_gradient op (StopGradient, argmax, comparisons) cuts the path: its outputs carry no
    // gradient, so neither it nor the records it feeds run (their gradient functions are never
    // called). A Missing entry stays kept: reaching it is gradient()'s LookupError.
    if (depends) {
      auto [it, inserted] = p.entries.try_emplace(ops[k].op);
      if (inserted) it->second = ops[k].op->gradient();
      depends = it->second->status != GradientStatus::NotDifferentiable;
    }
    p.keep[k] = depends;
  }
  return p;
}

/// Steps 2-4: seeds each floating target with seeds[i], walks the kept records in reverse and
/// returns each source's cotangent (std::nullopt where none arrived). With `release`, each
/// record's saved values are dropped once it has been processed. `batch` are leading dimensions
/// of a stack of cotangents pushed through at once (vectorised Jacobians; only batchable ops).
std::vector<std::optional<Tensor>> backward(autodiff::Records& ops, const Pruned& p,
                                            std::span<const Source> ys, std::span<const Tensor> seeds,
                                            std::span<const Source> sources, bool release,
                                            std::span<const std::int64_t> batch = {}) {
  struct BatchRank {
    int saved = autodiff::t_cotangent_batch_rank;
    ~BatchRank() { autodiff::t_cotangent_batch_rank = saved; }
  } restore;
  autodiff::t_cotangent_batch_rank = static_cast<int>(batch.size());
  const autodiff::MaskedLanesScope masked_lanes;
  Cotangents grads;
  for (std::size_t i = 0; i < ys.size(); ++i)
    if (is_floating(ys[i].dtype())) grads.add(ys[i].id(), seeds[i]);  // integer targets carry no gradient

  std::vector<Tensor> dys;
  for (std::size_t k = ops.size(); k-- > 0;) {
    if (!p.keep[k]) continue;
    autodiff::OpRecord& rec = ops[k];
    const auto outs = rec.outputs();
    bool any = false;
    for (const auto& out : outs) any = any || grads.find(out.id) != nullptr;
    if (!any) continue;
    const autodiff::GradientEntry& entry = *p.entries.at(rec.op);
    if (entry.status == GradientStatus::Missing)
      throw LookupError(fmt::format("gradient registry has no entry for: {}", rec.op->name()));
    dys.clear();
    for (const auto& out : outs) {
      // A consumed cotangent leaves the map (freed early) unless a source reads it at the end.
      std::optional<Tensor> g = p.source_ids.contains(out.id) ? grads.get(out.id) : grads.take(out.id);
      dys.push_back(g ? std::move(*g) : zeros(with_batch(batch, *out.shape), out.dtype));
    }
    const auto ins = rec.inputs();
    const std::span<const bool> needed = p.needed(k, ins.size());
    Grads input_grads = [&] {
      const autodiff::OpDef* outer = std::exchange(autodiff::t_gradient_of, rec.op);
      struct Restore {
        const autodiff::OpDef* op;
        ~Restore() { autodiff::t_gradient_of = op; }
      } restore{outer};
      return entry.fn(GradContext(rec, dys, needed));
    }();
    TAPEFLOW_REQUIRE(input_grads.size() == ins.size(), InternalError,
                     "Recorded operation '{}' returned too {} gradients. Expected {} but received {}",
                     rec.op->name(), input_grads.size() < ins.size() ? "few" : "many", ins.size(),
                     input_grads.size());
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (!needed[i] || !input_grads[i]) continue;
      check_input_gradient(rec, i, *input_grads[i], batch);
      if (autodiff::t_gradient_observer)
        autodiff::t_gradient_observer->input_gradient(ops, k, i, *input_grads[i]);
      grads.add(ins[i].id, std::move(*input_grads[i]));
    }
    if (release)
      for (auto& slot : rec.all_slots()) slot.saved = Tensor();
  }

  std::vector<std::optional<Tensor>> result;
  result.reserve(sources.size());
  for (const Source& s : sources) {
    const Tensor* g = is_floating(s.dtype()) ? grads.find(s.id()) : nullptr;
    result.push_back(g ? std::optional<Tensor>(*g) : std::nullopt);
  }
  return result;
}

/// A missing gradient that names `s` and says why no cotangent reached it, from facts the tape
/// has at hand (one lookup in its producer map; explain() does the full analysis).
Gradient missing_gradient(const detail::TapeState& tape, const Source& s) {
  std::string source =
      s.is_variable() ? fmt::format("variable '{}'", s.variable().name()) : fmt::format("tensor #{}", s.id());
  source += fmt::format(" with shape {} and dtype {}", s.shape().to_string(), dtype_name(s.dtype()));
  std::string reason;
  if (!is_floating(s.dtype())) {
    reason = "its dtype cannot carry a gradient (only float32 and float64 do)";
  } else if (tape.producer.contains(s.id())) {
    reason =
        "it is not connected to the target(s): no recorded op on a path from it to the target(s) "
        "passes a gradient (GradientTape::explain names where the path breaks)";
  } else if (!s.is_variable()) {
    reason = "the tape never watched it (call tape.watch(x) before computing the target)";
  } else if (!s.variable().trainable()) {
    reason =
        "the tape never watched it: the variable is not trainable (call tape.watch(v) to watch it anyway)";
  } else if (!tape.options.watch_accessed_variables) {
    reason = "the tape never watched it: the tape has watch_accessed_variables = false (call tape.watch(v))";
  } else {
    reason = "the tape never watched it: the variable was not read while the tape recorded";
  }
  return Gradient::missing(source, reason);
}

/// What a source no cotangent reached gets: zeros of `shape`, or a missing gradient.
Gradient unconnected_result(const detail::TapeState& tape, const Source& s, const Shape& shape,
                            UnconnectedGradients u) {
  if (u == UnconnectedGradients::Zero) return zeros(shape, s.dtype());
  return missing_gradient(tape, s);
}

}  // namespace

template <class F>
auto GradientTape::run_backward(std::string_view what, F&& body) {
  // NOTE: a gradient function may destroy this GradientTape (or call gradient() again on a
  // persistent one). The pass holds its own reference to the state and hands it to `body`, which
  // must read the tape only through it, never through `this`: the records it walks and the
  // producer map stay alive. reset() refuses while running_passes > 0.
  const std::shared_ptr<detail::TapeState> state = state_;
  detail::TapeState& tape = *state;
  require_owner(tape, what);
  TAPEFLOW_REQUIRE(!tape.consumed, FailedPreconditionError, "{}", kConsumedMessage);
  // The backward pass is never recorded on this tape: a non-persistent tape is consumed from now
  // on (and releases everything when done), a persistent one is paused until we return.
  std::optional<RecordingPause> pause;
  if (tape.options.persistent) {
    pause.emplace(state);
  } else {
    tape.consumed = true;
    autodiff::recount_observers();
  }
  ++tape.running_passes;
  struct EndPass {
    detail::TapeState& tape;
    ~EndPass() {
      --tape.running_passes;
      if (!tape.options.persistent) tape.release_records();
    }
  } end_pass{tape};
  return body(tape, !tape.options.persistent);
}

std::vector<Gradient> GradientTape::gradient_flat(const Targets& targets, std::span<const Source> sources,
                                                  const std::vector<Tensor>& output_gradients,
                                                  UnconnectedGradients unconnected) {
  const std::vector<Source>& ys = targets.flat();
  validate_targets_and_sources(ys, sources, "gradient");
  TAPEFLOW_REQUIRE(output_gradients.empty() || output_gradients.size() == ys.size(), InvalidArgumentError,
                   "[GradientTape::gradient] got {} output_gradients for {} targets", output_gradients.size(),
                   ys.size());
  for (std::size_t i = 0; i < output_gradients.size(); ++i) {
    const Tensor& w = output_gradients[i];
    TAPEFLOW_REQUIRE(
        w.defined() && w.shape() == ys[i].shape() && w.dtype() == ys[i].dtype(), InvalidArgumentError,
        "[GradientTape::gradient] output_gradients[{}] must have the target's shape {} and "
        "dtype {}, got shape {} and dtype {}",
        i, ys[i].shape().to_string(), dtype_name(ys[i].dtype()),
        w.defined() ? w.shape().to_string() : "(undefined)", w.defined() ? dtype_name(w.dtype()) : "-");
  }
  return run_backward("gradient", [&](detail::TapeState& tape, bool release) {
    autodiff::Records& ops = tape.ops;
    std::vector<Tensor> seeds;
    for (const Source& y : ys)
      seeds.push_back(output_gradients.empty() ? ones(y.shape(), y.dtype()) : output_gradients[seeds.size()]);
    std::vector<std::optional<Tensor>> grads =
        backward(ops, prune(ops, tape.producer, ys, sources), ys, seeds, sources, release);
    std::vector<Gradient> result;
    result.reserve(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i)
      result.push_back(grads[i] ? Gradient(std::move(*grads[i]))
                                : unconnected_result(tape, sources[i], sources[i].shape(), unconnected));
    return result;
  });
}

namespace {

Shape concat_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b, std::string_view op) {
  std::vector<std::int64_t> dims(a.begin(), a.end());
  dims.insert(dims.end(), b.begin(), b.end());
  return Shape::checked(dims, op);
}

std::vector<std::int64_t> to_vector(std::span<const std::int64_t> dims) { return {dims.begin(), dims.end()}; }

/// The gradients of the rows of a Jacobian, in row order, joined into one [rows, ...] tensor by
/// recorded ops (not copied into a fresh buffer), so that a tape recording around jacobian()
/// can differentiate the result again. `pieces` are stacks [c, ...] of c rows each from
/// vectorised passes, or single rows when `single_rows`.
Tensor join_rows(const std::vector<Tensor>& pieces, bool single_rows) {
  if (single_rows) return stack(pieces, 0);
  return pieces.size() == 1 ? pieces[0] : concat(pieces, 0);
}

/// A Jacobian of `shape` with no elements (the target has none), recorded as a function of the
/// source's gradient `g`, so that it is connected wherever `g` is.
Tensor empty_jacobian(const Tensor& g, const Shape& shape) {
  return reshape(slice(reshape(g, {-1}), {0}, {0}), to_vector(shape.dims()));
}

/// The first kept record whose gradient cannot take a stack of cotangents, or nullptr.
const autodiff::OpDef* first_unbatchable(const autodiff::Records& ops, const Pruned& p) {
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (p.keep[k] && !ops[k].op->batchable) return ops[k].op;
  return nullptr;
}

/// How many Jacobian rows to push through at once: the stacked cotangents of the largest kept
/// tensor stay under about 256 MiB.
std::int64_t rows_per_pass(const autodiff::Records& ops, const Pruned& p, std::int64_t rows) {
  std::int64_t largest = 1;
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (p.keep[k])
      for (const auto& slot : ops[k].all_slots())
        largest =
            std::max(largest, slot.shape->num_elements() * static_cast<std::int64_t>(dtype_size(slot.dtype)));
  return std::clamp<std::int64_t>((std::int64_t{256} << 20) / largest, 1, std::max<std::int64_t>(rows, 1));
}

}  // namespace

std::vector<Gradient> GradientTape::jacobian_flat(const Tensor& target, std::span<const Source> sources,
                                                  UnconnectedGradients unconnected, bool parallel) {
  const Source y(target);
  validate_targets_and_sources({&y, 1}, sources, "jacobian");
  return run_backward("jacobian", [&](detail::TapeState& tape, bool) {
    autodiff::Records& ops = tape.ops;
    // Row r of the Jacobian is the gradient for a cotangent that is one-hot at target element r.
    // The rows are joined by recorded ops into target.shape + source.shape. The records are
    // released only after the last row.
    const std::int64_t rows = target.num_elements();
    std::vector<Shape> shapes;
    for (const Source& s : sources)
      shapes.push_back(concat_shapes(target.shape().dims(), s.shape().dims(), "Jacobian"));
    const Pruned p = prune(ops, tape.producer, {&y, 1}, sources);
    const autodiff::OpDef* blocker = parallel ? first_unbatchable(ops, p) : nullptr;
    if (parallel && blocker)
      log(LogLevel::Info,
          fmt::format("jacobian: op {} cannot take stacked cotangents; computing the Jacobian one "
                      "row at a time",
                      blocker->name()));
    const bool single_rows = !parallel || blocker;
    // pieces[i]: source i's gradient from each pass. Whether a cotangent reaches a source depends
    // only on the pruned records, so a source gets one from every pass or from none.
    std::vector<std::vector<Tensor>> pieces(sources.size());
    std::size_t passes = 0;
    const auto collect = [&](std::vector<std::optional<Tensor>> grads) {
      ++passes;
      for (std::size_t i = 0; i < sources.size(); ++i)
        if (grads[i]) pieces[i].push_back(std::move(*grads[i]));
    };
    if (!is_floating(target.dtype())) {
      // An integer target carries no gradient: every source is unconnected.
    } else if (rows == 0) {
      // No rows; one pass with the (empty) cotangent finds the connected sources.
      const Tensor seed = zeros(target.shape(), target.dtype());
      collect(backward(ops, p, {&y, 1}, {&seed, 1}, sources, /*release=*/false));
    } else if (!single_rows) {
      // Vectorised: a stack of one-hot cotangents [c, *target.shape] goes through each record
      // once; the gradients come back as [c, *source.shape], which are rows of the Jacobian.
      const std::int64_t chunk = rows_per_pass(ops, p, rows);
      for (std::int64_t start = 0; start < rows; start += chunk) {
        const std::int64_t c = std::min(chunk, rows - start);
        const std::int64_t batch[1] = {c};
        Tensor seed = zeros(with_batch(batch, target.shape()), target.dtype());
        visit_dtype(target.dtype(), [&]<class T>() {
          for (std::int64_t j = 0; j < c; ++j) detail::mutable_data<T>(seed)[j * rows + start + j] = T(1);
        });
        collect(backward(ops, p, {&y, 1}, {&seed, 1}, sources, /*release=*/false, batch));
      }
    } else {
      for (std::int64_t r = 0; r < rows; ++r) {
        Tensor seed = zeros(target.shape(), target.dtype());
        visit_dtype(target.dtype(), [&]<class T>() { detail::mutable_data<T>(seed)[r] = T(1); });
        collect(backward(ops, p, {&y, 1}, {&seed, 1}, sources, /*release=*/false));
      }
    }
    std::vector<Gradient> result;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      TAPEFLOW_ASSERT(pieces[i].empty() || pieces[i].size() == passes,
                      "jacobian: a source received a cotangent in {} of {} backward passes", pieces[i].size(),
                      passes);
      if (pieces[i].empty())
        result.push_back(unconnected_result(tape, sources[i], shapes[i], unconnected));
      else if (rows == 0)
        result.push_back(empty_jacobian(pieces[i][0], shapes[i]));
      else
        result.push_back(reshape(join_rows(pieces[i], single_rows), to_vector(shapes[i].dims())));
    }
    return result;
  });
}

Gradient GradientTape::batch_jacobian(const Tensor& target, const Source& source,
                                      UnconnectedGradients unconnected) {
  const Source y(target);
  validate_targets_and_sources({&y, 1}, {&source, 1}, "batch_jacobian");
  const Shape& ts = target.shape();
  const Shape& ss = source.shape();
  // TensorFlow checks the ranks with Shape.with_rank_at_least(2), then the batch dimensions.
  for (const Shape* s : {&ts, &ss})
    TAPEFLOW_REQUIRE(
        s->rank() >= 2, InvalidArgumentError,
        "[GradientTape::batch_jacobian] Shape {} must have rank at least 2: the {} must be [batch, "
        "...]; got target shape {} and dtype {}, source shape {} and dtype {}",
        s->to_string(), s == &ts ? "target" : "source", ts.to_string(), dtype_name(target.dtype()),
        ss.to_string(), dtype_name(source.dtype()));
  TAPEFLOW_REQUIRE(
      ts[0] == ss[0], InvalidArgumentError,
      "[GradientTape::batch_jacobian] Need first dimension of target shape {} and source shape {} to match.",
      ts.to_string(), ss.to_string());
  const Shape shape = concat_shapes(ts.dims(), ss.dims().subspan(1), "BatchJacobian");
  return run_backward("batch_jacobian", [&](detail::TapeState& tape, bool) -> Gradient {
    autodiff::Records& ops = tape.ops;
    // Examples are independent, so a cotangent that is one-hot in column j of every example
    // gives column j for all examples at once: d target[b, j] / d source[b, ...] for every b.
    // Vectorised, a stack of such cotangents (several columns) goes through one backward pass.
    // The columns [cols, batch, ...] are joined by recorded ops, transposed to [batch, cols, ...]
    // and reshaped to target.shape + source.shape[1:] (TensorFlow's assembly).
    const Pruned p = prune(ops, tape.producer, {&y, 1}, {&source, 1});
    if (!is_floating(target.dtype())) return unconnected_result(tape, source, shape, unconnected);
    if (ts.num_elements() == 0) {
      // No columns; one pass with the (empty) cotangent says whether the source is connected.
      const Tensor seed = zeros(ts, target.dtype());
      const auto g = backward(ops, p, {&y, 1}, {&seed, 1}, {&source, 1}, /*release=*/false)[0];
      return g ? Gradient(empty_jacobian(*g, shape)) : unconnected_result(tape, source, shape, unconnected);
    }
    const std::int64_t batch = ts[0];
    const std::int64_t cols = ts.num_elements() / batch;
    const autodiff::OpDef* blocker = first_unbatchable(ops, p);
    if (blocker)
      log(LogLevel::Info,
          fmt::format("batch_jacobian: op {} cannot take stacked cotangents; computing one column "
                      "at a time",
                      blocker->name()));
    const std::int64_t chunk = blocker ? 1 : rows_per_pass(ops, p, cols);
    std::vector<Tensor> columns;
    for (std::int64_t j0 = 0; j0 < cols; j0 += chunk) {
      const std::int64_t c = std::min(chunk, cols - j0);
      const std::int64_t stack_dims[1] = {c};
      const std::span<const std::int64_t> batch_dims = blocker ? std::span<const std::int64_t>() : stack_dims;
      Tensor seed = zeros(with_batch(batch_dims, ts), target.dtype());
      visit_dtype(target.dtype(), [&]<class T>() {
        for (std::int64_t jj = 0; jj < c; ++jj)
          for (std::int64_t b = 0; b < batch; ++b)
            detail::mutable_data<T>(seed)[jj * ts.num_elements() + b * cols + j0 + jj] = T(1);
      });
      auto g = backward(ops, p, {&y, 1}, {&seed, 1}, {&source, 1}, /*release=*/false, batch_dims)[0];
      if (!g) return unconnected_result(tape, source, shape, unconnected);  // the same for every column
      columns.push_back(std::move(*g));
    }
    std::vector<std::int64_t> perm(static_cast<std::size_t>(ss.rank()) + 1);
    std::iota(perm.begin(), perm.end(), std::int64_t{0});
    std::swap(perm[0], perm[1]);
    return reshape(transpose(join_rows(columns, blocker != nullptr), perm), to_vector(shape.dims()));
  });
}

}  // namespace tapeflow

namespace tapeflow {

Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[hessian] x is an undefined (default-constructed) Tensor");
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[hessian] x must be float32 or float64, got {}", dtype_name(x.dtype()));
  GradientTape outer;
  outer.watch(x);
  Tensor g;
  {
    GradientTape inner;
    inner.watch(x);
    const Tensor y = f(x);
    TAPEFLOW_REQUIRE(y.defined() && y.rank() == 0, InvalidArgumentError,
                     "[hessian] f must return a scalar, got shape {}",
                     y.defined() ? y.shape().to_string() : "(undefined)");
    g = *inner.gradient(y, x, UnconnectedGradients::Zero);
  }
  return *outer.jacobian(g, x, UnconnectedGradients::Zero);
}

}  // namespace tapeflow
