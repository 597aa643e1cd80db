//===- FuseCasts.cpp - conversions folded into neighbouring row kernels ---===//
//
// A row kernel computes in f32 and converts on load and store, so a
// conversion next to it is free when folding it keeps every rounding of the
// graph.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/RowKernelSpec.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FUSECASTS
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The value `op` converts, when `op` is a norm.cast or a conversion-only
/// row kernel.
Value getConvertedValue(Operation *op) {
  std::optional<RowKernelSpec> spec = RowKernelSpec::get(op);
  return spec && spec->isConversion() ? spec->input : Value();
}

/// `convert(kernel(...))` is `kernel(...)` with the conversion's output type
/// (and a quantizing conversion's scales) when the kernel's output before
/// the conversion is its exact f32 result (or its residual stream,
/// unchanged).
struct FuseConversionIntoProducer : RewritePattern {
  FuseConversionIntoProducer(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *conversion,
                                PatternRewriter &rewriter) const override {
    Value converted = getConvertedValue(conversion);
    Operation *producer = converted ? converted.getDefiningOp() : nullptr;
    std::optional<RowKernelSpec> spec =
        producer ? RowKernelSpec::get(producer) : std::nullopt;
    if (!spec || converted != producer->getResult(0) || !converted.hasOneUse())
      return failure();
    // With a skip the kernel rounds the normalized value to its output type
    // before adding: another output type changes that rounding.
    if (spec->skip)
      return rewriter.notifyMatchFailure(conversion, "producer has a skip");
    Type produced = spec->outputType.getElementType();
    bool exact = produced.isF32() || (spec->isElementwiseCopy() &&
                                      produced == spec->getStreamElementType());
    if (!exact)
      return rewriter.notifyMatchFailure(conversion,
                                         "producer output is rounded twice");

    // A quantizing conversion (norm.fused_row <none> to FP8) takes its
    // scale along: the kernel quantizes the same f32 value.
    std::optional<RowKernelSpec> convert = RowKernelSpec::get(conversion);
    bool perToken = bool(convert->scalesType);
    if (perToken && spec->groups != 1)
      return rewriter.notifyMatchFailure(
          conversion, "per-token scales of a grouped producer");
    spec->outputScale = convert->outputScale;
    spec->scaleUb = convert->scaleUb;
    spec->scalesType = convert->scalesType;
    spec->outputType =
        cast<RankedTensorType>(conversion->getResult(0).getType());
    SmallVector<Operation *> users =
        getUsersExcept(producer->getResults(), conversion);
    Operation *point =
        findInsertionPoint({conversion, producer}, spec->getOperands(), users);
    if (!point)
      return rewriter.notifyMatchFailure(conversion, "no insertion point");
    rewriter.setInsertionPoint(point);
    FusedRowOp fused = spec->build(
        rewriter,
        rewriter.getFusedLoc({producer->getLoc(), conversion->getLoc()}));
    replaceRowKernel(rewriter, conversion, fused);
    if (Value residual = fused.getResidualOut())
      rewriter.replaceAllUsesWith(producer->getResult(1), residual);
    rewriter.eraseOp(producer);
    return success();
  }
};

/// A kernel reading an exactly widened value reads the narrow one instead.
struct ReadBeforeWidening : RewritePattern {
  ReadBeforeWidening(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    std::optional<RowKernelSpec> spec = RowKernelSpec::get(op);
    if (!spec)
      return failure();
    auto readNarrow = [](Value &operand) {
      Operation *conversion = operand ? operand.getDefiningOp() : nullptr;
      Value source = conversion ? getConvertedValue(conversion) : Value();
      if (!source || !widensExactly(getElementTypeOrSelf(source.getType()),
                                    getElementTypeOrSelf(operand.getType())))
        return false;
      operand = source;
      return true;
    };
    // The addend and the skip are widened to f32 in the kernel; the input
    // too, unless an addend makes its element type the residual stream's.
    bool changed = readNarrow(spec->addend);
    changed |= readNarrow(spec->skip);
    if (!spec->addend)
      changed |= readNarrow(spec->input);
    if (!changed)
      return failure();
    rewriter.setInsertionPoint(op);
    replaceRowKernel(rewriter, op, spec->build(rewriter, op->getLoc()));
    return success();
  }
};

struct FuseCastsPass : mlir::norm::impl::FuseCastsBase<FuseCastsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseConversionIntoProducer, ReadBeforeWidening>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
