//===- Threads.cpp - starting threads that may not start ------------------===//

#include "runtime/Threads.h"

#include <atomic>

using namespace norm;
using namespace norm::jit;

static std::atomic<bool> failThreadStarts{false};

bool norm::jit::threadStartsFailForTesting() {
  return failThreadStarts.load(std::memory_order_relaxed);
}

void norm::jit::setThreadStartsFailForTesting(bool fail) {
  failThreadStarts.store(fail, std::memory_order_relaxed);
}
