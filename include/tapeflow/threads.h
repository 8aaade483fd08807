#pragma once
/// \file threads.h
/// How many threads tapeflow computes with.
///
///   tf::set_num_threads(1);   // everything on the calling thread (deterministic timing)
///
/// One knob for the three thread pools a computation uses: tapeflow's own pool (elementwise
/// kernels, reductions, pooling, ...), OpenBLAS's (matrix products) and oneDNN's OpenMP threads
/// (float32 convolutions), which tapeflow links. tapeflow's own kernels give bitwise identical
/// results for every thread count; OpenBLAS and oneDNN choose their own splits (the CNN's
/// convolutions measured the same at one and two threads). The default is the machine's
/// hardware concurrency. Setting it affects later ops on every thread of the process.

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Sets the thread count of tapeflow's pool, OpenBLAS and oneDNN. Counts above the machine's hardware
/// concurrency use all of its cores. Throws InvalidArgumentError for n < 1.
void set_num_threads(int n);

/// The thread count tapeflow's pool uses now.
int num_threads();

}  // namespace tapeflow
#pragma GCC visibility pop
