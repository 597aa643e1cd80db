//===- SignatureCheck.h - is a stored kernel the one asked for? -*- C++ -*-===//
//
// A cache entry or bundle entry with a valid checksum is intact, not
// necessarily right: its signature (launch configuration, block, grid,
// parameters, shared memory, name) decides how the kernel is launched, and
// one that does not describe the kernel of its key (a forged rows_per_cta
// silently skips rows) must not be launched. Every signature the runtime
// gets, from the disk cache, a bundle or the compiler, is checked here
// against the operation and launch configuration it was asked for.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_SIGNATURECHECK_H
#define NORM_RUNTIME_SIGNATURECHECK_H

#include "compiler/model/KernelModel.h"
#include "runtime/Status.h"

namespace norm::jit {

/// Success when `signature` is the kernel model's signature of `spec` with
/// `launch` for `target` (norm::describeKernel, what the kernel generator
/// builds) and names no fallback. Internal error naming the first field
/// that differs otherwise; callers decide what a mismatch means.
Status checkSignatureFor(const KernelSignature &signature, const OpSpec &spec,
                         const LaunchConfig &launch,
                         const TargetOptions &target);

} // namespace norm::jit

#endif // NORM_RUNTIME_SIGNATURECHECK_H
