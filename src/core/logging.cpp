#include "tapeflow/logging.h"

#include <atomic>
#include <iostream>
#include <mutex>

namespace tapeflow {
namespace {

std::string_view level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug:
      return "DEBUG";
    case LogLevel::Info:
      return "INFO";
    case LogLevel::Warning:
      return "WARNING";
    case LogLevel::Error:
      return "ERROR";
  }
  return "LOG";
}

struct Logger {
  std::mutex mutex;
  LogSink sink = [](LogLevel level, std::string_view message) {
    std::cerr << level_name(level) << ":tapeflow:" << message << '\n';
  };
  std::atomic<LogLevel> min_level{LogLevel::Warning};
};

Logger& logger() {
  static Logger l;
  return l;
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
  std::lock_guard lock(logger().mutex);
  std::swap(logger().sink, sink);
  return sink;
}

void set_min_log_level(LogLevel level) { logger().min_level.store(level); }

void log(LogLevel level, std::string_view message) {
  Logger& l = logger();
  if (level < l.min_level.load()) return;
  std::lock_guard lock(l.mutex);
  if (l.sink) l.sink(level, message);
}

}  // namespace tapeflow
