//===- TargetPasses.cpp - the target as IR data ---------------------------===//
//
// norm-set-target records the GPU on the module (norm.target); every pass
// that depends on the target reads it from there, so that a pipeline states
// the target once.
//
//===----------------------------------------------------------------------===//

#include "passes/LoweringPasses.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMSETTARGET
#define GEN_PASS_DEF_NORMATTACHNVVMTARGET
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

/// `target` with the fields the options set.
static ::norm::TargetOptions applyFields(::norm::TargetOptions target,
                                         StringRef chip, int ptxVersion,
                                         int64_t maxSharedBytes, bool pdl) {
  if (!chip.empty()) {
    // Another chip: its own shared memory unless the options say otherwise.
    if (chip != target.chip)
      target.maxSharedBytes = 0;
    target.chip = chip.str();
  }
  if (ptxVersion != 0)
    target.ptxVersion = ptxVersion;
  if (maxSharedBytes >= 0)
    target.maxSharedBytes = maxSharedBytes;
  target.pdl |= pdl;
  return target;
}

::norm::TargetOptions LowerToPtxConfig::getTarget() const {
  return applyFields(::norm::TargetOptions(), chip, ptxVersion, maxSharedBytes,
                     pdl);
}

LogicalResult mlir::norm::verifyLowerToPtxConfig(
    const LowerToPtxConfig &config,
    function_ref<LogicalResult(const Twine &)> emitError) {
  if (config.maxSharedBytes < -1)
    return emitError("max-shared-bytes (" + Twine(config.maxSharedBytes) +
                     ") is negative");
  if (::norm::Status status = config.getTarget().verify(); !status)
    return emitError(status.message());
  return success();
}

void mlir::norm::addSetTargetPass(OpPassManager &pm,
                                  const LowerToPtxConfig &config) {
  if (config.chip.empty() && config.ptxVersion == 0 &&
      config.maxSharedBytes < 0 && !config.pdl)
    return;
  NormSetTargetOptions options;
  options.chip = config.chip;
  options.ptxVersion = config.ptxVersion;
  options.maxSharedBytes = config.maxSharedBytes;
  options.pdl = config.pdl;
  pm.addPass(createNormSetTarget(options));
}

namespace {

struct SetTarget : public mlir::norm::impl::NormSetTargetBase<SetTarget> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (maxSharedBytes < -1) {
      module.emitError() << "norm-set-target: max-shared-bytes ("
                         << static_cast<int64_t>(maxSharedBytes)
                         << ") is negative";
      return signalPassFailure();
    }
    ::norm::TargetOptions target = applyFields(
        getTargetOptions(module), chip, ptxVersion, maxSharedBytes, pdl);
    if (::norm::Status status = target.verify(); !status) {
      module.emitError() << "norm-set-target: " << status.message();
      return signalPassFailure();
    }
    setTargetOptions(module, target);
  }
};

struct AttachNVVMTarget
    : public mlir::norm::impl::NormAttachNVVMTargetBase<AttachNVVMTarget> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = dyn_cast_or_null<gpu::GPUModuleOp>(
        SymbolTable::lookupSymbolIn(module, kKernelModuleName));
    if (!kernels)
      return;
    ::norm::TargetOptions target = getTargetOptions(module);
    std::string features = "+ptx" + std::to_string(target.ptxVersion);
    auto nvvm = NVVM::NVVMTargetAttr::get(&getContext(), optLevel,
                                          "nvptx64-nvidia-cuda", target.chip,
                                          features);
    kernels.setTargetsAttr(ArrayAttr::get(&getContext(), {nvvm}));
  }
};

} // namespace
