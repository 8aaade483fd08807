#pragma once
/// \file custom_gradient.h
/// Functions with their own gradient, and gradient checkpointing.
///
/// custom_gradient (TensorFlow's tf.custom_gradient): `f` computes its outputs and returns, with
/// them, the function that maps the outputs' cotangents to the inputs' gradients. The whole call
/// is recorded as one op ("CustomGradient") whose outputs are fresh tensors, so first-order
/// gradients flow only through the given gradient function (the ops inside `f` are recorded too,
/// as in TensorFlow, so that an outer tape can differentiate the gradient function). Use it for
/// numerically stable gradients or to clip gradients in the backward pass:
///
///   // log(1 + e^x) with a gradient that does not overflow for large x
///   auto log1pexp = [](const tf::Tensor& x) {
///     return tf::custom_gradient({x}, [](const std::vector<tf::Tensor>& in) {
///       tf::Tensor e = tf::exp(in[0]);
///       return tf::CustomGradientResult{
///           {tf::log(1 + e)},
///           [e](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
///             return {dy[0] * (1 - 1 / (1 + e))};
///           }};
///     })[0];
///   };
///
/// The trainable variables that `f` reads are passed to the gradient function, which returns one
/// gradient per input followed by one per variable (TensorFlow's `grad_fn(*dy, variables=...)`).
/// As in TensorFlow, a non-trainable variable `f` reads (a BatchNorm moving mean) is not passed and
/// gets no gradient through the op, even on a tape that watches it. The gradient function is
/// written with tapeflow ops, so nested tapes differentiate it again.
///
/// The gradient function's mistakes are InvalidArgumentErrors at gradient() time, naming the op,
/// the input and both shapes: a gradient of the wrong shape or dtype, an undefined Tensor (return
/// std::nullopt for "no gradient"), or the wrong count (TensorFlow's "custom_gradient function
/// expected to return n gradients but returned m instead."; with variables, prefixed by "Must
/// return gradient for each variable from @custom_gradient grad_fn").
///
/// recompute_grad (TensorFlow's tf.recompute_grad): the tape keeps only the block's inputs; its
/// forward runs unrecorded and is recomputed during the backward pass on identity copies of the
/// inputs (so a tensor passed as two arguments gets one gradient per argument, summed once).
/// Gradients are identical; the memory held between forward and backward drops to the inputs.
///
/// grad_pass_through (TensorFlow's tf.grad_pass_through): the straight-through estimator. The
/// forward pass runs `f`; the backward pass treats it as the identity, so gradients flow through
/// steps that have none (rounding, an integer cast, an assignment):
///
///   auto quantize = tf::grad_pass_through([](const std::vector<tf::Tensor>& in) {
///     return std::vector<tf::Tensor>{tf::cast(tf::cast(in[0], tf::int32), tf::float32)};  // truncates
///   });
///   tf::Tensor y = quantize({x})[0];                            // dy/dx = 1, not None
///
/// It is custom_gradient with the gradient dx = dy (recorded as a CustomGradient op); `f` itself
/// runs unrecorded, since the gradient never looks inside it.

#include <functional>
#include <vector>

#include "tapeflow/registry.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// What the function given to custom_gradient returns: its outputs and their gradient function.
struct CustomGradientResult {
  /// The outputs of `f`; custom_gradient returns them as fresh tensors of the recorded op.
  std::vector<Tensor> outputs;
  /// (output cotangents, trainable variables read by f in first-read order) -> one gradient per
  /// input, then one per variable. std::nullopt means no gradient.
  std::function<Grads(const std::vector<Tensor>& dys, const std::vector<Variable>& variables)> grad;
};

/// Runs `f(inputs)` and records it as one op whose gradient is the function `f` returned.
/// Throws InvalidArgumentError if `f` returns no outputs or no gradient function; the gradient
/// function returning the wrong number, shape or dtype of gradients is reported (also as
/// InvalidArgumentError) at gradient() time.
std::vector<Tensor> custom_gradient(const std::vector<Tensor>& inputs,
                                    const std::function<CustomGradientResult(const std::vector<Tensor>&)>& f);

/// A block of computation for recompute_grad and grad_pass_through: tensors in, tensors out.
using Block = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Wraps `f` so that the tape keeps only its inputs and recomputes `f` during backward.
/// Throws InvalidArgumentError if `f` is empty.
Block recompute_grad(Block f);

/// Wraps `f` so that its gradient is the identity: output i's gradient goes to input i unchanged;
/// variables `f` reads get no gradient. Throws InvalidArgumentError if `f` is empty and, when the
/// wrapped function runs, unless `f` returns one output per input with that input's shape and
/// dtype.
Block grad_pass_through(Block f);

}  // namespace tapeflow
#pragma GCC visibility pop
