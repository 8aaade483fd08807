#include "tapeflow/nn/layer.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

Layer::Layer(std::string name, std::optional<mixed_precision::Policy> policy)
    : Module(std::move(name)), policy_(policy ? std::move(policy) : mixed_precision::global_policy()) {}

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
