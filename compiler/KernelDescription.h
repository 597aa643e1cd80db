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

/// Where the threads of a row kernel keep their share of a row between the
/// statistic and the epilogue.
enum class RowStorage {
  /// Registers: at most mlir::norm::kMaxElementsPerThread elements per thread.
  Registers,
  /// Dynamic shared memory (norm.fused_row only): the row is read from global
  /// memory once, staged while its statistic accumulates, and read back.
  Shared,
  /// Nowhere (norm.fused_row only): rows too long for shared memory are read
  /// twice, once for the statistic and once to normalize them; rows without a
  /// statistic once.
  Streamed,
};

/// The module attribute (i64) in which norm-generate-kernels records the
/// shared memory per CTA it generated kernels for: describing them again
/// (kernel bundles) must make the same choices.
constexpr llvm::StringLiteral kMaxSharedBytesAttrName = "norm.max_shared_bytes";

/// Shared memory of a CTA that staged rows leave to the static buffer of the
/// row reduction (at most 32 warps x 3 sums x 4 bytes).
constexpr int64_t kReservedSharedBytes = 1024;

/// How the kernel of `kernelOp` with `launch` keeps its rows on a target
/// whose CTAs may use `maxSharedBytes` of shared memory
/// (TargetOptions::getMaxSharedBytes): registers when a thread's share fits
/// them, else shared memory when the rows the CTA works on at once fit in
/// `maxSharedBytes` less kReservedSharedBytes, else streamed. So a row of
/// 100000 bf16 values is staged on sm_90 (227 KiB) and streamed on sm_80
/// (163 KiB) and sm_89 (99 KiB), which would refuse to launch the staged
/// kernel.
RowStorage getRowStorage(mlir::Operation *kernelOp, const LaunchConfig &launch,
                         int64_t maxSharedBytes);

/// The row storage of the kernel `signature` describes: the one describeKernel
/// chose, recorded in the signature's shared bytes. The generator follows it.
RowStorage getRowStorage(mlir::Operation *kernelOp,
                         const KernelSignature &signature);

/// Bytes one row takes when staged in shared memory: whole `vector`s of the
/// element type of `v` (the input's, or f32 with f32_residual), rounded up
/// to 16.
int64_t getStagedRowBytes(mlir::norm::FusedRowOp op, int64_t vector);

/// The op as the runtime describes operations. Parameters of mixed element
/// types are summarised by the first one present.
mlir::FailureOr<OpSpec> getOpSpec(mlir::Operation *kernelOp);

/// The op's logical row count when static (tokens for the QK-Norm
/// prologue), or -1.
int64_t getStaticRows(mlir::Operation *kernelOp);

/// The kernel's symbol: a readable prefix, a hash of every attribute and
/// type the generated code depends on, the launch suffix and, for rows not
/// kept in registers, `_smem` or `_stream` (getRowStorage with
/// `maxSharedBytes`), e.g. `norm_rms_add_h4096_bf16_bf16_1f2e3d4c_v8_t128_w4_r1`.
std::string getKernelName(mlir::Operation *kernelOp,
                          mlir::norm::LaunchAttr launch,
                          int64_t maxSharedBytes);

/// Bytes a buffer of `elementType` must be aligned to for `vector`-wide
/// accesses (16-byte accesses at most; wider vectors split in 16-byte parts).
int64_t getBufferAlignment(ElementType elementType, int64_t vector);

/// The launch ABI of the kernel generated for `kernelOp` with `launch` (the
/// op's own launch when null) for a target whose CTAs may use
/// `maxSharedBytes` of shared memory. Fails with a diagnostic at the op when
/// it has no launch configuration.
mlir::FailureOr<KernelSignature>
describeKernel(mlir::Operation *kernelOp, mlir::norm::LaunchAttr launch,
               int64_t maxSharedBytes);

/// The scalar fallback of a vector kernel: the same op with vector = 1, for
/// buffers or strides the vector kernel's alignment rules reject. Null for
/// a scalar launch.
mlir::norm::LaunchAttr getScalarFallback(mlir::norm::LaunchAttr launch);

/// The signatures of every kernel the host-side kernel ops below `root`
/// reference (through their `kernel` attribute), with their scalar
/// fallbacks, each kernel once, as generated for `maxSharedBytes` of shared
/// memory per CTA. Fails with a diagnostic at a kernel op whose referenced
/// kernel was generated for another target.
mlir::FailureOr<std::vector<KernelSignature>>
describeReferencedKernels(mlir::Operation *root, bool withFallbacks,
                          int64_t maxSharedBytes);

} // namespace norm

#endif // NORM_COMPILER_KERNELDESCRIPTION_H
