#include "function/concrete.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>

#include "autodiff/dispatch.h"
#include "autodiff/tape_access.h"
#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "function/function_state.h"
#include "function/trace.h"
#include "graph/check.h"
#include "graph/fusion.h"
#include "graph/optimize.h"
#include "graph/recompute.h"
#include "graph/shared_sizes.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/tape.h"

namespace tapeflow::graph {
namespace {

/// What a PartitionedCall record keeps: the function's gradient graphs and the values they read.
struct CallAttrs {
  std::shared_ptr<const Differentiable> d;
  std::vector<Tensor> saved;
};

/// The gradient of a recorded call: the backward graph on the cotangents and the saved values.
/// Where the gradient's own ops must be seen (a tape differentiating it again, forward mode, a
/// trace), the saved values would be cut off from the inputs, since the forward ran unrecorded:
/// the unfused forward runs again through the dispatch path on the record's inputs, then the
/// unfused backward; otherwise the fused backward runs alone on the saved values.
Grads call_gradient(const GradContext& c) {
  const CallAttrs& a = c.attrs<CallAttrs>();
  const Differentiable& d = *a.d;
  const std::size_t tensor_inputs = static_cast<std::size_t>(c.num_inputs()) - d.source_variables.size();
  const bool observed =
      autodiff::any_tape_recording() || autodiff::any_accumulator_active() || autodiff::t_tracer != nullptr;
  // The input slot of each backward output, and whether any tape needs it.
  std::vector<std::size_t> slots;
  std::vector<bool> needed;
  for (std::size_t src : d.gradient_of) {
    slots.push_back(src < d.source_inputs.size() ? d.source_inputs[src]
                                                 : tensor_inputs + (src - d.source_inputs.size()));
    needed.push_back(c.needs_input_grad(static_cast<int>(slots.back())));
  }
  std::vector<Tensor> in;
  for (std::size_t r : d.cotangent_results) in.push_back(c.dy(static_cast<int>(r)));
  if (observed) {
    std::vector<Tensor> args;
    for (std::size_t i = 0; i < tensor_inputs; ++i) args.push_back(c.input(static_cast<int>(i)));
    std::vector<Tensor> all = d.forward_plain->run(args, RunMode::kDispatch);
    in.insert(in.end(), all.begin() + static_cast<std::ptrdiff_t>(d.num_results), all.end());
  } else {
    in.insert(in.end(), a.saved.begin(), a.saved.end());
  }
  Grads out(static_cast<std::size_t>(c.num_inputs()));
  if (observed || std::ranges::all_of(needed, std::identity{})) {
    std::vector<Tensor> g =
        observed ? d.backward_plain->run(in, RunMode::kDispatch) : d.backward->run(in, RunMode::kFast);
    for (std::size_t k = 0; k < g.size(); ++k) out[slots[k]] = std::move(g[k]);
    return out;
  }
  std::vector<Tensor> g = d.backward_for(needed)->run(in, RunMode::kFast);  // the needed ones, in order
  for (std::size_t k = 0, j = 0; k < needed.size(); ++k)
    if (needed[k]) out[slots[k]] = std::move(g[j++]);
  return out;
}

const autodiff::OpDef& call_op() {
  static const autodiff::OpDef& op = []() -> const autodiff::OpDef& {
    // The inputs are kept: a gradient that is itself differentiated recomputes the forward.
    autodiff::registry().define("PartitionedCall", autodiff::kSavesInputs, &call_gradient);
    autodiff::OpDef& def = autodiff::registry().get("PartitionedCall");
    def.graph_op = true;
    def.bfloat16 = autodiff::BFloat16Support::kNative;  // its ops check their own inputs
    return def;
  }();
  return op;
}

std::vector<const Tensor*> pointers(std::span<const Tensor> ts) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : ts) p.push_back(&t);
  return p;
}

/// The backward half of a differentiable trace: runs the tape's backward pass under a tracer with
/// placeholder cotangents, so the ops the registered gradients run become the backward graph. A
/// value that graph reads from the forward is a *saved* value: it becomes a backward input and a
/// forward output (unless it is cheap to recompute, recompute.h).
struct BackwardTrace {
  Graph graph;
  SavedValues saved;
};

BackwardTrace trace_backward(GradientTape& tape, const GraphTracer& forward, std::span<const Tensor> results,
                             std::span<const Source> sources, Differentiable& d) {
  GraphTracer tracer;
  std::vector<Tensor> targets, cotangents;
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!is_floating(results[r].dtype())) continue;
    d.cotangent_results.push_back(r);
    targets.push_back(results[r]);
    cotangents.push_back(tracer.input(ones_like(results[r])));
  }
  std::vector<Gradient> grads;
  if (!targets.empty())
    grads =
        tape.gradient_flat(Targets(nest::flatten(targets)), sources, cotangents, UnconnectedGradients::None);
  std::vector<Tensor> outputs;
  for (std::size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k]) continue;
    outputs.push_back(*grads[k]);
    d.gradient_of.push_back(k);
  }
  BackwardTrace b{tracer.finish(outputs), {}};
  // Values of the forward that the gradient read become inputs, after the cotangents.
  std::vector<std::pair<ValueId, Tensor>> constants;
  for (auto& [v, t] : b.graph.constants) {
    const ValueId fv = forward.find(t.id());
    if (fv < 0) {
      constants.emplace_back(v, t);
      continue;
    }
    b.graph.inputs.push_back(v);
    b.saved.forward.push_back(fv);
    b.saved.backward_inputs.push_back(v);
    b.saved.tensors.push_back(t);
  }
  b.graph.constants = std::move(constants);
  return b;
}

/// The forward graph `g` with the saved values as extra outputs.
Graph saving(Graph g, const SavedValues& saved) {
  g.outputs.insert(g.outputs.end(), saved.forward.begin(), saved.forward.end());
  return g;
}

/// Makes the executors of `d` from a differentiable trace: the forward graph `g` (traced on
/// `args`) and its backward `b`. The unfused pair, which the dispatch path runs for higher orders
/// and forward mode, saves every value the gradient read, so derivatives through it are eager's
/// bit for bit; the fast pair recomputes the cheap ones (recompute.h) and is fused. Returns the
/// trace's values of what the fast forward saves.
std::vector<Tensor> build_executors(Differentiable& d, const Graph& g, std::span<const Tensor> args,
                                    BackwardTrace b, bool optimize, const std::string& label) {
  const std::string gradient_label = label + " gradient";
  d.optimize = optimize;
  if (!optimize) {
    d.forward_plain = std::make_unique<Executor>(saving(g, b.saved), label);
    d.forward = std::make_unique<Executor>(d.forward_plain->graph(), label);
    d.backward_plain = std::make_unique<Executor>(b.graph, gradient_label);
    d.backward = std::make_unique<Executor>(b.graph, gradient_label);
    d.backward_unfused = std::move(b.graph);
    return std::move(b.saved.tensors);
  }
  d.forward_plain = std::make_unique<Executor>(optimized(saving(g, b.saved), false), label);
  d.backward_plain = std::make_unique<Executor>(optimized(b.graph, false), gradient_label);
  recompute_cheap_saved_values(g, args, b.graph, d.cotangent_results.size(), b.saved);
  if (checking_after_passes()) {
    check_after(g, "the pass recompute_cheap_saved_values (in the forward graph)");
    check_after(b.graph, "the pass recompute_cheap_saved_values (in the backward graph)");
  }
  d.forward = std::make_unique<Executor>(optimized(saving(g, b.saved), true), label);
  d.backward_unfused = optimized(std::move(b.graph), false);
  d.backward = std::make_unique<Executor>(optimized(d.backward_unfused, true), gradient_label);
  return std::move(b.saved.tensors);
}

}  // namespace

std::shared_ptr<const Executor> Differentiable::backward_for(const std::vector<bool>& needed) const {
  std::lock_guard lock(pruned_mutex_);
  Pruned& e = pruned_[needed];
  e.last_use = ++pruned_uses_;
  if (e.executor == nullptr) {
    Graph g = backward_unfused;
    std::vector<ValueId> outputs;
    for (std::size_t k = 0; k < needed.size(); ++k)
      if (needed[k]) outputs.push_back(g.outputs[k]);
    g.outputs = std::move(outputs);
    if (optimize)
      g = optimized(std::move(g), true);
    else
      eliminate_dead_code(g);
    e.executor = std::make_shared<const Executor>(std::move(g), backward->name());
  }
  std::shared_ptr<const Executor> found = e.executor;
  if (pruned_.size() > kMaxPrunedBackwards) {
    auto oldest = std::ranges::min_element(pruned_, {}, [](const auto& kv) { return kv.second.last_use; });
    pruned_.erase(oldest);
    ++pruned_evictions_;
  }
  return found;
}

ConcreteFunction::ConcreteFunction(std::string label, Graph traced, bool optimize,
                                   std::shared_ptr<const void> structure, std::vector<TensorSpec> specs)
    : label_(std::move(label)),
      traced_(std::move(traced)),
      structure_(std::move(structure)),
      specs_(std::move(specs)) {
  Graph plain = optimize ? optimized(traced_, /*fuse=*/false) : traced_;
  fast_ = std::make_unique<Executor>(optimize ? optimized(traced_, /*fuse=*/true) : plain, label_);
  plain_ = std::make_unique<Executor>(std::move(plain), label_);
  // A body's unused values (a gradient it did not return) are not part of what it computes.
  eliminate_dead_code(traced_);
}

namespace {

/// Whether two handles name one variable, destroyed or not.
bool same_variable(const std::weak_ptr<detail::VariableState>& a,
                   const std::weak_ptr<detail::VariableState>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

/// `g` reading and assigning `to[k]` wherever it read and assigned `from[k]`.
Graph rebind(Graph g, std::span<const std::weak_ptr<detail::VariableState>> from,
             std::span<const Variable> to) {
  for (CapturedVariable& c : g.variables)
    for (std::size_t k = 0; k < from.size(); ++k)
      if (same_variable(c.state, from[k])) {
        c.state = detail::VariableHandle::weak(to[k]);
        c.name = to[k].name();
        break;
      }
  return g;
}

/// Whether an op of `g` changes state itself (OpDef::stateful): a tf::cond or tf::while_loop whose
/// branches assign variables, which their branch graphs hold; or a collective, which holds none
/// but is treated alike (a distributed step traces once per set of variables).
bool has_assigning_branches(const Graph& g) {
  return std::ranges::any_of(g.nodes,
                             [](const Node& n) { return n.kind == NodeKind::kOp && n.op->stateful; });
}

}  // namespace

void ConcreteFunction::set_argument_variables(const std::vector<Variable>& vars) {
  argument_variables_.clear();
  for (const Variable& v : vars) argument_variables_.push_back(detail::VariableHandle::weak(v));
}

bool ConcreteFunction::bound_to(const std::vector<Variable>& vars) const {
  if (vars.size() != argument_variables_.size()) return false;
  for (std::size_t k = 0; k < vars.size(); ++k)
    if (!same_variable(argument_variables_[k], detail::VariableHandle::weak(vars[k]))) return false;
  return true;
}

std::shared_ptr<ConcreteFunction> ConcreteFunction::rebound(const std::vector<Variable>& vars) const {
  if (has_assigning_branches(traced_) || vars.size() != argument_variables_.size()) return nullptr;
  const auto& from = argument_variables_;
  const auto executor = [&](const std::unique_ptr<Executor>& e) {
    return std::make_unique<Executor>(rebind(e->graph(), from, vars), e->name());
  };
  std::shared_ptr<ConcreteFunction> r(new ConcreteFunction());
  r->label_ = label_;
  r->traced_ = rebind(traced_, from, vars);
  r->fast_ = executor(fast_);
  r->plain_ = executor(plain_);
  r->structure_ = structure_;
  r->specs_ = specs_;
  r->set_argument_variables(vars);
  if (const Differentiable* d = differentiable_.get()) {
    auto p = std::make_unique<Differentiable>();
    p->forward = executor(d->forward);
    p->forward_plain = executor(d->forward_plain);
    p->num_results = d->num_results;
    p->backward = executor(d->backward);
    p->backward_plain = executor(d->backward_plain);
    p->cotangent_results = d->cotangent_results;
    p->source_inputs = d->source_inputs;
    p->source_variables = d->source_variables;
    p->gradient_of = d->gradient_of;
    p->traced_forward = rebind(d->traced_forward, from, vars);
    p->traced_backward = rebind(d->traced_backward, from, vars);
    p->backward_unfused = rebind(d->backward_unfused, from, vars);
    p->optimize = d->optimize;
    r->differentiable_ = std::move(p);
  }
  return r;
}

std::vector<Tensor> ConcreteFunction::call_fast(std::span<const Tensor> inputs) const {
  return fast_->run(inputs, RunMode::kFast);
}

std::vector<Tensor> ConcreteFunction::call_observed(std::span<const Tensor> inputs) const {
  return plain_->run(inputs, RunMode::kDispatch);
}

std::vector<Tensor> ConcreteFunction::call_recorded(std::span<const Tensor> inputs) const {
  const Differentiable& d = *differentiable_;
  std::vector<Tensor> all;
  {
    // The forward's own ops are not the tapes' business: the call is one record.
    const NoRecordingScope off;
    all = d.forward->run(inputs, RunMode::kFast);
  }
  std::vector<Tensor> saved(std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(d.num_results)),
                            std::make_move_iterator(all.end()));
  all.resize(d.num_results);
  return record(inputs, std::move(all), std::move(saved));
}

std::vector<Tensor> ConcreteFunction::record(std::span<const Tensor> inputs, std::vector<Tensor> results,
                                             std::vector<Tensor> saved) const {
  const Differentiable& d = *differentiable_;
  std::vector<Variable> variables;
  for (std::int32_t v : d.source_variables)
    variables.push_back(captured_variable(d.forward->graph(), v, label_));
  // Fresh ids: each result is produced by the call's record, even one that is an argument.
  for (Tensor& r : results) r = detail::share_with_shape(r, r.shape());
  auto attrs = std::make_shared<const CallAttrs>(CallAttrs{differentiable_, std::move(saved)});
  autodiff::record_with_variables(call_op(), pointers(inputs), variables, results, attrs);
  return results;
}

TraceResult trace(const std::string& label, bool optimize, std::span<const Tensor> args,
                  const detail::FunctionCore::Body& body, bool differentiable) {
  // A differentiable trace hides the tapes recording outside: they get one record for the call.
  std::optional<NoRecordingScope> hide_outer;
  if (differentiable) hide_outer.emplace();
  GraphTracer tracer;
  std::vector<Tensor> fresh;
  for (const Tensor& a : args) fresh.push_back(tracer.input(a));
  std::optional<GradientTape> tape;
  std::vector<Source> sources;
  auto d = std::make_unique<Differentiable>();
  if (differentiable) {
    tape.emplace(TapeOptions{.persistent = true});
    // Every floating variable the body reads is a source, not only the trainable ones: a tape
    // recording a call may watch a non-trainable one. Which variables a recorded call gives a
    // gradient is then each tape's own watch set (record_with_variables), so the pair of graphs
    // cached for the signature serves every tape.
    detail::TapeAccess::state(*tape)->watches_untrainable_reads = true;
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      if (!is_floating(fresh[i].dtype())) continue;
      tape->watch(fresh[i]);
      sources.emplace_back(fresh[i]);
      d->source_inputs.push_back(i);
    }
  }
  auto [results, structure] = body(fresh);
  BackwardTrace b;
  if (differentiable) {
    // The variables the body read are sources too (the tape watched them on read).
    std::vector<Variable> variables = tape->watched_variables();
    for (const Variable& v : variables) sources.emplace_back(v);
    b = trace_backward(*tape, tracer, results, sources, *d);
    tape.reset();
  }
  Graph g = tracer.finish(results);
  TraceResult out;
  out.nodes_traced = g.nodes.size();
  std::vector<Tensor> saved;
  if (differentiable) {
    d->num_results = results.size();
    d->traced_forward = saving(g, b.saved);
    eliminate_dead_code(d->traced_forward);
    d->traced_backward = b.graph;
    for (const Source& s : sources) {
      if (!s.is_variable()) continue;
      // The variable's index in the forward graph: the tracer captured every variable read.
      for (std::size_t k = 0; k < g.variables.size(); ++k)
        if (detail::VariableHandle::lock(g.variables[k].state) == s.variable())
          d->source_variables.push_back(static_cast<std::int32_t>(k));
    }
    saved = build_executors(*d, g, fresh, std::move(b), optimize, label);
  }
  out.function = std::make_shared<ConcreteFunction>(label, std::move(g), optimize, std::move(structure),
                                                    detail::specs_of(args));
  if (differentiable) {
    out.function->set_differentiable(std::move(d));
    hide_outer.reset();
    out.outputs = out.function->record(args, std::move(results), std::move(saved));
  } else {
    out.outputs = std::move(results);
  }
  return out;
}

TraceResult trace_instantiated(const ConcreteFunction& first, Graph forward, Graph backward,
                               std::span<const Tensor> args, bool optimize) {
  const Differentiable& like = *first.differentiable();
  const std::string& label = first.label();
  const auto results_end = static_cast<std::ptrdiff_t>(like.num_results);
  const auto cotangents_end = static_cast<std::ptrdiff_t>(like.cotangent_results.size());
  std::vector<Tensor> all, backward_args;
  AssignedVariables before(forward, label);
  try {
    const NoRecordingScope off;  // the tapes get one record for the call
    std::vector<Shape> shapes;
    all = Executor(forward, label).run(args, RunMode::kFast, &shapes);
    forward = resized(std::move(forward), shapes, args);
    for (std::size_t r : like.cotangent_results) backward_args.push_back(ones_like(all[r]));
    backward_args.insert(backward_args.end(), all.begin() + results_end, all.end());
    Executor(backward, label + " gradient").run(backward_args, RunMode::kFast, &shapes);
    backward = resized(std::move(backward), shapes, backward_args);
  } catch (...) {
    before.restore();
    throw;
  }
  auto d = std::make_unique<Differentiable>();
  d->num_results = like.num_results;
  d->cotangent_results = like.cotangent_results;
  d->source_inputs = like.source_inputs;
  d->source_variables = like.source_variables;
  d->gradient_of = like.gradient_of;
  BackwardTrace b;
  b.saved.forward.assign(forward.outputs.begin() + results_end, forward.outputs.end());
  b.saved.backward_inputs.assign(backward.inputs.begin() + cotangents_end, backward.inputs.end());
  b.saved.tensors.assign(all.begin() + results_end, all.end());
  b.graph = std::move(backward);
  forward.outputs.resize(like.num_results);
  all.resize(like.num_results);
  std::vector<Tensor> saved = build_executors(*d, forward, args, std::move(b), optimize, label);
  TraceResult out;
  out.function = std::make_shared<ConcreteFunction>(label, std::move(forward), optimize, first.structure(),
                                                    detail::specs_of(args));
  out.function->set_differentiable(std::move(d));
  out.outputs = out.function->record(args, std::move(all), std::move(saved));
  return out;
}

}  // namespace tapeflow::graph
