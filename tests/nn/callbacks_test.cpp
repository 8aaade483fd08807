// callbacks: Keras's built-in callbacks follow Keras 3's rules (checked on scripted logs, epoch by
// epoch), write their files, and a callback's error reaches fit()'s caller as its own type,
// named.

#include "tapeflow/nn/callbacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using tf::layers::Logs;

namespace {

std::shared_ptr<tf::layers::Sequential> compiled_model(double learning_rate = 0.1) {
  auto model = tf::layers::sequential({tf::layers::dense(2, {.seed = 3})});
  model->compile(std::make_shared<tf::optimizers::SGD>(learning_rate),
                 tf::losses::Loss("sparse_categorical_crossentropy", {.from_logits = true}),
                 {.metrics = {"accuracy"}});
  (*model)(tf::zeros({1, 3}));  // builds the variables
  return model;
}

Logs logs_of(const std::string& name, double value) {
  Logs logs;
  logs.set(name, value);
  return logs;
}

/// Runs `callback` through the epochs of `values` (the monitored log per epoch) as fit() would;
/// returns the epoch after which the model was told to stop, or -1.
std::int64_t run_epochs(tf::callbacks::Callback& callback, tf::layers::Model& model,
                        const std::string& monitor, const std::vector<double>& values) {
  callback.set_model(&model);
  model.set_stop_training(false);
  Logs none;
  callback.on_train_begin(none);
  for (std::size_t e = 0; e < values.size(); ++e) {
    Logs logs = logs_of(monitor, values[e]);
    callback.on_epoch_end(static_cast<std::int64_t>(e), logs);
    if (model.stop_training()) return static_cast<std::int64_t>(e);
  }
  return -1;
}

struct EarlyStoppingCase {
  const char* name;
  const char* monitor;
  std::int64_t patience;
  double min_delta;
  std::optional<double> baseline;
  std::int64_t start_from_epoch;
  std::vector<double> values;  // the monitored log at each epoch's end
  std::int64_t stopped;        // the epoch after which training stops, -1: never
};

class EarlyStoppingRule : public ::testing::TestWithParam<EarlyStoppingCase> {};

TEST_P(EarlyStoppingRule, StopsWhereKerasStops) {
  const auto& c = GetParam();
  auto model = compiled_model();
  tf::callbacks::EarlyStopping callback({.monitor = c.monitor,
                                         .min_delta = c.min_delta,
                                         .patience = c.patience,
                                         .baseline = c.baseline,
                                         .start_from_epoch = c.start_from_epoch});
  EXPECT_EQ(run_epochs(callback, *model, c.monitor, c.values), c.stopped);
}

const std::vector<EarlyStoppingCase> kEarlyStoppingCases = {
    // patience 0: the first epoch without improvement stops (never epoch 0).
    {"patience_0", "loss", 0, 0, std::nullopt, 0, {1.0, 0.9, 0.95, 0.5}, 2},
    // patience 2: two epochs in a row without improvement.
    {"patience_2", "loss", 2, 0, std::nullopt, 0, {1.0, 1.1, 0.9, 0.95, 0.96, 0.1}, 4},
    // min_delta 0.1: 0.85 improves on 1.0 by more than that, 0.84 on 0.85 does not.
    {"min_delta", "loss", 1, 0.1, std::nullopt, 0, {1.0, 0.85, 0.84}, 2},
    // "accuracy": larger is better in auto mode.
    {"accuracy_is_max", "accuracy", 1, 0, std::nullopt, 0, {0.5, 0.6, 0.7, 0.65, 0.64}, 3},
    // A baseline not beaten: improvements do not restart the wait (without one: epoch 3).
    {"baseline", "loss", 2, 0, 0.5, 0, {1.0, 0.9, 0.9, 0.9}, 2},
    {"no_baseline", "loss", 2, 0, std::nullopt, 0, {1.0, 0.9, 0.9, 0.9}, 3},
    // start_from_epoch: the first two epochs are not watched.
    {"warm_up", "loss", 0, 0, std::nullopt, 2, {1.0, 2.0, 3.0, 4.0}, 3},
    {"improving", "loss", 0, 0, std::nullopt, 0, {3.0, 2.0, 1.0}, -1}};

INSTANTIATE_TEST_SUITE_P(Callbacks, EarlyStoppingRule, ::testing::ValuesIn(kEarlyStoppingCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Callbacks, EarlyStoppingRestoresTheBestEpochsWeights) {
  auto model = compiled_model();
  tf::callbacks::EarlyStopping callback({.monitor = "loss", .patience = 5, .restore_best_weights = true});
  callback.set_model(model.get());
  Logs none;
  callback.on_train_begin(none);
  const std::vector<double> losses = {1.0, 0.5, 0.7};
  std::vector<tf::Tensor> weights_at_best;
  for (std::size_t e = 0; e < losses.size(); ++e) {
    model->set_weights({tf::fill({3, 2}, static_cast<float>(e)), tf::fill({2}, static_cast<float>(e))});
    if (e == 1) weights_at_best = model->get_weights();
    Logs logs = logs_of("loss", losses[e]);
    callback.on_epoch_end(static_cast<std::int64_t>(e), logs);
  }
  callback.on_train_end(none);
  EXPECT_EQ(callback.best_epoch(), 1);
  EXPECT_EQ(model->get_weights()[0].to_vector<float>(), weights_at_best[0].to_vector<float>());
}

TEST(Callbacks, ReduceLROnPlateauFollowsPatienceCooldownAndMinimum) {
  auto model = compiled_model(1.0);
  tf::callbacks::ReduceLROnPlateau callback(
      {.monitor = "val_loss", .factor = 0.5, .patience = 1, .cooldown = 1, .min_lr = 0.2});
  callback.set_model(model.get());
  Logs none;
  callback.on_train_begin(none);
  // epoch: 0 best; 1 no gain -> 0.5, cooldown; 2 cooldown; 3 no gain -> 0.25; 4 cooldown; 5 -> 0.2 (min).
  const std::vector<double> val_loss = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  const std::vector<double> expected_rate = {1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2};
  for (std::size_t e = 0; e < val_loss.size(); ++e) {
    Logs logs = logs_of("val_loss", val_loss[e]);
    callback.on_epoch_end(static_cast<std::int64_t>(e), logs);
    EXPECT_DOUBLE_EQ(model->optimizer().learning_rate(), expected_rate[e]) << "after epoch " << e;
    EXPECT_TRUE(logs.get("learning_rate"));  // the rate the epoch ran with
  }
  EXPECT_THROW(tf::callbacks::ReduceLROnPlateau({.factor = 1.0}), tf::InvalidArgumentError);
}

TEST(Callbacks, ModelCheckpointSavesTheBestEpochUnderAFormattedName) {
  tf::testing::TempDir dir;
  auto model = compiled_model();
  tf::callbacks::ModelCheckpoint callback(dir / "ckpt-{epoch:02d}.tf",
                                          {.monitor = "val_loss", .save_best_only = true});
  callback.set_model(model.get());
  const std::vector<double> val_loss = {0.9, 0.95, 0.4};
  for (std::size_t e = 0; e < val_loss.size(); ++e) {
    Logs logs = logs_of("val_loss", val_loss[e]);
    callback.on_epoch_end(static_cast<std::int64_t>(e), logs);
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt-01.tf"));
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt-02.tf"));  // not an improvement
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt-03.tf"));
  EXPECT_EQ(callback.best(), 0.4);
  // The file holds the model's variables and the optimizer's state.
  const auto entries = tf::list_checkpoint(dir / "ckpt-03.tf");
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.front().name.rfind("model/", 0), 0u);
  EXPECT_EQ(entries.back().name.rfind("optimizer/", 0), 0u);
  tf::callbacks::ModelCheckpoint bad(dir / "{nope}.tf");
  bad.set_model(model.get());
  Logs logs = logs_of("val_loss", 1);
  EXPECT_THAT([&] { bad.on_epoch_end(0, logs); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("cannot format the path")));
}

TEST(Callbacks, CSVLoggerWritesARowPerEpochAndAppends) {
  tf::testing::TempDir dir;
  auto model = compiled_model();
  const tf::Tensor x = tf::zeros({4, 3});
  const tf::Tensor y = tf::constant(std::vector<std::int32_t>{0, 1, 0, 1}, tf::Shape({4}));
  model->fit(x, y,
             {.epochs = 2,
              .verbose = 0,
              .callbacks = {std::make_shared<tf::callbacks::CSVLogger>(dir / "log.csv")}});
  model->fit(x, y,
             {.epochs = 3,
              .verbose = 0,
              .callbacks = {std::make_shared<tf::callbacks::CSVLogger>(dir / "log.csv", ";", true)},
              .initial_epoch = 2});
  std::ifstream file(dir / "log.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "epoch,accuracy,loss");
  EXPECT_EQ(lines[1].substr(0, 2), "0,");
  EXPECT_EQ(lines[2].substr(0, 2), "1,");
  EXPECT_EQ(lines[3].substr(0, 2), "2;");
}

TEST(Callbacks, LearningRateSchedulerSetsEachEpochsRate) {
  auto model = compiled_model();
  std::vector<double> seen;
  auto scheduler = std::make_shared<tf::callbacks::LearningRateScheduler>(
      [](std::int64_t epoch, double rate) { return epoch == 0 ? 0.5 : rate / 2; });
  auto recorder = std::make_shared<tf::callbacks::LambdaCallback>(tf::callbacks::LambdaCallbackFunctions{
      .on_epoch_end = [&](std::int64_t, Logs& logs) { seen.push_back(logs.at("learning_rate")); }});
  const tf::layers::History h =
      model->fit(tf::zeros({4, 3}), tf::constant(std::vector<std::int32_t>{0, 1, 0, 1}, tf::Shape({4})),
                 {.epochs = 3, .verbose = 0, .callbacks = {scheduler, recorder}});
  EXPECT_EQ(seen, (std::vector<double>{0.5, 0.25, 0.125}));
  EXPECT_EQ(h.history.at("learning_rate"), seen);

  auto bad =
      std::make_shared<tf::callbacks::LearningRateScheduler>([](std::int64_t, double) { return -1.0; });
  EXPECT_THAT(
      [&] {
        model->fit(tf::zeros({4, 3}), tf::constant(std::vector<std::int32_t>{0, 1, 0, 1}, tf::Shape({4})),
                   {.verbose = 0, .callbacks = {bad}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("LearningRateScheduler.on_epoch_begin: LearningRateScheduler: the schedule gave -1")));
}

TEST(Callbacks, TerminateOnNaNStopsAtTheFirstInvalidLoss) {
  auto model = compiled_model();
  std::vector<float> x(12, 1.f);
  x[0] = std::nanf("");
  std::ostringstream out;
  int batches = 0;
  auto counter = std::make_shared<tf::callbacks::LambdaCallback>(
      tf::callbacks::LambdaCallbackFunctions{.on_train_batch_end = [&](std::int64_t, Logs&) { ++batches; }});
  model->fit(tf::constant(x, tf::Shape({4, 3})),
             tf::constant(std::vector<std::int32_t>{0, 1, 0, 1}, tf::Shape({4})),
             {.batch_size = 1,
              .epochs = 2,
              .verbose = 0,
              .callbacks = {std::make_shared<tf::callbacks::TerminateOnNaN>(), counter},
              .shuffle = false,
              .out = &out});
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(out.str(), "Batch 0: Invalid loss, terminating training\n");
}

TEST(Callbacks, ACallbacksErrorKeepsItsTypeAndNamesTheCallback) {
  auto model = compiled_model();
  const tf::Tensor x = tf::zeros({4, 3});
  const tf::Tensor y = tf::constant(std::vector<std::int32_t>{0, 1, 0, 1}, tf::Shape({4}));
  struct Failing : tf::callbacks::Callback {
    std::string name() const override { return "Failing"; }
    void on_epoch_end(std::int64_t, Logs&) override { throw tf::DataLossError("disk full"); }
  };
  EXPECT_THAT([&] { model->fit(x, y, {.verbose = 0, .callbacks = {std::make_shared<Failing>()}}); },
              ThrowsMessage<tf::DataLossError>(HasSubstr("Failing.on_epoch_end: disk full")));
  // A monitored log that does not exist fails at the first epoch, listing the logs there are.
  EXPECT_THAT(
      [&] {
        model->fit(x, y, {.verbose = 0, .callbacks = {std::make_shared<tf::callbacks::EarlyStopping>()}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr(
          "EarlyStopping watches 'val_loss', which is not among the logs [loss, accuracy] (val_ logs need "
          "validation data)")));
  // Other exceptions pass through untouched.
  auto throwing = std::make_shared<tf::callbacks::LambdaCallback>(tf::callbacks::LambdaCallbackFunctions{
      .on_train_begin = [](Logs&) { throw std::runtime_error("user code"); }});
  EXPECT_THAT([&] { model->fit(x, y, {.verbose = 0, .callbacks = {throwing}}); },
              ThrowsMessage<std::runtime_error>("user code"));
}

TEST(Callbacks, ModelIsSetOnlyDuringALoop) {
  tf::callbacks::TerminateOnNaN callback;
  EXPECT_THROW(callback.model(), tf::FailedPreconditionError);
}

}  // namespace
