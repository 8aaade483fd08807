// layers::Model: compile, fit, evaluate and predict give what a hand-written loop gives (the same
// batches, the same updates, the same running loss), Keras's validation split, class and sample
// weights, resuming with initial_epoch, stop_training, the progress display, and typed errors.

#include "tapeflow/nn/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>
#include <vector>

#include "nn/progbar_logger.h"
#include "support/classification_data.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

tf::Tensor features(std::int64_t n) { return tf::testing::classification_features(n); }
tf::Tensor labels(std::int64_t n) { return tf::testing::classification_labels(n); }

/// A two-layer classifier with fixed seeds: every call gives a model with the same weights.
std::shared_ptr<tf::layers::Sequential> classifier() {
  return tf::layers::sequential(
      {tf::layers::dense(5, "relu", {.seed = 1}), tf::layers::dense(3, {.seed = 2})});
}

/// The classifier with a residual branch, in the functional API: its input joined to the hidden
/// layer's output before the last layer.
std::shared_ptr<tf::layers::Functional> branching_classifier() {
  const tf::layers::KerasTensor inputs = tf::layers::Input({4});
  const tf::layers::KerasTensor hidden = tf::layers::dense(5, "relu", {.seed = 1})->apply(inputs);
  const tf::layers::KerasTensor joined = tf::layers::concatenate()->apply({hidden, inputs});
  return tf::layers::model(inputs, tf::layers::dense(3, {.seed = 2})->apply(joined));
}

const tf::losses::Loss kLoss("sparse_categorical_crossentropy", {.from_logits = true});

void compile(tf::layers::Model& model, double learning_rate = 0.1, bool eager = false) {
  model.compile(std::make_shared<tf::optimizers::SGD>(learning_rate, 0.9), kLoss,
                {.metrics = {"accuracy"}, .run_eagerly = eager});
}

/// The loop fit() replaces, written by hand: the same batches (data::shuffled_indices), a tape,
/// apply_gradients. Returns each epoch's loss: the batch losses' mean weighted by batch size.
std::vector<double> hand_written_fit(tf::layers::Model& model, tf::optimizers::Optimizer& optimizer,
                                     const tf::Tensor& x, const tf::Tensor& y, std::int64_t batch_size,
                                     std::int64_t epochs, bool shuffle,
                                     const std::optional<tf::Tensor>& w = {}) {
  const std::int64_t n = x.shape()[0];
  std::vector<double> epoch_losses;
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    if (shuffle) order = tf::data::shuffled_indices(n, 0, epoch);
    double total = 0;
    for (std::int64_t begin = 0; begin < n; begin += batch_size) {
      const std::int64_t size = std::min(batch_size, n - begin);
      const tf::Tensor idx = tf::constant(
          std::vector<std::int64_t>(order.begin() + begin, order.begin() + begin + size), tf::Shape({size}));
      tf::GradientTape tape;
      const tf::Tensor logits = model.call(tf::gather(x, idx), /*training=*/true);
      const auto vars = model.trainable_variables();  // built by the first call
      const tf::Tensor loss =
          kLoss(tf::gather(y, idx), logits, w ? std::optional(tf::gather(*w, idx)) : std::nullopt);
      optimizer.apply_gradients(tape.gradient(loss, vars), vars);
      total += loss.item<float>() * static_cast<double>(size);
    }
    epoch_losses.push_back(total / static_cast<double>(n));
  }
  return epoch_losses;
}

void expect_same_weights(const std::vector<tf::Tensor>& a, const std::vector<tf::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto va = a[i].to_vector<float>(), vb = b[i].to_vector<float>();
    ASSERT_EQ(va.size(), vb.size());
    for (std::size_t j = 0; j < va.size(); ++j)
      EXPECT_NEAR(va[j], vb[j], 1e-5f) << "weight " << i << "[" << j << "]";
  }
}

struct FitCase {
  const char* name;
  bool shuffle;
  bool eager;
  std::int64_t batch_size;  // 10 examples: 4 leaves a last batch of 2
  bool functional = false;  // branching_classifier() instead of classifier()
};

class FitMatchesHandWrittenLoop : public ::testing::TestWithParam<FitCase> {};

TEST_P(FitMatchesHandWrittenLoop, SameWeightsAndLosses) {
  const FitCase& c = GetParam();
  const tf::Tensor x = features(10), y = labels(10);
  auto make = [&]() -> std::shared_ptr<tf::layers::Model> {
    if (c.functional) return branching_classifier();
    return classifier();
  };
  auto model = make();
  compile(*model, 0.1, c.eager);
  const tf::layers::History h =
      model->fit(x, y, {.batch_size = c.batch_size, .epochs = 3, .verbose = 0, .shuffle = c.shuffle});

  auto reference = make();
  tf::optimizers::SGD optimizer(0.1, 0.9);
  const std::vector<double> losses =
      hand_written_fit(*reference, optimizer, x, y, c.batch_size, 3, c.shuffle);

  expect_same_weights(model->get_weights(), reference->get_weights());
  EXPECT_EQ(h.epoch, (std::vector<std::int64_t>{0, 1, 2}));
  ASSERT_EQ(h.history.at("loss").size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) EXPECT_NEAR(h.history.at("loss")[e], losses[e], 1e-6) << "epoch " << e;
  EXPECT_EQ(h.history.count("accuracy"), 1u);
}

INSTANTIATE_TEST_SUITE_P(Model, FitMatchesHandWrittenLoop,
                         ::testing::Values(FitCase{"traced_shuffled", true, false, 4},
                                           FitCase{"traced_in_order", false, false, 4},
                                           FitCase{"eager_shuffled", true, true, 4},
                                           FitCase{"one_batch", true, false, 32},
                                           FitCase{"functional_traced", true, false, 4, true},
                                           FitCase{"functional_eager", true, true, 4, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Model, FitOnADatasetOfBatchesIsFitOnTheTensors) {
  const tf::Tensor x = features(10), y = labels(10);
  auto on_tensors = classifier();
  compile(*on_tensors);
  const tf::layers::History expected =
      on_tensors->fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false});

  auto on_dataset = classifier();
  compile(*on_dataset);
  const auto batches = tf::data::Dataset::from_tensor_slices({x, y}).batch(4);
  const tf::layers::History h = on_dataset->fit(batches, {.epochs = 2, .verbose = 0});
  expect_same_weights(on_dataset->get_weights(), on_tensors->get_weights());
  for (std::size_t e = 0; e < 2; ++e)
    EXPECT_NEAR(h.history.at("loss")[e], expected.history.at("loss")[e], 1e-6);

  const tf::layers::Logs a = on_dataset->evaluate(batches, {.verbose = 0});
  const tf::layers::Logs b = on_dataset->evaluate(x, y, {.batch_size = 4, .verbose = 0});
  EXPECT_NEAR(a.at("loss"), b.at("loss"), 1e-6);
  EXPECT_DOUBLE_EQ(a.at("accuracy"), b.at("accuracy"));
}

TEST(Model, ARepeatingDatasetNeedsStepsPerEpoch) {
  const auto batches = tf::data::Dataset::from_tensor_slices({features(10), labels(10)}).batch(4).repeat();
  auto model = classifier();
  compile(*model);
  EXPECT_THAT([&] { model->fit(batches, {.verbose = 0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("give steps_per_epoch")));
  int steps = 0;
  auto counter = std::make_shared<tf::callbacks::LambdaCallback>(tf::callbacks::LambdaCallbackFunctions{
      .on_train_batch_end = [&](std::int64_t, tf::layers::Logs&) { ++steps; }});
  model->fit(batches, {.epochs = 2, .verbose = 0, .callbacks = {counter}, .steps_per_epoch = 5});
  EXPECT_EQ(steps, 10);  // 5 a epoch, across the dataset's 3-batch iterations
  EXPECT_THAT(
      [&] { model->fit(batches, {.verbose = 0, .validation_split = 0.5, .steps_per_epoch = 1}); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("validation_split, sample_weight and class_weight")));
  const auto triples = tf::data::Dataset::from_tensor_slices({features(4)}).batch(2);
  EXPECT_THAT(
      [&] { model->fit(triples, {.verbose = 0}); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("must be (x, y) or (x, y, sample_weight), got 1")));
}

TEST(Model, EvaluateGivesTheLossAndAccuracyOfTheWholeSet) {
  const tf::Tensor x = features(7), y = labels(7);
  auto model = classifier();
  compile(*model);
  const tf::layers::Logs logs = model->evaluate(x, y, {.batch_size = 3, .verbose = 0});
  // One batch of everything: the mean loss, and argmax compared with the labels.
  const tf::Tensor logits = (*model)(x);
  const auto predicted = tf::argmax(logits, -1).to_vector<std::int64_t>();
  const auto truth = y.to_vector<std::int32_t>();
  double correct = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) correct += predicted[i] == truth[i];
  EXPECT_EQ(logs.keys(), (std::vector<std::string>{"loss", "accuracy"}));
  EXPECT_NEAR(logs.at("loss"), kLoss(y, logits).item<float>(), 1e-6);
  EXPECT_DOUBLE_EQ(logs.at("accuracy"), correct / 7);
  EXPECT_EQ(model->metrics_names(), (std::vector<std::string>{"loss", "accuracy"}));
}

TEST(Model, PredictConcatenatesTheBatchesAndNeedsNoCompile) {
  const tf::Tensor x = features(7);
  auto model = classifier();
  const tf::Tensor expected = (*model)(x);
  for (bool compiled : {false, true}) {
    if (compiled) compile(*model);
    const tf::Tensor p = model->predict(x, {.batch_size = 3, .verbose = 0});
    EXPECT_EQ(p.shape(), tf::Shape({7, 3}));
    const auto a = p.to_vector<float>(), b = expected.to_vector<float>();
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]);
  }
}

TEST(Model, ValidationSplitHoldsOutTheLastExamples) {
  const tf::Tensor x = features(10), y = labels(10);
  auto model = classifier();
  compile(*model);
  const tf::layers::History h =
      model->fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .validation_split = 0.3});
  // floor(10 * 0.7) = 7 training examples; the last 3 are the validation data.
  const tf::layers::Logs val =
      model->evaluate(tf::slice(x, {7, 0}, {3, 4}), tf::slice(y, {7}, {3}), {.verbose = 0});
  EXPECT_NEAR(h.history.at("val_loss")[0], val.at("loss"), 1e-6);
  EXPECT_NEAR(h.history.at("val_accuracy")[0], val.at("accuracy"), 1e-12);

  auto reference = classifier();
  tf::optimizers::SGD optimizer(0.1, 0.9);
  hand_written_fit(*reference, optimizer, tf::slice(x, {0, 0}, {7, 4}), tf::slice(y, {0}, {7}), 4, 1, true);
  expect_same_weights(model->get_weights(), reference->get_weights());
}

TEST(Model, ClassWeightIsTheSampleWeightOfEachExamplesClass) {
  const tf::Tensor x = features(10), y = labels(10);
  auto model = classifier();
  compile(*model);
  model->fit(x, y,
             {.batch_size = 4, .epochs = 2, .verbose = 0, .class_weight = {{0, 1.0}, {1, 2.5}, {2, 0.5}}});

  std::vector<float> w;
  for (const std::int32_t label : y.to_vector<std::int32_t>())
    w.push_back(label == 0 ? 1.f : label == 1 ? 2.5f : 0.5f);
  auto reference = classifier();
  tf::optimizers::SGD optimizer(0.1, 0.9);
  hand_written_fit(*reference, optimizer, x, y, 4, 2, true, tf::constant(w, tf::Shape({10})));
  expect_same_weights(model->get_weights(), reference->get_weights());
}

TEST(Model, InitialEpochResumesWhereAnEarlierFitStopped) {
  const tf::Tensor x = features(10), y = labels(10);
  auto whole = classifier();
  compile(*whole);
  whole->fit(x, y, {.batch_size = 4, .epochs = 4, .verbose = 0});

  auto resumed = classifier();
  compile(*resumed);
  resumed->fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
  const tf::layers::History h =
      resumed->fit(x, y, {.batch_size = 4, .epochs = 4, .verbose = 0, .initial_epoch = 2});
  EXPECT_EQ(h.epoch, (std::vector<std::int64_t>{2, 3}));
  expect_same_weights(resumed->get_weights(), whole->get_weights());
}

TEST(Model, StopTrainingEndsTheRunAfterTheCurrentBatch) {
  const tf::Tensor x = features(10), y = labels(10);
  auto model = classifier();
  compile(*model);
  int batches = 0;
  auto stopper = std::make_shared<tf::callbacks::LambdaCallback>(tf::callbacks::LambdaCallbackFunctions{
      .on_train_batch_end = [&](std::int64_t batch, tf::layers::Logs&) {
        ++batches;
        if (batch == 1) model->set_stop_training(true);
      }});
  const tf::layers::History h =
      model->fit(x, y, {.batch_size = 2, .epochs = 3, .verbose = 0, .callbacks = {stopper}});
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(h.epoch, (std::vector<std::int64_t>{0}));  // the epoch is still ended and logged
}

TEST(Model, HooksAreCalledInKerasOrder) {
  struct Recorder : tf::callbacks::Callback {
    std::vector<std::string> calls;
    void on_train_begin(tf::layers::Logs&) override { calls.push_back("train_begin"); }
    void on_epoch_begin(std::int64_t e, tf::layers::Logs&) override {
      calls.push_back("epoch_begin " + std::to_string(e));
    }
    void on_train_batch_end(std::int64_t b, tf::layers::Logs& logs) override {
      calls.push_back("batch_end " + std::to_string(b) + (logs.get("loss") ? " loss" : ""));
    }
    void on_test_begin(tf::layers::Logs&) override { calls.push_back("test_begin"); }
    void on_test_end(tf::layers::Logs&) override { calls.push_back("test_end"); }
    void on_epoch_end(std::int64_t e, tf::layers::Logs& logs) override {
      calls.push_back("epoch_end " + std::to_string(e) + " " + std::to_string(logs.keys().size()));
    }
    void on_train_end(tf::layers::Logs&) override { calls.push_back("train_end"); }
  };
  auto recorder = std::make_shared<Recorder>();
  auto model = classifier();
  compile(*model);
  model->fit(features(6), labels(6),
             {.batch_size = 4,
              .epochs = 1,
              .verbose = 0,
              .callbacks = {recorder},
              .validation_data = std::pair(features(2), labels(2))});
  EXPECT_EQ(recorder->calls,
            (std::vector<std::string>{"train_begin", "epoch_begin 0", "batch_end 0 loss", "batch_end 1 loss",
                                      "test_begin", "test_end", "epoch_end 0 4", "train_end"}));
}

TEST(Model, VerboseTwoPrintsOneLinePerEpoch) {
  std::ostringstream out;
  auto model = classifier();
  compile(*model);
  model->fit(features(10), labels(10), {.batch_size = 4, .epochs = 2, .verbose = 2, .out = &out});
  EXPECT_THAT(
      out.str(),
      ContainsRegex("^Epoch 1/2\n3/3 - [0-9]+s - loss: [0-9.]+ - accuracy: [0-9.]+ - [0-9]+m?u?s/epoch "
                    "- [0-9]+m?u?s/step\nEpoch 2/2\n"));
}

TEST(Model, VerboseOneWritesTheFinalBarToALog) {
  std::ostringstream out;
  auto model = classifier();
  compile(*model);
  model->fit(features(10), labels(10), {.batch_size = 4, .epochs = 1, .verbose = 1, .out = &out});
  EXPECT_THAT(out.str(),
              ContainsRegex("^3/3 \\[==============================\\] - [0-9]+s [0-9]+m?u?s/step - loss: "
                            "[0-9.]+ - accuracy: [0-9.]+\n$"));
}

TEST(Progbar, LinesHaveTfKerasLayout) {
  tf::layers::Logs logs;
  logs.set("loss", 0.49661);
  logs.set("accuracy", 0.8253);
  logs.set("tiny", 0.0001234);
  EXPECT_EQ(
      tf::layers::Progbar::line(1875, 1875, 1, true, 3.2, 0.0014, logs),
      "1875/1875 [==============================] - 3s 1ms/step - loss: 0.4966 - accuracy: 0.8253 - tiny: "
      "1.2340e-04");
  EXPECT_EQ(tf::layers::Progbar::line(32, 1875, 1, false, 0.1, 0.002, logs),
            "  32/1875 [..............................] - ETA: 3s - loss: 0.4966 - accuracy: 0.8253 - tiny: "
            "1.2340e-04");
  EXPECT_EQ(tf::layers::Progbar::line(938, 1875, 1, false, 2, 0.002, tf::layers::Logs()),
            " 938/1875 [==============>...............] - ETA: 1s");
  EXPECT_EQ(tf::layers::Progbar::line(12, 0, 1, false, 3.2, 0.01, tf::layers::Logs()),
            "     12/Unknown - 3s 10ms/step");
  EXPECT_EQ(tf::layers::Progbar::line(1875, 1875, 2, true, 3.2, 0.0000017, logs),
            "1875/1875 - 3s - loss: 0.4966 - accuracy: 0.8253 - tiny: 1.2340e-04 - 3s/epoch - 2us/step");
}

TEST(Model, BadUseIsATypedErrorNamingTheCall) {
  const tf::Tensor x = features(10), y = labels(10);
  auto model = classifier();
  EXPECT_THAT([&] { model->fit(x, y); },
              ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("must compile")));
  EXPECT_THAT([&] { model->evaluate(x, y); },
              ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("evaluate")));
  compile(*model);
  (*model)(x);  // builds the variables
  using tf::InvalidArgumentError;
  EXPECT_THAT(
      [&] { model->fit(x, labels(9)); },
      ThrowsMessage<InvalidArgumentError>(HasSubstr("fit: x (10, 4) and y (9,) have different numbers")));
  EXPECT_THAT([&] { model->fit(features(0), labels(0)); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("no example")));
  EXPECT_THAT([&] { model->fit(x, y, {.batch_size = 0}); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("batch_size must be at least 1, got 0")));
  EXPECT_THAT([&] { model->fit(x, y, {.validation_split = 1.0}); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("validation_split must be in [0, 1)")));
  EXPECT_THAT([&] { model->fit(x, y, {.validation_split = 0.95}); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("leaves 0 for training and 10 for validation")));
  EXPECT_THAT(
      [&] {
        model->fit(x, y, {.class_weight = {{0, 1.0}, {2, 1.0}}});
      },
      ThrowsMessage<InvalidArgumentError>(HasSubstr("keys 0..1")));
  EXPECT_THAT(
      [&] {
        model->fit(x, y, {.class_weight = {{0, 1.0}, {1, 1.0}}});
      },
      ThrowsMessage<InvalidArgumentError>(HasSubstr("label 2 has no class_weight")));
  EXPECT_THAT(
      [&] {
        model->fit(x, y, {.sample_weight = tf::constant({1.f, 2.f})});
      },
      ThrowsMessage<InvalidArgumentError>(HasSubstr("sample_weight must have shape (10,)")));
  EXPECT_THAT([&] { model->fit(x, y, {.verbose = 3}); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("verbose")));
  EXPECT_THAT([&] { model->predict(features(0)); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("predict")));
  EXPECT_THAT([&] { model->set_weights({}); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("has 4 weights, got a list of 0")));
  EXPECT_THAT([&] { model->compile(nullptr, kLoss); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("optimizer is null")));
  EXPECT_THAT([&] { model->compile(std::make_shared<tf::optimizers::SGD>(), kLoss, {.metrics = {"f1"}}); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("unknown metric 'f1'")));
  EXPECT_THAT([] { tf::losses::Loss("hinge"); },
              ThrowsMessage<InvalidArgumentError>(HasSubstr("unknown loss 'hinge'")));
}

TEST(Model, TheLossFunctionsErrorReachesTheCaller) {
  auto model = classifier();
  compile(*model);
  // Labels beyond the 3 classes: the loss names itself and the label.
  const tf::Tensor bad = tf::constant(std::vector<std::int32_t>(10, 7), tf::Shape({10}));
  EXPECT_THROW(model->fit(features(10), bad, {.verbose = 0}), tf::InvalidArgumentError);
}

TEST(Loss, NamesAreKerasIdentifiers) {
  EXPECT_EQ(tf::losses::Loss("mse").name(), "mean_squared_error");
  const tf::Tensor y = tf::constant({1.f, 2.f}), p = tf::constant({2.f, 4.f});
  EXPECT_FLOAT_EQ(tf::losses::Loss("mse")(y, p).item<float>(), 2.5f);  // (1 + 4) / 2
}

}  // namespace
