//===- InputGuards.cpp - input that would crash upstream verifiers --------===//

#include "tools/norm-opt/InputGuards.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

/// gpu.func's verifier takes `workgroup_attributions` as the count of body
/// arguments after the function's inputs without checking it.
static LogicalResult checkGpuFunc(Operation *op) {
  auto func = dyn_cast<gpu::GPUFuncOp>(op);
  if (!func)
    return success();
  Attribute attr = op->getAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName());
  if (!attr)
    return success();
  auto count = dyn_cast<IntegerAttr>(attr);
  int64_t inputs = func.getFunctionType().getNumInputs();
  int64_t arguments =
      op->getRegion(0).empty() ? 0 : op->getRegion(0).front().getNumArguments();
  if (count && count.getType().isInteger(64) && count.getInt() >= 0 &&
      count.getInt() <= arguments - inputs)
    return success();
  return op->emitOpError()
         << "'" << gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName()
         << "' must be an i64 from 0 to the " << std::max<int64_t>(
                arguments - inputs, 0)
         << " block arguments after the function's inputs, got " << attr;
}

static LogicalResult checkChunk(std::unique_ptr<llvm::MemoryBuffer> chunk,
                                DialectRegistry &registry,
                                const MlirOptMainConfig &config) {
  MLIRContext context(registry);
  context.allowUnregisteredDialects(config.shouldAllowUnregisteredDialects());
  context.printOpOnDiagnostic(false);
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
  Block block;
  {
    // Parse errors are the real run's to report.
    ScopedDiagnosticHandler silence(&context,
                                    [](Diagnostic &) { return success(); });
    ParserConfig parserConfig(&context, /*verifyAfterParse=*/false);
    if (failed(parseSourceFile(sourceMgr, &block, parserConfig)))
      return success();
  }
  SourceMgrDiagnosticHandler diagnostics(*sourceMgr, &context);
  for (Operation &top : block) {
    WalkResult result = top.walk([](Operation *op) {
      return failed(checkGpuFunc(op)) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult norm::rejectCrashingInput(const llvm::MemoryBuffer &input,
                                        DialectRegistry &registry,
                                        const MlirOptMainConfig &config) {
  std::unique_ptr<llvm::MemoryBuffer> copy = llvm::MemoryBuffer::getMemBufferCopy(
      input.getBuffer(), input.getBufferIdentifier());
  return splitAndProcessBuffer(
      std::move(copy),
      [&](std::unique_ptr<llvm::MemoryBuffer> chunk, raw_ostream &) {
        return checkChunk(std::move(chunk), registry, config);
      },
      llvm::nulls(), config.inputSplitMarker(), config.outputSplitMarker());
}
