// save_function and load_function: a traced graph with its variables' values as a file
// (serialize.h), and a loaded graph as the body of a FunctionCore, so a loaded function is traced,
// optimised, differentiated and nested exactly like one built from C++.

#include <fmt/format.h>

#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "function/function_state.h"
#include "graph/serialize.h"

namespace tapeflow {
namespace {

bool matches(const std::vector<TensorSpec>& signature, const std::vector<TensorSpec>& traced) {
  if (signature.size() != traced.size()) return false;
  for (std::size_t i = 0; i < traced.size(); ++i) {
    const TensorSpec &want = signature[i], &have = traced[i];
    if (want.dtype != have.dtype || want.dims.size() != have.dims.size()) return false;
    for (std::size_t d = 0; d < want.dims.size(); ++d)
      if (want.dims[d] >= 0 && want.dims[d] != have.dims[d]) return false;
  }
  return true;
}

bool has_unknown_dims(const std::vector<TensorSpec>& signature) {
  for (const TensorSpec& spec : signature)
    for (std::int64_t d : spec.dims)
      if (d < 0) return true;
  return false;
}

/// What a file holds: a trace, and where its graph holds sizes of the unknown dimensions.
struct GraphToSave {
  std::shared_ptr<graph::ConcreteFunction> function;
  graph::SizeTemplate size_template;
};

/// The call key (FlatCall::key) of the cache entry `key` holding `c`: the key without its specs.
std::string_view call_key_of(const std::string& key, const graph::ConcreteFunction& c) {
  return std::string_view(key).substr(0, key.size() - detail::specs_text(c.specs()).size());
}

/// The one candidate for saving, or InvalidArgumentError listing them where calls with other
/// non-tensor arguments (or C++ types) traced for the signature too.
const GraphToSave& only_one(const std::vector<std::pair<std::string, GraphToSave>>& candidates,
                            const detail::FunctionCore::State& s, const std::vector<TensorSpec>& signature) {
  if (candidates.size() > 1) {
    std::string traces;
    for (const auto& [key, c] : candidates) traces += fmt::format("\n  {}", detail::describe_key(key));
    throw InvalidArgumentError(fmt::format(
        "[save_function] {} has {} traces for the signature {}, for calls with different non-tensor "
        "arguments:{}\nPass the arguments of the call whose trace to save, each tensor as its "
        "TensorSpec: save_function(fn, path, args...)",
        s.label, candidates.size(), detail::specs_text(signature), traces));
  }
  return candidates.front().second;
}

/// The graph to save for `signature` and, if given, the call key (FlatCall::key) of the call that
/// traced it: with unknown dimensions, the graph `fn` shares across their sizes; else the trace for
/// exactly these shapes. FailedPreconditionError says what to call first; InvalidArgumentError
/// lists the traces where calls with different non-tensor arguments match and no call key is given.
GraphToSave graph_to_save(const detail::FunctionCore::State& s, const std::vector<TensorSpec>& signature,
                          const std::optional<std::string>& call_key) {
  for (const TensorSpec& spec : signature)
    for (std::int64_t d : spec.dims)
      TAPEFLOW_REQUIRE(
          d >= -1, InvalidArgumentError,
          "[save_function] {}: the signature {} has dimension {}; a dimension is a size (>= 0) or "
          "unknown (-1)",
          s.label, detail::specs_text(signature), d);
  const bool unknown = has_unknown_dims(signature);
  std::string traced, refused;
  std::lock_guard lock(s.mutex);
  for (const auto& [key, c] : s.cache)
    traced += (traced.empty() ? "" : ", ") + detail::specs_text(c->specs());
  if (traced.empty()) traced = "none";
  // Calls with other non-tensor arguments: when the caller named its call, not this one's.
  const auto other_call = [&](std::string_view key) { return call_key && key != *call_key; };
  // The shared graph was checked across the sizes of the function's own unknown dimensions.
  // With `all`, also every dimension the function declared unknown is unknown in `signature`.
  auto declared_unknown = [&](bool all) {
    if (!s.options.input_signature || s.options.input_signature->size() != signature.size()) return false;
    for (std::size_t i = 0; i < signature.size(); ++i)
      for (std::size_t d = 0; d < signature[i].dims.size(); ++d) {
        const bool theirs =
            d < (*s.options.input_signature)[i].dims.size() && (*s.options.input_signature)[i].dims[d] < 0;
        if ((signature[i].dims[d] < 0 && !theirs) || (all && theirs && signature[i].dims[d] >= 0))
          return false;
      }
    return true;
  };
  if (unknown) {
    std::vector<std::pair<std::string, GraphToSave>> shared;
    for (const auto& [key, e] : s.shared) {
      if (other_call(key)) continue;
      if (e.stage != detail::SharedGraph::Stage::kShared || !matches(signature, e.first->specs())) {
        if (e.stage == detail::SharedGraph::Stage::kRefused) refused += "; " + e.why_refused;
        continue;
      }
      const graph::SizeTemplate& size_template = e.templates.front();
      if (size_template.empty() && declared_unknown(false)) {
        shared.emplace_back(key, GraphToSave{e.first, {}});
        continue;
      }
      // The template's terms name the function's unknown dimensions: the file must keep them all.
      if (!size_template.empty() && declared_unknown(true)) {
        shared.emplace_back(key, GraphToSave{e.first, size_template});
        continue;
      }
      if (!size_template.empty())
        refused +=
            "; its graph holds sizes of the unknown dimensions, so a file must leave all of them unknown";
    }
    if (!shared.empty()) return only_one(shared, s, signature);
    throw FailedPreconditionError(fmt::format(
        "[save_function] {} has no graph shared across the sizes of the unknown dimensions of {} "
        "(traced: {}{}). Give the function an input_signature with those dimensions unknown and call it "
        "at two different sizes of each (at least 2), so that tapeflow can check that its graph does not "
        "depend on them, or save it for concrete sizes: saving does not run the body",
        s.label, detail::specs_text(signature), traced, refused));
  }
  std::vector<std::pair<std::string, GraphToSave>> exact;
  for (const auto& [key, c] : s.cache)
    if (matches(signature, c->specs()) && !other_call(call_key_of(key, *c)))
      exact.emplace_back(key, GraphToSave{c, {}});
  if (!exact.empty()) return only_one(exact, s, signature);
  throw FailedPreconditionError(
      fmt::format("[save_function] {} has no trace for the signature {}{} (traced: {}); call it once with "
                  "matching arguments before saving it: saving does not run the body",
                  s.label, detail::specs_text(signature),
                  call_key ? " and the arguments " + detail::describe_key(*call_key) : "", traced));
}

}  // namespace

void save_function(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                   const std::filesystem::path& path) {
  detail::save_trace(fn, signature, path, std::nullopt);
}

void detail::save_trace(const FunctionCore& fn, const std::vector<TensorSpec>& signature,
                        const std::filesystem::path& path, const std::optional<std::string>& call_key,
                        const std::vector<Variable>& variables) {
  const FunctionCore::State& s = *fn.state();
  GraphToSave saved = graph_to_save(s, signature, call_key);
  if (call_key && !variables.empty() && !saved.function->bound_to(variables)) {
    // The trace of another call with variables of these kinds: its graph, on the variables given.
    std::shared_ptr<graph::ConcreteFunction> r = saved.function->rebound(variables);
    TAPEFLOW_REQUIRE(r != nullptr, FailedPreconditionError,
                     "[save_function] {}: its trace for these variable kinds was made with other variables, "
                     "and its tf::cond or tf::while_loop branches assign them, so it cannot be rebound: "
                     "call the function with the variables to save first",
                     s.label);
    saved.function = std::move(r);
  }
  const std::shared_ptr<graph::ConcreteFunction>& cf = saved.function;
  graph::ExportedFunction f;
  f.name = s.options.name;
  // A template's node and constant numbers are the traced graph's (the passes renumber them).
  f.graph = saved.size_template.empty() ? cf->unfused_graph() : cf->traced_graph();
  f.size_template = saved.size_template;
  for (std::size_t i = 0; i < cf->specs().size(); ++i) {
    TensorSpec spec = cf->specs()[i];
    // The signature's unknown dimensions stay unknown: the graph serves every size of them.
    for (std::size_t d = 0; d < spec.dims.size(); ++d)
      if (signature[i].dims[d] < 0) spec.dims[d] = -1;
    f.inputs.push_back({spec.dims, spec.dtype, signature[i].name});
  }
  f.output_structure = std::to_string(f.graph.outputs.size()) + " tensors";
  for (std::size_t k = 0; k < f.graph.variables.size(); ++k)
    f.variable_values.push_back(
        graph::captured_variable(f.graph, static_cast<std::int32_t>(k), s.label).value());
  graph::write_function_file(path, f);
}

struct LoadedFunction::State {
  std::vector<Variable> variables;
  std::vector<TensorSpec> signature;
  std::string label;
  graph::Graph graph;                     // the file's
  graph::SizeTemplate size_template;      // where it holds sizes of the unknown dims
  std::unique_ptr<graph::Executor> body;  // the file's graph, run through the dispatch path (no template)
  std::unique_ptr<detail::FunctionCore> core;

  /// The body at a call's sizes: a graph with a template is instantiated at them first.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const {
    if (size_template.empty()) return body->run(inputs, graph::RunMode::kDispatch);
    const std::vector<TensorSpec> specs = detail::specs_of(inputs);
    std::optional<graph::Graph> g =
        graph::instantiate(graph, size_template, core->state()->unknown_sizes(specs));
    TAPEFLOW_REQUIRE(g.has_value(), InvalidArgumentError,
                     "[{}] was called with tensors {} whose unknown dimensions differ where its graph needs "
                     "them equal (they were equal at every trace of the function that was saved)",
                     label, detail::specs_text(specs));
    return graph::Executor(std::move(*g), label).run(inputs, graph::RunMode::kDispatch);
  }
};

LoadedFunction load_function(const std::filesystem::path& path) {
  graph::ExportedFunction f = graph::read_function_file(path);
  auto state = std::make_shared<LoadedFunction::State>();
  for (std::size_t k = 0; k < f.graph.variables.size(); ++k) {
    graph::CapturedVariable& c = f.graph.variables[k];
    state->variables.emplace_back(f.variable_values[k],
                                  VariableOptions{.name = c.name, .trainable = c.trainable});
    c.state = detail::VariableHandle::weak(state->variables.back());
  }
  state->signature = f.inputs;
  state->label = "loaded function '" + f.name + "'";
  state->size_template = std::move(f.size_template);
  if (state->size_template.empty())
    state->body = std::make_unique<graph::Executor>(std::move(f.graph), state->label);
  else
    state->graph = std::move(f.graph);
  state->core = std::make_unique<detail::FunctionCore>(
      FunctionOptions{.name = f.name, .input_signature = state->signature},
      fmt::format("function '{}' (loaded from {})", f.name, path.string()));
  LoadedFunction loaded;
  loaded.state_ = std::move(state);
  return loaded;
}

std::vector<Tensor> LoadedFunction::operator()(const std::vector<Tensor>& inputs) const {
  detail::FlatCall call;
  call.tensors = inputs;
  call.key = "loaded->";
  const State& state = checked_state();
  auto [outputs, structure] = state.core->call(call, [&state](std::vector<Tensor> fresh) {
    return std::pair<std::vector<Tensor>, std::shared_ptr<const void>>{state.run(fresh), nullptr};
  });
  return outputs;
}

const LoadedFunction::State& LoadedFunction::checked_state() const {
  if (state_ == nullptr)
    detail::throw_empty_function("a LoadedFunction not made by load_function (or moved from)");
  return *state_;
}

const std::string& LoadedFunction::name() const { return checked_state().core->options().name; }
const std::vector<TensorSpec>& LoadedFunction::input_signature() const { return checked_state().signature; }
const std::vector<Variable>& LoadedFunction::variables() const { return checked_state().variables; }
FunctionStats LoadedFunction::stats() const { return checked_state().core->stats(); }

}  // namespace tapeflow
