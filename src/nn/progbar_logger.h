#pragma once
// The progress display of Model::fit, evaluate and predict: tf.keras 2's Progbar and
// ProgbarLogger.
//
//   Epoch 1/5
//   1875/1875 [==============================] - 3s 1ms/step - loss: 0.4966 - accuracy: 0.8253
//
// verbose 1 on a terminal redraws one line ('\r', at most every 0.05 s) with an ETA while the
// epoch runs; to anything else (a log, a pipe, a string stream) it writes only each epoch's final
// line, so logs stay short. verbose 2 writes one line per epoch:
//   1875/1875 - 3s - loss: 0.4966 - accuracy: 0.8253 - 3s/epoch - 1ms/step
// A value is shown with 4 decimals, or in scientific notation when its magnitude is at most 1e-3.

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "tapeflow/nn/callbacks.h"

namespace tapeflow::layers {

/// One epoch's (or one evaluation's) progress line.
class Progbar {
 public:
  /// A bar of `target` steps (0: unknown, shown as "Unknown") written to `out` in the style of `verbose` (1
  /// or 2); `redraw`: the stream is a terminal.
  Progbar(std::ostream& out, std::int64_t target, int verbose, bool redraw);
  /// Step `current` (1-based) is done; `logs` are the values to show. `finalize`: the last update.
  void update(std::int64_t current, const Logs& logs, bool finalize);

  /// The text of a line (no '\r' or newline): tf.keras's layout, for the display and for tests.
  /// `seconds_per_step` is the step time, `elapsed` the seconds since the start.
  static std::string line(std::int64_t current, std::int64_t target, int verbose, bool finalize,
                          double elapsed, double seconds_per_step, const Logs& logs);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  std::int64_t target_;
  int verbose_;
  bool redraw_;
  Clock::time_point start_, last_draw_;
  std::optional<Clock::time_point> after_first_step_;
  std::size_t drawn_width_ = 0;
};

/// The callback that shows a loop's Progbar (Keras adds it to every loop with verbose > 0).
class ProgbarLogger : public callbacks::Callback {
 public:
  std::string name() const override { return "ProgbarLogger"; }
  void on_epoch_begin(std::int64_t epoch, Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;
  void on_test_begin(Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, Logs& logs) override;
  void on_test_end(Logs& logs) override;
  void on_predict_begin(Logs& logs) override;
  void on_predict_batch_end(std::int64_t batch, Logs& logs) override;
  void on_predict_end(Logs& logs) override;

  /// fit() sets this around its validation passes, whose progress is not shown (as in Keras).
  void set_in_fit(bool in_fit) { in_fit_ = in_fit; }

 private:
  void start();
  std::optional<Progbar> bar_;
  std::int64_t seen_ = 0;
  bool in_fit_ = false;
};

}  // namespace tapeflow::layers
