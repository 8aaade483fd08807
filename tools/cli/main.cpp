// tapeflow: the command-line program (see cli.h; `tapeflow --help`).
#include <iostream>

#include "cli.h"
#include "progress.h"
#include "tapeflow/threads.h"

int main(int argc, char** argv) {
  // Before anything else: OpenMP's wait policy and OpenBLAS's kernels are read once, when those
  // libraries load, so the program starts again with passive waiting and this CPU's kernels unless
  // the user chose them (threads.h; measured: docs/PERFORMANCE.md, "OpenMP's wait policy").
  tapeflow::restart_with_runtime_defaults(argv);
  return tapeflow::cli::run(argc, argv, std::cout, std::cerr, tapeflow::cli::is_terminal(2));
}
