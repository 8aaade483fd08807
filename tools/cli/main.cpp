// tapeflow: the command-line program (see cli.h; `tapeflow --help`).
#include <iostream>

#include "cli.h"
#include "progress.h"
#include "tapeflow/threads.h"

int main(int argc, char** argv) {
  // Before anything else: OpenBLAS may have chosen kernels weaker than this CPU's (threads.h).
  tapeflow::restart_with_openblas_kernels_for_this_cpu(argv);
  return tapeflow::cli::run(argc, argv, std::cout, std::cerr, tapeflow::cli::is_terminal(2));
}
