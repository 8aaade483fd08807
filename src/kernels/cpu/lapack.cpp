// LAPACK through its Fortran entry points (OpenBLAS exports them; Debian's OpenBLAS has no
// LAPACKE). Fortran passes every argument by reference and each CHARACTER argument's length as a
// hidden trailing size_t, which the declarations below include.
//
// Row-major to column-major: the row-major matrix A is LAPACK's A^T, so
//   - Cholesky factors A^T = A with uplo 'U' (reading A's lower triangle), U^T U = A, and U^T,
//     lower, is what the row-major buffer then holds;
//   - the LU factors are those of A^T, whose determinant is A's; a solve with A uses them with
//     trans 'T', one with A^T with 'N';
//   - the inverse of A^T, read row-major, is A^{-1}.
// The right-hand sides are copied into column-major order for getrs and back.

#include "kernels/cpu/lapack.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, std::size_t uplo_len);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t uplo_len);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info, std::size_t trans_len);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info, std::size_t trans_len);
void sgetri_(const int* n, float* a, const int* lda, const int* ipiv, float* work, const int* lwork,
             int* info);
void dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work, const int* lwork,
             int* info);
}

namespace tapeflow::cpu::lapack {
namespace {

template <class T>
void potrf(const char* uplo, const int* n, T* a, const int* lda, int* info) {
  if constexpr (std::is_same_v<T, float>)
    spotrf_(uplo, n, a, lda, info, 1);
  else
    dpotrf_(uplo, n, a, lda, info, 1);
}

template <class T>
void getrf(const int* n, T* a, int* ipiv, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sgetrf_(n, n, a, n, ipiv, info);
  else
    dgetrf_(n, n, a, n, ipiv, info);
}

template <class T>
void getrs(const char* trans, const int* n, const int* nrhs, const T* a, const int* ipiv, T* b, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sgetrs_(trans, n, nrhs, a, n, ipiv, b, n, info, 1);
  else
    dgetrs_(trans, n, nrhs, a, n, ipiv, b, n, info, 1);
}

template <class T>
void getri(const int* n, T* a, const int* ipiv, T* work, const int* lwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sgetri_(n, a, n, ipiv, work, lwork, info);
  else
    dgetri_(n, a, n, ipiv, work, lwork, info);
}

}  // namespace

template <class T>
int cholesky_lower(T* a, int n) {
  if (n == 0) return 0;
  int info = 0;
  potrf("U", &n, a, &n, &info);
  if (info != 0) return info;
  const auto nn = static_cast<std::ptrdiff_t>(n);
  // OpenBLAS's potrf (unlike the reference LAPACK's) lets NaN through; a NaN in the lower
  // triangle reaches the diagonal at its row.
  for (std::ptrdiff_t i = 0; i < nn; ++i)
    if (std::isnan(a[i * nn + i])) return static_cast<int>(i + 1);
  for (std::ptrdiff_t i = 0; i < nn; ++i)
    for (std::ptrdiff_t j = i + 1; j < nn; ++j) a[i * nn + j] = T(0);
  return 0;
}

template <class T>
int triangular_solve(const T* a, T* b, int n, int k, bool lower, bool transpose) {
  const auto nn = static_cast<std::ptrdiff_t>(n);
  for (std::ptrdiff_t i = 0; i < nn; ++i)
    if (a[i * nn + i] == T(0)) return static_cast<int>(i + 1);
  if (n == 0 || k == 0) return 0;
  const CBLAS_UPLO uplo = lower ? CblasLower : CblasUpper;
  const CBLAS_TRANSPOSE op = transpose ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_strsm(CblasRowMajor, CblasLeft, uplo, op, CblasNonUnit, n, k, 1.0f, a, n, b, k);
  else
    cblas_dtrsm(CblasRowMajor, CblasLeft, uplo, op, CblasNonUnit, n, k, 1.0, a, n, b, k);
  return 0;
}

template <class T>
void lu_solve(const T* lu, const int* pivots, T* b, int n, int k, bool transpose, T* work) {
  if (n == 0 || k == 0) return;
  int info = 0;
  const auto nn = static_cast<std::ptrdiff_t>(n), kk = static_cast<std::ptrdiff_t>(k);
  for (std::ptrdiff_t i = 0; i < nn; ++i)
    for (std::ptrdiff_t j = 0; j < kk; ++j) work[j * nn + i] = b[i * kk + j];
  // The factors are A^T's: A X = B is (A^T)^T X = B.
  getrs(transpose ? "N" : "T", &n, &k, lu, pivots, work, &info);
  for (std::ptrdiff_t i = 0; i < nn; ++i)
    for (std::ptrdiff_t j = 0; j < kk; ++j) b[i * kk + j] = work[j * nn + i];
}

template <class T>
int solve(T* lu, T* b, int n, int k, bool transpose, int* pivots, T* work) {
  if (n == 0) return 0;
  int info = 0;
  getrf(&n, lu, pivots, &info);
  if (info != 0) return info;
  lu_solve(lu, pivots, b, n, k, transpose, work);
  return 0;
}

template <class T>
int inverse(T* a, int n, int* pivots) {
  if (n == 0) return 0;
  int info = 0;
  getrf(&n, a, pivots, &info);
  if (info != 0) return info;
  T size = 0;
  int query = -1;
  getri(&n, a, pivots, &size, &query, &info);
  int lwork = std::max(n, static_cast<int>(size));
  std::vector<T> work(static_cast<std::size_t>(lwork));
  getri(&n, a, pivots, work.data(), &lwork, &info);
  return info;
}

template <class T>
void sign_log_abs_det(T* a, int n, int* pivots, T* sign, T* log_abs_det) {
  *sign = T(1);
  *log_abs_det = T(0);
  if (n == 0) return;
  int info = 0;
  getrf(&n, a, pivots, &info);
  if (info != 0) {
    *sign = T(0);
    *log_abs_det = -std::numeric_limits<T>::infinity();
    return;
  }
  const auto nn = static_cast<std::ptrdiff_t>(n);
  T s = T(1), log_sum = T(0);
  for (std::ptrdiff_t i = 0; i < nn; ++i) {
    const T u = a[i * nn + i];
    if (pivots[i] != i + 1) s = -s;
    if (u < T(0)) s = -s;
    log_sum += std::log(std::abs(u));
  }
  *sign = std::isnan(log_sum) ? log_sum : s;
  *log_abs_det = log_sum;
}

#define TAPEFLOW_LAPACK_INSTANTIATE(T)                                     \
  template int cholesky_lower<T>(T*, int);                                 \
  template int triangular_solve<T>(const T*, T*, int, int, bool, bool);    \
  template int solve<T>(T*, T*, int, int, bool, int*, T*);                 \
  template void lu_solve<T>(const T*, const int*, T*, int, int, bool, T*); \
  template int inverse<T>(T*, int, int*);                                  \
  template void sign_log_abs_det<T>(T*, int, int*, T*, T*);
TAPEFLOW_LAPACK_INSTANTIATE(float)
TAPEFLOW_LAPACK_INSTANTIATE(double)
#undef TAPEFLOW_LAPACK_INSTANTIATE

}  // namespace tapeflow::cpu::lapack
