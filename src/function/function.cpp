// tf::function's engine: signatures, traces, the graph passes and the three ways a call runs
// (a graph alone; a graph recorded as one op on the tapes; a graph through the dispatch path).

#include "tapeflow/function.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <mutex>

#include "autodiff/dispatch.h"
#include "autodiff/tracer.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "function/function_state.h"
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
  if (cf == nullptr || (recorded && cf->differentiable() == nullptr)) {
    const auto start = Clock::now();
    graph::TraceResult traced = graph::trace(s.label, s.options.optimize, call.tensors, body, recorded);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
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
