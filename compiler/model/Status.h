//===- Status.h - success, or what went wrong and why -----------*- C++ -*-===//
//
// Every layer of norm-opt that plain C++ can reach (the kernel model, the
// compiler library, libnormjit) reports failure as a Status: a code a
// program can branch on and a message a person can act on. Nothing throws,
// nothing aborts. The codes are the values of the C API's normjit_status.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_STATUS_H
#define NORM_COMPILER_MODEL_STATUS_H

#include <string>
#include <string_view>

namespace norm {

enum class ErrorCode : int {
  Success = 0,
  InvalidArgument = 1, // null pointers, bad sizes, mismatched buffers
  Misaligned = 2,      // a buffer no kernel variant can access
  Unsupported = 3,     // a valid request this runtime or device cannot serve
  NoDriver = 4,        // libcuda.so.1 missing or too old
  NoDevice = 5,        // a driver, but no (such) CUDA device
  DriverError = 6,     // a CUDA driver call failed
  CompileError = 7,    // the kernel compiler rejected the operation
  NotFound = 8,        // not in any bundle, and no compiler to build it
  IoError = 9,         // cache or bundle files
  Internal = 10,       // a broken invariant
  OutOfMemory = 11,    // host memory exhausted
};

/// "invalid argument", "no CUDA driver", ...
std::string_view getErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status success() { return {}; }
  static Status error(ErrorCode code, std::string message) {
    Status status;
    status.errorCode = code;
    status.text = std::move(message);
    return status;
  }
  /// An operation or configuration that breaks a rule of the kernel model.
  static Status invalid(std::string message) {
    return error(ErrorCode::InvalidArgument, std::move(message));
  }

  bool ok() const { return errorCode == ErrorCode::Success; }
  explicit operator bool() const { return ok(); }
  ErrorCode code() const { return errorCode; }
  const std::string &message() const { return text; }

  /// The same error with `context` prepended: "context: message".
  Status withContext(std::string_view context) const {
    if (ok())
      return *this;
    return error(errorCode, std::string(context) + ": " + text);
  }

private:
  ErrorCode errorCode = ErrorCode::Success;
  std::string text;
};

} // namespace norm

#endif // NORM_COMPILER_MODEL_STATUS_H
