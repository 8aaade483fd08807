#pragma once
// Collecting the library's log messages in a test (tapeflow/logging.h):
//
//   tf::testing::LogCapture log(tf::LogLevel::Info);  // Info and above, until `log` goes
//   ...
//   EXPECT_THAT(log.messages, ElementsAre(HasSubstr("traces each size")));

#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/logging.h"

namespace tapeflow::testing {

/// Takes the log sink while alive, keeping each message; with a level, also lowers the minimum
/// level to it and puts back the default (Warning) afterwards.
class LogCapture {
 public:
  LogCapture()
      : previous_(set_log_sink([this](LogLevel, std::string_view m) { messages.emplace_back(m); })) {}
  explicit LogCapture(LogLevel min) : LogCapture() {
    set_min_log_level(min);
    lowered_ = true;
  }
  ~LogCapture() {
    set_log_sink(previous_);
    if (lowered_) set_min_log_level(LogLevel::Warning);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> messages;

 private:
  LogSink previous_;
  bool lowered_ = false;
};

}  // namespace tapeflow::testing
