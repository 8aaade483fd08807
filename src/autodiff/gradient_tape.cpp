// GradientTape: the tape's lifecycle (creation, watch, pauses, reset, destruction) and gradient().
// How ops are recorded is recording.cpp; the backward pass is backward.cpp; Jacobians are
// jacobian.cpp.
//
// Lifecycle. A tape records from construction to destruction. stop_recording() guards nest (a
// count). A gradient function may destroy the tape whose pass runs, or call gradient() again on a
// persistent one; reset() from there throws (run_pass, tape_access.h).

#include <algorithm>
#include <map>
#include <unordered_set>

#include "autodiff/dispatch.h"
#include "autodiff/recording_listener.h"
#include "autodiff/tape_access.h"
#include "autodiff/thread_tapes.h"
#include "core/check.h"
#include "tapeflow/logging.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/tape.h"

namespace tapeflow {

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
void GradContext::set_indexed_slices(int i, IndexedSlices slices) const {
  TAPEFLOW_ASSERT(i >= 0 && i < num_inputs() && accepts_indexed_slices(i),
                  "[{}] gave input {} a row-sparse gradient, which this pass does not take", op_name(), i);
  TAPEFLOW_REQUIRE(slices.dense_shape() == input_shape(i) && slices.dtype() == input_dtype(i), InternalError,
                   "Recorded operation '{}' returned a row-sparse gradient for input {} with dense shape {} "
                   "and dtype {}, but the input has shape {} and dtype {}",
                   op_name(), i, slices.dense_shape().to_string(), dtype_name(slices.dtype()),
                   input_shape(i).to_string(), dtype_name(input_dtype(i)));
  (*row_sparse_)[static_cast<std::size_t>(i)] = std::move(slices);
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

// ---------------------------------------------------------------------------------------------
// What passes over a tape share (tape_access.h)

namespace autodiff {

void require_owner(const detail::TapeState& s, std::string_view what) {
  TAPEFLOW_REQUIRE(s.owner == std::this_thread::get_id(), FailedPreconditionError,
                   "[{}] a tape records the thread that created it and must be used "
                   "from that thread",
                   what);
}

void validate_targets_and_sources(std::span<const Source> ys, std::span<const Source> sources,
                                  std::string_view what) {
  auto usable = [](const Source& s) {
    return s.is_variable() ? !s.variable().moved_from() : s.tensor().defined();
  };
  auto unusable = [](const Source& s) {
    return s.is_variable() ? "a moved-from Variable" : "an undefined (default-constructed) Tensor";
  };
  for (std::size_t i = 0; i < ys.size(); ++i)
    TAPEFLOW_REQUIRE(usable(ys[i]), InvalidArgumentError, "[{}] target {} is {}", what, i, unusable(ys[i]));
  for (std::size_t i = 0; i < sources.size(); ++i)
    TAPEFLOW_REQUIRE(usable(sources[i]), InvalidArgumentError, "[{}] source {} is {}", what, i,
                     unusable(sources[i]));
}

void consume(detail::TapeState& tape) {
  tape.consumed = true;
  tape.release_records();
  recount_observers();
}

namespace {

/// A missing gradient that names `s` and says why no cotangent reached it, from facts the tape
/// has at hand (one lookup in its producer map; explain() does the full analysis).
Gradient missing_gradient(const detail::TapeState& tape, const Source& s) {
  std::string source =
      s.is_variable() ? fmt::format("variable '{}'", s.variable().name()) : fmt::format("tensor #{}", s.id());
  source += fmt::format(" with shape {} and dtype {}", s.shape().to_string(), dtype_name(s.dtype()));
  std::string reason;
  if (!is_floating(s.dtype())) {
    reason = "its dtype cannot carry a gradient (only float32, float64 and bfloat16 do)";
  } else if (tape.producer.contains(s.id())) {
    reason =
        "it is not connected to the target(s): no recorded op on a path from it to the target(s) "
        "passes a gradient (tf::debug::explain names where the path breaks)";
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

}  // namespace

Gradient unconnected_result(const detail::TapeState& tape, const Source& s, const Shape& shape,
                            UnconnectedGradients u) {
  if (u == UnconnectedGradients::Zero) return zeros(shape, s.dtype());
  return missing_gradient(tape, s);
}

namespace {

/// Steps 2-4 of a gradient() pass on `tape`: seeds the targets with `output_gradients` (or ones).
/// Gradients stay row-sparse unless `observer` watches records (it would not see the rows).
std::vector<Gradient> run_gradient(detail::TapeState& tape, std::span<const Source> ys,
                                   std::span<const Source> sources,
                                   const std::vector<Tensor>& output_gradients, BackwardObserver* observer,
                                   bool release, bool watches_records) {
  std::vector<Tensor> seeds;
  for (const Source& y : ys)
    seeds.push_back(output_gradients.empty() ? ones(y.shape(), y.dtype()) : output_gradients[seeds.size()]);
  const Pruned p = prune(tape.ops, tape.producer, ys, sources);
  const BackwardPass pass{
      .ys = ys, .seeds = seeds, .sources = sources, .release = release, .observer = observer};
  if (watches_records) {
    std::vector<Gradient> dense;
    for (std::optional<Tensor>& g : backward(tape.ops, p, pass))
      dense.push_back(g ? Gradient(std::move(*g)) : Gradient());
    return dense;
  }
  return backward_gradients(tape.ops, p, pass);
}

}  // namespace

std::vector<Gradient> gradient_pass(const std::shared_ptr<detail::TapeState>& state, std::string_view what,
                                    const Targets& targets, std::span<const Source> sources,
                                    const std::vector<Tensor>& output_gradients,
                                    UnconnectedGradients unconnected, BackwardObserver* observer,
                                    bool keep_records) {
  const std::vector<Source>& ys = targets.flat();
  validate_targets_and_sources(ys, sources, what);
  TAPEFLOW_REQUIRE(output_gradients.empty() || output_gradients.size() == ys.size(), InvalidArgumentError,
                   "[{}] got {} output_gradients for {} targets", what, output_gradients.size(), ys.size());
  for (std::size_t i = 0; i < output_gradients.size(); ++i) {
    const Tensor& w = output_gradients[i];
    TAPEFLOW_REQUIRE(
        w.defined() && w.shape() == ys[i].shape() && w.dtype() == ys[i].dtype(), InvalidArgumentError,
        "[{}] output_gradients[{}] must have the target's shape {} and "
        "dtype {}, got shape {} and dtype {}",
        what, i, ys[i].shape().to_string(), dtype_name(ys[i].dtype()),
        w.defined() ? w.shape().to_string() : "(undefined)", w.defined() ? dtype_name(w.dtype()) : "-");
  }
  const auto body = [&](detail::TapeState& tape, bool release) {
    std::vector<Gradient> grads =
        run_gradient(tape, ys, sources, output_gradients, observer, release, observer != nullptr);
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (!grads[i]) grads[i] = unconnected_result(tape, sources[i], sources[i].shape(), unconnected);
    return grads;
  };
  return run_pass(state, what, body, keep_records);
}

}  // namespace autodiff

// ---------------------------------------------------------------------------------------------
// GradientTape

GradientTape::GradientTape(TapeOptions options) : state_(std::make_shared<detail::TapeState>()) {
  state_->options = options;
  state_->reserve_like_last_tape();
  if (autodiff::RecordingListener* listener = autodiff::recording_listener()) listener->tape_started(*state_);
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
  autodiff::require_owner(*state_, "GradientTape::watch");
  TAPEFLOW_REQUIRE(!state_->consumed, FailedPreconditionError,
                   "[GradientTape::watch] {}; create a new tape to watch more tensors",
                   autodiff::kConsumedMessage);
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
  if (source.is_variable()) {
    if (inserted) state_->watched_variables.push_back(source.variable());
    // A custom_gradient body that watches a variable makes it one of the body's variables.
    autodiff::VariableReadWatcher::accessed(source.variable(), true);
  }
}

std::vector<Variable> GradientTape::watched_variables() const {
  // Kept in first-watched order (appending is what the recording path can afford); TensorFlow
  // answers in creation order, its VariableWatcher's set ordered by id.
  std::vector<Variable> by_creation = state_->watched_variables;
  std::ranges::sort(by_creation, {}, &Variable::handle_id);
  return by_creation;
}

void GradientTape::reset() {
  autodiff::require_owner(*state_, "GradientTape::reset");
  TAPEFLOW_REQUIRE(
      state_->running_passes == 0, FailedPreconditionError,
      "[GradientTape::reset] cannot reset a tape while its gradient() or jacobian() is running (was "
      "reset() called from a gradient function?): that backward pass reads the records reset() "
      "would discard");
  state_->release_records();
  state_->watched_variables.clear();
  // Inside a stop_recording() block the fresh tape is paused too, from now on.
  if (autodiff::RecordingListener* listener = autodiff::recording_listener()) listener->tape_started(*state_);
  state_->consumed = false;
  state_->warned_dtype = false;
  state_->registry->list_if_recording(*state_);
  autodiff::recount_observers();
}

// Pauses nest: the tape records again when its last guard is gone, whatever order the guards are
// destroyed in. The recording listener hears of each outermost pause.
GradientTape::RecordingPause::RecordingPause(std::shared_ptr<detail::TapeState> s) : state_(std::move(s)) {
  if (state_->pauses++ == 0)
    if (autodiff::RecordingListener* listener = autodiff::recording_listener())
      listener->pause_began(*state_);
  autodiff::recount_observers();
}
GradientTape::RecordingPause::~RecordingPause() {
  if (state_->owner != std::this_thread::get_id()) {
    state_->pause_ended_elsewhere.store(true, std::memory_order_relaxed);
    return;
  }
  if (--state_->pauses == 0)
    if (autodiff::RecordingListener* listener = autodiff::recording_listener())
      listener->pause_ended(*state_);
  state_->registry->list_if_recording(*state_);
  autodiff::recount_observers();
}

GradientTape::RecordingPause GradientTape::stop_recording() {
  autodiff::require_owner(*state_, "GradientTape::stop_recording");
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

std::vector<Gradient> GradientTape::gradient_flat(const Targets& targets, std::span<const Source> sources,
                                                  const std::vector<Tensor>& output_gradients,
                                                  UnconnectedGradients unconnected) {
  return autodiff::gradient_pass(state_, "GradientTape::gradient", targets, sources, output_gradients,
                                 unconnected);
}

namespace {

/// Hands each source's gradient to `fn` as soon as it is final and lets the pass drop it.
class EachGradient final : public autodiff::BackwardObserver {
 public:
  EachGradient(const std::function<void(std::size_t, Gradient)>& fn, std::size_t num_sources)
      : delivered(num_sources, 0), fn_(fn) {}
  bool source_final(std::size_t i, Gradient* g) override {
    if (g == nullptr) return false;  // unconnected: reported after the pass, with why
    delivered[i] = 1;
    fn_(i, std::move(*g));
    return true;
  }
  std::vector<char> delivered;

 private:
  const std::function<void(std::size_t, Gradient)>& fn_;
};

}  // namespace

void for_each_gradient(GradientTape& tape, const Targets& targets, std::span<const Source> sources,
                       const std::function<void(std::size_t, Gradient)>& fn,
                       UnconnectedGradients unconnected) {
  const std::vector<Source>& ys = targets.flat();
  autodiff::validate_targets_and_sources(ys, sources, "for_each_gradient");
  autodiff::run_pass(
      detail::TapeAccess::state(tape), "for_each_gradient", [&](detail::TapeState& state, bool release) {
        EachGradient each(fn, sources.size());
        (void)autodiff::run_gradient(state, ys, sources, {}, &each, release, /*watches_records=*/false);
        for (std::size_t i = 0; i < sources.size(); ++i)
          if (!each.delivered[i])
            fn(i, autodiff::unconnected_result(state, sources[i], sources[i].shape(), unconnected));
      });
}

}  // namespace tapeflow
