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

/// Either attention layer op (prefill or decode) whose q and k are
/// normalized per head: it reads them unnormalized and normalizes itself.
template <typename OpTy>
struct FuseQKNormIntoAttentionOp : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy attention,
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

    rewriter.modifyOpInPlace(attention, [&] {
      attention.getQMutable().assign(q->source);
      attention.getKMutable().assign(k->source);
      if (q->weight)
        attention.getQNormWeightMutable().assign(q->weight);
      if (k->weight)
        attention.getKNormWeightMutable().assign(k->weight);
      attention.setQkNormAttr(
          QKNormKindAttr::get(rewriter.getContext(), q->kind));
      attention.setQkNormEpsAttr(rewriter.getF64FloatAttr(q->eps));
      attention.setQkNormOffsetAttr(rewriter.getF64FloatAttr(q->weightOffset));
    });
    return success();
  }
};

struct FuseQKNormIntoAttentionPass
    : mlir::norm::impl::FuseQKNormIntoAttentionBase<FuseQKNormIntoAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseQKNormIntoAttentionOp<AttentionOp>,
                 FuseQKNormIntoAttentionOp<AttentionDecodeOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
