// tools/cli (the `tapeflow` program): argument errors exit with status 2 and a message, the
// progress line and its fit to the terminal, the SVG and PNG plots, resuming from a checkpoint
// (also mid-epoch after an interruption; Ctrl-C sent to the real program is tested by
// tools/cli/interrupt_test.sh), and a short end-to-end training on
// Fashion-MNIST whose loss must fall. The data tests skip only when dataset-fashion-mnist is not
// installed (scripts/setup.sh installs it).
#ifdef TAPEFLOW_HAVE_CLI

#include "cli.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "examples.h"
#include "interrupt.h"
#include "models.h"
#include "plot.h"
#include "progress.h"
#include "run_cli.h"
#include "support/checkpoint_bytes.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"
#include "train.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

using Result = tf::testing::CliResult;
const auto run = tf::testing::run_cli;

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

/// Trains `model` for two epochs in one go on the first `limit` examples (a quick run), stepping
/// eagerly or through tf::function, and saves its checkpoint at `checkpoint`: the uninterrupted
/// run a resumed one must match. Returns its options.
cli::TrainOptions train_straight(const std::string& model, bool eager, std::int64_t limit,
                                 const std::string& checkpoint) {
  cli::TrainOptions o = quick(model, 2, limit);
  o.eager = eager;
  o.checkpoint = checkpoint;
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  return o;
}

/// Runs `check(model, eager, dir)` for both models and both ways of running the step (through
/// tf::function, the default, and --eager), each in a fresh directory; stops at a fatal failure.
void for_each_model_and_step(
    const std::function<void(const char* model, bool eager, const TempDir& dir)>& check) {
  for (const bool eager : {false, true})
    for (const char* model : {"mlp", "cnn"}) {
      SCOPED_TRACE(std::string(model) + (eager ? " eager" : " traced"));
      TempDir dir;
      check(model, eager, dir);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

/// `n` random training images with labels 0..9, and the first 20 of them as the test set.
tf::data::FashionMnist synthetic_dataset(std::int64_t n) {
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>((i * 7 + 3) % 10));
  tf::data::FashionMnist ds;
  ds.train_images = tf::random::uniform({n, 28, 28, 1}, 0.0, 1.0, tf::DType::Float32, 11);
  ds.train_labels = tf::constant(labels);
  ds.test_images = tf::slice(ds.train_images, {0, 0, 0, 0}, {20, -1, -1, -1});
  ds.test_labels = tf::slice(ds.train_labels, {0}, {20});
  return ds;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

using tf::testing::checkpoint_bytes;

/// Expects two checkpoints (by checkpoint_bytes) to hold the same entries, bit for bit, except
/// train/history, which holds the wall time of each epoch; `differs` ends the message of an entry
/// that does not match.
void expect_same_but_history(const std::map<std::string, std::string>& a,
                             const std::map<std::string, std::string>& b, const std::string& differs) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, bytes] : a) {
    if (name == "train/history") continue;
    auto it = b.find(name);
    EXPECT_TRUE(it != b.end() && it->second == bytes) << name << " " << differs;
  }
}

}  // namespace

// --- Arguments ------------------------------------------------------------------------------

TEST(CliArguments, UnknownModelExitsWith2AndNamesTheChoices) {
  Result r = run({"train", "--model", "resnet"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("resnet"));
  EXPECT_THAT(r.err, HasSubstr("mlp"));
}

/// Expects `train OPTION VALUE` to exit with status 2 naming the option, for every value.
static void expect_train_refuses(const char* option, std::initializer_list<const char*> values) {
  for (const char* value : values) {
    Result r = run({"train", option, value, "--data-dir", "/"});
    EXPECT_EQ(r.status, 2) << option << " " << value;
    EXPECT_THAT(r.err, HasSubstr(option)) << value;
  }
}

/// `train OPTION PATH` exits 2 before loading data, its message naming the option and the reason.
static void expect_train_refuses_paths(
    const char* option, std::initializer_list<std::pair<std::string, std::string>> paths_and_reasons) {
  for (const auto& [path, reason] : paths_and_reasons) {
    Result r = run({"train", option, path.c_str(), "--data-dir", "/"});
    EXPECT_EQ(r.status, 2) << path;
    EXPECT_THAT(r.err, HasSubstr(option)) << path;
    EXPECT_THAT(r.err, HasSubstr(reason)) << path;
  }
}

TEST(CliArguments, NegativeOrZeroEpochsExitWith2) { expect_train_refuses("--epochs", {"-3", "0"}); }

TEST(CliArguments, BadNumbersExitWith2) {
  EXPECT_EQ(run({"train", "--lr", "-0.1", "--data-dir", "/"}).status, 2);
  EXPECT_EQ(run({"train", "--lr", "fast"}).status, 2);
  EXPECT_EQ(run({"train", "--batch-size", "0", "--data-dir", "/"}).status, 2);
  EXPECT_EQ(run({"train", "--limit", "-1", "--data-dir", "/"}).status, 2);
  for (const char* decay : {"0", "1.5", "nan"}) {
    Result r = run({"train", "--lr-decay", decay, "--data-dir", "/"});
    EXPECT_EQ(r.status, 2) << decay;
    EXPECT_THAT(r.err, HasSubstr("--lr-decay must be in (0, 1]")) << decay;
  }
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

TEST(CliArguments, MistypedSubcommandSuggestsTheNearestOne) {
  Result r = run({"trian"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown subcommand 'trian'; did you mean 'train'?"));
  EXPECT_THAT(run({"exmaples", "--list"}).err, HasSubstr("did you mean 'examples'?"));
  Result far = run({"frobnicate"});
  EXPECT_EQ(far.status, 2);
  EXPECT_THAT(
      far.err,
      HasSubstr("unknown subcommand 'frobnicate'; the subcommands are train, predict, sample and examples"));
}

TEST(CliArguments, MistypedOptionSuggestsTheNearestOne) {
  Result r = run({"train", "--epoch", "3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown option '--epoch'; did you mean '--epochs'?"));
  EXPECT_THAT(run({"train", "--chekpoint=a.ckpt"}).err, HasSubstr("did you mean '--checkpoint'?"));
  EXPECT_THAT(run({"predict", "m.tfn", "--limt", "3"}).err, HasSubstr("did you mean '--limit'?"));
  Result far = run({"train", "--learning-rate", "0.1"});
  EXPECT_EQ(far.status, 2);
  EXPECT_THAT(far.err,
              HasSubstr("unknown option '--learning-rate'\n(`tapeflow train --help` lists its options)"));
}

TEST(CliArguments, ParseErrorsPointToTheHelpOfTheSubcommandGiven) {
  Result r = run({"predict"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("model is required"));
  EXPECT_THAT(r.err, HasSubstr("`tapeflow predict --help`"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("train")));
}

TEST(CliArguments, SeedMustBeAnIntegerFrom0To2To64Minus1) {
  for (const char* seed : {"-1", "18446744073709551616", "1e23", "1.5", "0x10"}) {
    Result r = run({"train", "--seed", seed, "--data-dir", "/nonexistent"});
    EXPECT_EQ(r.status, 2) << seed;
    EXPECT_THAT(r.err, HasSubstr("--seed")) << seed;
    EXPECT_THAT(r.err, HasSubstr("not an integer from 0 to 18446744073709551615")) << seed;
  }
  // The largest seed passes the option check (the missing data directory stops the run).
  EXPECT_THAT(run({"train", "--seed", "18446744073709551615", "--data-dir", "/nonexistent"}).err,
              HasSubstr("the data directory '/nonexistent' does not exist"));
}

TEST(CliArguments, RanksMustBePositive) { expect_train_refuses("--ranks", {"0", "-2"}); }

TEST(CliArguments, UnwritableExportPathExitsWith2BeforeTraining) {
  TempDir dir;
  expect_train_refuses_paths("--export",
                             {{dir / "", "is a directory"}, {dir / "no_such_dir/m.tfn", "does not exist"}});
}

TEST(CliArguments, ExportToTheCheckpointOrPlotFileIsRefused) {
  TempDir dir;
  const std::string plot = dir / "curves.svg", checkpoint = dir / "run.ckpt";
  const std::string checkpoint_by_another_name = dir / "./run.ckpt";
  for (const auto& args : {std::vector<const char*>{"--plot", plot.c_str(), "--export", plot.c_str()},
                           std::vector<const char*>{"--checkpoint", checkpoint.c_str(), "--export",
                                                    checkpoint_by_another_name.c_str()}}) {
    std::vector<const char*> argv = {"train", "--data-dir", "/"};
    argv.insert(argv.end(), args.begin(), args.end());
    Result r = run(argv);
    EXPECT_EQ(r.status, 2) << args[1];
    EXPECT_THAT(r.err, HasSubstr("are the same file")) << args[1];
  }
  EXPECT_FALSE(fs::exists(plot));
  EXPECT_FALSE(fs::exists(checkpoint));
}

TEST(CliArguments, CheckpointOfAnEarlierRunNeedsResumeOrOverwrite) {
  TempDir dir;
  const std::string checkpoint = dir / "run.ckpt";
  std::ofstream(checkpoint) << "an earlier run";
  Result r = run({"train", "--checkpoint", checkpoint.c_str(), "--data-dir", "/"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("already exists: pass --resume to continue that run, or --overwrite"));
  // --overwrite passes that check (the empty data directory stops the run before it writes).
  EXPECT_THAT(run({"train", "--checkpoint", checkpoint.c_str(), "--overwrite", "--data-dir", "/"}).err,
              ::testing::Not(HasSubstr("already exists")));
  EXPECT_THAT(
      run({"train", "--checkpoint", checkpoint.c_str(), "--overwrite", "--resume", "--data-dir", "/"}).err,
      HasSubstr("choose one"));
  EXPECT_EQ(read_file(checkpoint), "an earlier run");
}

TEST(CliArguments, UnwritableCheckpointPathExitsWith2BeforeTraining) {
  // Refused before the data are even loaded (--data-dir / holds none), not after an epoch.
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  expect_train_refuses_paths("--checkpoint", {{dir / "", "is a directory"},
                                              {dir / "no_such_dir/run.ckpt", "does not exist"},
                                              {dir / "pipe", "a FIFO"}});
}

TEST(CliArguments, PlotMustBeNamedSvgOrPng) {
  Result r = run({"train", "--plot", "curves.jpg", "--data-dir", "/"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("must end in .svg (SVG) or .png (PNG image)"));
}

TEST(CliArguments, HelpExitsWith0AndListsTheOptions) {
  Result r = run({"train", "--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* option :
       {"--model", "--epochs", "--batch-size", "--lr", "--checkpoint", "--resume", "--plot", "--eager"})
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

TEST(CliExamples, FindsTheSeedProgramsInItsBuildTree) {
  tf::testing::TempDir build;
  fs::create_directories(build.path() / "examples" / "seeds");
  EXPECT_EQ(cli::examples_dir_beside(build.path() / "tools" / "cli" / "tapeflow"),
            (build.path() / "examples" / "seeds").string());
}

// The layout of cmake/install.cmake with the default GNUInstallDirs (the Debian package's /usr).
TEST(CliExamples, AnInstalledProgramFindsTheInstalledSeedPrograms) {
  tf::testing::TempDir prefix;
  fs::create_directories(prefix.path() / "bin");
  fs::create_directories(prefix.path() / "libexec" / "tapeflow" / "examples");
  EXPECT_EQ(cli::examples_dir_beside(prefix.path() / "bin" / "tapeflow"),
            (prefix.path() / "libexec" / "tapeflow" / "examples").string());
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

TEST(CliProgress, TerminalLineFitsTheTerminalWidth) {
  // A line as long as the terminal wraps, and '\r' then redraws only its second half: every
  // line leaves the last column free. The bar shrinks first, then the fields go from the end.
  const std::string full = cli::ProgressBar::line(3, 10, 469, 1875, 0.51234, 0.81641, 23104.4, true);
  EXPECT_EQ(cli::ProgressBar::line(3, 10, 469, 1875, 0.51234, 0.81641, 23104.4, true, 200), full);
  for (int columns : {80, 70, 60, 50, 40, 30, 20, 10, 2}) {
    const std::string line =
        cli::ProgressBar::line(3, 10, 469, 1875, 0.51234, 0.81641, 23104.4, true, columns);
    EXPECT_LT(line.size(), static_cast<std::size_t>(columns)) << columns << ": " << line;
    EXPECT_EQ(full.substr(0, std::min<std::size_t>(line.size(), 10)), line.substr(0, 10)) << line;
  }
  EXPECT_EQ(cli::ProgressBar::line(3, 10, 469, 1875, 0.51234, 0.81641, 23104.4, true, 70),
            "epoch 3/10 [===>        ]  469/1875 loss 0.5123 acc 0.8164 23104 ex/s");
  EXPECT_EQ(cli::ProgressBar::line(3, 10, 469, 1875, 0.51234, 0.81641, 23104.4, true, 60),
            "epoch 3/10  469/1875 loss 0.5123 acc 0.8164 23104 ex/s");
  EXPECT_EQ(cli::ProgressBar::line(3, 10, 469, 1875, 0.51234, 0.81641, 23104.4, true, 40),
            "epoch 3/10  469/1875 loss 0.5123");
}

TEST(CliProgress, TerminalBarRedrawsWithinTheGivenWidth) {
  std::ostringstream out;
  cli::ProgressBar bar(out, /*redraw=*/true, 1, 1, 3, /*columns=*/30);
  for (int i = 1; i <= 3; ++i) bar.update(i, i, 1.0, 0.5);
  bar.finish();
  std::string s = out.str();
  std::size_t lines = 0;
  for (std::size_t at = s.find('\r'); at != std::string::npos; at = s.find('\r', at + 1), ++lines) {
    const std::size_t end = s.find("\x1b[K", at);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LT(end - at - 1, 30u) << s.substr(at + 1, end - at - 1);
  }
  EXPECT_GE(lines, 1u);
}

TEST(CliProgress, TerminalColumnsFallBackToTheColumnsVariableThen80) {
  // /dev/null is no terminal: TIOCGWINSZ fails on it.
  const int fd = ::open("/dev/null", O_WRONLY);
  ASSERT_GE(fd, 0);
  const char* saved = std::getenv("COLUMNS");
  const std::string saved_value = saved ? saved : "";
  ::setenv("COLUMNS", "123", 1);
  EXPECT_EQ(cli::terminal_columns(fd), 123);
  ::setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(cli::terminal_columns(fd), 80);
  ::unsetenv("COLUMNS");
  EXPECT_EQ(cli::terminal_columns(fd), 80);
  if (saved) ::setenv("COLUMNS", saved_value.c_str(), 1);
  ::close(fd);
}

/// Runs `body` with `signal`'s disposition set to `disposition`, then restores the process's own.
void with_disposition(int signal, void (*disposition)(int), const std::function<void()>& body) {
  struct sigaction saved {};
  struct sigaction set {};
  set.sa_handler = disposition;
  sigemptyset(&set.sa_mask);
  ASSERT_EQ(::sigaction(signal, &set, &saved), 0);
  body();
  ::sigaction(signal, &saved, nullptr);
}

TEST(CliInterrupt, FirstSigintOnlySetsTheFlagAndTheHandlerIsRestoredAfter) {
  // SIG_DFL first: a test binary started in the background by a shell ignores SIGINT.
  with_disposition(SIGINT, SIG_DFL, [] {
    {
      const cli::InterruptHandler handler;
      EXPECT_EQ(cli::InterruptHandler::count().load(), 0);
      ASSERT_EQ(::raise(SIGINT), 0);  // the process goes on
      EXPECT_EQ(cli::InterruptHandler::count().load(), 1);
    }
    struct sigaction after {};
    ASSERT_EQ(::sigaction(SIGINT, nullptr, &after), 0);
    EXPECT_EQ(after.sa_handler, SIG_DFL);
  });
}

TEST(CliInterrupt, Sigusr1AsksForTheStopAFirstSigintAsksFor) {
  // mpirun passes SIGUSR1 on to the ranks of its job: the way to stop one job's ranks cleanly.
  with_disposition(SIGUSR1, SIG_DFL, [] {
    {
      const cli::InterruptHandler handler;
      ASSERT_EQ(::raise(SIGUSR1), 0);  // the process goes on (SIGUSR1's default would end it)
      EXPECT_EQ(cli::InterruptHandler::count().load(), 1);
    }
    struct sigaction after {};
    ASSERT_EQ(::sigaction(SIGUSR1, nullptr, &after), 0);
    EXPECT_EQ(after.sa_handler, SIG_DFL);
  });
}

TEST(CliInterrupt, AnIgnoredSigintStaysIgnored) {
  // nohup-style and background runs ignore SIGINT: the tool keeps it so.
  with_disposition(SIGINT, SIG_IGN, [] {
    const cli::InterruptHandler handler;
    ASSERT_EQ(::raise(SIGINT), 0);
    EXPECT_EQ(cli::InterruptHandler::count().load(), 0);
    struct sigaction now {};
    ASSERT_EQ(::sigaction(SIGINT, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, SIG_IGN);
  });
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

/// The labels of the ticks of one axis ("xtick" or "ytick") of every panel, in order.
std::vector<std::string> tick_labels(const std::string& svg, const std::string& axis) {
  const std::regex label("<text class=\"" + axis + "\"[^>]*>([^<]*)</text>");
  std::vector<std::string> labels;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it)
    labels.push_back((*it)[1]);
  return labels;
}

TEST(CliPlot, OneEpochHasOneTickAtThatEpoch) {
  const cli::History h = {{1, 0.6, 0.78, 0.5, 0.82, 10}};
  EXPECT_EQ(tick_labels(cli::training_svg(h, "t"), "xtick"), (std::vector<std::string>{"1", "1"}));
}

TEST(CliPlot, EpochTicksAreWholeMultiplesOfTheirStep) {
  cli::History h;
  for (std::int64_t e = 1; e <= 12; ++e) h.push_back({e, 1.0 / e, 0.5, 1.0 / e, 0.5, 1});
  const std::vector<std::string> x = tick_labels(cli::training_svg(h, "t"), "xtick");
  EXPECT_EQ(std::vector<std::string>(x.begin(), x.begin() + 6),
            (std::vector<std::string>{"2", "4", "6", "8", "10", "12"}));
}

TEST(CliPlot, ValueTickLabelsAreMultiplesOfTheStepWithItsDecimals) {
  // Losses 1.3 to 2.8 get a step of 0.5, accuracies 0.81 to 0.83 a step of 0.005 (with the 5%
  // margins): every label of a panel has its step's decimals.
  const cli::History h = {{1, 2.8, 0.81, 2.0, 0.82, 1}, {2, 1.3, 0.83, 1.8, 0.825, 1}};
  EXPECT_EQ(tick_labels(cli::training_svg(h, "t"), "ytick"),
            (std::vector<std::string>{"1.5", "2.0", "2.5", "0.810", "0.815", "0.820", "0.825", "0.830"}));
}

std::uint32_t big_endian_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

TEST(CliPlot, PngPathGetsAPngImageOfTheCurvesAndSvgPathSvg) {
  TempDir dir;
  cli::History h = {{1, 0.6, 0.78, 0.5, 0.82, 10}, {2, 0.4, 0.85, 0.42, 0.85, 10}};
  cli::write_training_plot(dir / "curves.png", h, "t");
  cli::write_training_plot(dir / "curves.SVG", h, "t");
  const std::string png = read_file(dir / "curves.png");
  ASSERT_GT(png.size(), 33u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));  // the PNG signature
  EXPECT_EQ(png.substr(12, 4), "IHDR");                              // the first chunk
  // Twice the SVG's 840 x 350 user units.
  EXPECT_EQ(big_endian_u32(png, 16), 1680u);
  EXPECT_EQ(big_endian_u32(png, 20), 700u);
  EXPECT_EQ(read_file(dir / "curves.SVG"), cli::training_svg(h, "t"));
  EXPECT_THROW(cli::write_training_plot(dir / "curves.jpg", h, "t"), tf::InvalidArgumentError);
  EXPECT_FALSE(fs::exists(dir / "curves.jpg"));
}

// --- Models ---------------------------------------------------------------------------------

TEST(CliModels, StepSeededDropoutDrawsTheMasksOfItsEpochAndStepWhateverCameBefore) {
  // start_step reseeds the inner Dropout by assigning its state variable: the masks of (epoch,
  // step) do not depend on the steps run before, nor on which layer object runs them.
  cli::StepSeededDropout a(0.5, 3), b(0.5, 3);
  const tf::Tensor x = tf::ones({64});
  auto mask = [&](cli::StepSeededDropout& d, std::int64_t epoch, std::int64_t step) {
    d.start_step(epoch, step);
    return d.call(x, true).to_vector<float>();
  };
  const auto a12 = mask(a, 1, 2);
  EXPECT_NE(mask(a, 1, 3), a12);
  EXPECT_NE(mask(a, 2, 2), a12);
  EXPECT_EQ(mask(a, 1, 2), a12);
  EXPECT_EQ(mask(b, 1, 2), a12);
  EXPECT_EQ(x.to_vector<float>(), a.call(x, false).to_vector<float>());
  EXPECT_TRUE(a.variables().empty());
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
  tf::optimizers::Adam opt(1e-3);
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
  for (std::size_t at = report.find(" ok\n"); at != std::string::npos; at = report.find(" ok\n", at + 1))
    ++ok_rows;
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

TEST(CliTrain, TracedAndEagerStepsEndWithTheSameCheckpointAndHistoryBitwise) {
  // `--eager` runs the step op by op; by default it runs through tf::function. Two epochs of 70
  // synthetic examples in batches of 32 (a smaller last batch: a second trace), with the CNN's
  // dropout: the same variables, optimizer state and losses, bit for bit.
  const tf::data::FashionMnist ds = synthetic_dataset(70);
  for (const char* model : {"mlp", "cnn"}) {
    SCOPED_TRACE(model);
    TempDir dir;
    std::map<std::string, std::string> checkpoints[2];
    cli::History histories[2];
    std::string outputs[2];
    for (const bool eager : {false, true}) {
      cli::TrainOptions o;
      o.model = model;
      o.epochs = 2;
      o.batch_size = 32;
      o.dataset = &ds;
      o.eager = eager;
      o.checkpoint = dir / (eager ? "eager.ckpt" : "traced.ckpt");
      std::ostringstream out, log;
      histories[eager] = cli::train(o, out, log, false);
      checkpoints[eager] = checkpoint_bytes(o.checkpoint);
      outputs[eager] = out.str();
    }
    ASSERT_NO_FATAL_FAILURE(expect_same_but_history(checkpoints[0], checkpoints[1],
                                                    "differs between the traced and the eager step"));
    ASSERT_EQ(histories[0].size(), 2u);
    ASSERT_EQ(histories[1].size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) {
      EXPECT_EQ(histories[0][e].train_loss, histories[1][e].train_loss) << "epoch " << e + 1;
      EXPECT_EQ(histories[0][e].train_accuracy, histories[1][e].train_accuracy) << "epoch " << e + 1;
      EXPECT_EQ(histories[0][e].test_loss, histories[1][e].test_loss) << "epoch " << e + 1;
    }
    EXPECT_NE(histories[0][0].train_loss, histories[0][1].train_loss);
    EXPECT_THAT(outputs[0], HasSubstr("step: traced with tf::function, 2 traces (one per batch shape) in "));
    EXPECT_THAT(outputs[0], HasSubstr(" ms; --eager runs it op by op\n"));
    EXPECT_THAT(outputs[1], ::testing::Not(HasSubstr("tf::function")));
  }
}

TEST(CliTrain, ResumeContinuesTheEpochCounterAndMatchesAnUninterruptedRunBitwise) {
  REQUIRE_DATASET();
  for_each_model_and_step([](const char* model, bool eager, const TempDir& dir) {
    // Two epochs in one go...
    const cli::TrainOptions straight =
        train_straight(model, eager, model == std::string("cnn") ? 64 : 256, dir / "straight.ckpt");
    // ... and one epoch, then a resume for the second.
    std::ostringstream out, log;
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
    ASSERT_NO_FATAL_FAILURE(expect_same_but_history(a, b, "differs after resuming"));
    EXPECT_TRUE(a.count("optimizer/iterations"));
    std::int64_t epoch;
    std::memcpy(&epoch, b["train/epoch"].data(), sizeof epoch);
    EXPECT_EQ(epoch, 2);
  });
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

namespace {

/// Trains the default model on `ds` (70 synthetic examples: three steps an epoch, the last one
/// smaller) with `configure` applied to the options; returns the history and what it printed.
std::pair<cli::History, std::string> train_in_batches_of_32(
    const tf::data::FashionMnist& ds, std::int64_t epochs, bool resume, const std::string& checkpoint,
    const std::function<void(cli::TrainOptions&)>& configure) {
  cli::TrainOptions o;
  o.epochs = epochs;
  o.batch_size = 32;
  o.dataset = &ds;
  o.resume = resume;
  o.checkpoint = checkpoint;
  configure(o);
  std::ostringstream out, log;
  cli::History h = cli::train(o, out, log, false);
  return {h, out.str()};
}

/// One epoch and a resume (`train(epochs, resume, checkpoint)` into checkpoint `resumed`) end
/// where two epochs in one go ended (`two_epochs`, whose checkpoint is `whole`), bitwise; resuming
/// with `--<flag> <other>` is refused, naming the value the run was trained with (`trained`).
template <class Train>
void expect_resume_ends_as_one_run(const Train& train, const cli::History& two_epochs,
                                   const std::string& whole, const std::string& resumed,
                                   const std::string& flag, const std::string& trained,
                                   const std::string& other) {
  train(1, false, resumed);
  EXPECT_EQ(train(2, true, resumed).first[1].train_loss, two_epochs[1].train_loss);
  ASSERT_NO_FATAL_FAILURE(expect_same_but_history(checkpoint_bytes(whole), checkpoint_bytes(resumed),
                                                  "differs after resuming with --" + flag));
  const std::string option = "--" + flag;
  Result r = run({"train", "--resume", "--checkpoint", resumed.c_str(), option.c_str(), other.c_str(),
                  "--data-dir", "/", "--epochs", "3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("it was trained with " + option + " " + trained + ", not " + other));
}

}  // namespace

TEST(CliTrain, LearningRateDecayLowersEachEpochsRateAndResumesBitwise) {
  // 70 synthetic examples in batches of 32: three steps an epoch, the last one smaller.
  const tf::data::FashionMnist ds = synthetic_dataset(70);
  TempDir dir;
  auto train = [&](double lr_decay, std::int64_t epochs, bool resume, const std::string& checkpoint) {
    return train_in_batches_of_32(ds, epochs, resume, checkpoint,
                                  [&](cli::TrainOptions& o) { o.lr_decay = lr_decay; });
  };
  const auto [constant, constant_out] = train(1.0, 2, false, dir / "constant.ckpt");
  const auto [decayed, decayed_out] = train(0.5, 2, false, dir / "decayed.ckpt");
  EXPECT_THAT(decayed_out, HasSubstr("adam lr 0.001 x0.5 per epoch, batch 32"));
  EXPECT_THAT(constant_out, HasSubstr("adam lr 0.001, batch 32"));
  // The first epoch runs at --lr either way; the second at half of it.
  EXPECT_EQ(decayed[0].train_loss, constant[0].train_loss);
  EXPECT_NE(decayed[1].train_loss, constant[1].train_loss);
  // The rate is a schedule of the optimizer's step count, which the checkpoint holds: one epoch,
  // then a resume, ends where two epochs in one go end. A different decay on resume would change
  // the rates the checkpoint was trained with.
  expect_resume_ends_as_one_run(
      [&](std::int64_t epochs, bool resume, const std::string& c) { return train(0.5, epochs, resume, c); },
      decayed, dir / "decayed.ckpt", dir / "resumed.ckpt", "lr-decay", "0.5", "0.9");
}

TEST(CliTrain, FlipAugmentationMirrorsBatchesReproduciblyAndResumesBitwise) {
  const tf::data::FashionMnist ds = synthetic_dataset(70);
  TempDir dir;
  auto train = [&](const std::string& augment, std::int64_t epochs, bool resume,
                   const std::string& checkpoint) {
    return train_in_batches_of_32(ds, epochs, resume, checkpoint,
                                  [&](cli::TrainOptions& o) { o.augment = augment; });
  };
  const auto [plain, plain_out] = train("none", 2, false, dir / "plain.ckpt");
  const auto [flipped, flipped_out] = train("flip", 2, false, dir / "flipped.ckpt");
  EXPECT_THAT(flipped_out, HasSubstr("batch 32, random flips, 70 train"));
  EXPECT_THAT(plain_out, HasSubstr("batch 32, 70 train"));
  EXPECT_NE(flipped[0].train_loss, plain[0].train_loss);  // it trained on other images
  // The flips are drawn from the run's seed, epoch and step: the same run gives the same bits,
  // and one epoch and a resume end where two epochs in one go end.
  EXPECT_EQ(train("flip", 2, false, dir / "again.ckpt").first[1].train_loss, flipped[1].train_loss);
  expect_resume_ends_as_one_run([&](std::int64_t epochs, bool resume,
                                    const std::string& c) { return train("flip", epochs, resume, c); },
                                flipped, dir / "flipped.ckpt", dir / "resumed.ckpt", "augment", "flip",
                                "none");
  Result bad = run({"train", "--augment", "rotate"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("--augment"));
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

TEST(CliTrain, EmptyTrainingSetIsAUsageError) {
  REQUIRE_DATASET();
  tf::data::FashionMnist empty = dataset();
  empty.train_images = tf::slice(empty.train_images, {0, 0, 0, 0}, {0, -1, -1, -1});
  empty.train_labels = tf::slice(empty.train_labels, {0}, {0});
  cli::TrainOptions o = quick("mlp", 1, 0);
  o.dataset = &empty;
  std::ostringstream out, log;
  EXPECT_THAT([&] { cli::train(o, out, log, false); },
              ::testing::ThrowsMessage<cli::UsageError>(HasSubstr("the training set is empty")));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("train loss")));
}

TEST(CliTrain, ChangedLearningRateOnResumeSaysWhichValueIsUsed) {
  REQUIRE_DATASET();
  TempDir dir;
  cli::TrainOptions o = quick("mlp", 1, 64);
  o.checkpoint = dir / "run.ckpt";
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  o.epochs = 2;
  o.resume = true;
  o.learning_rate = 0.01;
  o.learning_rate_given = true;
  std::ostringstream resumed;
  cli::train(o, resumed, log, false);
  EXPECT_THAT(resumed.str(), HasSubstr("note: using --lr 0.01, not the checkpoint's learning rate 0.001"));
  EXPECT_THAT(resumed.str(), HasSubstr("adam lr 0.01,"));
}

TEST(CliTrain, InterruptedRunSavesItsStepAndResumesToTheUninterruptedResultBitwise) {
  REQUIRE_DATASET();
  for_each_model_and_step([](const char* model, bool eager, const TempDir& dir) {
    const cli::TrainOptions straight =
        train_straight(model, eager, model == std::string("cnn") ? 96 : 256, dir / "straight.ckpt");
    std::ostringstream out, log;
    // Ctrl-C before the first step: the run stops after it, mid-epoch, and saves that state.
    const std::atomic<int> interrupted{1};
    cli::TrainOptions first = straight;
    first.checkpoint = dir / "interrupted.ckpt";
    first.stop_requested = &interrupted;
    const std::int64_t steps = (straight.limit + 31) / 32;
    EXPECT_THAT([&] { cli::train(first, out, log, false); },
                ::testing::ThrowsMessage<cli::Interrupted>(::testing::AllOf(
                    HasSubstr(fmt::format("interrupted after step 1/{} of epoch 1/2", steps)),
                    HasSubstr("tapeflow train --resume --checkpoint " + first.checkpoint + " --epochs 2"))));
    cli::TrainOptions second = first;
    second.stop_requested = nullptr;
    second.resume = true;
    std::ostringstream resumed_out;
    cli::History h = cli::train(second, resumed_out, log, false);
    EXPECT_THAT(resumed_out.str(), HasSubstr(fmt::format("after step 1/{} of epoch 1", steps)));
    ASSERT_EQ(h.size(), 2u);
    ASSERT_NO_FATAL_FAILURE(expect_same_but_history(checkpoint_bytes(straight.checkpoint),
                                                    checkpoint_bytes(second.checkpoint),
                                                    "differs after resuming"));
  });
}

TEST(CliTrain, InterruptWithoutCheckpointSaysNothingWasSaved) {
  REQUIRE_DATASET();
  const std::atomic<int> interrupted{1};
  cli::TrainOptions o = quick("mlp", 1, 64);
  o.stop_requested = &interrupted;
  std::ostringstream out, log;
  EXPECT_THAT([&] { cli::train(o, out, log, false); },
              ::testing::ThrowsMessage<cli::Interrupted>(HasSubstr("nothing was saved")));
}

/// One epoch of the MLP on 64 synthetic images, checkpointed at `checkpoint`: a run to resume.
cli::TrainOptions one_synthetic_epoch(const tf::data::FashionMnist& ds, const std::string& checkpoint) {
  cli::TrainOptions o;
  o.epochs = 1;
  o.batch_size = 32;
  o.dataset = &ds;
  o.checkpoint = checkpoint;
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  return o;
}

/// What cli::train ends with: "trained", "usage error" or the other exception's message.
std::string outcome_of_training(const cli::TrainOptions& o) {
  try {
    std::ostringstream out, log;
    cli::train(o, out, log, false);
    return "trained";
  } catch (const cli::UsageError&) {
    return "usage error";
  } catch (const std::exception& e) {
    return std::string("not a usage error: ") + e.what();
  }
}

TEST(CliTrain, ResumingWithAnotherPrecisionExitsWith2AndWithoutOneKeepsTheCheckpoints) {
  TempDir dir;
  const tf::data::FashionMnist ds = synthetic_dataset(64);
  cli::TrainOptions o;
  o.epochs = 1;
  o.batch_size = 32;
  o.dataset = &ds;
  o.precision = "mixed_bfloat16";
  o.checkpoint = dir / "mixed.ckpt";
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  cli::TrainOptions resume = o;
  resume.resume = true;
  resume.epochs = 2;
  resume.precision = "float32";
  resume.precision_given = true;
  EXPECT_THAT([&] { cli::train(resume, out, log, false); },
              ::testing::ThrowsMessage<cli::UsageError>(
                  HasSubstr("it was trained with --precision mixed_bfloat16, not float32")));
  resume.precision_given = false;
  std::ostringstream resumed;
  cli::train(resume, resumed, log, false);
  EXPECT_THAT(resumed.str(), HasSubstr(", mixed_bfloat16, OpenBLAS"));
}

TEST(CliTrain, PrintsWhereItWroteThePlotAndTheCheckpoint) {
  TempDir dir;
  const tf::data::FashionMnist ds = synthetic_dataset(64);
  cli::TrainOptions o;
  o.epochs = 1;
  o.batch_size = 32;
  o.dataset = &ds;
  o.checkpoint = dir / "run.ckpt";
  o.plot = dir / "curves.svg";
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  EXPECT_THAT(out.str(), HasSubstr(fmt::format("\nplot: {}  checkpoint: {}\n", o.plot, o.checkpoint)));
  EXPECT_TRUE(fs::exists(o.plot));
  EXPECT_TRUE(fs::exists(o.checkpoint));
}

TEST(CliTrain, EveryKindOfBadCheckpointIsAUsageError) {
  TempDir dir;
  const tf::data::FashionMnist ds = synthetic_dataset(64);
  const cli::TrainOptions trained = one_synthetic_epoch(ds, dir / "run.ckpt");
  const std::vector<unsigned char> good = tf::testing::read_bytes(trained.checkpoint);
  std::vector<std::pair<std::string, std::vector<unsigned char>>> bad;
  for (std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{12}, std::size_t{40}, good.size() / 2, good.size() - 1})
    bad.emplace_back(
        fmt::format("cut_{}", size),
        std::vector<unsigned char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)));
  for (std::size_t at : {std::size_t{0}, std::size_t{6}, std::size_t{10}, std::size_t{20}, std::size_t{64},
                         std::size_t{300}, good.size() / 2, good.size() - 1}) {
    std::vector<unsigned char> flipped = good;
    flipped[at] ^= 0x04;
    bad.emplace_back(fmt::format("flipped_{}", at), flipped);
  }
  bad.emplace_back("text", std::vector<unsigned char>{'c', 'k', 'p', 't'});
  for (const auto& [name, bytes] : bad) {
    cli::TrainOptions resume = trained;
    resume.checkpoint = dir / (name + ".ckpt");
    tf::testing::write_bytes(resume.checkpoint, bytes);
    resume.resume = true;
    resume.epochs = 2;
    EXPECT_EQ(outcome_of_training(resume), "usage error") << name;
  }
  // A function file, and a checkpoint whose train/ entries are out of range.
  cli::TrainOptions exported = trained;
  exported.checkpoint = dir / "model.tfn";
  exported.export_path = exported.checkpoint;
  exported.checkpoint = "";
  std::ostringstream out, log;
  cli::train(exported, out, log, false);
  cli::TrainOptions resume = trained;
  resume.resume = true;
  resume.checkpoint = dir / "model.tfn";
  EXPECT_EQ(outcome_of_training(resume), "usage error") << "a function file";
  for (const auto& [entry, value] :
       {std::pair{"train/model", std::int64_t{7}}, std::pair{"train/precision", std::int64_t{5}},
        std::pair{"train/epoch", std::int64_t{-1}}, std::pair{"train/step", std::int64_t{1} << 40}}) {
    tf::NamedVariables vars;
    for (const auto& e : tf::list_checkpoint(trained.checkpoint))
      vars.emplace_back(e.name, tf::Variable(tf::zeros(e.shape, e.dtype)));
    tf::restore_checkpoint(trained.checkpoint, vars);
    for (auto& [name, var] : vars)
      if (name == entry) var.assign(tf::constant(value));
    resume.checkpoint = dir / "forged.ckpt";
    tf::save_checkpoint(resume.checkpoint, vars);
    EXPECT_EQ(outcome_of_training(resume), "usage error") << entry;
  }
}

#endif  // TAPEFLOW_HAVE_CLI
