// tapeflow train --export and tapeflow predict: the exported inference gives the accuracy the
// training run measured, from the file alone.

#include "predict.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tapeflow/tapeflow.h"
#include "train.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;

namespace {

tf::data::FashionMnist synthetic(std::int64_t n) {
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>((i * 7 + 3) % 10));
  tf::data::FashionMnist ds;
  ds.train_images = tf::random::uniform({n, 28, 28, 1}, 0.0, 1.0, tf::DType::Float32, 5);
  ds.train_labels = tf::constant(labels);
  ds.test_images = tf::slice(ds.train_images, {0, 0, 0, 0}, {45, -1, -1, -1});
  ds.test_labels = tf::slice(ds.train_labels, {0}, {45});
  return ds;
}

TEST(CliPredict, TheExportedModelGivesTheRunsTestAccuracy) {
  const tf::data::FashionMnist ds = synthetic(128);
  const auto path = std::filesystem::temp_directory_path() / "tapeflow_predict_test.tfn";
  for (const std::string model : {"mlp", "cnn"}) {
    cli::TrainOptions o;
    o.model = model;
    o.epochs = 2;
    o.batch_size = 32;
    o.eval_batch_size = 20;
    o.dataset = &ds;
    o.export_path = path.string();
    std::ostringstream out, log;
    const cli::History h = cli::train(o, out, log, false);
    EXPECT_NE(out.str().find("exported"), std::string::npos) << out.str();
    std::ostringstream pout;
    // 45 test images in batches of 20: the file takes any batch size, so the last batch is 5.
    const double accuracy =
        cli::predict({.model_path = path.string(), .batch_size = 20, .dataset = &ds}, pout);
    EXPECT_DOUBLE_EQ(accuracy, h.back().test_accuracy) << model << ": " << pout.str();
    EXPECT_NE(pout.str().find("batches of 20 (any size): test accuracy"), std::string::npos) << pout.str();
  }
  std::filesystem::remove(path);
}

TEST(CliPredict, AFileThatIsNotAnExportedModelIsAnError) {
  const auto path = std::filesystem::temp_directory_path() / "tapeflow_predict_not_a_model.tfn";
  auto f = tf::function([](const tf::Tensor& x) { return x * 2.0; }, {.name = "twice"});
  f(tf::zeros({3}));
  tf::save_function(f, {{{3}, tf::DType::Float32}}, path);
  std::ostringstream out;
  EXPECT_THROW(cli::predict({.model_path = path.string()}, out), cli::UsageError);
  std::filesystem::remove(path);
  EXPECT_THROW(cli::predict({.model_path = path.string()}, out), tf::InvalidArgumentError);
}

TEST(CliPredict, AnImageModelThatReturnsNoLogitsIsAnErrorNotACrash) {
  // Takes the images the CLI feeds it, but returns nothing (it indexed an empty result before).
  const tf::data::FashionMnist ds = synthetic(64);
  const auto path = std::filesystem::temp_directory_path() / "tapeflow_predict_no_outputs.tfn";
  const std::vector<tf::TensorSpec> images = {{{-1, 28, 28, 1}, tf::DType::Float32, "images"}};
  tf::Variable count(tf::constant(0.0f), {.name = "count"});
  auto f = tf::function([&](const tf::Tensor& x) { count.assign_add(tf::reduce_sum(x) * 0.0f); },
                        {.name = "nothing", .input_signature = images});
  f(tf::zeros({2, 28, 28, 1}));
  f(tf::zeros({3, 28, 28, 1}));
  tf::save_function(f, images, path);
  std::ostringstream out;
  try {
    cli::predict({.model_path = path.string(), .batch_size = 20, .dataset = &ds}, out);
    FAIL() << "predicted with a function that returns no logits";
  } catch (const cli::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("returned 0 tensor(s)"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
