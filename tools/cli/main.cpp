// tapeflow: the command-line program (see cli.h; `tapeflow --help`).
#include <iostream>

#include "cli.h"
#include "progress.h"

int main(int argc, char** argv) {
  return tapeflow::cli::run(argc, argv, std::cout, std::cerr, tapeflow::cli::is_terminal(2));
}
