#pragma once
// The state behind FunctionCore (function.cpp), shared with save_function (export.cpp).

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "function/concrete.h"
#include "graph/shared_sizes.h"
#include "tapeflow/function.h"

namespace tapeflow::detail {

inline std::string specs_text(const std::vector<TensorSpec>& specs) {
  std::string s = "(";
  for (std::size_t i = 0; i < specs.size(); ++i) s += (i ? ", " : "") + specs[i].to_string();
  return s + ")";
}

inline std::vector<TensorSpec> specs_of(std::span<const Tensor> ts) {
  std::vector<TensorSpec> specs;
  for (const Tensor& t : ts) {
    TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "a tf::function was called with an undefined Tensor");
    specs.push_back(TensorSpec::of(t));
  }
  return specs;
}

/// A signature key (FunctionCore::State::key_of, or a call's FlatCall::key alone) as messages
/// show it: "Tf8(0.5) as tapeflow::Tensor (tapeflow::Tensor, double) on (float32[3])", the
/// flattened arguments (T a tensor, f8(0.5) a double, b1(1) a bool true), the C++ types
/// demangled, the tensors' specs.
std::string describe_key(std::string_view key);

/// The graph of one call structure that may serve other sizes of its unknown dimensions
/// (shared_sizes.h): the first trace at sizes of at least 2 is the candidate; a trace at other
/// sizes unifies with it (the same graph: shared; the same but for sizes: confirming, until a
/// third trace matches the template's prediction); refused once one does not, or if the graph
/// cannot be shared. Shared, it runs untraced only at sizes inside the range its traces confirmed:
/// a call outside traces, and that trace must match the prediction too (it then widens the range).
/// Recorded calls (on a tape) have their own, whose traces are differentiable pairs: both graphs
/// must unify, each with its template.
struct SharedGraph {
  enum class Stage : std::uint8_t { kCandidate, kConfirming, kShared, kRefused };
  Stage stage = Stage::kCandidate;
  std::shared_ptr<graph::ConcreteFunction> first;
  std::vector<std::int64_t> first_sizes;  // the unknown dims' sizes `first` was traced at
  /// Where `first`'s graphs hold them: its traced graph; for recorded calls, its differentiable
  /// pair's traced forward and backward (Differentiable::traced_forward, traced_backward).
  std::vector<graph::SizeTemplate> templates;
  std::string why_refused;
  /// The smallest and largest of each of graph::size_points over the traces the graph agreed with.
  std::vector<std::int64_t> smallest, largest;

  /// The graphs of a trace that are compared and instantiated, in the order of `templates`.
  static std::vector<const graph::Graph*> graphs_of(const graph::ConcreteFunction& cf, bool recorded) {
    if (!recorded) return {&cf.traced_graph()};
    return {&cf.differentiable()->traced_forward, &cf.differentiable()->traced_backward};
  }
  bool templates_empty() const {
    return std::all_of(templates.begin(), templates.end(), [](const auto& t) { return t.empty(); });
  }
  /// Widens the confirmed range to a trace at `sizes` that the graph agreed with.
  void confirm(std::span<const std::int64_t> sizes) {
    const std::vector<std::int64_t> points = graph::size_points(templates, sizes).value();
    if (smallest.empty()) smallest = largest = points;
    for (std::size_t k = 0; k < points.size(); ++k) {
      smallest[k] = std::min(smallest[k], points[k]);
      largest[k] = std::max(largest[k], points[k]);
    }
  }
  /// Whether some size point lies outside the confirmed range; false where dims a template ties
  /// together differ at `sizes`, which the graph never runs (they trace for themselves alone).
  bool beyond_confirmed(std::span<const std::int64_t> sizes) const {
    const std::optional<std::vector<std::int64_t>> points = graph::size_points(templates, sizes);
    if (!points) return false;
    for (std::size_t k = 0; k < points->size(); ++k)
      if ((*points)[k] < smallest[k] || (*points)[k] > largest[k]) return true;
    return false;
  }
};

struct FunctionCore::State {
  FunctionOptions options;
  std::string label;  // "function 'name' (file.cpp:12)"
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<graph::ConcreteFunction>> cache;
  FunctionStats stats;
  std::string latest_graph;
  int next_warning = 5;
  std::map<std::string, SharedGraph> shared;           // by call structure (FlatCall::key)
  std::map<std::string, SharedGraph> shared_recorded;  // the same, for calls recorded on a tape
  /// Traces rebound to other Variable arguments (ConcreteFunction::rebound), by signature key and
  /// the variables' handles, with the trace each was made from: one made from a trace since
  /// replaced (by a differentiable one) is made again. The latest kMaxRebound are kept.
  struct Rebound {
    std::shared_ptr<graph::ConcreteFunction> from, function;
    std::uint64_t last_use = 0;
  };
  static constexpr std::size_t kMaxRebound = 64;
  std::map<std::string, Rebound> rebound;
  std::uint64_t rebound_uses = 0;

  /// Whether every dimension the input signature leaves unknown is at least 2 in `call`.
  bool unknown_sizes_at_least_two(const FlatCall& call) const {
    if (!options.input_signature) return false;
    for (std::size_t i = 0; i < options.input_signature->size(); ++i) {
      const std::vector<std::int64_t>& dims = (*options.input_signature)[i].dims;
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (dims[d] < 0 && call.tensors[i].shape()[static_cast<int>(d)] < 2) return false;
    }
    return true;
  }

  /// The sizes of the dimensions the input signature leaves unknown, in flat order, in `specs`.
  std::vector<std::int64_t> unknown_sizes(const std::vector<TensorSpec>& specs) const {
    std::vector<std::int64_t> sizes;
    for (std::size_t i = 0; i < options.input_signature->size(); ++i) {
      const std::vector<std::int64_t>& dims = (*options.input_signature)[i].dims;
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (dims[d] < 0) sizes.push_back(specs[i].dims[d]);
    }
    return sizes;
  }

  /// The signature key of a call: the structure and non-tensor values, then each tensor's
  /// dtype and shape. A call that fails the input signature throws here.
  std::string key_of(const FlatCall& call, bool& specialization) const {
    std::vector<TensorSpec> specs = specs_of(call.tensors);
    specialization = false;
    if (options.input_signature) {
      const std::vector<TensorSpec>& sig = *options.input_signature;
      bool ok = sig.size() == specs.size();
      for (std::size_t i = 0; ok && i < sig.size(); ++i) ok = sig[i].matches(call.tensors[i]);
      TAPEFLOW_REQUIRE(ok, InvalidArgumentError,
                       "[{}] was called with tensors {} that do not match its input_signature {}", label,
                       specs_text(specs), specs_text(sig));
      for (const TensorSpec& s : sig)
        for (std::int64_t d : s.dims) specialization = specialization || d < 0;
    }
    return call.key + specs_text(specs);
  }
};

}  // namespace tapeflow::detail
