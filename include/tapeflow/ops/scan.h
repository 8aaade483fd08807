#pragma once
/// \file ops/scan.h
/// Cumulative sums, products and log-sum-exps along an axis (TensorFlow's tf.math.cumsum,
/// tf.math.cumprod, tf.math.cumulative_logsumexp), and the first-order linear recurrence they are
/// differentiated with, in namespace tapeflow::math.
///
///   namespace tf = tapeflow;
///   tf::Tensor x = tf::constant({1.0, 2.0, 3.0, 4.0});
///   tf::math::cumsum(x);                          // [1, 3, 6, 10]
///   tf::math::cumsum(x, 0, /*exclusive=*/true);   // [0, 1, 3, 6]
///   tf::math::cumsum(x, 0, false, /*reverse=*/true);  // [10, 9, 7, 4]
///   tf::math::cumprod(x);                         // [1, 2, 6, 24]
///
/// `exclusive` leaves each element out of its own result (the first result is the identity: 0,
/// 1 or -inf); `reverse` scans from the end. `axis` counts from the end when negative. The scans
/// run one pass per line of the axis, the lines split over tapeflow's threads; an empty axis
/// gives an empty result.
///
/// Gradients: cumsum's is a cumsum of dy the other way (TensorFlow's). cumprod's and
/// cumulative_logsumexp's run a linear recurrence backwards: cumprod's is then exact at zeros
/// (TensorFlow divides by x, which gives 0 where the true gradient is a product of the other
/// elements), and cumulative_logsumexp's multiplies only by factors in [0, 1], so it neither
/// overflows nor underflows. All are written with these ops, so they are differentiable to any
/// order, and forward mode is exact.
///
/// Errors (InvalidArgumentError naming the op, the axis and the tensor's shape and dtype): an
/// axis outside [-rank, rank), a scalar, a dtype the op does not take (cumsum and cumprod take
/// float32, float64, int32 and int64; cumulative_logsumexp and linear_recurrence float32 and
/// float64).

#include <cstdint>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::math {

/// tf.math.cumsum: y[i] = x[0] + ... + x[i] along `axis` (op "Cumsum"). Integer sums wrap on
/// overflow, as in TensorFlow.
Tensor cumsum(const Tensor& x, std::int64_t axis = 0, bool exclusive = false, bool reverse = false);

/// tf.math.cumprod: y[i] = x[0] * ... * x[i] along `axis` (op "Cumprod").
Tensor cumprod(const Tensor& x, std::int64_t axis = 0, bool exclusive = false, bool reverse = false);

/// tf.math.cumulative_logsumexp: y[i] = log(exp(x[0]) + ... + exp(x[i])) along `axis` (op
/// "CumulativeLogsumexp"), computed stably (a running maximum, never exp of a large number); -inf
/// elements contribute nothing, and the exclusive first result is -inf.
Tensor cumulative_logsumexp(const Tensor& x, std::int64_t axis = 0, bool exclusive = false,
                            bool reverse = false);

/// The first-order linear recurrence h[t] = a[t] * h[t-1] + b[t] along `axis`, with h[-1] = 0 (op
/// "LinearRecurrence"; not a TensorFlow function: JAX writes it with lax.associative_scan). With
/// `reverse`, h[t] = a[t+1] * h[t+1] + b[t] from the end: a[t] always links positions t-1 and t,
/// so a[0] is never read, and the reverse recurrence is the gradient of the forward one.
/// a and b have one shape and dtype. Discounted returns, IIR filters and exponential moving
/// averages are such recurrences.
Tensor linear_recurrence(const Tensor& a, const Tensor& b, std::int64_t axis = 0, bool reverse = false);

}  // namespace tapeflow::math

namespace tapeflow {
using math::cumsum;  // tf.cumsum
}  // namespace tapeflow
#pragma GCC visibility pop
