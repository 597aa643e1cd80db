//===- HostToLLVM.cpp - lower host kernels to LLVM for the CPU ------------===//
//
// The `norm-host-to-llvm` pipeline and the registration of the host passes.
//
//===----------------------------------------------------------------------===//

#include "passes/HostPasses.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace mlir::norm {
#define GEN_PASS_REGISTRATION
#include "passes/HostPasses.h.inc"
} // namespace mlir::norm

void norm::buildHostToLLVMPipeline(OpPassManager &pm) {
  // bf16 arithmetic in f32 and bf16 conversions as integer code: exact
  // round-to-nearest-even without the compiler runtime's helpers, which
  // older libgcc versions lack. (f16 conversions are native on x86 with F16C
  // and in libgcc otherwise.)
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));

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
}

void norm::registerNormHostPasses() {
  registerNormHostTransformsPasses();
  PassPipelineRegistration<>(
      "norm-host-to-llvm",
      "Lower host kernels (norm-kernels-to-host) to the LLVM dialect for the "
      "CPU, memref arguments as bare pointers",
      buildHostToLLVMPipeline);
}
