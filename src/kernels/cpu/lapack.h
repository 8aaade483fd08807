#pragma once
// LAPACK on one row-major matrix: the kernels of tf::linalg's decompositions and solves
// (src/ops/matrix.cpp). OpenBLAS ships LAPACK (its own potrf, getrf and getrs, the reference
// getri) but not LAPACKE, so lapack.cpp declares the Fortran entry points itself.
//
// LAPACK is column-major: a row-major n x n matrix A is, to LAPACK, A^T. Each function below
// states what it computes of the row-major matrix it is given; lapack.cpp says how that maps.
// Sizes fit LAPACK's 32-bit integers (the caller checks kMaxLapackDim). Each returns 0 on success
// or LAPACK's positive `info`: the 1-based index of the failing pivot or minor.

#include <cstdint>
#include <limits>

namespace tapeflow::cpu::lapack {

/// The largest n (and n * k) the kernels accept: LAPACK's sizes are 32-bit.
inline constexpr std::int64_t kMaxLapackDim = std::numeric_limits<int>::max();

/// a (n x n, symmetric positive definite; only its lower triangle is read) becomes L, lower
/// triangular with A = L L^T, its strict upper triangle zeroed. Returns k > 0 when the leading
/// minor of order k is not positive definite (or holds NaN).
template <class T>
int cholesky_lower(T* a, int n);

/// Solves op(A) X = B in place of b (n x k, row-major) for A (n x n) lower or upper triangular,
/// op(A) = A^T when `transpose`. Returns i > 0 when A's diagonal element i (1-based) is zero.
template <class T>
int triangular_solve(const T* a, T* b, int n, int k, bool lower, bool transpose);

/// Solves op(A) X = B in place of b (n x k, row-major) through LU with partial pivoting, with
/// op(A) = A^T when `transpose`; `lu` (n x n) is A on entry and its factors on return, `work`
/// holds n * k elements. Returns i > 0 when U's diagonal element i is exactly zero (A singular).
template <class T>
int solve(T* lu, T* b, int n, int k, bool transpose, int* pivots, T* work);

/// Solves op(A) X = B in place of b (n x k, row-major) with A's LU factors and pivots as solve
/// left them (the pivots 1-based, each in [1, n]); `work` holds n * k elements.
template <class T>
void lu_solve(const T* lu, const int* pivots, T* b, int n, int k, bool transpose, T* work);

/// a (n x n) becomes its inverse. Returns i > 0 when A is singular.
template <class T>
int inverse(T* a, int n, int* pivots);

/// The sign (-1, 0, 1) and log |det A| of a (n x n), which is overwritten with its LU factors.
/// A singular matrix gives sign 0 and log |det| = -inf.
template <class T>
void sign_log_abs_det(T* a, int n, int* pivots, T* sign, T* log_abs_det);

// The decompositions behind tf::linalg's lu, qr, eigh and svd (lapack_decompositions.cpp). Each
// reads a row-major input it does not modify and writes row-major results; a matrix holding NaN
// or Inf gives NaN results (LAPACK's iterative eigen- and singular-value solvers are not
// defined on them).

/// LU with partial pivoting of a (n x n): `lu` gets L (unit diagonal, not stored) below the
/// diagonal and U on and above it, with A[perm] = L U, perm[i] the 0-based row of A at row i.
/// A singular matrix is factored too (U then has a zero on its diagonal).
template <class T>
void lu(const T* a, int n, T* lu, int* perm);

/// QR of a (m x n) by Householder reflections: q (m x qc, orthonormal columns) and r (qc x n,
/// upper triangular) with A = Q R; qc = min(m, n), or m when `full`.
template <class T>
void qr(const T* a, int m, int n, T* q, T* r, bool full);

/// Eigen-decomposition of the symmetric a (n x n; only its lower triangle is read): w (n) the
/// eigenvalues in ascending order, and when v is not null, v (n x n) the orthonormal
/// eigenvectors in its columns. Returns i > 0 when the solver failed to converge.
template <class T>
int symmetric_eigen(const T* a, int n, T* w, T* v);

/// Singular values of a (m x n): s (k = min(m, n)) in descending order, and when u and v are
/// not null, the singular vectors with A = U diag(s) V^T: u (m x uc) and v (n x vc), where uc =
/// vc = k, or uc = m and vc = n when `full`. Returns i > 0 when the solver failed to converge.
template <class T>
int svd(const T* a, int m, int n, T* s, T* u, T* v, bool full);

}  // namespace tapeflow::cpu::lapack
