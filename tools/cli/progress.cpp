#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace tapeflow::cli {

bool is_terminal(int fd) { return ::isatty(fd) == 1; }

ProgressBar::ProgressBar(std::ostream& out, bool redraw, std::int64_t epoch, std::int64_t epochs,
                         std::int64_t batches)
    : out_(out),
      redraw_(redraw),
      epoch_(epoch),
      epochs_(epochs),
      batches_(batches),
      start_(Clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::line(std::int64_t epoch, std::int64_t epochs, std::int64_t done,
                              std::int64_t batches, double loss, double accuracy, double examples_per_second,
                              bool with_bar) {
  std::string bar;
  if (with_bar) {
    constexpr std::int64_t kWidth = 20;
    const std::int64_t filled = batches > 0 ? std::min(kWidth, done * kWidth / batches) : kWidth;
    bar.assign(kWidth + 3, ' ');  // "[" + kWidth cells + "] "
    bar.front() = '[';
    bar[kWidth + 1] = ']';
    for (std::int64_t i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i + 1)] = '=';
    if (filled < kWidth) bar[static_cast<std::size_t>(filled + 1)] = '>';
  }
  const int width = static_cast<int>(fmt::formatted_size("{}", batches));
  return fmt::format("epoch {}/{} {}{:>{}}/{} loss {:.4f} acc {:.4f} {:.0f} ex/s", epoch, epochs, bar, done,
                     width, batches, loss, accuracy, examples_per_second);
}

void ProgressBar::update(std::int64_t done, std::int64_t examples, double loss, double accuracy) {
  const auto now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(examples) / seconds : 0.0;
  if (redraw_) {
    if (done < batches_ && now - last_draw_ < std::chrono::milliseconds(100) && drawn_) return;
    out_ << '\r' << line(epoch_, epochs_, done, batches_, loss, accuracy, rate, true) << "\x1b[K"
         << std::flush;
    last_draw_ = now;
    drawn_ = true;
    return;
  }
  // Plain style: a line at each tenth of the epoch (and at its end).
  if (done < next_report_ && done < batches_) return;
  out_ << line(epoch_, epochs_, done, batches_, loss, accuracy, rate, false) << '\n' << std::flush;
  const std::int64_t step = std::max<std::int64_t>(1, batches_ / 10);
  next_report_ = (done / step + 1) * step;
  drawn_ = true;
}

void ProgressBar::finish() {
  if (redraw_ && drawn_) out_ << '\n' << std::flush;
  drawn_ = false;
}

}  // namespace tapeflow::cli
