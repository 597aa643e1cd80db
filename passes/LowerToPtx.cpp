//===- LowerToPtx.cpp - the norm-lower-to-ptx pipeline --------------------===//

#include "passes/LoweringPasses.h"

#include "compiler/Compiler.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::norm;

namespace mlir::norm {
#define GEN_PASS_REGISTRATION
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

LogicalResult mlir::norm::verifyNormLowerToPtxOptions(
    const NormLowerToPtxOptions &options,
    function_ref<LogicalResult(const Twine &)> emitError) {
  StringRef chip = options.chip;
  if (::norm::getMaxSharedBytesPerCta(chip) == 0) // the chips norm-opt knows
    return emitError("unsupported chip '" + chip +
                     "' (expected sm_80, sm_89, sm_90 or sm_90a)");
  if (options.maxSharedBytes < 0)
    return emitError("max-shared-bytes (" + Twine(options.maxSharedBytes) +
                     ") is negative");
  // PTX 7.8 is the first with sm_89 and sm_90; CUDA 13's ptxas reads up to
  // PTX 9.0.
  if (options.ptxVersion < 78 || options.ptxVersion > 90)
    return emitError("unsupported ptx-version " + Twine(options.ptxVersion) +
                     " (expected 78 to 90, i.e. PTX 7.8 to 9.0)");
  return success();
}

void mlir::norm::buildNormKernelsToPtxPipeline(
    OpPassManager &pm, const NormLowerToPtxOptions &options) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createNormLowerRowAllReduce());
  kernels.addPass(createNormLowerRsqrtToNVVM());
  kernels.addPass(createSCFToControlFlowPass());
  // Vector masks (create_mask) need the vector conversion's own
  // preparation; the NVVM conversion alone leaves them behind.
  kernels.addPass(createConvertVectorToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = 64;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createNormExternDynamicSharedMemory());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());

  GpuNVVMAttachTargetOptions target;
  target.moduleMatcher = ("^" + kKernelModuleName + "$").str();
  target.chip = options.chip;
  target.features = "+ptx" + std::to_string(options.ptxVersion);
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::norm::buildNormLowerToPtxPipeline(
    OpPassManager &pm, const NormLowerToPtxOptions &options) {
  NormAssignLaunchConfigOptions launch;
  launch.vector = options.vector;
  launch.threadsPerRow = options.threadsPerRow;
  launch.warps = options.warps;
  launch.rowsPerCta = options.rowsPerCta;
  pm.addPass(createNormAssignLaunchConfig(launch));
  NormGenerateKernelsOptions kernels;
  kernels.scalarFallback = options.scalarFallback;
  kernels.chip = options.chip;
  kernels.maxSharedBytes = options.maxSharedBytes;
  pm.addPass(createNormGenerateKernels(kernels));
  buildNormKernelsToPtxPipeline(pm, options);
}

void mlir::norm::registerNormLoweringPasses() {
  registerNormKernelLoweringPasses();
  registerPassPipeline(
      "norm-lower-to-ptx",
      "Kernel ops to PTX: launch configurations, kernels, NVVM, "
      "gpu-module-to-binary (format=isa)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> emitError) {
        NormLowerToPtxOptions options;
        if (failed(options.parseFromString(text)) ||
            failed(verifyNormLowerToPtxOptions(options, emitError)))
          return failure();
        buildNormLowerToPtxPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> printOptions) {
        printOptions(NormLowerToPtxOptions());
      });
}

void mlir::norm::registerNormPtxExtensions(DialectRegistry &registry) {
  // What convert-gpu-to-nvvm converts through the ConvertToLLVM interface.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  // gpu-module-to-binary: the NVVM target and the LLVM IR translations.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
