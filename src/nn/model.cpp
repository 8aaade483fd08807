#include "tapeflow/nn/model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "data/shards.h"
#include "nn/callback_dispatch.h"
#include "nn/compiled_metric.h"
#include "nn/progbar_logger.h"
#include "tapeflow/data.h"
#include "tapeflow/data/dataset.h"
#include "tapeflow/distributed.h"
#include "tapeflow/errors.h"
#include "tapeflow/function.h"
#include "tapeflow/nn/callbacks.h"
#include "tapeflow/nn/metrics.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"
#include "tapeflow/optim/optimizer.h"
#include "tapeflow/tape.h"

namespace tapeflow::layers {

void Logs::set(const std::string& name, double value) {
  for (auto& [key, v] : entries_)
    if (key == name) {
      v = value;
      return;
    }
  entries_.emplace_back(name, value);
}

std::optional<double> Logs::get(const std::string& name) const {
  for (const auto& [key, v] : entries_)
    if (key == name) return v;
  return std::nullopt;
}

double Logs::at(const std::string& name) const {
  if (auto v = get(name)) return *v;
  throw InvalidArgumentError(
      fmt::format("the logs have no '{}': they have [{}]", name, fmt::join(keys(), ", ")));
}

std::vector<std::string> Logs::keys() const {
  std::vector<std::string> names;
  for (const auto& [key, v] : entries_) names.push_back(key);
  return names;
}

namespace {

/// Rows [begin, begin + size) of `t` along its first axis.
Tensor rows(const Tensor& t, std::int64_t begin, std::int64_t size) {
  std::vector<std::int64_t> b(static_cast<std::size_t>(t.shape().rank()), 0);
  std::vector<std::int64_t> s(b.size(), -1);
  b[0] = begin;
  s[0] = size;
  return slice(t, b, s);
}

std::int64_t steps_for(std::int64_t n, std::int64_t batch_size) { return (n + batch_size - 1) / batch_size; }

void check_batch_size(const char* op, std::int64_t batch_size) {
  if (batch_size < 1)
    throw InvalidArgumentError(fmt::format("{}: batch_size must be at least 1, got {}", op, batch_size));
}

void check_verbose(const char* op, int verbose) {
  if (verbose < 0 || verbose > 2)
    throw InvalidArgumentError(fmt::format("{}: verbose must be 0, 1 or 2, got {}", op, verbose));
}

/// Checks x, y (and a per-example weight) for fit and evaluate: defined, rank >= 1, the same
/// number of examples, at least one.
void check_data(const char* op, const Tensor& x, const Tensor& y,
                const std::optional<Tensor>& sample_weight) {
  if (!x.defined() || !y.defined())
    throw InvalidArgumentError(fmt::format("{}: x and y must be defined tensors", op));
  if (x.shape().rank() == 0 || y.shape().rank() == 0)
    throw InvalidArgumentError(fmt::format("{}: x {} and y {} need a first (example) dimension", op,
                                           x.shape().to_string(), y.shape().to_string()));
  if (x.shape()[0] != y.shape()[0])
    throw InvalidArgumentError(fmt::format("{}: x {} and y {} have different numbers of examples", op,
                                           x.shape().to_string(), y.shape().to_string()));
  if (x.shape()[0] == 0)
    throw InvalidArgumentError(fmt::format("{}: x {} has no example", op, x.shape().to_string()));
  if (sample_weight && (!sample_weight->defined() || sample_weight->shape().rank() != 1 ||
                        sample_weight->shape()[0] != x.shape()[0]))
    throw InvalidArgumentError(fmt::format(
        "{}: sample_weight must have shape ({},), one weight per example, got {}", op, x.shape()[0],
        sample_weight->defined() ? sample_weight->shape().to_string() : "an undefined tensor"));
}

/// The per-example weights fit's class_weight gives labels `y` (class ids, or one-hot rows).
Tensor class_weights_of(const std::map<std::int64_t, double>& class_weight, const Tensor& y) {
  std::vector<float> table;
  std::vector<std::int64_t> keys;
  for (const auto& [cls, weight] : class_weight) {
    keys.push_back(cls);
    table.push_back(static_cast<float>(weight));
  }
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i] != static_cast<std::int64_t>(i))
      throw InvalidArgumentError(
          fmt::format("fit: class_weight must have the keys 0..{} (one per class), got [{}]", keys.size() - 1,
                      fmt::join(keys, ", ")));
  const auto& s = y.shape();
  const bool one_hot = s.rank() >= 2 && s[s.rank() - 1] > 1;
  const Tensor ids = one_hot ? argmax(y, -1) : cast(reshape(y, {s[0]}), DType::Int64);
  for (const std::int64_t id : ids.values<std::int64_t>())
    if (id < 0 || id >= static_cast<std::int64_t>(table.size()))
      throw InvalidArgumentError(
          fmt::format("fit: label {} has no class_weight (the keys are 0..{})", id, table.size() - 1));
  return gather(constant(table, Shape({static_cast<std::int64_t>(table.size())})), ids);
}

}  // namespace

/// One batch of a training or evaluation step.
struct TrainingBatch {
  Tensor x, y;
  std::optional<Tensor> sample_weight;
};

/// The training step: forward, loss and update; returns the loss and the predictions. In one
/// process the update is fused into the backward pass (minimize). Data-parallel, a
/// DistributedGradientTape (`reducer`'s) averages the ranks' gradients of their losses, each
/// scaled by `share`, the rank's rows * ranks / the global batch's rows: the average is then the
/// gradient of one mean over the global batch, also when the shards differ by an example.
struct TrainStep {
  Model* model;
  optimizers::Optimizer* optimizer;
  const losses::Loss* loss;
  std::vector<Variable> vars;
  distributed::GradientReducer* reducer = nullptr;  // data-parallel

  std::pair<Tensor, Tensor> run(const Tensor& x, const Tensor& y, const std::optional<Tensor>& w,
                                const std::optional<Tensor>& share) const {
    if (reducer == nullptr) {
      GradientTape tape;
      Tensor y_pred = model->call(x, /*training=*/true);
      Tensor value = (*loss)(y, y_pred, w);
      optimizer->minimize(value, vars, tape);
      return {value, y_pred};
    }
    distributed::DistributedGradientTape tape(*reducer);
    Tensor y_pred = model->call(x, /*training=*/true);
    Tensor value = (*loss)(y, y_pred, w);
    optimizer->apply_gradients(tape.gradient(value * *share, vars), vars);
    return {value, y_pred};
  }
};

/// The step as tf::function traces it: (x, y) or (x, y, sample_weight).
struct TrainBody : TrainStep {
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& y) const {
    return run(x, y, std::nullopt, std::nullopt);
  }
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& y, const Tensor& w) const {
    return run(x, y, w, std::nullopt);
  }
};

/// The data-parallel step as tf::function traces it: the same with the share last.
struct ParallelTrainBody : TrainStep {
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& y, const Tensor& share) const {
    return run(x, y, std::nullopt, share);
  }
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& y, const Tensor& w,
                                       const Tensor& share) const {
    return run(x, y, w, share);
  }
};

/// The evaluation step: the loss and the predictions in inference mode.
struct TestBody {
  Model* model;
  const losses::Loss* loss;

  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& y) const {
    Tensor y_pred = model->call(x, /*training=*/false);
    return {(*loss)(y, y_pred, std::nullopt), y_pred};
  }
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& y, const Tensor& w) const {
    Tensor y_pred = model->call(x, /*training=*/false);
    return {(*loss)(y, y_pred, w), y_pred};
  }
};

/// The prediction step.
struct PredictBody {
  Model* model;
  Tensor operator()(const Tensor& x) const { return model->call(x, /*training=*/false); }
};

struct Model::Compiled {
  Compiled(std::shared_ptr<optimizers::Optimizer> optimizer, losses::Loss loss,
           std::vector<CompiledMetric> metrics, bool run_eagerly)
      : optimizer(std::move(optimizer)),
        loss(std::move(loss)),
        metrics(std::move(metrics)),
        run_eagerly(run_eagerly) {}

  std::shared_ptr<optimizers::Optimizer> optimizer;
  losses::Loss loss;
  std::vector<CompiledMetric> metrics;
  bool run_eagerly;
  // The traced steps, made at their first use; the train step is remade when fit() finds other
  // trainable variables (a layer added or built since) or trains otherwise (data-parallel or not).
  std::optional<TrainStep> step;
  std::optional<Function<TrainBody>> train;
  std::optional<Function<ParallelTrainBody>> parallel_train;
  std::unique_ptr<distributed::GradientReducer> reducer;  // data-parallel: its buckets, kept
  std::optional<Function<TestBody>> test;
  std::optional<Function<PredictBody>> predict;
  metrics::Mean loss_mean{"loss"};

  /// Makes the training step of `model` for its trainable variables of now (data-parallel when
  /// `parallel`), unless the step made before is that one. Called once per fit(), after the
  /// model is built, so that no step walks the model's variables.
  void prepare_train_step(Model& model, bool parallel) {
    std::vector<Variable> vars = model.trainable_variables();
    const auto same = [](const Variable& a, const Variable& b) { return a.handle_id() == b.handle_id(); };
    if (step && (step->reducer != nullptr) == parallel && std::ranges::equal(step->vars, vars, same)) return;
    if (parallel && !reducer) reducer = std::make_unique<distributed::GradientReducer>();
    step = TrainStep{&model, optimizer.get(), &loss, std::move(vars), parallel ? reducer.get() : nullptr};
    train.reset();
    parallel_train.reset();
    if (run_eagerly) return;
    FunctionOptions options;
    options.name = model.name() + "_train_step";
    if (parallel)
      parallel_train.emplace(function(ParallelTrainBody{*step}, std::move(options)));
    else
      train.emplace(function(TrainBody{*step}, std::move(options)));
  }

  /// One training step on a batch (prepare_train_step made it); `share` data-parallel only.
  std::pair<Tensor, Tensor> train_step(const Tensor& x, const Tensor& y, const std::optional<Tensor>& w,
                                       const std::optional<Tensor>& share) {
    if (share) {
      if (!parallel_train) return step->run(x, y, w, share);
      return w ? (*parallel_train)(x, y, *w, *share) : (*parallel_train)(x, y, *share);
    }
    if (!train) return step->run(x, y, w, std::nullopt);
    return w ? (*train)(x, y, *w) : (*train)(x, y);
  }

  /// One evaluation step of `model` on a batch.
  std::pair<Tensor, Tensor> test_step(Model& model, const Tensor& x, const Tensor& y,
                                      const std::optional<Tensor>& w) {
    const TestBody body{&model, &loss};
    if (run_eagerly) return w ? body(x, y, *w) : body(x, y);
    if (!test) {
      FunctionOptions options;
      options.name = model.name() + "_test_step";
      test.emplace(function(body, std::move(options)));
    }
    return w ? (*test)(x, y, *w) : (*test)(x, y);
  }

  /// Starts an epoch's or an evaluation's accumulation.
  void reset_metrics() {
    loss_mean.reset_state();
    for (auto& m : metrics) m.reset();
  }

  /// Adds a batch of `rows` examples to the running loss and the metrics.
  void update_metrics(const Tensor& loss_value, const Tensor& y, const Tensor& y_pred,
                      const std::optional<Tensor>& w, std::int64_t rows) {
    NoRecordingScope unrecorded;
    loss_mean.update_state(loss_value, constant(static_cast<float>(rows)));
    for (auto& m : metrics) m.update(y, y_pred, w);
  }

  /// The logs of the accumulation so far, each name with `prefix` ("val_" for validation).
  Logs logs(const std::string& prefix = "") const {
    Logs l;
    l.set(prefix + "loss", loss_mean.result());
    for (const auto& m : metrics) l.set(prefix + m.name(), m.result());
    return l;
  }

  /// The same over what every rank accumulated: each mean's total and count summed over the
  /// ranks (one all-reduce), so that the logs are the whole data's on every rank.
  Logs global_logs() const {
    std::vector<double> state{loss_mean.total(), loss_mean.count()};
    for (const auto& m : metrics) {
      const auto [total, count] = m.state();
      state.push_back(total);
      state.push_back(count);
    }
    const std::vector<double> sums =
        distributed::allreduce(constant(state), distributed::ReduceOp::Sum, "fit: the logs")
            .to_vector<double>();
    const auto mean = [&](std::size_t i) { return sums[i + 1] == 0 ? 0.0 : sums[i] / sums[i + 1]; };
    Logs l;
    l.set("loss", mean(0));
    for (std::size_t i = 0; i < metrics.size(); ++i) l.set(metrics[i].name(), mean(2 * i + 2));
    return l;
  }

  /// The evaluation pass of evaluate() and of fit()'s validation over the batches `next` gives.
  Logs evaluate(Model& model, const std::function<std::optional<TrainingBatch>()>& next,
                CallbackDispatch& callbacks) {
    Logs logs;
    callbacks.each("on_test_begin", [&](callbacks::Callback& c) { c.on_test_begin(logs); });
    reset_metrics();
    for (std::int64_t step = 0;; ++step) {
      const std::optional<TrainingBatch> b = next();
      if (!b) break;
      Logs batch_logs;
      callbacks.each("on_test_batch_begin",
                     [&](callbacks::Callback& c) { c.on_test_batch_begin(step, batch_logs); });
      auto [loss_value, y_pred] = test_step(model, b->x, b->y, b->sample_weight);
      update_metrics(loss_value, b->y, y_pred, b->sample_weight, b->x.shape()[0]);
      batch_logs = this->logs();
      callbacks.each("on_test_batch_end",
                     [&](callbacks::Callback& c) { c.on_test_batch_end(step, batch_logs); });
    }
    logs = this->logs();
    callbacks.each("on_test_end", [&](callbacks::Callback& c) { c.on_test_end(logs); });
    return logs;
  }

  /// evaluate() over in-memory tensors, batch_size rows at a time.
  Logs evaluate(Model& model, const Tensor& x, const Tensor& y, const std::optional<Tensor>& w,
                std::int64_t batch_size, CallbackDispatch& callbacks) {
    const std::int64_t n = x.shape()[0];
    std::int64_t begin = 0;
    return evaluate(
        model,
        [&]() -> std::optional<TrainingBatch> {
          if (begin >= n) return std::nullopt;
          const std::int64_t size = std::min(batch_size, n - begin);
          TrainingBatch b{rows(x, begin, size), rows(y, begin, size),
                          w ? std::optional(rows(*w, begin, size)) : std::nullopt};
          begin += size;
          return b;
        },
        callbacks);
  }
};

Model::Model(std::string name, std::optional<mixed_precision::Policy> policy)
    : Layer(std::move(name), policy) {}

Model::~Model() = default;

void Model::compile(std::shared_ptr<optimizers::Optimizer> optimizer, losses::Loss loss,
                    CompileOptions options) {
  if (!optimizer) throw InvalidArgumentError(fmt::format("compile of '{}': the optimizer is null", name()));
  std::vector<CompiledMetric> metrics;
  for (const auto& m : options.metrics) metrics.emplace_back(m);
  compiled_ = std::make_unique<Compiled>(std::move(optimizer), std::move(loss), std::move(metrics),
                                         options.run_eagerly);
}

Model::Compiled& Model::compiled_state(const char* caller) const {
  if (!compiled_)
    throw FailedPreconditionError(
        fmt::format("{} of '{}': you must compile your model before training/testing. Use "
                    "`model.compile(optimizer, loss)`.",
                    caller, name()));
  return *compiled_;
}

optimizers::Optimizer& Model::optimizer() const { return *compiled_state("optimizer").optimizer; }
const losses::Loss& Model::loss() const { return compiled_state("loss").loss; }

std::vector<std::string> Model::metrics_names() const {
  std::vector<std::string> names{"loss"};
  for (const auto& m : compiled_state("metrics_names").metrics) names.push_back(m.name());
  return names;
}

/// Where fit's training batches come from, epoch by epoch.
class detail::BatchFeed {
 public:
  virtual ~BatchFeed() = default;
  /// Batches per epoch; 0 when only the end of the data says.
  virtual std::int64_t steps() const = 0;
  /// One example, to build the model on before the step is traced.
  virtual Tensor first_example() = 0;
  virtual void start_epoch(std::int64_t epoch) = 0;
  /// The epoch's next batch, or std::nullopt at its end.
  virtual std::optional<TrainingBatch> next() = 0;
};

namespace {

/// fit's batches of in-memory tensors: batch_size rows at a time, in the epoch's shuffled order;
/// data-parallel, this rank's shard of each global batch of ranks * batch_size rows.
class TensorFeed : public detail::BatchFeed {
 public:
  TensorFeed(Tensor x, Tensor y, std::optional<Tensor> w, std::int64_t batch_size, bool shuffle,
             std::uint64_t seed, int ranks, int rank)
      : x_(std::move(x)),
        y_(std::move(y)),
        w_(std::move(w)),
        batch_size_(batch_size),
        shuffle_(shuffle),
        seed_(seed),
        n_(x_.shape()[0]),
        ranks_(ranks),
        rank_(rank) {}

  std::int64_t steps() const override { return data::global_batches(n_, ranks_, batch_size_); }
  Tensor first_example() override { return rows(x_, 0, 1); }
  void start_epoch(std::int64_t epoch) override {
    begin_ = 0;
    if (shuffle_) order_ = data::shuffled_indices(n_, seed_, epoch);
  }
  std::optional<TrainingBatch> next() override {
    // A last global batch with fewer examples than ranks is dropped: every rank needs one.
    const std::int64_t global = std::min(batch_size_ * ranks_, n_ - begin_);
    if (global <= 0 || global < ranks_) return std::nullopt;
    const auto [first, size] = data::shard_of(global, ranks_, rank_);
    const std::int64_t at = begin_ + first;
    TrainingBatch b;
    if (shuffle_) {
      const auto from = order_.begin() + at;
      const Tensor idx = constant(std::vector<std::int64_t>(from, from + size), Shape({size}));
      b = {gather(x_, idx), gather(y_, idx), w_ ? std::optional(gather(*w_, idx)) : std::nullopt};
    } else {
      b = {rows(x_, at, size), rows(y_, at, size), w_ ? std::optional(rows(*w_, at, size)) : std::nullopt};
    }
    begin_ += global;
    return b;
  }

 private:
  Tensor x_, y_;
  std::optional<Tensor> w_;
  std::int64_t batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  std::int64_t n_, begin_ = 0;
  int ranks_, rank_;
  std::vector<std::int64_t> order_;
};

/// The batch a dataset element is: (x, y) or (x, y, sample_weight), as Keras takes them.
TrainingBatch batch_of(data::Element e, const char* op) {
  if (e.size() != 2 && e.size() != 3)
    throw InvalidArgumentError(fmt::format(
        "{}: a dataset element must be (x, y) or (x, y, sample_weight), got {} components", op, e.size()));
  check_data(op, e[0], e[1], e.size() == 3 ? std::optional(e[2]) : std::nullopt);
  return {e[0], e[1], e.size() == 3 ? std::optional(e[2]) : std::nullopt};
}

/// fit's batches from a dataset of batches: each epoch a new iteration (a new shuffle), or with
/// steps_per_epoch that many batches of one iteration that goes on across epochs (Keras's rule
/// for a dataset that repeats).
class DatasetFeed : public detail::BatchFeed {
 public:
  DatasetFeed(const data::Dataset& dataset, std::int64_t steps_per_epoch)
      : dataset_(dataset), steps_per_epoch_(steps_per_epoch) {
    const std::int64_t cardinality = dataset.cardinality();
    if (cardinality == data::kInfiniteCardinality && steps_per_epoch == 0)
      throw InvalidArgumentError(
          "fit: the dataset repeats without end; give steps_per_epoch, the batches that make an epoch");
    if (cardinality == 0) throw InvalidArgumentError("fit: the dataset is empty");
    steps_ = steps_per_epoch > 0 ? steps_per_epoch : std::max<std::int64_t>(cardinality, 0);
  }

  std::int64_t steps() const override { return steps_; }
  Tensor first_example() override {
    auto e = dataset_.make_iterator().next();
    if (!e) throw InvalidArgumentError("fit: the dataset is empty");
    const Tensor x = batch_of(std::move(*e), "fit").x;
    return rows(x, 0, 1);
  }
  void start_epoch(std::int64_t /*epoch*/) override {
    taken_ = 0;
    if (steps_per_epoch_ == 0 || !iterator_) iterator_.emplace(dataset_.make_iterator());
  }
  std::optional<TrainingBatch> next() override {
    if (steps_per_epoch_ > 0 && taken_ == steps_per_epoch_) return std::nullopt;
    auto e = iterator_->next();
    if (!e) {
      if (steps_per_epoch_ > 0 && taken_ == 0)
        throw InvalidArgumentError("fit: the dataset ran out of batches before the epoch's first step");
      return std::nullopt;
    }
    ++taken_;
    return batch_of(std::move(*e), "fit");
  }

 private:
  data::Dataset dataset_;
  std::int64_t steps_per_epoch_, steps_ = 0, taken_ = 0;
  std::optional<data::Iterator> iterator_;
};

/// The ranks fit() trains over: the job's, in a job of several ranks and with data_parallel.
int ranks_of(const FitOptions& o) {
  return o.data_parallel && distributed::initialized() && distributed::size() > 1 ? distributed::size() : 1;
}

/// Whether any rank says `yes` (an all-reduce: every rank must call it).
bool any_rank(bool yes, std::string_view what) {
  return distributed::allreduce(yes ? 1.0 : 0.0, distributed::ReduceOp::Max, what) > 0;
}

/// Where a rank other than 0 prints in a data-parallel fit: nowhere.
std::ostream& nowhere() {
  static std::ostream null_stream(nullptr);
  return null_stream;
}

void check_fit_options(const FitOptions& o) {
  check_batch_size("fit", o.batch_size);
  check_verbose("fit", o.verbose);
  if (o.initial_epoch < 0 || o.epochs < 0 || o.steps_per_epoch < 0)
    throw InvalidArgumentError(
        fmt::format("fit: epochs ({}), initial_epoch ({}) and steps_per_epoch ({}) must not be negative",
                    o.epochs, o.initial_epoch, o.steps_per_epoch));
  if (!(o.validation_split >= 0 && o.validation_split < 1))
    throw InvalidArgumentError(
        fmt::format("fit: validation_split must be in [0, 1), got {}", o.validation_split));
  if (o.validation_split > 0 && o.validation_data)
    throw InvalidArgumentError("fit: give validation_split or validation_data, not both");
  if (!o.class_weight.empty() && o.sample_weight)
    throw InvalidArgumentError("fit: give class_weight or sample_weight, not both");
  if (o.validation_data)
    check_data("fit (validation_data)", o.validation_data->first, o.validation_data->second, std::nullopt);
}

}  // namespace

History Model::fit(const Tensor& x_all, const Tensor& y_all, const FitOptions& o) {
  compiled_state("fit");
  check_data("fit", x_all, y_all, o.sample_weight);
  check_fit_options(o);
  if (o.steps_per_epoch > 0)
    throw InvalidArgumentError(
        "fit: steps_per_epoch is for datasets; tensors make ceil(n / batch_size) steps");

  // The weights, then the held-out last examples (Keras splits before shuffling).
  std::optional<Tensor> w_all = o.sample_weight;
  if (!o.class_weight.empty()) w_all = class_weights_of(o.class_weight, y_all);
  const std::int64_t n_all = x_all.shape()[0];
  Tensor x = x_all, y = y_all;
  std::optional<Tensor> w = w_all;
  std::optional<std::pair<Tensor, Tensor>> validation = o.validation_data;
  if (o.validation_split > 0) {
    const auto n_train =
        static_cast<std::int64_t>(std::floor(static_cast<double>(n_all) * (1 - o.validation_split)));
    if (n_train == 0 || n_train == n_all)
      throw InvalidArgumentError(
          fmt::format("fit: validation_split {} of {} examples leaves {} for training and {} for validation; "
                      "both need at least one",
                      o.validation_split, n_all, n_train, n_all - n_train));
    x = rows(x_all, 0, n_train);
    y = rows(y_all, 0, n_train);
    if (w_all) w = rows(*w_all, 0, n_train);
    validation.emplace(rows(x_all, n_train, n_all - n_train), rows(y_all, n_train, n_all - n_train));
  }
  const int ranks = ranks_of(o);
  TensorFeed feed(x, y, w, o.batch_size, o.shuffle, o.seed, ranks, ranks > 1 ? distributed::rank() : 0);
  return train(feed, validation, o, ranks);
}

History Model::fit(const data::Dataset& dataset, const FitOptions& o) {
  compiled_state("fit");
  check_fit_options(o);
  if (o.validation_split > 0 || o.sample_weight || !o.class_weight.empty())
    throw InvalidArgumentError(
        "fit: validation_split, sample_weight and class_weight are for tensors; a dataset gives its "
        "batches (x, y) or (x, y, sample_weight) as they are (validation_data is taken)");
  DatasetFeed feed(dataset, o.steps_per_epoch);
  return train(feed, o.validation_data, o, ranks_of(o));
}

History Model::train(detail::BatchFeed& feed, const std::optional<std::pair<Tensor, Tensor>>& validation,
                     const FitOptions& o, int ranks) {
  Compiled& c = *compiled_;
  const bool parallel = ranks > 1;
  const int rank = parallel ? distributed::rank() : 0;
  // The model's variables exist before the step is traced: build it on one example, unrecorded.
  if (variables().empty()) {
    NoRecordingScope unrecorded;
    call(feed.first_example(), /*training=*/false);
  }
  c.prepare_train_step(*this, parallel);
  if (parallel) {
    // Every rank starts from rank 0's weights and optimizer state (Horovod's broadcast).
    distributed::broadcast_variables(variables(), 0);
    distributed::broadcast_optimizer_state(*c.optimizer, 0);
  }

  CallbackList list;
  for (const auto& cb : o.callbacks)
    if (rank == 0 || !cb->rank_zero_only()) list.push_back(cb);
  std::shared_ptr<ProgbarLogger> progbar;
  if (o.verbose > 0 && rank == 0) list.push_back(progbar = std::make_shared<ProgbarLogger>());
  CallbackDispatch callbacks(*this, list,
                             {.epochs = o.epochs,
                              .steps = feed.steps(),
                              .verbose = rank == 0 ? o.verbose : 0,
                              .out = rank == 0 ? o.out : &nowhere()});
  stop_training_ = false;
  History history;
  Logs logs;
  callbacks.each("on_train_begin", [&](callbacks::Callback& cb) { cb.on_train_begin(logs); });
  for (std::int64_t epoch = o.initial_epoch; epoch < o.epochs && !stop_training_; ++epoch) {
    Logs epoch_logs;
    callbacks.each("on_epoch_begin", [&](callbacks::Callback& cb) { cb.on_epoch_begin(epoch, epoch_logs); });
    c.reset_metrics();
    feed.start_epoch(epoch);
    for (std::int64_t step = 0;; ++step) {
      std::optional<TrainingBatch> b;
      if (!stop_training_) b = feed.next();
      std::optional<Tensor> share;
      if (parallel) {
        // Every rank takes this step or none does: a rank whose data has ended, or whose callback
        // asked to stop, ends the epoch everywhere. The sum of the rows is the global batch's.
        const std::int64_t rows = b ? b->x.shape()[0] : 0;
        const std::vector<double> sums =
            distributed::allreduce(constant(std::vector<double>{stop_training_ ? 1.0 : 0.0, b ? 0.0 : 1.0,
                                                                static_cast<double>(rows)}),
                                   distributed::ReduceOp::Sum, "fit: the step's batches")
                .to_vector<double>();
        stop_training_ = sums[0] > 0;
        if (stop_training_ || sums[1] > 0) break;
        share = constant(static_cast<float>(static_cast<double>(rows) * ranks / sums[2]));
      } else if (!b) {
        break;
      }
      Logs batch_logs;
      callbacks.each("on_train_batch_begin",
                     [&](callbacks::Callback& cb) { cb.on_train_batch_begin(step, batch_logs); });
      auto [loss_value, y_pred] = c.train_step(b->x, b->y, b->sample_weight, share);
      c.update_metrics(loss_value, b->y, y_pred, b->sample_weight, b->x.shape()[0]);
      batch_logs = c.logs();
      callbacks.each("on_train_batch_end",
                     [&](callbacks::Callback& cb) { cb.on_train_batch_end(step, batch_logs); });
    }
    epoch_logs = parallel ? c.global_logs() : c.logs();
    if (validation) {
      // Data-parallel, each rank evaluates its share of the examples, and the logs add them up.
      Tensor xv = validation->first, yv = validation->second;
      if (parallel) {
        const auto [first, count] = data::shard_of(xv.shape()[0], ranks, rank);
        xv = rows(xv, first, count);
        yv = rows(yv, first, count);
      }
      if (progbar) progbar->set_in_fit(true);
      const Logs local = c.evaluate(*this, xv, yv, std::nullopt, o.batch_size, callbacks);
      if (progbar) progbar->set_in_fit(false);
      const Logs val = parallel ? c.global_logs() : local;
      for (const auto& [name, value] : val.entries()) epoch_logs.set("val_" + name, value);
    }
    callbacks.each("on_epoch_end", [&](callbacks::Callback& cb) { cb.on_epoch_end(epoch, epoch_logs); });
    if (parallel) stop_training_ = any_rank(stop_training_, "fit: stop training");
    history.epoch.push_back(epoch);
    for (const auto& [name, value] : epoch_logs.entries()) history.history[name].push_back(value);
    logs = epoch_logs;
  }
  callbacks.each("on_train_end", [&](callbacks::Callback& cb) { cb.on_train_end(logs); });
  return history;
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& o) {
  Compiled& c = compiled_state("evaluate");
  check_data("evaluate", x, y, o.sample_weight);
  check_batch_size("evaluate", o.batch_size);
  check_verbose("evaluate", o.verbose);
  CallbackList list = o.callbacks;
  if (o.verbose > 0) list.push_back(std::make_shared<ProgbarLogger>());
  CallbackDispatch callbacks(
      *this, list,
      {.epochs = 1, .steps = steps_for(x.shape()[0], o.batch_size), .verbose = o.verbose, .out = o.out});
  return c.evaluate(*this, x, y, o.sample_weight, o.batch_size, callbacks);
}

Logs Model::evaluate(const data::Dataset& dataset, const EvaluateOptions& o) {
  Compiled& c = compiled_state("evaluate");
  check_verbose("evaluate", o.verbose);
  if (o.sample_weight)
    throw InvalidArgumentError(
        "evaluate: sample_weight is for tensors; a dataset gives (x, y, sample_weight)");
  const std::int64_t cardinality = dataset.cardinality();
  if (cardinality == data::kInfiniteCardinality)
    throw InvalidArgumentError("evaluate: the dataset repeats without end");
  CallbackList list = o.callbacks;
  if (o.verbose > 0) list.push_back(std::make_shared<ProgbarLogger>());
  CallbackDispatch callbacks(
      *this, list,
      {.epochs = 1, .steps = std::max<std::int64_t>(cardinality, 0), .verbose = o.verbose, .out = o.out});
  data::Iterator it = dataset.make_iterator();
  return c.evaluate(
      *this,
      [&]() -> std::optional<TrainingBatch> {
        auto e = it.next();
        if (!e) return std::nullopt;
        return batch_of(std::move(*e), "evaluate");
      },
      callbacks);
}

Tensor Model::predict(const Tensor& x, const PredictOptions& o) {
  if (!x.defined() || x.shape().rank() == 0 || x.shape()[0] == 0)
    throw InvalidArgumentError(fmt::format("predict of '{}': x needs at least one example, got {}", name(),
                                           x.defined() ? x.shape().to_string() : "an undefined tensor"));
  check_batch_size("predict", o.batch_size);
  check_verbose("predict", o.verbose);
  const std::int64_t n = x.shape()[0];
  CallbackList list = o.callbacks;
  if (o.verbose > 0) list.push_back(std::make_shared<ProgbarLogger>());
  CallbackDispatch callbacks(
      *this, list, {.epochs = 1, .steps = steps_for(n, o.batch_size), .verbose = o.verbose, .out = o.out});
  const bool traced = compiled_ && !compiled_->run_eagerly;
  if (traced && !compiled_->predict) {
    FunctionOptions options;
    options.name = name() + "_predict_step";
    compiled_->predict.emplace(function(PredictBody{this}, std::move(options)));
  }
  Logs logs;
  callbacks.each("on_predict_begin", [&](callbacks::Callback& c) { c.on_predict_begin(logs); });
  std::vector<Tensor> outputs;
  for (std::int64_t step = 0, begin = 0; begin < n; ++step, begin += o.batch_size) {
    Logs batch_logs;
    callbacks.each("on_predict_batch_begin",
                   [&](callbacks::Callback& c) { c.on_predict_batch_begin(step, batch_logs); });
    const Tensor xb = rows(x, begin, std::min(o.batch_size, n - begin));
    NoRecordingScope unrecorded;
    outputs.push_back(traced ? (*compiled_->predict)(xb) : call(xb, /*training=*/false));
    callbacks.each("on_predict_batch_end",
                   [&](callbacks::Callback& c) { c.on_predict_batch_end(step, batch_logs); });
  }
  callbacks.each("on_predict_end", [&](callbacks::Callback& c) { c.on_predict_end(logs); });
  return outputs.size() == 1 ? outputs[0] : concat(outputs, 0);
}

}  // namespace tapeflow::layers
