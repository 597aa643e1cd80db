//===- KernelBundle.h - PTX and signatures of a lowered module --*- C++ -*-===//
//
// After `norm-lower-to-ptx`, the kernel module is a `gpu.binary` holding PTX
// and the host-side kernel ops still name their kernels: together they are a
// kernel bundle (PTX text plus one signature per kernel).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_KERNELBUNDLE_H
#define NORM_COMPILER_KERNELBUNDLE_H

#include "compiler/KernelSignature.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace norm {

/// The PTX of `gpu.binary @norm_kernels`. Fails with a diagnostic when the
/// module holds no such binary or its object is not PTX.
mlir::FailureOr<std::string> getKernelPtx(mlir::ModuleOp module);

/// The signatures of the kernels that the module's kernel ops reference and
/// that `ptx` defines, with the scalar fallbacks that it defines too, as
/// norm-generate-kernels generated them: for the shared memory per CTA the
/// module records (kMaxSharedBytesAttrName), else `maxSharedBytes`
/// (TargetOptions::getMaxSharedBytes).
mlir::FailureOr<std::vector<KernelSignature>>
getBundleSignatures(mlir::ModuleOp module, llvm::StringRef ptx,
                    int64_t maxSharedBytes);

} // namespace norm

#endif // NORM_COMPILER_KERNELBUNDLE_H
