#pragma once
// Whether OpenBLAS's kernels fit this CPU (implemented with tapeflow/threads.h's
// openblas_kernels_to_request in src/core/threads.cpp): kernels choose between OpenBLAS's float32
// products and oneDNN's bfloat16 ones by it.

namespace tapeflow::cpu {

/// Whether OpenBLAS runs kernels that use this CPU's widest vector units it has kernels for
/// (AVX-512, else AVX2 and FMA), not weaker ones it fell back to or was told to use.
bool openblas_kernels_fit_cpu();

}  // namespace tapeflow::cpu
