#pragma once
// `tapeflow train`: trains the MLP or the CNN on Fashion-MNIST with a GradientTape, its step
// traced once per batch shape with tf::function (train_step.h; `--eager` runs it op by op),
// evaluates on the test set after each epoch, saves a checkpoint per epoch and can resume from
// one exactly.
//
// Resuming is exact: the checkpoint holds the model's variables, the optimizer's state
// (iterations and slots), the number of epochs done, the learning rate and its decay per epoch
// (a schedule of the iterations), the seed, batch size and example limit, and the history of
// every epoch; the shuffle order and the dropout masks of epoch e depend only on (seed, e). So `train
// --epochs 2` and `train --epochs 1` followed by `train --epochs 2 --resume` end with bitwise identical
// variables. A run stopped mid-epoch (Ctrl-C) saves the step it reached too (train/step, and the epoch's loss
// and accuracy sums in train/partial): resuming skips the batches already done and ends bitwise where an
// uninterrupted run ends.
//
// Data-parallel (`mpirun -np N tapeflow train ...`, tapeflow/distributed.h): each rank trains on
// its shard of every global batch of N * --batch-size examples (--batch-size is per rank), with a
// DistributedGradientTape averaging the gradients, so the run follows the one-process run with
// batch N * --batch-size up to float rounding. Rank 0 prints, plots, exports and writes the
// checkpoint; every rank reads it on --resume and starts from rank 0's variables. The traced step
// reduces with Allreduce ops in its graph; with --eager the buckets are reduced while the backward
// pass runs. SIGUSR1 sent to the job's mpirun (which passes it on to that job's ranks; Ctrl-C it
// does not pass on, it ends the job) stops every rank after the same step: they decide together
// at each step (a one-number all-reduce), and the checkpoint holds the job's sums and the number
// of ranks (a mid-epoch checkpoint resumes only on as many ranks; one from an epoch's end, on any
// number).

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "history.h"
#include "tapeflow/data.h"
#include "tapeflow/optim/optimizer.h"

namespace tapeflow::cli {

/// Bad command-line input (an unknown model, a missing data directory, a checkpoint that does
/// not fit): the program prints the message and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The run stopped early because TrainOptions::stop_requested was set (Ctrl-C): the message says
/// where it stopped, whether the checkpoint holds that state, and how to resume. The program
/// prints it and exits with status 130 (128 + SIGINT, as a shell reports a process Ctrl-C ended).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainOptions {
  /// One of model_names() (Fashion-MNIST) or text_model_names() (text_models.h, train_text.h).
  std::string model = "mlp";
  std::int64_t epochs = 5;  ///< total epochs: with --resume, training continues up to this many
  std::int64_t batch_size = 64;
  double learning_rate = 1e-3;  ///< char-lstm: 0.005 unless learning_rate_given
  /// The learning rate's factor after each epoch, in (0, 1]: epoch e (from 0) trains at
  /// learning_rate * lr_decay^e (an ExponentialDecay schedule, staircase, of the optimizer's step
  /// count); 1: constant.
  double lr_decay = 1.0;
  std::string optimizer = "adam";  ///< "adam" or "sgd" (momentum 0.9)
  /// Data augmentation of the training batches: "flip" mirrors each image left to right with
  /// probability 1/2 (image::stateless_random_flip_left_right, seeded by the run's seed, epoch and
  /// step, so runs and resumes are reproducible), "none" trains on the images as they are, ""
  /// (the default) the model's choice: flip for the CNN (92% after 15 epochs at every seed tried,
  /// docs/PERFORMANCE.md), none for the MLP (flips cost it a point and a half of test accuracy
  /// over the demo's two epochs).
  std::string augment;
  std::uint64_t seed = 1;
  std::string checkpoint;  ///< empty: no checkpoint
  bool resume = false;
  /// Without --resume, a file already at `checkpoint` (a run that could be resumed) is refused
  /// unless this is set; then the new run replaces it.
  bool overwrite = false;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  /// The text models' UTF-8 files, read one after the other; empty: default_text_files().
  std::vector<std::string> text;
  /// The text models' steps per example (characters of context).
  std::int64_t sequence_length = 64;
  std::string plot;        ///< empty: no plot
  std::int64_t limit = 0;  ///< train on the first `limit` examples; 0: all
  int threads = 0;         ///< 0: the library's default (every core)
  /// Print tape.gradient_report (each variable's gradient norm, or why it has none, with
  /// vanishing/exploding flags) for the first training step.
  bool gradient_report = false;
  /// Run the training step op by op instead of through tf::function (train_step.h): the
  /// results are the same, bit for bit; for comparing speed and memory.
  bool eager = false;
  /// One of precisions(): "float32", or "mixed_bfloat16": the layers compute in bfloat16 and keep
  /// float32 variables (tf::mixed_precision), the loss and the optimizer stay float32.
  std::string precision = "float32";
  std::int64_t eval_batch_size = 1000;
  /// --ranks N: not a way to start ranks (mpirun does that); checked against the job's size so
  /// that a launch without mpirun says how to start one. 0: not given.
  int ranks = 0;
  /// After training, write the model's inference (logits of a batch of eval_batch_size images)
  /// as a function file here (predict.h); empty: no export.
  std::string export_path;
  /// The same inference as an ONNX model here (tf::export_onnx, for ONNX Runtime); empty: none.
  std::string export_onnx_path;
  /// Not on the command line, for tests: evaluate on the first `test_limit` test examples only
  /// (0: all), and use an already loaded data set instead of reading data_dir.
  std::int64_t test_limit = 0;
  const data::FashionMnist* dataset = nullptr;
  /// Checked after every step: when it holds a non-zero value (the Ctrl-C handler sets it),
  /// training stops after the current step, saves the checkpoint (if any) and throws
  /// Interrupted. nullptr: never stop early.
  const std::atomic<int>* stop_requested = nullptr;
  /// Which of the options above were given on the command line: on resume, an explicitly given
  /// model, optimizer, seed, batch size, limit, learning-rate decay, augmentation or precision must agree
  /// with the checkpoint; an explicit learning rate replaces the checkpoint's (a note on `out` says which
  /// value is used).
  bool model_given = false, optimizer_given = false, seed_given = false, batch_size_given = false,
       limit_given = false, learning_rate_given = false, lr_decay_given = false, augment_given = false,
       precision_given = false, sequence_length_given = false;
};

/// The values of --optimizer, "adam" and "sgd" (a checkpoint's optimizer id is the index).
const std::vector<std::string>& optimizer_names();

/// The optimizer o.optimizer with the run's learning rate: o.learning_rate, times o.lr_decay after
/// each epoch of `steps_per_epoch` steps (an ExponentialDecay schedule of the optimizer's
/// iterations, which the checkpoint holds) unless lr_decay is 1; Adam with `adam_epsilon` (Keras's
/// default 1e-7 unless given). Throws UsageError for another name.
std::unique_ptr<optimizers::Optimizer> make_optimizer(const TrainOptions& o, std::int64_t steps_per_epoch,
                                                      double adam_epsilon = 1e-7);

/// Whether o.stop_requested asks for a stop (Ctrl-C).
bool stop_requested(const TrainOptions& o);

/// Fails with UsageError if an explicitly given option (`given`) disagrees with the checkpoint at
/// `path`: it was trained with `saved`, and the command line says `ours`.
///@{
void require_same(bool given, const char* option, const std::string& ours, const std::string& saved,
                  const std::string& path);
void require_same(bool given, const char* option, std::int64_t ours, std::int64_t saved,
                  const std::string& path);
void require_same(bool given, const char* option, std::uint64_t ours, std::uint64_t saved,
                  const std::string& path);
void require_same(bool given, const char* option, double ours, double saved, const std::string& path);
///@}

/// The position of `name` in `names` (a checkpoint's id of a model, optimizer, ...), or
/// names.size() when it is not there.
std::int64_t index_of(const std::vector<std::string>& names, const std::string& name);

/// On resume: keeps an explicitly given --lr (with a note on `out` when it differs from the
/// checkpoint's `saved` rate), else takes the checkpoint's.
void adopt_learning_rate(TrainOptions& o, double saved, std::ostream& out);

/// The values of --augment, "none" and "flip" (a checkpoint's train/augment is the index).
const std::vector<std::string>& augmentations();

/// The values of --precision, "float32" and "mixed_bfloat16" (a checkpoint's train/precision is the
/// index).
const std::vector<std::string>& precisions();

/// Checks what can be checked before loading anything: the values, and that the checkpoint, plot
/// and export paths can be written, are three different files, and that the checkpoint path holds
/// no earlier run unless --resume or --overwrite says what to do with it. Throws UsageError.
void validate(const TrainOptions& options);

/// The data set `train` and `predict` run on: `*loaded` when given (tests pass one), otherwise
/// Fashion-MNIST read from `data_dir`. Throws UsageError when it cannot be read.
data::FashionMnist fashion_mnist(const data::FashionMnist* loaded, const std::string& data_dir);

/// Runs the training. Per-epoch results go to `out`, the progress bar and notes to `log`
/// (`log_is_terminal` selects the redrawn bar). Returns the history of every epoch so far
/// (including those of a resumed checkpoint). Throws UsageError for bad input (missing data, an
/// empty training set, a checkpoint path that cannot be written, an unreadable or mismatched
/// checkpoint), Interrupted when stopped early; other tapeflow errors propagate.
History train(const TrainOptions& options, std::ostream& out, std::ostream& log, bool log_is_terminal);

}  // namespace tapeflow::cli
