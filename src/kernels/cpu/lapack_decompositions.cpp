// LU, QR, symmetric eigen- and singular value decompositions through LAPACK's Fortran entry points
// (getrf, geqrf + orgqr, syevd, gesdd), declared here as lapack.cpp declares its own.
//
// LAPACK is column-major and a row-major buffer is, to it, the transpose. LU and QR must factor A
// itself (a row-pivoted LU of A^T is a column-pivoted one of A), so they work on a column-major
// copy and write the factors back row-major. The symmetric eigensolver takes the row-major buffer
// as it is (A^T = A; its lower triangle is LAPACK's upper). The SVD of the row-major buffer is
// that of A^T = V S U^T: LAPACK's U is A's V and its V^T, read row-major, is A's U.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/cpu/lapack.h"

extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len,
             std::size_t uplo_len);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len,
             std::size_t uplo_len);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
             const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info,
             std::size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork,
             int* info, std::size_t jobz_len);
}

namespace tapeflow::cpu::lapack {
namespace {

template <class T>
void getrf(int n, T* a, int* ipiv, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sgetrf_(&n, &n, a, &n, ipiv, info);
  else
    dgetrf_(&n, &n, a, &n, ipiv, info);
}

template <class T>
void geqrf(int m, int n, T* a, T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  else
    dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}

template <class T>
void orgqr(int m, int n, int k, T* a, const T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  else
    dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}

template <class T>
void syevd(const char* jobz, int n, T* a, T* w, T* work, int lwork, int* iwork, int liwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    ssyevd_(jobz, "U", &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  else
    dsyevd_(jobz, "U", &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}

template <class T>
void gesdd(const char* jobz, int m, int n, T* a, T* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork,
           int* iwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    sgesdd_(jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  else
    dgesdd_(jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

/// LAPACK's answer to a workspace query (lwork = -1), as a size.
template <class T>
int workspace(T query) {
  return std::max(1, static_cast<int>(query));
}

std::size_t at(std::ptrdiff_t i, std::ptrdiff_t j, std::ptrdiff_t ld) {
  return static_cast<std::size_t>(i + j * ld);
}

/// dst (rows x cols, row-major) from src (column-major, leading dimension ld).
template <class T>
void from_column_major(const T* src, std::ptrdiff_t rows, std::ptrdiff_t cols, std::ptrdiff_t ld, T* dst) {
  for (std::ptrdiff_t i = 0; i < rows; ++i)
    for (std::ptrdiff_t j = 0; j < cols; ++j) dst[i * cols + j] = src[at(i, j, ld)];
}

/// The rows x cols row-major matrix as a column-major one (leading dimension rows).
template <class T>
std::vector<T> to_column_major(const T* src, std::ptrdiff_t rows, std::ptrdiff_t cols) {
  std::vector<T> out(static_cast<std::size_t>(rows * cols));
  for (std::ptrdiff_t i = 0; i < rows; ++i)
    for (std::ptrdiff_t j = 0; j < cols; ++j) out[at(i, j, rows)] = src[i * cols + j];
  return out;
}

/// A rows x cols row-major identity (ones on the main diagonal).
template <class T>
void identity(T* dst, std::ptrdiff_t rows, std::ptrdiff_t cols) {
  std::fill_n(dst, rows * cols, T(0));
  for (std::ptrdiff_t i = 0; i < std::min(rows, cols); ++i) dst[i * cols + i] = T(1);
}

template <class T>
bool all_finite(const T* a, std::ptrdiff_t count) {
  return std::all_of(a, a + count, [](T v) { return std::isfinite(v); });
}

}  // namespace

template <class T>
void lu(const T* a, int n, T* lu, int* perm) {
  const std::ptrdiff_t nn = n;
  std::iota(perm, perm + n, 0);
  if (n == 0) return;
  std::vector<T> c = to_column_major(a, nn, nn);
  std::vector<int> ipiv(static_cast<std::size_t>(n));
  int info = 0;  // > 0 for a singular matrix, whose factors are still complete
  getrf(n, c.data(), ipiv.data(), &info);
  from_column_major(c.data(), nn, nn, nn, lu);
  // getrf's pivots are swaps made in turn: row i with row ipiv[i] - 1.
  for (std::ptrdiff_t i = 0; i < nn; ++i) std::swap(perm[i], perm[ipiv[static_cast<std::size_t>(i)] - 1]);
}

template <class T>
void qr(const T* a, int m, int n, T* q, T* r, bool full) {
  const std::ptrdiff_t mm = m, nn = n, k = std::min(mm, nn), qc = full ? mm : k;
  if (k == 0) {
    identity(q, mm, qc);
    std::fill_n(r, qc * nn, T(0));
    return;
  }
  // A's reflectors in the first n columns of an m x max(n, qc) column-major buffer; orgqr then
  // turns its first qc columns into Q.
  std::vector<T> c = to_column_major(a, mm, nn);
  c.resize(static_cast<std::size_t>(mm * std::max(nn, qc)), T(0));
  std::vector<T> tau(static_cast<std::size_t>(k));
  int info = 0;
  T query = 0;
  geqrf(m, n, c.data(), tau.data(), &query, -1, &info);
  std::vector<T> work(static_cast<std::size_t>(workspace(query)));
  geqrf(m, n, c.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
  for (std::ptrdiff_t i = 0; i < qc; ++i)
    for (std::ptrdiff_t j = 0; j < nn; ++j) r[i * nn + j] = j >= i ? c[at(i, j, mm)] : T(0);
  const int qcols = static_cast<int>(qc), kk = static_cast<int>(k);
  orgqr(m, qcols, kk, c.data(), tau.data(), &query, -1, &info);
  work.resize(static_cast<std::size_t>(std::max(workspace(query), static_cast<int>(work.size()))));
  orgqr(m, qcols, kk, c.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
  from_column_major(c.data(), mm, qc, mm, q);
}

template <class T>
int symmetric_eigen(const T* a, int n, T* w, T* v) {
  const std::ptrdiff_t nn = n;
  if (n == 0) return 0;
  bool finite = true;
  for (std::ptrdiff_t i = 0; i < nn && finite; ++i) finite = all_finite(a + i * nn, i + 1);
  if (!finite) {
    std::fill_n(w, nn, std::numeric_limits<T>::quiet_NaN());
    if (v) std::fill_n(v, nn * nn, std::numeric_limits<T>::quiet_NaN());
    return 0;
  }
  std::vector<T> c(a, a + nn * nn);  // LAPACK's upper triangle is the row-major lower one
  const char* jobz = v ? "V" : "N";
  T query = 0;
  int iquery = 0, info = 0;
  syevd(jobz, n, c.data(), w, &query, -1, &iquery, -1, &info);
  std::vector<T> work(static_cast<std::size_t>(workspace(query)));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(1, iquery)));
  syevd(jobz, n, c.data(), w, work.data(), static_cast<int>(work.size()), iwork.data(),
        static_cast<int>(iwork.size()), &info);
  if (info != 0) return info;
  // Column j of LAPACK's result is eigenvector j: row j of the row-major buffer.
  if (v) from_column_major(c.data(), nn, nn, nn, v);
  return 0;
}

template <class T>
int svd(const T* a, int m, int n, T* s, T* u, T* v, bool full) {
  const std::ptrdiff_t mm = m, nn = n, k = std::min(mm, nn);
  const std::ptrdiff_t uc = full ? mm : k, vc = full ? nn : k;
  const bool vectors = u != nullptr;
  if (k == 0) {
    if (vectors) {
      identity(u, mm, uc);
      identity(v, nn, vc);
    }
    return 0;
  }
  if (!all_finite(a, mm * nn)) {
    constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
    std::fill_n(s, k, kNaN);
    if (vectors) {
      std::fill_n(u, mm * uc, kNaN);
      std::fill_n(v, nn * vc, kNaN);
    }
    return 0;
  }
  // LAPACK factors B = A^T (n x m, column-major): B = Ub S Vb^T with Ub (n x vc) and Vb^T (uc x m).
  std::vector<T> b(a, a + mm * nn);
  std::vector<T> ub(vectors ? static_cast<std::size_t>(nn * vc) : 1);
  std::vector<T> vbt(vectors ? static_cast<std::size_t>(uc * mm) : 1);
  const char* jobz = !vectors ? "N" : full ? "A" : "S";
  const int ldu = vectors ? n : 1, ldvt = vectors ? static_cast<int>(uc) : 1;
  std::vector<int> iwork(static_cast<std::size_t>(8 * k));
  T query = 0;
  int info = 0;
  gesdd(jobz, n, m, b.data(), s, ub.data(), ldu, vbt.data(), ldvt, &query, -1, iwork.data(), &info);
  std::vector<T> work(static_cast<std::size_t>(workspace(query)));
  gesdd(jobz, n, m, b.data(), s, ub.data(), ldu, vbt.data(), ldvt, work.data(), static_cast<int>(work.size()),
        iwork.data(), &info);
  if (info != 0) return info;
  if (vectors) {
    // Vb^T (uc x m, column-major) read row-major is Vb (m x uc): A's U. Ub is A's V.
    std::copy(vbt.begin(), vbt.end(), u);
    from_column_major(ub.data(), nn, vc, nn, v);
  }
  return 0;
}

#define TAPEFLOW_LAPACK_INSTANTIATE(T)                    \
  template void lu<T>(const T*, int, T*, int*);           \
  template void qr<T>(const T*, int, int, T*, T*, bool);  \
  template int symmetric_eigen<T>(const T*, int, T*, T*); \
  template int svd<T>(const T*, int, int, T*, T*, T*, bool);
TAPEFLOW_LAPACK_INSTANTIATE(float)
TAPEFLOW_LAPACK_INSTANTIATE(double)
#undef TAPEFLOW_LAPACK_INSTANTIATE

}  // namespace tapeflow::cpu::lapack
