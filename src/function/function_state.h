#pragma once
// The state behind FunctionCore (function.cpp), shared with save_function (export.cpp).

#include <map>
#include <mutex>
#include <string>

#include "core/check.h"
#include "function/concrete.h"
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

struct FunctionCore::State {
  FunctionOptions options;
  std::string label;  // "function 'name' (file.cpp:12)"
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<graph::ConcreteFunction>> cache;
  FunctionStats stats;
  std::string latest_graph;
  int next_warning = 5;

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
