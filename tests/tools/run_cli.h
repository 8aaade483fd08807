#pragma once
// Runs the `tapeflow` program's code (cli::run) in the test process with `args` after the
// program name, capturing what it prints:
//
//   const CliResult r = run_cli({"train", "--epochs", "0"});
//   EXPECT_EQ(r.status, 2);

#include <sstream>
#include <string>
#include <vector>

#include "cli.h"

namespace tapeflow::testing {

struct CliResult {
  int status;
  std::string out, err;
};

inline CliResult run_cli(std::vector<const char*> args) {
  args.insert(args.begin(), "tapeflow");
  std::ostringstream out, err;
  const int status = cli::run(static_cast<int>(args.size()), args.data(), out, err, false);
  return {status, out.str(), err.str()};
}

}  // namespace tapeflow::testing
