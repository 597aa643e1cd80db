//===- Passes.h - norm passes and pipelines ---------------------*- C++ -*-===//
//
// The passes of norm-opt (ODS: passes/*Passes.td) and the pipelines built
// from them.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_PASSES_H
#define NORM_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::norm {

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

#define GEN_PASS_DECL
#include "passes/FusionPasses.h.inc"

/// Where `norm-fuse` puts per-head QK-Norm.
enum class QKNormPlacement {
  /// One stand-alone norm.qk_norm_prologue kernel before the attention
  /// kernel.
  Prologue,
  /// Into the attention kernel's prologue (the default); the prologue kernel
  /// where that is not possible (the normalized q or k has other users).
  Attention,
};

struct NormFuseOptions : public PassPipelineOptions<NormFuseOptions> {
  Option<QKNormPlacement> qkNorm{
      *this, "qk-norm",
      llvm::cl::desc("Where per-head QK-Norm goes"),
      llvm::cl::init(QKNormPlacement::Attention),
      llvm::cl::values(
          clEnumValN(QKNormPlacement::Prologue, "prologue",
                     "a stand-alone norm.qk_norm_prologue kernel"),
          clEnumValN(QKNormPlacement::Attention, "attention",
                     "the attention kernel's prologue"))};
  Option<bool> f32Residual{
      *this, "f32-residual",
      llvm::cl::desc("Fused add+norm kernels normalize the f32 sum instead of "
                     "the sum rounded as the graph rounds it"),
      llvm::cl::init(false)};
  Option<bool> keysInLoop{
      *this, "keys-in-loop",
      llvm::cl::desc("Prefill attention normalizes and rotates its keys in "
                     "its loop, not once in a norm.k_prepare kernel"),
      llvm::cl::init(false)};
};

/// Layer ops to kernel ops: canonicalize, Sandwich-Norm, residual add + norm,
/// QK-Norm, row kernel formation, cast fusion, CSE.
void buildNormFusePipeline(OpPassManager &pm, const NormFuseOptions &options);

/// Registers the `norm-fuse` pipeline.
void registerNormFusePipeline();

/// Registers the fusion passes and the `norm-fuse` pipeline.
void registerNormFusionPasses();

} // namespace mlir::norm

#endif // NORM_PASSES_PASSES_H
