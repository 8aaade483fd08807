#pragma once
/// \file logging.h
/// Warnings from tapeflow (e.g. watching an integer tensor) go through one sink that tests can
/// capture and users can silence or redirect.

#include <functional>
#include <string_view>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Severity of a message, lowest first.
enum class LogLevel { Debug, Info, Warning, Error };

/// Receives each message at or above the minimum level (set_min_log_level) with its level.
using LogSink = std::function<void(LogLevel, std::string_view message)>;

/// Replaces the sink; returns the previous one. The default prints
/// "WARNING:tapeflow:<message>" to stderr, like TensorFlow's Python logger.
LogSink set_log_sink(LogSink sink);
/// Messages below `level` are dropped (default: Warning).
void set_min_log_level(LogLevel level);

/// Sends `message` to the sink unless `level` is below the minimum level. tapeflow's own
/// warnings go through it; programs may log through it too.
void log(LogLevel level, std::string_view message);

}  // namespace tapeflow
#pragma GCC visibility pop
