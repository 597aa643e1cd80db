//===- InputGuards.cpp - input that would crash upstream verifiers --------===//

#include "tools/norm-opt/InputGuards.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/ADT/StringExtras.h"
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

/// Nesting deeper than this (regions, attributes, types) is refused: the
/// parser recurses once per level and overflows its stack in the
/// thousands; real programs nest a few dozen levels.
static constexpr int kMaxNesting = 256;
/// Longer digit runs are refused: APInt parses a literal in time quadratic
/// in its digits (100,000 digits took 20 s); i64 needs 20.
static constexpr int kMaxLiteralDigits = 4096;

/// Rejects, before any parse, input the parser would crash on or spend
/// minutes in: nesting beyond kMaxNesting, number literals beyond
/// kMaxLiteralDigits. Strings and comments are skipped.
static LogicalResult checkLexically(const llvm::MemoryBuffer &input) {
  llvm::StringRef text = input.getBuffer();
  auto reject = [&](size_t at, const llvm::Twine &message) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(text, input.getBufferIdentifier(),
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    sourceMgr.PrintMessage(llvm::errs(),
                           llvm::SMLoc::getFromPointer(text.data() + at),
                           llvm::SourceMgr::DK_Error, message);
    return failure();
  };
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && text.substr(i, 2) == "//") {
      i = std::min(text.find('\n', i), text.size());
    } else if (c == '{' || c == '[' || c == '(' || c == '<') {
      if (++depth > kMaxNesting)
        return reject(i, "the input nests more than " +
                             llvm::Twine(kMaxNesting) +
                             " levels deep (regions, attributes or types); "
                             "norm-opt takes at most that");
    } else if (c == '}' || c == ']' || c == ')' ||
               (c == '>' && (i == 0 || text[i - 1] != '-'))) {
      depth = std::max(depth - 1, 0);
    } else if (llvm::isAlnum(c) || c == '_' || c == '%' || c == '@' ||
               c == '^' || c == '#' || c == '!' || c == '$' || c == '.') {
      size_t end = i + 1;
      while (end < text.size() &&
             (llvm::isAlnum(text[end]) || text[end] == '_' ||
              text[end] == '.' || text[end] == '$' || text[end] == '-'))
        ++end;
      if (end - i > kMaxLiteralDigits && llvm::isDigit(c))
        return reject(i, "a number literal of " + llvm::Twine(end - i) +
                             " characters; norm-opt takes at most " +
                             llvm::Twine(kMaxLiteralDigits));
      i = end - 1;
    }
  }
  return success();
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
  if (failed(checkLexically(input)))
    return failure();
  std::unique_ptr<llvm::MemoryBuffer> copy = llvm::MemoryBuffer::getMemBufferCopy(
      input.getBuffer(), input.getBufferIdentifier());
  return splitAndProcessBuffer(
      std::move(copy),
      [&](std::unique_ptr<llvm::MemoryBuffer> chunk, raw_ostream &) {
        return checkChunk(std::move(chunk), registry, config);
      },
      llvm::nulls(), config.inputSplitMarker(), config.outputSplitMarker());
}
