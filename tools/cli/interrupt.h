#pragma once
// Ctrl-C during `tapeflow train`: the first SIGINT only sets a flag, which the training loop reads
// after every step (it then finishes the step, saves the checkpoint and says how to resume); a
// second SIGINT ends the program at once with status 130.

#include <atomic>

namespace tapeflow::cli {

/// Installs the SIGINT handler for its lifetime and restores the previous one after. A SIGINT
/// that was ignored when the program started (`nohup`, a background job of a non-interactive
/// shell) stays ignored, as the GNU coding standards ask.
class InterruptHandler {
 public:
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

  /// The number of SIGINTs received while installed (for TrainOptions::stop_requested).
  static const std::atomic<int>& count();

 private:
  bool installed_ = false;
};

}  // namespace tapeflow::cli
