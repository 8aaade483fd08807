#pragma once
/// \file nn/callbacks.h
/// Callbacks: code a Model's fit(), evaluate() and predict() call at fixed points, with Keras's
/// hooks and Keras's built-in callbacks.
///
///   model.fit(x, y, {.epochs = 50, .validation_split = 0.2, .callbacks = {
///       std::make_shared<tf::callbacks::EarlyStopping>(
///           tf::callbacks::EarlyStoppingOptions{.monitor = "val_loss", .patience = 3,
///                                               .restore_best_weights = true}),
///       std::make_shared<tf::callbacks::ModelCheckpoint>("best.ckpt",
///           tf::callbacks::ModelCheckpointOptions{.save_best_only = true}),
///       std::make_shared<tf::callbacks::CSVLogger>("training.csv")}});
///
/// A callback of your own derives from Callback and overrides the hooks it needs; `logs` holds
/// the values of the moment (a hook may add to them: ReduceLROnPlateau adds "learning_rate").
/// An exception a hook throws ends the loop and reaches the caller as its own tapeflow type, its
/// message prefixed with the callback's name() and the hook. Callbacks that watch a log
/// ("val_loss", "accuracy", ...) throw InvalidArgumentError naming the log and the logs there are
/// when it is missing: a misspelt name fails at the first epoch instead of silently doing nothing.

#include <cstdint>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/nn/model.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::callbacks {

using layers::Logs;

/// What a loop tells its callbacks before it starts (Keras's callback.params).
struct LoopParams {
  std::int64_t epochs = 1;      ///< fit(): the `epochs` argument; 1 for evaluate() and predict()
  std::int64_t steps = 0;       ///< batches per epoch (or per pass of evaluate() or predict())
  int verbose = 0;              ///< the loop's verbosity
  std::ostream* out = nullptr;  ///< where the loop prints (std::cout when null)
};

/// The base of every callback (keras.callbacks.Callback): every hook does nothing.
class Callback {
 public:
  virtual ~Callback() = default;

  /// The callback's name in error messages: its class's ("EarlyStopping", ...).
  virtual std::string name() const { return "Callback"; }
  /// Whether a data-parallel fit() calls it on rank 0 only (a callback that writes files:
  /// ModelCheckpoint, CSVLogger); the others run on every rank, with the same epoch logs.
  virtual bool rank_zero_only() const { return false; }
  /// Called by the model before a loop starts; model() is the model after it.
  void set_model(layers::Model* model) { model_ = model; }
  /// The model whose loop calls this callback. Throws FailedPreconditionError outside a loop.
  layers::Model& model() const;
  /// Called by the model before a loop starts.
  void set_params(const LoopParams& params) { params_ = params; }
  /// The parameters of the loop that calls this callback.
  const LoopParams& params() const { return params_; }
  /// Where the callback prints: the loop's stream.
  std::ostream& out() const;

  /// Hooks of fit(): the run, each epoch (0-based) and each training batch (0-based in the epoch).
  ///@{
  virtual void on_train_begin(Logs& /*logs*/) {}
  virtual void on_train_end(Logs& /*logs*/) {}
  virtual void on_epoch_begin(std::int64_t /*epoch*/, Logs& /*logs*/) {}
  virtual void on_epoch_end(std::int64_t /*epoch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_begin(std::int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_end(std::int64_t /*batch*/, Logs& /*logs*/) {}
  ///@}
  /// Hooks of evaluate() and of fit()'s validation passes.
  ///@{
  virtual void on_test_begin(Logs& /*logs*/) {}
  virtual void on_test_end(Logs& /*logs*/) {}
  virtual void on_test_batch_begin(std::int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_test_batch_end(std::int64_t /*batch*/, Logs& /*logs*/) {}
  ///@}
  /// Hooks of predict().
  ///@{
  virtual void on_predict_begin(Logs& /*logs*/) {}
  virtual void on_predict_end(Logs& /*logs*/) {}
  virtual void on_predict_batch_begin(std::int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_predict_batch_end(std::int64_t /*batch*/, Logs& /*logs*/) {}
  ///@}

 private:
  layers::Model* model_ = nullptr;
  LoopParams params_;
};

/// Whether a smaller or a larger value of a monitored log is better. kAuto: larger for names
/// containing "acc" (accuracy), else smaller (losses), as Keras decides.
enum class Mode { kAuto, kMin, kMax };

/// EarlyStopping's options (keras.callbacks.EarlyStopping's arguments).
struct EarlyStoppingOptions {
  std::string monitor = "val_loss";  ///< the log watched at each epoch's end
  double min_delta = 0;              ///< an improvement is a change of more than this (its sign is ignored)
  std::int64_t patience = 0;         ///< epochs without improvement before stopping
  int verbose = 0;                   ///< 1: print when stopping and when restoring
  Mode mode = Mode::kAuto;           ///< whether higher or lower is better (kAuto: from the name)
  /// Training stops if the monitored value has not improved on this after `patience` epochs.
  std::optional<double> baseline{};
  /// At the end of training, restore the weights of the best epoch (Keras restores them only when
  /// it stopped early, and at any end with Keras 3's rule used here: whenever a best epoch exists).
  bool restore_best_weights = false;
  std::int64_t start_from_epoch = 0;  ///< epochs before this are not watched (a warm-up)
};

/// Stops training when a monitored log has stopped improving (keras.callbacks.EarlyStopping).
class EarlyStopping : public Callback {
 public:
  /// Throws InvalidArgumentError for patience < 0 or start_from_epoch < 0.
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  std::string name() const override { return "EarlyStopping"; }
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;
  /// The epoch (0-based) at which training was stopped, 0 if it was not.
  std::int64_t stopped_epoch() const { return stopped_epoch_; }
  /// The best epoch so far (0-based), -1 before one.
  std::int64_t best_epoch() const { return best_epoch_; }

 private:
  EarlyStoppingOptions options_;
  bool higher_is_better_ = false;
  std::int64_t wait_ = 0, stopped_epoch_ = 0, best_epoch_ = -1;
  double best_ = 0;
  std::vector<Tensor> best_weights_;
};

/// ModelCheckpoint's options (keras.callbacks.ModelCheckpoint's arguments).
struct ModelCheckpointOptions {
  std::string monitor = "val_loss";  ///< the log save_best_only compares
  int verbose = 0;                   ///< 1: print a line when saving (or not, with save_best_only)
  bool save_best_only = false;       ///< save only when the monitored log improves on the best so far
  Mode mode = Mode::kAuto;           ///< whether higher or lower is better (kAuto: from the name)
  /// Save the model's variables only; false: the optimizer's state (slots, iterations) too, so a
  /// resumed run continues exactly.
  bool save_weights_only = false;
  std::optional<double> initial_value_threshold{};  ///< the best value to beat at first
};

/// Saves the model after each epoch (keras.callbacks.ModelCheckpoint), as a tapeflow checkpoint
/// (checkpoint.h: written atomically, so a file is never half-written). The path may hold
/// Keras's placeholders, formatted with fmt (Python's syntax): "{epoch:02d}" (1-based) and any
/// log, e.g. "ckpt-{epoch:02d}-{val_loss:.2f}".
class ModelCheckpoint : public Callback {
 public:
  /// Throws InvalidArgumentError for an empty path or one with a placeholder fmt cannot format.
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});
  std::string name() const override { return "ModelCheckpoint"; }
  bool rank_zero_only() const override { return true; }
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;
  /// The best monitored value so far (save_best_only), if any.
  std::optional<double> best() const { return best_; }

 private:
  std::string filepath_;
  ModelCheckpointOptions options_;
  bool higher_is_better_ = false;
  std::optional<double> best_;
};

/// ReduceLROnPlateau's options (keras.callbacks.ReduceLROnPlateau's arguments).
struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";  ///< the log watched at each epoch's end
  double factor = 0.1;               ///< new rate = rate * factor, in (0, 1)
  std::int64_t patience = 10;        ///< epochs without improvement before reducing
  int verbose = 0;                   ///< 1: print a line when reducing
  Mode mode = Mode::kAuto;           ///< whether higher or lower is better (kAuto: from the name)
  double min_delta = 1e-4;           ///< an improvement is a change of more than this
  std::int64_t cooldown = 0;         ///< epochs to wait after a reduction before watching again
  double min_lr = 0;                 ///< the rate is never reduced below this
};

/// Reduces the optimizer's learning rate when a monitored log has stopped improving
/// (keras.callbacks.ReduceLROnPlateau); logs the rate as "learning_rate" at each epoch's end.
/// Needs an optimizer with a constant rate (a schedule's rate cannot be set).
class ReduceLROnPlateau : public Callback {
 public:
  /// Throws InvalidArgumentError for a factor outside (0, 1), patience or cooldown < 0, or min_lr < 0.
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  std::string name() const override { return "ReduceLROnPlateau"; }
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;

 private:
  ReduceLROnPlateauOptions options_;
  bool higher_is_better_ = false;
  std::int64_t wait_ = 0, cooldown_counter_ = 0;
  double best_ = 0;
};

/// Writes each epoch's logs to a CSV file (keras.callbacks.CSVLogger): a header "epoch,<logs in
/// alphabetical order>" then one row per epoch, flushed at once, so a run cut short leaves every
/// finished epoch's row. With `append`, a run continues an existing file without a second header.
class CSVLogger : public Callback {
 public:
  /// Throws InvalidArgumentError for an empty path or separator.
  explicit CSVLogger(std::string filename, std::string separator = ",", bool append = false);
  std::string name() const override { return "CSVLogger"; }
  bool rank_zero_only() const override { return true; }
  /// Opens the file; throws FailedPreconditionError naming it when it cannot be opened.
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;

 private:
  std::string filename_, separator_;
  bool append_;
  bool header_written_ = false;
  std::ofstream file_;
  std::vector<std::string> keys_;  // the columns after "epoch", fixed by the first row written
};

/// Sets the learning rate at the start of each epoch from a function of the epoch (0-based) and
/// the current rate (keras.callbacks.LearningRateScheduler); logs it as "learning_rate".
class LearningRateScheduler : public Callback {
 public:
  /// The new rate from the epoch (0-based) and the current rate.
  using Schedule = std::function<double(std::int64_t epoch, double learning_rate)>;
  /// Throws InvalidArgumentError for an empty schedule.
  explicit LearningRateScheduler(Schedule schedule, int verbose = 0);
  std::string name() const override { return "LearningRateScheduler"; }
  /// Throws InvalidArgumentError (naming the epoch) when the schedule returns a rate that is not
  /// a positive finite number.
  void on_epoch_begin(std::int64_t epoch, Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;

 private:
  Schedule schedule_;
  int verbose_;
};

/// Stops training at the first batch whose loss is NaN or infinite
/// (keras.callbacks.TerminateOnNaN), printing "Batch N: Invalid loss, terminating training".
class TerminateOnNaN : public Callback {
 public:
  std::string name() const override { return "TerminateOnNaN"; }
  void on_train_batch_end(std::int64_t batch, Logs& logs) override;
};

/// A callback made of functions (keras.callbacks.LambdaCallback): each one given is called at its hook.
struct LambdaCallbackFunctions {
  // Each is called as the Callback hook of its name, with the same arguments.
  std::function<void(std::int64_t, Logs&)> on_epoch_begin{};        ///< (epoch, logs)
  std::function<void(std::int64_t, Logs&)> on_epoch_end{};          ///< (epoch, logs)
  std::function<void(std::int64_t, Logs&)> on_train_batch_begin{};  ///< (batch, logs)
  std::function<void(std::int64_t, Logs&)> on_train_batch_end{};    ///< (batch, logs)
  std::function<void(Logs&)> on_train_begin{};                      ///< (logs)
  std::function<void(Logs&)> on_train_end{};                        ///< (logs)
};

/// Calls the functions it was given (keras.callbacks.LambdaCallback).
class LambdaCallback : public Callback {
 public:
  /// The hooks left empty in `functions` do nothing.
  explicit LambdaCallback(LambdaCallbackFunctions functions) : f_(std::move(functions)) {}
  std::string name() const override { return "LambdaCallback"; }
  void on_epoch_begin(std::int64_t epoch, Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, Logs& logs) override;
  void on_train_begin(Logs& logs) override;
  void on_train_end(Logs& logs) override;

 private:
  LambdaCallbackFunctions f_;
};

}  // namespace tapeflow::callbacks
#pragma GCC visibility pop
