//===- LoweringPasses.h - kernel ops to NVVM and PTX ------------*- C++ -*-===//

#ifndef NORM_PASSES_LOWERINGPASSES_H
#define NORM_PASSES_LOWERINGPASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::norm {

#define GEN_PASS_DECL
#include "passes/LoweringPasses.h.inc"

/// Options of the `norm-lower-to-ptx` pipeline.
struct NormLowerToPtxOptions : public PassPipelineOptions<NormLowerToPtxOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target GPU: sm_80, sm_89, sm_90 or sm_90a"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<int64_t> maxSharedBytes{
      *this, "max-shared-bytes",
      llvm::cl::desc("Shared memory a CTA may use, in bytes (0: the chip's); "
                     "decides which long rows are staged"),
      llvm::cl::init(0)};
  PassOptions::Option<int> ptxVersion{
      *this, "ptx-version",
      llvm::cl::desc("PTX ISA version x 10 (80: PTX 8.0, the default)"),
      llvm::cl::init(80)};
  PassOptions::Option<int> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimization level"),
      llvm::cl::init(3)};
  PassOptions::Option<bool> scalarFallback{
      *this, "scalar-fallback",
      llvm::cl::desc("Also generate the vector = 1 kernel of vector kernels"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> vector{
      *this, "vector", llvm::cl::desc("Force elements per access (0: heuristic)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> threadsPerRow{
      *this, "threads-per-row",
      llvm::cl::desc("Force threads per row (0: heuristic)"), llvm::cl::init(0)};
  PassOptions::Option<int64_t> warps{
      *this, "warps", llvm::cl::desc("Force warps per CTA (0: heuristic)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> rowsPerCta{
      *this, "rows-per-cta",
      llvm::cl::desc("Force rows per CTA (0: heuristic)"), llvm::cl::init(0)};
};

/// Checks options that parsing cannot: the chip, the shared memory and the
/// PTX version.
LogicalResult verifyNormLowerToPtxOptions(
    const NormLowerToPtxOptions &options,
    function_ref<LogicalResult(const Twine &)> emitError);

/// Launch configurations, kernels, their GPU-only lowerings, NVVM, and
/// `gpu-module-to-binary` to PTX (`format=isa`). Only `gpu.module
/// @norm_kernels` is lowered: host code and kernel ops stay as they are.
void buildNormLowerToPtxPipeline(OpPassManager &pm,
                                 const NormLowerToPtxOptions &options);

/// The part of the pipeline that runs on `gpu.module @norm_kernels` once the
/// kernels exist, up to and including `gpu-module-to-binary`.
void buildNormKernelsToPtxPipeline(OpPassManager &pm,
                                   const NormLowerToPtxOptions &options);

/// Registers the passes above and the `norm-lower-to-ptx` pipeline.
void registerNormLoweringPasses();

/// Registers what in-process PTX generation needs besides the dialects the
/// passes load: NVVM target attributes and the LLVM IR translations.
void registerNormPtxExtensions(DialectRegistry &registry);

/// The name of the kernel module that the kernel generator fills.
constexpr llvm::StringLiteral kKernelModuleName = "norm_kernels";

} // namespace mlir::norm

#endif // NORM_PASSES_LOWERINGPASSES_H
