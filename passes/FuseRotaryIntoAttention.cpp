//===- FuseRotaryIntoAttention.cpp - RoPE as part of the attention --------===//

#include "passes/Passes.h"

#include "dialects/NormOps.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <type_traits>

namespace mlir::norm {
#define GEN_PASS_DEF_FUSEROTARYINTOATTENTION
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The rotation that produces `value` for `heads` heads of `headDim`, if
/// the attention is its only user.
static RotaryOp matchRotary(Value value, uint64_t heads, uint64_t headDim) {
  auto rotary = value.getDefiningOp<RotaryOp>();
  if (!rotary || !value.hasOneUse() || rotary.getNumHeads() != heads ||
      rotary.getHeadDim() != headDim)
    return {};
  return rotary;
}

/// Either attention layer op (prefill or decode) whose q and k are rotated
/// alike for it alone: it reads them unrotated and rotates itself, after
/// its QK-Norm, or before it where the QK-Norm moved in first (the graph
/// normalized rotated rows).
template <typename OpTy>
struct FuseRotaryIntoAttentionOp : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy attention,
                                PatternRewriter &rewriter) const override {
    if (attention.getRope())
      return rewriter.notifyMatchFailure(attention, "rotates already");
    RotaryOp q = matchRotary(attention.getQ(), attention.getNumHeads(),
                             attention.getHeadDim());
    RotaryOp k = matchRotary(attention.getK(), attention.getNumKvHeads(),
                             attention.getHeadDim());
    if (!q || !k)
      return rewriter.notifyMatchFailure(attention,
                                         "q or k is not rotated for it alone");
    // A norm.rotary without positions turns row i by position i; decode
    // rotates its new rows after the cache, so only explicit positions
    // mean the same there.
    if (std::is_same_v<OpTy, AttentionDecodeOp> && !q.getPositions())
      return rewriter.notifyMatchFailure(
          attention, "decode rows rotated by their index, not their position");
    if (q.getStyle() != k.getStyle() ||
        q.getRotaryDimAttr() != k.getRotaryDimAttr() ||
        q.getRopeThetaAttr() != k.getRopeThetaAttr() ||
        q.getPositions() != k.getPositions() ||
        q.getRopeTable() != k.getRopeTable())
      return rewriter.notifyMatchFailure(attention,
                                         "q and k rotate differently");

    rewriter.modifyOpInPlace(attention, [&] {
      attention.getQMutable().assign(q.getInput());
      attention.getKMutable().assign(k.getInput());
      attention.setRopeAttr(q.getStyleAttr());
      attention.setRotaryDimAttr(q.getRotaryDimAttr());
      attention.setRopeThetaAttr(q.getRopeThetaAttr());
      if (Value positions = q.getPositions())
        attention.getPositionsMutable().assign(positions);
      if (Value table = q.getRopeTable())
        attention.getRopeTableMutable().assign(table);
      // A QK-Norm already inside normalizes the rotated rows (Llama 4).
      if (attention.getQkNorm())
        attention.setRopeFirst(true);
    });
    rewriter.eraseOp(q);
    rewriter.eraseOp(k);
    return success();
  }
};

struct FuseRotaryIntoAttentionPass
    : mlir::norm::impl::FuseRotaryIntoAttentionBase<
          FuseRotaryIntoAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRotaryIntoAttentionOp<AttentionOp>,
                 FuseRotaryIntoAttentionOp<AttentionDecodeOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
