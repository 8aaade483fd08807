// tf::debug::explain: why the gradient of a target with respect to a source is None or zero.
//
// explain() answers with gradient()'s own semantics, in two steps.
//
//   1. The backward pass itself (backward.h), over the records as they are, recorded on no tape,
//      with an observer. An op with no registered gradient on the walk is where gradient()
//      raises LookupError; a source that receives a cotangent is connected, and the record that
//      delivered each cotangent gives the path back to the target. If the gradient is zero
//      everywhere, the first op from the target's side whose input cotangent is all zeros while
//      its output cotangent is not is where it became zero.
//   2. For a source with no cotangent, the data-flow graph: the recorded ops plus the *cuts*, ops
//      the tape saw on tracked tensors and did not record (an op on an integer tensor, a variable
//      assignment; see trace.h). If the target depends on the source in that graph, the first
//      op on such a path that stops gradients is the cause: an op producing an integer or bool
//      tensor, StopGradient, a no_gradient op, an assignment. Otherwise the target does not depend
//      on the source on this tape, and the tape's own facts say why: the source was never watched
//      (and why not), it was created after the target (tensor ids grow in creation order on a
//      thread), or the target was made outside the tape's recording (before the tape, while
//      paused, on another thread, on another tape).
//
// Costs. explain() itself costs one backward pass, recorded on no tape. What recording pays for
// the trace is in trace.cpp.

#include "tapeflow/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/nesting.h"
#include "autodiff/tape_access.h"
#include "core/check.h"
#include "debug/common.h"
#include "debug/trace.h"
#include "tapeflow/debug.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {

std::string_view to_string(GradientCause cause) {
  switch (cause) {
    case GradientCause::Connected:
      return "Connected";
    case GradientCause::ZeroGradient:
      return "ZeroGradient";
    case GradientCause::TensorNotWatched:
      return "TensorNotWatched";
    case GradientCause::VariableNotTrainable:
      return "VariableNotTrainable";
    case GradientCause::AccessedVariablesNotWatched:
      return "AccessedVariablesNotWatched";
    case GradientCause::SourceNotUsed:
      return "SourceNotUsed";
    case GradientCause::StopGradient:
      return "StopGradient";
    case GradientCause::NonDifferentiableOp:
      return "NonDifferentiableOp";
    case GradientCause::IntegerDtype:
      return "IntegerDtype";
    case GradientCause::StatefulUpdate:
      return "StatefulUpdate";
    case GradientCause::TargetBeforeTape:
      return "TargetBeforeTape";
    case GradientCause::RecordingPaused:
      return "RecordingPaused";
    case GradientCause::TargetOnAnotherTape:
      return "TargetOnAnotherTape";
    case GradientCause::TargetOnAnotherThread:
      return "TargetOnAnotherThread";
    case GradientCause::SourceCreatedAfterTarget:
      return "SourceCreatedAfterTarget";
    case GradientCause::NoGradientRegistered:
      return "NoGradientRegistered";
  }
  return "Unknown";
}

std::string GradientDiagnosis::to_string() const {
  const std::string& s = source;
  // In sentences: "variable w:0" or "the source tensor".
  const std::string who = source_is_variable ? "variable " + source : "the source tensor";
  auto path_text = [&] {
    std::string p = "target";
    for (const std::string& op : path) p += " <- " + op;
    return p + " <- " + s;
  };
  switch (cause) {
    case GradientCause::Connected:
      return fmt::format("connected: {}", path_text());
    case GradientCause::ZeroGradient:
      return fmt::format("zero gradient: the gradient is exactly zero everywhere; it became zero at {} ({})",
                         op.empty() ? "an op on the path" : op, path_text());
    case GradientCause::TensorNotWatched:
      return fmt::format(
          "None: the source tensor is not watched by the tape; call tape.watch() on it before "
          "computing the target, or keep it a Variable (x.assign_add(1), not x = x + 1)");
    case GradientCause::VariableNotTrainable:
      return fmt::format(
          "None: variable {} is not trainable, so the tape does not watch it; create it with "
          "trainable = true or call tape.watch() on it",
          s);
    case GradientCause::AccessedVariablesNotWatched:
      return fmt::format(
          "None: variable {} is not watched: the tape has watch_accessed_variables = false; call "
          "tape.watch() on it",
          s);
    case GradientCause::SourceNotUsed:
      if (!target_recorded)
        return fmt::format(
            "None: no op this tape recorded made the target: it was computed from values the tape "
            "does not track (constants, host values), so it does not depend on {}",
            who);
      return fmt::format(
          "None: the target does not depend on {} through any op this tape recorded (a tensor must "
          "be watched, and a variable read, while the tape records)",
          who);
    case GradientCause::StopGradient:
      return fmt::format(
          "None: the path from {} to the target goes through {}, which blocks gradients by design", who, op);
    case GradientCause::NonDifferentiableOp:
      return fmt::format(
          "None: the path from {} to the target goes through {}, an op declared non-differentiable "
          "(no_gradient)",
          who, op);
    case GradientCause::IntegerDtype: {
      const std::string dt = dtype ? std::string(dtype_name(*dtype)) : "integer";
      if (producer.empty())
        return fmt::format("None: {} has dtype {}; integer and bool tensors carry no gradient", who, dt);
      return fmt::format(
          "None: the path from {} to the target goes through a tensor of dtype {} made by {}{}; "
          "integer and bool tensors carry no gradient (keep the computation in floating point)",
          who, dt, producer, op.empty() ? std::string() : " and used by " + op);
    }
    case GradientCause::StatefulUpdate:
      return fmt::format(
          "None: {} reaches the target only through {} on variable {}; assignments are not "
          "differentiable, a read after one starts a new path (compute with the values instead)",
          who, op, variable);
    case GradientCause::TargetBeforeTape:
      return fmt::format(
          "None: the target was computed before this tape was created; compute it while the tape "
          "records");
    case GradientCause::RecordingPaused:
      return fmt::format(
          "None: the target was computed while this tape's recording was paused (stop_recording() "
          "or its own gradient() call)");
    case GradientCause::TargetOnAnotherTape:
      return fmt::format(
          "None: the target was recorded by another tape, not this one, which does not track {}", who);
    case GradientCause::TargetOnAnotherThread:
      return fmt::format(
          "None: the target was computed on another thread; a tape records only the thread that "
          "created it");
    case GradientCause::SourceCreatedAfterTarget:
      return fmt::format(
          "None: {} was created after the target, so the target cannot depend on it (a variable "
          "replaced by a tensor, x = x + 1, is the usual cause: use x.assign_add(1))",
          who);
    case GradientCause::NoGradientRegistered:
      return fmt::format(
          "LookupError: the path from {} to the target goes through {}, which has no registered "
          "gradient; register one with register_gradient(\"{}\", ...) or declare it no_gradient",
          who, op, op);
  }
  return "unknown cause";
}

namespace {

using autodiff::OpRecord;
using autodiff::Records;
using debug::CutReason;
using debug::CutRecord;
using debug::TapeTrace;
using debug::trace_of;

bool all_zero(const Tensor& t) {
  if (!t.defined()) return true;
  return debug::with_floating_values(
      t,
      [](auto values) { return std::ranges::all_of(values, [](auto v) { return debug::widen(v) == 0.0; }); },
      false);
}

/// Step 1: what the backward pass did for one target and one source, as its observer saw it.
class Flow final : public autodiff::BackwardObserver {
 public:
  Flow(const Records& ops, TensorId target) : ops_(ops) { has_cotangent.insert(target); }

  void before_record(std::size_t k) override { current = &ops_[k]; }
  void after_record(std::size_t k, std::span<const Tensor> dys, std::span<const bool> needed,
                    const Grads& grads) override {
    const OpRecord& rec = ops_[k];
    const bool nonzero = std::ranges::any_of(dys, [](const Tensor& dy) { return !all_zero(dy); });
    bool all_inputs_zero = true, any_needed = false;
    for (std::size_t i = 0; i < needed.size(); ++i) {
      if (!needed[i]) continue;
      any_needed = true;
      const TensorId id = rec.inputs()[i].id;
      has_cotangent.insert(id);
      via.try_emplace(id, k);
      if (!grads[i]) {
        if (nonzero && !no_gradient) no_gradient = &rec;
        continue;
      }
      all_inputs_zero = all_inputs_zero && all_zero(*grads[i]);
    }
    if (any_needed && nonzero && all_inputs_zero && !became_zero) became_zero = &rec;
  }

  const OpRecord* current = nullptr;  // the record whose gradient runs (or was about to)
  std::unordered_set<TensorId> has_cotangent;
  std::unordered_map<TensorId, std::size_t> via;  // id -> the record that gave it a cotangent
  const OpRecord* became_zero = nullptr;  // first op (target side) with zero input, non-zero output cotangent
  const OpRecord* no_gradient = nullptr;  // an op whose gradient function returned none for a needed input

 private:
  const Records& ops_;
};

/// The ops of one path from the target back to the source, target side first.
std::vector<std::string> path_of(const Records& ops, const Flow& f, TensorId target, TensorId source) {
  std::vector<std::string> path;
  TensorId id = source;
  while (id != target) {
    const auto it = f.via.find(id);
    if (it == f.via.end()) break;
    const OpRecord& rec = ops[it->second];
    path.push_back(rec.op->name());
    TensorId next = id;
    for (const auto& out : rec.outputs())
      if (f.has_cotangent.contains(out.id)) {
        next = out.id;
        break;
      }
    if (next == id) break;
    id = next;
  }
  return {path.rbegin(), path.rend()};
}

/// One step of execution in the data-flow graph: a recorded op or a cut.
struct Node {
  const OpRecord* rec = nullptr;
  const CutRecord* cut = nullptr;
  std::vector<TensorId> inputs, outputs;
  std::vector<DType> output_dtypes;  // recorded ops only
  std::string_view name() const { return rec ? std::string_view(rec->op->name()) : cut->op; }
};

std::vector<Node> execution_order(const detail::TapeState& t) {
  const std::vector<CutRecord>& cuts = trace_of(t).cuts;
  std::vector<Node> nodes;
  std::size_t c = 0;
  for (std::size_t k = 0; k <= t.ops.size(); ++k) {
    for (; c < cuts.size() && cuts[c].position <= k; ++c)
      nodes.push_back({nullptr, &cuts[c], cuts[c].inputs, cuts[c].outputs, {}});
    if (k == t.ops.size()) break;
    Node n{&t.ops[k], nullptr, {}, {}, {}};
    for (const auto& in : t.ops[k].inputs()) n.inputs.push_back(in.id);
    for (const auto& out : t.ops[k].outputs()) {
      n.outputs.push_back(out.id);
      n.output_dtypes.push_back(out.dtype);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

/// Step 2, first: if the target depends on the source through recorded ops and cuts, the first op on
/// such a path that stops gradients. std::nullopt if the target does not depend on the source.
std::optional<GradientDiagnosis> find_cut(const detail::TapeState& t, TensorId target, TensorId source,
                                          GradientDiagnosis d) {
  const std::vector<Node> nodes = execution_order(t);
  std::unordered_set<TensorId> from_source{source};
  std::vector<char> reached(nodes.size(), 0), reaches(nodes.size(), 0);
  for (std::size_t p = 0; p < nodes.size(); ++p) {
    for (TensorId id : nodes[p].inputs) reached[p] = reached[p] || from_source.contains(id);
    if (reached[p]) from_source.insert(nodes[p].outputs.begin(), nodes[p].outputs.end());
  }
  if (!from_source.contains(target)) return std::nullopt;
  std::unordered_set<TensorId> to_target{target};
  for (std::size_t p = nodes.size(); p-- > 0;) {
    for (TensorId id : nodes[p].outputs) reaches[p] = reaches[p] || to_target.contains(id);
    if (reaches[p]) to_target.insert(nodes[p].inputs.begin(), nodes[p].inputs.end());
  }
  // Diagnostic code, not the engine: StopGradient is told apart from other no_gradient ops by its
  // OpDef, only to word the message.
  const autodiff::OpDef* stop_gradient = &autodiff::registry().get("StopGradient");
  for (std::size_t p = 0; p < nodes.size(); ++p) {
    if (!reached[p] || !reaches[p]) continue;
    const Node& n = nodes[p];
    if (n.cut && n.cut->reason == CutReason::kVariableUpdate) {
      d.cause = GradientCause::StatefulUpdate;
      d.op = std::string(n.cut->op);
      d.variable = n.cut->variable;
      return d;
    }
    if (n.cut) {  // an op on an integer input nothing recorded made: the source itself, or a watched int
      d.cause = GradientCause::IntegerDtype;
      d.op = std::string(n.cut->op);
      return d;
    }
    for (std::size_t j = 0; j < n.outputs.size(); ++j) {
      if (is_floating(n.output_dtypes[j]) || !to_target.contains(n.outputs[j])) continue;
      d.cause = GradientCause::IntegerDtype;
      d.producer = n.rec->op->name();
      d.dtype = n.output_dtypes[j];
      for (std::size_t q = p + 1; q < nodes.size() && d.op.empty(); ++q)
        for (TensorId id : nodes[q].inputs)
          if (id == n.outputs[j] && reaches[q]) d.op = std::string(nodes[q].name());
      return d;
    }
    if (n.rec->op->gradient()->status == GradientStatus::NotDifferentiable) {
      d.cause = n.rec->op == stop_gradient ? GradientCause::StopGradient : GradientCause::NonDifferentiableOp;
      d.op = n.rec->op->name();
      return d;
    }
  }
  d.cause = GradientCause::SourceNotUsed;
  return d;
}

/// Whether this tape produced `id` (a recorded op's output or a cut's output).
bool on_tape(const detail::TapeState& t, TensorId id) {
  const auto it = t.producer.find(id);
  return (it != t.producer.end() && it->second >= 0) || trace_of(t).cut_ids.contains(id);
}

/// The op that made `id` on this tape, or "".
std::string producer_name(const detail::TapeState& t, TensorId id) {
  if (const auto it = t.producer.find(id); it != t.producer.end() && it->second >= 0)
    return t.ops[static_cast<std::size_t>(it->second)].op->name();
  for (const CutRecord& c : trace_of(t).cuts)
    for (TensorId out : c.outputs)
      if (out == id) return std::string(c.op);
  return "";
}

/// What needs no pass: the target is the source, or one of them is not floating (integer and
/// bool tensors carry no gradient, whatever the tape recorded).
std::optional<GradientDiagnosis> diagnose_at_sight(const detail::TapeState& t, const Tensor& target,
                                                   const Source& source, GradientDiagnosis d) {
  if (source.id() == target.id()) {
    d.cause = GradientCause::Connected;
    return d;
  }
  if (!is_floating(source.dtype())) {
    d.cause = GradientCause::IntegerDtype;
    d.dtype = source.dtype();
    return d;
  }
  if (!is_floating(target.dtype())) {
    d.cause = GradientCause::IntegerDtype;
    d.dtype = target.dtype();
    d.producer = producer_name(t, target.id());
    if (d.producer.empty()) d.producer = "the target";
    return d;
  }
  return std::nullopt;
}

/// gradient()'s own prune and backward pass for one target and one source, watched by `flow`.
/// Recorded on no tape, and no accumulator sees it; tapes that gradient functions create
/// (recompute_grad's) are created later and stay visible to themselves. The records are kept.
std::optional<Tensor> observed_gradient(detail::TapeState& t, const Tensor& target, const Source& source,
                                        Flow& flow) {
  const autodiff::RunningPass running(t);
  const autodiff::HideNestedFrom hide(0);
  const Source y(target);
  const Tensor seed = ones(target.shape(), target.dtype());
  const autodiff::Pruned p = autodiff::prune(t.ops, t.producer, {&y, 1}, {&source, 1});
  return autodiff::backward(
      t.ops, p, {.ys = {&y, 1}, .seeds = {&seed, 1}, .sources = {&source, 1}, .observer = &flow})[0];
}

/// Step 1: what gradient() does, observed. Its LookupError, or, for a source a cotangent reaches,
/// the path and whether the gradient is None, zero or connected. std::nullopt when no cotangent
/// reaches the source (step 2 says why).
std::optional<GradientDiagnosis> diagnose_from_pass(detail::TapeState& t, const Tensor& target,
                                                    const Source& source, GradientDiagnosis d) {
  Flow flow(t.ops, target.id());
  std::optional<Tensor> gradient;
  try {
    gradient = observed_gradient(t, target, source, flow);
  } catch (const LookupError&) {
    // gradient()'s LookupError, unless a gradient function raised it from inside.
    if (flow.current == nullptr || flow.current->op->gradient()->status != GradientStatus::Missing) throw;
    d.cause = GradientCause::NoGradientRegistered;
    d.op = flow.current->op->name();
    return d;
  }
  if (!flow.has_cotangent.contains(source.id())) return std::nullopt;
  d.path = path_of(t.ops, flow, target.id(), source.id());
  if (!gradient) {  // a gradient function returned none for an input on the path
    d.cause = GradientCause::NonDifferentiableOp;
    d.op = flow.no_gradient ? flow.no_gradient->op->name() : "";
    d.path.clear();
  } else if (all_zero(*gradient)) {
    d.cause = GradientCause::ZeroGradient;
    d.op = flow.became_zero ? flow.became_zero->op->name() : "";
  } else {
    d.cause = GradientCause::Connected;
  }
  return d;
}

/// Why the tape never watched `source`; std::nullopt if it did (the source is in its producer map)
/// or should have.
std::optional<GradientCause> watch_reason(const detail::TapeState& t, const Source& source) {
  if (t.producer.contains(source.id())) return std::nullopt;
  if (!source.is_variable()) return GradientCause::TensorNotWatched;
  if (!source.variable().trainable()) return GradientCause::VariableNotTrainable;
  if (!t.options.watch_accessed_variables) return GradientCause::AccessedVariablesNotWatched;
  return std::nullopt;
}

/// Where the target was computed when this tape did not make it; std::nullopt if the tape made it
/// or the place is not known.
std::optional<GradientCause> off_tape_reason(const detail::TapeState& t, TensorId target) {
  if (on_tape(t, target)) return std::nullopt;
  // Another thread first: tensor ids grow in creation order on each thread only, so the id
  // comparisons below say something about tensors of the tape's own thread.
  if (const auto thread = debug::unrecorded_thread_of(target); thread && *thread != t.owner)
    return GradientCause::TargetOnAnotherThread;
  const TapeTrace& trace = trace_of(t);
  if (target < trace.first_id) return GradientCause::TargetBeforeTape;
  for (const auto& [first, last] : trace.paused_ids)
    if (target >= first && target < last) return GradientCause::RecordingPaused;
  for (const auto& other : autodiff::this_thread_tapes())
    if (other.get() != &t && on_tape(*other, target)) return GradientCause::TargetOnAnotherTape;
  return std::nullopt;
}

/// Step 2: no cotangent reaches the source. A cut on a path of the data-flow graph, else the
/// tape's facts: the source's creation after the target, why it was not watched, where the
/// target was made; else the target does not depend on the source.
GradientDiagnosis diagnose_unreached(const detail::TapeState& t, TensorId target, const Source& source,
                                     GradientDiagnosis d) {
  if (auto cut = find_cut(t, target, source.id(), d)) return *cut;
  if (source.id() > target) {  // ids grow in creation order: the target cannot read a later tensor
    d.cause = GradientCause::SourceCreatedAfterTarget;
    return d;
  }
  if (const auto why = watch_reason(t, source)) {
    d.cause = *why;
    return d;
  }
  if (const auto why = off_tape_reason(t, target)) {
    d.cause = *why;
    return d;
  }
  d.cause = GradientCause::SourceNotUsed;
  d.target_recorded = t.producer.contains(target) || trace_of(t).cut_ids.contains(target);
  return d;
}

}  // namespace

GradientDiagnosis debug::explain(const GradientTape& tape, const Tensor& target, const Source& source) {
  // The pass runs gradient functions, which may destroy the GradientTape: hold the state.
  const std::shared_ptr<detail::TapeState> keep = detail::TapeAccess::state(tape);
  detail::TapeState& t = *keep;
  debug::require_readable(t, "debug::explain", "call explain() before gradient()");
  TAPEFLOW_REQUIRE(target.defined(), InvalidArgumentError,
                   "[debug::explain] the target is an undefined (default-constructed) Tensor");
  TAPEFLOW_REQUIRE(source.is_variable() || source.tensor().defined(), InvalidArgumentError,
                   "[debug::explain] the source is an undefined (default-constructed) Tensor");

  GradientDiagnosis d;
  d.source = source.is_variable() ? source.variable().name() : "source";
  d.source_is_variable = source.is_variable();
  if (auto seen = diagnose_at_sight(t, target, source, d)) return *seen;
  if (auto observed = diagnose_from_pass(t, target, source, d)) return *observed;
  return diagnose_unreached(t, target.id(), source, d);
}

}  // namespace tapeflow
