#pragma once
/// \file ops/reduce.h
/// Reductions over any set of axes. An empty `axes` list reduces over all axes (like
/// `axis=None` in TensorFlow). Negative axes count from the end; a repeated or out-of-range axis
/// throws InvalidArgumentError.

#include <cstdint>
#include <vector>

#include "tapeflow/tensor.h"

namespace tapeflow {

using Axes = std::vector<std::int64_t>;

Tensor reduce_sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// log(sum(exp(x))) computed stably (the max is subtracted first).
Tensor reduce_logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Index of the largest / smallest value along `axis` (int64; the first one on ties).
/// Not differentiable. Throws for an empty reduction axis.
Tensor argmax(const Tensor& x, std::int64_t axis = 0);
Tensor argmin(const Tensor& x, std::int64_t axis = 0);

}  // namespace tapeflow
