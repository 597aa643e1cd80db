//===- ExpandFp8Conversions.cpp - f32 <-> e4m3 and e5m2
//--------------------===//
//
// FP8 outputs and FP8 KV caches need the conversions no LLVM backend
// lowers (LLVM has no FP8 type; MLIR holds FP8 values as i8 there). Chips
// from sm_89 on convert pairs in one cvt; the host path and sm_80 run
// integer code that gives the same bits: to FP8, round to nearest even,
// saturate, NaN to the quiet NaN; from FP8, exact.
//
//===----------------------------------------------------------------------===//

#include "passes/LoweringPasses.h"

#include "dialects/NormOps.h"
#include "passes/BitBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMEXPANDFP8CONVERSIONS
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using mlir::norm::BitBuilder;

namespace {

/// The bit layout of an FP8 format, and the f32 bit patterns where its
/// ranges begin.
struct Fp8Format {
  uint32_t mantissaBits; // 3 (e4m3), 2 (e5m2)
  uint32_t bias;         // 7, 15
  uint32_t maxCode;      // the largest finite value: 0x7e (448), 0x7b (57344)
  uint32_t nanCode;      // the quiet NaN: 0x7f, 0x7e
  uint32_t maxBits;      // f32 bits of the largest finite value
  uint32_t minNormalBits; // f32 bits of the smallest normal value
  float subnormalScale;   // 1 / the subnormal spacing: 2^9, 2^16
};

std::optional<Fp8Format> getFp8Format(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return Fp8Format{3, 7, 0x7e, 0x7f, 0x43e00000, 0x3c800000, 0x1p9f};
  if (isa<Float8E5M2Type>(type))
    return Fp8Format{2, 15, 0x7b, 0x7e, 0x47600000, 0x38800000, 0x1p16f};
  return std::nullopt;
}

/// The FP8 type a truncf from f32 produces (null for other truncations).
Type getFp8Result(arith::TruncFOp op) {
  Type to = getElementTypeOrSelf(op.getType());
  if (!getElementTypeOrSelf(op.getIn().getType()).isF32() ||
      !getFp8Format(to) || op.getRoundingmodeAttr())
    return {};
  return to;
}

/// A rewrite of the truncf ops from f32 to FP8.
struct TruncFp8Pattern : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const final {
    Type fp8 = getFp8Result(op);
    return fp8 ? rewrite(op, fp8, rewriter) : failure();
  }
  virtual LogicalResult rewrite(arith::TruncFOp op, Type fp8,
                                PatternRewriter &rewriter) const = 0;
};

/// f32 -> FP8 as i32 code on the bit patterns.
struct ExpandTruncFp8 : TruncFp8Pattern {
  using TruncFp8Pattern::TruncFp8Pattern;
  LogicalResult rewrite(arith::TruncFOp op, Type fp8,
                        PatternRewriter &rewriter) const override {
    Fp8Format format = *getFp8Format(fp8);
    Location loc = op.getLoc();
    BitBuilder b(rewriter, loc, op.getIn().getType());
    Value bits = b.bitcast(op.getIn(), rewriter.getI32Type());
    Value sign = b.andi(b.shrui(bits, 24), 0x80);
    Value magnitude = b.andi(bits, 0x7fffffff);
    // Normal: drop the low mantissa bits, rounding to even (a carry into
    // the exponent is right), and rebias the exponent.
    uint32_t dropped = 23 - format.mantissaBits;
    Value odd = b.andi(b.shrui(magnitude, dropped), 1);
    Value rounded = b.shrui(
        b.addi(b.addi(magnitude, (1u << (dropped - 1)) - 1), odd), dropped);
    Value normal =
        b.addi(rounded, 0u - ((127 - format.bias) << format.mantissaBits));
    // Subnormal: |x| / spacing (exact) plus 2^23 leaves the rounded
    // multiple of the spacing in the low bits of the sum (the addition
    // rounds to nearest even).
    Value aligned = arith::AddFOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc,
                              b.bitcast(magnitude, rewriter.getF32Type()),
                              b.f32(format.subnormalScale)),
        b.f32(0x1p23f));
    Value tiny = arith::SubIOp::create(
        rewriter, loc, b.bitcast(aligned, rewriter.getI32Type()),
        b.i32(0x4b000000));
    Value finite = b.select(
        b.cmp(arith::CmpIPredicate::uge, magnitude, format.maxBits),
        b.i32(format.maxCode),
        b.select(
            b.cmp(arith::CmpIPredicate::uge, magnitude, format.minNormalBits),
            normal, tiny));
    // NaN keeps no sign: cvt gives the one quiet NaN.
    Value result =
        b.select(b.cmp(arith::CmpIPredicate::ugt, magnitude, 0x7f800000),
                 b.i32(format.nanCode), b.ori(finite, sign));
    Value byte = arith::TruncIOp::create(
        rewriter, loc, b.shaped(rewriter.getI8Type()), result);
    rewriter.replaceOp(op, b.bitcast(byte, fp8));
    return success();
  }
};

/// f32 -> FP8 with cvt.rn.satfinite on pairs: (y[2i], y[2i+1]) is one
/// cvt whose upper byte is y[2i+1]; the halves of an odd count pair with 0.
struct TruncFp8ToNVVM : TruncFp8Pattern {
  using TruncFp8Pattern::TruncFp8Pattern;
  LogicalResult rewrite(arith::TruncFOp op, Type fp8,
                        PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value in = op.getIn();
    auto vectorType = dyn_cast<VectorType>(in.getType());
    if (vectorType && vectorType.getRank() != 1)
      return failure();
    int64_t count = vectorType ? vectorType.getNumElements() : 1;
    Type i8 = rewriter.getI8Type(), i16 = rewriter.getI16Type();
    auto element = [&](int64_t i) -> Value {
      if (i >= count)
        return arith::ConstantOp::create(rewriter, loc,
                                         rewriter.getF32FloatAttr(0.0f));
      if (!vectorType)
        return in;
      return vector::ExtractOp::create(rewriter, loc, in, i);
    };
    auto pair = [&](int64_t i) -> Value {
      return NVVM::ConvertF32x2ToF8x2Op::create(
          rewriter, loc, i16, /*a=*/element(i + 1), /*b=*/element(i),
          NVVM::FPRoundingMode::RN, NVVM::SaturationMode::SATFINITE,
          /*relu=*/false, fp8);
    };
    if (count % 2) {
      assert(count == 1 && "odd vectors are single elements");
      Value byte = arith::TruncIOp::create(rewriter, loc, i8, pair(0));
      Value result = arith::BitcastOp::create(rewriter, loc, fp8, byte);
      if (vectorType)
        result = vector::BroadcastOp::create(rewriter, loc, op.getType(),
                                             result);
      rewriter.replaceOp(op, result);
      return success();
    }
    auto pairsType = VectorType::get({count / 2}, i16);
    Value pairs = arith::ConstantOp::create(
        rewriter, loc, pairsType,
        DenseElementsAttr::get(pairsType, rewriter.getI16IntegerAttr(0)));
    for (int64_t i = 0; i < count; i += 2)
      pairs = vector::InsertOp::create(rewriter, loc, pair(i), pairs, i / 2);
    // Little-endian: byte 2i of the pairs is the low byte of pair i.
    Value bytes = vector::BitCastOp::create(
        rewriter, loc, VectorType::get({count}, i8), pairs);
    rewriter.replaceOp(
        op, arith::BitcastOp::create(rewriter, loc, op.getType(), bytes));
    return success();
  }
};

/// The FP8 type an extf widens (to f32, f16 or bf16, which hold every FP8
/// value; null for other extensions).
Type getFp8Source(arith::ExtFOp op) {
  Type from = getElementTypeOrSelf(op.getIn().getType());
  Type to = getElementTypeOrSelf(op.getType());
  if (!(to.isF32() || to.isF16() || to.isBF16()) || !getFp8Format(from))
    return {};
  return from;
}

/// `wide` (f32, exact FP8 values) as the result type of `op`: exact.
Value narrowExactly(PatternRewriter &rewriter, arith::ExtFOp op, Value wide) {
  if (getElementTypeOrSelf(op.getType()).isF32())
    return wide;
  return arith::TruncFOp::create(rewriter, op.getLoc(), op.getType(), wide);
}

/// FP8 -> f32 (exact) as i32 code: normals rebias their exponent, the
/// subnormals are their mantissa times the spacing, NaN stays NaN.
struct ExpandExtFp8 : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const final {
    Type fp8 = getFp8Source(op);
    if (!fp8)
      return failure();
    Fp8Format format = *getFp8Format(fp8);
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    Type wideType = f32;
    if (auto vectorType = dyn_cast<VectorType>(op.getType()))
      wideType = vectorType.clone(f32);
    BitBuilder b(rewriter, loc, wideType);
    Type i8 = b.shaped(rewriter.getI8Type());
    Value byte = arith::BitcastOp::create(rewriter, loc, i8, op.getIn());
    Value code = arith::ExtUIOp::create(rewriter, loc,
                                        b.shaped(rewriter.getI32Type()), byte);
    Value sign = b.shli(b.andi(code, 0x80), 24);
    Value magnitude = b.andi(code, 0x7f);
    uint32_t shift = 23 - format.mantissaBits;
    Value normal = b.addi(b.shli(magnitude, shift), (127 - format.bias) << 23);
    Value tiny =
        b.bitcast(arith::MulFOp::create(rewriter, loc,
                                        arith::UIToFPOp::create(
                                            rewriter, loc, wideType, magnitude),
                                        b.f32(1.0f / format.subnormalScale)),
                  rewriter.getI32Type());
    // A zero exponent: subnormal (or zero).
    Value finite = b.select(
        b.cmp(arith::CmpIPredicate::ult, magnitude, 1u << format.mantissaBits),
        tiny, normal);
    // e4m3fn's one NaN code (0x7f); e5m2's exponent of ones: inf and NaN.
    Value special = b.cmp(arith::CmpIPredicate::uge, magnitude,
                          format.nanCode == 0x7f ? 0x7f : 0x7c);
    Value infOrNan = b.ori(b.i32(0x7f800000), b.shli(b.andi(magnitude, 3), 21));
    Value result = b.ori(b.select(special, infOrNan, finite), sign);
    rewriter.replaceOp(op, narrowExactly(rewriter, op, b.bitcast(result, f32)));
    return success();
  }
};

/// FP8 -> f16 through cvt.rn.f16x2 on pairs (sm_89 on); f32 and bf16 from
/// there (exactly).
struct ExtFp8ToNVVM : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const final {
    Type fp8 = getFp8Source(op);
    auto vectorType = dyn_cast<VectorType>(op.getIn().getType());
    if (!fp8 || !vectorType || vectorType.getRank() != 1 ||
        vectorType.getNumElements() % 2)
      return failure();
    Location loc = op.getLoc();
    int64_t count = vectorType.getNumElements();
    Type f16 = rewriter.getF16Type();
    // Pair i: bytes 2i (the low half's) and 2i + 1.
    Value bytes = arith::BitcastOp::create(
        rewriter, loc, VectorType::get({count}, rewriter.getI8Type()),
        op.getIn());
    auto halvesType = VectorType::get({2}, f16);
    auto halfType = VectorType::get({count}, f16);
    Value halves = arith::ConstantOp::create(
        rewriter, loc, halfType,
        DenseElementsAttr::get(halfType, rewriter.getF16FloatAttr(0.0f)));
    for (int64_t i = 0; i < count / 2; ++i) {
      Value pair = vector::ExtractStridedSliceOp::create(
          rewriter, loc, bytes, ArrayRef<int64_t>{2 * i}, ArrayRef<int64_t>{2},
          ArrayRef<int64_t>{1});
      Value two = NVVM::ConvertF8x2ToF16x2Op::create(rewriter, loc, halvesType,
                                                     pair, /*relu=*/false, fp8);
      halves = vector::InsertStridedSliceOp::create(rewriter, loc, two, halves,
                                                    ArrayRef<int64_t>{2 * i},
                                                    ArrayRef<int64_t>{1});
    }
    Type to = getElementTypeOrSelf(op.getType());
    if (!to.isF16()) {
      halves = arith::ExtFOp::create(
          rewriter, loc, halfType.clone(rewriter.getF32Type()), halves);
      if (to.isBF16())
        halves = arith::TruncFOp::create(rewriter, loc, op.getType(), halves);
    }
    rewriter.replaceOp(op, halves);
    return success();
  }
};

struct NormExpandFp8Conversions
    : mlir::norm::impl::NormExpandFp8ConversionsBase<
          NormExpandFp8Conversions> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (!software &&
        mlir::norm::getTargetOptions(getOperation()).hasFp8Conversions())
      patterns.add<TruncFp8ToNVVM, ExtFp8ToNVVM>(&getContext());
    else
      patterns.add<ExpandTruncFp8>(&getContext());
    // Scalars and odd vectors widen in integer code everywhere.
    patterns.add<ExpandExtFp8>(&getContext(), /*benefit=*/0);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
