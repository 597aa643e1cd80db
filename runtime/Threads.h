//===- Threads.h - starting threads that may not start ----------*- C++ -*-===//
//
// libnormjit starts threads only to compile several kernel variants at once;
// the calling thread always works too, so when the system refuses a thread
// (std::system_error: EAGAIN under a thread limit, or std::bad_alloc) the
// work runs on fewer threads instead of failing.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_THREADS_H
#define NORM_RUNTIME_THREADS_H

#include <system_error>
#include <thread>
#include <vector>

namespace norm::jit {

/// Whether thread starts fail on purpose (setThreadStartsFailForTesting).
bool threadStartsFailForTesting();

/// Test seam: while true, every tryStartThread fails as if the system had
/// refused the thread (tests run as root, which thread limits do not bind).
void setThreadStartsFailForTesting(bool fail);

/// Starts a thread running `work` into `pool`; false when it cannot start.
template <typename Work>
bool tryStartThread(std::vector<std::thread> &pool, Work &work) noexcept {
  try {
    if (threadStartsFailForTesting())
      throw std::system_error(
          std::make_error_code(std::errc::resource_unavailable_try_again),
          "refused for testing");
    pool.emplace_back(work);
    return true;
  } catch (...) {
    return false;
  }
}

} // namespace norm::jit

#endif // NORM_RUNTIME_THREADS_H
