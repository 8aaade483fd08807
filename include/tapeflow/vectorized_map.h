#pragma once
/// \file vectorized_map.h
/// tf::vectorized_map: `fn` applied to every element of a batch (the slices of `elems` along
/// their first axis), computed as one batched computation instead of a loop: TensorFlow's
/// `tf.vectorized_map` (pfor), JAX's `vmap`.
///
///   // Per-point Hessians of a scalar function of 2-vectors, for 100,000 points at once:
///   tf::Tensor h = tf::vectorized_map([](const tf::Tensor& p) { return tf::hessian(energy, p); }, points);
///   // h: (100000, 2, 2)
///
/// How it works: `fn` runs once, on the first element, while a tracer records its ops (nested
/// tapes, jacobian(), hessian() and tf::function bodies included); then each recorded op runs
/// once on the whole batch through its batching rule (an elementwise op broadcasts, a reduction
/// or a reshape moves its axes one further on, a product becomes a batched product, ...). Ops on
/// values that do not depend on `elems` (constants, captured tensors, variable reads) run once,
/// unbatched. The result is computed with ordinary recorded ops, so a tape or a forward
/// accumulator outside differentiates it, and an enclosing tf::function traces it.
///
/// An op without a batching rule (control flow, batch normalization, a convolution whose filters
/// differ per element) runs once per element and is stacked (TensorFlow's
/// `fallback_to_while_loop`); a one-time warning names the op. With `fallback_to_while_loop =
/// false` such an op is an UnimplementedError instead.
///
/// As with tf::function, `fn`'s C++ runs once: reading an element's value into C++ (item(),
/// to_vector) is a FailedPreconditionError, and a branch taken on the first element is taken for
/// all. Errors (InvalidArgumentError naming vectorized_map): `elems` empty or holding a scalar or
/// undefined tensor, first dimensions that differ, a result whose shape depends on the element
/// (an op looped per element that gives different shapes), and an `fn` that assigns a variable
/// (checked before the assignment happens). An empty batch traces `fn` on zeros of an element's
/// shape and returns empty results.

#include <functional>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// How vectorized_map treats an op without a batching rule (TensorFlow's arguments of the same names).
struct VectorizedMapOptions {
  /// Run an op without a batching rule once per element (true) or throw UnimplementedError.
  bool fallback_to_while_loop = true;
  /// Log the one-time warning naming each op that runs once per element.
  bool warn = true;
};

/// `fn` of every element of a batch: result k has shape (n,) + the shape of fn's result k, where
/// n is the first dimension of every tensor of `elems` and fn receives one slice of each.
std::vector<Tensor> vectorized_map(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& elems,
                                   const VectorizedMapOptions& options = {});

/// One tensor in, one tensor out.
Tensor vectorized_map(const std::function<Tensor(const Tensor&)>& fn, const Tensor& elems,
                      const VectorizedMapOptions& options = {});

}  // namespace tapeflow
#pragma GCC visibility pop
