//===- GenerateKernels.cpp - one gpu.func per kernel op -------------------===//

#include "passes/LoweringPasses.h"

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
  FailureOr<StringRef> getOrBuildKernel(KernelOpInterface op,
                                        const ::norm::LaunchConfig &launch);

  gpu::GPUModuleOp kernelModule;
  std::optional<SymbolTable> kernels;
  ::norm::TargetOptions target;
};

} // namespace

gpu::GPUModuleOp GenerateKernels::getOrCreateKernelModule() {
  if (kernelModule)
    return kernelModule;
  ModuleOp module = getOperation();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(&getContext()));
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

FailureOr<StringRef>
GenerateKernels::getOrBuildKernel(KernelOpInterface op,
                                  const ::norm::LaunchConfig &launch) {
  FailureOr<::norm::KernelSignature> signature =
      describeKernel(op, launch, target);
  if (failed(signature))
    return failure();
  gpu::GPUModuleOp module = getOrCreateKernelModule();
  if (Operation *existing = kernels->lookup(signature->name))
    return SymbolTable::getSymbolName(existing).getValue();
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  gpu::GPUFuncOp kernel =
      buildKernel(builder, op->getLoc(), op.getOpSpec(), *signature);
  kernels->insert(kernel);
  return kernel.getName();
}

void GenerateKernels::runOnOperation() {
  kernelModule = {};
  kernels.reset();
  // The target is IR data (norm-set-target); kernels of a module without
  // one are for the default target.
  target = getTargetOptions(getOperation());

  // A norm.attention is not a kernel op: left alone, its fused QK-Norm or
  // rotation would silently vanish from the kernels; a norm.rotary only
  // runs inside an attention kernel.
  WalkResult leftover = getOperation().walk([](Operation *op) {
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (!attention.getQkNorm() && !attention.getRope())
        return WalkResult::advance();
      op->emitOpError("with a fused QK-Norm or rotary embedding is not a "
                      "kernel op; norm-form-attention-kernels (part of "
                      "norm-fuse and norm-to-ptx) turns it into "
                      "norm.attention_kernel");
      return WalkResult::interrupt();
    }
    if (isa<AttentionDecodeOp>(op)) {
      op->emitOpError("is not a kernel op; norm-form-attention-kernels (part "
                      "of norm-fuse and norm-to-ptx) turns it into "
                      "norm.attention_decode_kernel");
      return WalkResult::interrupt();
    }
    if (isa<RotaryOp>(op)) {
      op->emitOpError("is not a kernel op; norm-fuse-rotary-into-attention "
                      "(part of norm-fuse) moves it into the norm.attention "
                      "that reads it (q and k alike)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (leftover.wasInterrupted())
    return signalPassFailure();

  SmallVector<KernelOpInterface> kernelOps;
  getOperation().walk([&](KernelOpInterface op) {
    if (op.getLaunchAttr())
      kernelOps.push_back(op);
  });

  MLIRContext *context = &getContext();
  for (KernelOpInterface op : kernelOps) {
    ::norm::LaunchConfig launch = getLaunchConfig(op.getLaunchAttr());
    FailureOr<StringRef> name = getOrBuildKernel(op, launch);
    if (failed(name))
      return signalPassFailure();
    op.setKernelAttr(SymbolRefAttr::get(context, kKernelModuleName,
                                    {FlatSymbolRefAttr::get(context, *name)}));
    if (!scalarFallback)
      continue;
    if (std::optional<::norm::LaunchConfig> fallback =
            ::norm::getScalarFallback(op.getOpSpec(), launch))
      if (failed(getOrBuildKernel(op, *fallback)))
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
