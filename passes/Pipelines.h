//===- Pipelines.h - norm programs all the way to PTX -----------*- C++ -*-===//

#ifndef NORM_PASSES_PIPELINES_H
#define NORM_PASSES_PIPELINES_H

#include "passes/LoweringPasses.h"
#include "passes/Passes.h"

namespace mlir::norm {

/// Options of `norm-to-ptx`: those of `norm-fuse` and `norm-lower-to-ptx`.
struct NormToPtxOptions : public NormLowerToPtxOptionsBase<NormToPtxOptions> {
  // Fusion.
  Option<QKNormPlacement> qkNorm{
      *this, "qk-norm", llvm::cl::desc("Where per-head QK-Norm goes"),
      llvm::cl::init(QKNormPlacement::Attention),
      llvm::cl::values(
          clEnumValN(QKNormPlacement::Prologue, "prologue",
                     "a stand-alone norm.qk_norm_prologue kernel"),
          clEnumValN(QKNormPlacement::Attention, "attention",
                     "the attention kernel's prologue"))};
  Option<bool> f32Residual{
      *this, "f32-residual",
      llvm::cl::desc("Fused add+norm kernels normalize the f32 sum"),
      llvm::cl::init(false)};
  Option<bool> keysInLoop{
      *this, "keys-in-loop",
      llvm::cl::desc("Prefill attention normalizes its keys in its loop"),
      llvm::cl::init(false)};

  /// The options of norm-fuse (pass options cannot be copied).
  void getFuseOptions(NormFuseOptions &fuse) const;
};

/// `norm-fuse`, then `norm-lower-to-ptx`.
void buildNormToPtxPipeline(OpPassManager &pm, const NormToPtxOptions &options);

/// Registers the `norm-to-ptx` pipeline.
void registerNormToPtxPipeline();

} // namespace mlir::norm

#endif // NORM_PASSES_PIPELINES_H
