#pragma once
// The shared parts of tf::linalg's LAPACK-backed ops (matrix.cpp, matrix_decompositions.cpp,
// matrix_functions.cpp): argument checks whose messages name the op, the batch loop over
// tapeflow's pool that turns LAPACK's status into a typed error naming the batch index, and the
// batch broadcasting of the solves.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/lapack.h"
#include "ops/op_util.h"

namespace tapeflow::ops {

/// Checks one matrix argument: float32/float64, rank >= 2, square when `square`, sizes LAPACK
/// takes. The message names the op, the argument and the tensor.
void require_matrix(std::string_view op, std::string_view arg, const Tensor& x, bool square = true);

/// Checks right-hand sides against a square `matrix` (..., n, n): same dtype, (..., n, k) with
/// the same batch dimensions (the public functions broadcast them first).
void require_rhs(std::string_view op, const Tensor& matrix, const Tensor& rhs);

/// The matrices of a (..., m, n) tensor: how many, and their size.
struct Batch {
  std::int64_t count = 1, rows = 0, cols = 0;
  explicit Batch(const Shape& s) : rows(s[s.rank() - 2]), cols(s[s.rank() - 1]) {
    for (int i = 0; i < s.rank() - 2; ++i) count *= s[i];
  }
  std::int64_t size() const { return rows * cols; }
};

/// " at batch index (1, 0)" for matrix `flat` of a batch of shape s[:-2]; "" for one matrix.
std::string batch_index(const Shape& s, std::int64_t flat);

/// Runs `per_matrix(i)` (returning LAPACK's info) for every matrix of the batch over the pool,
/// then throws InvalidArgumentError for the first matrix whose info is not 0, with `what(info)`.
template <class F, class What>
void for_each_matrix(std::string_view op, const Tensor& x, std::int64_t flops_per_matrix, F per_matrix,
                     What what, bool results_of_empty = false) {
  // Empty matrices need no call (a batch of 2^40 of them returns at once), unless their results
  // have elements (`results_of_empty`: the identity that is a full Q of a 3 x 0 matrix).
  if (x.num_elements() == 0 && !results_of_empty) return;
  const Batch b(x.shape());
  std::vector<int> info(static_cast<std::size_t>(b.count), 0);
  const std::int64_t grain =
      std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(1, flops_per_matrix));
  cpu::parallel_for(b.count, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) info[static_cast<std::size_t>(i)] = per_matrix(i);
  });
  for (std::int64_t i = 0; i < b.count; ++i) {
    const int status = info[static_cast<std::size_t>(i)];
    TAPEFLOW_REQUIRE(status == 0, InvalidArgumentError, "[{}] {}{}; the input is a {}", op, what(status),
                     batch_index(x.shape(), i), describe(x));
  }
}

/// A copy of `x` (its elements, which the LAPACK kernels overwrite).
Tensor copy_of(const Tensor& x, std::string_view op);

inline int to_int(std::int64_t v) { return static_cast<int>(v); }

/// The symmetric part of a gradient with respect to a symmetric matrix: (g + g^T) / 2.
Tensor symmetrize(const Tensor& g);

/// (matrix, rhs) with their batch dimensions broadcast together, as the solves take them.
std::pair<Tensor, Tensor> broadcast_batches(std::string_view op, const Tensor& matrix, const Tensor& rhs);

/// The matrices of x with their rows permuted: row i of the result is x's row perm[i] (x[perm]).
Tensor rows_at(const Tensor& x, const Tensor& perm);

}  // namespace tapeflow::ops
