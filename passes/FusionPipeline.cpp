//===- FusionPipeline.cpp - the norm-fuse pipeline ------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::norm;

void mlir::norm::buildNormFusePipeline(OpPassManager &pm,
                                       const NormFuseOptions &options) {
  pm.addPass(createCanonicalizerPass());
  // Sandwich-Norm before the residual add + norm fusion: for
  // `h = x + norm2(f); y = norm1(h)` it reads f and x once and writes h,
  // where the other order would write norm2(f) and read it back.
  pm.addPass(createFuseSandwichNorm());
  pm.addPass(createFuseResidualAddIntoNorm(
      FuseResidualAddIntoNormOptions{options.f32Residual}));
  // Rotations first: the QK-Norm fusion then finds the norms they read.
  pm.addPass(createFuseRotaryIntoAttention());
  // QK-Norm that cannot move into the attention (its normalized q or k has
  // other users) still gets the prologue kernel.
  // Then the rotations that the moved-in norms read (Llama 4): rope_first.
  if (options.qkNorm == QKNormPlacement::Attention) {
    pm.addPass(createFuseQKNormIntoAttention());
    pm.addPass(createFuseRotaryIntoAttention());
  }
  pm.addPass(createFormQKNormPrologue());
  pm.addPass(createFormAttentionKernels(
      FormAttentionKernelsOptions{options.keysInLoop}));
  pm.addPass(createFormRowKernels());
  pm.addPass(createFuseCasts());
  pm.addPass(createCSEPass());
}

void mlir::norm::registerNormFusePipeline() {
  PassPipelineRegistration<NormFuseOptions>(
      "norm-fuse",
      "Turn the layer ops of a norm program into fused kernel ops",
      buildNormFusePipeline);
}
