#pragma once
// `tapeflow examples [NAME]`: lists and runs the seed example programs (examples/seeds/*.cpp).
//
// The seed programs stay separate executables, built by examples/seeds/CMakeLists.txt (their
// golden tests run them the same way); the tool finds them next to itself in the build tree:
// <build>/tools/cli/tapeflow runs <build>/examples/seeds/<NAME>. `--dir` or the environment
// variable TAPEFLOW_EXAMPLES_DIR point elsewhere. Keeping them separate means each example stays
// the small standalone program the documentation shows, and the tool does not grow by two dozen
// main functions.

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tapeflow::cli {

/// The seed example names, from examples/seeds/*.cpp at configure time, sorted.
std::vector<std::string> example_names();

/// The directory holding the built seed programs: `dir` if given, else $TAPEFLOW_EXAMPLES_DIR,
/// else <directory of this executable>/../../examples/seeds.
std::string examples_dir(const std::optional<std::string>& dir);

/// Prints the names, and whether each is built, to `out`.
void list_examples(const std::string& dir, std::ostream& out);

/// Runs `name` (every example if empty): prints a header line and the program's stdout to
/// `out` (its stderr passes through). Returns 0 if every program exited with 0, 1 otherwise.
/// Throws UsageError (train.h) for an unknown name or a program that is not built.
int run_examples(const std::string& dir, const std::string& name, std::ostream& out);

}  // namespace tapeflow::cli
