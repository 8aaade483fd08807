#pragma once
// Whether OpenBLAS's kernels fit this CPU, and whether its products may be split over tapeflow's
// pool (implemented with tapeflow/threads.h in src/core/threads.cpp): kernels choose between
// OpenBLAS's float32 products and oneDNN's bfloat16 ones by the first, gemm (kernels/cpu/gemm.h)
// how to thread a product by the second.

namespace tapeflow::cpu {

/// Whether OpenBLAS runs kernels that use this CPU's widest vector units it has kernels for
/// (AVX-512, else AVX2 and FMA), not weaker ones it fell back to or was told to use.
bool openblas_kernels_fit_cpu();

/// Whether tapeflow may split products over its pool: OpenBLAS runs single-threaded, as tapeflow
/// makes it when it loads and at tapeflow::set_num_threads; false while another part of the
/// program has given OpenBLAS more threads since.
bool gemm_splits_over_pool();

}  // namespace tapeflow::cpu
