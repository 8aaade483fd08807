#pragma once
// The training progress display of `tapeflow train`, on stderr:
//   - on a terminal, one line redrawn in place with '\r' (at most ten times a second), fitted to
//     the terminal's width (a line that wrapped would scroll instead of being redrawn): the bar
//     shrinks, then goes, then the speed, accuracy and loss, in that order;
//   - otherwise (a log file, a pipe), a plain line at every tenth of the epoch, so that logs stay
//     short and readable.
//
//   epoch 1/5 [=========>          ] 469/938 loss 0.5123 acc 0.8164 2310 ex/s

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace tapeflow::cli {

/// Whether `fd` (e.g. 2 for stderr) is a terminal.
bool is_terminal(int fd);

/// The width in columns of the terminal on `fd` (ioctl TIOCGWINSZ), else the COLUMNS environment
/// variable, else 80.
int terminal_columns(int fd);

class ProgressBar {
 public:
  /// A bar for one epoch of `batches` steps, written to `out`; `redraw` selects the terminal style,
  /// whose lines fit in `columns` (0: terminal_columns(2) at every redraw, so resizing works).
  ProgressBar(std::ostream& out, bool redraw, std::int64_t epoch, std::int64_t epochs, std::int64_t batches,
              int columns = 0);

  /// Step `done` (1-based) finished; `examples` examples were processed so far in this epoch.
  void update(std::int64_t done, std::int64_t examples, double loss, double accuracy);
  /// Ends the bar (a terminal line is finished with a newline).
  void finish();

  /// The text of one progress line (without '\r' or newline), for tests and for update(). With
  /// `columns` > 0 the line is at most columns - 1 characters long (writing the last column makes
  /// some terminals wrap).
  static std::string line(std::int64_t epoch, std::int64_t epochs, std::int64_t done, std::int64_t batches,
                          double loss, double accuracy, double examples_per_second, bool with_bar,
                          int columns = 0);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  bool redraw_;
  std::int64_t epoch_, epochs_, batches_;
  int columns_;
  Clock::time_point start_, last_draw_;
  std::int64_t next_report_ = 0;  // plain style: the next step to report
  bool drawn_ = false;
};

}  // namespace tapeflow::cli
