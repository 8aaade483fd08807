// custom_gradient and recompute_grad: user functions recorded as a single op.

#include "tapeflow/custom_gradient.h"

#include <optional>

#include "autodiff/dispatch.h"
#include "autodiff/op_def.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/gradient_control.h"
#include "tapeflow/tape.h"

namespace tapeflow {
namespace autodiff {
namespace {

struct CustomGradientAttrs {
  std::function<Grads(const std::vector<Tensor>&, const std::vector<Variable>&)> grad;
  std::vector<Variable> variables;
  std::size_t num_tensor_inputs;
};

std::vector<Tensor> output_cotangents(const GradContext& c) {
  std::vector<Tensor> dys;
  for (int i = 0; i < c.num_outputs(); ++i) dys.push_back(c.dy(i));
  return dys;
}

/// The user's gradient function must return one gradient per input, then one per variable f
/// read; TensorFlow's two messages, with the counts.
void check_gradient_count(const CustomGradientAttrs& a, std::size_t returned) {
  const std::size_t expected = a.num_tensor_inputs + a.variables.size();
  if (returned == expected) return;
  const std::string counts =
      fmt::format("custom_gradient function expected to return {} gradients", expected) +
      (a.variables.empty() ? std::string()
                           : fmt::format(" ({} for inputs, {} for the variables it read)",
                                         a.num_tensor_inputs, a.variables.size())) +
      fmt::format(" but returned {} instead.", returned);
  if (a.variables.empty()) throw InvalidArgumentError(fmt::format("[CustomGradient] {}", counts));
  std::vector<std::string> names;
  for (const Variable& v : a.variables) names.push_back(v.name());
  throw InvalidArgumentError(
      fmt::format("[CustomGradient] Must return gradient for each variable from @custom_gradient grad_fn. {} "
                  "The variables, in the order f first read them: {}.",
                  counts, fmt::join(names, ", ")));
}

// y = f(x) with the user's gradient function: dx, dvars = grad(dy, vars)
struct CustomGradient {
  static constexpr std::string_view kName = "CustomGradient";
  static constexpr Saves kSaves = kSavesNothing;       // what the gradient needs lives in its closure
  static constexpr bool kGradientRunsUserCode = true;  // the closure may read any variable
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<CustomGradientAttrs>();
    Grads g = a.grad(output_cotangents(c), a.variables);
    check_gradient_count(a, g.size());
    check_user_gradients(c, g, "the custom_gradient function", [&a](int i) {
      const auto k = static_cast<std::size_t>(i);
      return k < a.num_tensor_inputs
                 ? fmt::format("input {}", k)
                 : fmt::format("variable {}", a.variables[k - a.num_tensor_inputs].name());
    });
    return g;
  }
};

struct RecomputeAttrs {
  Block f;
  std::vector<Variable> variables;
  std::size_t num_tensor_inputs;
};

// y = f(x), recomputed in backward: dx, dvars = gradient of f(x) at the saved x, weighted by dy
struct RecomputeGrad {
  static constexpr std::string_view kName = "RecomputeGrad";
  static constexpr Saves kSaves = kSavesInputs;        // the inputs only: the point of recomputation
  static constexpr bool kGradientRunsUserCode = true;  // the block re-runs and may read any variable
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<RecomputeAttrs>();
    // The block re-runs on identity copies (TensorFlow's id_args): each argument slot is its own
    // source, so a tensor passed twice gets one gradient per slot, which the tape then sums once.
    std::vector<Tensor> inputs;
    std::vector<Source> sources;
    for (std::size_t i = 0; i < a.num_tensor_inputs; ++i) {
      inputs.push_back(identity(c.input(static_cast<int>(i))));
      sources.emplace_back(inputs.back());
    }
    for (const Variable& v : a.variables) sources.emplace_back(v);
    GradientTape tape;
    for (const Source& s : sources) tape.watch(s);
    const std::vector<Tensor> outputs = a.f(inputs);
    std::vector<Tensor> dys = output_cotangents(c);
    TAPEFLOW_REQUIRE(outputs.size() == dys.size(), InvalidArgumentError,
                     "[RecomputeGrad] the recomputed block returned {} outputs, the first run {}",
                     outputs.size(), dys.size());
    Targets targets(outputs);
    const std::vector<Gradient> grads = tape.gradient_flat(targets, sources, dys, UnconnectedGradients::None);
    return Grads(grads.begin(), grads.end());
  }
};

/// Forward mode for ops recorded with variables: the variables' current values stand in as extra
/// inputs (so the gradient function sees the arity it was recorded with); a tangent watched on a
/// variable itself is not propagated through a custom gradient.
void accumulate_with_variables(const OpDef& op, std::span<const Tensor* const> inputs,
                               const std::vector<Variable>& variables, std::span<const Tensor> outputs,
                               const std::shared_ptr<const void>& attrs) {
  std::vector<Tensor> values;
  for (const Variable& v : variables) values.push_back(v.value());
  std::vector<const Tensor*> all(inputs.begin(), inputs.end());
  for (const Tensor& v : values) all.push_back(&v);
  forward_accumulate(op, all, outputs, attrs);
}

/// Runs `f` while collecting the variables it reads or watches (and, given `watched`, the
/// ones it watches explicitly on a tape).
template <class F>
auto run_watching_variables(F&& f, std::vector<Variable>& variables,
                            std::vector<Variable>* watched = nullptr) {
  VariableReadWatcher watcher;
  auto result = f();
  variables = std::move(watcher.variables);
  if (watched != nullptr) *watched = std::move(watcher.watched);
  return result;
}

/// Fresh tensors (new ids) for the outputs, so each output is produced by the recorded op even if
/// f returned one of its inputs.
std::vector<Tensor> fresh(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) {
    out.push_back(detail::share_with_shape(t, t.shape()));
    if (t_tracer != nullptr) t_tracer->aliased(t, out.back());
  }
  return out;
}

std::vector<const Tensor*> pointers(const std::vector<Tensor>& ts) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : ts) p.push_back(&t);
  return p;
}

/// grad_pass_through's gradient passes output i's cotangent to input i unchanged, so each output
/// must look like its input.
void require_outputs_like_inputs(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  TAPEFLOW_REQUIRE(outputs.size() == inputs.size(), InvalidArgumentError,
                   "[grad_pass_through] the function returned {} outputs for {} inputs; the gradient passes "
                   "output i's gradient to input i, so it must return one output per input",
                   outputs.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& y = outputs[i];
    TAPEFLOW_REQUIRE(
        y.defined() && y.shape() == inputs[i].shape() && y.dtype() == inputs[i].dtype(), InvalidArgumentError,
        "[grad_pass_through] output {} has shape {} and dtype {}, but input {} has shape {} and "
        "dtype {}; the gradient passes output i's gradient to input i unchanged, so they must match",
        i, y.defined() ? y.shape().to_string() : "(undefined)", y.defined() ? dtype_name(y.dtype()) : "-", i,
        inputs[i].shape().to_string(), dtype_name(inputs[i].dtype()));
  }
}

}  // namespace

void register_custom_gradient_ops(Registry& r) {
  r.add<CustomGradient>();
  r.add<RecomputeGrad>();
}

}  // namespace autodiff

std::vector<Tensor> custom_gradient(
    const std::vector<Tensor>& inputs,
    const std::function<CustomGradientResult(const std::vector<Tensor>&)>& f) {
  std::vector<const Tensor*> ins = autodiff::pointers(inputs);
  autodiff::require_defined("CustomGradient", ins);
  std::vector<Variable> variables;
  // As in TensorFlow, f's own ops are recorded too: they link the values its gradient function
  // captures to the inputs, so an outer tape can differentiate the gradient function. The outputs
  // get fresh ids produced by the CustomGradient record, so first-order gradients flow through
  // the user's gradient function only.
  std::vector<Variable> watched;
  CustomGradientResult r = autodiff::run_watching_variables([&] { return f(inputs); }, variables, &watched);
  // The gradient function gets the trainable variables f read and the variables f watched
  // explicitly on a tape, as TensorFlow's does: its VariableWatcher hears of a read only for a
  // trainable variable, and of every tape.watch(variable). A non-trainable one f only read (a
  // BatchNorm moving mean) is no input of the op, so no tape gets a gradient for it through the
  // op, not even one that watches it outside f (TensorFlow: None).
  std::erase_if(variables, [&watched](const Variable& v) {
    return !v.trainable() && std::find(watched.begin(), watched.end(), v) == watched.end();
  });
  TAPEFLOW_REQUIRE(!r.outputs.empty(), InvalidArgumentError,
                   "[CustomGradient] the function returned no outputs");
  TAPEFLOW_REQUIRE(static_cast<bool>(r.grad), InvalidArgumentError,
                   "[CustomGradient] the function returned no gradient function");
  std::vector<Tensor> outputs = autodiff::fresh(r.outputs);
  if (autodiff::t_tracer != nullptr) autodiff::t_tracer->opaque_gradient("CustomGradient");
  if (autodiff::any_tape_recording() || autodiff::any_accumulator_active()) {
    auto attrs = std::make_shared<const autodiff::CustomGradientAttrs>(
        autodiff::CustomGradientAttrs{std::move(r.grad), variables, inputs.size()});
    const autodiff::OpDef& op = autodiff::op_def<autodiff::CustomGradient>();
    if (autodiff::any_tape_recording()) autodiff::record_with_variables(op, ins, variables, outputs, attrs);
    if (autodiff::any_accumulator_active())
      autodiff::accumulate_with_variables(op, ins, variables, outputs, attrs);
  }
  return outputs;
}

Block recompute_grad(Block f) {
  TAPEFLOW_REQUIRE(static_cast<bool>(f), InvalidArgumentError, "[RecomputeGrad] the block is empty");
  return [f = std::move(f)](const std::vector<Tensor>& inputs) {
    std::vector<const Tensor*> ins = autodiff::pointers(inputs);
    autodiff::require_defined("RecomputeGrad", ins);
    std::vector<Variable> variables;
    // The forward runs unrecorded (that is the memory saving); backward recomputes it. Not under a
    // trace: the graph gets f's ops but no RecomputeGrad node, so its nodes, replayed where tapes
    // or accumulators see them, must carry the gradient themselves (the trace would put a scope's
    // outputs behind StopGradient).
    std::vector<Tensor> outputs = autodiff::fresh(autodiff::run_watching_variables(
        [&] {
          std::optional<NoRecordingScope> off;
          if (autodiff::t_tracer == nullptr) off.emplace();
          return f(inputs);
        },
        variables));
    if (autodiff::any_tape_recording() || autodiff::any_accumulator_active()) {
      auto attrs = std::make_shared<const autodiff::RecomputeAttrs>(
          autodiff::RecomputeAttrs{f, variables, inputs.size()});
      const autodiff::OpDef& op = autodiff::op_def<autodiff::RecomputeGrad>();
      if (autodiff::any_tape_recording()) autodiff::record_with_variables(op, ins, variables, outputs, attrs);
      if (autodiff::any_accumulator_active())
        autodiff::accumulate_with_variables(op, ins, variables, outputs, attrs);
    }
    return outputs;
  };
}

Block grad_pass_through(Block f) {
  TAPEFLOW_REQUIRE(static_cast<bool>(f), InvalidArgumentError, "[grad_pass_through] the function is empty");
  return [f = std::move(f)](const std::vector<Tensor>& inputs) {
    return custom_gradient(inputs, [&f](const std::vector<Tensor>& in) {
      std::vector<Tensor> outputs;
      {
        // The gradient never looks inside f (it is the identity), so f's ops are not recorded.
        const NoRecordingScope off;
        outputs = f(in);
      }
      autodiff::require_outputs_like_inputs(in, outputs);
      // dx = dy; variables f read get no gradient, as in TensorFlow.
      return CustomGradientResult{std::move(outputs),
                                  [](const std::vector<Tensor>& dys, const std::vector<Variable>& variables) {
                                    Grads grads(dys.begin(), dys.end());
                                    grads.resize(dys.size() + variables.size());
                                    return grads;
                                  }};
    });
  };
}

}  // namespace tapeflow
