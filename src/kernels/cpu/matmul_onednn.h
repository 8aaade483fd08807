#pragma once
// bfloat16 matrix products through oneDNN's matmul primitive (src/kernels/cpu/onednn.h): bfloat16
// operands, float32 accumulation, the result rounded to bfloat16 once. On a CPU with AVX-512 BF16
// oneDNN multiplies with its bfloat16 instructions; on others it converts, correctly and slower.
// float32 and float64 products stay OpenBLAS's (kernels/cpu/gemm.h).

#include <cstdint>

#include "tapeflow/dtype.h"

namespace tapeflow::cpu {

/// c (m, n) = op(a) @ op(b), row-major, op() transposing when the flag is set: a is (m, k), or
/// (k, m) when trans_a; b is (k, n), or (n, k) when trans_b. The caller has validated the sizes
/// (each at most kMaxGemmDim).
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const bfloat16_t* a,
          const bfloat16_t* b, bfloat16_t* c);

}  // namespace tapeflow::cpu
