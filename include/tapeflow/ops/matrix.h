#pragma once
/// \file ops/matrix.h
/// tf.linalg beyond products: Cholesky, triangular and general solves, inverses, determinants,
/// and the structure ops (band_part, diag, diag_part, set_diag, trace, adjoint), under
/// TensorFlow's names in namespace tapeflow::linalg.
///
///   namespace tf = tapeflow;
///   tf::Tensor k = tf::constant({{4.0, 2.0}, {2.0, 3.0}});   // symmetric positive definite
///   tf::Tensor l = tf::linalg::cholesky(k);                   // [[2, 0], [1, 1.414...]]
///   tf::Tensor y = tf::constant({{1.0}, {2.0}});
///   tf::Tensor a = tf::linalg::cholesky_solve(l, y);          // k^-1 y
///   tf::Tensor x = tf::linalg::solve(k, y);                   // the same, through LU
///   tf::Tensor d = tf::linalg::logdet(k);                     // log(8)
///
/// Every op works on a matrix (rank 2) or a batch of them (leading dimensions): the last two
/// dimensions are the matrix. The right-hand sides of the solves broadcast their batch
/// dimensions against the matrix's like matmul. The decompositions, solves and determinants take
/// float32 and float64 and run LAPACK (OpenBLAS's own; the triangular solve BLAS's trsm), a batch
/// split over tapeflow's threads; the band and diagonal ops copy elements of any dtype but
/// bfloat16, so an Inf or NaN outside the band never reaches it.
///
/// Gradients are TensorFlow's (linalg_grad.py), written with these ops and matmul, so they are
/// differentiable to any order; forward-mode derivatives (ForwardAccumulator, JVPs) come from the
/// gradients. Each op's gradient is checked against central differences in the op table.
///
/// Errors are typed and name the op, the shape and dtype, and for a batch the index of the
/// offending matrix, never a LAPACK status code:
///   - InvalidArgumentError: a rank below 2, a matrix that is not square where the op needs one,
///     right-hand sides whose rows differ from the matrix's or whose batch does not broadcast,
///     an integer, bool or bfloat16 tensor, a matrix too large for LAPACK's 32-bit sizes;
///   - InvalidArgumentError: a singular matrix in solve and inv (TensorFlow's "Input matrix is
///     not invertible."), a zero on the diagonal of triangular_solve's matrix, and a matrix
///     that is not symmetric positive definite in cholesky ("Cholesky decomposition was not
///     successful"); NaN in a matrix makes cholesky fail the same way, and propagates through
///     the others.
/// Empty matrices (0 x 0) and empty batches give empty results; the determinant of a 0 x 0
/// matrix is 1.

#include <cstdint>

#include "tapeflow/ops/linalg.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::linalg {

using tapeflow::einsum;
using tapeflow::matmul;
using tapeflow::tensordot;

/// tf.linalg.cholesky: the lower-triangular L with matrix = L L^T, for symmetric positive
/// definite matrices (op "Cholesky"). Only the lower triangle of `matrix` is read; the result's
/// upper triangle is zero. The gradient (TensorFlow's _CholeskyGrad, Murray's formula) is
/// symmetric, as a gradient with respect to a symmetric matrix is.
Tensor cholesky(const Tensor& matrix);

/// tf.linalg.triangular_solve: X with op(matrix) X = rhs, where matrix is lower (or upper)
/// triangular and op transposes when `adjoint` (op "MatrixTriangularSolve"). Only the triangle
/// named by `lower` is read; the gradient with respect to the matrix lies in that triangle.
/// matrix (..., n, n), rhs (..., n, k) -> (..., n, k).
Tensor triangular_solve(const Tensor& matrix, const Tensor& rhs, bool lower = true, bool adjoint = false);

/// tf.linalg.cholesky_solve: X with A X = rhs, given chol = cholesky(A): two triangular solves.
Tensor cholesky_solve(const Tensor& chol, const Tensor& rhs);

/// tf.linalg.solve: X with op(matrix) X = rhs through LU with partial pivoting (op
/// "MatrixSolve"); `adjoint` solves with matrix^T. matrix (..., n, n), rhs (..., n, k).
Tensor solve(const Tensor& matrix, const Tensor& rhs, bool adjoint = false);

/// tf.linalg.inv: the inverse of each matrix (or of its transpose when `adjoint`), op
/// "MatrixInverse", through LU.
Tensor inv(const Tensor& matrix, bool adjoint = false);

/// The two results of slogdet: det = sign * exp(log_abs_determinant).
struct Slogdet {
  Tensor sign;                 ///< -1, 0 or 1 for each matrix (no gradient)
  Tensor log_abs_determinant;  ///< log|det|; -inf for a singular matrix
};

/// tf.linalg.slogdet: the sign and log of the absolute value of each determinant, through LU
/// (op "LogMatrixDeterminant"); (..., n, n) -> (...) each. Safe where det over- or underflows.
/// The gradient of log|det| is inv(matrix)^T, which needs the matrix invertible.
Slogdet slogdet(const Tensor& matrix);

/// tf.linalg.det: each matrix's determinant, sign * exp(log|det|); (..., n, n) -> (...).
Tensor det(const Tensor& matrix);

/// tf.linalg.logdet: log det of symmetric positive definite matrices, 2 sum(log(diag(L))) with
/// L = cholesky(matrix); errors as cholesky's for any other.
Tensor logdet(const Tensor& matrix);

/// tf.linalg.band_part: keeps the elements within `num_lower` diagonals below the main one and
/// `num_upper` above (a negative count keeps that whole triangle), zeros the rest: band_part(x,
/// -1, 0) is the lower triangle, band_part(x, 0, 0) the diagonal. Any matrix shape (op
/// "MatrixBandPart").
Tensor band_part(const Tensor& input, std::int64_t num_lower, std::int64_t num_upper);

/// tf.linalg.diag_part: the main diagonal of each matrix, (..., m, n) -> (..., min(m, n)) (op
/// "MatrixDiagPart").
Tensor diag_part(const Tensor& input);

/// tf.linalg.diag: square matrices with `diagonal` on their main diagonal and zeros elsewhere,
/// (..., n) -> (..., n, n) (op "MatrixDiag").
Tensor diag(const Tensor& diagonal);

/// tf.linalg.set_diag: `input` with its main diagonal replaced by `diagonal`, (..., m, n) and
/// (..., min(m, n)) -> (..., m, n) (op "MatrixSetDiag").
Tensor set_diag(const Tensor& input, const Tensor& diagonal);

/// tf.linalg.trace: the sum of each matrix's main diagonal, (..., m, n) -> (...).
Tensor trace(const Tensor& x);

/// tf.linalg.adjoint (and tf.linalg.matrix_transpose): each matrix transposed, the conjugate
/// transpose of real matrices (op "Transpose").
Tensor adjoint(const Tensor& matrix);

}  // namespace tapeflow::linalg
#pragma GCC visibility pop
