#pragma once
/// \file threads.h
/// How many threads tapeflow computes with.
///
///   tf::set_num_threads(1);   // everything on the calling thread (deterministic timing)
///
/// One knob for both thread pools a computation uses: tapeflow's own pool (elementwise kernels,
/// reductions, convolutions' im2col, ...) and OpenBLAS's (matrix products), which tapeflow links.
/// Results are bitwise identical for every thread count. The default is the machine's hardware
/// concurrency. Setting it affects later ops on every thread of the process.

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Sets the thread count of tapeflow's pool and of OpenBLAS. Counts above the machine's hardware
/// concurrency use all of its cores. Throws InvalidArgumentError for n < 1.
void set_num_threads(int n);

/// The thread count tapeflow's pool uses now.
int num_threads();

}  // namespace tapeflow
#pragma GCC visibility pop
