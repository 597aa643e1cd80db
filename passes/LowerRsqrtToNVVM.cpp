//===- LowerRsqrtToNVVM.cpp - f32 rsqrt without libdevice -----------------===//

#include "passes/LoweringPasses.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMLOWERRSQRTTONVVM
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// math.rsqrt on f32 scalars or vectors: rsqrt.approx.f32 per element with
/// `afn`, else sqrt.rn.f32 and div.rn.f32.
struct LowerRsqrt : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::RsqrtOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    auto vectorType = dyn_cast<VectorType>(type);
    if (!getElementTypeOrSelf(type).isF32() ||
        (vectorType && vectorType.getRank() != 1) ||
        !op->getParentOfType<gpu::GPUModuleOp>())
      return rewriter.notifyMatchFailure(op, "not an f32 rsqrt in a kernel");
    bool approximate = bitEnumContainsAll(op.getFastmath(),
                                          arith::FastMathFlags::afn);
    Location loc = op.getLoc();
    auto scalarRsqrt = [&](Value x) -> Value {
      if (approximate)
        return LLVM::CallIntrinsicOp::create(
                   rewriter, loc, rewriter.getF32Type(),
                   rewriter.getStringAttr("llvm.nvvm.rsqrt.approx.f"),
                   ValueRange{x})
            .getResult(0);
      Value one = arith::ConstantOp::create(rewriter, loc,
                                            rewriter.getF32FloatAttr(1.0));
      return arith::DivFOp::create(rewriter, loc, one,
                                   LLVM::SqrtOp::create(rewriter, loc, x));
    };
    if (!vectorType) {
      rewriter.replaceOp(op, scalarRsqrt(op.getOperand()));
      return success();
    }
    SmallVector<Value> elements;
    for (int64_t i = 0; i < vectorType.getNumElements(); ++i)
      elements.push_back(scalarRsqrt(
          vector::ExtractOp::create(rewriter, loc, op.getOperand(), i)));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vectorType,
                                                        elements);
    return success();
  }
};

struct LowerRsqrtToNVVM
    : public mlir::norm::impl::NormLowerRsqrtToNVVMBase<LowerRsqrtToNVVM> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerRsqrt>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
