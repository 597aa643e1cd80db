//===- NVVMLowering.h - what the NVVM lowerings of norm ops share -*- C++
//-*-===//
//
// The vocabulary of the NVVM lowerings of the norm dialect's GPU ops, by
// family: warp matrix ops and cp.async (WarpMatrixToNVVM.cpp), warpgroup
// matrix ops (WarpgroupMatrixToNVVM.cpp), barriers and bulk copies of
// sm_90 (AsyncBarrierToNVVM.cpp); fragments as 32-bit registers and back,
// inline PTX.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_NVVMLOWERING_H
#define NORM_PASSES_NVVMLOWERING_H

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

namespace mlir::norm {

/// `count` 32-bit registers of `vector` (bitcast, element 2i in the low half
/// of register i, as PTX packs .f16x2 and .bf16x2), each as `registerType`.
SmallVector<Value> getRegisters(OpBuilder &b, Location loc, Value vector,
                                int64_t count, Type registerType);

/// The vector of `type` whose elements are `members` members of
/// `aggregate` from `first` on (a struct, or a single value), bitcast from
/// `memberType`.
Value getVector(OpBuilder &b, Location loc, Value aggregate, int64_t members,
                Type memberType, VectorType type, int64_t first = 0);

/// `pointer` in the global address space (kernels take generic pointers),
/// as cp.async and bulk copies read their sources.
Value castToGlobal(OpBuilder &b, Location loc, Value pointer);

/// An inline asm with side effects running `ptx` on `operands`; its result
/// is none, one value or a struct of `types`.
Value createAsm(OpBuilder &b, Location loc, TypeRange types,
                ValueRange operands, StringRef ptx, StringRef constraints);

/// An op without operands that is one PTX instruction; a memory clobber
/// keeps shared stores and loads on their side of it.
template <typename Op> struct InstructionLowering : ConvertOpToLLVMPattern<Op> {
  InstructionLowering(const LLVMTypeConverter &converter, StringRef ptx)
      : InstructionLowering(converter,
                            [text = ptx.str()](Op) { return text; }) {}
  /// The instruction's text from the op's attributes.
  InstructionLowering(const LLVMTypeConverter &converter,
                      std::function<std::string(Op)> getPtx)
      : ConvertOpToLLVMPattern<Op>(converter), getPtx(std::move(getPtx)) {}

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    createAsm(rewriter, op.getLoc(), TypeRange(), ValueRange(), getPtx(op),
              "~{memory}");
    rewriter.eraseOp(op);
    return success();
  }

  std::function<std::string(Op)> getPtx;
};

/// The NVVM lowering of the warpgroup ops (`norm.wgmma`,
/// `norm.wgmma_fence`, `norm.wgmma_commit`, `norm.wgmma_wait`).
void populateWarpgroupToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns);

/// The NVVM lowering of the barrier and bulk copy ops (`norm.mbarrier_*`,
/// `norm.bulk_copy`).
void populateAsyncBarrierToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns);

} // namespace mlir::norm

#endif // NORM_PASSES_NVVMLOWERING_H
