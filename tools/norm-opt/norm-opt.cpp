//===- norm-opt.cpp - the norm-opt driver ---------------------------------===//
//
// An mlir-opt for the norm dialect: parses a file or stdin, runs passes and
// pipelines, prints IR.
//
//===----------------------------------------------------------------------===//

#include "dialects/NormDialect.h"
#include "passes/HostPasses.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::norm::registerNormFusionPasses();
  mlir::norm::registerNormHostPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::norm::NormDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  // Kernel programs and their host lowering.
  registry.insert<mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::ub::UBDialect,
                  mlir::vector::VectorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "norm-opt: the norm dialect compiler\n",
                        registry));
}
