//===- Exceptions.cpp - no exception crosses the API ----------------------===//

#include "runtime/Exceptions.h"

#include <exception>
#include <new>
#include <string>

using namespace norm;
using namespace norm::jit;

Status norm::jit::statusFromCurrentException(std::string_view where) noexcept {
  ErrorCode code = ErrorCode::Internal;
  try {
    try {
      throw;
    } catch (const std::bad_alloc &) {
      code = ErrorCode::OutOfMemory;
      return Status::error(code, std::string(where) + ": out of host memory");
    } catch (const std::exception &e) {
      return Status::error(code, std::string(where) +
                                     ": unexpected exception: " + e.what());
    } catch (...) {
      return Status::error(code,
                           std::string(where) + ": unexpected exception");
    }
  } catch (...) {
    // The message itself did not fit; an empty string allocates nothing.
    return Status::error(code, std::string());
  }
}
