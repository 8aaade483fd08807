#pragma once
/// \file ops/array.h
/// Shape and indexing ops. All validate shapes, axes and indices before touching data and throw
/// InvalidArgumentError naming the op, the argument and the received values.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tapeflow/axes.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// New shape with the same element count; one dimension may be -1 (inferred).
Tensor reshape(const Tensor& x, const std::vector<std::int64_t>& shape);
/// Permutes dimensions: output dimension i is input dimension perm[i] (TensorFlow's Transpose).
/// An empty `perm` reverses them (matrix transpose for rank 2); any other `perm` must be a
/// permutation of [0, rank) or InvalidArgumentError is thrown.
Tensor transpose(const Tensor& x, const std::vector<std::int64_t>& perm = {});
/// Inserts a size-1 dimension at `axis` in [-rank - 1, rank] (negative counts from the end of the
/// output): expand_dims(x of shape (2, 3), -1) has shape (2, 3, 1).
Tensor expand_dims(const Tensor& x, std::int64_t axis);
/// Removes size-1 dimensions: those in `axes` (one axis or a list), all of them if `axes` is
/// empty; a listed axis of size != 1 throws.
Tensor squeeze(const Tensor& x, const Axes& axes = {});
/// x repeated to `shape` by NumPy broadcasting (BroadcastTo); InvalidArgumentError when x's shape
/// does not broadcast to it. Gradient: dy summed over the broadcast dimensions.
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// Joins tensors along an existing axis (ConcatV2). They need the same dtype and rank and equal
/// dimensions except along `axis`; an empty list or scalars throw InvalidArgumentError.
Tensor concat(const std::vector<Tensor>& values, std::int64_t axis);
/// Joins tensors of one shape and dtype along a new axis in [-rank - 1, rank] (Pack).
Tensor stack(const std::vector<Tensor>& values, std::int64_t axis = 0);
/// Splits along `axis` into shape[axis] tensors with that dimension removed (Unpack).
std::vector<Tensor> unstack(const Tensor& x, std::int64_t axis = 0);
/// Splits into `num` equal parts along `axis` (the size must divide evenly).
std::vector<Tensor> split(const Tensor& x, std::int64_t num, std::int64_t axis = 0);
/// Splits into parts of the given sizes along `axis` (sizes must add up; one may be -1).
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t axis);
/// tf.slice: `size[i] == -1` takes everything from begin[i].
Tensor slice(const Tensor& x, const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& size);

/// One dimension of a strided_slice, like a Python index `start:stop:step` or a single index.
struct SliceSpec {
  /// Python's start and stop (std::nullopt where omitted); negative values count from the end.
  ///@{
  std::optional<std::int64_t> start, stop;
  ///@}
  /// Python's step: negative walks backwards; zero throws.
  std::int64_t step = 1;
  /// A single index that removes the dimension (x[2] rather than x[2:3]).
  bool index = false;
  /// x[i]: one index, removing the dimension.
  static SliceSpec at(std::int64_t i) { return {i, std::nullopt, 1, true}; }
  /// x[:]: the whole dimension.
  static SliceSpec all() { return {}; }
  /// x[start:stop:step], with std::nullopt for an omitted bound.
  static SliceSpec range(std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                         std::int64_t step = 1) {
    return {start, stop, step, false};
  }
};
/// NumPy/TensorFlow basic indexing: x[1:3, ::2, 0] is
/// strided_slice(x, {SliceSpec::range(1, 3), SliceSpec::range({}, {}, 2), SliceSpec::at(0)}).
/// Missing trailing dimensions are taken whole; a zero step throws.
Tensor strided_slice(const Tensor& x, const std::vector<SliceSpec>& specs);

/// Gathers slices of `params` along `axis` at integer `indices` (tf.gather); an index outside
/// [0, dim) throws InvalidArgumentError naming the first bad index and its position.
Tensor gather(const Tensor& params, const Tensor& indices, std::int64_t axis = 0);
/// tf.gather_nd: the last dimension of `indices` indexes the leading dimensions of `params`.
Tensor gather_nd(const Tensor& params, const Tensor& indices);
/// tf.scatter_nd, the inverse of gather_nd: zeros of `shape` with `updates` added at the index
/// tuples in the last dimension of `indices` (duplicates add up). updates must have shape
/// indices.shape[:-1] + shape[K:] where K = indices.shape[-1]; an index tuple outside `shape`
/// throws InvalidArgumentError naming it and its position.
Tensor scatter_nd(const Tensor& indices, const Tensor& updates, const Shape& shape);
/// tf.reverse: `x` with the order of its elements reversed along each of `axes` (negative axes
/// count from the end; an empty list reverses nothing). An axis out of range or given twice
/// throws InvalidArgumentError. reverse(images, -2) mirrors NHWC images left to right.
Tensor reverse(const Tensor& x, const Axes& axes);
/// Repeats `x` multiples[i] times along dimension i.
Tensor tile(const Tensor& x, const std::vector<std::int64_t>& multiples);
/// Pads with `constant_value`; paddings[i] = {before, after} for dimension i (non-negative).
Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings,
           double constant_value = 0.0);
/// One-hot encoding of integer `indices` with `depth` classes (float32 by default); an index
/// outside [0, depth) gives a row of off_value, as in TensorFlow.
Tensor one_hot(const Tensor& indices, std::int64_t depth, double on_value = 1.0, double off_value = 0.0,
               DType dtype = DType::Float32);

}  // namespace tapeflow
#pragma GCC visibility pop
