//===- Pipelines.h - norm programs all the way to PTX -----------*- C++ -*-===//

#ifndef NORM_PASSES_PIPELINES_H
#define NORM_PASSES_PIPELINES_H

#include "passes/LoweringPasses.h"
#include "passes/Passes.h"

namespace mlir::norm {

/// Options of `norm-to-ptx`: those of `norm-fuse` and `norm-lower-to-ptx`.
struct NormToPtxOptions : public PassPipelineOptions<NormToPtxOptions> {
  // Fusion.
  Option<QKNormPlacement> qkNorm{
      *this, "qk-norm", llvm::cl::desc("Where per-head QK-Norm goes"),
      llvm::cl::init(QKNormPlacement::Prologue),
      llvm::cl::values(
          clEnumValN(QKNormPlacement::Prologue, "prologue",
                     "a stand-alone norm.qk_norm_prologue kernel"),
          clEnumValN(QKNormPlacement::Attention, "attention",
                     "the qk_norm of norm.attention (needs an attention "
                     "kernel, which norm-opt does not generate yet)"))};
  Option<bool> f32Residual{
      *this, "f32-residual",
      llvm::cl::desc("Fused add+norm kernels normalize the f32 sum"),
      llvm::cl::init(false)};
  // Lowering.
  Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target GPU: sm_80, sm_89, sm_90 or sm_90a"),
      llvm::cl::init("sm_90")};
  Option<int64_t> maxSharedBytes{
      *this, "max-shared-bytes",
      llvm::cl::desc("Shared memory a CTA may use, in bytes (0: the chip's); "
                     "decides which long rows are staged"),
      llvm::cl::init(0)};
  Option<int> ptxVersion{*this, "ptx-version",
                         llvm::cl::desc("PTX ISA version x 10 (80: PTX 8.0)"),
                         llvm::cl::init(80)};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level"),
                       llvm::cl::init(3)};
  Option<bool> scalarFallback{
      *this, "scalar-fallback",
      llvm::cl::desc("Also generate the vector = 1 kernel of vector kernels"),
      llvm::cl::init(true)};
  Option<int64_t> vector{*this, "vector",
                         llvm::cl::desc("Force elements per access (0: heuristic)"),
                         llvm::cl::init(0)};
  Option<int64_t> threadsPerRow{
      *this, "threads-per-row",
      llvm::cl::desc("Force threads per row (0: heuristic)"), llvm::cl::init(0)};
  Option<int64_t> warps{*this, "warps",
                        llvm::cl::desc("Force warps per CTA (0: heuristic)"),
                        llvm::cl::init(0)};
  Option<int64_t> rowsPerCta{
      *this, "rows-per-cta",
      llvm::cl::desc("Force rows per CTA (0: heuristic)"), llvm::cl::init(0)};

  /// The options of the two halves (pass options cannot be copied).
  void getFuseOptions(NormFuseOptions &fuse) const;
  void getLowerOptions(NormLowerToPtxOptions &lower) const;
};

/// `norm-fuse`, then `norm-lower-to-ptx`.
void buildNormToPtxPipeline(OpPassManager &pm, const NormToPtxOptions &options);

/// Registers the `norm-to-ptx` pipeline.
void registerNormToPtxPipeline();

} // namespace mlir::norm

#endif // NORM_PASSES_PIPELINES_H
