#include "train_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "plot.h"
#include "predict.h"
#include "tapeflow/checkpoint.h"
#include "tapeflow/data.h"
#include "tapeflow/data/dataset.h"
#include "tapeflow/distributed.h"
#include "tapeflow/errors.h"
#include "tapeflow/nn/callbacks.h"
#include "tapeflow/nn/loss.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/optim/optimizer.h"
#include "tapeflow/threads.h"
#include "text_models.h"

namespace tapeflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

/// The part of the windows held out for validation: one in kValidationShare, from the end.
constexpr std::int64_t kValidationShare = 10;

/// char-lstm's learning rate when --lr is not given.
constexpr double kLstmLearningRate = 0.005;

/// Adam's epsilon. Keras adds it to sqrt(v) before the bias correction, so its default 1e-7 acts
/// about 30 times larger in the first steps and slows the many weights with small gradients: the
/// char-lstm's validation perplexity after 10 epochs is 8.68 with 1e-7 and 7.53 with this (the
/// same as LibTorch's Adam, whose epsilon placement then makes no difference; bench/compare
/// --group charlm).
constexpr double kAdamEpsilon = 1e-12;

/// The "text/..." entries of a checkpoint, besides the model's and the optimizer's variables.
struct Meta {
  Variable epoch{std::int64_t{0}, {.name = "text/epoch", .trainable = false}};
  Variable model{std::int64_t{0}, {.name = "text/model", .trainable = false}};
  Variable optimizer{std::int64_t{0}, {.name = "text/optimizer", .trainable = false}};
  Variable seed{std::int64_t{0}, {.name = "text/seed", .trainable = false}};
  Variable batch_size{std::int64_t{0}, {.name = "text/batch_size", .trainable = false}};
  Variable sequence_length{std::int64_t{0}, {.name = "text/sequence_length", .trainable = false}};
  Variable limit{std::int64_t{0}, {.name = "text/limit", .trainable = false}};
  Variable learning_rate{0.0, {.name = "text/learning_rate", .trainable = false}};
  Variable lr_decay{1.0, {.name = "text/lr_decay", .trainable = false}};
  Variable precision{std::int64_t{0}, {.name = "text/precision", .trainable = false}};
  /// The corpus's length in characters: with the vocabulary, what a resume checks of --text.
  Variable characters{std::int64_t{0}, {.name = "text/characters", .trainable = false}};
  Variable vocabulary{zeros({0}, DType::Int32), {.name = "text/vocabulary", .trainable = false}};
  Variable history{zeros({0, kHistoryColumns}, DType::Float64), {.name = "text/history", .trainable = false}};

  NamedVariables entries() const {
    return {{"text/epoch", epoch},           {"text/model", model},
            {"text/optimizer", optimizer},   {"text/seed", seed},
            {"text/batch_size", batch_size}, {"text/sequence_length", sequence_length},
            {"text/limit", limit},           {"text/learning_rate", learning_rate},
            {"text/lr_decay", lr_decay},     {"text/precision", precision},
            {"text/characters", characters}, {"text/vocabulary", vocabulary},
            {"text/history", history}};
  }
};

/// Reads the "text/..." entries of `path`. The vocabulary and the history have no fixed size:
/// their variables are made with the file's shapes. Throws UsageError for a file that cannot be
/// read, is corrupt, or is not a text model's checkpoint.
Meta read_meta(const std::string& path) {
  Meta meta;
  try {
    std::map<std::string, Shape> shapes;
    for (const auto& e : list_checkpoint(path)) shapes.emplace(e.name, e.shape);
    if (!shapes.count("text/vocabulary") || !shapes.count("text/history"))
      throw UsageError(fmt::format(
          "'{}' is not a checkpoint of `tapeflow train --model char-lstm|char-transformer` (it has no "
          "text/vocabulary entry)",
          path));
    meta.vocabulary = Variable(zeros(shapes.at("text/vocabulary"), DType::Int32),
                               {.name = "text/vocabulary", .trainable = false});
    meta.history = Variable(zeros(shapes.at("text/history"), DType::Float64),
                            {.name = "text/history", .trainable = false});
    restore_checkpoint(path, meta.entries(), {.allow_unused_entries = true});
  } catch (const Error& e) {
    throw UsageError(fmt::format("cannot read the checkpoint: {}", e.what()));
  }
  return meta;
}

/// names[index], or UsageError naming the checkpoint and what it holds.
const std::string& name_at(const std::vector<std::string>& names, const Variable& index, const char* what,
                           const std::string& path) {
  const auto i = index.value().item<std::int64_t>();
  if (i < 0 || i >= static_cast<std::int64_t>(names.size()))
    throw UsageError(fmt::format("the checkpoint '{}' holds an unknown {} id {}", path, what, i));
  return names[static_cast<std::size_t>(i)];
}

/// On --resume: makes the checkpoint's configuration that of `o` (explicit options must agree;
/// an explicit --lr wins, with a note on `out`) and checks that --text is the text it was trained
/// on. Throws UsageError.
void adopt_configuration(TrainOptions& o, const Meta& saved, const Corpus& corpus, std::ostream& out) {
  const std::string& path = o.checkpoint;
  const std::string& model = name_at(text_model_names(), saved.model, "model", path);
  const std::string& optimizer = name_at(optimizer_names(), saved.optimizer, "optimizer", path);
  const std::string& precision = name_at(precisions(), saved.precision, "precision", path);
  const auto seed = static_cast<std::uint64_t>(saved.seed.value().item<std::int64_t>());
  const auto batch_size = saved.batch_size.value().item<std::int64_t>();
  const auto sequence_length = saved.sequence_length.value().item<std::int64_t>();
  const auto limit = saved.limit.value().item<std::int64_t>();
  const auto lr_decay = saved.lr_decay.value().item<double>();
  require_same(o.model_given, "model", o.model, model, path);
  require_same(o.optimizer_given, "optimizer", o.optimizer, optimizer, path);
  require_same(o.precision_given, "precision", o.precision, precision, path);
  require_same(o.seed_given, "seed", o.seed, seed, path);
  require_same(o.batch_size_given, "batch-size", o.batch_size, batch_size, path);
  require_same(o.sequence_length_given, "sequence-length", o.sequence_length, sequence_length, path);
  require_same(o.limit_given, "limit", o.limit, limit, path);
  require_same(o.lr_decay_given, "lr-decay", o.lr_decay, lr_decay, path);
  const auto characters = saved.characters.value().item<std::int64_t>();
  if (characters != static_cast<std::int64_t>(corpus.ids.size()) ||
      saved.vocabulary.value().to_vector<std::int32_t>() != corpus.vocabulary)
    throw UsageError(fmt::format(
        "cannot resume from '{}': it was trained on a text of {} characters ({} distinct), and --text gives "
        "{} ({} distinct); pass the files it was trained on",
        path, characters, saved.vocabulary.shape().num_elements(), corpus.ids.size(),
        corpus.vocabulary.size()));
  o.model = model;
  o.optimizer = optimizer;
  o.precision = precision;
  o.seed = seed;
  o.batch_size = batch_size;
  o.sequence_length = sequence_length;
  o.limit = limit;
  o.lr_decay = lr_decay;
  adopt_learning_rate(o, saved.learning_rate.value().item<double>(), out);
  if (o.batch_size < 1 || o.sequence_length < 1 || o.limit < 0 || !(o.learning_rate > 0) ||
      !std::isfinite(o.learning_rate) || !(o.lr_decay > 0 && o.lr_decay <= 1) ||
      saved.epoch.value().item<std::int64_t>() < 0)
    throw UsageError(fmt::format(
        "cannot resume from '{}': its batch size, sequence length, limit, learning rate, decay or epoch is "
        "invalid",
        path));
}

/// Stops fit() after the current step once the Ctrl-C handler has asked for a stop, unless that
/// step ends the epoch (which then ends as usual and is saved).
class StopOnRequest : public callbacks::Callback {
 public:
  StopOnRequest(const TrainOptions& o, std::int64_t steps_per_epoch) : o_(o), steps_(steps_per_epoch) {}
  std::string name() const override { return "StopOnRequest"; }
  void on_train_batch_end(std::int64_t step, layers::Logs&) override {
    if (step + 1 < steps_ && stop_requested(o_)) model().set_stop_training(true);
  }

 private:
  const TrainOptions& o_;
  std::int64_t steps_;
};

/// What Interrupted says after epochs_done full epochs.
std::string interrupted_message(const TrainOptions& o, std::int64_t epochs_done) {
  const std::string where = fmt::format("interrupted during epoch {}/{}", epochs_done + 1, o.epochs);
  if (o.checkpoint.empty())
    return where + "; nothing was saved (pass --checkpoint PATH to be able to resume an interrupted run)";
  if (epochs_done == 0) return where + "; no epoch had ended, so nothing was saved";
  std::string resume =
      fmt::format("tapeflow train --resume --checkpoint {} --epochs {}", o.checkpoint, o.epochs);
  if (o.text != default_text_files())
    for (const std::string& file : o.text) resume += " --text " + file;
  return fmt::format("{}; the checkpoint '{}' holds epoch {}. To resume:\n  {}", where, o.checkpoint,
                     epochs_done, resume);
}

}  // namespace

const std::vector<std::string>& default_text_files() {
  static const std::vector<std::string> files = {"/usr/share/games/fortunes/fortunes",
                                                 "/usr/share/games/fortunes/literature",
                                                 "/usr/share/games/fortunes/riddles"};
  return files;
}

Corpus read_corpus(const std::vector<std::string>& paths) {
  std::vector<std::int32_t> text;
  for (const std::string& path : paths) {
    try {
      for (const data::Element& line : data::Dataset::text_line_dataset(path)) {
        const auto code_points = line[0].values<std::int32_t>();
        text.insert(text.end(), code_points.begin(), code_points.end());
        text.push_back('\n');
      }
    } catch (const Error& e) {
      throw UsageError(fmt::format("--text '{}': {}", path, e.what()));
    }
  }
  Corpus c;
  c.vocabulary = text;
  std::sort(c.vocabulary.begin(), c.vocabulary.end());
  c.vocabulary.erase(std::unique(c.vocabulary.begin(), c.vocabulary.end()), c.vocabulary.end());
  c.ids.reserve(text.size());
  for (const std::int32_t ch : text)
    c.ids.push_back(static_cast<std::int32_t>(std::lower_bound(c.vocabulary.begin(), c.vocabulary.end(), ch) -
                                              c.vocabulary.begin()));
  return c;
}

TextData make_windows(const Corpus& c, std::int64_t length, std::int64_t limit, const std::string& where) {
  const auto characters = static_cast<std::int64_t>(c.ids.size());
  const std::int64_t windows = characters > 0 ? (characters - 1) / length : 0;
  if (windows < 2)
    throw UsageError(fmt::format(
        "{} holds {} characters: too few for two windows of --sequence-length {} + 1 (one to train on, "
        "one to validate on)",
        where, characters, length));
  const std::int64_t validation = std::max<std::int64_t>(1, windows / kValidationShare);
  std::int64_t train = windows - validation;
  const Tensor ids = constant(c.ids, Shape({characters}));
  const Tensor x = reshape(slice(ids, {0}, {windows * length}), {windows, length});
  const Tensor y = reshape(slice(ids, {1}, {windows * length}), {windows, length});
  TextData d;
  d.validation_x = slice(x, {train, 0}, {validation, length});
  d.validation_y = slice(y, {train, 0}, {validation, length});
  if (limit > 0) train = std::min(train, limit);
  d.train_x = slice(x, {0, 0}, {train, length});
  d.train_y = slice(y, {0, 0}, {train, length});
  return d;
}

std::optional<std::string> text_checkpoint_model(const std::string& path) {
  try {
    return read_text_model_config(path).model;
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

TextModelConfig read_text_model_config(const std::string& path) {
  const Meta meta = read_meta(path);
  TextModelConfig c;
  c.model = name_at(text_model_names(), meta.model, "model", path);
  c.precision = name_at(precisions(), meta.precision, "precision", path);
  c.vocabulary = meta.vocabulary.value().to_vector<std::int32_t>();
  c.sequence_length = meta.sequence_length.value().item<std::int64_t>();
  c.seed = static_cast<std::uint64_t>(meta.seed.value().item<std::int64_t>());
  if (c.vocabulary.empty() || c.sequence_length < 1)
    throw UsageError(
        fmt::format("the checkpoint '{}' holds an empty vocabulary or a sequence length below 1", path));
  return c;
}

History train_text(const TrainOptions& options, std::ostream& out, std::ostream& log, bool log_is_terminal) {
  TrainOptions o = options;
  if (o.text.empty()) o.text = default_text_files();
  // The LSTM trains at 0.005 (validation perplexity 6.76 after 20 epochs on the fortunes, where
  // 0.001 left it at 31 after two); the transformer, without warm-up, at the default 0.001.
  if (!o.learning_rate_given && o.model == "char-lstm") o.learning_rate = kLstmLearningRate;
  const Corpus corpus = read_corpus(o.text);
  std::optional<Meta> saved;
  if (o.resume) {
    saved = read_meta(o.checkpoint);
    adopt_configuration(o, *saved, corpus, out);
  }
  // Under mpirun, Model::fit trains data-parallel: each rank takes its shard of every global
  // batch of ranks * batch_size windows, and the ranks on one machine share its cores.
  const int rank = distributed::rank(), ranks = distributed::size();
  if (o.threads > 0 || distributed::local_size() > 1)
    set_num_threads(o.threads > 0 ? o.threads : std::max(1, num_threads() / distributed::local_size()));
  const TextData d =
      make_windows(corpus, o.sequence_length, o.limit, o.text.size() == 1 ? "'" + o.text[0] + "'" : "--text");
  const auto vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
  const std::int64_t steps_per_epoch =
      data::BatchIterator(d.train_x, d.train_y,
                          {.batch_size = o.batch_size, .num_shards = ranks, .shard_index = rank})
          .num_batches();

  const std::shared_ptr<layers::Model> model =
      make_text_model(o.model, vocabulary, o.sequence_length, o.seed, o.precision);
  const std::shared_ptr<optimizers::Optimizer> optimizer = make_optimizer(o, steps_per_epoch, kAdamEpsilon);
  optimizer->build(model->trainable_variables());
  model->compile(optimizer, losses::Loss("sparse_categorical_crossentropy", {.from_logits = true}),
                 {.metrics = {"accuracy"}, .run_eagerly = o.eager});

  Meta meta;
  meta.vocabulary = Variable(constant(corpus.vocabulary), {.name = "text/vocabulary", .trainable = false});
  // The checkpoint's entries: the model's and the optimizer's variables, then meta's (whose
  // history variable is recreated as it grows).
  NamedVariables weights = checkpoint_variables(*model, "model/");
  for (auto& [name, var] : optimizer->variables()) weights.emplace_back("optimizer/" + name, var);
  const auto entries = [&] {
    NamedVariables all = weights;
    for (auto& e : meta.entries()) all.push_back(e);
    return all;
  };
  History history;
  std::int64_t start = 0;
  if (saved) {
    meta.history = saved->history;
    try {
      restore_checkpoint(o.checkpoint, entries());
    } catch (const Error& e) {
      throw UsageError(fmt::format("cannot resume from the checkpoint: {}", e.what()));
    }
    start = meta.epoch.value().item<std::int64_t>();
    history = history_from(meta.history.value());
  }

  std::int64_t parameters = 0;
  for (const Variable& v : model->trainable_variables()) parameters += v.shape().num_elements();
  out << fmt::format(
      "tapeflow train: {} ({} parameters), {} lr {:g}{}, batch {}, {} characters ({} distinct) in windows of "
      "{}: {} train / {} validation, {} thread{}, {}\n",
      o.model, parameters, o.optimizer, o.learning_rate,
      o.lr_decay == 1 ? "" : fmt::format(" x{:g} per epoch", o.lr_decay),
      ranks == 1 ? fmt::format("{}", o.batch_size)
                 : fmt::format("{} per rank ({} a step)", o.batch_size, o.batch_size * ranks),
      corpus.ids.size(), vocabulary, o.sequence_length, d.train_x.shape()[0], d.validation_x.shape()[0],
      o.threads > 0 ? o.threads : num_threads(), (o.threads > 0 ? o.threads : num_threads()) == 1 ? "" : "s",
      o.precision);
  if (ranks > 1)
    out << fmt::format("data-parallel over {} MPI ranks: gradients averaged by a DistributedGradientTape\n",
                       ranks);
  if (saved) out << fmt::format("resumed from {} after epoch {}\n", o.checkpoint, start);
  if (start >= o.epochs)
    out << fmt::format("nothing to do: the checkpoint has {} epoch{} done (--epochs {})\n", start,
                       start == 1 ? "" : "s", o.epochs);
  out << std::flush;

  const auto stopper = std::make_shared<StopOnRequest>(o, steps_per_epoch);
  for (std::int64_t epoch = start; epoch < o.epochs; ++epoch) {
    const auto clock_start = Clock::now();
    const layers::History h = model->fit(d.train_x, d.train_y,
                                         {.batch_size = o.batch_size,
                                          .epochs = epoch + 1,
                                          .verbose = log_is_terminal ? 1 : 2,
                                          .callbacks = {stopper},
                                          .validation_data = std::pair{d.validation_x, d.validation_y},
                                          .initial_epoch = epoch,
                                          .seed = o.seed,
                                          .out = &log});
    if (model->stop_training()) throw Interrupted(interrupted_message(o, epoch));
    const double seconds = std::chrono::duration<double>(Clock::now() - clock_start).count();
    const auto last = [&](const char* name) { return h.history.at(name).back(); };
    history.push_back(
        {epoch + 1, last("loss"), last("accuracy"), last("val_loss"), last("val_accuracy"), seconds});
    out << fmt::format(
        "epoch {}/{}: train loss {:.4f} acc {:.4f} | validation loss {:.4f} acc {:.4f} perplexity {:.2f} | "
        "{:.1f} s\n",
        epoch + 1, o.epochs, last("loss"), last("accuracy"), last("val_loss"), last("val_accuracy"),
        std::exp(last("val_loss")), seconds);
    out << std::flush;
    if (rank == 0 && !o.checkpoint.empty()) {
      meta.epoch.assign(constant<std::int64_t>(epoch + 1));
      meta.model.assign(constant<std::int64_t>(index_of(text_model_names(), o.model)));
      meta.optimizer.assign(constant<std::int64_t>(index_of(optimizer_names(), o.optimizer)));
      meta.seed.assign(constant(static_cast<std::int64_t>(o.seed)));
      meta.batch_size.assign(constant<std::int64_t>(o.batch_size));
      meta.sequence_length.assign(constant<std::int64_t>(o.sequence_length));
      meta.limit.assign(constant<std::int64_t>(o.limit));
      meta.learning_rate.assign(constant<double>(o.learning_rate));
      meta.lr_decay.assign(constant<double>(o.lr_decay));
      meta.precision.assign(constant<std::int64_t>(index_of(precisions(), o.precision)));
      meta.characters.assign(constant(static_cast<std::int64_t>(corpus.ids.size())));
      meta.history = Variable(history_tensor(history), {.name = "text/history", .trainable = false});
      save_checkpoint(o.checkpoint, entries());
    }
    if (rank == 0 && !o.plot.empty())
      write_training_plot(o.plot, history, fmt::format("tapeflow train --model {}: next character", o.model));
    // Every rank stops after the same epoch, whichever the signal reached first.
    bool stop = stop_requested(o);
    if (ranks > 1) stop = distributed::allreduce(stop ? 1.0 : 0.0, distributed::ReduceOp::Max, "stop") > 0;
    if (stop && epoch + 1 < o.epochs) throw Interrupted(interrupted_message(o, epoch + 1));
  }
  if (start < o.epochs && !o.checkpoint.empty())
    out << fmt::format("checkpoint: {} (tapeflow sample {} --prompt \"...\")\n", o.checkpoint, o.checkpoint);
  if (rank == 0 && (!o.export_path.empty() || !o.export_onnx_path.empty())) {
    // One sequence of sequence_length ids: the recurrence's initial state and the attention's
    // reshapes are traced for a batch size and a step count, so neither is left unknown.
    export_inference([&model](const Tensor& ids) { return model->call(ids, /*training=*/false); },
                     {{1, o.sequence_length}, DType::Int32, "ids"}, 1,
                     {.function_file = o.export_path, .onnx = o.export_onnx_path});
    if (!o.export_path.empty())
      out << fmt::format("exported the model's inference (int32 ids [1, {}] -> logits [1, {}, {}]) to {}\n",
                         o.sequence_length, o.sequence_length, vocabulary, o.export_path);
    if (!o.export_onnx_path.empty())
      out << fmt::format("exported the model's inference as ONNX to {}\n", o.export_onnx_path);
  }
  return history;
}

}  // namespace tapeflow::cli
