// save_function and load_function: a traced graph with its variables' values as a file
// (serialize.h), and a loaded graph as the body of a FunctionCore, so a loaded function is traced,
// optimised, differentiated and nested exactly like one built from C++.

#include <fmt/format.h>

#include "autodiff/variable_handle.h"
#include "function/function_state.h"
#include "function/serialize.h"

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

/// The graph to save for `signature`: with unknown dimensions, the graph `fn` shares across their
/// sizes; else the trace for exactly these shapes. FailedPreconditionError says what to call first.
std::shared_ptr<graph::ConcreteFunction> graph_to_save(const detail::FunctionCore::State& s,
                                                       const std::vector<TensorSpec>& signature) {
  const bool unknown = has_unknown_dims(signature);
  std::string traced, refused;
  std::lock_guard lock(s.mutex);
  for (const auto& [key, c] : s.cache)
    traced += (traced.empty() ? "" : ", ") + detail::specs_text(c->specs());
  if (traced.empty()) traced = "none";
  // The shared graph was checked across the sizes of the function's own unknown dimensions.
  auto declared_unknown = [&] {
    if (!s.options.input_signature || s.options.input_signature->size() != signature.size()) return false;
    for (std::size_t i = 0; i < signature.size(); ++i)
      for (std::size_t d = 0; d < signature[i].dims.size(); ++d)
        if (signature[i].dims[d] < 0 && (d >= (*s.options.input_signature)[i].dims.size() ||
                                         (*s.options.input_signature)[i].dims[d] >= 0))
          return false;
    return true;
  };
  if (unknown) {
    for (const auto& [key, e] : s.shared) {
      if (e.stage != detail::SharedGraph::Stage::kShared || !matches(signature, e.first->specs())) {
        if (e.stage == detail::SharedGraph::Stage::kRefused) refused += "; " + e.why_refused;
        continue;
      }
      // A file's graph runs any size by its ops deriving their shapes; one whose attributes or
      // constants hold sizes would need its template, which the format does not carry.
      if (!e.size_template.empty()) {
        refused += "; its graph holds sizes of the unknown dimensions (in attributes or constants)";
        continue;
      }
      if (declared_unknown()) return e.first;
    }
    throw FailedPreconditionError(fmt::format(
        "[save_function] {} has no graph shared across the sizes of the unknown dimensions of {} "
        "(traced: {}{}). Give the function an input_signature with those dimensions unknown and call it "
        "at two different sizes of each (at least 2), so that tapeflow can check that its graph does not "
        "depend on them, or save it for concrete sizes: saving does not run the body",
        s.label, detail::specs_text(signature), traced, refused));
  }
  for (const auto& [key, c] : s.cache)
    if (matches(signature, c->specs())) return c;
  throw FailedPreconditionError(
      fmt::format("[save_function] {} has no trace for the signature {} (traced: {}); call it once with "
                  "matching arguments before saving it: saving does not run the body",
                  s.label, detail::specs_text(signature), traced));
}

}  // namespace

void save_function(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                   const std::filesystem::path& path) {
  const detail::FunctionCore::State& s = *fn.state();
  const std::shared_ptr<graph::ConcreteFunction> cf = graph_to_save(s, signature);
  graph::ExportedFunction f;
  f.name = s.options.name;
  f.graph = cf->unfused_graph();
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
  std::unique_ptr<graph::Executor> body;  // the file's graph, run through the dispatch path
  std::unique_ptr<detail::FunctionCore> core;
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
  state->body = std::make_unique<graph::Executor>(std::move(f.graph), "loaded function '" + f.name + "'");
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
  const graph::Executor& body = *state_->body;
  auto [outputs, structure] = state_->core->call(call, [&body](std::vector<Tensor> fresh) {
    return std::pair<std::vector<Tensor>, std::shared_ptr<const void>>{
        body.run(fresh, graph::RunMode::kDispatch), nullptr};
  });
  return outputs;
}

const std::string& LoadedFunction::name() const { return state_->core->options().name; }
const std::vector<TensorSpec>& LoadedFunction::input_signature() const { return state_->signature; }
const std::vector<Variable>& LoadedFunction::variables() const { return state_->variables; }
FunctionStats LoadedFunction::stats() const { return state_->core->stats(); }

}  // namespace tapeflow
