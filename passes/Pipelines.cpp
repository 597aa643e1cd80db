//===- Pipelines.cpp - norm programs all the way to PTX -------------------===//

#include "passes/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::norm;

void NormToPtxOptions::getFuseOptions(NormFuseOptions &fuse) const {
  fuse.qkNorm = qkNorm;
  fuse.f32Residual = f32Residual;
  fuse.keysInLoop = keysInLoop;
}

void mlir::norm::buildNormToPtxPipeline(OpPassManager &pm,
                                        const NormToPtxOptions &options) {
  NormFuseOptions fuse;
  options.getFuseOptions(fuse);
  buildNormFusePipeline(pm, fuse);
  buildNormLowerToPtxPipeline(pm, options.getConfig());
}

void mlir::norm::registerNormToPtxPipeline() {
  registerPassPipeline(
      "norm-to-ptx",
      "A norm program to PTX: norm-fuse, then norm-lower-to-ptx",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> emitError) {
        NormToPtxOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (failed(verifyLowerToPtxConfig(options.getConfig(), emitError)))
          return failure();
        buildNormToPtxPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(NormToPtxOptions());
      });
}
