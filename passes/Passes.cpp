//===- Passes.cpp - registration of the norm passes -----------------------===//

#include "passes/Passes.h"

namespace mlir::norm {
#define GEN_PASS_REGISTRATION
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

void mlir::norm::registerNormFusionPasses() {
  registerFusionPasses();
  registerNormFusePipeline();
}
