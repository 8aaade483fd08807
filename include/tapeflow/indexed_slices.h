#pragma once
/// \file indexed_slices.h
/// IndexedSlices: a tensor given by some of its rows (TensorFlow's tf.IndexedSlices). Row
/// `indices[i]` of a tensor of shape `dense_shape` is `values[i]`; every other row is zero, and
/// rows whose index repeats add up.
///
/// It is the gradient of a table read by gather along axis 0, such as an Embedding layer's:
/// GradientTape::gradient() gives the rows the batch looked up instead of a table of zeros, and
/// the optimizers that can (SGD without momentum, Adagrad) update only those rows.
///
///   tf::Gradient g = tape.gradient(loss, embed.embeddings());
///   if (const tf::IndexedSlices* rows = g.indexed_slices())
///     rows->indices();                  // the ids the batch looked up, in order, repeats kept
///   tf::Tensor dense = *g;              // the dense form, made on first read
///
/// The gradient stays row-sparse while it flows into a source, through a variable's read and
/// tf.identity, and when it is added to another one (the rows are concatenated, as TensorFlow
/// does); an op that reads it, or a dense gradient added to it, gets the dense form.

#include <iosfwd>
#include <string>

#include "tapeflow/shape.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A row-sparse tensor (see above).
class IndexedSlices {
 public:
  /// `values` has shape (n,) + dense_shape[1:] and a floating dtype; `indices` is an int32 or
  /// int64 vector of n rows in [0, dense_shape[0]). Throws InvalidArgumentError naming
  /// IndexedSlices, the shapes and the dtypes otherwise (an index out of range names its position).
  IndexedSlices(Tensor values, Tensor indices, Shape dense_shape);

  /// The rows, (n,) + dense_shape[1:].
  const Tensor& values() const { return values_; }
  /// The row of each value, an int32 or int64 vector of n.
  const Tensor& indices() const { return indices_; }
  /// The shape of the dense tensor.
  const Shape& dense_shape() const { return dense_shape_; }
  /// The shape of the dense tensor as TensorFlow's dense_shape tensor: an int32 vector, as
  /// TensorFlow gives a variable's, or int64 where a dimension needs it.
  Tensor dense_shape_tensor() const;
  /// The dtype of the values and of the dense tensor.
  DType dtype() const { return values_.dtype(); }

  /// The dense tensor (tf.convert_to_tensor): zeros of dense_shape with each row of values added
  /// at its index, in order. Computed with tf::math::unsorted_segment_sum, so a recording tape
  /// differentiates through it.
  Tensor to_dense() const;

 private:
  Tensor values_;
  Tensor indices_;
  Shape dense_shape_;
};

/// As TensorFlow prints one: "IndexedSlices(indices=tf.Tensor(...), values=tf.Tensor(...),
/// dense_shape=tf.Tensor(...))", the dense shape an int32 vector (int64 where a dimension needs it).
std::string to_string(const IndexedSlices& slices);
/// Writes to_string(slices) to `os`.
std::ostream& operator<<(std::ostream& os, const IndexedSlices& slices);

}  // namespace tapeflow
#pragma GCC visibility pop
