// Linked into every Google Benchmark program of bench/: before main runs, the program restarts
// itself with OPENBLAS_CORETYPE set where OpenBLAS chose kernels weaker than the CPU's
// (tf::restart_with_openblas_kernels_for_this_cpu, threads.h), so that no figure is measured with
// OpenBLAS's generic kernels (docs/PERFORMANCE.md, "OpenBLAS's kernels on this CPU"). A
// constructor rather than a line in each main: three of them are BENCHMARK_MAIN(). glibc calls
// constructors with main's arguments.
#include "tapeflow/threads.h"

namespace {

__attribute__((constructor)) void restart_with_openblas_kernels(int /*argc*/, char** argv, char** /*envp*/) {
  tapeflow::restart_with_openblas_kernels_for_this_cpu(argv);
}

}  // namespace
