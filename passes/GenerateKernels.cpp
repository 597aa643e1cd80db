//===- GenerateKernels.cpp - one gpu.func per kernel op -------------------===//

#include "passes/LoweringPasses.h"

#include "compiler/KernelDescription.h"
#include "dialects/NormOps.h"
#include "passes/KernelBuilder.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMGENERATEKERNELS
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

struct GenerateKernels
    : public mlir::norm::impl::NormGenerateKernelsBase<GenerateKernels> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// The kernel module, created on first use.
  gpu::GPUModuleOp getOrCreateKernelModule();
  /// The kernel of `op` for `launch`, generated unless it exists.
  FailureOr<StringRef> getOrBuildKernel(Operation *op, LaunchAttr launch);

  gpu::GPUModuleOp kernelModule;
  std::optional<SymbolTable> kernels;
  /// Shared memory a CTA may use on the target.
  int64_t sharedBytes = 0;
};

} // namespace

gpu::GPUModuleOp GenerateKernels::getOrCreateKernelModule() {
  if (kernelModule)
    return kernelModule;
  ModuleOp module = getOperation();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(&getContext()));
  module->setAttr(
      ::norm::kMaxSharedBytesAttrName,
      IntegerAttr::get(IntegerType::get(&getContext(), 64), sharedBytes));
  kernelModule = dyn_cast_or_null<gpu::GPUModuleOp>(
      SymbolTable::lookupSymbolIn(module, kKernelModuleName));
  if (!kernelModule) {
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    kernelModule =
        gpu::GPUModuleOp::create(builder, module.getLoc(), kKernelModuleName);
  }
  kernels.emplace(kernelModule);
  return kernelModule;
}

FailureOr<StringRef> GenerateKernels::getOrBuildKernel(Operation *op,
                                                       LaunchAttr launch) {
  FailureOr<::norm::KernelSignature> signature =
      ::norm::describeKernel(op, launch, sharedBytes);
  if (failed(signature))
    return failure();
  gpu::GPUModuleOp module = getOrCreateKernelModule();
  if (Operation *existing = kernels->lookup(signature->name))
    return SymbolTable::getSymbolName(existing).getValue();
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  FailureOr<gpu::GPUFuncOp> kernel = buildKernel(builder, op, *signature);
  if (failed(kernel))
    return failure();
  kernels->insert(*kernel);
  return kernel->getName();
}

void GenerateKernels::runOnOperation() {
  kernelModule = {};
  kernels.reset();
  if (::norm::getMaxSharedBytesPerCta(chip) == 0) {
    getOperation().emitError()
        << "norm-generate-kernels: unknown chip '" << chip
        << "' (expected sm_80, sm_89, sm_90 or sm_90a)";
    return signalPassFailure();
  }
  if (maxSharedBytes < 0) {
    getOperation().emitError()
        << "norm-generate-kernels: max-shared-bytes ("
        << static_cast<int64_t>(maxSharedBytes) << ") is negative";
    return signalPassFailure();
  }
  ::norm::TargetOptions target;
  target.chip = chip;
  target.maxSharedBytes = maxSharedBytes;
  sharedBytes = target.getMaxSharedBytes();

  // Attention kernels are not generated: a QK-Norm fused into attention
  // would silently vanish.
  WalkResult attention = getOperation().walk([](AttentionOp op) {
    if (!op.getQkNorm())
      return WalkResult::advance();
    op.emitOpError("with a fused QK-Norm needs an attention kernel, which "
                   "norm-opt does not generate; use "
                   "--norm-fuse=\"qk-norm=prologue\"");
    return WalkResult::interrupt();
  });
  if (attention.wasInterrupted())
    return signalPassFailure();

  SmallVector<Operation *> kernelOps;
  getOperation().walk([&](Operation *op) {
    if (::norm::isKernelOp(op) && ::norm::getLaunch(op))
      kernelOps.push_back(op);
  });

  MLIRContext *context = &getContext();
  for (Operation *op : kernelOps) {
    LaunchAttr launch = ::norm::getLaunch(op);
    FailureOr<StringRef> name = getOrBuildKernel(op, launch);
    if (failed(name))
      return signalPassFailure();
    op->setAttr("kernel",
                SymbolRefAttr::get(context, kKernelModuleName,
                                   {FlatSymbolRefAttr::get(context, *name)}));
    if (LaunchAttr fallback = ::norm::getScalarFallback(launch);
        fallback && scalarFallback && failed(getOrBuildKernel(op, fallback)))
      return signalPassFailure();
  }

  // The builders repeat address arithmetic freely; CSE keeps the kernels
  // readable without introducing ops the host execution path must know.
  if (kernelModule) {
    OpPassManager cleanup(gpu::GPUModuleOp::getOperationName());
    cleanup.addPass(createCSEPass());
    if (failed(runPipeline(cleanup, kernelModule)))
      return signalPassFailure();
  }
}
