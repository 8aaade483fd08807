#include "tapeflow/nn/layer.h"

#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

Layer::Layer(std::string name, std::optional<mixed_precision::Policy> policy)
    : Module(std::move(name)), policy_(policy ? std::move(policy) : mixed_precision::global_policy()) {}

Tensor Layer::autocast(const Tensor& x) const {
  if (!policy_ || !is_floating(x.dtype()) || x.dtype() == policy_->compute_dtype()) return x;
  return cast(x, policy_->compute_dtype());
}

DType Layer::variable_dtype(DType input) const { return policy_ ? policy_->variable_dtype() : input; }

}  // namespace tapeflow::layers
