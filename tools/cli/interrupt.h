#pragma once
// Ctrl-C during `tapeflow train`: the first SIGINT only sets a flag, which the training loop reads
// after every step (it then finishes the step, saves the checkpoint and says how to resume); a
// second SIGINT ends the program at once with status 130. SIGUSR1 asks for the same stop: mpirun
// passes it on to the ranks of its own job (and Ctrl-C to none), so `kill -USR1 <mpirun's PID>`
// stops one data-parallel job after the same step on every rank, and no other process.

#include <atomic>

namespace tapeflow::cli {

/// Installs the SIGINT and SIGUSR1 handler for its lifetime and restores the previous ones after.
/// A signal that was ignored when the program started (`nohup`, a background job of a
/// non-interactive shell) stays ignored, as the GNU coding standards ask.
class InterruptHandler {
 public:
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

  /// The number of stop signals (SIGINT, SIGUSR1) received while installed (for
  /// TrainOptions::stop_requested).
  static const std::atomic<int>& count();

 private:
  bool installed_[2] = {false, false};  // SIGINT's, SIGUSR1's
};

}  // namespace tapeflow::cli
