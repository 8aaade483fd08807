#pragma once
/// \file ops/gradient_control.h
/// Ops that shape gradient flow: identity, stop_gradient, and a non-differentiable identity.

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Returns a tensor with the same values (a new tensor id). Gradient: passes dy through.
Tensor identity(const Tensor& x);

/// The identity in the forward pass; blocks the gradient in the backward pass (TensorFlow's
/// tf.stop_gradient). Paths through it give no gradient (None), with no error.
Tensor stop_gradient(const Tensor& x);

namespace raw_ops {
/// An identity op registered as non-differentiable with no_gradient("NoGradient"), as in the
/// seed example: the gradient through it is None.
Tensor no_gradient(const Tensor& x);
}  // namespace raw_ops

}  // namespace tapeflow
#pragma GCC visibility pop
