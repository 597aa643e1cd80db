//===- FormQKNormPrologue.cpp - q and k norms from packed qkv, one kernel -===//

#include "passes/Passes.h"
#include "passes/PerHeadNorm.h"
#include "passes/RowKernelSpec.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FORMQKNORMPROLOGUE
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// Whether `slice` takes columns from `column` on of a row range of a 2-D
/// tensor, with unit strides.
bool isColumnBlock(tensor::ExtractSliceOp slice, int64_t column) {
  return slice.getSourceType().getRank() == 2 &&
         slice.getType().getRank() == 2 && slice.hasUnitStride() &&
         isConstantIntValue(slice.getMixedOffsets()[1], column);
}

/// Whether the row range `[offset, offset + size)` is all of `qkv`.
bool isAllRows(Value qkv, OpFoldResult offset, OpFoldResult size) {
  if (!isConstantIntValue(offset, 0))
    return false;
  int64_t rows = cast<RankedTensorType>(qkv.getType()).getDimSize(0);
  if (!ShapedType::isDynamic(rows))
    return isConstantIntValue(size, rows);
  auto value = dyn_cast<Value>(size);
  auto dim = value ? value.getDefiningOp<tensor::DimOp>() : tensor::DimOp();
  return dim && dim.getSource() == qkv && dim.getConstantIndex() == 0;
}

/// Whether the weights of `q` and `k` are one row each, or, where either is
/// a row per head, a row for each of their heads.
bool hasWeightRows(const PerHeadNorm &q, const PerHeadNorm &k) {
  if (!isPerHeadQKWeightPair(q.weight, k.weight, q.headDim))
    return true;
  return getQKWeightRows(q.weight, q.headDim) == q.heads &&
         getQKWeightRows(k.weight, k.headDim) == k.heads;
}

/// The rotation that is the only user of `value`, of `heads` heads of
/// `headDim`.
RotaryOp getOnlyRotaryUser(Value value, int64_t heads, int64_t headDim) {
  if (!value.hasOneUse())
    return {};
  auto rotary = dyn_cast<RotaryOp>(*value.getUsers().begin());
  if (!rotary || rotary.getInput() != value ||
      static_cast<int64_t>(rotary.getNumHeads()) != heads ||
      static_cast<int64_t>(rotary.getHeadDim()) != headDim)
    return {};
  return rotary;
}

/// Whether `q` and `k` turn their rows alike (one kernel turns both).
bool rotateAlike(RotaryOp q, RotaryOp k) {
  return q.getStyle() == k.getStyle() &&
         q.getRotaryDimAttr() == k.getRotaryDimAttr() &&
         q.getRopeThetaAttr() == k.getRopeThetaAttr() &&
         q.getPositions() == k.getPositions() &&
         q.getRopeTable() == k.getRopeTable();
}

/// The rotations of q and k the prologue takes: before their norms (Llama
/// 4) or after them; null where there are none.
struct Rotations {
  RotaryOp q, k;
  bool first = false;
};

struct FormPrologueFromQSlice : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractSliceOp qSlice,
                                PatternRewriter &rewriter) const override {
    if (!isColumnBlock(qSlice, 0))
      return failure();
    // Llama 4 rotates the heads it slices, then normalizes the rotated rows.
    Value qRows = qSlice.getResult();
    if (auto rotary = dyn_cast_or_null<RotaryOp>(
            qRows.hasOneUse() ? *qRows.getUsers().begin() : nullptr))
      qRows = rotary.getResult();
    // One query head (then one key/value head too): the slice is the head.
    std::optional<PerHeadNorm> q = PerHeadNorm::findFrom(qRows);
    if (!q)
      q = PerHeadNorm::findFrom(qRows, qSlice.getType().getDimSize(1));
    if (!q)
      return rewriter.notifyMatchFailure(qSlice, "no per-head norm of q");
    Value qkv = qSlice.getSource();
    OpFoldResult rowOffset = qSlice.getMixedOffsets()[0];
    OpFoldResult rowSize = qSlice.getMixedSizes()[0];
    for (Operation *user : qkv.getUsers()) {
      auto kSlice = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!kSlice || kSlice == qSlice ||
          !isColumnBlock(kSlice, q->heads * q->headDim) ||
          !isEqualConstantIntOrValue(kSlice.getMixedOffsets()[0], rowOffset) ||
          !isEqualConstantIntOrValue(kSlice.getMixedSizes()[0], rowSize))
        continue;
      Rotations rotations;
      if (q->source != qSlice.getResult()) {
        rotations.q = q->source.getDefiningOp<RotaryOp>();
        rotations.k = getOnlyRotaryUser(kSlice.getResult(),
                                        kSlice.getType().getDimSize(1) /
                                            q->headDim,
                                        q->headDim);
        rotations.first = true;
        if (!rotations.k || !rotateAlike(rotations.q, rotations.k) ||
            static_cast<int64_t>(rotations.q.getHeadDim()) != q->headDim ||
            rotations.q.getNumHeads() * rotations.q.getHeadDim() !=
                static_cast<uint64_t>(qSlice.getType().getDimSize(1)))
          continue;
      }
      // Multi-query attention's one key/value head is the norm alone.
      Value kRows = rotations.k ? rotations.k.getResult() : kSlice.getResult();
      std::optional<PerHeadNorm> k = PerHeadNorm::findFrom(kRows, q->headDim);
      // The prologue scales both heads or neither, with one weight row
      // every head shares or a row per head for both (Command R+).
      if (!k || !q->isCompatibleWith(*k) ||
          bool(q->weight) != bool(k->weight) || !hasWeightRows(*q, *k))
        continue;
      // Rotations of the normalized rows (Qwen 3, Gemma 3): the prologue's
      // too, where both are rotated alike for it alone.
      if (!rotations.first) {
        rotations.q = getOnlyRotaryUser(q->result, q->heads, q->headDim);
        rotations.k = getOnlyRotaryUser(k->result, k->heads, k->headDim);
        if (!rotations.q || !rotations.k ||
            !rotateAlike(rotations.q, rotations.k))
          rotations = Rotations();
      }
      if (succeeded(rewrite(rewriter, *q, *k, rotations, qkv, rowOffset,
                            rowSize)))
        return success();
    }
    return rewriter.notifyMatchFailure(qSlice, "no matching per-head norm "
                                               "of k");
  }

private:
  LogicalResult rewrite(PatternRewriter &rewriter, const PerHeadNorm &q,
                        const PerHeadNorm &k, const Rotations &rotations,
                        Value qkv, OpFoldResult rowOffset,
                        OpFoldResult rowSize) const {
    auto qkvType = cast<RankedTensorType>(qkv.getType());
    int64_t width = (q.heads + 2 * k.heads) * q.headDim;
    if (qkvType.getDimSize(1) != width)
      return failure();

    bool allRows = isAllRows(qkv, rowOffset, rowSize);
    SmallVector<Value> operands = {qkv};
    if (!allRows)
      for (OpFoldResult ofr : {rowOffset, rowSize})
        if (auto v = dyn_cast<Value>(ofr))
          operands.push_back(v);
    RotaryOp rotary = rotations.q, kRotary = rotations.k;
    Value positions = rotary ? rotary.getPositions() : Value();
    Value table = rotary ? rotary.getRopeTable() : Value();
    for (Value operand : {q.weight, k.weight, positions, table})
      if (operand)
        operands.push_back(operand);
    // What replaces the prologue's results: the norms', or the rotations'
    // of the normalized rows.
    bool after = rotary && !rotations.first;
    Operation *qJoin = after ? rotary.getOperation() : q.result.getDefiningOp();
    Operation *kJoin =
        after ? kRotary.getOperation() : k.result.getDefiningOp();
    Operation *point = findInsertionPoint(
        {qJoin, kJoin}, operands,
        getUsersExcept({qJoin->getResult(0), kJoin->getResult(0)}, {}));
    if (!point)
      return failure();

    rewriter.setInsertionPoint(point);
    Location loc = rewriter.getFusedLoc({qJoin->getLoc(), kJoin->getLoc()});
    Value packed = qkv;
    if (!allRows)
      packed = tensor::ExtractSliceOp::create(
          rewriter, loc, qkv, {rowOffset, rewriter.getIndexAttr(0)},
          {rowSize, rewriter.getIndexAttr(width)},
          {rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    auto prologue = QKNormPrologueOp::create(
        rewriter, loc, q.result.getType(), k.result.getType(),
        /*saved_mean=*/Type(), /*saved_rstd=*/Type(), packed,
        q.weight, k.weight, positions, table,
        QKNormKindAttr::get(getContext(), q.kind),
        rewriter.getI64IntegerAttr(q.heads),
        rewriter.getI64IntegerAttr(k.heads),
        rewriter.getI64IntegerAttr(q.headDim), rewriter.getF64FloatAttr(q.eps),
        rewriter.getF64FloatAttr(q.weightOffset),
        rotary ? rotary.getStyleAttr() : RopeStyleAttr(),
        rotary ? rotary.getRotaryDimAttr() : IntegerAttr(),
        rotary ? rotary.getRopeThetaAttr() : FloatAttr(),
        rotations.first ? rewriter.getUnitAttr() : UnitAttr(),
        /*launch=*/nullptr, /*kernel=*/nullptr);
    rewriter.replaceOp(qJoin, prologue.getQ());
    rewriter.replaceOp(kJoin, prologue.getK());
    return success();
  }
};

struct FormQKNormProloguePass
    : mlir::norm::impl::FormQKNormPrologueBase<FormQKNormProloguePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FormPrologueFromQSlice>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
