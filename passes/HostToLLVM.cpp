//===- HostToLLVM.cpp - lower host kernels to LLVM for the CPU ------------===//
//
// The `norm-host-to-llvm` pipeline and the registration of the host passes.
//
//===----------------------------------------------------------------------===//

#include "passes/HostPasses.h"
#include "passes/LoweringPasses.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace mlir::norm {
#define GEN_PASS_REGISTRATION
#include "passes/HostPasses.h.inc"
} // namespace mlir::norm

void mlir::norm::buildHostToLLVMPipeline(OpPassManager &pm) {
  // FP8 outputs: the integer code of what cvt.rn.satfinite gives.
  mlir::norm::NormExpandFp8ConversionsOptions fp8;
  fp8.software = true;
  pm.addPass(mlir::norm::createNormExpandFp8Conversions(fp8));
  // f16 and bf16 arithmetic in f32, their conversions as integer code:
  // exact round-to-nearest-even on every x86-64 CPU, without the CPU's
  // conversion instructions or the compiler runtime's helpers
  // (HostNarrowFloats.cpp).
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"f16", "bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(mlir::norm::createNormHostExpandF16Conversions());

  // Vector transfers and prints of whole vectors become loops first.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  // What LLVM has no intrinsic for (erf, ...) becomes a libm call.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // Static memref arguments become bare pointers: the kernel ABI.
  ConvertFuncToLLVMPassOptions func;
  func.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(func));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // What is left of f16 and bf16 only moves: as i16, LLVM cannot promote it.
  pm.addPass(mlir::norm::createNormHostNarrowFloatsToIntegers());
}

void mlir::norm::registerNormHostPasses() {
  registerNormHostTransformsPasses();
  PassPipelineRegistration<>(
      "norm-host-to-llvm",
      "Lower host kernels (norm-kernels-to-host) to the LLVM dialect for the "
      "CPU, memref arguments as bare pointers",
      buildHostToLLVMPipeline);
}
