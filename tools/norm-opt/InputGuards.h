//===- InputGuards.h - input that would crash upstream verifiers -*- C++ -*-===//
//
// norm-opt's promise is a diagnostic and exit status 1 for any bad input,
// never a crash. A few upstream verifiers trust attributes they should
// check (gpu.func's `workgroup_attributions` indexes its block arguments);
// this check runs first, on IR parsed without verification, and rejects
// what they would crash on.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMOPT_INPUTGUARDS_H
#define NORM_TOOLS_NORMOPT_INPUTGUARDS_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"

namespace norm {

/// Failure (the diagnostics printed) when a chunk of `input` (split as
/// `config` splits it) holds IR that an upstream verifier would crash on.
/// Input that does not parse passes: the real run reports it.
mlir::LogicalResult rejectCrashingInput(const llvm::MemoryBuffer &input,
                                        mlir::DialectRegistry &registry,
                                        const mlir::MlirOptMainConfig &config);

} // namespace norm

#endif // NORM_TOOLS_NORMOPT_INPUTGUARDS_H
