// tools/cli's language models (`tapeflow train --model char-lstm|char-transformer`, `tapeflow
// sample`): training lowers the validation loss, resuming is bitwise exact, the checkpoint alone
// rebuilds the model for sampling, sampling is reproducible and follows the temperature, and bad
// text, prompts, options and checkpoints exit with status 2 and say what is wrong.
#ifdef TAPEFLOW_HAVE_CLI

#include "train_text.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "run_cli.h"
#include "sample.h"
#include "support/checkpoint_bytes.h"
#include "support/close.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"
#include "text_models.h"
#include "train.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;
using ::testing::HasSubstr;

namespace {

/// A text with structure to learn: short sentences over a few words, one per line.
std::string sentences(int count) {
  const char* subjects[] = {"the cat", "a dog", "my friend", "the old man"};
  const char* verbs[] = {"sees", "likes", "finds", "wants"};
  const char* objects[] = {"the ball.", "a red apple.", "the sea.", "some bread."};
  std::string text;
  for (int i = 0; i < count; ++i)
    text += std::string(subjects[i % 4]) + " " + verbs[(i / 4) % 4] + " " + objects[(i / 16) % 4] + "\n";
  return text;
}

std::string write(const tf::testing::TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// A quick run of `model` on `text`: sequences of 16 characters, batches of 16.
cli::TrainOptions quick(const std::string& model, const std::string& text, std::int64_t epochs) {
  cli::TrainOptions o;
  o.model = model;
  o.text = {text};
  o.epochs = epochs;
  o.batch_size = 16;
  o.sequence_length = 16;
  o.learning_rate = 0.005;
  o.learning_rate_given = true;
  return o;
}

cli::History train(const cli::TrainOptions& o) {
  std::ostringstream out, log;
  return cli::train(o, out, log, false);
}

using Result = tf::testing::CliResult;
const auto run = tf::testing::run_cli;

std::string sample(const std::string& checkpoint, const std::string& prompt, std::int64_t length,
                   double temperature, std::uint64_t seed = 1) {
  std::ostringstream out;
  cli::sample({.checkpoint = checkpoint,
               .prompt = prompt,
               .length = length,
               .temperature = temperature,
               .seed = seed},
              out);
  return out.str();
}

}  // namespace

TEST(TextModels, BothModelsGiveLogitsForEveryStep) {
  for (const std::string& kind : cli::text_model_names()) {
    SCOPED_TRACE(kind);
    const auto model = cli::make_text_model(kind, /*vocabulary=*/30, /*max_steps=*/16, /*seed=*/1);
    const tf::Tensor ids = tf::constant(std::vector<std::int32_t>(2 * 16, 7), tf::Shape({2, 16}));
    EXPECT_EQ(model->call(ids, false).shape(), (tf::Shape{2, 16, 30}));
    EXPECT_EQ(model->call(ids, false).dtype(), tf::DType::Float32);
  }
  EXPECT_THAT([] { cli::make_text_model("char-gru", 30, 16, 1); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("char-lstm or char-transformer")));
}

TEST(TextModels, TransformerSeesOnlyEarlierCharacters) {
  // Causal attention: changing the last character changes no earlier step's logits.
  const auto model = cli::make_text_model("char-transformer", 30, 16, 1);
  std::vector<std::int32_t> ids(16);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i % 30);
  const tf::Tensor a = model->call(tf::constant(ids, tf::Shape({1, 16})), false);
  ids.back() = 29;
  const tf::Tensor b = model->call(tf::constant(ids, tf::Shape({1, 16})), false);
  EXPECT_EQ(tf::slice(a, {0, 0, 0}, {1, 15, 30}).to_vector<float>(),
            tf::slice(b, {0, 0, 0}, {1, 15, 30}).to_vector<float>());
  EXPECT_NE(tf::slice(a, {0, 15, 0}, {1, 1, 30}).to_vector<float>(),
            tf::slice(b, {0, 15, 0}, {1, 1, 30}).to_vector<float>());
}

TEST(TrainText, ValidationLossFallsForBothModels) {
  tf::testing::TempDir dir;
  const std::string text = write(dir, "sentences.txt", sentences(200));
  for (const std::string& kind : cli::text_model_names()) {
    SCOPED_TRACE(kind);
    const cli::History h = train(quick(kind, text, 4));
    ASSERT_EQ(h.size(), 4u);
    // The vocabulary has 23 characters: a model that learned nothing has loss ln 23 = 3.14.
    EXPECT_LT(h.back().test_loss, h.front().test_loss);
    EXPECT_LT(h.back().test_loss, 2.0);
  }
}

TEST(TrainText, PrintsPerplexityAndTheSampleCommand) {
  tf::testing::TempDir dir;
  cli::TrainOptions o = quick("char-lstm", write(dir, "sentences.txt", sentences(100)), 1);
  o.checkpoint = dir / "lm.ckpt";
  std::ostringstream out, log;
  const cli::History h = cli::train(o, out, log, false);
  EXPECT_THAT(out.str(), HasSubstr("char-lstm"));
  EXPECT_THAT(out.str(), HasSubstr(fmt::format("perplexity {:.2f}", std::exp(h.back().test_loss))));
  EXPECT_THAT(out.str(), HasSubstr("tapeflow sample " + o.checkpoint));
}

TEST(TrainText, ResumingIsBitwiseTheUninterruptedRun) {
  tf::testing::TempDir dir;
  const std::string text = write(dir, "sentences.txt", sentences(100));
  for (const std::string& kind : cli::text_model_names()) {
    SCOPED_TRACE(kind);
    cli::TrainOptions straight = quick(kind, text, 2);
    straight.checkpoint = dir / (kind + "-straight.ckpt");
    train(straight);
    cli::TrainOptions first = quick(kind, text, 1);
    first.checkpoint = dir / (kind + "-resumed.ckpt");
    train(first);
    cli::TrainOptions rest = first;
    rest.epochs = 2;
    rest.resume = true;
    rest.learning_rate_given = false;
    rest.model = cli::TrainOptions{}.model;  // no --model: the checkpoint says which
    const cli::History h = train(rest);
    EXPECT_EQ(h.size(), 2u);
    auto a = tf::testing::checkpoint_bytes(straight.checkpoint);
    auto b = tf::testing::checkpoint_bytes(rest.checkpoint);
    a.erase("text/history");  // holds each epoch's wall time
    b.erase("text/history");
    EXPECT_EQ(a, b);
  }
}

TEST(TrainText, ResumingRefusesAnotherTextOrOption) {
  tf::testing::TempDir dir;
  cli::TrainOptions o = quick("char-lstm", write(dir, "a.txt", sentences(100)), 1);
  o.checkpoint = dir / "lm.ckpt";
  train(o);
  cli::TrainOptions other_text = o;
  other_text.resume = true;
  other_text.epochs = 2;
  other_text.text = {write(dir, "b.txt", sentences(120))};
  EXPECT_THAT([&] { train(other_text); },
              ::testing::ThrowsMessage<cli::UsageError>(HasSubstr("pass the files it was trained on")));
  cli::TrainOptions other_length = o;
  other_length.resume = true;
  other_length.epochs = 2;
  other_length.sequence_length = 32;
  other_length.sequence_length_given = true;
  EXPECT_THAT([&] { train(other_length); },
              ::testing::ThrowsMessage<cli::UsageError>(HasSubstr("--sequence-length 16, not 32")));
}

// (A stop after a finished epoch, which the checkpoint keeps: tools/cli/interrupt_text_test.sh.)
TEST(TrainText, StopRequestedInTheFirstEpochSavesNothing) {
  tf::testing::TempDir dir;
  cli::TrainOptions o = quick("char-lstm", write(dir, "sentences.txt", sentences(200)), 3);
  o.checkpoint = dir / "lm.ckpt";
  std::atomic<int> stop{0};
  o.stop_requested = &stop;
  // A stop asked for during the first epoch: the epoch ends early and nothing is saved.
  stop = 1;
  EXPECT_THAT([&] { train(o); }, ::testing::ThrowsMessage<cli::Interrupted>(HasSubstr("nothing was saved")));
  EXPECT_FALSE(std::filesystem::exists(o.checkpoint));
}

TEST(TrainText, MixedPrecisionTrains) {
  tf::testing::TempDir dir;
  cli::TrainOptions o = quick("char-transformer", write(dir, "sentences.txt", sentences(100)), 2);
  o.precision = "mixed_bfloat16";
  const cli::History h = train(o);
  EXPECT_LT(h.back().test_loss, h.front().test_loss);
}

TEST(TrainText, BadTextIsAUsageErrorNamingTheFile) {
  tf::testing::TempDir dir;
  const std::string not_utf8 = write(dir, "latin1.txt", "caf\xE9 au lait\n");
  EXPECT_THAT(
      [&] { train(quick("char-lstm", not_utf8, 1)); },
      ::testing::ThrowsMessage<cli::UsageError>(AllOf(HasSubstr("latin1.txt"), HasSubstr("byte offset 3"))));
  const std::string short_text = write(dir, "short.txt", "tiny\n");
  EXPECT_THAT(
      [&] { train(quick("char-lstm", short_text, 1)); },
      ::testing::ThrowsMessage<cli::UsageError>(AllOf(HasSubstr("short.txt"), HasSubstr("5 characters"))));
  EXPECT_THAT([&] { train(quick("char-lstm", dir / "missing.txt", 1)); },
              ::testing::ThrowsMessage<cli::UsageError>(HasSubstr("missing.txt")));
}

TEST(TrainText, ImageOptionsAndBadTextOptionsAreRefused) {
  const Result augment = run({"train", "--model", "char-lstm", "--augment", "flip"});
  EXPECT_EQ(augment.status, 2);
  EXPECT_THAT(augment.err, HasSubstr("--augment applies to the image models"));
  const Result ranks = run({"train", "--model", "char-transformer", "--ranks", "2"});
  EXPECT_EQ(ranks.status, 2);
  EXPECT_THAT(ranks.err, HasSubstr("tapeflow does not start ranks itself; run `mpirun -np 2 tapeflow train"));
  const Result zero_length = run({"train", "--model", "char-lstm", "--sequence-length", "0"});
  EXPECT_EQ(zero_length.status, 2);
}

TEST(TrainText, ExportWritesTheInferenceOfOneSequence) {
  tf::testing::TempDir dir;
  for (const std::string& kind : cli::text_model_names()) {
    SCOPED_TRACE(kind);
    cli::TrainOptions o = quick(kind, write(dir, "sentences.txt", sentences(100)), 1);
    o.checkpoint = dir / (kind + ".ckpt");
    o.export_path = dir / (kind + ".tfn");
    // ONNX only where this build writes it (the sanitizer builds have no libonnx).
    if (tf::onnx_export_available()) o.export_onnx_path = dir / (kind + ".onnx");
    train(o);
    // The file alone gives the logits of the model in the checkpoint.
    const cli::TextModelConfig config = cli::read_text_model_config(o.checkpoint);
    const auto model = cli::make_text_model(kind, static_cast<std::int64_t>(config.vocabulary.size()),
                                            config.sequence_length, config.seed);
    tf::restore_checkpoint(o.checkpoint, tf::checkpoint_variables(*model, "model/"),
                           {.allow_unused_entries = true});
    std::vector<std::int32_t> ids(16);
    for (std::size_t i = 0; i < ids.size(); ++i)
      ids[i] = static_cast<std::int32_t>((i * 7) % config.vocabulary.size());
    const tf::Tensor x = tf::constant(ids, tf::Shape({1, 16}));
    tf::LoadedFunction f = tf::load_function(o.export_path);
    EXPECT_EQ(f.input_signature()[0].to_string(), "int32[1, 16]");
    tf::testing::expect_close(f({x})[0], model->call(x, false), 1e-5);
    if (tf::onnx_export_available()) {
      EXPECT_GT(std::filesystem::file_size(o.export_onnx_path), 100000u);
    }
  }
}

TEST(Sample, ContinuesThePromptReproduciblyFromTheCheckpointAlone) {
  tf::testing::TempDir dir;
  cli::TrainOptions o = quick("char-lstm", write(dir, "sentences.txt", sentences(200)), 6);
  o.checkpoint = dir / "lm.ckpt";
  train(o);
  const std::string text = sample(o.checkpoint, "the cat ", 40, 0.8);
  EXPECT_EQ(text.substr(0, 8), "the cat ");
  EXPECT_EQ(text.size(), 8u + 40u + 1u);  // ASCII: a byte a character, and the final line break
  EXPECT_EQ(text, sample(o.checkpoint, "the cat ", 40, 0.8));
  EXPECT_NE(text, sample(o.checkpoint, "the cat ", 40, 0.8, /*seed=*/2));
  // Temperature 0 takes the likeliest character: the same text for every seed, and after
  // training on these sentences, a verb of theirs.
  const std::string greedy = sample(o.checkpoint, "the cat ", 6, 0);
  EXPECT_EQ(greedy, sample(o.checkpoint, "the cat ", 6, 0, /*seed=*/9));
  EXPECT_THAT(greedy, ::testing::MatchesRegex("the cat (sees|likes|finds|wants).*\n"));
  // Through the command line, the same text.
  const Result r = run({"sample", o.checkpoint.c_str(), "--prompt", "the cat ", "--length", "40"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, text);
}

TEST(Sample, BadPromptsAndCheckpointsExitWith2) {
  tf::testing::TempDir dir;
  cli::TrainOptions o = quick("char-lstm", write(dir, "sentences.txt", sentences(50)), 1);
  o.checkpoint = dir / "lm.ckpt";
  train(o);
  const Result unknown = run({"sample", o.checkpoint.c_str(), "--prompt", "the caf\xC3\xA9"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("U+00E9"));
  const Result invalid = run({"sample", o.checkpoint.c_str(), "--prompt", "the \xFF"});
  EXPECT_EQ(invalid.status, 2);
  EXPECT_THAT(invalid.err, HasSubstr("byte offset 4"));
  const Result negative = run({"sample", o.checkpoint.c_str(), "--temperature", "-1"});
  EXPECT_EQ(negative.status, 2);
  const Result missing = run({"sample", (dir / "missing.ckpt").c_str()});
  EXPECT_EQ(missing.status, 2);
  // A checkpoint whose weights went NaN (a run that diverged): no draw from NaN probabilities.
  {
    const cli::TextModelConfig config = cli::read_text_model_config(o.checkpoint);
    const auto model = cli::make_text_model(config.model, static_cast<std::int64_t>(config.vocabulary.size()),
                                            config.sequence_length, config.seed);
    tf::NamedVariables entries;
    for (const auto& e : tf::list_checkpoint(o.checkpoint))
      entries.emplace_back(e.name, tf::Variable(tf::zeros(e.shape, e.dtype)));
    tf::restore_checkpoint(o.checkpoint, entries);
    for (auto& [name, var] : entries)
      if (name.rfind("model/", 0) == 0 && var.dtype() == tf::float32)
        var.assign(tf::fill(var.shape(), std::nan("")));
    tf::save_checkpoint(dir / "nan.ckpt", entries);
    const Result nan = run({"sample", (dir / "nan.ckpt").c_str(), "--prompt", "the "});
    EXPECT_EQ(nan.status, 2);
    EXPECT_THAT(nan.err, HasSubstr("logits are not finite"));
  }
  // A checkpoint that is not a text model's.
  tf::save_checkpoint(dir / "other.ckpt", {{"w", tf::Variable(tf::ones({2}))}});
  const Result other = run({"sample", (dir / "other.ckpt").c_str()});
  EXPECT_EQ(other.status, 2);
  EXPECT_THAT(other.err,
              HasSubstr("not a checkpoint of `tapeflow train --model char-lstm|char-transformer`"));
}

TEST(TrainText, DefaultTextIsFortunesMin) {
  if (!std::filesystem::exists(cli::default_text_files()[0]))
    GTEST_SKIP() << "fortunes-min is not installed (scripts/setup.sh installs it)";
  cli::TrainOptions o;
  o.model = "char-lstm";
  o.epochs = 1;
  o.limit = 64;  // windows: a quick run
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  EXPECT_THAT(out.str(), HasSubstr("distinct) in windows of 64: 64 train"));
}

#endif  // TAPEFLOW_HAVE_CLI
