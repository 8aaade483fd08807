#include "cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "examples.h"
#include "interrupt.h"
#include "models.h"
#include "predict.h"
#include "sample.h"
#include "tapeflow/distributed.h"
#include "tapeflow/errors.h"
#include "text_models.h"
#include "train.h"

namespace tapeflow::cli {
namespace {

/// Edits (insertions, deletions, substitutions, swaps of neighbours) turning `a` into `b`: the
/// optimal string alignment distance, so "trian" is one edit from "train".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

/// The candidate nearest to `given` if it is within two edits of it.
std::optional<std::string> nearest_within_two_edits(const std::string& given,
                                                    const std::vector<std::string>& candidates) {
  const auto nearest = std::min_element(
      candidates.begin(), candidates.end(),
      [&](const auto& x, const auto& y) { return edit_distance(given, x) < edit_distance(given, y); });
  if (nearest == candidates.end() || edit_distance(given, *nearest) > 2) return std::nullopt;
  return *nearest;
}

/// The first argument that is not an option (the subcommand, if one was given).
const char* const* first_non_option(int argc, const char* const* argv) {
  return std::find_if(argv + 1, argv + argc, [](const char* a) { return a[0] != '-'; });
}

/// The message for a first argument that is no subcommand, suggesting the nearest one within
/// two edits; std::nullopt when the first non-option argument is a subcommand (or there is none).
std::optional<std::string> unknown_subcommand(int argc, const char* const* argv,
                                              const std::vector<std::string>& subcommands) {
  const auto first = first_non_option(argc, argv);
  if (first == argv + argc) return std::nullopt;
  const std::string given = *first;
  if (std::find(subcommands.begin(), subcommands.end(), given) != subcommands.end()) return std::nullopt;
  if (const auto nearest = nearest_within_two_edits(given, subcommands))
    return fmt::format("unknown subcommand '{}'; did you mean '{}'?", given, *nearest);
  // "train, predict, sample and examples"
  const std::vector<std::string> all_but_last(subcommands.begin(), subcommands.end() - 1);
  return fmt::format("unknown subcommand '{}'; the subcommands are {} and {}", given,
                     fmt::join(all_but_last, ", "), subcommands.back());
}

/// The message for the arguments `app` did not expect: for an unknown option, the nearest option
/// of `command` (the subcommand given) within two edits ("--epoch": did you mean '--epochs'?).
std::string unexpected_arguments(const CLI::App& app, const CLI::App& command, const CLI::ParseError& error) {
  const std::vector<std::string> extras = app.remaining(/*recurse=*/true);
  const auto option = std::find_if(extras.begin(), extras.end(),
                                   [](const std::string& a) { return a.size() > 2 && a.starts_with("--"); });
  if (option == extras.end()) return error.what();
  const std::string given = option->substr(0, option->find('='));
  std::vector<std::string> options;
  for (const CLI::Option* o : command.get_options())
    for (const std::string& name : o->get_lnames()) options.push_back("--" + name);
  if (const auto nearest = nearest_within_two_edits(given, options))
    return fmt::format("unknown option '{}'; did you mean '{}'?", given, *nearest);
  return fmt::format("unknown option '{}'", given);
}

/// `--seed`'s check: a decimal integer from 0 to 2^64 - 1, written as such (CLI11 would turn
/// -1, 2^64 and 1e23 alike into 2^64 - 1).
const CLI::Validator kUnsigned64(
    [](const std::string& text) -> std::string {
      std::uint64_t value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return fmt::format("'{}' is not an integer from 0 to {}", text,
                           std::numeric_limits<std::uint64_t>::max());
      return "";
    },
    "UINT64");

/// Where a parse error sends the user: the help of the subcommand given, else the program's.
std::string help_hint(int argc, const char* const* argv) {
  const auto given = first_non_option(argc, argv);
  if (given == argv + argc) return "(`tapeflow --help` lists the subcommands)\n";
  return fmt::format("(`tapeflow {} --help` lists its options)\n", *given);
}

}  // namespace

namespace {
/// This process's rank in a data-parallel run, 0 otherwise.
int rank_or_zero() { return distributed::initialized() ? distributed::rank() : 0; }
}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool err_is_terminal) {
  CLI::App app{
      "tapeflow: train Fashion-MNIST classifiers and character-level language models, and run the examples "
      "of the tapeflow library"};
  app.require_subcommand(1);

  TrainOptions t;
  CLI::App* train_cmd = app.add_subcommand(
      "train", "Train the MLP or the CNN on Fashion-MNIST, or a character-level language model on text");
  std::vector<std::string> all_models = model_names();
  all_models.insert(all_models.end(), text_model_names().begin(), text_model_names().end());
  auto* model_opt =
      train_cmd
          ->add_option(
              "--model", t.model,
              "Model: mlp (784-256-128-10) or cnn on Fashion-MNIST; char-lstm or char-transformer on "
              "--text")
          ->check(CLI::IsMember(all_models))
          ->capture_default_str();
  train_cmd->add_option("--text", t.text,
                        "The text models' UTF-8 files (default: the fortunes of Debian's fortunes-min)");
  auto* sequence_length_opt =
      train_cmd->add_option("--sequence-length", t.sequence_length, "The text models' characters of context")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
  train_cmd->add_option("--epochs", t.epochs, "Total epochs (with --resume: continue up to this many)")
      ->capture_default_str();
  auto* batch_opt =
      train_cmd->add_option("--batch-size", t.batch_size, "Examples per step (per rank under mpirun)")
          ->capture_default_str();
  auto* lr_opt =
      train_cmd->add_option("--lr", t.learning_rate, "Learning rate of the first epoch (char-lstm: 0.005)")
          ->capture_default_str();
  auto* lr_decay_opt = train_cmd
                           ->add_option("--lr-decay", t.lr_decay,
                                        "Multiply the learning rate by this after each epoch (1: constant)")
                           ->capture_default_str();
  auto* optimizer_opt = train_cmd->add_option("--optimizer", t.optimizer, "adam or sgd (momentum 0.9)")
                            ->check(CLI::IsMember({"adam", "sgd"}))
                            ->capture_default_str();
  auto* augment_opt =
      train_cmd
          ->add_option("--augment", t.augment,
                       "Data augmentation: flip (mirror each training image left to right with probability "
                       "1/2) or none; default: flip for the cnn, none for the mlp")
          ->check(CLI::IsMember(augmentations()));
  auto* seed_opt = train_cmd->add_option("--seed", t.seed, "Seed of the initialisers, shuffling and dropout")
                       ->check(kUnsigned64)
                       ->capture_default_str();
  train_cmd->add_option("--checkpoint", t.checkpoint, "Save a checkpoint here after each epoch");
  train_cmd->add_flag("--resume", t.resume, "Continue from the checkpoint's epoch");
  train_cmd->add_flag("--overwrite", t.overwrite,
                      "Start a new run even if --checkpoint names an existing file (which it replaces)");
  train_cmd->add_option("--data-dir", t.data_dir, "Directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  train_cmd->add_option("--plot", t.plot,
                        "Write the loss and accuracy curves to this .svg or .png file after each epoch");
  auto* limit_opt = train_cmd->add_option("--limit", t.limit,
                                          "Train on the first N examples only (0: all), for quick runs");
  train_cmd->add_option(
      "--threads", t.threads,
      "Threads for the kernels and OpenBLAS (0: every core, shared among the ranks on a machine)");
  train_cmd
      ->add_option("--ranks", t.ranks,
                   "Expect this many data-parallel ranks (start them with `mpirun -np N tapeflow train ...`)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  train_cmd->add_flag("--gradient-report", t.gradient_report,
                      "Print each variable's gradient norm (or why it has none) for the first step");
  train_cmd->add_flag("--eager", t.eager,
                      "Run the training step op by op instead of as a tf::function graph traced once "
                      "per batch shape (same results, bit for bit; to compare)");

  auto* precision_opt =
      train_cmd
          ->add_option(
              "--precision", t.precision,
              "float32, or mixed_bfloat16: layers compute in bfloat16, variables, loss and optimizer "
              "stay float32")
          ->check(CLI::IsMember(precisions()))
          ->capture_default_str();

  std::optional<std::string> name, dir;
  bool list = false;
  train_cmd->add_option("--export", t.export_path,
                        "After training, write the model's inference as a function file (for the image "
                        "models: tapeflow predict)");
  train_cmd->add_option("--export-onnx", t.export_onnx_path,
                        "After training, write the model's inference as an ONNX model (opset 17; the image "
                        "models' for any batch "
                        "size, the text models' for one sequence)");

  PredictOptions p;
  CLI::App* predict_cmd = app.add_subcommand(
      "predict",
      "Classify images with a model written by --export, or measure its accuracy on the Fashion-MNIST test "
      "images");
  predict_cmd->add_option("model", p.model_path, "The function file")->required();
  predict_cmd->add_option("images", p.images,
                          "Files of 28x28 grey images to classify (IDX, PNG or NumPy .npy); none: the test "
                          "images' accuracy");
  predict_cmd->add_option("--data-dir", p.data_dir, "Directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  predict_cmd->add_option("--limit", p.limit, "Only the first N test images (0: all)")
      ->check(CLI::Range(std::int64_t{0}, std::numeric_limits<std::int64_t>::max()));
  predict_cmd
      ->add_option("--batch-size", p.batch_size, "Images per call, for a file that takes any batch size")
      ->check(CLI::PositiveNumber);

  SampleOptions sample_options;
  CLI::App* sample_cmd = app.add_subcommand(
      "sample", "Generate text with a model trained by `train --model char-lstm|char-transformer`");
  sample_cmd->add_option("checkpoint", sample_options.checkpoint, "The checkpoint `train --checkpoint` wrote")
      ->required();
  sample_cmd->add_option("--prompt", sample_options.prompt, "The text to continue (default: a new line)");
  sample_cmd->add_option("--length", sample_options.length, "Characters to generate")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sample_cmd
      ->add_option("--temperature", sample_options.temperature,
                   "Divide the logits by this: 1 samples the model as it is, 0 takes the likeliest character")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sample_cmd->add_option("--seed", sample_options.seed, "Seed of the draws")
      ->check(kUnsigned64)
      ->capture_default_str();

  CLI::App* examples_cmd = app.add_subcommand("examples", "List and run the seed example programs");
  examples_cmd->add_option("name", name, "The example to run (default: all of them)");
  examples_cmd->add_flag("--list", list, "Only list the examples");
  examples_cmd->add_option("--dir", dir, "Directory of the built example programs");

  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) subcommands.push_back(sub->get_name());
  if (auto message = unknown_subcommand(argc, argv, subcommands)) {
    err << "tapeflow: error: " << *message << "\n(`tapeflow --help` lists the subcommands)\n";
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ExtrasError& e) {
    const auto given = first_non_option(argc, argv);
    const CLI::App& command = given == argv + argc ? app : *app.get_subcommand(*given);
    err << "tapeflow: error: " << unexpected_arguments(app, command, e) << "\n" << help_hint(argc, argv);
    return 2;
  } catch (const CLI::ParseError& e) {
    err << "tapeflow: error: " << e.what() << "\n" << help_hint(argc, argv);
    return 2;
  }

  try {
    if (train_cmd->parsed()) {
      t.model_given = model_opt->count() > 0;
      t.optimizer_given = optimizer_opt->count() > 0;
      t.seed_given = seed_opt->count() > 0;
      t.batch_size_given = batch_opt->count() > 0;
      t.limit_given = limit_opt->count() > 0;
      t.learning_rate_given = lr_opt->count() > 0;
      t.lr_decay_given = lr_decay_opt->count() > 0;
      t.augment_given = augment_opt->count() > 0;
      t.precision_given = precision_opt->count() > 0;
      t.sequence_length_given = sequence_length_opt->count() > 0;
      const InterruptHandler interrupts;
      t.stop_requested = &InterruptHandler::count();
      train(t, out, err, err_is_terminal);
      return 0;
    }
    if (sample_cmd->parsed()) {
      sample(sample_options, out);
      return 0;
    }
    if (predict_cmd->parsed()) {
      if (p.images.empty())
        predict(p, out);
      else
        classify(p, out);
      return 0;
    }
    const std::string where = examples_dir(dir);
    if (list) {
      list_examples(where, out);
      return 0;
    }
    return run_examples(where, name.value_or(""), out);
  } catch (const UsageError& e) {
    // Every rank of a data-parallel run reaches the same usage error and interruption: rank 0 says it.
    if (rank_or_zero() == 0) err << "tapeflow: error: " << e.what() << "\n";
    return 2;
  } catch (const Interrupted& e) {
    if (rank_or_zero() == 0) err << "tapeflow: " << e.what() << "\n";
    return 130;
  } catch (const std::exception& e) {
    err << (distributed::initialized() && distributed::size() > 1
                ? fmt::format("tapeflow (rank {})", rank_or_zero())
                : std::string("tapeflow"))
        << ": failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tapeflow::cli
