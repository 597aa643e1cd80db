//===- Log.cpp - what libnormjit reports about its work -------------------===//

#include "runtime/Log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace norm;
using namespace norm::jit;

LogLevel Logger::getLevelFromEnvironment(LogLevel fallback) {
  const char *value = std::getenv("NORMJIT_LOG");
  if (!value || value[0] < '0' || value[0] > '3' || value[1] != '\0')
    return fallback;
  return static_cast<LogLevel>(value[0] - '0');
}

void Logger::log(LogLevel messageLevel, std::string_view message) const {
  if (!isEnabled(messageLevel))
    return;
  if (sink) {
    sink(messageLevel, message);
    return;
  }
  // One write per message keeps lines from different threads whole.
  std::string line = "normjit: ";
  line.append(message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}
