#pragma once
/// \file ops/creation.h
/// Creating tensors: constants from C++ values, filled tensors, ranges, identity matrices, random.
/// None of these are recorded on a tape: a constant has no history. All but
/// random::stateless_uniform are plain functions, not ops: their seed and sizes are C++ values.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

// The constant templates are instantiated in the library for every Element type. GCC gives an
// instantiation the visibility of the context it is defined in (hidden there), so each
// declaration carries the attribute that keeps it exported from a shared library.

/// A scalar tensor: constant(3.f) is float32, constant(3.0) float64, constant(3) int32,
/// constant(int64_t{3}) int64, constant(true) bool.
template <Element T>
[[gnu::visibility("default")]] Tensor constant(T value);
/// A vector: constant({1.f, 2.f}).
template <Element T>
[[gnu::visibility("default")]] Tensor constant(std::initializer_list<T> values);
/// A matrix: constant({{1.f, 2.f}, {3.f, 4.f}}); rows must have equal length.
template <Element T>
[[gnu::visibility("default")]] Tensor constant(std::initializer_list<std::initializer_list<T>> rows);
/// A rank-3 tensor from nested lists; ragged lists throw InvalidArgumentError.
template <Element T>
[[gnu::visibility("default")]] Tensor constant(
    std::initializer_list<std::initializer_list<std::initializer_list<T>>> values);
/// Values in row-major order with an explicit shape; the element count must match.
template <Element T>
[[gnu::visibility("default")]] Tensor constant(const std::vector<T>& values, const Shape& shape);
/// A vector of `values`, of shape (values.size(),).
template <Element T>
Tensor constant(const std::vector<T>& values) {
  return constant(values, Shape{static_cast<std::int64_t>(values.size())});
}
/// A constant converted to `dtype` (like tf.constant(3.0, dtype=tf.float64)).
Tensor constant(double value, DType dtype);

/// A tensor of `shape` and `dtype` filled with 0 / with 1.
///@{
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
///@}
/// A tensor of `shape` filled with `value` converted to `dtype`; throws if `value` is not
/// representable (NaN or a fraction into an integer dtype, out of range).
Tensor fill(const Shape& shape, double value, DType dtype = DType::Float32);
/// Zeros / ones with t's shape and dtype.
///@{
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
///@}

/// [start, start + delta, ...) below `limit` (above, for a negative delta), like tf.range.
/// The dtype defaults to int64 for integral arguments and float32 otherwise... here it is explicit.
Tensor range(double start, double limit, double delta = 1.0, DType dtype = DType::Int32);
/// 0, 1, ..., limit - 1, like tf.range(limit).
Tensor range(std::int64_t limit, DType dtype = DType::Int32);
/// `num` evenly spaced values from start to stop inclusive (tf.linspace); float32 by default.
Tensor linspace(double start, double stop, std::int64_t num, DType dtype = DType::Float32);
/// An identity matrix with `rows` rows and `cols` columns (default square).
Tensor eye(std::int64_t rows, std::optional<std::int64_t> cols = std::nullopt, DType dtype = DType::Float32);

namespace random {
/// Normally distributed values; the same seed gives the same values on every run and machine.
Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, DType dtype = DType::Float32,
              std::uint64_t seed = 0);
/// Uniform values in [minval, maxval).
Tensor uniform(const Shape& shape, double minval = 0.0, double maxval = 1.0, DType dtype = DType::Float32,
               std::uint64_t seed = 0);
/// Uniform values in [0, 1) of `shape` and `dtype` (float32 or float64) drawn from a seed
/// given as a tensor: `seed` is an int64 tensor of shape (2,), (key, counter), read when the op
/// runs (the op StatelessRandomUniform, TensorFlow's StatelessRandomUniformV2, as in
/// tf.random.stateless_uniform). Unlike the functions above it is an op on the dispatch path, so
/// a program that keeps (key, counter) in a Variable and advances the counter draws fresh values
/// at every call, also when the program is traced. The same seed gives the same values on every
/// run and machine; counters k and k + 1 give unrelated values. The values are
/// random::uniform(shape, 0, 1, dtype, s) for s = SplitMix64's finaliser of
/// key + (counter + 1) * 0x9E3779B97F4A7C15 (mod 2^64, key and counter taken as unsigned): the
/// seed of layers::Dropout's `counter`-th mask. Not differentiable. Throws InvalidArgumentError
/// (naming StatelessRandomUniform) for an undefined seed, a seed that is not int64 of shape (2,)
/// or a dtype that is not float, and ResourceExhaustedError for a shape over the allocation limit.
Tensor stateless_uniform(const Shape& shape, const Tensor& seed, DType dtype = DType::Float32);
}  // namespace random

}  // namespace tapeflow
#pragma GCC visibility pop
