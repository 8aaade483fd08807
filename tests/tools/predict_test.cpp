// tapeflow train --export and tapeflow predict: the exported inference gives the accuracy the
// training run measured, from the file alone, and classifies the user's images; a bad model file
// of any kind exits with status 2.

#include "predict.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "image_files.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"
#include "train.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

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
  EXPECT_THROW(cli::predict({.model_path = path.string()}, out), cli::UsageError);  // a missing file
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

/// A directory for one test, removed at its end, holding an MLP trained for one epoch on
/// synthetic images and exported as `model.tfn`.
class PredictFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    cli::TrainOptions o;
    o.epochs = 1;
    o.batch_size = 32;
    o.eval_batch_size = 20;
    o.dataset = &dataset_;
    o.export_path = path("model.tfn");
    o.checkpoint = path("run.ckpt");
    std::ostringstream out, log;
    cli::train(o, out, log, false);
  }
  std::string path(const std::string& file) const { return dir_ / file; }

  const tf::data::FashionMnist dataset_ = synthetic(64);
  tf::testing::TempDir dir_;
};

/// Runs the program with `args`; returns its exit status and stderr.
std::pair<int, std::string> run(std::vector<const char*> args, std::ostream& out) {
  args.insert(args.begin(), "tapeflow");
  std::ostringstream err;
  const int status = cli::run(static_cast<int>(args.size()), args.data(), out, err, false);
  return {status, err.str()};
}

TEST_F(PredictFiles, ClassifiesTheUsersImagesAsTheModelDoes) {
  // Three images as pixels 0..255; the model's own classes for them, from the file alone.
  std::vector<std::uint8_t> pixels;
  for (float v : tf::slice(dataset_.test_images, {0, 0, 0, 0}, {3, -1, -1, -1}).to_vector<float>())
    pixels.push_back(static_cast<std::uint8_t>(std::lround(v * 255)));
  std::vector<float> scaled;
  for (std::uint8_t p : pixels) scaled.push_back(static_cast<float>(p) / 255.0f);
  const tf::LoadedFunction f = tf::load_function(path("model.tfn"));
  const std::vector<std::int64_t> expected =
      tf::argmax(f({tf::constant(scaled, tf::Shape({3, 28, 28, 1}))})[0], 1).to_vector<std::int64_t>();
  tf::testing::write_npy(path("three.npy"), "|u1", "(3, 28, 28)", tf::testing::bytes_of(pixels));
  tf::testing::write_png(path("first.png"), 28, 28,
                         std::vector<std::uint8_t>(pixels.begin(), pixels.begin() + 784));

  std::ostringstream out;
  const auto [status, err] =
      run({"predict", path("model.tfn").c_str(), path("three.npy").c_str(), path("first.png").c_str()}, out);
  ASSERT_EQ(status, 0) << err;
  std::ostringstream classes;
  const std::vector<std::int64_t> got = cli::classify(
      {.model_path = path("model.tfn"), .images = {path("three.npy"), path("first.png")}}, classes);
  EXPECT_EQ(got, (std::vector<std::int64_t>{expected[0], expected[1], expected[2], expected[0]}));
  EXPECT_EQ(out.str(), classes.str());
  const auto name = [&](std::int64_t c) {
    return std::string(tf::data::class_names()[static_cast<std::size_t>(c)]);
  };
  EXPECT_THAT(out.str(), HasSubstr(fmt::format("{}[2]: {} ({}, probability ", path("three.npy"),
                                               name(expected[2]), expected[2])));
  EXPECT_THAT(out.str(), HasSubstr(fmt::format("{}: {} ({}, probability ", path("first.png"),
                                               name(expected[0]), expected[0])));
}

TEST_F(PredictFiles, EveryKindOfBadModelFileExitsWith2NamingIt) {
  tf::testing::write_npy(path("image.npy"), "|u1", "(28, 28)",
                         tf::testing::bytes_of(std::vector<std::uint8_t>(784)));
  const std::vector<unsigned char> model = tf::testing::read_bytes(path("model.tfn"));
  std::vector<std::string> bad;
  // Cut short anywhere, or one bit flipped anywhere (every byte is under a checksum).
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{16}, std::size_t{64},
                           model.size() / 3, model.size() / 2, model.size() - 4, model.size() - 1}) {
    bad.push_back(path(fmt::format("cut_{}.tfn", size)));
    tf::testing::write_bytes(
        bad.back(),
        std::vector<unsigned char>(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(size)));
  }
  for (std::size_t at :
       {std::size_t{0}, std::size_t{5}, std::size_t{9}, std::size_t{13}, std::size_t{24}, std::size_t{100},
        model.size() / 4, model.size() / 2, model.size() - 8, model.size() - 1}) {
    std::vector<unsigned char> flipped = model;
    flipped[at] ^= 0x10;
    bad.push_back(path(fmt::format("flipped_{}.tfn", at)));
    tf::testing::write_bytes(bad.back(), flipped);
  }
  std::vector<unsigned char> longer = model;
  longer.push_back(0);
  bad.push_back(path("longer.tfn"));
  tf::testing::write_bytes(bad.back(), longer);
  bad.push_back(path("run.ckpt"));  // a checkpoint, not a function file
  bad.push_back(path("text.tfn"));
  tf::testing::write_bytes(bad.back(), {'m', 'o', 'd', 'e', 'l'});
  bad.push_back(path("directory.tfn"));
  fs::create_directory(bad.back());
  bad.push_back(path("missing.tfn"));
  for (const std::string& file : bad) {
    std::ostringstream out;
    const auto [status, err] = run({"predict", file.c_str(), path("image.npy").c_str()}, out);
    EXPECT_EQ(status, 2) << file << ": " << err;
    EXPECT_THAT(err, HasSubstr(file)) << file;
  }
}

TEST_F(PredictFiles, ABadImageFileOrDataDirectoryExitsWith2) {
  std::ostringstream out;
  const auto [status, err] = run({"predict", path("model.tfn").c_str(), path("missing.png").c_str()}, out);
  EXPECT_EQ(status, 2);
  EXPECT_THAT(err, HasSubstr(path("missing.png")));
  const auto [no_data, no_data_err] =
      run({"predict", path("model.tfn").c_str(), "--data-dir", "/nonexistent"}, out);
  EXPECT_EQ(no_data, 2);
  EXPECT_THAT(no_data_err, HasSubstr("/nonexistent"));
  EXPECT_EQ(run({"predict", path("model.tfn").c_str(), "--limit", "-1"}, out).first, 2);
}

}  // namespace
