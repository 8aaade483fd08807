#pragma once
// The `tapeflow` command line: subcommands `train`, `predict`, `sample` and `examples` (CLI11).
//
// Exit status: 0 on success, 1 when the work itself failed (an example program failed, a file
// system error while training), 2 for bad input (an unknown option or value, a missing data
// directory, an unreadable or mismatched checkpoint, model or image file): the message says what
// is wrong, and an unknown subcommand or option gets the nearest one as a suggestion.

#include <ostream>

namespace tapeflow::cli {

/// Runs the program with `argv` (argv[0] is the program name). Results go to `out`, progress,
/// notes and errors to `err`. Never throws.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool err_is_terminal);

}  // namespace tapeflow::cli
