//===- KernelBundle.cpp - PTX and signatures of a lowered module ----------===//

#include "compiler/KernelBundle.h"

#include "compiler/KernelDescription.h"
#include "passes/LoweringPasses.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace norm {

FailureOr<std::string> getKernelPtx(ModuleOp module) {
  auto binary = dyn_cast_or_null<gpu::BinaryOp>(
      SymbolTable::lookupSymbolIn(module, mlir::norm::kKernelModuleName));
  if (!binary)
    return module.emitError(
        "no kernel binary: expected 'gpu.binary @norm_kernels' (run "
        "--norm-lower-to-ptx)");
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
getBundleSignatures(ModuleOp module, StringRef ptx, int64_t maxSharedBytes) {
  if (auto recorded =
          module->getAttrOfType<IntegerAttr>(kMaxSharedBytesAttrName))
    maxSharedBytes = recorded.getInt();
  FailureOr<std::vector<KernelSignature>> all =
      describeReferencedKernels(module, /*withFallbacks=*/true, maxSharedBytes);
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
