//===- WarpMatrixToNVVM.cpp - warp matrix and cp.async ops to NVVM --------===//
//
// The norm dialect's ConvertToLLVM interface, which convert-gpu-to-nvvm
// applies with its own type converter (workgroup memory in address space 3,
// the 64-bit index of the kernels): `norm.mma_sync` becomes nvvm.mma.sync,
// `norm.ldmatrix` nvvm.ldmatrix, the async copies nvvm.cp.async.*. Addresses
// come from the memref descriptors, as in MLIR's NVGPU lowering. The
// interface is registered with the PTX pipeline's extensions only: it
// lowers to NVVM, which no other target understands.
//
//===----------------------------------------------------------------------===//

#include "passes/LoweringPasses.h"
#include "passes/NVVMLowering.h"

#include "dialects/NormOps.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::norm;

SmallVector<Value> mlir::norm::getRegisters(OpBuilder &b, Location loc,
                                            Value vector, int64_t count,
                                            Type registerType) {
  Type i32 = b.getI32Type();
  Value packed =
      LLVM::BitcastOp::create(b, loc, VectorType::get({count}, i32), vector);
  SmallVector<Value> registers;
  for (int64_t i = 0; i < count; ++i) {
    Value at = LLVM::ConstantOp::create(b, loc, i32, i);
    Value reg = LLVM::ExtractElementOp::create(b, loc, packed, at);
    if (registerType != i32)
      reg = LLVM::BitcastOp::create(b, loc, registerType, reg);
    registers.push_back(reg);
  }
  return registers;
}

Value mlir::norm::getVector(OpBuilder &b, Location loc, Value aggregate,
                            int64_t members, Type memberType, VectorType type,
                            int64_t first) {
  auto vectorType = VectorType::get({members}, memberType);
  Value vector = LLVM::PoisonOp::create(b, loc, vectorType);
  bool isStruct = isa<LLVM::LLVMStructType>(aggregate.getType());
  for (int64_t i = 0; i < members; ++i) {
    Value member =
        isStruct ? LLVM::ExtractValueOp::create(b, loc, aggregate, first + i)
                       .getResult()
                 : aggregate;
    Value at = LLVM::ConstantOp::create(b, loc, b.getI32Type(), i);
    vector = LLVM::InsertElementOp::create(b, loc, vector, member, at);
  }
  if (vectorType == type)
    return vector;
  return LLVM::BitcastOp::create(b, loc, type, vector);
}

Value mlir::norm::castToGlobal(OpBuilder &b, Location loc, Value pointer) {
  auto global = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Global));
  if (pointer.getType() == global)
    return pointer;
  return LLVM::AddrSpaceCastOp::create(b, loc, global, pointer);
}

Value mlir::norm::createAsm(OpBuilder &b, Location loc, TypeRange types,
                            ValueRange operands, StringRef ptx,
                            StringRef constraints) {
  Type result;
  if (types.size() == 1)
    result = types.front();
  else if (!types.empty())
    result = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                              SmallVector<Type>(types));
  auto op = LLVM::InlineAsmOp::create(
      b, loc, result ? TypeRange(result) : TypeRange(), operands, ptx,
      constraints, /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      /*asm_dialect=*/LLVM::AsmDialectAttr(), /*operand_attrs=*/ArrayAttr());
  return result ? op.getResult(0) : Value();
}

namespace {

/// mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32: A as four and B as two
/// registers of two elements, C and D as four f32.
struct MmaSyncLowering : ConvertOpToLLVMPattern<MmaSyncOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(MmaSyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = cast<VectorType>(op.getA().getType()).getElementType();
    bool isBf16 = isa<BFloat16Type>(element);
    // NVVM takes bf16 pairs as i32 (their PTX type is explicit below) and
    // f16 pairs as vector<2xf16>.
    Type registerType = isBf16 ? Type(rewriter.getI32Type())
                               : Type(VectorType::get({2}, element));
    SmallVector<Value> a =
        getRegisters(rewriter, loc, adaptor.getA(), 4, registerType);
    SmallVector<Value> b =
        getRegisters(rewriter, loc, adaptor.getB(), 2, registerType);
    SmallVector<Value> c;
    for (int64_t i = 0; i < 4; ++i)
      c.push_back(LLVM::ExtractElementOp::create(
          rewriter, loc, adaptor.getC(),
          LLVM::ConstantOp::create(rewriter, loc, rewriter.getI32Type(), i)));

    Type f32 = rewriter.getF32Type();
    auto resultType =
        LLVM::LLVMStructType::getLiteral(getContext(), {f32, f32, f32, f32});
    NVVM::MMATypes ptxType =
        isBf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Value d = NVVM::MmaOp::create(
        rewriter, loc, resultType, a, b, c, /*shape=*/{16, 8, 16},
        /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    rewriter.replaceOp(op, getVector(rewriter, loc, d, 4, f32,
                                     cast<VectorType>(op.getD().getType())));
    return success();
  }
};

/// ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16: one i32 register
/// (two elements) per matrix.
struct LdMatrixLowering : ConvertOpToLLVMPattern<LdMatrixOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(LdMatrixOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value row =
        getStridedElementPtr(rewriter, loc, op.getMemref().getType(),
                             adaptor.getMemref(), adaptor.getIndices());
    int64_t count = op.getCount();
    Type i32 = rewriter.getI32Type();
    Type resultType =
        count == 1 ? i32
                   : LLVM::LLVMStructType::getLiteral(
                         getContext(), SmallVector<Type>(count, i32));
    // NVVM names the transposed load by the layout it reads: column-major.
    Value loaded = NVVM::LdMatrixOp::create(
        rewriter, loc, resultType, row, static_cast<uint32_t>(count),
        op.getTranspose() ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
    // FP8 bytes are i8 to LLVM.
    auto type = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    if (!type)
      return rewriter.notifyMatchFailure(op, "result type has no LLVM type");
    rewriter.replaceOp(op, getVector(rewriter, loc, loaded, count, i32, type));
    return success();
  }
};

/// An i64 from PTX in an inline asm without side effects: LLVM keeps the
/// value but cannot see through it.
static Value createOpaqueAsm(OpBuilder &b, Location loc, StringRef ptx,
                             StringRef constraints, ValueRange operands) {
  return LLVM::InlineAsmOp::create(
             b, loc, b.getI64Type(), operands, ptx, constraints,
             /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             /*asm_dialect=*/LLVM::AsmDialectAttr(),
             /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

/// 16-byte copies may bypass L1 (.cg); smaller ones must not (.ca).
static NVVM::LoadCacheModifierKind getCopyCache(int64_t bytes) {
  return bytes == 16 ? NVVM::LoadCacheModifierKind::CG
                     : NVVM::LoadCacheModifierKind::CA;
}

/// cp.async.{ca,cg}.shared.global [dst], [src], bytes{, src_bytes}.
struct AsyncCopyLowering : ConvertOpToLLVMPattern<AsyncCopyOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncCopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MemRefType srcType = op.getSrc().getType();
    Value dst = getStridedElementPtr(rewriter, loc, op.getDst().getType(),
                                     adaptor.getDst(), adaptor.getDstIndices());
    Value src = castToGlobal(rewriter, loc,
                             getStridedElementPtr(rewriter, loc, srcType,
                                                  adaptor.getSrc(),
                                                  adaptor.getSrcIndices()));

    int64_t elementBytes = srcType.getElementTypeBitWidth() / 8;
    int64_t bytes = op.getElements() * elementBytes;
    Value srcBytes;
    if (Value valid = adaptor.getSrcElements()) {
      Value scale = LLVM::ConstantOp::create(rewriter, loc, valid.getType(),
                                             elementBytes);
      srcBytes = LLVM::TruncOp::create(
          rewriter, loc, rewriter.getI32Type(),
          LLVM::MulOp::create(rewriter, loc, valid, scale));
    }
    NVVM::CpAsyncOp::create(rewriter, loc, dst, src,
                            static_cast<uint32_t>(bytes), getCopyCache(bytes),
                            srcBytes);
    rewriter.eraseOp(op);
    return success();
  }
};

/// One cp.async a row: the first source address from the index, each next
/// one the previous plus the stride's bytes in an opaque add.s64 (global
/// pointers throughout, so no cvta a row); destinations a constant apart.
struct AsyncCopyRowsLowering : ConvertOpToLLVMPattern<AsyncCopyRowsOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncCopyRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MemRefType srcType = op.getSrc().getType();
    Type i64 = rewriter.getI64Type();
    if (adaptor.getSrcStride().getType() != i64)
      return rewriter.notifyMatchFailure(op, "index of 64 bits only");
    Value dst = getStridedElementPtr(rewriter, loc, op.getDst().getType(),
                                     adaptor.getDst(),
                                     ValueRange{adaptor.getDstIndex()});
    Value src = castToGlobal(
        rewriter, loc,
        getStridedElementPtr(rewriter, loc, srcType, adaptor.getSrc(),
                             ValueRange{adaptor.getSrcIndex()}));
    int64_t elementBytes = srcType.getElementTypeBitWidth() / 8;
    int64_t bytes = op.getElements() * elementBytes;
    Value strideBytes = LLVM::MulOp::create(
        rewriter, loc, adaptor.getSrcStride(),
        LLVM::ConstantOp::create(rewriter, loc, i64, elementBytes));
    Type dstElement =
        typeConverter->convertType(op.getDst().getType().getElementType());
    for (int64_t i = 0, e = op.getRows(); i < e; ++i) {
      if (i > 0) {
        Value address = LLVM::PtrToIntOp::create(rewriter, loc, i64, src);
        src = LLVM::IntToPtrOp::create(
            rewriter, loc, src.getType(),
            createOpaqueAsm(rewriter, loc, "add.s64 $0, $1, $2;", "=l,l,l",
                            {address, strideBytes}));
      }
      Value row = LLVM::GEPOp::create(
          rewriter, loc, dst.getType(), dstElement, dst,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i * op.getDstStride())});
      NVVM::CpAsyncOp::create(rewriter, loc, row, src,
                              static_cast<uint32_t>(bytes), getCopyCache(bytes),
                              Value());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct AsyncCommitLowering : ConvertOpToLLVMPattern<AsyncCommitOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncCommitOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
    return success();
  }
};

struct AsyncWaitLowering : ConvertOpToLLVMPattern<AsyncWaitOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncWaitOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncWaitGroupOp>(
        op, static_cast<uint32_t>(op.getPending()));
    return success();
  }
};

/// mov.b64 in an inline asm without side effects: LLVM keeps the value but
/// cannot see through it.
struct OpaqueIndexLowering : ConvertOpToLLVMPattern<OpaqueIndexOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(OpaqueIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value value = adaptor.getValue();
    if (value.getType() != rewriter.getI64Type())
      return rewriter.notifyMatchFailure(op, "index of 64 bits only");
    rewriter.replaceOp(op, createOpaqueAsm(rewriter, op.getLoc(),
                                           "mov.b64 $0, $1;", "=l,l", {value}));
    return success();
  }
};

struct NormToNVVMInterface : ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;

  void loadDependentDialects(MLIRContext *context) const final {
    context->loadDialect<NVVM::NVVMDialect>();
  }

  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &, LLVMTypeConverter &converter,
      RewritePatternSet &patterns) const final {
    populateNormToNVVMConversionPatterns(converter, patterns);
  }
};

} // namespace

void mlir::norm::populateNormToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MmaSyncLowering, LdMatrixLowering, AsyncCopyLowering,
               AsyncCopyRowsLowering, OpaqueIndexLowering, AsyncCommitLowering,
               AsyncWaitLowering>(converter);
  populateWarpgroupToNVVMConversionPatterns(converter, patterns);
  populateAsyncBarrierToNVVMConversionPatterns(converter, patterns);
  // griddepcontrol with a memory clobber: the NVVM intrinsics are declared
  // not to touch memory, which would let loads of the predecessor's outputs
  // move above the wait.
  patterns.add<InstructionLowering<GridDependencyWaitOp>>(
      converter, "griddepcontrol.wait;");
  patterns.add<InstructionLowering<LaunchDependentsOp>>(
      converter, "griddepcontrol.launch_dependents;");
}

void mlir::norm::registerConvertNormToNVVMInterface(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, NormDialect *dialect) {
    dialect->addInterfaces<NormToNVVMInterface>();
  });
}
