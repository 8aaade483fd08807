#pragma once
/// \file tensor_spec.h
/// TensorSpec: the dtype and shape of one tensor of a function's signature, whose dimensions may
/// be unknown (TensorFlow's `tf.TensorSpec`). tf::function's input_signature, save_function and
/// the function files use it.
///
///   tf::TensorSpec{{-1, 784}, tf::float32, "images"}   // any batch of 784-vectors
///   tf::TensorSpec::of(x).to_string()                   // "float32[32, 784]"

#include <cstdint>
#include <string>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow

namespace tapeflow {

/// One tensor of a signature: a dtype and a shape whose dims may be unknown (-1).
struct TensorSpec {
  std::vector<std::int64_t> dims;  ///< one per axis; -1 is unknown (any size)
  DType dtype = DType::Float32;    ///< the tensor's dtype
  std::string name = {};           ///< optional, for messages and exported files
  /// The spec a tensor has: its shape and dtype, every dim known.
  static TensorSpec of(const Tensor& t);
  /// Whether `t` has this dtype and rank and every known dim.
  bool matches(const Tensor& t) const;
  /// "float32[?, 784]"
  std::string to_string() const;
};

}  // namespace tapeflow
#pragma GCC visibility pop
