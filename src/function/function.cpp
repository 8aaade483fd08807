// tf::function's engine: signatures, traces, the graph passes and the three ways a call runs
// (a graph alone; a graph recorded as one op on the tapes; a graph through the dispatch path).

#include "tapeflow/function.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>

#include "autodiff/dispatch.h"
#include "autodiff/tracer.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "function/function_state.h"
#include "function/shared_sizes.h"
#include "function/trace.h"
#include "tapeflow/logging.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/tape.h"

namespace tapeflow {

bool executing_eagerly() { return autodiff::t_tracer == nullptr; }

TensorSpec TensorSpec::of(const Tensor& t) {
  TensorSpec s;
  s.dims.assign(t.shape().dims().begin(), t.shape().dims().end());
  s.dtype = t.dtype();
  return s;
}

bool TensorSpec::matches(const Tensor& t) const {
  if (!t.defined() || t.dtype() != dtype || t.rank() != static_cast<int>(dims.size())) return false;
  for (int i = 0; i < t.rank(); ++i)
    if (dims[static_cast<std::size_t>(i)] >= 0 && dims[static_cast<std::size_t>(i)] != t.shape()[i])
      return false;
  return true;
}

std::string TensorSpec::to_string() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (std::size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? "?" : std::to_string(dims[i]));
  return s + "]";
}

namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

/// Whether a call must go through the dispatch path op by op: forward mode needs each op's JVP,
/// and a call inside another function's trace must show its ops to that trace.
bool ops_must_be_observed() { return autodiff::any_accumulator_active() || autodiff::t_tracer != nullptr; }

using CallResult = std::pair<std::vector<Tensor>, std::shared_ptr<const void>>;

/// A call at new sizes of its unknown dimensions run by the graph shared across sizes
/// (shared_sizes.h), which is then kept for these sizes; nullopt where there is none, a size is
/// 0 or 1, or the graph fails at these sizes (then the body decides, traced for them: the graph
/// changes no state, so the failed run left none behind).
std::optional<CallResult> run_shared(FunctionCore::State& s, const FlatCall& call, const std::string& key) {
  std::shared_ptr<graph::ConcreteFunction> first;
  {
    std::lock_guard lock(s.mutex);
    auto it = s.shared.find(call.key);
    if (it == s.shared.end() || !it->second.shared) return std::nullopt;
    first = it->second.first;
  }
  if (!s.unknown_sizes_at_least_two(call)) return std::nullopt;
  const graph::Graph& g = first->unfused_graph();
  // A destroyed variable is the caller's error, never a reason to run a body that refers to it.
  for (std::size_t k = 0; k < g.variables.size(); ++k)
    graph::captured_variable(g, static_cast<std::int32_t>(k), s.label);
  std::vector<Shape> shapes;
  std::vector<Tensor> outputs;
  try {
    outputs = first->call_unfused(call.tensors, shapes);
  } catch (const InvalidArgumentError&) {
    return std::nullopt;
  }
  auto cf = std::make_shared<graph::ConcreteFunction>(s.label, graph::resized(g, shapes, call.tensors),
                                                      s.options.optimize, first->structure(),
                                                      specs_of(call.tensors));
  std::lock_guard lock(s.mutex);
  s.cache[key] = cf;
  s.stats.shared_graph_sizes += 1;
  s.stats.graph_calls += 1;
  return CallResult{std::move(outputs), cf->structure()};
}

/// Offers a trace at new sizes of the unknown dimensions to the call structure's shared graph:
/// the first becomes the candidate, the next at other sizes confirms or refuses it.
void offer_shared(FunctionCore::State& s, const FlatCall& call,
                  const std::shared_ptr<graph::ConcreteFunction>& cf) {
  if (!s.options.share_graph_across_sizes || !s.unknown_sizes_at_least_two(call)) return;
  std::lock_guard lock(s.mutex);
  SharedGraph& e = s.shared[call.key];
  if (e.shared || e.refused) return;
  e.why_refused = graph::why_not_shareable(cf->unfused_graph());
  if (e.why_refused.empty() && e.first == nullptr) {
    e.first = cf;
    return;
  }
  if (e.why_refused.empty() && !s.every_unknown_size_differs(e.first->specs(), cf->specs())) return;
  if (e.why_refused.empty()) {
    const std::string diff = graph::first_difference(e.first->unfused_graph(), cf->unfused_graph());
    if (diff.empty()) {
      e.shared = true;
      return;
    }
    e.why_refused = fmt::format("its graphs for {} and {} differ: {}", specs_text(e.first->specs()),
                                specs_text(cf->specs()), diff);
  }
  e.refused = true;
  e.first = nullptr;
  log(LogLevel::Info,
      fmt::format("[{}] traces each size of its unknown dimensions: {}", s.label, e.why_refused));
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
  return state_->stats;
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
                                                                               const Body& body) {
  State& s = *state_;
  bool specialization = false;
  const std::string key = s.key_of(call, specialization);
  std::shared_ptr<graph::ConcreteFunction> cf;
  {
    std::lock_guard lock(s.mutex);
    if (auto it = s.cache.find(key); it != s.cache.end()) cf = it->second;
  }
  const bool recorded = autodiff::any_tape_recording() && !ops_must_be_observed();
  if (cf == nullptr && autodiff::t_tracer != nullptr) {
    // Inside another function's trace: the body's ops belong to that graph (inlined, as
    // TensorFlow inlines nested functions).
    return body(call.tensors);
  }
  if (cf == nullptr && specialization && !recorded && !ops_must_be_observed() &&
      s.options.share_graph_across_sizes)
    if (std::optional<CallResult> out = run_shared(s, call, key)) return *std::move(out);
  if (cf == nullptr || (recorded && cf->differentiable() == nullptr)) {
    const auto start = Clock::now();
    graph::TraceResult traced = graph::trace(s.label, s.options.optimize, call.tensors, body, recorded);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (specialization) offer_shared(s, call, traced.function);
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
              s.label, signature_traces, key));
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
