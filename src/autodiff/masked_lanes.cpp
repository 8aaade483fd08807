#include "autodiff/masked_lanes.h"

namespace tapeflow::autodiff {

namespace {

constinit thread_local std::unordered_map<TensorId, Tensor>* t_masked_lanes = nullptr;

}  // namespace

void mark_masked_lanes(const Tensor& cotangent, const Tensor& mask) {
  if (t_masked_lanes && cotangent.shape() == mask.shape()) (*t_masked_lanes)[cotangent.id()] = mask;
}

const Tensor* masked_lanes(const Tensor& cotangent) {
  if (!t_masked_lanes || t_masked_lanes->empty()) return nullptr;
  const auto it = t_masked_lanes->find(cotangent.id());
  return it == t_masked_lanes->end() ? nullptr : &it->second;
}

MaskedLanesScope::MaskedLanesScope() : outer_(t_masked_lanes) { t_masked_lanes = &table_; }
MaskedLanesScope::~MaskedLanesScope() { t_masked_lanes = outer_; }

}  // namespace tapeflow::autodiff
