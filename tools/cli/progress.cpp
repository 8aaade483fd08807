#include "progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace tapeflow::cli {

bool is_terminal(int fd) { return ::isatty(fd) == 1; }

int terminal_columns(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    int n = 0;
    const auto [end, ec] = std::from_chars(columns, columns + std::strlen(columns), n);
    if (ec == std::errc() && *end == '\0' && n > 0) return n;
  }
  return 80;
}

ProgressBar::ProgressBar(std::ostream& out, bool redraw, std::int64_t epoch, std::int64_t epochs,
                         std::int64_t batches, int columns)
    : out_(out),
      redraw_(redraw),
      epoch_(epoch),
      epochs_(epochs),
      batches_(batches),
      columns_(columns),
      start_(Clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::line(std::int64_t epoch, std::int64_t epochs, std::int64_t done,
                              std::int64_t batches, double loss, double accuracy, double examples_per_second,
                              bool with_bar, int columns) {
  constexpr std::size_t kBarWidth = 20, kMinBarWidth = 5;
  auto bar = [&](std::size_t cells) {
    std::string b(cells + 3, ' ');  // "[" + cells + "] "
    const std::size_t filled = batches > 0
                                   ? std::min<std::size_t>(cells, static_cast<std::size_t>(done) * cells /
                                                                      static_cast<std::size_t>(batches))
                                   : cells;
    b.front() = '[';
    b[cells + 1] = ']';
    for (std::size_t i = 0; i < filled; ++i) b[i + 1] = '=';
    if (filled < cells) b[filled + 1] = '>';
    return b;
  };
  const int counter_width = static_cast<int>(fmt::formatted_size("{}", batches));
  const std::string head = fmt::format("epoch {}/{} ", epoch, epochs);
  const std::string counter = fmt::format("{:>{}}/{}", done, counter_width, batches);
  // The fields after the counter, least important last.
  const std::string fields[] = {fmt::format(" loss {:.4f}", loss), fmt::format(" acc {:.4f}", accuracy),
                                fmt::format(" {:.0f} ex/s", examples_per_second)};
  const std::string all_fields = fields[0] + fields[1] + fields[2];
  if (columns <= 0) return head + (with_bar ? bar(kBarWidth) : "") + counter + all_fields;

  const std::size_t room = static_cast<std::size_t>(columns) - 1;
  const std::size_t text = head.size() + counter.size() + all_fields.size();
  if (with_bar && text + kMinBarWidth + 3 <= room)
    return head + bar(std::min(kBarWidth, room - text - 3)) + counter + all_fields;
  std::string out = head + counter;
  for (const std::string& field : fields) {
    if (out.size() + field.size() > room) break;
    out += field;
  }
  if (out.size() > room) out.resize(room);
  return out;
}

void ProgressBar::update(std::int64_t done, std::int64_t examples, double loss, double accuracy) {
  const auto now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(examples) / seconds : 0.0;
  if (redraw_) {
    if (done < batches_ && now - last_draw_ < std::chrono::milliseconds(100) && drawn_) return;
    const int columns = columns_ > 0 ? columns_ : terminal_columns(2);
    out_ << '\r' << line(epoch_, epochs_, done, batches_, loss, accuracy, rate, true, columns) << "\x1b[K"
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
