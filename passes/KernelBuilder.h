//===- KernelBuilder.h - the gpu.func of a kernel ---------------*- C++ -*-===//
//
// Builds the kernel program of one operation for one signature: a gpu.func
// that uses only gpu thread/block ids, barriers and dynamic shared memory,
// arith, math, vector, scf, memref and the norm dialect's collectives
// (norm.row_allreduce, the warp matrix ops) and asynchronous copies, so
// that both the GPU lowering and the host execution path can run it. The operation and its signature (norm::describeKernel)
// say everything the kernel needs: the emitters read no kernel op.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_KERNELBUILDER_H
#define NORM_PASSES_KERNELBUILDER_H

#include "compiler/model/KernelModel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::norm {

/// A CUtensorMap: 128 bytes, as i64 words (memref<16xi64>).
constexpr int64_t kTensorMapWords = 16;

/// Builds the kernel of `spec` with the ABI and launch configuration of
/// `signature` at the builder's insertion point, inside a gpu.module.
gpu::GPUFuncOp buildKernel(OpBuilder &builder, Location loc,
                           const ::norm::OpSpec &spec,
                           const ::norm::KernelSignature &signature);

/// The bodies of the kernels of each kind, emitted into `func`.
void emitFusedRowKernel(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                        const ::norm::KernelSignature &signature,
                        const ::norm::OpSpec &spec);
void emitQKNormPrologueKernel(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                              const ::norm::KernelSignature &signature,
                              const ::norm::OpSpec &spec);
void emitAttentionKernel(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                         const ::norm::KernelSignature &signature,
                         const ::norm::OpSpec &spec);
void emitColumnStatsKernel(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                           const ::norm::KernelSignature &signature,
                           const ::norm::OpSpec &spec);

} // namespace mlir::norm

#endif // NORM_PASSES_KERNELBUILDER_H
