// save_function and load_function: a traced graph with its variables' values as a file
// (serialize.h), and a loaded graph as the body of a FunctionCore, so a loaded function is traced,
// optimised, differentiated and nested exactly like one built from C++.

#include <fmt/format.h>

#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "function/function_state.h"
#include "function/saved_trace.h"
#include "graph/serialize.h"

namespace tapeflow {

void save_function(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                   const std::filesystem::path& path) {
  detail::save_trace(fn, signature, path, std::nullopt);
}

void detail::save_trace(const FunctionCore& fn, const std::vector<TensorSpec>& signature,
                        const std::filesystem::path& path, const std::optional<std::string>& call_key,
                        const std::vector<Variable>& variables) {
  const FunctionCore::State& s = *fn.state();
  const GraphToSave saved = graph_to_save(s, signature, call_key, variables, "save_function");
  const std::shared_ptr<graph::ConcreteFunction>& cf = saved.function;
  graph::ExportedFunction f;
  f.name = s.options.name;
  // A template's node and constant numbers are the traced graph's (the passes renumber them).
  f.graph = saved.size_template.empty() ? cf->unfused_graph() : cf->traced_graph();
  f.size_template = saved.size_template;
  f.inputs = saved_input_specs(*cf, signature);
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
