// The shared parts of tf::linalg's LAPACK-backed ops (matrix_util.h).

#include "ops/matrix_util.h"

#include <fmt/ranges.h>

#include "tapeflow/ops/array.h"
#include "tapeflow/ops/matrix.h"
#include "tapeflow/ops/sort.h"

namespace tapeflow::ops {

void require_matrix(std::string_view op, std::string_view arg, const Tensor& x, bool square) {
  require_floating(x, op, arg);
  TAPEFLOW_REQUIRE(x.rank() >= 2, InvalidArgumentError,
                   "[{}] '{}' must be a matrix or a batch of matrices (rank >= 2), got a {}", op, arg,
                   describe(x));
  const std::int64_t m = x.shape()[x.rank() - 2], n = x.shape()[x.rank() - 1];
  TAPEFLOW_REQUIRE(!square || m == n, InvalidArgumentError,
                   "[{}] '{}' must be square (its last two dimensions equal), got a {}", op, arg,
                   describe(x));
  TAPEFLOW_REQUIRE(m <= cpu::lapack::kMaxLapackDim && n <= cpu::lapack::kMaxLapackDim, InvalidArgumentError,
                   "[{}] '{}' is a {}: a matrix dimension above {} exceeds LAPACK's 32-bit sizes", op, arg,
                   describe(x), cpu::lapack::kMaxLapackDim);
}

void require_rhs(std::string_view op, const Tensor& matrix, const Tensor& rhs) {
  require_matrix(op, "rhs", rhs, false);
  require_same_dtype(matrix, rhs, op);
  const int r = matrix.rank();
  TAPEFLOW_REQUIRE(
      rhs.rank() == r && std::equal(matrix.shape().dims().begin(), matrix.shape().dims().end() - 1,
                                    rhs.shape().dims().begin()),
      InvalidArgumentError,
      "[{}] 'rhs' must have shape (..., n, k) with the matrix's batch and n: matrix is a {}, rhs "
      "is a {}",
      op, describe(matrix), describe(rhs));
  TAPEFLOW_REQUIRE(
      rhs.shape()[r - 1] * std::max<std::int64_t>(1, rhs.shape()[r - 2]) <= cpu::lapack::kMaxLapackDim,
      InvalidArgumentError, "[{}] 'rhs' is a {}: more elements per matrix than LAPACK's 32-bit sizes", op,
      describe(rhs));
}

std::string batch_index(const Shape& s, std::int64_t flat) {
  if (s.rank() == 2) return "";
  std::vector<std::int64_t> idx(static_cast<std::size_t>(s.rank() - 2));
  for (int i = s.rank() - 3; i >= 0; --i) {
    idx[static_cast<std::size_t>(i)] = flat % s[i];
    flat /= s[i];
  }
  return fmt::format(" at batch index ({})", fmt::join(idx, ", "));
}

Tensor copy_of(const Tensor& x, std::string_view op) {
  Tensor out = detail::empty(x.shape(), x.dtype(), op);
  visit_floating(x.dtype(),
                 [&]<class T>() { std::ranges::copy(x.values<T>(), detail::mutable_data<T>(out)); });
  return out;
}

Tensor symmetrize(const Tensor& g) { return (g + linalg::adjoint(g)) * 0.5; }

std::pair<Tensor, Tensor> broadcast_batches(std::string_view op, const Tensor& matrix, const Tensor& rhs) {
  require_defined(matrix, op, "matrix");
  require_defined(rhs, op, "rhs");
  if (matrix.rank() < 2 || rhs.rank() < 2) return {matrix, rhs};  // the op's own check names them
  auto batch_of = [](const Shape& s) {
    return Shape(s.dims().first(static_cast<std::size_t>(s.rank() - 2)));
  };
  const Shape mb = batch_of(matrix.shape()), rb = batch_of(rhs.shape());
  if (mb == rb) return {matrix, rhs};
  const int rank = std::max(mb.rank(), rb.rank());
  for (int i = 1; i <= rank; ++i) {
    const std::int64_t dm = i <= mb.rank() ? mb[mb.rank() - i] : 1,
                       dr = i <= rb.rank() ? rb[rb.rank() - i] : 1;
    TAPEFLOW_REQUIRE(
        dm == dr || dm == 1 || dr == 1, InvalidArgumentError,
        "[{}] the batch dimensions of 'matrix' and 'rhs' must broadcast: matrix is a {} (batch {}), "
        "rhs is a {} (batch {})",
        op, describe(matrix), mb.to_string(), describe(rhs), rb.to_string());
  }
  const Shape batch = broadcast_shapes(mb, rb, op);
  auto with_batch = [&](const Tensor& t) {
    std::vector<std::int64_t> dims(batch.dims().begin(), batch.dims().end());
    dims.push_back(t.shape()[t.rank() - 2]);
    dims.push_back(t.shape()[t.rank() - 1]);
    return broadcast_to(t, Shape(dims));
  };
  return {with_batch(matrix), with_batch(rhs)};
}

Tensor rows_at(const Tensor& x, const Tensor& perm) {
  return take_along_axis(x, broadcast_to(expand_dims(perm, -1), x.shape()), -2);
}

}  // namespace tapeflow::ops
