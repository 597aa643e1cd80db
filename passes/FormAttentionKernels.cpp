//===- FormAttentionKernels.cpp - norm.attention as its kernel op ---------===//

#include "passes/Passes.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::norm {
#define GEN_PASS_DEF_FORMATTENTIONKERNELS
#include "passes/FusionPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

/// Attention kernels take both QK-Norm weights or neither: a missing one
/// becomes a weight of ones (an offset needs both weights, so the ones
/// scale by exactly one); per-head weights get a row of ones per head.
template <typename OpTy> static void completeWeightPair(OpTy op) {
  Value q = op.getQNormWeight(), k = op.getKNormWeight();
  if (bool(q) == bool(k))
    return;
  auto given = cast<RankedTensorType>((q ? q : k).getType());
  int64_t headDim = op.getHeadDim();
  bool perHead = isPerHeadQKWeightPair(q, k, headDim);
  int64_t heads = q ? op.getNumKvHeads() : op.getNumHeads();
  auto type = RankedTensorType::get({headDim * (perHead ? heads : 1)},
                                    given.getElementType());
  OpBuilder b(op);
  Value ones = arith::ConstantOp::create(
      b, op.getLoc(),
      DenseElementsAttr::get(type, FloatAttr::get(type.getElementType(), 1.0)));
  if (q)
    op.getKNormWeightMutable().assign(ones);
  else
    op.getQNormWeightMutable().assign(ones);
}

/// The keys of `op` normalized and rotated as its kernel would (the same
/// fields, k's weight), by a norm.k_prepare over the sequences `offsets`.
static Value prepareKeys(OpBuilder &b, AttentionOp op, Value offsets) {
  Value k = op.getK();
  bool byIndex = op.getRope() && !op.getPositions();
  auto prepared = KPrepareOp::create(
      b, op.getLoc(), k.getType(), /*v_out=*/Type(), /*saved_mean=*/Type(),
      /*saved_rstd=*/Type(), k, /*v=*/Value(), byIndex ? offsets : Value(),
      /*k_cache=*/Value(), /*v_cache=*/Value(),
      /*cache_seqlens=*/Value(), /*block_tables=*/Value(),
      /*page_indptr=*/Value(),
      /*k_scale=*/Value(), /*v_scale=*/Value(), op.getKNormWeight(),
      op.getPositions(), op.getRopeTable(), op.getQkNormAttr(),
      op.getNumKvHeadsAttr(), op.getHeadDimAttr(), op.getQkNormEpsAttr(),
      op.getQkNormOffsetAttr(), op.getRopeAttr(), op.getRotaryDimAttr(),
      op.getRopeThetaAttr(), op.getRopeFirstAttr(),
      /*cache_block_size=*/nullptr, /*launch=*/nullptr, /*kernel=*/nullptr);
  return prepared.getKOut();
}

/// The kernel op of `op` over one sequence of all its tokens, its keys
/// prepared by a norm.k_prepare unless `keysInLoop`.
static LogicalResult formAttentionKernel(AttentionOp op, bool keysInLoop) {
  bool prepare = !keysInLoop && (op.getQkNorm() || op.getRope());
  if (!prepare)
    completeWeightPair(op);
  OpBuilder b(op);
  Location loc = op.getLoc();

  // cu_seqlens = [0, tokens] as i32, the type of FlashAttention's offsets.
  Value tokens = b.createOrFold<tensor::DimOp>(loc, op.getQ(), 0);
  Value end = b.createOrFold<arith::IndexCastOp>(loc, b.getI32Type(), tokens);
  Value start = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value offsets = tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({2}, b.getI32Type()),
      ValueRange{start, end});
  Value keys = prepare ? prepareKeys(b, op, offsets) : op.getK();
  auto kernel = AttentionKernelOp::create(
      b, loc, op.getType(), /*lse=*/Type(), op.getQ(), keys, op.getV(),
      offsets, op.getQNormWeight(),
      prepare ? Value() : op.getKNormWeight(), op.getPositions(),
      op.getRopeTable(), op.getNumHeadsAttr(),
      op.getNumKvHeadsAttr(), op.getHeadDimAttr(), op.getCausalAttr(),
      op.getScaleAttr(), op.getQkNormAttr(), op.getQkNormEpsAttr(),
      op.getQkNormOffsetAttr(), op.getRopeAttr(), op.getRotaryDimAttr(),
      op.getRopeThetaAttr(), op.getRopeFirstAttr(),
      prepare ? b.getUnitAttr() : nullptr,
      /*launch=*/nullptr, /*kernel=*/nullptr);
  kernel->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.replaceAllUsesWith(kernel.getOutput());
  op.erase();
  return success();
}

/// The decode kernel op of `op`: the same operands and fields (in the same
/// order: the kernel op adds only its launch and symbol).
static LogicalResult formDecodeKernel(AttentionDecodeOp op) {
  completeWeightPair(op);
  OpBuilder b(op);
  auto kernel = AttentionDecodeKernelOp::create(
      b, op.getLoc(), op->getResultTypes(), op->getOperands(),
      op->getAttrDictionary().getValue());
  op.replaceAllUsesWith(kernel->getResults());
  op.erase();
  return success();
}

namespace {
struct FormAttentionKernelsPass
    : mlir::norm::impl::FormAttentionKernelsBase<FormAttentionKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops)
      if (failed(formAttentionKernel(op, keysInLoop)))
        return signalPassFailure();
    SmallVector<AttentionDecodeOp> decodes;
    getOperation()->walk([&](AttentionDecodeOp op) { decodes.push_back(op); });
    for (AttentionDecodeOp op : decodes)
      if (failed(formDecodeKernel(op)))
        return signalPassFailure();
  }
};
} // namespace
