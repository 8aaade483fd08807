#pragma once
// Optimizer updates of some rows of a table in place: an optimizer's row-sparse step
// (IndexedSlices) applies its dense formula to the rows the gradient has, with the rounding of the
// training op it would run on the whole table (training.cpp, compiled without contraction).

#include <cstdint>
#include <span>

#include "tapeflow/tensor.h"

namespace tapeflow::ops {

/// ApplyGradientDescent's w - g * lr on rows of a float32 or float64 table: row rows[k] of the
/// (height, width) elements at `table` takes row k of `grads` ((rows.size(), width), the table's
/// dtype); `lr` is a scalar of that dtype.
void gradient_descent_rows(void* table, std::int64_t width, std::span<const std::int64_t> rows,
                           const Tensor& grads, const Tensor& lr);

/// Adagrad's update as its elementwise ops round it, on rows of a float32 or float64 table and of
/// its accumulator (both (height, width) elements): for row rows[k] and its gradient row k,
/// accumulator += g * g, then w -= lr * g / sqrt(accumulator + epsilon), epsilon rounded to the
/// dtype as the ops' scalar is.
void adagrad_rows(void* table, void* accumulator, std::int64_t width, std::span<const std::int64_t> rows,
                  const Tensor& grads, const Tensor& lr, double epsilon);

}  // namespace tapeflow::ops
