//===- FuseSandwichNorm.cpp - x + norm(f) as one kernel -------------------===//
//
// Sandwich-Norm adds a normalized sublayer output to the residual stream;
// the add becomes the skip of the norm's row kernel.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/RowKernelSpec.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FUSESANDWICHNORM
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

struct FuseAddIntoProducer : OpRewritePattern<ResidualAddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ResidualAddOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getAlpha().convertToDouble() != 1.0)
      return rewriter.notifyMatchFailure(add, "a skip is not scaled");
    Value sublayer = add.getSublayer();
    Operation *producer = sublayer.getDefiningOp();
    std::optional<RowKernelSpec> spec =
        producer ? RowKernelSpec::get(producer) : std::nullopt;
    if (!spec || spec->skip || sublayer != producer->getResult(0) ||
        !sublayer.hasOneUse())
      return rewriter.notifyMatchFailure(add, "sublayer is not a row kernel "
                                              "output used only here");
    // The kernel rounds the normalized value to its output type before the
    // add; the graph rounds it to the producer's type.
    if (spec->outputType.getElementType() !=
        getElementTypeOrSelf(add.getType()))
      return rewriter.notifyMatchFailure(add, "mixed element types");

    spec->skip = add.getResidual();
    spec->outputType = add.getType();
    SmallVector<Operation *> users =
        getUsersExcept(producer->getResults(), add.getOperation());
    Operation *point = findInsertionPoint({add.getOperation(), producer},
                                          spec->getOperands(), users);
    if (!point)
      return rewriter.notifyMatchFailure(add, "no insertion point");
    rewriter.setInsertionPoint(point);
    FusedRowOp fused = spec->build(
        rewriter, rewriter.getFusedLoc({producer->getLoc(), add.getLoc()}));
    rewriter.replaceOp(add, fused.getOutput());
    if (Value residual = fused.getResidualOut())
      rewriter.replaceAllUsesWith(producer->getResult(1), residual);
    rewriter.eraseOp(producer);
    return success();
  }
};

struct FuseSandwichNormPass
    : mlir::norm::impl::FuseSandwichNormBase<FuseSandwichNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAddIntoProducer>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
