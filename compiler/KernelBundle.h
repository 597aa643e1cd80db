//===- KernelBundle.h - PTX and signatures of a lowered module --*- C++ -*-===//
//
// After `norm-lower-to-ptx`, the kernel module is a `gpu.binary` holding PTX
// and the host-side kernel ops still name their kernels: together they are a
// kernel bundle (PTX text plus one signature per kernel).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_KERNELBUNDLE_H
#define NORM_COMPILER_KERNELBUNDLE_H

#include "compiler/model/KernelSignature.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace norm {

/// The PTX of `gpu.binary @norm_kernels`. Fails with a diagnostic when the
/// module holds no such binary or its object is not PTX.
mlir::FailureOr<std::string> getKernelPtx(mlir::ModuleOp module);

/// The signatures of every kernel the kernel ops below `root` reference
/// (through their `kernel` attribute), with their scalar fallbacks when
/// `withFallbacks`, each kernel once, as generated for `target`. Fails with
/// a diagnostic at a kernel op whose referenced kernel was generated for
/// another target.
mlir::FailureOr<std::vector<KernelSignature>>
describeReferencedKernels(mlir::Operation *root, bool withFallbacks,
                          const TargetOptions &target);

/// The signatures of the kernels that the module's kernel ops reference and
/// that `ptx` defines, with the scalar fallbacks that it defines too, as
/// norm-generate-kernels generated them for the module's target
/// (norm.target).
mlir::FailureOr<std::vector<KernelSignature>>
getBundleSignatures(mlir::ModuleOp module, llvm::StringRef ptx);

} // namespace norm

#endif // NORM_COMPILER_KERNELBUNDLE_H
