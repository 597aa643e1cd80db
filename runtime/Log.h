//===- Log.h - what libnormjit reports about its work -----------*- C++ -*-===//
//
// Compiles, cache hits and misses and tuning runs are reported through one
// logger per context. The level comes from the API or from NORMJIT_LOG:
// 0 quiet, 1 warnings (default), 2 info (one line per compile, the tuning
// summary), 3 debug (every cache lookup, every timed candidate).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_LOG_H
#define NORM_RUNTIME_LOG_H

#include <functional>
#include <string_view>

namespace norm::jit {

enum class LogLevel : int { Quiet = 0, Warning = 1, Info = 2, Debug = 3 };

class Logger {
public:
  using Sink = std::function<void(LogLevel, std::string_view)>;

  /// An empty sink writes "normjit: <message>" lines to stderr.
  explicit Logger(LogLevel level = LogLevel::Warning, Sink sink = {})
      : level(level), sink(std::move(sink)) {}

  /// NORMJIT_LOG as a level, or `fallback` when unset or malformed.
  static LogLevel getLevelFromEnvironment(LogLevel fallback);

  bool isEnabled(LogLevel messageLevel) const {
    return messageLevel != LogLevel::Quiet && messageLevel <= level;
  }
  void log(LogLevel messageLevel, std::string_view message) const;

private:
  LogLevel level;
  Sink sink;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_LOG_H
