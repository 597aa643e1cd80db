//===- KernelBundle.cpp - PTX and signatures of a lowered module ----------===//

#include "compiler/KernelBundle.h"

#include "dialects/NormOps.h"
#include "passes/LoweringPasses.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace norm {

FailureOr<std::string> getKernelPtx(ModuleOp module) {
  auto binary = dyn_cast_or_null<gpu::BinaryOp>(
      SymbolTable::lookupSymbolIn(module, mlir::norm::kKernelModuleName));
  if (!binary) {
    // Lowered without a kernel left: every norm op's result was unused and
    // removed as dead code.
    bool hasNormOps = module
                          ->walk([](Operation *op) {
                            return op->getDialect() &&
                                           op->getDialect()->getNamespace() ==
                                               "norm"
                                       ? WalkResult::interrupt()
                                       : WalkResult::advance();
                          })
                          .wasInterrupted();
    if (!hasNormOps && !module.getOps<gpu::GPUModuleOp>().empty())
      return module.emitError("no kernel binary: the kernels are not "
                              "assembled yet (run --norm-lower-to-ptx)");
    if (!hasNormOps)
      return module.emitError(
          "no kernel to write: no result of the program depends on a norm "
          "op (norm ops whose results are unused are removed before kernels "
          "are formed); return what the kernels compute");
    return module.emitError(
        "no kernel binary: expected 'gpu.binary @norm_kernels' (run "
        "--norm-lower-to-ptx)");
  }
  ArrayAttr objects = binary.getObjectsAttr();
  auto object = objects.size() == 1 ? dyn_cast<gpu::ObjectAttr>(objects[0])
                                    : gpu::ObjectAttr();
  if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
    return binary.emitError("expected exactly one PTX object (format=isa)");
  return object.getObject().getValue().str();
}

/// Whether `ptx` defines the kernel `name`.
static bool definesKernel(StringRef ptx, StringRef name) {
  return ptx.contains((".entry " + name + "(").str());
}

FailureOr<std::vector<KernelSignature>>
describeReferencedKernels(Operation *root, bool withFallbacks,
                          const TargetOptions &target) {
  std::vector<KernelSignature> signatures;
  llvm::StringSet<> seen;
  WalkResult walk = root->walk([&](mlir::norm::KernelOpInterface op) {
    SymbolRefAttr kernel = op.getKernelAttr();
    if (!kernel || !op.getLaunchAttr())
      return WalkResult::advance();
    OpSpec spec = op.getOpSpec();
    LaunchConfig launch = mlir::norm::getLaunchConfig(op.getLaunchAttr());
    SmallVector<LaunchConfig, 2> launches = {launch};
    if (std::optional<LaunchConfig> fallback = getScalarFallback(spec, launch);
        fallback && withFallbacks)
      launches.push_back(*fallback);
    for (const LaunchConfig &each : launches) {
      FailureOr<KernelSignature> sig =
          mlir::norm::describeKernel(op, each, target);
      if (failed(sig))
        return WalkResult::interrupt();
      // The generator chose the row storage for its target; another target
      // may choose differently.
      if (each == launch && kernel.getLeafReference() != sig->name) {
        op->emitOpError() << "references kernel '"
                          << kernel.getLeafReference().getValue()
                          << "', but for the target " << target.chip
                          << " with " << target.getMaxSharedBytes()
                          << " bytes of shared memory per CTA its kernel is '"
                          << sig->name
                          << "': kernels were generated for another target";
        return WalkResult::interrupt();
      }
      if (each == launch && launches.size() > 1)
        sig->fallback = getKernelName(spec, launches.back(), target);
      if (seen.insert(sig->name).second)
        signatures.push_back(std::move(*sig));
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return signatures;
}

FailureOr<std::vector<KernelSignature>>
getBundleSignatures(ModuleOp module, StringRef ptx) {
  FailureOr<std::vector<KernelSignature>> all = describeReferencedKernels(
      module, /*withFallbacks=*/true, mlir::norm::getTargetOptions(module));
  if (failed(all))
    return failure();
  llvm::StringSet<> fallbacks;
  for (const KernelSignature &sig : *all)
    if (!sig.fallback.empty())
      fallbacks.insert(sig.fallback);
  std::vector<KernelSignature> present;
  for (KernelSignature &sig : *all) {
    if (!definesKernel(ptx, sig.name)) {
      // Fallbacks are optional (scalar-fallback=false); referenced kernels
      // are not.
      if (fallbacks.contains(sig.name))
        continue;
      return module.emitError()
             << "kernel '" << sig.name << "' is referenced but not in the PTX";
    }
    if (!sig.fallback.empty() && !definesKernel(ptx, sig.fallback))
      sig.fallback.clear();
    present.push_back(std::move(sig));
  }
  return present;
}

} // namespace norm
