//===- norm-opt.cpp - the norm-opt driver ---------------------------------===//
//
// An mlir-opt for the norm dialect: parses a file or stdin, runs passes and
// pipelines, prints IR, or writes a kernel bundle for `-o out.ptx` and
// `-o out.cubin`.
//
//===----------------------------------------------------------------------===//

#include "dialects/NormDialect.h"
#include "passes/HostPasses.h"
#include "passes/Pipelines.h"
#include "tools/norm-opt/InputGuards.h"
#include "tools/norm-opt/KernelOutput.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  // The NVVM stage of norm-lower-to-ptx, to run and test on its own.
  mlir::registerConvertGpuOpsToNVVMOpsPass();
  mlir::norm::registerNormFusionPasses();
  mlir::norm::registerNormLoweringPasses();
  mlir::norm::registerNormToPtxPipeline();
  mlir::norm::registerNormHostPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::norm::NormDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                  mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::NVVM::NVVMDialect, mlir::scf::SCFDialect,
                  mlir::ub::UBDialect, mlir::vector::VectorDialect>();
  mlir::norm::registerNormPtxExtensions(registry);

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "norm-opt: the norm dialect compiler\n", registry);
  if (norm::isKernelBundleOutput(outputFilename))
    return mlir::asMainReturnCode(
        norm::writeKernelBundle(inputFilename, outputFilename, registry));
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(mlir::MlirOptMain(
        argc, argv, inputFilename, outputFilename, registry));

  // MlirOptMain's own steps, with the input guard before the parse.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(norm::rejectCrashingInput(*input, registry, config)))
    return EXIT_FAILURE;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
