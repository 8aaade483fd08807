#include "tapeflow/nn/callbacks.h"

#include <fmt/args.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>

#include "tapeflow/checkpoint.h"
#include "tapeflow/errors.h"
#include "tapeflow/optim/optimizer.h"

namespace tapeflow::callbacks {
namespace {

/// Whether larger values of `monitor` are better under `mode` (kAuto: Keras's rule, larger for
/// accuracies).
bool higher_is_better(Mode mode, const std::string& monitor) {
  if (mode == Mode::kAuto) return monitor.find("acc") != std::string::npos;
  return mode == Mode::kMax;
}

/// The worst possible value: the first one seen improves on it.
double worst(bool higher_better) {
  return higher_better ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

/// The value of the watched log `monitor`; throws InvalidArgumentError naming the callback, the
/// log and the logs there are when it is missing.
double monitored(const Logs& logs, const std::string& monitor, const char* callback) {
  if (auto v = logs.get(monitor)) return *v;
  throw InvalidArgumentError(fmt::format(
      "{} watches '{}', which is not among the logs [{}]{}", callback, monitor, fmt::join(logs.keys(), ", "),
      monitor.starts_with("val_") ? " (val_ logs need validation data)" : ""));
}

void check_not_negative(const char* callback, const char* what, std::int64_t value) {
  if (value < 0)
    throw InvalidArgumentError(fmt::format("{}: {} must not be negative, got {}", callback, what, value));
}

}  // namespace

layers::Model& Callback::model() const {
  if (!model_)
    throw FailedPreconditionError(fmt::format("{}: model() is set only while a model's loop runs", name()));
  return *model_;
}

std::ostream& Callback::out() const { return params_.out ? *params_.out : std::cout; }

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), higher_is_better_(higher_is_better(options_.mode, options_.monitor)) {
  check_not_negative("EarlyStopping", "patience", options_.patience);
  check_not_negative("EarlyStopping", "start_from_epoch", options_.start_from_epoch);
  options_.min_delta = std::abs(options_.min_delta);
}

void EarlyStopping::on_train_begin(Logs& /*logs*/) {
  wait_ = stopped_epoch_ = 0;
  best_epoch_ = -1;
  best_ = worst(higher_is_better_);
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(std::int64_t epoch, Logs& logs) {
  const double current = monitored(logs, options_.monitor, "EarlyStopping");
  if (epoch < options_.start_from_epoch) return;
  // Keras 3's rule: an improvement beats the reference by more than min_delta.
  auto improves = [&](double value, double reference) {
    return higher_is_better_ ? value - options_.min_delta > reference
                             : value + options_.min_delta < reference;
  };
  if (options_.restore_best_weights && best_weights_.empty()) best_weights_ = model().get_weights();
  ++wait_;
  if (improves(current, best_)) {
    best_ = current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) best_weights_ = model().get_weights();
    // With a baseline, the wait restarts only once the baseline is beaten.
    if (!options_.baseline || improves(current, *options_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model().set_stop_training(true);
  }
}

void EarlyStopping::on_train_end(Logs& /*logs*/) {
  if (stopped_epoch_ > 0 && options_.verbose > 0)
    out() << fmt::format("Epoch {}: early stopping\n", stopped_epoch_ + 1);
  if (options_.restore_best_weights && !best_weights_.empty()) {
    if (options_.verbose > 0)
      out() << fmt::format("Restoring model weights from the end of the best epoch: {}.\n", best_epoch_ + 1);
    model().set_weights(best_weights_);
  }
}

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : filepath_(std::move(filepath)),
      options_(std::move(options)),
      higher_is_better_(higher_is_better(options_.mode, options_.monitor)),
      best_(options_.initial_value_threshold) {
  if (filepath_.empty()) throw InvalidArgumentError("ModelCheckpoint: the file path is empty");
}

void ModelCheckpoint::on_epoch_end(std::int64_t epoch, Logs& logs) {
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg("epoch", epoch + 1));
  for (const auto& [name, value] : logs.entries()) args.push_back(fmt::arg(name.c_str(), value));
  std::string path;
  try {
    path = fmt::vformat(filepath_, args);
  } catch (const fmt::format_error& e) {
    throw InvalidArgumentError(
        fmt::format("ModelCheckpoint: cannot format the path '{}' with epoch and the logs [{}]: {}",
                    filepath_, fmt::join(logs.keys(), ", "), e.what()));
  }
  if (options_.save_best_only) {
    const double current = monitored(logs, options_.monitor, "ModelCheckpoint");
    const bool improved = !best_ || (higher_is_better_ ? current > *best_ : current < *best_);
    if (!improved) {
      if (options_.verbose > 0)
        out() << fmt::format("\nEpoch {}: {} did not improve from {:.5f}\n", epoch + 1, options_.monitor,
                             *best_);
      return;
    }
    if (options_.verbose > 0)
      out() << fmt::format("\nEpoch {}: {} improved from {:.5f} to {:.5f}, saving model to {}\n", epoch + 1,
                           options_.monitor, best_ ? *best_ : worst(higher_is_better_), current, path);
    best_ = current;
  } else if (options_.verbose > 0) {
    out() << fmt::format("\nEpoch {}: saving model to {}\n", epoch + 1, path);
  }
  NamedVariables entries = checkpoint_variables(model(), "model/");
  if (!options_.save_weights_only)
    for (auto& [name, variable] : model().optimizer().variables())
      entries.emplace_back("optimizer/" + name, variable);
  save_checkpoint(path, entries);
}

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)), higher_is_better_(higher_is_better(options_.mode, options_.monitor)) {
  if (!(options_.factor > 0 && options_.factor < 1))
    throw InvalidArgumentError(fmt::format(
        "ReduceLROnPlateau: factor must be in (0, 1) (it multiplies the rate), got {}", options_.factor));
  check_not_negative("ReduceLROnPlateau", "patience", options_.patience);
  check_not_negative("ReduceLROnPlateau", "cooldown", options_.cooldown);
  if (!(options_.min_lr >= 0))
    throw InvalidArgumentError(
        fmt::format("ReduceLROnPlateau: min_lr must not be negative, got {}", options_.min_lr));
  options_.min_delta = std::abs(options_.min_delta);
}

void ReduceLROnPlateau::on_train_begin(Logs& /*logs*/) {
  wait_ = cooldown_counter_ = 0;
  best_ = worst(higher_is_better_);
}

void ReduceLROnPlateau::on_epoch_end(std::int64_t epoch, Logs& logs) {
  optimizers::Optimizer& optimizer = model().optimizer();
  logs.set("learning_rate", optimizer.learning_rate());
  const double current = monitored(logs, options_.monitor, "ReduceLROnPlateau");
  const bool in_cooldown = cooldown_counter_ > 0;
  if (in_cooldown) {
    --cooldown_counter_;
    wait_ = 0;
  }
  const bool improved =
      higher_is_better_ ? current > best_ + options_.min_delta : current < best_ - options_.min_delta;
  if (improved) {
    best_ = current;
    wait_ = 0;
  } else if (!in_cooldown && ++wait_ >= options_.patience) {
    const double old_lr = optimizer.learning_rate();
    if (old_lr > static_cast<float>(options_.min_lr)) {
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
      optimizer.set_learning_rate(new_lr);
      if (options_.verbose > 0)
        out() << fmt::format("\nEpoch {}: ReduceLROnPlateau reducing learning rate to {}.\n", epoch + 1,
                             new_lr);
      cooldown_counter_ = options_.cooldown;
      wait_ = 0;
    }
  }
}

CSVLogger::CSVLogger(std::string filename, std::string separator, bool append)
    : filename_(std::move(filename)), separator_(std::move(separator)), append_(append) {
  if (filename_.empty()) throw InvalidArgumentError("CSVLogger: the file name is empty");
  if (separator_.empty()) throw InvalidArgumentError("CSVLogger: the separator is empty");
}

void CSVLogger::on_train_begin(Logs& /*logs*/) {
  std::error_code ec;
  // Appending to a file that has rows already: no second header.
  const bool has_rows = append_ && std::filesystem::file_size(filename_, ec) > 0 && !ec;
  keys_.clear();
  header_written_ = has_rows;
  file_.close();
  file_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
  if (!file_)
    throw FailedPreconditionError(fmt::format("CSVLogger: cannot open '{}' for writing", filename_));
}

void CSVLogger::on_epoch_end(std::int64_t epoch, Logs& logs) {
  if (keys_.empty()) {
    keys_ = logs.keys();
    std::sort(keys_.begin(), keys_.end());
  }
  if (!header_written_)
    file_ << "epoch" << separator_ << fmt::format("{}", fmt::join(keys_, separator_)) << '\n';
  header_written_ = true;
  std::vector<std::string> row{std::to_string(epoch)};
  for (const auto& key : keys_) {
    const auto value = logs.get(key);
    row.push_back(value ? fmt::format("{}", *value) : "NA");
  }
  file_ << fmt::format("{}", fmt::join(row, separator_)) << '\n' << std::flush;
  if (!file_) throw FailedPreconditionError(fmt::format("CSVLogger: writing to '{}' failed", filename_));
}

void CSVLogger::on_train_end(Logs& /*logs*/) { file_.close(); }

LearningRateScheduler::LearningRateScheduler(Schedule schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  if (!schedule_) throw InvalidArgumentError("LearningRateScheduler: the schedule is empty");
}

void LearningRateScheduler::on_epoch_begin(std::int64_t epoch, Logs& /*logs*/) {
  optimizers::Optimizer& optimizer = model().optimizer();
  const double rate = schedule_(epoch, optimizer.learning_rate());
  if (!(rate > 0) || !std::isfinite(rate))
    throw InvalidArgumentError(
        fmt::format("LearningRateScheduler: the schedule gave {} for epoch {}; a learning rate must be a "
                    "positive finite number",
                    rate, epoch));
  optimizer.set_learning_rate(rate);
  if (verbose_ > 0)
    out() << fmt::format("\nEpoch {}: LearningRateScheduler setting learning rate to {}.\n", epoch + 1, rate);
}

void LearningRateScheduler::on_epoch_end(std::int64_t /*epoch*/, Logs& logs) {
  logs.set("learning_rate", model().optimizer().learning_rate());
}

void TerminateOnNaN::on_train_batch_end(std::int64_t batch, Logs& logs) {
  const auto loss = logs.get("loss");
  if (loss && !std::isfinite(*loss)) {
    out() << fmt::format("Batch {}: Invalid loss, terminating training\n", batch);
    model().set_stop_training(true);
  }
}

void LambdaCallback::on_epoch_begin(std::int64_t epoch, Logs& logs) {
  if (f_.on_epoch_begin) f_.on_epoch_begin(epoch, logs);
}
void LambdaCallback::on_epoch_end(std::int64_t epoch, Logs& logs) {
  if (f_.on_epoch_end) f_.on_epoch_end(epoch, logs);
}
void LambdaCallback::on_train_batch_begin(std::int64_t batch, Logs& logs) {
  if (f_.on_train_batch_begin) f_.on_train_batch_begin(batch, logs);
}
void LambdaCallback::on_train_batch_end(std::int64_t batch, Logs& logs) {
  if (f_.on_train_batch_end) f_.on_train_batch_end(batch, logs);
}
void LambdaCallback::on_train_begin(Logs& logs) {
  if (f_.on_train_begin) f_.on_train_begin(logs);
}
void LambdaCallback::on_train_end(Logs& logs) {
  if (f_.on_train_end) f_.on_train_end(logs);
}

}  // namespace tapeflow::callbacks
