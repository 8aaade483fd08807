#pragma once
/// \file nn/model.h
/// Model: Keras's training loop — compile(), fit(), evaluate(), predict() with callbacks — for
/// any model that is a Layer. Sequential is a Model.
///
///   tf::layers::Sequential model{tf::layers::flatten(), tf::layers::dense(128, "relu"),
///                                tf::layers::dense(10)};
///   model.compile(std::make_shared<tf::optimizers::Adam>(1e-3),
///                 tf::losses::Loss("sparse_categorical_crossentropy", {.from_logits = true}),
///                 {.metrics = {"accuracy"}});
///   tf::layers::History history = model.fit(x_train, y_train,
///       {.batch_size = 64, .epochs = 10, .validation_split = 0.1,
///        .callbacks = {std::make_shared<tf::callbacks::EarlyStopping>(
///            tf::callbacks::EarlyStoppingOptions{.patience = 2, .restore_best_weights = true})}});
///   tf::layers::Logs test = model.evaluate(x_test, y_test);   // test.at("accuracy")
///   tf::Tensor logits = model.predict(x_test);
///
/// The training step (forward, loss, gradients, the optimizer's update fused into the backward
/// pass) runs through tf::function unless compile's `run_eagerly`: the first batch of each shape
/// traces it, later batches run the graph, and everything that changes between steps (weights,
/// optimizer slots, learning rate, dropout generators) is read from variables, so the traced step
/// gives the eager step's values. The loss shown is the mean of the batch losses weighted by the
/// batch sizes; metrics accumulate over the epoch (Keras's running values), and a validation pass
/// adds each as "val_<name>".
///
/// verbose = 1 shows tf.keras's progress bar on `out` (std::cout by default): on a terminal one
/// line redrawn with ETA and the running metrics, in a log only the epoch's final line;
/// verbose = 2 one line per epoch; 0 nothing.
///
///   Epoch 1/10
///   844/844 [==============================] - 3s 3ms/step - loss: 0.5302 - accuracy: 0.8139 - val_loss:
///   0.4121 - val_accuracy: 0.8535

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/nn/layer.h"
#include "tapeflow/nn/loss.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::optimizers {
class Optimizer;
}  // namespace tapeflow::optimizers
namespace tapeflow::callbacks {
class Callback;
}  // namespace tapeflow::callbacks
namespace tapeflow::data {
class Dataset;
}  // namespace tapeflow::data

namespace tapeflow::layers {

namespace detail {
class BatchFeed;  // where fit's batches come from (model.cpp)
}  // namespace detail

/// The values a training loop reports (Keras's `logs` dict): names and values in the order they
/// were first set ("loss", the metrics, then "val_loss" and the validation metrics).
class Logs {
 public:
  /// Sets `name` to `value`, appending a new name at the end.
  void set(const std::string& name, double value);
  /// The value of `name`, or std::nullopt.
  std::optional<double> get(const std::string& name) const;
  /// The value of `name`. Throws InvalidArgumentError naming the missing key and the keys there are.
  double at(const std::string& name) const;
  /// The names, in order.
  std::vector<std::string> keys() const;
  /// The entries, in order.
  const std::vector<std::pair<std::string, double>>& entries() const { return entries_; }
  /// Whether nothing is set.
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<std::pair<std::string, double>> entries_;
};

/// What fit() returns (Keras's History callback): the epochs run (0-based) and each log's value
/// at the end of each of them.
struct History {
  std::vector<std::int64_t> epoch;                     ///< the epochs run, in order
  std::map<std::string, std::vector<double>> history;  ///< per log name, one value per epoch
};

/// compile()'s keyword arguments besides the optimizer and the loss.
struct CompileOptions {
  /// Keras's metric names: "accuracy" (or "acc": the accuracy that suits the loss — sparse
  /// categorical for sparse_categorical_crossentropy, categorical for categorical_crossentropy,
  /// binary for binary_crossentropy, exact match otherwise), "sparse_categorical_accuracy",
  /// "categorical_accuracy", "binary_accuracy". Each is logged under the name given.
  std::vector<std::string> metrics{};
  /// Run the steps op by op instead of through tf::function.
  bool run_eagerly = false;
};

/// The callbacks a loop calls (nn/callbacks.h), in order; the progress display comes after them.
using CallbackList = std::vector<std::shared_ptr<callbacks::Callback>>;

/// fit()'s keyword arguments (keras.Model.fit).
struct FitOptions {
  std::int64_t batch_size = 32;  ///< examples per step, >= 1 (the last step of an epoch may have fewer)
  std::int64_t epochs = 1;       ///< train until this epoch (counted from 0, so initial_epoch < epochs)
  int verbose = 1;               ///< 0 silent, 1 progress bar, 2 one line per epoch
  CallbackList callbacks{};      ///< called in order at each hook
  /// The last fraction of the examples (taken before shuffling), in [0, 1), held out as
  /// validation data. Exclusive with validation_data.
  double validation_split = 0;
  /// (x, y) evaluated at the end of every epoch, logged as val_loss and val_<metric>.
  std::optional<std::pair<Tensor, Tensor>> validation_data{};
  bool shuffle = true;  ///< a new order every epoch: data::shuffled_indices(n, seed, epoch)
  /// Weights of the classes (keys 0..k-1, each class once), multiplying each example's loss by its
  /// class's weight; y holds class ids (or one-hot rows). Exclusive with sample_weight.
  std::map<std::int64_t, double> class_weight{};
  /// One weight per training example (shape (n,)), passed to the loss as its sample_weight.
  std::optional<Tensor> sample_weight{};
  /// The epoch to start from (resuming a run: the epochs before it are not run, and the shuffle's
  /// order of each epoch depends only on the seed and its index, as in an uninterrupted run).
  std::int64_t initial_epoch = 0;
  std::uint64_t seed = 0;  ///< the shuffle's seed
  /// With a dataset: the batches that make an epoch, taken from one iteration that goes on across
  /// epochs (needed for a dataset that repeats without end); 0: each epoch is one whole iteration.
  std::int64_t steps_per_epoch = 0;
  std::ostream* out = nullptr;  ///< where the progress goes; nullptr: std::cout
  /// In a job of several ranks (distributed::init() under mpirun), train data-parallel (see fit);
  /// false: each rank trains on its own.
  bool data_parallel = true;
};

/// evaluate()'s keyword arguments (keras.Model.evaluate).
struct EvaluateOptions {
  std::int64_t batch_size = 32;           ///< examples per step, >= 1
  int verbose = 1;                        ///< 0 silent, 1 progress bar, 2 one final line
  std::optional<Tensor> sample_weight{};  ///< one weight per example, for the loss and the metrics
  CallbackList callbacks{};               ///< their on_test_* hooks are called
  std::ostream* out = nullptr;            ///< nullptr: std::cout
};

/// predict()'s keyword arguments (keras.Model.predict).
struct PredictOptions {
  std::int64_t batch_size = 32;  ///< examples per step, >= 1
  int verbose = 1;               ///< 0 silent, 1 progress bar, 2 one final line
  CallbackList callbacks{};      ///< their on_predict_* hooks are called
  std::ostream* out = nullptr;   ///< nullptr: std::cout
};

/// A Layer with Keras's training loop (see the file comment). Subclasses define call().
class Model : public Layer {
 public:
  /// A model named `name` (see Layer).
  explicit Model(std::string name, std::optional<mixed_precision::Policy> policy = std::nullopt);
  ~Model() override;

  /// Configures training: the optimizer (shared: callbacks and the caller may adjust its
  /// learning rate), the loss and the metrics. Compiling again replaces all three and the traced
  /// steps. Throws InvalidArgumentError for a null optimizer or an unknown metric name.
  void compile(std::shared_ptr<optimizers::Optimizer> optimizer, losses::Loss loss,
               CompileOptions options = {});
  /// Whether compile() was called.
  bool compiled() const { return compiled_ != nullptr; }

  /// Trains on (x, y): x and y have rank >= 1 and the same number of examples (first dimension).
  /// Epochs initial_epoch..epochs-1 run; each visits every training example once, in batches,
  /// calling the callbacks' hooks as Keras does; a callback that sets stop_training ends the run
  /// after the current batch. Returns the epochs' logs. Throws FailedPreconditionError before
  /// compile(); InvalidArgumentError naming fit and the shapes for mismatched or empty data,
  /// batch_size < 1, a validation split outside [0, 1) or leaving no example on either side,
  /// both validation forms, both weight forms, a class_weight that does not cover 0..k-1 or a
  /// label outside it; what the model, the loss or a callback throws (a callback's error names it).
  ///
  /// In a job of several ranks (distributed::init() under mpirun, size() > 1) fit trains
  /// data-parallel, as Horovod's Keras does: every rank starts from rank 0's variables (and
  /// optimizer state, if built); batch_size is per rank, each global batch of size() *
  /// batch_size examples of the epoch's order is cut into one shard per rank (a last, smaller one
  /// evenly, or dropped when it has fewer examples than ranks), and a DistributedGradientTape
  /// averages the gradients, each rank's loss scaled by its share of the global batch, so that N
  /// ranks train as one process with batch N * batch_size (to float rounding). The epoch logs and
  /// the validation (split over the ranks) are the whole data's on every rank; the batch logs are
  /// each rank's own. Callbacks run on every rank, but those whose rank_zero_only() is true
  /// (ModelCheckpoint, CSVLogger) and the progress display run on rank 0 only; a stop that any
  /// rank's callback asks for stops every rank after the same step.
  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  /// Trains on a dataset of batches (tf.data's form, data/dataset.h): each element is (x, y) or
  /// (x, y, sample_weight), and each epoch is a new iteration (reshuffled if the dataset
  /// shuffles), or steps_per_epoch batches of one. batch_size and shuffle do not apply (the
  /// dataset batches and shuffles); validation_split, sample_weight and class_weight are refused
  /// (InvalidArgumentError), validation_data is taken. The progress bar's step count is the
  /// dataset's cardinality ("Unknown" when it has none). Data-parallel (as above), each rank's
  /// dataset gives that rank's batches (Dataset::shard(distributed::size(), distributed::rank()));
  /// an epoch ends on every rank when any rank's data ends.
  History fit(const data::Dataset& dataset, const FitOptions& options = {});

  /// The loss and the metrics over (x, y), in batches, in inference mode. Throws as fit() does.
  Logs evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options = {});
  /// The same over a dataset of (x, y) or (x, y, sample_weight) batches (one iteration).
  Logs evaluate(const data::Dataset& dataset, const EvaluateOptions& options = {});

  /// The model's outputs for x (inference mode), computed in batches and concatenated along the
  /// first axis. Throws InvalidArgumentError naming predict for a rank-0 or empty x or
  /// batch_size < 1. Needs no compile().
  Tensor predict(const Tensor& x, const PredictOptions& options = {});

  /// Keras's model.stop_training: set by a callback (EarlyStopping, TerminateOnNaN) to end fit()
  /// after the current batch; fit() clears it when it starts.
  bool stop_training() const { return stop_training_; }
  /// Sets stop_training().
  void set_stop_training(bool stop) { stop_training_ = stop; }

  /// The optimizer given to compile(). Throws FailedPreconditionError before compile().
  optimizers::Optimizer& optimizer() const;
  /// The loss given to compile(). Throws FailedPreconditionError before compile().
  const losses::Loss& loss() const;
  /// The names evaluate() reports, in order: "loss" then the metrics (Keras's metrics_names).
  std::vector<std::string> metrics_names() const;

 private:
  struct Compiled;
  /// The compiled state, or throws FailedPreconditionError naming `caller`.
  Compiled& compiled_state(const char* caller) const;
  /// fit()'s loop over the batches of `feed`, validating on `validation` after each epoch;
  /// `ranks` > 1: data-parallel over that many ranks.
  History train(detail::BatchFeed& feed, const std::optional<std::pair<Tensor, Tensor>>& validation,
                const FitOptions& options, int ranks);

  std::unique_ptr<Compiled> compiled_;
  bool stop_training_ = false;
};

}  // namespace tapeflow::layers
#pragma GCC visibility pop
