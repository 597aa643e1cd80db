//===- KernelOutput.h - norm-opt's .ptx and .cubin outputs ------*- C++ -*-===//
//
// `norm-opt in.mlir --norm-lower-to-ptx -o out.ptx` writes the PTX of the
// kernel module and, beside it, `out.json` with the signature of every
// kernel; `-o out.cubin` assembles the PTX with ptxas instead.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMOPT_KERNELOUTPUT_H
#define NORM_TOOLS_NORMOPT_KERNELOUTPUT_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

namespace norm {

/// Whether `outputFilename` asks for a kernel bundle rather than IR.
bool isKernelBundleOutput(llvm::StringRef outputFilename);

/// Runs the command line's passes on `inputFilename` like MlirOptMain, then
/// writes the kernel bundle to `outputFilename` (.ptx or .cubin) and its
/// signatures to the `.json` beside it.
mlir::LogicalResult writeKernelBundle(llvm::StringRef inputFilename,
                                      llvm::StringRef outputFilename,
                                      mlir::DialectRegistry &registry);

} // namespace norm

#endif // NORM_TOOLS_NORMOPT_KERNELOUTPUT_H
