#pragma once
/// \file ops/matrix.h
/// tf.linalg beyond products: Cholesky, triangular and general solves, inverses, determinants,
/// the LU, QR, symmetric eigen- and singular value decompositions, the functions built on them
/// (lu_solve, pinv, lstsq, norm, expm), and the structure ops (band_part, diag, diag_part,
/// set_diag, trace, adjoint), under TensorFlow's names in namespace tapeflow::linalg.
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
#include <string_view>

#include "tapeflow/axes.h"
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

/// The two results of lu: A[p] = L U (the rows of A in the order p gives them).
struct Lu {
  Tensor lu;  ///< L below the diagonal (its unit diagonal not stored), U on and above it
  Tensor p;   ///< the row permutation, (..., n) of output_idx_type
};

/// tf.linalg.lu: the LU decomposition with partial pivoting of each square matrix (op "Lu"),
/// (..., n, n) -> lu (..., n, n) and p (..., n), int32 or int64 (`output_idx_type`). A singular
/// matrix is factored too (U has a zero on its diagonal); its gradient, TensorFlow's _LuGrad,
/// solves with L and U, so it needs U invertible. p has no gradient.
Lu lu(const Tensor& input, DType output_idx_type = DType::Int32);

/// tf.linalg.lu_solve: X with A X = rhs, given lu(A)'s lower_upper and perm: the rows of rhs
/// permuted, then two triangular solves. rhs (..., n, k); batch dimensions broadcast.
Tensor lu_solve(const Tensor& lower_upper, const Tensor& perm, const Tensor& rhs);

/// tf.linalg.lu_reconstruct: A from lu(A)'s lower_upper and perm, (L U) with its rows put back.
Tensor lu_reconstruct(const Tensor& lower_upper, const Tensor& perm);

/// The two results of qr: input = q r.
struct Qr {
  Tensor q;  ///< orthonormal columns, (..., m, k) with k = min(m, n), or (..., m, m) when full
  Tensor r;  ///< upper triangular, (..., k, n), or (..., m, n) when full
};

/// tf.linalg.qr: the QR decomposition of each matrix, any shape (op "Qr"), by Householder
/// reflections (LAPACK's geqrf and orgqr); r's diagonal may be negative. The gradient is
/// TensorFlow's _QrGrad, for every shape but m > n with `full_matrices` (UnimplementedError, as
/// TensorFlow's NotImplementedError); it needs r's leading k x k block invertible.
Qr qr(const Tensor& input, bool full_matrices = false);

/// The two results of eigh: tensor = v diag(e) v^T.
struct Eigh {
  Tensor e;  ///< the eigenvalues of each matrix, (..., n), ascending
  Tensor v;  ///< the orthonormal eigenvectors in the columns, (..., n, n): v[..., :, i] is e[..., i]'s
};

/// tf.linalg.eigh: the eigenvalues and eigenvectors of each symmetric matrix (op
/// "SelfAdjointEigV2", LAPACK's syevd); only the lower triangle is read. A matrix holding NaN or
/// Inf gives NaN. The gradient (TensorFlow's) divides by the differences of the eigenvalues,
/// through TensorFlow's safe reciprocal: where two are equal the eigenvectors are not unique and
/// the term between them is dropped, so the gradient is right only for a loss that does not
/// depend on how they are chosen. A loss on the eigenvalues alone (or eigvalsh) has an exact
/// gradient everywhere. Each eigenvector's sign is LAPACK's.
Eigh eigh(const Tensor& tensor);

/// tf.linalg.eigvalsh: eigh's eigenvalues alone (the eigenvectors are not computed), (..., n).
Tensor eigvalsh(const Tensor& tensor);

/// The results of svd: tensor = u diag(s) v^T.
struct Svd {
  Tensor s;  ///< the singular values of each matrix, (..., k) with k = min(m, n), descending
  Tensor
      u;  ///< the left singular vectors, (..., m, k) or (..., m, m) when full; undefined without compute_uv
  Tensor
      v;  ///< the right singular vectors, (..., n, k) or (..., n, n) when full; undefined without compute_uv
};

/// tf.linalg.svd: the singular value decomposition of each matrix, any shape (op "Svd", LAPACK's
/// gesdd). Returns v, not v^T, as TensorFlow does. A matrix holding NaN or Inf gives NaN. The
/// gradient is TensorFlow's _SvdGrad: through s alone it is u v^T, defined everywhere; through
/// u and v it divides by differences of squared singular values and, for m != n, by the
/// singular values, through TensorFlow's safe reciprocal (a term over an equal pair, or a zero
/// singular value, is dropped); with `full_matrices` and |m - n| > 1 it is not implemented
/// (UnimplementedError, as TensorFlow's).
Svd svd(const Tensor& tensor, bool full_matrices = false, bool compute_uv = true);

/// tf.linalg.pinv: the Moore-Penrose pseudo-inverse of each matrix, v diag(1/s) u^T over the
/// singular values above rcond * max(s); (..., m, n) -> (..., n, m). rcond < 0 takes
/// TensorFlow's default, 10 * max(m, n) * epsilon of the dtype.
Tensor pinv(const Tensor& a, double rcond = -1.0);

/// tf.linalg.lstsq: X minimising ||matrix X - rhs||^2 + l2_regularizer ||X||^2 for each matrix
/// (..., m, n) and rhs (..., m, k) -> (..., n, k); batch dimensions broadcast. `fast` solves
/// the regularised normal equations by Cholesky (the full-rank matrix's, or for m < n the
/// minimum-norm solution's); otherwise QR of the matrix (m >= n) or of its transpose (m < n),
/// more accurate for an ill-conditioned matrix and without l2_regularizer. Differentiable.
Tensor lstsq(const Tensor& matrix, const Tensor& rhs, double l2_regularizer = 0.0, bool fast = true);

/// tf.norm / tf.linalg.norm with a named order: "euclidean" (the default: the square root of
/// the sum of squares over `axis`, all of it when axis is empty), "fro" (the same, for a
/// matrix), or "nuc" (a matrix's nuclear norm, the sum of its singular values). A matrix norm
/// takes two axes (the last two when axis is empty); a vector norm one or all.
Tensor norm(const Tensor& tensor, std::string_view ord = "euclidean", const Axes& axis = {},
            bool keepdims = false);

/// tf.norm with a numeric order. Over a vector (one axis, or all when axis is empty): 1, 2, inf
/// or any p > 0, (sum |x|^p)^(1/p). Over a matrix (two axes): 1 (the largest column sum of
/// absolute values), 2 (the largest singular value), or inf (the largest row sum).
Tensor norm(const Tensor& tensor, double ord, const Axes& axis = {}, bool keepdims = false);

/// tf.linalg.expm: the matrix exponential of each square matrix, by scaling and squaring with
/// Padé approximants (Higham 2005, TensorFlow's algorithm): each matrix's 1-norm picks the
/// degree (3 to 13 in float64, 3 to 7 in float32) and the number of squarings, Higham's
/// ceil(log2(norm / theta)) where TensorFlow's floor loses digits. Built from matmul, solve and
/// while_loop, so it is differentiable and traces into tf::function. NaN or Inf gives NaN or Inf.
Tensor expm(const Tensor& input);

}  // namespace tapeflow::linalg
#pragma GCC visibility pop
