//===- Status.h - libnormjit error codes and status values ------*- C++ -*-===//
//
// Every libnormjit call reports failure as a Status (compiler/model/Status.h,
// shared with the compiler): a code a program can branch on and a message a
// person can act on. Nothing throws, nothing aborts. The codes are the
// values of the C API's normjit_status.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_STATUS_H
#define NORM_RUNTIME_STATUS_H

#include "compiler/model/Status.h"

namespace norm::jit {
using norm::ErrorCode;
using norm::getErrorCodeName;
using norm::Status;
} // namespace norm::jit

#endif // NORM_RUNTIME_STATUS_H
