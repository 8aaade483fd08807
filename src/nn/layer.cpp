#include "tapeflow/nn/layer.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "core/check.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

Layer::Layer(std::string name, std::optional<mixed_precision::Policy> policy)
    : Module(std::move(name)), policy_(policy ? std::move(policy) : mixed_precision::global_policy()) {}

std::vector<Tensor> Layer::get_weights() const {
  std::vector<Tensor> values;
  for (const Variable& v : variables()) values.push_back(v.value());
  return values;
}

void Layer::set_weights(const std::vector<Tensor>& weights) {
  const std::vector<Variable> vars = variables();
  TAPEFLOW_REQUIRE(weights.size() == vars.size(), InvalidArgumentError,
                   "[set_weights] layer '{}' has {} weights, got a list of {}", name(), vars.size(),
                   weights.size());
  for (std::size_t i = 0; i < vars.size(); ++i)
    TAPEFLOW_REQUIRE(weights[i].defined() && weights[i].shape() == vars[i].shape() &&
                         weights[i].dtype() == vars[i].dtype(),
                     InvalidArgumentError, "[set_weights] layer '{}': weight {} '{}' is {} {}, got {}",
                     name(), i, vars[i].name(), dtype_name(vars[i].dtype()), vars[i].shape().to_string(),
                     weights[i].defined() ? fmt::format("{} {}", dtype_name(weights[i].dtype()),
                                                        weights[i].shape().to_string())
                                          : std::string("an undefined tensor"));
  for (std::size_t i = 0; i < vars.size(); ++i) {
    Variable v = vars[i];
    v.assign(weights[i]);
  }
}

void Layer::set_trainable(bool trainable) {
  trainable_ = trainable;
  // Tracked modules are registered from non-const references (Module::track), so writing through
  // the const pointers submodules() gives is defined.
  for (const Module* m : submodules())
    if (const auto* layer = dynamic_cast<const Layer*>(m)) const_cast<Layer*>(layer)->trainable_ = trainable;
}

Tensor Layer::autocast(const Tensor& x) const {
  if (!policy_ || !is_floating(x.dtype()) || x.dtype() == policy_->compute_dtype()) return x;
  return cast(x, policy_->compute_dtype());
}

DType Layer::variable_dtype(DType input) const { return policy_ ? policy_->variable_dtype() : input; }

std::string Layer::class_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && demangled ? demangled.get() : mangled;
  // "tapeflow::layers::Dense" -> "Dense" (a template's arguments keep their namespaces).
  const std::size_t end = name.find('<');
  const std::size_t colon = name.rfind("::", end);
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

}  // namespace tapeflow::layers
