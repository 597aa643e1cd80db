//===- KernelDescription.h - what a kernel op becomes -----------*- C++ -*-===//
//
// The single source of truth that ties a kernel op (norm.fused_row,
// norm.qk_norm_prologue, norm.column_stats) to its generated kernel: the
// buffers in ABI order, the kernel's name and its launch signature. The
// kernel generator builds the gpu.func signature from describeKernel, and
// norm-opt and the compiler library report the same signature to the host.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_KERNELDESCRIPTION_H
#define NORM_COMPILER_KERNELDESCRIPTION_H

#include "compiler/Compiler.h"
#include "compiler/KernelSignature.h"
#include "dialects/NormOps.h"

#include "mlir/Support/LLVM.h"

#include <string>

namespace norm {

/// One buffer of a kernel op: its ABI name and the operand or result.
struct KernelBuffer {
  llvm::StringRef name;
  mlir::Value value;
  bool isResult = false;
};

/// Whether `op` stands for one generated kernel.
bool isKernelOp(mlir::Operation *op);

/// The op's `launch` attribute (null when it has none or is no kernel op).
mlir::norm::LaunchAttr getLaunch(mlir::Operation *kernelOp);

/// The buffers of a kernel op in ABI order: present operands, then results.
llvm::SmallVector<KernelBuffer> getKernelBuffers(mlir::Operation *kernelOp);

/// Length of the rows the kernel's thread groups work on: hidden, hidden /
/// groups for GroupNorm, head_dim for the QK-Norm prologue. Column statistics
/// work on `vector`-wide column tiles; their "row" is the hidden size.
int64_t getKernelRowLength(mlir::Operation *kernelOp);

/// The op as the runtime describes operations. Parameters of mixed element
/// types are summarised by the first one present.
mlir::FailureOr<OpSpec> getOpSpec(mlir::Operation *kernelOp);

/// The op's logical row count when static (tokens for the QK-Norm
/// prologue), or -1.
int64_t getStaticRows(mlir::Operation *kernelOp);

/// The kernel's symbol: a readable prefix, a hash of every attribute and
/// type the generated code depends on, and the launch suffix, e.g.
/// `norm_rms_add_h4096_bf16_bf16_1f2e3d4c_v8_t128_w4_r1`.
std::string getKernelName(mlir::Operation *kernelOp,
                          mlir::norm::LaunchAttr launch);

/// Bytes a buffer of `elementType` must be aligned to for `vector`-wide
/// accesses (16-byte accesses at most; wider vectors split in 16-byte parts).
int64_t getBufferAlignment(ElementType elementType, int64_t vector);

/// The launch ABI of the kernel generated for `kernelOp` with `launch` (the
/// op's own launch when null). Fails with a diagnostic at the op when it has
/// no launch configuration or the configuration does not fit it.
mlir::FailureOr<KernelSignature>
describeKernel(mlir::Operation *kernelOp, mlir::norm::LaunchAttr launch = {});

/// The scalar fallback of a vector kernel: the same op with vector = 1, for
/// buffers or strides the vector kernel's alignment rules reject. Null for
/// a scalar launch.
mlir::norm::LaunchAttr getScalarFallback(mlir::norm::LaunchAttr launch);

/// The signatures of every kernel the host-side kernel ops below `root`
/// reference (through their `kernel` attribute), with their scalar
/// fallbacks, each kernel once.
mlir::FailureOr<std::vector<KernelSignature>>
describeReferencedKernels(mlir::Operation *root, bool withFallbacks);

} // namespace norm

#endif // NORM_COMPILER_KERNELDESCRIPTION_H
