//===- FormRowKernels.cpp - one kernel op per remaining layer op ----------===//

#include "passes/Passes.h"
#include "passes/RowKernelSpec.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FORMROWKERNELS
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// A layer op that is one row kernel becomes that norm.fused_row.
struct FormRowKernel : RewritePattern {
  FormRowKernel(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (isa<FusedRowOp>(op))
      return failure();
    std::optional<RowKernelSpec> spec = RowKernelSpec::get(op);
    if (!spec)
      return failure();
    rewriter.setInsertionPoint(op);
    replaceRowKernel(rewriter, op, spec->build(rewriter, op->getLoc()));
    return success();
  }
};

/// Training-mode batch norm is two kernels: the column statistics, then a
/// row kernel normalizing with them.
struct FormBatchNormTrainingKernels
    : OpRewritePattern<BatchNormTrainingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormTrainingOp op,
                                PatternRewriter &rewriter) const override {
    auto stats = ColumnStatsOp::create(
        rewriter, op.getLoc(), op.getBatchMean().getType(),
        op.getBatchVariance().getType(), op.getInput(), /*launch=*/nullptr,
        /*kernel=*/nullptr);
    RowKernelSpec spec;
    spec.input = op.getInput();
    spec.mean = stats.getMean();
    spec.variance = stats.getVariance();
    spec.weight = op.getWeight();
    spec.bias = op.getBias();
    spec.eps = op.getEps().convertToDouble();
    spec.outputType = op.getResult().getType();
    FusedRowOp row = spec.build(rewriter, op.getLoc());
    rewriter.replaceOp(op, {row.getOutput(), stats.getMean(),
                            stats.getVariance()});
    return success();
  }
};

struct FormRowKernelsPass : mlir::norm::impl::FormRowKernelsBase<FormRowKernelsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FormRowKernel, FormBatchNormTrainingKernels>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
