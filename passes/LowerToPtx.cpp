//===- LowerToPtx.cpp - the norm-lower-to-ptx pipeline --------------------===//

#include "passes/LoweringPasses.h"


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

void mlir::norm::buildNormKernelsToPtxPipeline(OpPassManager &pm,
                                               int optLevel) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createNormLowerRowAllReduce());
  kernels.addPass(createNormLowerApproxMathToNVVM());
  kernels.addPass(createNormExpandFp8Conversions());
  kernels.addPass(createSCFToControlFlowPass());
  // Vector masks (create_mask) need the vector conversion's own
  // preparation; the NVVM conversion alone leaves them behind.
  kernels.addPass(createConvertVectorToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = 64;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createNormExternDynamicSharedMemory());
  kernels.addPass(createNormGridConstantParams());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());

  NormAttachNVVMTargetOptions target;
  target.optLevel = optLevel;
  pm.addPass(createNormAttachNVVMTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::norm::buildNormLowerToPtxPipeline(OpPassManager &pm,
                                             const LowerToPtxConfig &config) {
  addSetTargetPass(pm, config);
  NormAssignLaunchConfigOptions launch;
  launch.vector = config.vector;
  launch.threadsPerRow = config.threadsPerRow;
  launch.warps = config.warps;
  launch.rowsPerCta = config.rowsPerCta;
  launch.blockN = config.blockN;
  launch.stages = config.stages;
  pm.addPass(createNormAssignLaunchConfig(launch));
  NormGenerateKernelsOptions kernels;
  kernels.scalarFallback = config.scalarFallback;
  pm.addPass(createNormGenerateKernels(kernels));
  buildNormKernelsToPtxPipeline(pm, config.optLevel);
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
        if (failed(options.parseFromString(text)))
          return failure();
        LowerToPtxConfig config = options.getConfig();
        if (failed(verifyLowerToPtxConfig(config, emitError)))
          return failure();
        buildNormLowerToPtxPipeline(pm, config);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
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
  registerConvertNormToNVVMInterface(registry);
  // gpu-module-to-binary: the NVVM target and the LLVM IR translations.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
