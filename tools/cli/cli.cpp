#include "cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "examples.h"
#include "models.h"
#include "tapeflow/errors.h"
#include "train.h"

namespace tapeflow::cli {

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
      train_cmd->add_option("--batch-size", t.batch_size, "Examples per step")->capture_default_str();
  auto* lr_opt = train_cmd->add_option("--lr", t.learning_rate, "Learning rate")->capture_default_str();
  auto* optimizer_opt = train_cmd->add_option("--optimizer", t.optimizer, "adam or sgd (momentum 0.9)")
                            ->check(CLI::IsMember({"adam", "sgd"}))
                            ->capture_default_str();
  auto* seed_opt = train_cmd->add_option("--seed", t.seed, "Seed of the initialisers, shuffling and dropout")
                       ->capture_default_str();
  train_cmd->add_option("--checkpoint", t.checkpoint, "Save a checkpoint here after each epoch");
  train_cmd->add_flag("--resume", t.resume, "Continue from the checkpoint's epoch");
  train_cmd->add_option("--data-dir", t.data_dir, "Directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  train_cmd->add_option("--plot", t.plot,
                        "Write the loss and accuracy curves to this SVG file after each epoch");
  auto* limit_opt = train_cmd->add_option("--limit", t.limit,
                                          "Train on the first N examples only (0: all), for quick runs");
  train_cmd->add_option("--threads", t.threads, "Threads for the kernels and OpenBLAS (0: every core)");
  train_cmd->add_flag("--gradient-report", t.gradient_report,
                      "Print each variable's gradient norm (or why it has none) for the first step");

  std::optional<std::string> name, dir;
  bool list = false;
  CLI::App* examples_cmd = app.add_subcommand("examples", "List and run the seed example programs");
  examples_cmd->add_option("name", name, "The example to run (default: all of them)");
  examples_cmd->add_flag("--list", list, "Only list the examples");
  examples_cmd->add_option("--dir", dir, "Directory of the built example programs");

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
      train(t, out, err, err_is_terminal);
      return 0;
    }
    const std::string where = examples_dir(dir);
    if (list) {
      list_examples(where, out);
      return 0;
    }
    return run_examples(where, name.value_or(""), out);
  } catch (const UsageError& e) {
    err << "tapeflow: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "tapeflow: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tapeflow::cli
