//===- HostNarrowFloats.cpp - f16 and bf16 on any x86-64 CPU --------------===//
//
// Host code must not depend on the CPU it is JIT-compiled for. LLVM lowers
// f16 and bf16 on x86 with the CPU's conversion instructions (F16C,
// AVX512-BF16) where it has them and with calls into the compiler runtime
// (__extendhfsf2, __truncsfhf2, __truncsfbf2) where it does not, and a JIT
// session cannot rely on libgcc having those. So the host path never lets
// LLVM see an f16 or bf16 value: conversions become integer code on the bit
// patterns (here for f16, arith-expand for bf16), and what is left, values
// that are only moved, is retyped as i16 once the code is in the LLVM
// dialect.
//
//===----------------------------------------------------------------------===//

#include "passes/HostPasses.h"

#include "passes/BitBuilder.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMHOSTEXPANDF16CONVERSIONS
#define GEN_PASS_DEF_NORMHOSTNARROWFLOATSTOINTEGERS
#include "passes/HostPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using mlir::norm::BitBuilder;

//===----------------------------------------------------------------------===//
// f16 <-> f32 as integer code
//===----------------------------------------------------------------------===//

namespace {

bool isF16ToF32(Type from, Type to) {
  return getElementTypeOrSelf(from).isF16() &&
         getElementTypeOrSelf(to).isF32();
}

/// f16 -> f32, exact: the exponent rebiased, subnormals normalized by one
/// exact f32 subtraction, infinities and NaN kept.
struct ExpandExtF16 : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    if (!isF16ToF32(op.getIn().getType(), op.getType()))
      return failure();
    BitBuilder b(rewriter, op.getLoc(), op.getType());
    Value h = arith::ExtUIOp::create(rewriter, op.getLoc(),
                                     b.shaped(rewriter.getI32Type()),
                                     b.bitcast(op.getIn(), rewriter.getI16Type()));
    Value sign = b.shli(b.andi(h, 0x8000), 16);
    Value bits = b.shli(b.andi(h, 0x7fff), 13); // exponent and mantissa
    Value exponent = b.andi(bits, 0x0f800000);
    Value normal = b.addi(bits, (127 - 15) << 23);
    // Infinity and NaN: the f16 exponent is all ones, so is f32's.
    Value special = b.addi(normal, (128 - 16) << 23);
    // Zero and subnormals: 2^-14 * (1 + m) - 2^-14 is 2^-14 * m, exactly.
    Value tiny = arith::SubFOp::create(
        rewriter, op.getLoc(),
        b.bitcast(b.addi(normal, 1 << 23), rewriter.getF32Type()),
        b.f32(0x1p-14f));
    Value result = b.select(
        b.cmp(arith::CmpIPredicate::eq, exponent, 0x0f800000), special,
        b.select(b.cmp(arith::CmpIPredicate::eq, exponent, 0),
                 b.bitcast(tiny, rewriter.getI32Type()), normal));
    rewriter.replaceOp(op, b.bitcast(b.ori(result, sign), rewriter.getF32Type()));
    return success();
  }
};

/// f32 -> f16, round to nearest even: overflow to infinity, NaN to the
/// quiet NaN 0x7e00 (with its sign), subnormals rounded by one f32 addition
/// that aligns their bits (the default rounding mode is to nearest even).
struct ExpandTruncF16 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    if (!isF16ToF32(op.getType(), op.getIn().getType()) ||
        op.getRoundingmodeAttr())
      return failure();
    Location loc = op.getLoc();
    BitBuilder b(rewriter, loc, op.getIn().getType());
    Value bits = b.bitcast(op.getIn(), rewriter.getI32Type());
    Value sign = b.andi(bits, 0x80000000);
    Value magnitude = b.andi(bits, 0x7fffffff);

    // 2^16 and more (after rounding, 65520 and more) is infinity.
    Value huge = b.select(b.cmp(arith::CmpIPredicate::ugt, magnitude, 0x7f800000),
                          b.i32(0x7e00), b.i32(0x7c00));
    // Below 2^-14: add 0.5 so that the f16 subnormal's bits are the low bits
    // of the sum, rounded to nearest even by the addition itself.
    Value aligned = arith::AddFOp::create(
        rewriter, loc, b.bitcast(magnitude, rewriter.getF32Type()), b.f32(0.5f));
    Value tiny = arith::SubIOp::create(
        rewriter, loc, b.bitcast(aligned, rewriter.getI32Type()), b.i32(0x3f000000));
    // Normal: rebias the exponent (add (15 - 127) << 23, modulo 2^32) and
    // round the 13 dropped bits to even.
    constexpr uint32_t kRebias = 0u - (uint32_t(127 - 15) << 23);
    Value odd = b.andi(b.shrui(magnitude, 13), 1);
    Value normal =
        b.shrui(b.addi(b.addi(magnitude, kRebias + 0xfff), odd), 13);
    Value result = b.select(
        b.cmp(arith::CmpIPredicate::uge, magnitude, 0x47800000), huge,
        b.select(b.cmp(arith::CmpIPredicate::ult, magnitude, 0x38800000), tiny,
                 normal));
    result = b.ori(result, b.shrui(sign, 16));
    Value half = arith::TruncIOp::create(
        rewriter, loc, b.shaped(rewriter.getI16Type()), result);
    rewriter.replaceOp(op, b.bitcast(half, rewriter.getF16Type()));
    return success();
  }
};

struct NormHostExpandF16Conversions
    : mlir::norm::impl::NormHostExpandF16ConversionsBase<
          NormHostExpandF16Conversions> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandExtF16, ExpandTruncF16>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// f16 and bf16 values as i16
//===----------------------------------------------------------------------===//

namespace {

/// `type` with every f16 and bf16 in it replaced by i16; null when there
/// is none.
Type getIntegerType(Type type) {
  MLIRContext *context = type.getContext();
  if (type.isF16() || type.isBF16())
    return IntegerType::get(context, 16);
  if (auto vector = dyn_cast<VectorType>(type))
    if (Type element = getIntegerType(vector.getElementType()))
      return vector.clone(element);
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    if (Type element = getIntegerType(array.getElementType()))
      return LLVM::LLVMArrayType::get(element, array.getNumElements());
  if (auto function = dyn_cast<LLVM::LLVMFunctionType>(type)) {
    bool changed = false;
    auto convert = [&](Type t) {
      Type narrowed = getIntegerType(t);
      changed |= static_cast<bool>(narrowed);
      return narrowed ? narrowed : t;
    };
    Type result = convert(function.getReturnType());
    SmallVector<Type> params = llvm::map_to_vector(function.getParams(), convert);
    if (changed)
      return LLVM::LLVMFunctionType::get(result, params, function.isVarArg());
    return {};
  }
  if (auto structure = dyn_cast<LLVM::LLVMStructType>(type)) {
    if (structure.isIdentified())
      return {};
    bool changed = false;
    SmallVector<Type> body;
    for (Type element : structure.getBody()) {
      Type narrowed = getIntegerType(element);
      changed |= static_cast<bool>(narrowed);
      body.push_back(narrowed ? narrowed : element);
    }
    if (changed)
      return LLVM::LLVMStructType::getLiteral(context, body,
                                              structure.isPacked());
  }
  return {};
}

Type getIntegerTypeOrSelf(Type type) {
  Type narrowed = getIntegerType(type);
  return narrowed ? narrowed : type;
}

/// The bit patterns of a float constant of f16 or bf16 elements.
Attribute getBitPatterns(Attribute value, Type type) {
  if (auto real = dyn_cast<FloatAttr>(value))
    return IntegerAttr::get(type, real.getValue().bitcastToAPInt());
  if (auto reals = dyn_cast<DenseFPElementsAttr>(value))
    return reals.bitcast(IntegerType::get(value.getContext(), 16));
  return {};
}

/// Ops that only move values: they take whatever type their operands and
/// results have.
bool onlyMoves(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::SelectOp,
             LLVM::ExtractElementOp, LLVM::InsertElementOp,
             LLVM::ShuffleVectorOp, LLVM::ExtractValueOp,
             LLVM::InsertValueOp, LLVM::BitcastOp, LLVM::UndefOp,
             LLVM::PoisonOp, LLVM::ZeroOp, LLVM::FreezeOp, LLVM::BrOp,
             LLVM::CondBrOp, LLVM::SwitchOp, LLVM::ReturnOp, LLVM::MaskedLoadOp,
             LLVM::MaskedStoreOp>(op);
}

struct NormHostNarrowFloatsToIntegers
    : mlir::norm::impl::NormHostNarrowFloatsToIntegersBase<
          NormHostNarrowFloatsToIntegers> {
  void runOnOperation() override {
    WalkResult walk = getOperation()->walk([&](Operation *op) {
      return failed(retype(op)) ? WalkResult::interrupt()
                                : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    // bf16 <-> i16 casts are now i16 <-> i16.
    getOperation()->walk([](LLVM::BitcastOp cast) {
      if (cast.getArg().getType() != cast.getType())
        return;
      cast.replaceAllUsesWith(cast.getArg());
      cast.erase();
    });
  }

  LogicalResult retype(Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(getIntegerTypeOrSelf(arg.getType()));
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op)) {
      if (auto type = getIntegerType(func.getFunctionType()))
        func.setFunctionType(cast<LLVM::LLVMFunctionType>(type));
      return success();
    }
    if (auto gep = dyn_cast<LLVM::GEPOp>(op)) {
      gep.setElemType(getIntegerTypeOrSelf(gep.getElemType()));
      return success();
    }
    if (auto alloca = dyn_cast<LLVM::AllocaOp>(op)) {
      alloca.setElemType(getIntegerTypeOrSelf(alloca.getElemType()));
      return success();
    }
    Type narrowedResult;
    bool narrow = llvm::any_of(op->getOperandTypes(), [](Type type) {
      return static_cast<bool>(getIntegerType(type));
    });
    for (Value result : op->getResults())
      if (Type narrowed = getIntegerType(result.getType())) {
        narrow = true;
        narrowedResult = narrowed;
        result.setType(narrowed);
      }
    if (!narrow)
      return success();
    if (auto constant = dyn_cast<LLVM::ConstantOp>(op)) {
      Attribute bits = getBitPatterns(constant.getValue(), narrowedResult);
      if (!bits)
        return op->emitOpError("has an f16/bf16 value the host path cannot "
                               "hold as i16");
      constant.setValueAttr(bits);
      return success();
    }
    if (onlyMoves(op))
      return success();
    return op->emitOpError(
        "computes on f16 or bf16 in host code: the host lowering must expand "
        "it to f32 (arith-emulate-unsupported-floats) or integer code");
  }
};

} // namespace
