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

}  // namespace

void save_function(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                   const std::filesystem::path& path) {
  const detail::FunctionCore::State& s = *fn.state();
  std::shared_ptr<graph::ConcreteFunction> cf;
  std::string traced;
  {
    std::lock_guard lock(s.mutex);
    for (const auto& [key, c] : s.cache) {
      traced += (traced.empty() ? "" : ", ") + detail::specs_text(c->specs());
      if (cf == nullptr && matches(signature, c->specs())) cf = c;
    }
  }
  TAPEFLOW_REQUIRE(cf != nullptr, FailedPreconditionError,
                   "[save_function] {} has no trace for the signature {} (traced: {}); call it once with "
                   "matching arguments before saving it: saving does not run the body",
                   s.label, detail::specs_text(signature), traced.empty() ? "none" : traced);
  graph::ExportedFunction f;
  f.name = s.options.name;
  f.graph = cf->unfused_graph();
  for (std::size_t i = 0; i < cf->specs().size(); ++i) {
    const TensorSpec& spec = cf->specs()[i];
    f.inputs.push_back({spec.dims, spec.dtype, i < signature.size() ? signature[i].name : std::string()});
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
