#pragma once
/// \file ops/training.h
/// Optimizer update rules as single ops (TensorFlow's training ops), which the optimizers in
/// optim/ run instead of a dozen elementwise ops per variable.

#include <array>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::raw_ops {

/// One SGD step in one pass (op "ApplyGradientDescent", TensorFlow's ApplyGradientDescent
/// without its variable): returns var - grad * lr, the product rounded to the dtype before the
/// difference, exactly as the two elementwise ops. `lr` is a scalar; all of the same float dtype,
/// grad of var's shape. Not differentiable. InvalidArgumentError (naming ApplyGradientDescent, the
/// argument, shapes and dtypes) otherwise.
Tensor apply_gradient_descent(const Tensor& var, const Tensor& lr, const Tensor& grad);

/// One SGD step with momentum in one pass (op "ApplyKerasMomentum", TensorFlow's
/// ResourceApplyKerasMomentum without its variables): returns {var', accum'} with
///   accum' = accum * momentum - grad * lr,
///   var' = var + accum'  (nesterov: var + (accum' * momentum - grad * lr)),
/// rounded exactly as those elementwise ops (momentum rounded to the dtype as a scalar operand is;
/// no fused multiply-add). `lr` is a scalar; all of the same float dtype, accum and grad of var's
/// shape. Not differentiable. InvalidArgumentError (naming ApplyKerasMomentum, the argument,
/// shapes and dtypes) otherwise.
std::array<Tensor, 2> apply_keras_momentum(const Tensor& var, const Tensor& accum, const Tensor& lr,
                                           const Tensor& grad, double momentum, bool nesterov);

/// One Adam step in one pass (op "ApplyAdam", TensorFlow's ApplyAdam without its variables):
/// returns {var', m', v'} with
///   m' = m + (grad - m) * (1 - beta_1),  v' = v + (grad^2 - v) * (1 - beta_2),
///   var' = var - m' * lr_t / (sqrt(v') + epsilon),
/// rounded exactly as those elementwise ops (each product and sum rounded to the dtype; no fused
/// multiply-add). `lr_t` is a scalar: the learning rate with Adam's bias corrections folded in.
/// All of the same float dtype; m, v and grad of var's shape. Not differentiable.
/// InvalidArgumentError (naming ApplyAdam, the argument, shapes and dtypes) otherwise.
std::array<Tensor, 3> apply_adam(const Tensor& var, const Tensor& m, const Tensor& v, const Tensor& lr_t,
                                 const Tensor& grad, double beta_1, double beta_2, double epsilon);

}  // namespace tapeflow::raw_ops
#pragma GCC visibility pop
