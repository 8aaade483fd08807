#pragma once
/// \file threads.h
/// How many threads tapeflow computes with, OpenBLAS's kernels and OpenMP's wait policy.
///
///   tf::set_num_threads(1);   // everything on the calling thread (deterministic timing)
///
/// One knob for the thread pools a computation uses: tapeflow's own pool (elementwise kernels,
/// reductions, pooling, and matrix products, split into blocks of rows that OpenBLAS computes
/// single-threaded) and oneDNN's OpenMP threads (convolutions), which tapeflow links. OpenBLAS's
/// own threads are not used: idle, they spin on the cores the other pools need. A program that
/// gives OpenBLAS more threads itself (openblas_set_num_threads) gets its products threaded by
/// OpenBLAS instead. tapeflow's own kernels give bitwise identical results for every thread count,
/// and so do its products (a block of rows is computed as in the whole product); oneDNN chooses
/// its own splits (a convolution's filter gradient sums the batch per thread, so its last bits
/// depend on the count; docs/RELIABILITY.md). The default is the machine's hardware concurrency.
/// Setting it affects later ops on every thread of the process.

#include <string>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Sets the thread count of tapeflow's pool (which also runs the matrix products) and oneDNN, and
/// makes OpenBLAS single-threaded. Counts above the machine's hardware concurrency use all of its
/// cores. Throws InvalidArgumentError for n < 1.
void set_num_threads(int n);

/// The thread count tapeflow's pool uses now.
int num_threads();

/// The kernels OpenBLAS runs the float32 and float64 matrix products with in this process, as it
/// names them ("SkylakeX", "Haswell", "Prescott", ...). OpenBLAS chooses them once, when it is
/// loaded: from the environment variable OPENBLAS_CORETYPE if set, else from the CPU's model.
std::string openblas_kernels();

/// The kernels OpenBLAS should run on this CPU when it chose weaker ones, else "". OpenBLAS 0.3.21
/// (Debian 12's) knows CPUs by model number and runs its generic Prescott (SSE3) kernels on those
/// newer than itself: on an AVX-512 CPU its float32 products then take about 4x as long
/// (docs/PERFORMANCE.md). "SkylakeX" for a CPU with AVX-512 (F, BW, DQ, VL), "Haswell" for one
/// with AVX2 and FMA, when the chosen kernels use less of it; "" when OPENBLAS_CORETYPE is set
/// (the user's choice stands) or the choice is as good.
std::string openblas_kernels_to_request();

/// Starts the program again (the same executable, arguments and environment) with
/// OPENBLAS_CORETYPE set to openblas_kernels_to_request(), when that is not "": OpenBLAS reads
/// the variable only when it is loaded, so a process cannot change its kernels otherwise. Call it
/// first thing in main(), before any output or thread, with main's argv; it returns when there is
/// nothing to change (or the restart failed: the program goes on with OpenBLAS's choice).
/// Throws InvalidArgumentError for a null or empty argv.
/// The LibTorch comparison (bench/compare) calls it; `tapeflow` calls restart_with_runtime_defaults.
void restart_with_openblas_kernels_for_this_cpu(char** argv);

/// Starts the program again, once, with the settings tapeflow's runtimes read only when they are
/// loaded, where the user has not chosen them: OMP_WAIT_POLICY=PASSIVE when the variable is unset,
/// and OPENBLAS_CORETYPE as restart_with_openblas_kernels_for_this_cpu sets it. Without PASSIVE,
/// OpenMP's idle workers (oneDNN runs the convolutions on them) spin between parallel regions:
/// a CNN training step took 1.4-1.5x the wall time and 1.35x the CPU time on an idle 2-core
/// machine, 1.3-1.4x the wall time and 1.6x the CPU time beside one busy process
/// (docs/PERFORMANCE.md, "OpenMP's wait policy"). Call it first thing in main(), before any output or thread,
/// with main's argv; it returns when nothing changes (or the restart failed). `tapeflow` runs this way, and
/// the Python module sets OMP_WAIT_POLICY before it loads OpenMP. Throws InvalidArgumentError for a null or
/// empty argv.
void restart_with_runtime_defaults(char** argv);

}  // namespace tapeflow
#pragma GCC visibility pop
