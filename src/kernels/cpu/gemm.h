#pragma once
// GEMM on row-major matrices: C = op(A) @ op(B) with C of shape (m, n) and inner size k.
// float and double go to OpenBLAS (cblas_sgemm / cblas_dgemm); the transposes are GEMM's flags,
// never materialised. int32 / int64 use a plain loop (rare; wraps around on overflow).
//
// Storage: A is (m, k), or (k, m) when trans_a; B is (k, n), or (n, k) when trans_b; C is (m, n).
// The caller guarantees m, n, k >= 0 and each fits a BLAS integer (cpu::kMaxGemmDim).

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tapeflow::cpu {

/// The largest m, n or k GEMM accepts: OpenBLAS takes its sizes and strides as `blasint`.
inline constexpr std::int64_t kMaxGemmDim = std::numeric_limits<blasint>::max();

template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b,
          T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // NOTE: BLAS rejects a leading dimension of 0 (it would be lda = k for row-major A), and
    // an empty sum is zero anyway.
    std::fill(c, c + m * n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const auto bm = static_cast<blasint>(m), bn = static_cast<blasint>(n), bk = static_cast<blasint>(k);
    const blasint lda = trans_a ? bm : bk;
    const blasint ldb = trans_b ? bk : bn;
    const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, bm, bn, bk, 1.0f, a, lda, b, ldb, 0.0f, c, bn);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, bm, bn, bk, 1.0, a, lda, b, ldb, 0.0, c, bn);
  } else {
    // Integer product: i-p-j order so the inner loop runs along contiguous rows of B and C when
    // B is not transposed. Unsigned arithmetic makes overflow wrap (two's complement) instead
    // of being undefined behaviour.
    using U = std::make_unsigned_t<T>;
    std::fill(c, c + m * n, T(0));
    for (std::int64_t i = 0; i < m; ++i) {
      T* ci = c + i * n;
      for (std::int64_t p = 0; p < k; ++p) {
        const U aip = static_cast<U>(trans_a ? a[p * m + i] : a[i * k + p]);
        for (std::int64_t j = 0; j < n; ++j) {
          const U bpj = static_cast<U>(trans_b ? b[j * k + p] : b[p * n + j]);
          ci[j] = static_cast<T>(static_cast<U>(ci[j]) + aip * bpj);
        }
      }
    }
  }
}

}  // namespace tapeflow::cpu
