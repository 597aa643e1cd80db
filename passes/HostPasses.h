//===- HostPasses.h - running kernels on the host ---------------*- C++ -*-===//
//
// The host execution path: `norm-kernels-to-host` turns gpu.func kernels into
// host functions that run the whole grid, `norm-host-to-llvm` lowers those to
// the LLVM dialect for the CPU (see compiler/HostExecution.h for the JIT).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_HOSTPASSES_H
#define NORM_PASSES_HOSTPASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::norm {

#define GEN_PASS_DECL
#include "passes/HostPasses.h.inc"

/// The host module's i64 cell in which a host function records the first
/// fault of its kernel's program (HostFault; 0: none).
constexpr llvm::StringLiteral kHostFaultSymbol = "__norm_host_fault";
enum class HostFault : int64_t {
  None = 0,
  /// An mbarrier wait for a phase that never completes.
  BarrierNeverCompletes = 1,
  /// An arrival at an mbarrier beyond its phase's count.
  BarrierOverArrival = 2,
};

/// The suffix of the host function that runs kernel `k`: `k_host`.
constexpr llvm::StringLiteral kHostFunctionSuffix = "_host";
/// Unit attribute marking the functions `norm-kernels-to-host` created.
constexpr llvm::StringLiteral kHostKernelAttrName = "norm.host_kernel";

/// Lowers host functions (scf, arith, math, vector, memref, func) to the LLVM
/// dialect for the CPU. Function arguments of static memref type become bare
/// pointers, the kernel ABI; f16 and bf16 arithmetic runs in f32, their
/// conversions are integer code (exact round-to-nearest-even) and their
/// values i16, so that the code is the same on every x86-64 CPU.
void buildHostToLLVMPipeline(OpPassManager &pm);

/// Registers the host passes and the `norm-host-to-llvm` pipeline.
void registerNormHostPasses();

} // namespace mlir::norm

#endif // NORM_PASSES_HOSTPASSES_H
