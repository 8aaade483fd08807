#pragma once
// `tapeflow examples [NAME]`: lists and runs the seed example programs (examples/seeds/*.cpp).
//
// The seed programs stay separate executables, built by examples/seeds/CMakeLists.txt (their
// golden tests run them the same way); the tool finds them next to itself in the build tree:
// <build>/tools/cli/tapeflow runs <build>/examples/seeds/<NAME>. Installed (cmake/install.cmake,
// the Debian package `tapeflow`), <prefix>/bin/tapeflow runs <prefix>/libexec/tapeflow/examples/<NAME>,
// and the sources are in <prefix>/share/doc/tapeflow/examples. `--dir` or the environment
// variable TAPEFLOW_EXAMPLES_DIR point elsewhere. A program runs in the caller's directory, so the
// files it writes land there. Keeping them separate means each example stays
// the small standalone program the documentation shows, and the tool does not grow by two dozen
// main functions.

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tapeflow::cli {

/// The seed example names, from examples/seeds/*.cpp at configure time, sorted.
std::vector<std::string> example_names();

/// The directory holding the built seed programs: `dir` if given, else $TAPEFLOW_EXAMPLES_DIR,
/// else examples_dir_beside(this executable).
std::string examples_dir(const std::optional<std::string>& dir);

/// The seed programs' directory for the tapeflow program at `program`: where the install puts
/// them (<program's directory>/../libexec/tapeflow/examples for the default layout) if that is a
/// directory, else its build tree's (<program's directory>/../../examples/seeds).
std::string examples_dir_beside(const std::filesystem::path& program);

/// Prints the names, and whether each is built, to `out`.
void list_examples(const std::string& dir, std::ostream& out);

/// Runs `name` (every example if empty): prints a header line and the program's stdout to
/// `out` (its stderr passes through). Returns 0 if every program exited with 0, 1 otherwise.
/// Throws UsageError (train.h) for an unknown name or a program that is not built.
int run_examples(const std::string& dir, const std::string& name, std::ostream& out);

}  // namespace tapeflow::cli
