#include "tapeflow/tensor_spec.h"

namespace tapeflow {

TensorSpec TensorSpec::of(const Tensor& t) {
  TensorSpec s;
  s.dims.assign(t.shape().dims().begin(), t.shape().dims().end());
  s.dtype = t.dtype();
  return s;
}

bool TensorSpec::matches(const Tensor& t) const {
  if (!t.defined() || t.dtype() != dtype || t.rank() != static_cast<int>(dims.size())) return false;
  for (int i = 0; i < t.rank(); ++i)
    if (dims[static_cast<std::size_t>(i)] >= 0 && dims[static_cast<std::size_t>(i)] != t.shape()[i])
      return false;
  return true;
}

std::string TensorSpec::to_string() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (std::size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? "?" : std::to_string(dims[i]));
  return s + "]";
}

}  // namespace tapeflow
