// tapeflow: the command-line program (see cli.h; `tapeflow --help`).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "cli.h"
#include "progress.h"
#include "tapeflow/threads.h"

namespace {

/// Starts the program again with the same arguments and the current environment; returns only if
/// that fails (the program then goes on as it is).
void start_again(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) ::execv(self.c_str(), argv);
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else. OpenMP (oneDNN's convolution threads) reads its wait policy once, when it
  // is loaded: idle workers that spin cost a CNN epoch a third more CPU time and, on a machine with
  // other work, wall time too, so the program runs with passive waiting unless the user chose a
  // policy (measured: docs/PERFORMANCE.md, "OpenMP's wait policy"). Setting it needs a new start,
  // which the OpenBLAS restart below gives when it happens.
  const bool choose_wait_policy = std::getenv("OMP_WAIT_POLICY") == nullptr;
  if (choose_wait_policy) ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  // OpenBLAS may have chosen kernels weaker than this CPU's (threads.h): a restart that fixes it
  // keeps the environment above.
  tapeflow::restart_with_openblas_kernels_for_this_cpu(argv);
  if (choose_wait_policy) start_again(argv);
  return tapeflow::cli::run(argc, argv, std::cout, std::cerr, tapeflow::cli::is_terminal(2));
}
