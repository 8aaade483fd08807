#include "nn/progbar_logger.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <iostream>

namespace tapeflow::layers {
namespace {

constexpr int kBarWidth = 30;
constexpr double kRedrawInterval = 0.05;  // seconds between two terminal redraws

/// tf.keras's duration of one unit: " 3s/epoch", " 12ms/step", " 850us/step".
std::string format_time(double seconds, const char* unit) {
  if (seconds >= 1 || seconds == 0) return fmt::format(" {:.0f}s/{}", seconds, unit);
  if (seconds >= 1e-3) return fmt::format(" {:.0f}ms/{}", seconds * 1e3, unit);
  return fmt::format(" {:.0f}us/{}", seconds * 1e6, unit);
}

std::string format_eta(double eta) {
  const auto s = static_cast<std::int64_t>(eta);
  if (eta > 3600) return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s % 3600) / 60, s % 60);
  if (eta > 60) return fmt::format("{}:{:02d}", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string format_logs(const Logs& logs) {
  std::string text;
  for (const auto& [name, value] : logs.entries())
    text += std::abs(value) > 1e-3 ? fmt::format(" - {}: {:.4f}", name, value)
                                   : fmt::format(" - {}: {:.4e}", name, value);
  return text;
}

int digits(std::int64_t n) { return n < 10 ? 1 : 1 + digits(n / 10); }

}  // namespace

Progbar::Progbar(std::ostream& out, std::int64_t target, int verbose, bool redraw)
    : out_(out), target_(target), verbose_(verbose), redraw_(redraw), start_(Clock::now()) {}

std::string Progbar::line(std::int64_t current, std::int64_t target, int verbose, bool finalize,
                          double elapsed, double seconds_per_step, const Logs& logs) {
  // tf.keras's count: right-aligned to the target's digits, or "Unknown" without a target.
  const std::string count = target > 0 ? fmt::format("{:>{}}/{}", current, digits(target), target)
                                       : fmt::format("{:>7}/Unknown", current);
  if (verbose == 2)
    return fmt::format("{} - {:.0f}s{} -{} -{}", count, elapsed, format_logs(logs),
                       format_time(elapsed, "epoch"), format_time(seconds_per_step, "step"));
  std::string bar = count;
  if (target > 0) {
    const auto filled =
        static_cast<int>(kBarWidth * static_cast<double>(current) / static_cast<double>(target));
    bar += " [";
    if (filled > 0)
      bar += std::string(static_cast<std::size_t>(filled - 1), '=') + (current < target ? ">" : "=");
    bar += std::string(static_cast<std::size_t>(kBarWidth - filled), '.') + "]";
  }
  const std::string timing =
      finalize || target <= 0
          ? fmt::format(" - {:.0f}s{}", elapsed, format_time(seconds_per_step, "step"))
          : fmt::format(" - ETA: {}", format_eta(seconds_per_step * static_cast<double>(target - current)));
  return bar + timing + format_logs(logs);
}

void Progbar::update(std::int64_t current, const Logs& logs, bool finalize) {
  const auto now = Clock::now();
  if (current == 1 && !after_first_step_) after_first_step_ = now;
  // As tf.keras: the first step (tracing, warming caches) is left out of the step time.
  const double per_step =
      after_first_step_ && current > 1
          ? std::chrono::duration<double>(now - *after_first_step_).count() / static_cast<double>(current - 1)
          : std::chrono::duration<double>(now - start_).count() /
                static_cast<double>(std::max<std::int64_t>(current, 1));
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (verbose_ == 2 || !redraw_) {
    if (finalize)
      out_ << line(current, target_, verbose_, true, elapsed, per_step, logs) << '\n' << std::flush;
    return;
  }
  if (!finalize && drawn_width_ > 0 &&
      std::chrono::duration<double>(now - last_draw_).count() < kRedrawInterval)
    return;
  std::string text = line(current, target_, verbose_, finalize, elapsed, per_step, logs);
  const std::size_t width = text.size();
  if (width < drawn_width_) text += std::string(drawn_width_ - width, ' ');  // cover a longer line
  out_ << '\r' << text << (finalize ? "\n" : "") << std::flush;
  drawn_width_ = width;
  last_draw_ = now;
}

void ProgbarLogger::start() {
  const auto& p = params();
  const bool terminal = &out() == &std::cout && ::isatty(STDOUT_FILENO) == 1;
  bar_.emplace(out(), p.steps, p.verbose, terminal);
  seen_ = 0;
}

void ProgbarLogger::on_epoch_begin(std::int64_t epoch, Logs& /*logs*/) {
  if (params().epochs > 1) out() << fmt::format("Epoch {}/{}\n", epoch + 1, params().epochs) << std::flush;
  start();
}

void ProgbarLogger::on_train_batch_end(std::int64_t batch, Logs& logs) {
  seen_ = batch + 1;
  bar_->update(seen_, logs, false);
}

void ProgbarLogger::on_epoch_end(std::int64_t /*epoch*/, Logs& logs) { bar_->update(seen_, logs, true); }

void ProgbarLogger::on_test_begin(Logs& /*logs*/) {
  if (!in_fit_) start();
}

void ProgbarLogger::on_test_batch_end(std::int64_t batch, Logs& logs) {
  if (in_fit_) return;
  seen_ = batch + 1;
  bar_->update(seen_, logs, false);
}

void ProgbarLogger::on_test_end(Logs& logs) {
  if (!in_fit_) bar_->update(seen_, logs, true);
}

void ProgbarLogger::on_predict_begin(Logs& /*logs*/) { start(); }

void ProgbarLogger::on_predict_batch_end(std::int64_t batch, Logs& /*logs*/) {
  seen_ = batch + 1;
  bar_->update(seen_, Logs(), false);
}

void ProgbarLogger::on_predict_end(Logs& /*logs*/) { bar_->update(seen_, Logs(), true); }

}  // namespace tapeflow::layers
