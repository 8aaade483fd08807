#pragma once
// What the layers, losses and metrics share (internal): activations by name, Keras's rank
// matching of labels, kernel initialisers, and the process-wide seed sequence used by layers
// built without a seed.

#include <cstdint>
#include <string_view>

#include "tapeflow/nn/dense.h"
#include "tapeflow/shape.h"
#include "tapeflow/tensor.h"

namespace tapeflow::layers::detail {

/// The activation Keras calls `name` (see layers::activation); errors name `layer`.
Activation named_activation(std::string_view layer, std::string_view name);

/// Keras's squeeze_or_expand_to_same_rank for labels: `y_true` loses a trailing size-1 dimension
/// when its rank is `rank` + 1, or gains one when its rank is `rank` - 1, so that labels of shape
/// (batch,) meet predictions of shape (batch, 1). Otherwise `y_true` as it is.
Tensor match_rank(const Tensor& y_true, int rank);

/// `sample_weight` cast to `values`' dtype, aligned with the leading axes of `values` as Keras
/// aligns a sample weight with its values (a trailing size-1 axis beyond values' rank is dropped;
/// a lower rank gets trailing size-1 axes, so that a (batch,) weight weights each sample's values;
/// broadcasting as is would align it with the last axis, and for square values silently weight
/// columns instead of rows), then broadcast to values' shape. Differentiable. Throws
/// InvalidArgumentError naming `who` and both shapes for an undefined weight or one that does
/// not broadcast so.
Tensor broadcast_sample_weight(std::string_view who, const Tensor& sample_weight, const Tensor& values);

/// The next seed of the process-wide sequence (splitmix64 of a counter).
std::uint64_t next_seed();

/// Throws InvalidArgumentError naming `layer` and the argument `what` unless `name` is a known
/// initialiser: "glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "orthogonal".
void check_initializer(std::string_view layer, std::string_view name,
                       std::string_view what = "kernel_initializer");

/// A kernel of `shape` drawn from the initialiser `name` (Keras's definitions):
///   glorot_uniform: U[-l, l], l = sqrt(6 / (fan_in + fan_out))
///   glorot_normal:  truncated-free normal, stddev = sqrt(2 / (fan_in + fan_out))
///   he_uniform:     U[-l, l], l = sqrt(6 / fan_in)
///   he_normal:      normal, stddev = sqrt(2 / fan_in)
///   orthogonal:     Keras's Orthogonal(gain=1) (see orthogonal_kernel); the fans are unused
/// (Keras's *_normal draw from a truncated normal; here the plain normal with the same stddev.)
Tensor initial_kernel(std::string_view layer, std::string_view name, const Shape& shape, std::int64_t fan_in,
                      std::int64_t fan_out, DType dtype, std::uint64_t seed);

/// Keras's Orthogonal initialiser (gain 1) for `shape` (rank >= 2): the shape is flattened to
/// rows = prod(shape[:-1]) by cols = shape[-1]; a normal matrix of (max(rows, cols), min(rows,
/// cols)) drawn with `seed` is QR-decomposed (Householder, on host doubles), Q's columns are
/// multiplied by the signs of R's diagonal, and Q is transposed back when rows < cols. The result
/// has orthonormal columns (rows >= cols) or orthonormal rows (rows < cols). Throws
/// InvalidArgumentError naming `layer` for a rank below 2.
Tensor orthogonal_kernel(std::string_view layer, const Shape& shape, DType dtype, std::uint64_t seed);

}  // namespace tapeflow::layers::detail
