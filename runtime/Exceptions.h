//===- Exceptions.h - no exception crosses the API --------------*- C++ -*-===//
//
// libnormjit promises Status values, never exceptions, to C and C++ hosts,
// but the standard library it uses may throw: std::bad_alloc anywhere a
// string or vector grows, std::system_error when a thread cannot start, and
// an injected compiler or log sink may throw anything. Every public entry
// point, every thread libnormjit starts and every OnceMap build catches
// here, so that a failure is a Status and no waiter is left waiting.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_EXCEPTIONS_H
#define NORM_RUNTIME_EXCEPTIONS_H

#include "runtime/Status.h"

#include <string_view>

namespace norm::jit {

/// The Status for the exception being handled (call it in a catch block):
/// OutOfMemory for std::bad_alloc, Internal with what() for anything else,
/// prefixed with `where`. Never throws: should even the message not fit in
/// memory, the status comes without one.
Status statusFromCurrentException(std::string_view where) noexcept;

/// `body()` (a Status), or the Status of the exception it throws.
template <typename Body>
Status catchExceptions(std::string_view where, Body &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return statusFromCurrentException(where);
  }
}

} // namespace norm::jit

#endif // NORM_RUNTIME_EXCEPTIONS_H
