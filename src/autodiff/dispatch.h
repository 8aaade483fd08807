#pragma once
// The single dispatch path every op goes through:
//
//   forward (validates, allocates, runs the kernel) -> check numerics if enabled -> record on the
//   active tapes if needed.
//
// Ops never touch the tape directly. An op is a struct in its family file (src/ops/*.cpp):
//
//   // y = exp(x);  dx = dy * y
//   struct Exp {
//     static constexpr std::string_view kName = "Exp";
//     static constexpr Saves kSaves = kSavesOutput;          // the tape keeps only y
//     static Tensor forward(const Tensor& x) { return cpu::map_float(x, "Exp", ...); }
//     static Grads backward(const GradContext& c) { return {c.dy() * c.output(0)}; }
//   };
//   Tensor exp(const Tensor& x) { return apply<Exp>(x); }
//
// An op with attributes (axes, strides) declares `struct Attrs`, takes it as forward's first
// argument, and reads it in backward with c.attrs<Attrs>().

#include <array>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "autodiff/op_def.h"
#include "autodiff/tracer.h"
#include "core/float_mode.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

namespace tapeflow::autodiff {

/// Number of tapes recording on this thread. constinit tells every translation unit that it needs
/// no dynamic initialisation, so checking it is one direct TLS load (no TLS wrapper call, which
/// UBSan also mis-instruments): with no tape, an op pays nothing else for autodiff.
extern constinit thread_local int t_recording_tapes;
/// Whether check-numerics mode is on (process-wide).
extern std::atomic<bool> g_check_numerics;

inline bool any_tape_recording() { return t_recording_tapes > 0; }

/// The op whose gradient function is running on this thread (innermost), or nullptr: lets
/// check-numerics say which gradient produced a NaN, not only which op inside it.
extern constinit thread_local const OpDef* t_gradient_of;

/// Leading batch dimensions of the cotangents in the backward pass running on this thread
/// (vectorised Jacobians); 0 otherwise.
extern constinit thread_local int t_cotangent_batch_rank;

/// Number of forward accumulators active on this thread (forward_accumulator.cpp).
extern constinit thread_local int t_active_accumulators;
inline bool any_accumulator_active() { return t_active_accumulators > 0; }

/// Computes and stores output tangents on every active accumulator that tracks an input.
void forward_accumulate(const OpDef& op, std::span<const Tensor* const> inputs,
                        std::span<const Tensor> outputs, const std::shared_ptr<const void>& attrs);

/// Collects, while alive, every variable read or explicitly watched (GradientTape::watch) on
/// this thread (first-access order, no duplicates): custom_gradient (which keeps the trainable
/// ones and the watched ones, as TensorFlow's VariableWatcher hears of both) and recompute_grad
/// use it to find the variables their function captured.
struct VariableReadWatcher {
  VariableReadWatcher();
  ~VariableReadWatcher();
  VariableReadWatcher(const VariableReadWatcher&) = delete;
  VariableReadWatcher& operator=(const VariableReadWatcher&) = delete;
  std::vector<Variable> variables;  // read or watched
  std::vector<Variable> watched;    // watched explicitly on a tape
  /// Tells this thread's live watchers that `v` was read, or watched explicitly when `watch`.
  static void accessed(const Variable& v, bool watch);

 private:
  static std::vector<VariableReadWatcher*>& active();
};

/// Like record(), for an op that also reads variables: the variables are watched on tapes that
/// watch accessed variables (as a read would), and count as extra inputs after the tensor inputs,
/// identified by their handle ids on the tapes that watch them and by kNoTensor on the others, so
/// a variable gets a gradient through the op exactly where its read would have been recorded.
void record_with_variables(const OpDef& op, std::span<const Tensor* const> inputs,
                           std::span<const Variable> variables, std::span<const Tensor> outputs,
                           std::shared_ptr<const void> attrs);

/// Records one executed op on every recording tape of this thread that watches one of its
/// floating inputs. `attrs` is shared by those tapes.
void record(const OpDef& op, std::span<const Tensor* const> inputs, std::span<const Tensor> outputs,
            std::shared_ptr<const void> attrs);

/// Throws InvalidArgumentError naming `op` if any output holds NaN or Inf.
void check_numerics(const OpDef& op, std::span<const Tensor> outputs);

struct NoAttrs {};

template <class Op>
struct AttrsOf {
  using type = NoAttrs;
};
template <class Op>
requires requires { typename Op::Attrs; }
struct AttrsOf<Op> {
  using type = typename Op::Attrs;
};

/// Throws InvalidArgumentError naming `op` if an input is an undefined Tensor.
void require_defined(std::string_view op, std::span<const Tensor* const> inputs);
/// require_defined, and what bfloat16 inputs mean for the op: InvalidArgumentError naming `op`
/// and the tensor if it has no bfloat16 kernel (kNone); true if it computes them through float32
/// (kThroughFloat32: the caller runs forward_entry, which widens them), else false.
bool require_inputs(std::string_view op, std::span<const Tensor* const> inputs, BFloat16Support support);

/// Number of GradientTapes alive in the process (any thread).
extern std::atomic<int> g_live_tapes;

/// Tells the recording listener (recording_listener.h), if any, that an op computed `outputs` on
/// this thread while it has no tape and another thread has one. Off the hot path.
void note_unrecorded(std::span<const Tensor> outputs);

/// Tells the recording listener, if any, that `value` is being written into variable `var` by
/// `op` (AssignVariableOp, AssignAddVariableOp, ...) while tapes record; no tape records it.
void note_variable_update(std::string_view op, const Variable& var, const Tensor& value);

template <class Op, class Attrs>
void after_forward(const Attrs& attrs, std::span<const Tensor* const> ins, std::span<const Tensor> outs) {
  // Checked before recording: an op that throws leaves no record on any tape.
  if (g_check_numerics.load(std::memory_order_relaxed)) [[unlikely]]
    check_numerics(op_def<Op>(), outs);
  if (any_tape_recording() || any_accumulator_active() || t_tracer != nullptr) [[unlikely]] {
    std::shared_ptr<const void> a;
    if constexpr (!std::is_empty_v<Attrs>) a = std::make_shared<const Attrs>(attrs);
    if (t_tracer != nullptr) t_tracer->op(op_def<Op>(), a, ins, outs);
    // Tapes first: the JVP ops that follow may read the outputs, which must already be on the
    // tapes that record those JVP ops (records stay in topological order).
    if (any_tape_recording()) record(op_def<Op>(), ins, outs, a);
    if (any_accumulator_active()) forward_accumulate(op_def<Op>(), ins, outs, a);
  } else if (g_live_tapes.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    note_unrecorded(outs);
  }
}

/// Runs an op known by its OpDef through the dispatch path (check numerics, trace, record,
/// accumulate), as apply() does for an op struct: how a graph node runs eagerly.
std::vector<Tensor> run_op(const OpDef& op, const std::shared_ptr<const void>& attrs,
                           std::span<const Tensor> inputs);

/// Runs an op's forward in tapeflow's floating-point mode (core/float_mode.h). While a trace
/// watches host reads (tensor.h's t_host_read_hook), the op's own reads of its operands (a scalar
/// operand read with item()) are not the traced body's: the hook is off for the forward.
template <class F>
decltype(auto) run_forward(F&& forward) {
  const cpu::FloatModeScope float_mode;  // flushes subnormals as tf::set_flush_denormal says
  const detail::HostReadHook hook = detail::t_host_read_hook;
  if (hook == nullptr) [[likely]]
    return forward();
  struct Restore {
    detail::HostReadHook hook;
    ~Restore() { detail::t_host_read_hook = hook; }
  } const restore{hook};
  detail::t_host_read_hook = nullptr;
  return forward();
}

/// The dispatch path of an op given bfloat16 inputs it computes through float32 (forward_entry
/// widens them and rounds its results), out of line of the float path.
template <class Op, class Attrs>
std::vector<Tensor> apply_through_float32(const Attrs& attrs, std::span<const Tensor* const> ins) {
  std::vector<Tensor> in;
  in.reserve(ins.size());
  for (const Tensor* t : ins) in.push_back(*t);
  std::vector<Tensor> outs = run_forward([&] { return forward_entry<Op>(&attrs, in); });
  after_forward<Op>(attrs, ins, outs);
  return outs;
}

/// Runs a single-output op without attributes on fixed inputs.
template <class Op, class... In>
Tensor apply(const In&... in) {
  const std::array<const Tensor*, sizeof...(In)> ins{&in...};
  if (require_inputs(Op::kName, ins, bfloat16_support<Op>())) [[unlikely]]
    return apply_through_float32<Op>(NoAttrs{}, ins)[0];
  Tensor out = run_forward([&] { return Op::forward(in...); });
  after_forward<Op>(NoAttrs{}, ins, {&out, 1});
  return out;
}

/// Runs a single-output op with attributes on fixed inputs.
template <class Op, class... In>
Tensor apply_with(const typename Op::Attrs& attrs, const In&... in) {
  const std::array<const Tensor*, sizeof...(In)> ins{&in...};
  if (require_inputs(Op::kName, ins, bfloat16_support<Op>())) [[unlikely]]
    return apply_through_float32<Op>(attrs, ins)[0];
  Tensor out = run_forward([&] { return Op::forward(attrs, in...); });
  after_forward<Op>(attrs, ins, {&out, 1});
  return out;
}

/// Runs an op on a list of inputs (concat, stack, add_n) or with several outputs (split,
/// unstack): forward takes (attrs, span of inputs) and returns the outputs.
template <class Op>
std::vector<Tensor> apply_list(const typename AttrsOf<Op>::type& attrs, std::span<const Tensor> inputs) {
  std::vector<const Tensor*> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(&t);
  if (require_inputs(Op::kName, ins, bfloat16_support<Op>())) [[unlikely]]
    return apply_through_float32<Op>(attrs, ins);
  std::vector<Tensor> outs = run_forward([&] { return Op::forward(attrs, inputs); });
  after_forward<Op>(attrs, ins, outs);
  return outs;
}

}  // namespace tapeflow::autodiff
