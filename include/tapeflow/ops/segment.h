#pragma once
/// \file ops/segment.h
/// Segment reductions and counting, with TensorFlow's names in namespace tapeflow::math: the
/// unsorted forms (tf.math.unsorted_segment_sum, _mean, _max, _min) take any segment ids and a
/// segment count; the sorted forms (tf.math.segment_sum, _mean, _max, _min) take ids in
/// ascending order and give ids[-1] + 1 segments; tf.math.bincount counts.
///
///   namespace tf = tapeflow;
///   tf::Tensor data = tf::constant({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
///   tf::Tensor ids = tf::constant<std::int32_t>({0, 2, 0});
///   tf::math::unsorted_segment_sum(data, ids, 3);  // [[6, 8], [0, 0], [3, 4]]
///   tf::math::segment_max(data, tf::constant<std::int32_t>({0, 0, 1}));  // [[3, 4], [5, 6]]
///   tf::math::bincount(tf::constant<std::int32_t>({1, 1, 3}));  // [0, 2, 0, 1]
///
/// `segment_ids` (int32 or int64) has the shape of a prefix of data's: data (d0, ..., dk, ...)
/// with ids (d0, ..., dk) reduces the ids' dims away, giving (num_segments, ...). The unsorted
/// forms skip negative ids, as TensorFlow does; an id >= num_segments throws. The sorted forms
/// throw on a negative or decreasing id, naming its position.
///
/// Empty segments: the sum and mean are 0; unsorted_segment_max (_min) gives the dtype's lowest
/// (highest) value, as TensorFlow does, and segment_max (_min) gives 0, as TensorFlow does.
///
/// Gradients: the sums' gathers dy back along the ids; the means' divides it by the segment's size;
/// max's and min's (TensorFlow's) split dy equally among the elements equal to the result. Each
/// is written with these ops and gather, so they are differentiable to any order.

#include <cstdint>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::math {

/// tf.math.unsorted_segment_sum (op "UnsortedSegmentSum").
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments);
/// tf.math.unsorted_segment_mean: the sum over the segment's size (a sum over its size, never 0 / 0).
Tensor unsorted_segment_mean(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments);
/// tf.math.unsorted_segment_max (op "UnsortedSegmentMax"); NaN propagates.
Tensor unsorted_segment_max(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments);
/// tf.math.unsorted_segment_min (op "UnsortedSegmentMin"); NaN propagates.
Tensor unsorted_segment_min(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments);

/// tf.math.segment_sum: ids sorted ascending (op "SegmentSum").
Tensor segment_sum(const Tensor& data, const Tensor& segment_ids);
/// tf.math.segment_mean: ids sorted ascending; the sum over the segment's size.
Tensor segment_mean(const Tensor& data, const Tensor& segment_ids);
/// tf.math.segment_max: ids sorted ascending (op "SegmentMax"); NaN propagates.
Tensor segment_max(const Tensor& data, const Tensor& segment_ids);
/// tf.math.segment_min: ids sorted ascending (op "SegmentMin"); NaN propagates.
Tensor segment_min(const Tensor& data, const Tensor& segment_ids);

/// tf.math.bincount's options.
struct BincountOptions {
  Tensor weights{};             ///< undefined: count 1 per element; else arr's shape, summed per bin
  std::int64_t minlength = 0;   ///< at least this many bins
  std::int64_t maxlength = -1;  ///< at most this many bins (values beyond are dropped); -1: no bound
  DType dtype = DType::Int32;   ///< the counts' dtype without weights (with weights: theirs)
};
/// tf.math.bincount of non-negative int32 or int64 values (op "Bincount"): max(arr) + 1 bins, at
/// least minlength and at most maxlength. A negative value throws, naming its position; a
/// result too large for memory is a ResourceExhaustedError. Not differentiable.
Tensor bincount(const Tensor& arr, const BincountOptions& options = {});

}  // namespace tapeflow::math
#pragma GCC visibility pop
