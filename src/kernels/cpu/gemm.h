#pragma once
// GEMM on row-major matrices: C = op(A) @ op(B) with C of shape (m, n) and inner size k.
// float and double go to OpenBLAS (cblas_sgemm / cblas_dgemm); the transposes are GEMM's flags,
// never materialised. int32 / int64 use a plain loop (rare; wraps around on overflow).
//
// Storage: A is (m, k), or (k, m) when trans_a; B is (k, n), or (n, k) when trans_b; C is (m, n).
// The caller guarantees m, n, k >= 0 and each fits a BLAS integer (cpu::kMaxGemmDim).
//
// Threads: OpenBLAS runs single-threaded and tapeflow splits a large product into blocks of C's
// rows over its own pool, with the same bits as the whole product. OpenBLAS's worker threads spin
// (sched_yield) for about 2^28 cycles after each product they take part in, on the cores that
// oneDNN's threads and tapeflow's pool need next: at two threads a CNN step took 27 ms in the
// median with them and 21 ms without (docs/PERFORMANCE.md, "OpenBLAS's idle threads"). Where
// something else has given OpenBLAS more threads (a program that also uses LibTorch), tapeflow
// leaves the product to OpenBLAS's threads rather than nest two pools.

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/openblas.h"
#include "core/parallel.h"

namespace tapeflow::cpu {

/// The largest m, n or k GEMM accepts: OpenBLAS takes its sizes and strides as `blasint`.
inline constexpr std::int64_t kMaxGemmDim = std::numeric_limits<blasint>::max();

/// Multiply-adds below which a product runs on one thread: split in two, a 128 x 256 x 128 product
/// (2^22) took 82-102 µs against 81 µs whole on one thread (two vCPUs).
inline constexpr std::int64_t kParallelGemmWork = std::int64_t{1} << 23;

/// Rows per unit of a split product. A block of rows is computed exactly as in the whole product
/// when it starts at a multiple of the kernel's row tile: OpenBLAS's Haswell sgemm (also Zen's)
/// tiles 24 rows and computes a short last tile another way; its other kernels gave the same bits
/// at any row (tests/kernels/cpu/gemm_test.cpp checks the bits). Columns are never split: the Haswell
/// kernel's bits changed at every column offset tried.
inline constexpr std::int64_t kGemmRowQuantum = 24;

/// One OpenBLAS call: C (m, n, leading dimension ldc) = op(A) @ op(B).
template <class T>
void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto i = [](std::int64_t v) { return static_cast<blasint>(v); };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, i(m), i(n), i(k), 1.0f, a, i(lda), b, i(ldb), 0.0f, c, i(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, i(m), i(n), i(k), 1.0, a, i(lda), b, i(ldb), 0.0, c, i(ldc));
}

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
    const std::int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
    if (m * n * k < kParallelGemmWork || !gemm_splits_over_pool()) {
      blas_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, n);
      return;
    }
    // Blocks of whole kGemmRowQuantum rows, each of at least kParallelGemmWork multiply-adds.
    const std::int64_t units = (m + kGemmRowQuantum - 1) / kGemmRowQuantum;
    parallel_for(
        units, kParallelGemmWork / (kGemmRowQuantum * n * k) + 1, [&](std::int64_t u0, std::int64_t u1) {
          const std::int64_t r0 = u0 * kGemmRowQuantum, r1 = std::min(m, u1 * kGemmRowQuantum);
          blas_gemm(trans_a, trans_b, r1 - r0, n, k, a + (trans_a ? r0 : r0 * k), lda, b, ldb, c + r0 * n, n);
        });
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
