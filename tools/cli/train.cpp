#include "train.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "models.h"
#include "plot.h"
#include "predict.h"
#include "progress.h"
#include "tapeflow/checkpoint.h"
#include "tapeflow/data.h"
#include "tapeflow/distributed.h"
#include "tapeflow/errors.h"
#include "tapeflow/nn/losses.h"
#include "tapeflow/nn/metrics.h"
#include "tapeflow/onnx.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/image.h"
#include "tapeflow/optim/optimizer.h"
#include "tapeflow/threads.h"
#include "text_models.h"
#include "train_step.h"
#include "train_text.h"

namespace tapeflow::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// How OpenMP's idle threads wait in this process, as the run header names it: the policy libgomp
/// read from OMP_WAIT_POLICY when it was loaded (main() sets PASSIVE unless the user chose one).
std::string openmp_wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy == nullptr ? "unset" : policy;
}

/// The key of the flips' seeds: the run's seed mixed with this, so that their draws are not those
/// of the dropout masks, which come from the run's seed too.
constexpr std::uint64_t kFlipSeedKey = 0xF11B'5EED'0000'0001;

/// The scalars a checkpoint keeps besides the variables, under "train/...".
struct Meta {
  Variable epoch{std::int64_t{0}, {.name = "train/epoch", .trainable = false}};
  /// The learning rate of the first epoch (--lr).
  Variable learning_rate{0.0, {.name = "train/learning_rate", .trainable = false}};
  Variable seed{std::int64_t{0}, {.name = "train/seed", .trainable = false}};
  Variable batch_size{std::int64_t{0}, {.name = "train/batch_size", .trainable = false}};
  Variable limit{std::int64_t{0}, {.name = "train/limit", .trainable = false}};
  Variable model{std::int64_t{0}, {.name = "train/model", .trainable = false}};
  Variable optimizer{std::int64_t{0}, {.name = "train/optimizer", .trainable = false}};
  Variable history = history_variable(zeros({0, kHistoryColumns}, DType::Float64));
  /// Where a run stopped mid-epoch: the steps done of epoch `epoch` (0 at an epoch's end) and
  /// that epoch's sums so far (EpochSums, as [examples, loss sum, correct]).
  Variable step{std::int64_t{0}, {.name = "train/step", .trainable = false}};
  Variable partial{zeros({3}, DType::Float64), {.name = "train/partial", .trainable = false}};
  /// Checkpoints written before runs could stop mid-epoch have no train/step and train/partial.
  bool has_progress = true;
  /// The ranks of the run that wrote it (mpirun -np N): its shards of an epoch's batches.
  Variable ranks{std::int64_t{1}, {.name = "train/ranks", .trainable = false}};
  /// Checkpoints written before data-parallel runs have no train/ranks: one process wrote them.
  bool has_ranks = true;
  /// --lr-decay: the learning rate's factor per epoch.
  Variable lr_decay{1.0, {.name = "train/lr_decay", .trainable = false}};
  /// Checkpoints written before --lr-decay have no train/lr_decay: their rate was constant (1).
  bool has_lr_decay = true;
  /// --augment, as its index in augmentations().
  Variable augment{std::int64_t{0}, {.name = "train/augment", .trainable = false}};
  /// Checkpoints written before --augment have no train/augment: they trained without it.
  bool has_augment = true;
  /// --precision, as its index in precisions().
  Variable precision{std::int64_t{0}, {.name = "train/precision", .trainable = false}};
  /// Checkpoints written before train/precision do not say their precision: a resume takes --precision.
  bool has_precision = true;

  /// The train/history variable holding `value` (the history has no fixed size: it is recreated
  /// whenever it grows or is read).
  static Variable history_variable(Tensor value) {
    return Variable(std::move(value), {.name = "train/history", .trainable = false});
  }

  NamedVariables entries() const {
    NamedVariables all = {{"train/epoch", epoch},         {"train/learning_rate", learning_rate},
                          {"train/seed", seed},           {"train/batch_size", batch_size},
                          {"train/limit", limit},         {"train/model", model},
                          {"train/optimizer", optimizer}, {"train/history", history}};
    if (has_progress) all.insert(all.end(), {{"train/step", step}, {"train/partial", partial}});
    if (has_ranks) all.emplace_back("train/ranks", ranks);
    if (has_lr_decay) all.emplace_back("train/lr_decay", lr_decay);
    if (has_augment) all.emplace_back("train/augment", augment);
    if (has_precision) all.emplace_back("train/precision", precision);
    return all;
  }
};

/// The training loss and accuracy of one epoch as sums, so that the part of an epoch before an
/// interruption and the part after resuming add up to the epoch's means.
struct EpochSums {
  double examples = 0, loss_sum = 0, correct = 0;

  EpochSums operator+(const EpochSums& o) const {
    return {examples + o.examples, loss_sum + o.loss_sum, correct + o.correct};
  }
  double loss() const { return examples > 0 ? loss_sum / examples : 0.0; }
  double accuracy() const { return examples > 0 ? correct / examples : 0.0; }
};

/// Reads the "train/..." entries of `path` into a Meta. Throws UsageError for a file that cannot
/// be read, is corrupt or is not a `tapeflow train` checkpoint.
Meta read_meta(const std::string& path) {
  Meta meta;
  try {
    std::optional<Shape> history_shape;
    meta.has_progress = false;
    meta.has_ranks = false;
    meta.has_lr_decay = false;
    meta.has_augment = false;
    meta.has_precision = false;
    for (const auto& e : list_checkpoint(path)) {
      if (e.name == "train/history") history_shape = e.shape;
      if (e.name == "train/step") meta.has_progress = true;
      if (e.name == "train/ranks") meta.has_ranks = true;
      if (e.name == "train/lr_decay") meta.has_lr_decay = true;
      if (e.name == "train/augment") meta.has_augment = true;
      if (e.name == "train/precision") meta.has_precision = true;
    }
    if (!history_shape)
      throw UsageError("cannot resume from '" + path +
                       "': not a checkpoint written by `tapeflow train` "
                       "(it has no train/history entry)");
    // The history is not fixed-size: recreate the variable with the file's shape.
    meta.history = Meta::history_variable(zeros(*history_shape, DType::Float64));
    restore_checkpoint(path, meta.entries(), {.allow_unused_entries = true});
  } catch (const Error& e) {
    throw UsageError(std::string("cannot resume from the checkpoint: ") + e.what());
  }
  return meta;
}

std::string plural(std::int64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

struct Evaluation {
  double loss = 0, accuracy = 0;
};

/// Mean loss and accuracy of `model` on (images, labels), in batches, without a tape.
Evaluation evaluate(Model& model, const Tensor& images, const Tensor& labels, std::int64_t batch_size) {
  // Data-parallel: each rank evaluates its part of the test set, and the sums are combined.
  const std::int64_t n = images.shape()[0], ranks = distributed::size(), rank = distributed::rank();
  const std::int64_t first = n * rank / ranks, last = n * (rank + 1) / ranks;
  metrics::Mean loss;
  metrics::SparseCategoricalAccuracy accuracy;
  for (std::int64_t begin = first; begin < last; begin += batch_size) {
    const std::int64_t size = std::min(batch_size, last - begin);
    Tensor x = slice(images, {begin, 0, 0, 0}, {size, -1, -1, -1});
    Tensor y = slice(labels, {begin}, {size});
    Tensor logits = (*model.net)(x, /*training=*/false);
    loss.update_state(losses::sparse_categorical_crossentropy(y, logits, /*from_logits=*/true),
                      constant(static_cast<double>(size), DType::Float32));
    accuracy.update_state(y, logits);
  }
  if (ranks == 1) return {loss.result(), accuracy.result()};
  using distributed::ReduceOp;
  const double count = distributed::allreduce(loss.count(), ReduceOp::Sum, "test examples");
  const double total = distributed::allreduce(loss.total(), ReduceOp::Sum, "test loss");
  const double correct =
      distributed::allreduce(std::round(accuracy.result() * loss.count()), ReduceOp::Sum, "test correct");
  return {total / count, correct / count};
}

/// What Interrupted says: where the run stopped and how to go on from there.
std::string interrupted_message(const TrainOptions& o, std::int64_t epochs_done, std::int64_t step,
                                std::int64_t batches) {
  std::string where = step > 0 ? fmt::format("interrupted after step {}/{} of epoch {}/{}", step, batches,
                                             epochs_done + 1, o.epochs)
                               : fmt::format("interrupted after epoch {}/{}", epochs_done, o.epochs);
  if (o.checkpoint.empty())
    return where + "; nothing was saved (pass --checkpoint PATH to be able to resume an interrupted run)";
  std::string resume =
      fmt::format("tapeflow train --resume --checkpoint {} --epochs {}", o.checkpoint, o.epochs);
  if (o.data_dir != TrainOptions{}.data_dir) resume += " --data-dir " + o.data_dir;
  return fmt::format("{}; the checkpoint '{}' holds this state. To resume:\n  {}", where, o.checkpoint,
                     resume);
}

std::int64_t parameter_count(const Model& m) {
  std::int64_t n = 0;
  for (const auto& v : m.net->trainable_variables()) n += v.shape().num_elements();
  return n;
}

/// Refuses, before training, an output path the file written after training could not replace:
/// its directory must exist and be writable, and the path must not be a directory.
void check_output_path(const char* option, const std::string& path) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  const fs::path dir = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(dir, ec))
    throw UsageError(fmt::format("{} '{}': its directory '{}' does not exist", option, path, dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(fmt::format("{} '{}': its directory '{}' is not writable", option, path, dir.string()));
  if (fs::is_directory(path, ec)) throw UsageError(fmt::format("{} '{}' is a directory", option, path));
}

/// The absolute path `path` names, with symbolic links and "." and ".." resolved as far as it exists.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal() : p;
}

/// Refuses two output options that name the same file: the later write would replace the
/// earlier one's file.
void require_different_files(const std::vector<std::pair<const char*, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [a, a_path] = outputs[i];
      const auto& [b, b_path] = outputs[j];
      if (!a_path.empty() && !b_path.empty() && resolved(a_path) == resolved(b_path))
        throw UsageError(fmt::format("{} '{}' and {} '{}' are the same file: one would replace the other", a,
                                     a_path, b, b_path));
    }
}

/// What the text models refuse: the image models' options, and data-parallel runs (not yet).
void validate_text_options(const TrainOptions& o) {
  const auto refuse = [&](bool given, const char* option) {
    if (given)
      throw UsageError(fmt::format("{} applies to the image models (mlp, cnn), not {}", option, o.model));
  };
  refuse(!o.augment.empty(), "--augment");
  refuse(o.data_dir != TrainOptions{}.data_dir, "--data-dir");
  refuse(o.gradient_report, "--gradient-report");
  if (o.sequence_length < 1)
    throw UsageError(fmt::format("--sequence-length must be at least 1, got {}", o.sequence_length));
}

}  // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"adam", "sgd"};
  return names;
}

std::unique_ptr<optimizers::Optimizer> make_optimizer(const TrainOptions& o, std::int64_t steps_per_epoch,
                                                      double adam_epsilon) {
  const std::string& name = o.optimizer;
  const optimizers::LearningRate learning_rate =
      o.lr_decay == 1 ? optimizers::LearningRate(o.learning_rate)
                      : optimizers::schedules::ExponentialDecay(o.learning_rate, steps_per_epoch, o.lr_decay,
                                                                /*staircase=*/true);
  if (name == "adam")
    return std::make_unique<optimizers::Adam>(learning_rate,
                                              optimizers::AdamOptions{.epsilon = adam_epsilon});
  if (name == "sgd") return std::make_unique<optimizers::SGD>(learning_rate, /*momentum=*/0.9);
  throw UsageError("unknown optimizer '" + name + "': expected adam or sgd");
}

namespace {

template <class T>
void require_same_value(bool given, const char* option, const T& ours, const T& saved,
                        const std::string& path) {
  if (given && ours != saved)
    throw UsageError(
        fmt::format("cannot resume from '{}': it was trained with --{} {}, not {} (leave the "
                    "option out to continue with the checkpoint's value)",
                    path, option, saved, ours));
}

}  // namespace

void require_same(bool given, const char* option, const std::string& ours, const std::string& saved,
                  const std::string& path) {
  require_same_value(given, option, ours, saved, path);
}
void require_same(bool given, const char* option, std::int64_t ours, std::int64_t saved,
                  const std::string& path) {
  require_same_value(given, option, ours, saved, path);
}
void require_same(bool given, const char* option, std::uint64_t ours, std::uint64_t saved,
                  const std::string& path) {
  require_same_value(given, option, ours, saved, path);
}
void require_same(bool given, const char* option, double ours, double saved, const std::string& path) {
  require_same_value(given, option, ours, saved, path);
}

std::int64_t index_of(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) - names.begin();
}

void adopt_learning_rate(TrainOptions& o, double saved, std::ostream& out) {
  if (o.learning_rate_given && o.learning_rate != saved)
    out << fmt::format("note: using --lr {:g}, not the checkpoint's learning rate {:g}\n", o.learning_rate,
                       saved);
  if (!o.learning_rate_given) o.learning_rate = saved;
}

bool stop_requested(const TrainOptions& o) {
  return o.stop_requested && o.stop_requested->load(std::memory_order_relaxed) != 0;
}

const std::vector<std::string>& augmentations() {
  static const std::vector<std::string> names = {"none", "flip"};
  return names;
}

const std::vector<std::string>& precisions() {
  static const std::vector<std::string> names = {"float32", "mixed_bfloat16"};
  return names;
}

void validate(const TrainOptions& o) {
  const bool text = is_text_model(o.model);
  if (!text && index_of(model_names(), o.model) == static_cast<std::int64_t>(model_names().size()))
    throw UsageError("unknown model '" + o.model + "': expected mlp, cnn, char-lstm or char-transformer");
  if (text) validate_text_options(o);
  if (index_of(optimizer_names(), o.optimizer) == static_cast<std::int64_t>(optimizer_names().size()))
    throw UsageError("unknown optimizer '" + o.optimizer + "': expected adam or sgd");
  if (!o.augment.empty() &&
      index_of(augmentations(), o.augment) == static_cast<std::int64_t>(augmentations().size()))
    throw UsageError("unknown augmentation '" + o.augment + "': expected flip or none");
  if (index_of(precisions(), o.precision) == static_cast<std::int64_t>(precisions().size()))
    throw UsageError("unknown precision '" + o.precision + "': expected float32 or mixed_bfloat16");
  if (o.epochs < 1) throw UsageError(fmt::format("--epochs must be at least 1, got {}", o.epochs));
  if (o.batch_size < 1)
    throw UsageError(fmt::format("--batch-size must be at least 1, got {}", o.batch_size));
  if (!(o.learning_rate > 0) || !std::isfinite(o.learning_rate))
    throw UsageError(fmt::format("--lr must be a positive number, got {}", o.learning_rate));
  if (!(o.lr_decay > 0 && o.lr_decay <= 1))
    throw UsageError(
        fmt::format("--lr-decay must be in (0, 1] (1: a constant learning rate), got {}", o.lr_decay));
  if (o.limit < 0) throw UsageError(fmt::format("--limit must be 0 (all) or positive, got {}", o.limit));
  if (o.threads < 0)
    throw UsageError(fmt::format("--threads must be 0 (all cores) or positive, got {}", o.threads));
  if (o.ranks < 0) throw UsageError(fmt::format("--ranks must be positive, got {}", o.ranks));
  if (o.ranks > 0 && o.ranks != distributed::size())
    throw UsageError(
        distributed::is_mpi()
            ? fmt::format("--ranks {} but mpirun started {} ranks", o.ranks, distributed::size())
            : fmt::format(
                  "--ranks {}: tapeflow does not start ranks itself; run `mpirun -np {} tapeflow train ...` "
                  "(as root add --allow-run-as-root)",
                  o.ranks, o.ranks));
  if (o.gradient_report && distributed::size() > 1)
    throw UsageError("--gradient-report needs a single process: the report is of one rank's tape");
  std::error_code ec;
  if (!text && !o.dataset && !fs::is_directory(o.data_dir, ec))
    throw UsageError("the data directory '" + o.data_dir +
                     "' does not exist: install Fashion-MNIST with `apt-get install dataset-fashion-mnist` "
                     "(scripts/setup.sh does) or pass --data-dir");
  if (o.resume && o.checkpoint.empty()) throw UsageError("--resume needs --checkpoint PATH");
  if (o.resume && !fs::exists(o.checkpoint, ec))
    throw UsageError("cannot resume: there is no checkpoint at '" + o.checkpoint + "'");
  if (o.resume && o.overwrite)
    throw UsageError("--resume continues the run at --checkpoint and --overwrite replaces it: choose one");
  // The checkpoint is first written after an epoch: refuse a path it cannot be written to now.
  if (!o.checkpoint.empty()) {
    try {
      check_checkpoint_path(o.checkpoint);
    } catch (const Error& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
    if (!o.resume && !o.overwrite && fs::exists(o.checkpoint, ec))
      throw UsageError(fmt::format(
          "--checkpoint '{}' already exists: pass --resume to continue that run, or --overwrite to start a "
          "new one that replaces it",
          o.checkpoint));
  }
  if (!o.plot.empty()) {
    if (!plot_format(o.plot))
      throw UsageError("--plot '" + o.plot + "': the name must end in .svg (SVG) or .png (PNG image)");
    check_output_path("--plot", o.plot);
  }
  if (!o.export_path.empty()) check_output_path("--export", o.export_path);
  if (!o.export_onnx_path.empty()) {
    if (!onnx_export_available())
      throw UsageError(
          "--export-onnx: this tapeflow was built without ONNX support (libonnx-dev, libprotobuf-dev)");
    check_output_path("--export-onnx", o.export_onnx_path);
  }
  require_different_files({{"--checkpoint", o.checkpoint},
                           {"--plot", o.plot},
                           {"--export", o.export_path},
                           {"--export-onnx", o.export_onnx_path}});
}

data::FashionMnist fashion_mnist(const data::FashionMnist* loaded, const std::string& data_dir) {
  if (loaded) return *loaded;
  try {
    return data::load_fashion_mnist(data_dir);
  } catch (const Error& e) {
    throw UsageError(std::string("cannot load Fashion-MNIST: ") + e.what());
  }
}

namespace {

/// On --resume: reads the checkpoint's "train/..." entries and makes them the configuration of
/// `o` (explicit options must agree with them; an explicit --lr wins, with a note on `out`).
/// Returns nullopt without --resume. Throws UsageError.
std::optional<Meta> adopt_checkpoint_configuration(TrainOptions& o, std::ostream& out) {
  if (!o.resume) return std::nullopt;
  Meta saved = read_meta(o.checkpoint);
  const auto& models = model_names();
  const std::int64_t model_id = saved.model.value().item<std::int64_t>();
  const std::int64_t opt_id = saved.optimizer.value().item<std::int64_t>();
  if (model_id < 0 || model_id >= static_cast<std::int64_t>(models.size()) || opt_id < 0 ||
      opt_id >= static_cast<std::int64_t>(optimizer_names().size()))
    throw UsageError("cannot resume from '" + o.checkpoint + "': unknown model or optimizer id");
  require_same(o.model_given, "model", o.model, models[static_cast<std::size_t>(model_id)], o.checkpoint);
  require_same(o.optimizer_given, "optimizer", o.optimizer,
               optimizer_names()[static_cast<std::size_t>(opt_id)], o.checkpoint);
  require_same(o.seed_given, "seed", o.seed,
               static_cast<std::uint64_t>(saved.seed.value().item<std::int64_t>()), o.checkpoint);
  require_same(o.batch_size_given, "batch-size", o.batch_size, saved.batch_size.value().item<std::int64_t>(),
               o.checkpoint);
  require_same(o.limit_given, "limit", o.limit, saved.limit.value().item<std::int64_t>(), o.checkpoint);
  const double saved_lr_decay = saved.has_lr_decay ? saved.lr_decay.value().item<double>() : 1.0;
  require_same(o.lr_decay_given, "lr-decay", o.lr_decay, saved_lr_decay, o.checkpoint);
  const std::int64_t augment_id = saved.has_augment ? saved.augment.value().item<std::int64_t>() : 0;
  if (augment_id < 0 || augment_id >= static_cast<std::int64_t>(augmentations().size()))
    throw UsageError("cannot resume from '" + o.checkpoint + "': unknown augmentation id");
  const std::string& saved_augment = augmentations()[static_cast<std::size_t>(augment_id)];
  require_same(o.augment_given, "augment", o.augment, saved_augment, o.checkpoint);
  if (saved.has_precision) {
    const std::int64_t precision_id = saved.precision.value().item<std::int64_t>();
    if (precision_id < 0 || precision_id >= static_cast<std::int64_t>(precisions().size()))
      throw UsageError("cannot resume from '" + o.checkpoint + "': unknown precision id");
    const std::string& saved_precision = precisions()[static_cast<std::size_t>(precision_id)];
    require_same(o.precision_given, "precision", o.precision, saved_precision, o.checkpoint);
    o.precision = saved_precision;
  }
  o.model = models[static_cast<std::size_t>(model_id)];
  o.optimizer = optimizer_names()[static_cast<std::size_t>(opt_id)];
  o.seed = static_cast<std::uint64_t>(saved.seed.value().item<std::int64_t>());
  o.batch_size = saved.batch_size.value().item<std::int64_t>();
  o.limit = saved.limit.value().item<std::int64_t>();
  o.lr_decay = saved_lr_decay;
  o.augment = saved_augment;
  adopt_learning_rate(o, saved.learning_rate.value().item<double>(), out);
  if (o.batch_size < 1 || o.limit < 0 || !(o.learning_rate > 0) || !std::isfinite(o.learning_rate) ||
      !(o.lr_decay > 0 && o.lr_decay <= 1) || saved.epoch.value().item<std::int64_t>() < 0)
    throw UsageError("cannot resume from '" + o.checkpoint +
                     "': its batch size, limit, learning rate, decay or epoch is invalid");
  return saved;
}

/// The examples a run trains and evaluates on, after --limit and test_limit.
struct TrainingData {
  Tensor train_x, train_y, test_x, test_y;
};

/// Loads Fashion-MNIST (or takes o.dataset) and cuts it to the limits. Throws UsageError when it
/// cannot be loaded or leaves no training example.
TrainingData load_training_data(const TrainOptions& o) {
  data::FashionMnist ds = fashion_mnist(o.dataset, o.data_dir);
  if (o.test_limit > 0 && o.test_limit < ds.test_images.shape()[0]) {
    ds.test_images = slice(ds.test_images, {0, 0, 0, 0}, {o.test_limit, -1, -1, -1});
    ds.test_labels = slice(ds.test_labels, {0}, {o.test_limit});
  }
  Tensor train_x = ds.train_images, train_y = ds.train_labels;
  if (o.limit > 0 && o.limit < train_x.shape()[0]) {
    train_x = slice(train_x, {0, 0, 0, 0}, {o.limit, -1, -1, -1});
    train_y = slice(train_y, {0}, {o.limit});
  }
  if (train_x.shape()[0] == 0)
    throw UsageError(
        fmt::format("the training set is empty: {} holds no training examples, so there is nothing "
                    "to train",
                    o.dataset ? std::string("the data set") : "'" + o.data_dir + "'"));
  return {train_x, train_y, ds.test_images, ds.test_labels};
}

/// Where a run starts: the epochs already done, the steps done of the next epoch and their sums.
struct StartPoint {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  EpochSums sums;
};

/// Everything a training checkpoint holds: the model, the optimizer's state, the "train/..."
/// scalars and the history.
struct TrainingState {
  Model model;
  std::unique_ptr<optimizers::Optimizer> optimizer;
  Meta meta;
  History history;

  NamedVariables checkpoint_entries() const {
    NamedVariables all = checkpoint_variables(*model.net, "model/");
    for (auto& [name, var] : optimizer->variables()) all.emplace_back("optimizer/" + name, var);
    for (auto& e : meta.entries()) all.push_back(e);
    return all;
  }
};

/// A fresh model of o.model and its optimizer, built, for epochs of `steps_per_epoch` steps.
TrainingState make_training_state(const TrainOptions& o, std::int64_t steps_per_epoch) {
  TrainingState s{make_model(o.model, o.seed, o.precision), make_optimizer(o, steps_per_epoch), {}, {}};
  s.optimizer->build(s.model.net->trainable_variables());
  return s;
}

/// Restores `s` from o.checkpoint, whose "train/..." entries `saved` holds, and says where the
/// run resumes. Throws UsageError.
StartPoint restore_training_state(TrainingState& s, const Meta& saved, const TrainOptions& o,
                                  std::int64_t num_batches) {
  s.meta.history = Meta::history_variable(saved.history.value());
  s.meta.has_progress = saved.has_progress;
  s.meta.has_ranks = saved.has_ranks;
  s.meta.has_lr_decay = saved.has_lr_decay;
  s.meta.has_augment = saved.has_augment;
  s.meta.has_precision = saved.has_precision;
  try {
    restore_checkpoint(o.checkpoint, s.checkpoint_entries());
  } catch (const Error& e) {
    throw UsageError(std::string("cannot resume from the checkpoint: ") + e.what());
  }
  s.meta.has_progress = s.meta.has_ranks = s.meta.has_precision = true;  // saved from now on
  StartPoint start;
  start.epoch = s.meta.epoch.value().item<std::int64_t>();
  start.step = s.meta.step.value().item<std::int64_t>();
  const auto sums = s.meta.partial.value().to_vector<double>();
  start.sums = {sums[0], sums[1], sums[2]};
  // Mid-epoch, the steps done are steps of the writer's shards: only as many ranks continue them.
  const std::int64_t ranks = s.meta.ranks.value().item<std::int64_t>();
  if (start.step > 0 && ranks != distributed::size())
    throw UsageError(
        fmt::format("cannot resume from '{}': it stopped at step {} of epoch {} of a run on {}, and "
                    "this run has {}; resume it with `mpirun -np {}` (a checkpoint from an epoch's "
                    "end resumes on any number)",
                    o.checkpoint, start.step, start.epoch + 1, plural(ranks, "rank"),
                    plural(distributed::size(), "rank"), ranks));
  if (start.step < 0 || start.step > num_batches)
    throw UsageError(fmt::format("cannot resume from '{}': it stopped at step {} of an epoch of {} steps",
                                 o.checkpoint, start.step, num_batches));
  s.history = history_from(s.meta.history.value());
  return start;
}

/// Writes the checkpoint of `s` after `epochs_done` epochs and `step` steps of the next (with
/// that epoch's sums so far).
void save_training_state(TrainingState& s, const TrainOptions& o, std::int64_t epochs_done, std::int64_t step,
                         const EpochSums& sums) {
  Meta& meta = s.meta;
  meta.epoch.assign(constant<std::int64_t>(epochs_done));
  meta.step.assign(constant<std::int64_t>(step));
  meta.partial.assign(constant({sums.examples, sums.loss_sum, sums.correct}));
  meta.learning_rate.assign(constant<double>(o.learning_rate));
  meta.lr_decay.assign(constant<double>(o.lr_decay));
  meta.augment.assign(constant<std::int64_t>(index_of(augmentations(), o.augment)));
  meta.precision.assign(constant<std::int64_t>(index_of(precisions(), o.precision)));
  meta.seed.assign(constant(static_cast<std::int64_t>(o.seed)));
  meta.batch_size.assign(constant<std::int64_t>(o.batch_size));
  meta.limit.assign(constant<std::int64_t>(o.limit));
  meta.model.assign(constant<std::int64_t>(index_of(model_names(), o.model)));
  meta.optimizer.assign(constant<std::int64_t>(index_of(optimizer_names(), o.optimizer)));
  meta.ranks.assign(constant<std::int64_t>(distributed::size()));
  meta.history = Meta::history_variable(history_tensor(s.history));
  save_checkpoint(o.checkpoint, s.checkpoint_entries());
}

/// The run's first lines: the configuration, where it resumes, and whether anything is left.
void print_run_header(std::ostream& out, const TrainOptions& o, const TrainingState& s, const TrainingData& d,
                      bool resumed, const StartPoint& start, std::int64_t num_batches) {
  const int ranks = distributed::size();
  const std::string batch =
      ranks == 1 ? fmt::format("batch {}", o.batch_size)
                 : fmt::format("batch {} per rank ({} a step)", o.batch_size, o.batch_size * ranks);
  out << fmt::format(
      "tapeflow train: {} ({} parameters), {} lr {:g}{}, {}{}, {} train / {} test examples, {}{}, {}, "
      "OpenBLAS "
      "{}, OpenMP wait policy {}\n",
      o.model, parameter_count(s.model), o.optimizer, o.learning_rate,
      o.lr_decay == 1 ? "" : fmt::format(" x{:g} per epoch", o.lr_decay), batch,
      o.augment == "flip" ? ", random flips" : "", d.train_x.shape()[0], d.test_x.shape()[0],
      plural(o.threads > 0 ? o.threads : num_threads(), "thread"), ranks == 1 ? "" : " per rank", o.precision,
      openblas_kernels(), openmp_wait_policy());
  if (ranks > 1)
    out << fmt::format("data-parallel over {} MPI ranks: gradients averaged by a DistributedGradientTape{}\n",
                       ranks,
                       o.eager ? " while the backward pass runs" : " (Allreduce ops in the traced step)");
  if (resumed && start.step > 0)
    out << fmt::format("resumed from {} after step {}/{} of epoch {}\n", o.checkpoint, start.step,
                       num_batches, start.epoch + 1);
  else if (resumed)
    out << fmt::format("resumed from {} after epoch {}\n", o.checkpoint, start.epoch);
  if (start.epoch >= o.epochs)
    out << fmt::format("nothing to do: the checkpoint has {} done (--epochs {})\n",
                       plural(start.epoch, "epoch"), o.epochs);
  out << std::flush;
}

/// The one line a traced run adds after its first epoch: the traces and the time they took (each
/// trace is also the first step of its batch shape: the body runs once while it is recorded).
void print_trace_note(std::ostream& out, const FunctionStats& stats) {
  out << fmt::format(
      "step: traced with tf::function, {} (one per batch shape) in {:.0f} ms; --eager runs it "
      "op by op\n",
      plural(stats.traces, "trace"), stats.trace_ms);
}

/// Trains epoch `epoch` (0-based) from step `first_step`, whose earlier steps' sums are `before`,
/// showing the progress bar on `log`; returns the epoch's sums. With `report_first_step`, the
/// first step runs eagerly and prints its gradient report to `out`. When a stop is requested
/// before the epoch's last step, saves the checkpoint (if any) and throws Interrupted.
EpochSums train_epoch(TrainingState& s, TrainStep& train_step, const TrainOptions& o,
                      data::BatchIterator& batches, std::int64_t epoch, std::int64_t first_step,
                      const EpochSums& before, bool report_first_step, std::ostream& out, std::ostream& log,
                      bool log_is_terminal) {
  batches.reset(epoch);
  // A run resumed mid-epoch skips the batches it already trained on.
  for (std::int64_t i = 0; i < first_step; ++i) batches.next();
  metrics::Mean train_loss;
  double correct = 0;
  ProgressBar bar(log, log_is_terminal, epoch + 1, o.epochs, batches.num_batches());
  std::int64_t step = first_step, seen = 0;
  // The sums of this rank's steps so far, with those before a resume (the progress bar's).
  auto sums = [&] { return before + EpochSums{train_loss.count(), train_loss.total(), correct}; };
  // The same over every rank's steps: a collective under mpirun, where `before` (saved by rank 0)
  // already holds every rank's steps before a resume.
  auto job_sums = [&] {
    const EpochSums mine{train_loss.count(), train_loss.total(), correct};
    if (distributed::size() == 1) return before + mine;
    using distributed::ReduceOp;
    return before + EpochSums{distributed::allreduce(mine.examples, ReduceOp::Sum, "train examples"),
                              distributed::allreduce(mine.loss_sum, ReduceOp::Sum, "train loss"),
                              distributed::allreduce(mine.correct, ReduceOp::Sum, "train correct")};
  };
  while (auto b = batches.next()) {
    const std::int64_t size = b->labels.shape()[0];
    if (o.augment == "flip") {
      // One draw per image of this rank's batch: the counter is the job's step and the rank.
      const auto counter = (epoch * batches.num_batches() + step) * distributed::size() + distributed::rank();
      b->features = image::stateless_random_flip_left_right(
          b->features, constant<std::int64_t>({static_cast<std::int64_t>(o.seed ^ kFlipSeedKey), counter}));
    }
    // Outside the (traced) step: assigns the dropout layers' seed variables, which it reads.
    s.model.start_step(epoch, step);
    // The global batch this batch is a shard of: smaller than the others at an epoch's end.
    const std::int64_t global_batch = batches.options().batch_size * batches.options().num_shards;
    const std::int64_t global_rows = std::min(global_batch, batches.num_examples() - step * global_batch);
    const StepResult r = report_first_step && step == first_step ? train_step.with_gradient_report(*b, out)
                                                                 : train_step(*b, global_rows);
    train_loss.update_state(r.loss, constant(static_cast<double>(size), DType::Float32));
    correct += static_cast<double>(r.correct.item<std::int64_t>());
    seen += size;
    const EpochSums so_far = sums();
    // The job's examples (every rank's shard is this one's size): the speed shown is the job's.
    bar.update(++step, seen * distributed::size(), so_far.loss(), so_far.accuracy());
    // At the epoch's last step the epoch is finished and saved as usual, then the run stops.
    // Data-parallel ranks decide together (a Ctrl-C reaches them at different steps), so they
    // stop after the same step.
    bool stop = stop_requested(o);
    if (distributed::size() > 1)
      stop = distributed::allreduce(stop ? 1.0 : 0.0, distributed::ReduceOp::Max, "stop requested") > 0;
    if (stop && step < batches.num_batches()) {
      bar.finish();
      const EpochSums done = job_sums();
      if (distributed::rank() == 0 && !o.checkpoint.empty()) save_training_state(s, o, epoch, step, done);
      throw Interrupted(interrupted_message(o, epoch, step, batches.num_batches()));
    }
  }
  bar.finish();
  return job_sums();
}

/// The line after the last epoch that says where the run wrote its plot and checkpoint, if anywhere.
void print_written_files(std::ostream& out, const TrainOptions& o) {
  std::vector<std::string> written;
  if (!o.plot.empty()) written.push_back("plot: " + o.plot);
  if (!o.checkpoint.empty()) written.push_back("checkpoint: " + o.checkpoint);
  if (!written.empty()) out << fmt::format("{}\n", fmt::join(written, "  ")) << std::flush;
}

/// Output that goes nowhere: the ranks other than 0 of a data-parallel run.
std::ostream& nowhere() {
  static std::ostream sink(nullptr);
  return sink;
}

}  // namespace

History train(const TrainOptions& options, std::ostream& out_all, std::ostream& log_all,
              bool log_is_terminal) {
  // Under mpirun, this process is one rank of the job (tapeflow/distributed.h); else rank 0 of 1.
  distributed::init();
  const int rank = distributed::rank(), ranks = distributed::size();
  std::ostream& out = rank == 0 ? out_all : nowhere();
  std::ostream& log = rank == 0 ? log_all : nowhere();
  // A resume without --model continues the checkpoint's model, a language model's too.
  if (options.resume && !options.model_given)
    if (const std::optional<std::string> text_model = text_checkpoint_model(options.checkpoint)) {
      TrainOptions text = options;
      text.model = *text_model;
      validate(text);
      return train_text(text, out, log, log_is_terminal);
    }
  validate(options);
  if (is_text_model(options.model)) return train_text(options, out, log, log_is_terminal);
  TrainOptions o = options;
  // Resume: the checkpoint decides the configuration; explicit options must agree with it.
  const std::optional<Meta> saved = adopt_checkpoint_configuration(o, out);
  if (o.augment.empty()) o.augment = o.model == "cnn" ? "flip" : "none";
  // The ranks on one machine share its cores.
  if (o.threads > 0 || distributed::local_size() > 1)
    set_num_threads(o.threads > 0 ? o.threads : std::max(1, num_threads() / distributed::local_size()));
  const TrainingData d = load_training_data(o);

  data::BatchIterator batches(d.train_x, d.train_y,
                              {.batch_size = o.batch_size,
                               .shuffle = true,
                               .seed = o.seed,
                               .num_shards = ranks,
                               .shard_index = rank});
  TrainingState s = make_training_state(o, batches.num_batches());
  const StartPoint start = saved ? restore_training_state(s, *saved, o, batches.num_batches()) : StartPoint{};
  if (ranks > 1) {
    // Every rank starts from rank 0's weights and optimizer state (equal already when every rank
    // built the model from the same seed or read the same checkpoint; this makes sure of it).
    distributed::broadcast_variables(s.model.net->variables(), 0);
    distributed::broadcast_optimizer_state(*s.optimizer, 0);
  }
  print_run_header(out, o, s, d, saved.has_value(), start, batches.num_batches());
  TrainStep train_step(s.model, *s.optimizer, o.eager, ranks > 1);

  for (std::int64_t epoch = start.epoch; epoch < o.epochs; ++epoch) {
    const auto clock_start = Clock::now();
    const bool resumed_epoch = epoch == start.epoch;
    const EpochSums epoch_sums = train_epoch(s, train_step, o, batches, epoch, resumed_epoch ? start.step : 0,
                                             resumed_epoch ? start.sums : EpochSums{},
                                             o.gradient_report && resumed_epoch, out, log, log_is_terminal);
    const Evaluation test = evaluate(s.model, d.test_x, d.test_y, o.eval_batch_size);
    const double seconds = std::chrono::duration<double>(Clock::now() - clock_start).count();
    s.history.push_back(
        {epoch + 1, epoch_sums.loss(), epoch_sums.accuracy(), test.loss, test.accuracy, seconds});
    out << fmt::format("epoch {}/{}: train loss {:.4f} acc {:.4f} | test loss {:.4f} acc {:.4f} | {:.1f} s\n",
                       epoch + 1, o.epochs, epoch_sums.loss(), epoch_sums.accuracy(), test.loss,
                       test.accuracy, seconds);
    // Every batch shape is traced in the run's first epoch (the partial batch is its last).
    if (resumed_epoch && train_step.traced()) print_trace_note(out, train_step.stats());
    out << std::flush;

    // Rank 0 writes for the job (atomically, as every checkpoint is written).
    if (rank == 0 && !o.checkpoint.empty()) save_training_state(s, o, epoch + 1, 0, EpochSums{});
    if (rank == 0 && !o.plot.empty())
      write_training_plot(o.plot, s.history,
                          fmt::format("tapeflow train --model {}: Fashion-MNIST", o.model));
    bool stop = stop_requested(o);
    if (ranks > 1) stop = distributed::allreduce(stop ? 1.0 : 0.0, distributed::ReduceOp::Max, "stop") > 0;
    if (stop && epoch + 1 < o.epochs)
      throw Interrupted(interrupted_message(o, epoch + 1, 0, batches.num_batches()));
  }
  if (rank == 0 && start.epoch < o.epochs) print_written_files(out, o);
  if (rank == 0 && (!o.export_path.empty() || !o.export_onnx_path.empty())) {
    export_model(s.model, o.eval_batch_size, {.function_file = o.export_path, .onnx = o.export_onnx_path});
    if (!o.export_path.empty())
      out << fmt::format("exported the model's inference to {} (tapeflow predict {})\n", o.export_path,
                         o.export_path);
    if (!o.export_onnx_path.empty())
      out << fmt::format("exported the model's inference as ONNX to {}\n", o.export_onnx_path);
  }
  return s.history;
}

}  // namespace tapeflow::cli
