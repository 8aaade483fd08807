#pragma once
/// \file ops/sort.h
/// Sorting and searching: tf.sort, tf.argsort, tf.math.top_k, tf.searchsorted, tf.unique, and
/// NumPy's take_along_axis, which sort's values are gathered with.
///
///   namespace tf = tapeflow;
///   tf::Tensor x = tf::constant({3.0, 1.0, 2.0, 1.0});
///   tf::sort(x);                                   // [1, 1, 2, 3]
///   tf::argsort(x);                                // [1, 3, 2, 0]   (stable: ties keep their order)
///   tf::argsort(x, -1, tf::SortDirection::kDescending);  // [0, 2, 1, 3]
///   auto [values, indices] = tf::math::top_k(x, 2);      // [3, 2], [0, 2]
///   tf::searchsorted(tf::constant({1.0, 2.0, 3.0}), tf::constant({2.5}));  // [2]
///
/// Ordering: every sort is stable (equal elements keep their order, in both directions); NaN
/// counts as larger than every number (last ascending, first descending), as NumPy sorts it; -0.0
/// and 0.0 are equal. Sorts and top_k take float32, float64, bfloat16, int32 and int64.
///
/// Gradients: sort's and top_k's values carry dy back to the positions they came from (a scatter
/// along the axis; ties are never split); indices, argsort, searchsorted and unique have none.
///
/// Errors (InvalidArgumentError naming the op, the shapes and dtypes): an axis outside
/// [-rank, rank), a scalar where a vector is needed, k outside [0, last dimension], indices out
/// of range, batch dimensions that differ, a bool tensor.

#include <cstdint>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// tf.sort's and tf.argsort's `direction`.
enum class SortDirection { kAscending, kDescending };

/// tf.argsort: the int32 indices that sort `values` along `axis` (op "ArgSort"), stably.
Tensor argsort(const Tensor& values, std::int64_t axis = -1,
               SortDirection direction = SortDirection::kAscending);

/// tf.sort: `values` sorted along `axis`, stably; the values are taken along the axis at
/// argsort's indices (take_along_axis), so the gradient puts dy where each value came from.
Tensor sort(const Tensor& values, std::int64_t axis = -1,
            SortDirection direction = SortDirection::kAscending);

/// NumPy's take_along_axis (tf.experimental.numpy.take_along_axis): out[..., i, ...] =
/// arr[..., indices[..., i, ...], ...] along `axis` (op "TakeAlongAxis"). `indices` (int32 or
/// int64) has arr's rank and its dims but along `axis`, which may have any length; an index
/// outside [0, arr.shape[axis]) throws. Gradient: dy added back at the indices (op
/// "TakeAlongAxisGrad"; repeated indices add up).
Tensor take_along_axis(const Tensor& arr, const Tensor& indices, std::int64_t axis);

/// tf.searchsorted: for each of `values`, the index where it would go in `sorted_sequence` to
/// keep it sorted, over the last dimension (op "LowerBound" for side "left": the first such index;
/// "UpperBound" for "right": the last). sorted_sequence (..., n) and values (..., m) share their
/// leading dims; the result has values' shape and `out_type` (int32 or int64). A sequence that is
/// not sorted gives an unspecified position, as in TensorFlow.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, std::string_view side = "left",
                    DType out_type = DType::Int32);

/// tf.unique's two results.
struct UniqueResult {
  Tensor y;    ///< the distinct elements, in the order they first appear
  Tensor idx;  ///< for each element of x, the index of its value in y
};
/// tf.unique on a vector (op "Unique"): any dtype but bfloat16; NaNs are all distinct, as in
/// TensorFlow. `out_idx` is int32 or int64.
UniqueResult unique(const Tensor& x, DType out_idx = DType::Int32);

namespace math {

/// tf.math.top_k's two results.
struct TopK {
  Tensor values;   ///< the k largest along the last axis, largest first
  Tensor indices;  ///< their int32 positions in the input
};
/// tf.math.top_k: the `k` largest entries of each vector along the last axis and their indices
/// (op "TopKV2"); equal values keep their order (the lower index first), whether or not `sorted`
/// (accepted for TensorFlow's signature: the results are always sorted).
TopK top_k(const Tensor& input, std::int64_t k = 1, bool sorted = true);

}  // namespace math

namespace nn {
using math::top_k;  // tf.nn.top_k
}  // namespace nn

}  // namespace tapeflow
#pragma GCC visibility pop
