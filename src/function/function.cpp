// tf::function's engine: signatures, traces, the graph passes and the three ways a call runs
// (a graph alone; a graph recorded as one op on the tapes; a graph through the dispatch path).

#include "tapeflow/function.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "autodiff/dispatch.h"
#include "autodiff/tracer.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "function/function_state.h"
#include "function/trace.h"
#include "graph/shared_sizes.h"
#include "tapeflow/logging.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/tape.h"

namespace tapeflow {

namespace detail {
void throw_empty_function(std::string_view what) {
  throw FailedPreconditionError(fmt::format("[tf::function] {} has no function to run", what));
}
}  // namespace detail

bool executing_eagerly() { return autodiff::t_tracer == nullptr; }

namespace detail {

std::string describe_key(std::string_view key) {
  const std::size_t arrow = key.rfind("->");
  if (arrow == std::string_view::npos) return std::string(key);
  // A mangled type name holds no '(': the tensors' specs start at the first one after the arrow.
  const std::size_t specs = std::min(key.find('(', arrow), key.size());
  const std::string mangled(key.substr(arrow + 2, specs - arrow - 2));
  std::string out(key.substr(0, arrow));
  if (!mangled.empty()) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    out += " as " + std::string(status == 0 ? demangled : mangled.c_str());
    std::free(demangled);
  }
  if (specs < key.size()) out += " on " + std::string(key.substr(specs));
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

/// Whether a call must go through the dispatch path op by op: forward mode needs each op's JVP,
/// and a call inside another function's trace must show its ops to that trace.
bool ops_must_be_observed() { return autodiff::any_accumulator_active() || autodiff::t_tracer != nullptr; }

using CallResult = std::pair<std::vector<Tensor>, std::shared_ptr<const void>>;

/// Runs `g` once unfused on `inputs` in `mode`, giving every value's shape too. If the run fails,
/// the variables it assigned get their values back before the error goes on: the body then
/// decides at these sizes, traced, as if the graph had never run.
std::vector<Tensor> run_restoring_variables(const graph::Graph& g, const std::string& label,
                                            std::span<const Tensor> inputs, graph::RunMode mode,
                                            std::vector<Shape>& shapes) {
  graph::AssignedVariables before(g, label);
  try {
    return graph::Executor(g, label).run(inputs, mode, &shapes);
  } catch (...) {
    before.restore();
    throw;
  }
}

/// The handles of a call's Variable arguments, as a key suffix: "#12,40".
std::string handles_of(const std::vector<Variable>& vars) {
  std::string s = "#";
  for (std::size_t k = 0; k < vars.size(); ++k) {
    if (k > 0) s += ',';
    s += std::to_string(vars[k].handle_id());
  }
  return s;
}

/// `cf` (the trace of signature `key`) rebound to the call's Variable arguments `vars`: made once
/// per set of variables and kept (FunctionCore::State::rebound); nullptr where it cannot be.
std::shared_ptr<graph::ConcreteFunction> rebound_for(FunctionCore::State& s, const std::string& key,
                                                     const std::shared_ptr<graph::ConcreteFunction>& cf,
                                                     const std::vector<Variable>& vars) {
  const std::string rebound_key = key + handles_of(vars);
  {
    std::lock_guard lock(s.mutex);
    if (auto it = s.rebound.find(rebound_key); it != s.rebound.end() && it->second.from == cf) {
      it->second.last_use = ++s.rebound_uses;
      return it->second.function;
    }
  }
  std::shared_ptr<graph::ConcreteFunction> r = cf->rebound(vars);
  if (r == nullptr) return nullptr;
  std::lock_guard lock(s.mutex);
  s.rebound[rebound_key] = {cf, r, ++s.rebound_uses};
  s.stats.variable_rebinds += 1;
  if (s.rebound.size() > FunctionCore::State::kMaxRebound)
    s.rebound.erase(
        std::ranges::min_element(s.rebound, {}, [](const auto& kv) { return kv.second.last_use; }));
  return r;
}

/// The shared graph entry of a call structure, recorded calls or not.
std::map<std::string, SharedGraph>& shared_graphs(FunctionCore::State& s, bool recorded) {
  return recorded ? s.shared_recorded : s.shared;
}

/// A call at new sizes of its unknown dimensions run by the graph shared across sizes
/// (shared_sizes.h), which is then kept for these sizes; nullopt where there is none, a size is
/// 0 or 1, the sizes lie outside the range the graph was confirmed on (the body traces there, and
/// offer_shared compares), the template ties dims that differ here, or the graph fails at these
/// sizes (then the body decides, traced for them). A recorded call instantiates the differentiable pair and
/// is recorded as a trace's would be; a call whose ops must be observed (forward mode) runs the graph through
/// the dispatch path.
std::optional<CallResult> run_shared(FunctionCore::State& s, const FlatCall& call, const std::string& key,
                                     bool recorded) {
  if (!s.unknown_sizes_at_least_two(call)) return std::nullopt;
  const std::vector<TensorSpec> specs = specs_of(call.tensors);
  const std::vector<std::int64_t> sizes = s.unknown_sizes(specs);
  std::shared_ptr<graph::ConcreteFunction> first;
  std::vector<graph::SizeTemplate> templates;
  bool beyond = false;
  {
    std::lock_guard lock(s.mutex);
    const auto& entries = shared_graphs(s, recorded);
    auto it = entries.find(call.key);
    if (it == entries.end() || it->second.stage != SharedGraph::Stage::kShared) return std::nullopt;
    first = it->second.first;
    templates = it->second.templates;
    beyond = it->second.beyond_confirmed(sizes);
  }
  // Its graphs read the variables of the call that traced it: other ones trace.
  if (!first->bound_to(call.variables)) return std::nullopt;
  const std::vector<const graph::Graph*> traced = SharedGraph::graphs_of(*first, recorded);
  // A destroyed variable is the caller's error, never a reason to run a body that refers to it.
  for (const graph::Graph* g : traced)
    for (std::size_t k = 0; k < g->variables.size(); ++k)
      graph::captured_variable(*g, static_cast<std::int32_t>(k), s.label);
  if (beyond) return std::nullopt;
  std::vector<graph::Graph> graphs;
  std::vector<Tensor> outputs;
  std::shared_ptr<graph::ConcreteFunction> cf;
  try {
    for (std::size_t k = 0; k < traced.size(); ++k) {
      std::optional<graph::Graph> g = graph::instantiate(*traced[k], templates[k], sizes);
      if (!g) return std::nullopt;
      graphs.push_back(*std::move(g));
    }
    if (recorded) {
      graph::TraceResult r = graph::trace_instantiated(*first, std::move(graphs[0]), std::move(graphs[1]),
                                                       call.tensors, s.options.optimize);
      outputs = std::move(r.outputs);
      cf = std::move(r.function);
    } else {
      std::vector<Shape> shapes;
      const graph::RunMode mode = ops_must_be_observed() ? graph::RunMode::kDispatch : graph::RunMode::kFast;
      outputs = run_restoring_variables(graphs[0], s.label, call.tensors, mode, shapes);
      cf = std::make_shared<graph::ConcreteFunction>(
          s.label, graph::resized(std::move(graphs[0]), shapes, call.tensors), s.options.optimize,
          first->structure(), specs);
    }
  } catch (const InvalidArgumentError&) {
    return std::nullopt;
  }
  cf->set_argument_variables(call.variables);
  std::lock_guard lock(s.mutex);
  s.cache[key] = cf;
  s.stats.shared_graph_sizes += 1;
  s.stats.graph_calls += 1;
  return CallResult{std::move(outputs), cf->structure()};
}

/// Why the differentiable pairs of `a` and `b` do not compute their gradients the same way
/// (which sources get one, from which results), or "".
std::string pair_difference(const graph::ConcreteFunction& a, const graph::ConcreteFunction& b) {
  const graph::Differentiable &x = *a.differentiable(), &y = *b.differentiable();
  if (x.num_results != y.num_results || x.cotangent_results != y.cotangent_results ||
      x.source_inputs != y.source_inputs || x.source_variables != y.source_variables ||
      x.gradient_of != y.gradient_of)
    return "their gradients have different sources or results";
  return "";
}

/// Why the trace `cf` at other sizes does not let `e` go on to the next stage (or, shared, stay
/// shared with its confirmed range widened to these sizes), or "" if it does.
std::string unify_with(SharedGraph& e, const graph::ConcreteFunction& cf,
                       const std::vector<std::int64_t>& sizes, bool recorded) {
  const std::vector<const graph::Graph*> firsts = SharedGraph::graphs_of(*e.first, recorded),
                                         theirs = SharedGraph::graphs_of(cf, recorded);
  if (std::string diff = recorded ? pair_difference(*e.first, cf) : ""; !diff.empty())
    return fmt::format("its traces for {} and {} differ: {}", specs_text(e.first->specs()),
                       specs_text(cf.specs()), diff);
  if (e.stage == SharedGraph::Stage::kCandidate) {
    for (std::size_t k = 0; k < sizes.size(); ++k)
      if (sizes[k] == e.first_sizes[k]) return "";  // not a second point for every dim: wait for one
    e.templates.assign(firsts.size(), {});
    for (std::size_t k = 0; k < firsts.size(); ++k) {
      const std::string diff = graph::unify(*firsts[k], e.first_sizes, *theirs[k], sizes, e.templates[k]);
      if (!diff.empty())
        return fmt::format("its graphs for {} and {} differ: {}", specs_text(e.first->specs()),
                           specs_text(cf.specs()), diff);
    }
    e.confirm(e.first_sizes);
    e.confirm(sizes);
    e.stage = e.templates_empty() ? SharedGraph::Stage::kShared : SharedGraph::Stage::kConfirming;
    return "";
  }
  // Confirming, or shared and traced outside its confirmed range: the templates' graphs at these
  // sizes must be this trace's.
  for (std::size_t k = 0; k < firsts.size(); ++k) {
    std::optional<graph::Graph> predicted;
    try {
      predicted = graph::instantiate(*firsts[k], e.templates[k], sizes);
    } catch (const InvalidArgumentError& error) {  // the trace ran: its call must not fail here
      return fmt::format("its graph cannot hold the sizes of {}: {}", specs_text(cf.specs()), error.what());
    }
    if (!predicted)
      return fmt::format("its graph ties unknown dimensions together that {} does not",
                         specs_text(cf.specs()));
    graph::SizeTemplate none;
    const std::string diff = graph::unify(*predicted, sizes, *theirs[k], sizes, none);
    if (!diff.empty())
      return fmt::format("its trace for {} is not what its traces for {} and other sizes predict: {}",
                         specs_text(cf.specs()), specs_text(e.first->specs()), diff);
  }
  e.confirm(sizes);
  e.stage = SharedGraph::Stage::kShared;
  return "";
}

/// Offers a trace at new sizes of the unknown dimensions to the call structure's shared graph
/// (recorded calls have their own: their traces also hold the gradient): the first becomes the
/// candidate, the next at other sizes unifies with it, and a third confirms a graph that holds
/// sizes. A shared graph is offered the traces at sizes outside its confirmed range (run_shared
/// left them to the body), each compared as the third is: no traces of the body show how it
/// computes its graph from the sizes, so sharing is trusted only between the sizes it was seen at.
void offer_shared(FunctionCore::State& s, const FlatCall& call,
                  const std::shared_ptr<graph::ConcreteFunction>& cf, bool recorded) {
  if (!s.options.share_graph_across_sizes || !s.unknown_sizes_at_least_two(call)) return;
  std::lock_guard lock(s.mutex);
  SharedGraph& e = shared_graphs(s, recorded)[call.key];
  std::vector<std::int64_t> sizes = s.unknown_sizes(cf->specs());
  if (e.stage == SharedGraph::Stage::kRefused) return;
  if (e.stage == SharedGraph::Stage::kShared) {
    // Inside the range the shared graph could not run these sizes (it threw, or dims it ties
    // differ here): this trace serves them alone.
    if (!e.beyond_confirmed(sizes)) return;
    s.stats.range_confirmations += 1;
  }
  for (const graph::Graph* g : SharedGraph::graphs_of(*cf, recorded))
    if (e.why_refused = graph::why_not_shareable(*g); !e.why_refused.empty()) break;
  if (e.why_refused.empty() && e.first == nullptr) {
    e.first = cf;
    e.first_sizes = std::move(sizes);
    return;
  }
  if (e.why_refused.empty()) e.why_refused = unify_with(e, *cf, sizes, recorded);
  if (e.why_refused.empty()) return;
  e.stage = SharedGraph::Stage::kRefused;
  e.first = nullptr;
  log(LogLevel::Info, fmt::format("[{}] traces each size of its unknown dimensions{}: {}", s.label,
                                  recorded ? " when a tape records its calls" : "", e.why_refused));
}

}  // namespace

namespace {
std::string label_of(const FunctionOptions& options, const char* where, int line) {
  std::string file = where;
  if (auto slash = file.find_last_of('/'); slash != std::string::npos) file = file.substr(slash + 1);
  return fmt::format("function '{}' ({}:{})", options.name, file, line);
}
}  // namespace

FunctionCore::FunctionCore(FunctionOptions options, const char* file, int line)
    : FunctionCore(options, label_of(options, file, line)) {}

FunctionCore::FunctionCore(FunctionOptions options, std::string label) : state_(std::make_unique<State>()) {
  state_->label = std::move(label);
  state_->options = std::move(options);
}

FunctionCore::~FunctionCore() = default;

const FunctionOptions& FunctionCore::options() const { return state_->options; }

FunctionStats FunctionCore::stats() const {
  std::lock_guard lock(state_->mutex);
  FunctionStats stats = state_->stats;
  for (const auto& [key, cf] : state_->cache)
    if (const graph::Differentiable* d = cf->differentiable())
      stats.pruned_backward_evictions += static_cast<int>(d->pruned_evictions());
  return stats;
}

std::vector<std::vector<TensorSpec>> FunctionCore::traced_signatures() const {
  std::lock_guard lock(state_->mutex);
  std::vector<std::vector<TensorSpec>> out;
  for (const auto& [key, cf] : state_->cache) out.push_back(cf->specs());
  return out;
}

std::string FunctionCore::graph_text() const {
  std::lock_guard lock(state_->mutex);
  return state_->latest_graph;
}

std::pair<std::vector<Tensor>, std::shared_ptr<const void>> FunctionCore::call(const FlatCall& call,
                                                                               const Body& unchecked_body) {
  State& s = *state_;
  const auto body = [&](std::vector<Tensor> fresh) {
    auto out = unchecked_body(std::move(fresh));
    graph::check_defined(s.label, "its body", out.first);
    return out;
  };
  bool specialization = false;
  std::string key = s.key_of(call, specialization);
  std::shared_ptr<graph::ConcreteFunction> cf;
  {
    std::lock_guard lock(s.mutex);
    if (auto it = s.cache.find(key); it != s.cache.end()) cf = it->second;
  }
  if (cf != nullptr && !cf->bound_to(call.variables)) {
    // Other variables of the kinds the trace was made for: its graph, rebound to them.
    if (std::shared_ptr<graph::ConcreteFunction> r = rebound_for(s, key, cf, call.variables)) {
      cf = std::move(r);
    } else {  // a graph that cannot be rebound: these variables get a trace of their own
      key += handles_of(call.variables);
      std::lock_guard lock(s.mutex);
      auto it = s.cache.find(key);
      cf = it == s.cache.end() ? nullptr : it->second;
    }
  }
  const bool recorded = autodiff::any_tape_recording() && !ops_must_be_observed();
  if (cf == nullptr && autodiff::t_tracer != nullptr) {
    // Inside another function's trace: the body's ops belong to that graph (inlined, as
    // TensorFlow inlines nested functions).
    return body(call.tensors);
  }
  if (cf != nullptr && !cf->traced_graph().opaque_gradient.empty() && ops_must_be_observed()) {
    // Replaying the graph for an enclosing trace or a forward accumulator would show them the ops
    // inside a custom_gradient without its gradient function: the body runs again, as it would
    // eagerly (its C++ side effects with it), so they see the custom gradient.
    return body(call.tensors);
  }
  const bool needs_trace = cf == nullptr || (recorded && cf->differentiable() == nullptr);
  if (needs_trace && specialization && s.options.share_graph_across_sizes)
    if (std::optional<CallResult> out = run_shared(s, call, key, recorded)) return *std::move(out);
  if (needs_trace) {
    const auto start = Clock::now();
    graph::TraceResult traced = graph::trace(s.label, s.options.optimize, call.tensors, body, recorded);
    traced.function->set_argument_variables(call.variables);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (specialization) offer_shared(s, call, traced.function, recorded);
    std::lock_guard lock(s.mutex);
    const bool new_size = specialization && cf == nullptr && !s.cache.empty();
    s.cache[key] = traced.function;
    s.stats.traces += 1;
    s.stats.specializations += new_size ? 1 : 0;
    s.stats.retrace_ms += s.stats.traces > 1 ? ms : 0;
    s.stats.trace_ms += ms;
    s.stats.nodes = traced.function->graph().nodes.size();
    s.stats.nodes_traced = traced.nodes_traced;
    s.stats.planned_peak_bytes = traced.function->planned_peak_bytes();
    s.latest_graph = traced.function->graph().to_string();
    const int signature_traces = s.stats.traces - s.stats.specializations;
    if (!new_size && signature_traces >= s.next_warning) {
      s.next_warning *= 2;
      log(LogLevel::Warning,
          fmt::format(
              "[{}] has been traced {} times, the last time for the signature {}. Tracing is expensive: pass "
              "tensors rather than C++ values that change between calls, keep argument shapes fixed, or "
              "give FunctionOptions::input_signature with unknown (-1) dimensions",
              s.label, signature_traces, describe_key(key)));
    }
    return {std::move(traced.outputs), traced.function->structure()};
  }
  {
    std::lock_guard lock(s.mutex);
    s.stats.graph_calls += 1;
  }
  std::vector<Tensor> outputs = recorded                 ? cf->call_recorded(call.tensors)
                                : ops_must_be_observed() ? cf->call_observed(call.tensors)
                                                         : cf->call_fast(call.tensors);
  return {std::move(outputs), cf->structure()};
}

}  // namespace detail
}  // namespace tapeflow
