//===- FuseResidualAddIntoNorm.cpp - norm(alpha * x + f) as one kernel ----===//
//
// Pre-norm, post-norm and DeepNorm: the residual add becomes the prologue of
// the row kernel that normalizes its result.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/RowKernelSpec.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FUSERESIDUALADDINTONORM
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The spec of `user` when it is a row kernel without a prologue of its own
/// that reads `h` as its input and nowhere else.
std::optional<RowKernelSpec> getConsumerSpec(Operation *user, Value h) {
  std::optional<RowKernelSpec> spec = RowKernelSpec::get(user);
  if (!spec || spec->input != h || spec->addend ||
      llvm::count(user->getOperands(), h) != 1)
    return std::nullopt;
  return spec;
}

struct FuseResidualAddIntoConsumer : OpRewritePattern<ResidualAddOp> {
  FuseResidualAddIntoConsumer(MLIRContext *context, bool f32Residual)
      : OpRewritePattern(context), f32Residual(f32Residual) {}

  LogicalResult matchAndRewrite(ResidualAddOp add,
                                PatternRewriter &rewriter) const override {
    Value h = add.getResult();
    // The first consumer in the block is fused; the others will read
    // residual_out.
    SmallVector<Operation *> consumers;
    for (Operation *user : h.getUsers())
      if (user->getBlock() == add->getBlock() &&
          !llvm::is_contained(consumers, user))
        consumers.push_back(user);
    llvm::sort(consumers, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });

    for (Operation *consumer : consumers) {
      std::optional<RowKernelSpec> spec = getConsumerSpec(consumer, h);
      if (!spec)
        continue;
      spec->input = add.getResidual();
      spec->addend = add.getSublayer();
      spec->alpha = add.getAlpha().convertToDouble();
      spec->f32Residual =
          f32Residual && !getElementTypeOrSelf(h.getType()).isF32();
      SmallVector<Operation *> otherUsers = getUsersExcept(h, consumer);
      if (!otherUsers.empty())
        spec->residualType = add.getType();

      SmallVector<Operation *> users =
          getUsersExcept(consumer->getResults(), {});
      users.append(otherUsers);
      Operation *point = findInsertionPoint({consumer, add.getOperation()},
                                            spec->getOperands(), users);
      if (!point)
        continue;
      rewriter.setInsertionPoint(point);
      FusedRowOp fused = spec->build(
          rewriter, rewriter.getFusedLoc({add.getLoc(), consumer->getLoc()}));
      replaceRowKernel(rewriter, consumer, fused);
      if (spec->residualType)
        rewriter.replaceOp(add, fused.getResidualOut());
      else
        rewriter.eraseOp(add);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "no row kernel to fuse into");
  }

private:
  bool f32Residual;
};

struct FuseResidualAddIntoNormPass
    : mlir::norm::impl::FuseResidualAddIntoNormBase<FuseResidualAddIntoNormPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseResidualAddIntoConsumer>(&getContext(), f32Residual);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
