// Which trace a file is written from (saved_trace.h).

#include "function/saved_trace.h"

#include <fmt/format.h>

#include "core/check.h"

namespace tapeflow::detail {
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

/// The call key (FlatCall::key) of the cache entry `key` holding `c`: the key without its specs.
std::string_view call_key_of(const std::string& key, const graph::ConcreteFunction& c) {
  return std::string_view(key).substr(0, key.size() - specs_text(c.specs()).size());
}

/// The one candidate for saving, or InvalidArgumentError listing them where calls with other
/// non-tensor arguments (or C++ types) traced for the signature too.
const GraphToSave& only_one(const std::vector<std::pair<std::string, GraphToSave>>& candidates,
                            const FunctionCore::State& s, const std::vector<TensorSpec>& signature,
                            std::string_view writer) {
  if (candidates.size() > 1) {
    std::string traces;
    for (const auto& [key, c] : candidates) traces += fmt::format("\n  {}", describe_key(key));
    throw InvalidArgumentError(
        fmt::format("[{}] {} has {} traces for the signature {}, for calls with different non-tensor "
                    "arguments:{}\nPass the arguments of the call whose trace to save, each tensor as its "
                    "TensorSpec: {}(fn, path, args...)",
                    writer, s.label, candidates.size(), specs_text(signature), traces, writer));
  }
  return candidates.front().second;
}

/// graph_to_save's choice, before any rebinding to the call's variables.
GraphToSave traced_graph_to_save(const FunctionCore::State& s, const std::vector<TensorSpec>& signature,
                                 const std::optional<std::string>& call_key, std::string_view writer) {
  for (const TensorSpec& spec : signature)
    for (std::int64_t d : spec.dims)
      TAPEFLOW_REQUIRE(d >= -1, InvalidArgumentError,
                       "[{}] {}: the signature {} has dimension {}; a dimension is a size (>= 0) or "
                       "unknown (-1)",
                       writer, s.label, specs_text(signature), d);
  const bool unknown = has_unknown_dims(signature);
  std::string traced, refused;
  std::lock_guard lock(s.mutex);
  for (const auto& [key, c] : s.cache) traced += (traced.empty() ? "" : ", ") + specs_text(c->specs());
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
      if (e.stage != SharedGraph::Stage::kShared || !matches(signature, e.first->specs())) {
        if (e.stage == SharedGraph::Stage::kRefused) refused += "; " + e.why_refused;
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
    if (!shared.empty()) return only_one(shared, s, signature, writer);
    throw FailedPreconditionError(fmt::format(
        "[{}] {} has no graph shared across the sizes of the unknown dimensions of {} "
        "(traced: {}{}). Give the function an input_signature with those dimensions unknown and call it "
        "at two different sizes of each (at least 2), so that tapeflow can check that its graph does not "
        "depend on them, or save it for concrete sizes: saving does not run the body",
        writer, s.label, specs_text(signature), traced, refused));
  }
  std::vector<std::pair<std::string, GraphToSave>> exact;
  for (const auto& [key, c] : s.cache)
    if (matches(signature, c->specs()) && !other_call(call_key_of(key, *c)))
      exact.emplace_back(key, GraphToSave{c, {}});
  if (!exact.empty()) return only_one(exact, s, signature, writer);
  throw FailedPreconditionError(
      fmt::format("[{}] {} has no trace for the signature {}{} (traced: {}); call it once with "
                  "matching arguments before saving it: saving does not run the body",
                  writer, s.label, specs_text(signature),
                  call_key ? " and the arguments " + describe_key(*call_key) : "", traced));
}

}  // namespace

GraphToSave graph_to_save(const FunctionCore::State& s, const std::vector<TensorSpec>& signature,
                          const std::optional<std::string>& call_key, const std::vector<Variable>& variables,
                          std::string_view writer) {
  GraphToSave saved = traced_graph_to_save(s, signature, call_key, writer);
  if (call_key && !variables.empty() && !saved.function->bound_to(variables)) {
    // The trace of another call with variables of these kinds: its graph, on the variables given.
    std::shared_ptr<graph::ConcreteFunction> r = saved.function->rebound(variables);
    TAPEFLOW_REQUIRE(r != nullptr, FailedPreconditionError,
                     "[{}] {}: its trace for these variable kinds was made with other variables, "
                     "and its tf::cond or tf::while_loop branches assign them, so it cannot be rebound: "
                     "call the function with the variables to save first",
                     writer, s.label);
    saved.function = std::move(r);
  }
  return saved;
}

std::vector<TensorSpec> saved_input_specs(const graph::ConcreteFunction& saved,
                                          const std::vector<TensorSpec>& signature) {
  std::vector<TensorSpec> specs;
  for (std::size_t i = 0; i < saved.specs().size(); ++i) {
    TensorSpec spec = saved.specs()[i];
    // The signature's unknown dimensions stay unknown: the graph serves every size of them.
    for (std::size_t d = 0; d < spec.dims.size(); ++d)
      if (signature[i].dims[d] < 0) spec.dims[d] = -1;
    spec.name = signature[i].name;
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace tapeflow::detail
