//===- LoweringPasses.h - kernel ops to NVVM and PTX ------------*- C++ -*-===//

#ifndef NORM_PASSES_LOWERINGPASSES_H
#define NORM_PASSES_LOWERINGPASSES_H

#include "dialects/NormDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class LLVMTypeConverter;
} // namespace mlir

namespace mlir::norm {

#define GEN_PASS_DECL
#include "passes/LoweringPasses.h.inc"

/// What the lowering to PTX is asked for, as plain data: the pipelines'
/// options parse into it.
struct LowerToPtxConfig {
  /// Target fields to record on the module (norm-set-target): empty, 0 and
  /// -1 keep the module's (or the default target's).
  std::string chip;
  int ptxVersion = 0;
  int64_t maxSharedBytes = -1;
  bool pdl = false; // true: set the target's pdl
  int optLevel = 3;
  bool scalarFallback = true;
  /// Launch configuration fields to force (0: the heuristic's).
  int64_t vector = 0, threadsPerRow = 0, warps = 0, rowsPerCta = 0;
  int64_t blockN = 0, stages = 0; // attention only

  /// The target these fields make of the default one.
  ::norm::TargetOptions getTarget() const;
};

/// The options of `norm-lower-to-ptx`, shared with `norm-to-ptx`.
template <typename Derived>
struct NormLowerToPtxOptionsBase : public PassPipelineOptions<Derived> {
  mlir::detail::PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU: sm_80, sm_89, sm_90 or sm_90a (default: "
                     "the module's norm.target, else sm_90)"),
      llvm::cl::init("")};
  mlir::detail::PassOptions::Option<int64_t> maxSharedBytes{
      *this, "max-shared-bytes",
      llvm::cl::desc("Shared memory a CTA may use, in bytes (0: the chip's); "
                     "decides which long rows are staged"),
      llvm::cl::init(-1)};
  mlir::detail::PassOptions::Option<int> ptxVersion{
      *this, "ptx-version",
      llvm::cl::desc("PTX ISA version x 10 (default: the module's, else 80: "
                     "PTX 8.0)"),
      llvm::cl::init(0)};
  mlir::detail::PassOptions::Option<bool> pdl{
      *this, "pdl",
      llvm::cl::desc("Programmatic dependent launch (sm_90 on): kernels "
                     "load their weights, then wait for the grid before "
                     "them (griddepcontrol.wait) and let the next one start "
                     "(griddepcontrol.launch_dependents)"),
      llvm::cl::init(false)};
  mlir::detail::PassOptions::Option<int> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimization level"),
      llvm::cl::init(3)};
  mlir::detail::PassOptions::Option<bool> scalarFallback{
      *this, "scalar-fallback",
      llvm::cl::desc("Also generate the vector = 1 kernel of vector kernels"),
      llvm::cl::init(true)};
  mlir::detail::PassOptions::Option<int64_t> vector{
      *this, "vector", llvm::cl::desc("Force elements per access (0: heuristic)"),
      llvm::cl::init(0)};
  mlir::detail::PassOptions::Option<int64_t> threadsPerRow{
      *this, "threads-per-row",
      llvm::cl::desc("Force threads per row (0: heuristic)"), llvm::cl::init(0)};
  mlir::detail::PassOptions::Option<int64_t> warps{
      *this, "warps", llvm::cl::desc("Force warps per CTA (0: heuristic)"),
      llvm::cl::init(0)};
  mlir::detail::PassOptions::Option<int64_t> rowsPerCta{
      *this, "rows-per-cta",
      llvm::cl::desc("Force rows per CTA (0: heuristic)"), llvm::cl::init(0)};
  mlir::detail::PassOptions::Option<int64_t> blockN{
      *this, "block-n",
      llvm::cl::desc("Force attention's keys per tile (0: heuristic)"),
      llvm::cl::init(0)};
  mlir::detail::PassOptions::Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("Force attention's key/value tiles in flight (0: "
                     "heuristic)"),
      llvm::cl::init(0)};

  LowerToPtxConfig getConfig() const {
    LowerToPtxConfig config;
    config.chip = chip;
    config.ptxVersion = ptxVersion;
    config.maxSharedBytes = maxSharedBytes;
    config.pdl = pdl;
    config.optLevel = optLevel;
    config.scalarFallback = scalarFallback;
    config.vector = vector;
    config.threadsPerRow = threadsPerRow;
    config.warps = warps;
    config.rowsPerCta = rowsPerCta;
    config.blockN = blockN;
    config.stages = stages;
    return config;
  }
};

struct NormLowerToPtxOptions
    : public NormLowerToPtxOptionsBase<NormLowerToPtxOptions> {};

/// Checks what parsing cannot: the target the options ask for.
LogicalResult verifyLowerToPtxConfig(
    const LowerToPtxConfig &config,
    function_ref<LogicalResult(const Twine &)> emitError);

/// The module's target, then launch configurations, kernels, their GPU-only
/// lowerings, NVVM, and `gpu-module-to-binary` to PTX (`format=isa`). Only
/// `gpu.module @norm_kernels` is lowered: host code and kernel ops stay as
/// they are.
void buildNormLowerToPtxPipeline(OpPassManager &pm,
                                 const LowerToPtxConfig &config);

/// The part of the pipeline that runs once the kernels exist, up to and
/// including `gpu-module-to-binary`, for the module's target.
void buildNormKernelsToPtxPipeline(OpPassManager &pm, int optLevel);

/// norm-set-target for the target fields of `config` (none when it keeps
/// them all).
void addSetTargetPass(OpPassManager &pm, const LowerToPtxConfig &config);

/// Registers the passes above and the `norm-lower-to-ptx` pipeline.
void registerNormLoweringPasses();

/// Registers what in-process PTX generation needs besides the dialects the
/// passes load: NVVM target attributes, the LLVM IR translations and the
/// ConvertToLLVM interfaces convert-gpu-to-nvvm lowers through (the norm
/// dialect's among them).
void registerNormPtxExtensions(DialectRegistry &registry);

/// The NVVM lowering of the warp matrix and async copy ops (`norm.mma_sync`,
/// `norm.ldmatrix`, `norm.async_copy`, `norm.async_commit`,
/// `norm.async_wait`) with `converter`'s types and address spaces.
void populateNormToNVVMConversionPatterns(const LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns);

/// Gives the norm dialect the ConvertToLLVM interface that adds those
/// patterns to convert-gpu-to-nvvm.
void registerConvertNormToNVVMInterface(DialectRegistry &registry);

/// The name of the kernel module that the kernel generator fills.
constexpr llvm::StringLiteral kKernelModuleName = "norm_kernels";

} // namespace mlir::norm

#endif // NORM_PASSES_LOWERINGPASSES_H
