// Forward-mode accumulation.
//
// Each accumulator maps tensor ids to tangents. After every op (dispatch.h), each active
// accumulator that has a tangent for one of the op's inputs computes the outputs' tangents:
// with the op's own JVP rule when it has one, otherwise from its gradient. The gradient of an op
// is linear in its output cotangent u, vjp(u) = J^T u, so J v = d<J^T u, v>/du: one extra
// backward pass through the gradient function on a small tape (TensorFlow's
// ForwardpropFromTape). Accumulators are processed outermost first, each with the tapes and
// accumulators created inside it hidden: an inner accumulator's JVP computation may read the
// op's outputs, whose outer tangents must already exist for the outer accumulator to
// differentiate that computation (forward over forward). Outer observers see inner products,
// never the reverse (strict nesting, see nesting.h).

#include "tapeflow/forward_accumulator.h"

#include <absl/container/inlined_vector.h>

#include <atomic>
#include <thread>
#include <unordered_map>

#include "autodiff/dispatch.h"
#include "autodiff/jvp.h"
#include "autodiff/nesting.h"
#include "autodiff/records.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/logging.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {

namespace detail {
struct AccumulatorState {
  std::uint64_t nesting_id = autodiff::next_nesting_id();
  std::thread::id owner = std::this_thread::get_id();
  /// Until the accumulator is destroyed. Atomic: it may be destroyed on another thread than its
  /// owner, whose dispatch path may be reading this.
  std::atomic<bool> active = true;
  /// False while set_recording(false): alive, jvp() answers, but no new tangents. Owner thread only.
  bool recording = true;
  std::unordered_map<TensorId, Tensor> tangents;
  /// Whether it computes tangents of this thread's ops: alive, recording, not hidden by a tape or
  /// accumulator nested inside it, and not silenced by a NoRecordingScope that began after it
  /// (TensorFlow's stop_recording() stops accumulators as well as tapes).
  bool visible() const {
    return active.load(std::memory_order_relaxed) && recording && !autodiff::tape_hidden(nesting_id);
  }
};
}  // namespace detail

namespace autodiff {

constinit thread_local int t_active_accumulators = 0;

namespace {

/// This thread's accumulators in creation order. Shared with the accumulators: one destroyed on
/// another thread (or by code a JVP runs, while forward_accumulate walks a snapshot of the list)
/// only marks itself inactive, and its owner drops it at the next recount.
std::vector<std::shared_ptr<detail::AccumulatorState>>& thread_accumulators() {
  thread_local std::vector<std::shared_ptr<detail::AccumulatorState>> accumulators;
  return accumulators;
}

/// J v from the op's gradient: d<vjp(u), v>/du at u = 0 (vjp is linear in u).
std::vector<Tensor> jvp_from_gradient(const OpDef& op, std::span<const Tensor* const> inputs,
                                      std::span<const Tensor> outputs,
                                      const std::shared_ptr<const void>& attrs,
                                      std::span<const Tensor> tangents) {
  const auto entry = op.gradient();
  if (entry->status == GradientStatus::Missing)
    throw LookupError(
        fmt::format("gradient registry has no entry for: {} (forward mode derives the JVP of an op "
                    "without a JVP rule from its gradient)",
                    op.name()));
  std::vector<Tensor> result(outputs.size());
  if (entry->status == GradientStatus::NotDifferentiable) return result;

  std::vector<Slot> slots;
  for (const Tensor* in : inputs) slots.push_back({in->id(), &in->shape(), in->dtype(), *in});
  for (const Tensor& out : outputs) slots.push_back({out.id(), &out.shape(), out.dtype(), out});
  const OpRecord rec{&op, static_cast<std::uint32_t>(inputs.size()), static_cast<std::uint32_t>(slots.size()),
                     slots.data(), attrs};
  std::vector<Tensor> us;
  std::vector<Source> sources;
  GradientTape tape;
  for (const Tensor& out : outputs) {
    us.push_back(zeros_like(out));
    if (is_floating(out.dtype())) {
      tape.watch(us.back());
      sources.emplace_back(us.back());
    }
  }
  std::unique_ptr<bool[]> needed(new bool[inputs.size()]);
  for (std::size_t i = 0; i < inputs.size(); ++i) needed[i] = tangents[i].defined();
  const Grads g = entry->fn(GradContext(rec, us, std::span<const bool>(needed.get(), inputs.size())));
  TAPEFLOW_REQUIRE(g.size() == inputs.size(), InternalError,
                   "Recorded operation '{}' returned too {} gradients. Expected {} but received {}",
                   op.name(), g.size() < inputs.size() ? "few" : "many", inputs.size(), g.size());
  std::optional<Tensor> inner;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!needed[i] || !g[i]) continue;
    Tensor term = reduce_sum(*g[i] * tangents[i]);
    inner = inner ? *inner + term : term;
  }
  if (!inner || sources.empty()) return result;
  auto jv = tape.gradient_flat(*inner, sources, {}, UnconnectedGradients::None);
  std::size_t k = 0;
  for (std::size_t j = 0; j < outputs.size(); ++j)
    if (is_floating(outputs[j].dtype())) result[j] = jv[k++] ? *jv[k - 1] : Tensor();
  return result;
}

}  // namespace

void recount_accumulators() {
  auto& accs = thread_accumulators();
  std::erase_if(accs, [](const auto& a) { return !a->active.load(std::memory_order_relaxed); });
  int n = 0;
  for (const auto& a : accs) n += a->visible() ? 1 : 0;
  t_active_accumulators = n;
}

void forward_accumulate(const OpDef& op, std::span<const Tensor* const> inputs,
                        std::span<const Tensor> outputs, const std::shared_ptr<const void>& attrs) {
  // NOTE: a JVP runs gradient functions, user code that may create or destroy accumulators (and
  // every JVP recounts them, which drops destroyed ones): walk a snapshot that keeps each alive.
  const auto& list = thread_accumulators();
  const absl::InlinedVector<std::shared_ptr<detail::AccumulatorState>, 4> accs(list.begin(), list.end());
  for (const auto& a : accs) {  // outermost first: see the file comment
    detail::AccumulatorState& acc = *a;
    if (!acc.visible()) continue;
    std::vector<Tensor> tangents(inputs.size());
    bool any = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!is_floating(inputs[i]->dtype())) continue;
      auto it = acc.tangents.find(inputs[i]->id());
      if (it == acc.tangents.end()) continue;
      tangents[i] = it->second;
      any = true;
    }
    if (!any) continue;
    std::vector<Tensor> out_tangents;
    {
      const HideNestedFrom hide(acc.nesting_id);
      out_tangents = op.jvp ? op.jvp(JvpContext(inputs, outputs, tangents, attrs.get()))
                            : jvp_from_gradient(op, inputs, outputs, attrs, tangents);
    }
    TAPEFLOW_REQUIRE(out_tangents.size() == outputs.size(), InternalError,
                     "The JVP rule of '{}' returned {} tangents for {} outputs", op.name(),
                     out_tangents.size(), outputs.size());
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      const Tensor& t = out_tangents[j];
      if (!t.defined() || !is_floating(outputs[j].dtype())) continue;
      TAPEFLOW_REQUIRE(
          t.shape() == outputs[j].shape() && t.dtype() == outputs[j].dtype(), InternalError,
          "The JVP of '{}' output {} has shape {} and dtype {}, but the output has shape {} and dtype {}",
          op.name(), j, t.shape().to_string(), dtype_name(t.dtype()), outputs[j].shape().to_string(),
          dtype_name(outputs[j].dtype()));
      acc.tangents[outputs[j].id()] = t;
    }
  }
}

/// Variable reads: the read tensor takes the tangent watched on the variable's handle.
void forward_accumulate_variable_read(const Variable& var, const Tensor& read) {
  for (const auto& acc : thread_accumulators()) {
    if (!acc->visible()) continue;
    auto it = acc->tangents.find(var.handle_id());
    if (it != acc->tangents.end()) acc->tangents[read.id()] = it->second;
  }
}

}  // namespace autodiff

ForwardAccumulator::ForwardAccumulator() : state_(std::make_shared<detail::AccumulatorState>()) {
  autodiff::thread_accumulators().push_back(state_);
  autodiff::recount_accumulators();
}

// NOTE: the owner thread's list is not ours to change from another thread: it drops the state at
// its next recount.
ForwardAccumulator::~ForwardAccumulator() {
  state_->active.store(false, std::memory_order_relaxed);
  if (state_->owner == std::this_thread::get_id()) autodiff::recount_accumulators();
}

void ForwardAccumulator::watch(const Source& primal, const Tensor& tangent) {
  TAPEFLOW_REQUIRE(state_->owner == std::this_thread::get_id(), FailedPreconditionError,
                   "[ForwardAccumulator::watch] an accumulator computes the tangents of the ops of the "
                   "thread that created it and must be used from that thread");
  TAPEFLOW_REQUIRE(primal.is_variable() || primal.tensor().defined(), InvalidArgumentError,
                   "[ForwardAccumulator::watch] the primal is an undefined Tensor");
  TAPEFLOW_REQUIRE(
      tangent.defined() && tangent.shape() == primal.shape() && tangent.dtype() == primal.dtype(),
      InvalidArgumentError,
      "[ForwardAccumulator::watch] the tangent must match the primal: primal has shape {} and dtype {}, "
      "tangent has shape {} and dtype {}",
      primal.shape().to_string(), dtype_name(primal.dtype()),
      tangent.defined() ? tangent.shape().to_string() : "(undefined)",
      tangent.defined() ? dtype_name(tangent.dtype()) : "-");
  if (!is_floating(primal.dtype())) {
    log(LogLevel::Warning,
        fmt::format("The dtype of the watched primal must be floating (e.g. tf.float32), got tf.{}",
                    dtype_name(primal.dtype())));
    return;
  }
  const bool inserted = state_->tangents.emplace(primal.id(), tangent).second;
  TAPEFLOW_REQUIRE(
      inserted, InvalidArgumentError,
      "Tensor {} was specified as a primal multiple times. This may indicate an error. If it was "
      "intended, please sum the corresponding tangents.",
      primal.is_variable() ? primal.variable().name() : "of shape " + primal.shape().to_string());
}

void ForwardAccumulator::set_recording(bool recording) {
  TAPEFLOW_REQUIRE(state_->owner == std::this_thread::get_id(), FailedPreconditionError,
                   "[ForwardAccumulator::set_recording] an accumulator computes the tangents of the ops of "
                   "the thread that created it and must be paused or resumed from that thread");
  state_->recording = recording;
  autodiff::recount_accumulators();
}

Gradient ForwardAccumulator::jvp(const Tensor& t, UnconnectedGradients unconnected) const {
  TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "[ForwardAccumulator::jvp] the tensor is undefined");
  auto it = state_->tangents.find(t.id());
  if (it != state_->tangents.end()) return it->second;
  if (unconnected == UnconnectedGradients::Zero) return zeros_like(t);
  return Gradient::missing(
      fmt::format("tensor #{} with shape {} and dtype {}", t.id(), t.shape().to_string(),
                  dtype_name(t.dtype())),
      "the ForwardAccumulator has no tangent for it: it was not watched and not computed from a watched "
      "primal while the accumulator was active");
}

}  // namespace tapeflow
