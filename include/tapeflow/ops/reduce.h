#pragma once
/// \file ops/reduce.h
/// Reductions over any set of axes: one axis or a list (see axes.h). An empty `axes` list reduces
/// over all axes (like `axis=None` in TensorFlow). Negative axes count from the end. With
/// `keepdims` the reduced axes stay as size-1 dimensions, so the result broadcasts against the
/// input.
///
///   tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
///   tf::reduce_sum(x);                  // 21
///   tf::reduce_sum(x, 0);               // [5, 7, 9]        column sums
///   tf::reduce_mean(x, -1, true);       // [[2], [5]]       shape (2, 1)
///   tf::reduce_max(x, {0, 1});          // 6
///   tf::argmax(x, 1);                   // [2, 2]           int64
///
/// Errors (InvalidArgumentError, naming the op, the axes and the input's shape and dtype): an
/// axis outside [-rank, rank), a repeated axis, a bool input, a dtype the op does not support.
///
/// Numerics: float32 sums and means accumulate in double, so their result is the correctly
/// rounded float32 of a (pairwise) double sum. Integer sums and products wrap on overflow (two's
/// complement), as in TensorFlow. max/min propagate NaN.

#include <cstdint>

#include "tapeflow/axes.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Sum over `axes` (op "Sum"). Numeric dtypes (float32/64, int32/64). An empty reduction is 0.
/// Gradient: dy broadcast back to the input's shape.
Tensor reduce_sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Arithmetic mean over `axes` (op "Mean"). Integer inputs give the integer quotient
/// sum / count, truncated toward zero, as in TensorFlow. A float mean over an empty axis is NaN
/// (0 / 0) like TensorFlow; an integer mean over an empty axis has no value and throws
/// InvalidArgumentError. Gradient: dy / count, broadcast.
Tensor reduce_mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Maximum over `axes` (op "Max"); NaN propagates. An empty reduction gives -inf (floats) or the
/// lowest value (integers), as in TensorFlow. Gradient (TensorFlow's rule): dy is split equally
/// among the elements equal to the maximum.
Tensor reduce_max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Minimum over `axes` (op "Min"); like reduce_max with +inf / the largest value for an empty
/// reduction.
Tensor reduce_min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Product over `axes` (op "Prod"). An empty reduction is 1. Gradient: the product of the other
/// elements, exact for any number of zeros. Second derivatives are exact for inputs without
/// zeros; where a reduced group holds an exact zero, the gradient's own derivative treats the
/// zero pattern as fixed, so some mixed second derivatives through the zero read 0 (TensorFlow's
/// cumulative-product formulation has no such limit).
Tensor reduce_prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// log(sum(exp(x))) computed stably (op "ReduceLogSumExp"), with TensorFlow's numerics: the
/// maximum m is subtracted first, and replaced by 0 when it is not finite, so all -inf gives -inf,
/// a +inf gives +inf and NaN gives NaN. Float dtypes only. Gradient: dy * exp(x - y) = dy * softmax.
Tensor reduce_logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Index of the largest / smallest value along `axis` (ops "ArgMax" / "ArgMin"), as int64; the
/// first one on ties; NaN counts as the extreme value (the first NaN's index). Numeric dtypes.
/// Not differentiable. Throws InvalidArgumentError for an empty reduction axis (no index exists)
/// and for a rank-0 input (no axis).
///@{
Tensor argmax(const Tensor& x, std::int64_t axis = 0);
Tensor argmin(const Tensor& x, std::int64_t axis = 0);
///@}

}  // namespace tapeflow
#pragma GCC visibility pop
