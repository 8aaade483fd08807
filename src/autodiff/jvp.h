#pragma once
// What an op's forward-mode rule sees: the inputs, outputs, attributes and input tangents.

#include <span>

#include "tapeflow/tensor.h"

namespace tapeflow::autodiff {

class JvpContext {
 public:
  JvpContext(std::span<const Tensor* const> inputs, std::span<const Tensor> outputs,
             std::span<const Tensor> tangents, const void* attrs)
      : inputs_(inputs), outputs_(outputs), tangents_(tangents), attrs_(attrs) {}

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return *inputs_[static_cast<std::size_t>(i)]; }
  const Tensor& output(int i = 0) const { return outputs_[static_cast<std::size_t>(i)]; }
  /// Whether input `i` has a tangent (an input without one has a zero tangent).
  bool has_tangent(int i) const { return tangents_[static_cast<std::size_t>(i)].defined(); }
  /// The tangent of input `i`; only valid when has_tangent(i).
  const Tensor& tangent(int i) const { return tangents_[static_cast<std::size_t>(i)]; }
  template <class A>
  const A& attrs() const {
    return *static_cast<const A*>(attrs_);
  }

 private:
  std::span<const Tensor* const> inputs_;
  std::span<const Tensor> outputs_;
  std::span<const Tensor> tangents_;
  const void* attrs_;
};

}  // namespace tapeflow::autodiff
