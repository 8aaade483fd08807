#include "cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "examples.h"
#include "interrupt.h"
#include "models.h"
#include "predict.h"
#include "tapeflow/distributed.h"
#include "tapeflow/errors.h"
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

/// The message for a first argument that is no subcommand, suggesting the nearest one within
/// two edits; std::nullopt when the first non-option argument is a subcommand (or there is none).
std::optional<std::string> unknown_subcommand(int argc, const char* const* argv,
                                              const std::vector<std::string>& subcommands) {
  const auto first = std::find_if(argv + 1, argv + argc, [](const char* a) { return a[0] != '-'; });
  if (first == argv + argc) return std::nullopt;
  const std::string given = *first;
  if (std::find(subcommands.begin(), subcommands.end(), given) != subcommands.end()) return std::nullopt;
  const auto nearest = std::min_element(
      subcommands.begin(), subcommands.end(),
      [&](const auto& x, const auto& y) { return edit_distance(given, x) < edit_distance(given, y); });
  if (edit_distance(given, *nearest) <= 2)
    return fmt::format("unknown subcommand '{}'; did you mean '{}'?", given, *nearest);
  // "train, predict and examples"
  const std::vector<std::string> all_but_last(subcommands.begin(), subcommands.end() - 1);
  return fmt::format("unknown subcommand '{}'; the subcommands are {} and {}", given,
                     fmt::join(all_but_last, ", "), subcommands.back());
}

}  // namespace

namespace {
/// This process's rank in a data-parallel run, 0 otherwise.
int rank_or_zero() { return distributed::initialized() ? distributed::rank() : 0; }
}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool err_is_terminal) {
  CLI::App app{"tapeflow: train Fashion-MNIST classifiers and run the examples of the tapeflow library"};
  app.require_subcommand(1);

  TrainOptions t;
  CLI::App* train_cmd = app.add_subcommand("train", "Train the MLP or the CNN on Fashion-MNIST");
  auto* model_opt = train_cmd->add_option("--model", t.model, "Model: mlp (784-256-128-10) or cnn")
                        ->check(CLI::IsMember(model_names()))
                        ->capture_default_str();
  train_cmd->add_option("--epochs", t.epochs, "Total epochs (with --resume: continue up to this many)")
      ->capture_default_str();
  auto* batch_opt =
      train_cmd->add_option("--batch-size", t.batch_size, "Examples per step (per rank under mpirun)")
          ->capture_default_str();
  auto* lr_opt = train_cmd->add_option("--lr", t.learning_rate, "Learning rate of the first epoch")
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
                       ->capture_default_str();
  train_cmd->add_option("--checkpoint", t.checkpoint, "Save a checkpoint here after each epoch");
  train_cmd->add_flag("--resume", t.resume, "Continue from the checkpoint's epoch");
  train_cmd->add_option("--data-dir", t.data_dir, "Directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  train_cmd->add_option("--plot", t.plot,
                        "Write the loss and accuracy curves to this .svg or .png file after each epoch");
  auto* limit_opt = train_cmd->add_option("--limit", t.limit,
                                          "Train on the first N examples only (0: all), for quick runs");
  train_cmd->add_option(
      "--threads", t.threads,
      "Threads for the kernels and OpenBLAS (0: every core, shared among the ranks on a machine)");
  train_cmd->add_option(
      "--ranks", t.ranks,
      "Expect this many data-parallel ranks (start them with `mpirun -np N tapeflow train ...`)");
  train_cmd->add_flag("--gradient-report", t.gradient_report,
                      "Print each variable's gradient norm (or why it has none) for the first step");
  train_cmd->add_flag("--eager", t.eager,
                      "Run the training step op by op instead of as a tf::function graph traced once "
                      "per batch shape (same results, bit for bit; to compare)");

  train_cmd
      ->add_option("--precision", t.precision,
                   "float32, or mixed_bfloat16: layers compute in bfloat16, variables, loss and optimizer "
                   "stay float32")
      ->check(CLI::IsMember({"float32", "mixed_bfloat16"}))
      ->capture_default_str();

  std::optional<std::string> name, dir;
  bool list = false;
  train_cmd->add_option("--export", t.export_path,
                        "After training, write the model's inference as a function file (tapeflow predict)");

  PredictOptions p;
  CLI::App* predict_cmd = app.add_subcommand(
      "predict", "Accuracy on the Fashion-MNIST test images of a model written by --export");
  predict_cmd->add_option("model", p.model_path, "The function file")->required();
  predict_cmd->add_option("--data-dir", p.data_dir, "Directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  predict_cmd->add_option("--limit", p.limit, "Only the first N test images (0: all)");
  predict_cmd
      ->add_option("--batch-size", p.batch_size, "Images per call, for a file that takes any batch size")
      ->check(CLI::PositiveNumber);

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
  } catch (const CLI::ParseError& e) {
    err << "tapeflow: error: " << e.what()
        << "\n(`tapeflow --help` and `tapeflow train --help` list the options)\n";
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
      const InterruptHandler interrupts;
      t.stop_requested = &InterruptHandler::count();
      train(t, out, err, err_is_terminal);
      return 0;
    }
    if (predict_cmd->parsed()) {
      predict(p, out);
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
