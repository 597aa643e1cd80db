//===- LowerApproxMathToNVVM.cpp - f32 math without libdevice -----------===//

#include "passes/LoweringPasses.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMLOWERAPPROXMATHTONVVM
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// Applies `scalar` to each element of an f32 scalar or 1-D vector `x`.
static Value mapElements(PatternRewriter &rewriter, Location loc, Value x,
                         function_ref<Value(Value)> scalar) {
  auto vectorType = dyn_cast<VectorType>(x.getType());
  if (!vectorType)
    return scalar(x);
  SmallVector<Value> elements;
  for (int64_t i = 0; i < vectorType.getNumElements(); ++i)
    elements.push_back(scalar(vector::ExtractOp::create(rewriter, loc, x, i)));
  return vector::FromElementsOp::create(rewriter, loc, vectorType, elements);
}

/// Whether `op` is an f32 (scalar or 1-D vector) math op in a kernel.
static bool isKernelF32(Operation *op) {
  Type type = op->getResult(0).getType();
  auto vectorType = dyn_cast<VectorType>(type);
  return getElementTypeOrSelf(type).isF32() &&
         (!vectorType || vectorType.getRank() == 1) &&
         op->getParentOfType<gpu::GPUModuleOp>();
}

static bool isApproximate(arith::FastMathFlags flags) {
  return bitEnumContainsAll(flags, arith::FastMathFlags::afn);
}

static Value callIntrinsic(PatternRewriter &rewriter, Location loc,
                           StringRef name, Value x) {
  return LLVM::CallIntrinsicOp::create(rewriter, loc, rewriter.getF32Type(),
                                       rewriter.getStringAttr(name),
                                       ValueRange{x})
      .getResult(0);
}

/// math.rsqrt: rsqrt.approx.f32 per element with `afn`, else sqrt.rn.f32
/// and div.rn.f32.
struct LowerRsqrt : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::RsqrtOp op,
                                PatternRewriter &rewriter) const override {
    if (!isKernelF32(op))
      return rewriter.notifyMatchFailure(op, "not an f32 rsqrt in a kernel");
    bool approximate = isApproximate(op.getFastmath());
    Location loc = op.getLoc();
    rewriter.replaceOp(op, mapElements(rewriter, loc, op.getOperand(),
                                       [&](Value x) -> Value {
      if (approximate)
        return callIntrinsic(rewriter, loc, "llvm.nvvm.rsqrt.approx.f", x);
      Value one = arith::ConstantOp::create(rewriter, loc,
                                            rewriter.getF32FloatAttr(1.0));
      return arith::DivFOp::create(rewriter, loc, one,
                                   LLVM::SqrtOp::create(rewriter, loc, x));
    }));
    return success();
  }
};

/// math.exp2 and math.log2 with `afn`: ex2.approx.ftz.f32 and lg2.approx.f32
/// (2 ulp and 2^-22 absolute). Without `afn` they stay (libdevice's). The
/// kernels' exp2 are softmax weights beside a weight of 1 (the row's
/// maximum): flushing those below 2^-126 to 0 costs less than the f32
/// minimum normal per key that the references allow, and the ftz form is
/// one instruction where the other is four (FSETP, FMUL, MUFU, FMUL).
template <typename OpTy>
struct LowerApproximate : OpRewritePattern<OpTy> {
  LowerApproximate(MLIRContext *context, StringRef intrinsic)
      : OpRewritePattern<OpTy>(context), intrinsic(intrinsic) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isKernelF32(op) || !isApproximate(op.getFastmath()))
      return rewriter.notifyMatchFailure(op, "not an afn f32 op in a kernel");
    Location loc = op.getLoc();
    rewriter.replaceOp(op, mapElements(rewriter, loc, op.getOperand(),
                                       [&](Value x) {
      return callIntrinsic(rewriter, loc, intrinsic, x);
    }));
    return success();
  }

  StringRef intrinsic;
};

/// An exact f32 math op as the LLVM intrinsic that NVPTX selects to one
/// instruction (the NVVM conversion would call libdevice). Not roundeven:
/// the NVVM conversion marks llvm.intr.roundeven illegal.
template <typename OpTy, typename LLVMOpTy>
struct LowerExact : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isKernelF32(op))
      return rewriter.notifyMatchFailure(op, "not an f32 op in a kernel");
    rewriter.replaceOpWithNewOp<LLVMOpTy>(op, op.getType(),
                                          op->getOperands());
    return success();
  }
};

/// arith.divf with `afn`: div.approx.f32 (2 ulp for divisors of magnitude
/// 2^-126 to 2^126), which has no slow path: div.rn.f32 calls a subroutine
/// and takes a stack frame.
struct LowerApproximateDivision : OpRewritePattern<arith::DivFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::DivFOp op,
                                PatternRewriter &rewriter) const override {
    if (!isKernelF32(op) || isa<VectorType>(op.getType()) ||
        !isApproximate(op.getFastmath()))
      return rewriter.notifyMatchFailure(op, "not an afn f32 divf");
    rewriter.replaceOp(
        op, LLVM::CallIntrinsicOp::create(
                rewriter, op.getLoc(), rewriter.getF32Type(),
                rewriter.getStringAttr("llvm.nvvm.div.approx.f"),
                ValueRange{op.getLhs(), op.getRhs()})
                .getResult(0));
    return success();
  }
};

struct LowerApproxMathToNVVM
    : public mlir::norm::impl::NormLowerApproxMathToNVVMBase<
          LowerApproxMathToNVVM> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<LowerRsqrt, LowerApproximateDivision>(context);
    patterns.add<LowerApproximate<math::Exp2Op>>(
        context, "llvm.nvvm.ex2.approx.ftz.f32");
    patterns.add<LowerApproximate<math::Log2Op>>(context,
                                                 "llvm.nvvm.lg2.approx.f");
    patterns.add<LowerApproximate<math::SinOp>>(context,
                                                "llvm.nvvm.sin.approx.f");
    patterns.add<LowerApproximate<math::CosOp>>(context,
                                                "llvm.nvvm.cos.approx.f");
    patterns.add<LowerExact<math::FmaOp, LLVM::FMAOp>>(context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
