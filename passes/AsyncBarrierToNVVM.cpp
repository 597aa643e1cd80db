//===- AsyncBarrierToNVVM.cpp - mbarriers and bulk copies to PTX ----------===//
//
// The NVVM lowering of sm_90's shared-memory barriers and bulk copies:
// inline PTX with memory clobbers (the copies and waits order memory that
// LLVM does not see them touch), addresses as 64-bit operands: the
// barriers' and destinations' in the shared window, the sources' global.
// `norm.mbarrier_wait` is a bounded try_wait loop that traps, so that a
// protocol mistake (a transaction count that never completes, a missing
// arrival) fails a launch instead of hanging the GPU.
//
//===----------------------------------------------------------------------===//

#include "passes/NVVMLowering.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

/// A pattern that takes addresses of memref elements as i64: in the shared
/// window for workgroup memory, global for the default address space.
template <typename Op> struct AddressPattern : ConvertOpToLLVMPattern<Op> {
  using ConvertOpToLLVMPattern<Op>::ConvertOpToLLVMPattern;

  Value getAddress(ConversionPatternRewriter &rewriter, Location loc,
                   Value memref, Value descriptor, Value index) const {
    auto type = cast<MemRefType>(memref.getType());
    Value pointer = this->getStridedElementPtr(rewriter, loc, type, descriptor,
                                               ValueRange{index});
    if (!type.getMemorySpace())
      pointer = castToGlobal(rewriter, loc, pointer);
    return LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                    pointer);
  }
};

Value truncate(OpBuilder &b, Location loc, Value index) {
  return LLVM::TruncOp::create(b, loc, b.getI32Type(), index);
}

void emitAsm(OpBuilder &b, Location loc, ValueRange operands, StringRef ptx,
             StringRef constraints) {
  createAsm(b, loc, TypeRange(), operands, ptx,
            (constraints + ",~{memory}").str());
}

struct MbarrierInitLowering : AddressPattern<MbarrierInitOp> {
  using AddressPattern::AddressPattern;

  LogicalResult
  matchAndRewrite(MbarrierInitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bar = getAddress(rewriter, loc, op.getBars(), adaptor.getBars(),
                           adaptor.getIndex());
    emitAsm(rewriter, loc, bar,
            "mbarrier.init.shared::cta.b64 [$0], " +
                std::to_string(op.getCount()) +
                ";\nfence.mbarrier_init.release.cluster;",
            "l");
    rewriter.eraseOp(op);
    return success();
  }
};

struct MbarrierArriveLowering : AddressPattern<MbarrierArriveOp> {
  using AddressPattern::AddressPattern;

  LogicalResult
  matchAndRewrite(MbarrierArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bar = getAddress(rewriter, loc, op.getBars(), adaptor.getBars(),
                           adaptor.getIndex());
    if (Value bytes = adaptor.getTxBytes())
      emitAsm(rewriter, loc, {bar, truncate(rewriter, loc, bytes)},
              "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r");
    else
      emitAsm(rewriter, loc, bar, "mbarrier.arrive.shared::cta.b64 _, [$0];",
              "l");
    rewriter.eraseOp(op);
    return success();
  }
};

/// A loop in LLVM IR around one try_wait (labels inside inline PTX are not
/// understood everywhere: GPGPU-Sim rejects them):
///   loop(tries): done = try_wait.parity; done ? after : retry
///   retry: tries + 1 < max_tries ? loop(tries + 1) : trap
struct MbarrierWaitLowering : AddressPattern<MbarrierWaitOp> {
  using AddressPattern::AddressPattern;

  LogicalResult
  matchAndRewrite(MbarrierWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    Value bar = getAddress(rewriter, loc, op.getBars(), adaptor.getBars(),
                           adaptor.getIndex());
    Value parity = truncate(rewriter, loc, adaptor.getParity());
    Block *before = rewriter.getInsertionBlock();
    Block *after = rewriter.splitBlock(before, rewriter.getInsertionPoint());
    Block *loop = rewriter.createBlock(after, {i32}, {loc});
    Block *retry = rewriter.createBlock(after);
    Block *fail = rewriter.createBlock(after);

    rewriter.setInsertionPointToEnd(before);
    LLVM::BrOp::create(
        rewriter, loc,
        ValueRange{LLVM::ConstantOp::create(rewriter, loc, i32, 0).getResult()},
        loop);

    rewriter.setInsertionPointToEnd(loop);
    Value done =
        createAsm(rewriter, loc, i32, {bar, parity},
                  "{\n.reg .pred p;\n"
                  "mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                  "selp.u32 $0, 1, 0, p;\n}",
                  "=r,l,r,~{memory}");
    Value zero = LLVM::ConstantOp::create(rewriter, loc, i32, 0);
    Value finished = LLVM::ICmpOp::create(rewriter, loc,
                                          LLVM::ICmpPredicate::ne, done, zero);
    LLVM::CondBrOp::create(rewriter, loc, finished, after, retry);

    rewriter.setInsertionPointToEnd(retry);
    Value next =
        LLVM::AddOp::create(rewriter, loc, loop->getArgument(0),
                            LLVM::ConstantOp::create(rewriter, loc, i32, 1));
    Value more = LLVM::ICmpOp::create(
        rewriter, loc, LLVM::ICmpPredicate::ult, next,
        LLVM::ConstantOp::create(rewriter, loc, i32, op.getMaxTries()));
    LLVM::CondBrOp::create(rewriter, loc, more, loop, ValueRange{next}, fail,
                           ValueRange());

    rewriter.setInsertionPointToEnd(fail);
    createAsm(rewriter, loc, TypeRange(), ValueRange(), "trap;", "");
    LLVM::UnreachableOp::create(rewriter, loc);

    rewriter.eraseOp(op);
    return success();
  }
};

struct BulkCopyLowering : AddressPattern<BulkCopyOp> {
  using AddressPattern::AddressPattern;

  LogicalResult
  matchAndRewrite(BulkCopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value dst = getAddress(rewriter, loc, op.getDst(), adaptor.getDst(),
                           adaptor.getDstIndex());
    Value src = getAddress(rewriter, loc, op.getSrc(), adaptor.getSrc(),
                           adaptor.getSrcIndex());
    Value bar = getAddress(rewriter, loc, op.getBars(), adaptor.getBars(),
                           adaptor.getBarIndex());
    emitAsm(rewriter, loc, {dst, src, bar},
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
            "[$0], [$1], " +
                std::to_string(op.getBytes()) + ", [$2];",
            "l,l,l");
    rewriter.eraseOp(op);
    return success();
  }
};

/// The box through the tensor map: coordinates innermost first (column,
/// row), the map by its generic address (a global buffer or a
/// grid-constant parameter alike).
struct TmaLoadLowering : AddressPattern<TmaLoadOp> {
  using AddressPattern::AddressPattern;

  LogicalResult
  matchAndRewrite(TmaLoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value dst = getAddress(rewriter, loc, op.getDst(), adaptor.getDst(),
                           adaptor.getDstIndex());
    Value bar = getAddress(rewriter, loc, op.getBars(), adaptor.getBars(),
                           adaptor.getBarIndex());
    Value zero =
        LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(), 0);
    Value map = LLVM::PtrToIntOp::create(
        rewriter, loc, rewriter.getI64Type(),
        getStridedElementPtr(rewriter, loc, op.getMap().getType(),
                             adaptor.getMap(), ValueRange{zero}));
    emitAsm(rewriter, loc,
            {dst, map, truncate(rewriter, loc, adaptor.getColumn()),
             truncate(rewriter, loc, adaptor.getRow()), bar},
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
            "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
            "l,l,r,r,l");
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::norm::populateAsyncBarrierToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MbarrierInitLowering, MbarrierArriveLowering,
               MbarrierWaitLowering, BulkCopyLowering, TmaLoadLowering>(
      converter);
}
