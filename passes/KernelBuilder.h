//===- KernelBuilder.h - the gpu.func of a kernel op ------------*- C++ -*-===//
//
// Builds the kernel program of one kernel op for one launch configuration:
// a gpu.func that uses only gpu thread/block ids, arith, math, vector, scf,
// memref and norm.row_allreduce, so that both the GPU lowering and the host
// execution path can run it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_KERNELBUILDER_H
#define NORM_PASSES_KERNELBUILDER_H

#include "compiler/KernelSignature.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::norm {

/// Builds the kernel of `kernelOp` with the ABI and launch configuration of
/// `signature` at the builder's insertion point, inside a gpu.module.
FailureOr<gpu::GPUFuncOp> buildKernel(OpBuilder &builder, Operation *kernelOp,
                                      const ::norm::KernelSignature &signature);

} // namespace mlir::norm

#endif // NORM_PASSES_KERNELBUILDER_H
