//===- FuseQKNormIntoAttention.cpp - QK-Norm as the attention prologue ----===//

#include "passes/Passes.h"
#include "passes/PerHeadNorm.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FUSEQKNORMINTOATTENTION
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

struct FuseQKNormIntoAttentionOp : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp attention,
                                PatternRewriter &rewriter) const override {
    if (attention.getQkNormAttr())
      return rewriter.notifyMatchFailure(attention, "has QK-Norm already");
    if (!attention.getQ().hasOneUse() || !attention.getK().hasOneUse())
      return rewriter.notifyMatchFailure(attention, "q or k has other users");
    int64_t headDim = attention.getHeadDim();
    std::optional<PerHeadNorm> q = PerHeadNorm::match(attention.getQ(), headDim);
    std::optional<PerHeadNorm> k = PerHeadNorm::match(attention.getK(), headDim);
    if (!q || !k)
      return rewriter.notifyMatchFailure(attention, "q or k not normed");
    // One offset serves both weights; the op needs both for it.
    bool offsetFits = q->weightOffset == 0.0 || (q->weight && k->weight);
    if (!q->isCompatibleWith(*k) || !offsetFits ||
        q->headDim != static_cast<int64_t>(attention.getHeadDim()) ||
        q->heads != static_cast<int64_t>(attention.getNumHeads()) ||
        k->heads != static_cast<int64_t>(attention.getNumKvHeads()))
      return rewriter.notifyMatchFailure(attention, "norms do not match the "
                                                    "heads or each other");

    auto fused = AttentionOp::create(
        rewriter, attention.getLoc(), attention.getType(), q->source,
        k->source, attention.getV(), q->weight, k->weight,
        attention.getPositions(), attention.getRopeTable(),
        attention.getNumHeadsAttr(), attention.getNumKvHeadsAttr(),
        attention.getHeadDimAttr(), attention.getCausalAttr(),
        attention.getScaleAttr(),
        QKNormKindAttr::get(getContext(), q->kind),
        rewriter.getF64FloatAttr(q->eps),
        rewriter.getF64FloatAttr(q->weightOffset), attention.getRopeAttr(),
        attention.getRotaryDimAttr(), attention.getRopeThetaAttr());
    fused->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
    rewriter.replaceOp(attention, fused);
    return success();
  }
};

struct FuseQKNormIntoAttentionPass
    : mlir::norm::impl::FuseQKNormIntoAttentionBase<FuseQKNormIntoAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseQKNormIntoAttentionOp>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
