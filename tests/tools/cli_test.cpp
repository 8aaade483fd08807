// tools/cli (the `tapeflow` program): argument errors exit with status 2 and a message, the
// progress line, the SVG plot, resuming from a checkpoint, and a short end-to-end training on
// Fashion-MNIST whose loss must fall. The data tests skip only when dataset-fashion-mnist is not
// installed (scripts/setup.sh installs it).
#ifdef TAPEFLOW_HAVE_CLI

#include "cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "models.h"
#include "plot.h"
#include "progress.h"
#include "tapeflow/tapeflow.h"
#include "train.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

struct Result {
  int status;
  std::string out, err;
};

Result run(std::vector<const char*> args) {
  args.insert(args.begin(), "tapeflow");
  std::ostringstream out, err;
  const int status = cli::run(static_cast<int>(args.size()), args.data(), out, err, false);
  return {status, out.str(), err.str()};
}

bool have_dataset() {
  return fs::exists(fs::path(tf::data::kFashionMnistDir) / "train-labels-idx1-ubyte.gz");
}

/// The data set, loaded once for all the tests of this file.
const tf::data::FashionMnist& dataset() {
  static const tf::data::FashionMnist ds = tf::data::load_fashion_mnist();
  return ds;
}

/// A fresh directory under the test temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir()
      : path_(fs::path(::testing::TempDir()) /
              ("tapeflow_cli_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

/// Options of a quick run: the first `limit` training examples, 200 test examples.
cli::TrainOptions quick(const std::string& model, std::int64_t epochs, std::int64_t limit) {
  cli::TrainOptions o;
  o.model = model;
  o.epochs = epochs;
  o.limit = limit;
  o.batch_size = 32;
  o.test_limit = 200;
  o.dataset = &dataset();
  return o;
}

/// Every entry of a checkpoint as raw bytes, by name.
std::map<std::string, std::string> checkpoint_bytes(const std::string& path) {
  tf::NamedVariables vars;
  for (const auto& e : tf::list_checkpoint(path))
    vars.emplace_back(e.name, tf::Variable(tf::zeros(e.shape, e.dtype)));
  tf::restore_checkpoint(path, vars);
  std::map<std::string, std::string> bytes;
  for (const auto& [name, var] : vars) {
    tf::Tensor v = var.value();
    bytes[name] = std::string(static_cast<const char*>(v.raw_data()), v.nbytes());
  }
  return bytes;
}

}  // namespace

// --- Arguments ------------------------------------------------------------------------------

TEST(CliArguments, UnknownModelExitsWith2AndNamesTheChoices) {
  Result r = run({"train", "--model", "resnet"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("resnet"));
  EXPECT_THAT(r.err, HasSubstr("mlp"));
}

TEST(CliArguments, NegativeOrZeroEpochsExitWith2) {
  for (const char* n : {"-3", "0"}) {
    Result r = run({"train", "--epochs", n, "--data-dir", "/"});
    EXPECT_EQ(r.status, 2) << n;
    EXPECT_THAT(r.err, HasSubstr("--epochs")) << n;
  }
}

TEST(CliArguments, BadNumbersExitWith2) {
  EXPECT_EQ(run({"train", "--lr", "-0.1", "--data-dir", "/"}).status, 2);
  EXPECT_EQ(run({"train", "--lr", "fast"}).status, 2);
  EXPECT_EQ(run({"train", "--batch-size", "0", "--data-dir", "/"}).status, 2);
  EXPECT_EQ(run({"train", "--limit", "-1", "--data-dir", "/"}).status, 2);
}

TEST(CliArguments, MissingDataDirectoryNamesItAndThePackage) {
  Result r = run({"train", "--data-dir", "/nonexistent/fashion"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/fashion"));
  EXPECT_THAT(r.err, HasSubstr("dataset-fashion-mnist"));
}

TEST(CliArguments, ResumeNeedsAnExistingCheckpoint) {
  EXPECT_THAT(run({"train", "--resume", "--data-dir", "/"}).err, HasSubstr("--checkpoint"));
  Result r = run({"train", "--resume", "--checkpoint", "/nonexistent.ckpt", "--data-dir", "/"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent.ckpt"));
}

TEST(CliArguments, UnreadableCheckpointExitsWith2) {
  TempDir dir;
  std::ofstream(dir / "junk.ckpt") << "not a checkpoint";
  Result r = run({"train", "--resume", "--checkpoint", (dir / "junk.ckpt").c_str(), "--data-dir", "/"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("junk.ckpt"));
}

TEST(CliArguments, UnknownOptionAndMissingSubcommandExitWith2) {
  EXPECT_EQ(run({"train", "--learning-rate", "0.1"}).status, 2);
  EXPECT_EQ(run({}).status, 2);
}

TEST(CliArguments, HelpExitsWith0AndListsTheOptions) {
  Result r = run({"train", "--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* option :
       {"--model", "--epochs", "--batch-size", "--lr", "--checkpoint", "--resume", "--plot"})
    EXPECT_THAT(r.out, HasSubstr(option));
}

TEST(CliExamples, UnknownExampleExitsWith2) {
  Result r = run({"examples", "no_such_example"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no_such_example"));
}

TEST(CliExamples, ListsTheSeedPrograms) {
  Result r = run({"examples", "--list", "--dir", "/nonexistent"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("guide_01_scalar_gradient"));
  EXPECT_THAT(r.out, HasSubstr("(not built)"));
}

// --- Progress and plot ----------------------------------------------------------------------

TEST(CliProgress, LineShowsEpochStepLossAccuracyAndSpeed) {
  EXPECT_EQ(cli::ProgressBar::line(2, 5, 469, 938, 0.51234, 0.81641, 2310.4, false),
            "epoch 2/5 469/938 loss 0.5123 acc 0.8164 2310 ex/s");
  EXPECT_EQ(cli::ProgressBar::line(1, 1, 5, 10, 1, 0.5, 10, true),
            "epoch 1/1 [==========>         ]  5/10 loss 1.0000 acc 0.5000 10 ex/s");
}

TEST(CliProgress, PlainOutputHasALinePerTenthOfTheEpoch) {
  std::ostringstream out;
  cli::ProgressBar bar(out, /*redraw=*/false, 1, 1, 100);
  for (int i = 1; i <= 100; ++i) bar.update(i, i * 10, 1.0, 0.5);
  bar.finish();
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 11);  // step 1, 10, 20, ..., 100
  EXPECT_EQ(s.find('\r'), std::string::npos);
}

TEST(CliProgress, TerminalOutputRedrawsOneLine) {
  std::ostringstream out;
  cli::ProgressBar bar(out, /*redraw=*/true, 1, 1, 3);
  for (int i = 1; i <= 3; ++i) bar.update(i, i, 1.0, 0.5);
  bar.finish();
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);  // only the final newline
  EXPECT_THAT(s, HasSubstr("\r"));
  EXPECT_THAT(s, HasSubstr("3/3"));
}

/// The `points` attribute of every polyline of an SVG document.
std::vector<std::string> polyline_points(const std::string& svg) {
  std::vector<std::string> points;
  const std::regex re("<polyline[^>]*points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    points.push_back((*it)[1]);
  return points;
}

std::size_t count_points(const std::string& points) {
  std::istringstream in(points);
  std::string p;
  std::size_t n = 0;
  while (in >> p) {
    EXPECT_TRUE(std::regex_match(p, std::regex(R"(-?[0-9.]+,-?[0-9.]+)"))) << p;
    ++n;
  }
  return n;
}

TEST(CliPlot, HasFourCurvesWithOnePointPerEpoch) {
  cli::History h = {
      {1, 0.6, 0.78, 0.5, 0.82, 10}, {2, 0.4, 0.85, 0.42, 0.85, 10}, {3, 0.35, 0.87, 0.4, 0.86, 10}};
  const std::string svg = cli::training_svg(h, "t");
  const auto curves = polyline_points(svg);
  ASSERT_EQ(curves.size(), 4u);  // train/test loss, train/test accuracy
  for (const auto& c : curves) EXPECT_EQ(count_points(c), 3u);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr(">epoch</text>"));
  EXPECT_THAT(svg, HasSubstr(">accuracy</text>"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

TEST(CliPlot, LowerLossIsDrawnHigherUp) {
  // SVG's y axis points down: the falling loss must give rising y coordinates.
  cli::History h = {{1, 1.0, 0.5, 1.0, 0.5, 1}, {2, 0.5, 0.7, 0.5, 0.7, 1}};
  const auto curves = polyline_points(cli::training_svg(h, "t"));
  ASSERT_EQ(curves.size(), 4u);
  double x0, y0, x1, y1;
  ASSERT_EQ(std::sscanf(curves[0].c_str(), "%lf,%lf %lf,%lf", &x0, &y0, &x1, &y1), 4);
  EXPECT_LT(x0, x1);
  EXPECT_LT(y0, y1);
}

// --- Training (needs the data set) ----------------------------------------------------------

#define REQUIRE_DATASET() \
  if (!have_dataset()) GTEST_SKIP() << "dataset-fashion-mnist is not installed"

TEST(CliTrain, MlpLossFallsOnFashionMnist) {
  // The end-to-end check of issue 5: a few dozen Adam steps of the 784-256-128-10 MLP on the
  // first 3000 training images; the loss must fall and the test accuracy be far above chance.
  REQUIRE_DATASET();
  const auto& ds = dataset();
  cli::Model model = cli::make_model("mlp", 1);
  tf::optim::Adam opt(1e-3);
  auto vars = model.net->trainable_variables();
  tf::Tensor x = tf::slice(ds.train_images, {0, 0, 0, 0}, {3000, -1, -1, -1});
  tf::Tensor y = tf::slice(ds.train_labels, {0}, {3000});
  tf::data::BatchIterator batches(x, y, {.batch_size = 64, .seed = 7});
  std::vector<double> losses;
  while (losses.size() < 40) {
    auto b = batches.next();
    if (!b) continue;
    tf::GradientTape tape;
    tf::Tensor loss =
        tf::losses::sparse_categorical_crossentropy(b->labels, (*model.net)(b->features, true), true);
    opt.apply_gradients(tape.gradient(loss, vars), vars);
    losses.push_back(loss.item<float>());
  }
  const double first = std::accumulate(losses.begin(), losses.begin() + 10, 0.0) / 10;
  const double last = std::accumulate(losses.end() - 10, losses.end(), 0.0) / 10;
  EXPECT_LT(last, 0.7 * first) << "first 10 steps " << first << ", last 10 " << last;

  tf::metrics::SparseCategoricalAccuracy accuracy;
  tf::Tensor tx = tf::slice(ds.test_images, {0, 0, 0, 0}, {1000, -1, -1, -1});
  accuracy.update_state(tf::slice(ds.test_labels, {0}, {1000}), (*model.net)(tx));
  EXPECT_GT(accuracy.result(), 0.6);  // chance is 0.1
}

TEST(CliTrain, GradientReportOfTheFirstStepListsEveryVariable) {
  REQUIRE_DATASET();
  cli::TrainOptions o = quick("mlp", 1, 64);
  o.gradient_report = true;
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  const std::string report = out.str();
  EXPECT_THAT(report, HasSubstr("gradient report of the first step:"));
  EXPECT_THAT(report, HasSubstr("gradient norm"));
  // The MLP's six variables (three kernels, three biases), each with a norm: none is missing.
  std::size_t ok_rows = 0;
  for (std::size_t at = report.find(" ok\n"); at != std::string::npos; at = report.find(" ok\n", at + 1)) ++ok_rows;
  EXPECT_EQ(ok_rows, 6u) << report;
}

TEST(CliTrain, PrintsOneLinePerEpochAndPlotsEveryEpoch) {
  REQUIRE_DATASET();
  TempDir dir;
  cli::TrainOptions o = quick("mlp", 2, 256);
  o.plot = dir / "training.svg";
  std::ostringstream out, log;
  cli::History h = cli::train(o, out, log, false);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_THAT(out.str(), HasSubstr("epoch 1/2: train loss"));
  EXPECT_THAT(out.str(), HasSubstr("epoch 2/2: train loss"));
  EXPECT_THAT(log.str(), HasSubstr("ex/s"));
  std::ifstream f(o.plot);
  const std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto curves = polyline_points(svg);
  ASSERT_EQ(curves.size(), 4u);
  for (const auto& c : curves) EXPECT_EQ(count_points(c), 2u);
}

TEST(CliTrain, ResumeContinuesTheEpochCounterAndMatchesAnUninterruptedRunBitwise) {
  REQUIRE_DATASET();
  for (const char* model : {"mlp", "cnn"}) {
    SCOPED_TRACE(model);
    TempDir dir;
    std::ostringstream out, log;
    // Two epochs in one go...
    cli::TrainOptions straight = quick(model, 2, model == std::string("cnn") ? 64 : 256);
    straight.checkpoint = dir / "straight.ckpt";
    cli::train(straight, out, log, false);
    // ... and one epoch, then a resume for the second.
    cli::TrainOptions first = straight;
    first.checkpoint = dir / "resumed.ckpt";
    first.epochs = 1;
    ASSERT_EQ(cli::train(first, out, log, false).size(), 1u);
    cli::TrainOptions second = first;
    second.epochs = 2;
    second.resume = true;
    std::ostringstream resumed_out;
    cli::History h = cli::train(second, resumed_out, log, false);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[1].epoch, 2);
    EXPECT_THAT(resumed_out.str(), HasSubstr("after epoch 1"));
    EXPECT_THAT(resumed_out.str(), HasSubstr("epoch 2/2: train loss"));
    EXPECT_THAT(resumed_out.str(), ::testing::Not(HasSubstr("epoch 1/2")));

    auto a = checkpoint_bytes(straight.checkpoint), b = checkpoint_bytes(second.checkpoint);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, bytes] : a) {
      if (name == "train/history") continue;  // holds the wall time of each epoch
      EXPECT_EQ(bytes, b[name]) << name << " differs after resuming";
    }
    EXPECT_TRUE(a.count("optimizer/iterations"));
    std::int64_t epoch;
    std::memcpy(&epoch, b["train/epoch"].data(), sizeof epoch);
    EXPECT_EQ(epoch, 2);
  }
}

TEST(CliTrain, ResumingWithAnotherModelOrOptimizerExitsWith2AndKeepsTheCheckpoint) {
  REQUIRE_DATASET();
  TempDir dir;
  cli::TrainOptions o = quick("mlp", 1, 64);
  o.checkpoint = dir / "mlp.ckpt";
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  const auto before = checkpoint_bytes(o.checkpoint);
  Result cnn = run({"train", "--resume", "--checkpoint", o.checkpoint.c_str(), "--model", "cnn"});
  EXPECT_EQ(cnn.status, 2);
  EXPECT_THAT(cnn.err, HasSubstr("--model mlp"));
  Result sgd = run({"train", "--resume", "--checkpoint", o.checkpoint.c_str(), "--optimizer", "sgd"});
  EXPECT_EQ(sgd.status, 2);
  EXPECT_THAT(sgd.err, HasSubstr("--optimizer adam"));
  EXPECT_EQ(checkpoint_bytes(o.checkpoint), before);
}

TEST(CliTrain, ResumingFromAModelOnlyCheckpointExitsWith2) {
  REQUIRE_DATASET();
  TempDir dir;
  cli::Model model = cli::make_model("mlp", 1);
  tf::save_checkpoint(dir / "weights.ckpt", *model.net);
  Result r = run({"train", "--resume", "--checkpoint", (dir / "weights.ckpt").c_str()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("not a checkpoint written by `tapeflow train`"));
}

#endif  // TAPEFLOW_HAVE_CLI
