//===- norm-opt.cpp - the norm-opt driver ---------------------------------===//
//
// An mlir-opt for the norm dialect: parses a file or stdin, runs passes and
// pipelines, prints IR.
//
//===----------------------------------------------------------------------===//

#include "dialects/NormDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::norm::registerNormFusionPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::norm::NormDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "norm-opt: the norm dialect compiler\n",
                        registry));
}
