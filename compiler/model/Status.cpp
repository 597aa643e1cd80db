//===- Status.cpp - error codes -------------------------------------------===//

#include "compiler/model/Status.h"

std::string_view norm::getErrorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Success:
    return "success";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::Misaligned:
    return "misaligned buffer";
  case ErrorCode::Unsupported:
    return "unsupported";
  case ErrorCode::NoDriver:
    return "no CUDA driver";
  case ErrorCode::NoDevice:
    return "no CUDA device";
  case ErrorCode::DriverError:
    return "CUDA driver error";
  case ErrorCode::CompileError:
    return "compile error";
  case ErrorCode::NotFound:
    return "kernel not found";
  case ErrorCode::IoError:
    return "I/O error";
  case ErrorCode::Internal:
    return "internal error";
  case ErrorCode::OutOfMemory:
    return "out of memory";
  }
  return "unknown error";
}
