//===- MatrixToNVVM.h - what the matrix op lowerings share ------*- C++ -*-===//
//
// The vocabulary of the NVVM lowerings of the warp (mma.sync, ldmatrix) and
// warpgroup (wgmma) matrix ops: fragments as 32-bit registers and back.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_MATRIXTONVVM_H
#define NORM_PASSES_MATRIXTONVVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::norm {

/// `count` 32-bit registers of `vector` (bitcast, element 2i in the low half
/// of register i, as PTX packs .f16x2 and .bf16x2), each as `registerType`.
SmallVector<Value> getRegisters(OpBuilder &b, Location loc, Value vector,
                                int64_t count, Type registerType);

/// The vector of `type` whose elements are the members of `aggregate` (a
/// struct, or a single value for one member), bitcast from `memberType`.
Value getVector(OpBuilder &b, Location loc, Value aggregate, int64_t members,
                Type memberType, VectorType type);

/// The NVVM lowering of the warpgroup ops (`norm.wgmma`,
/// `norm.wgmma_fence`, `norm.wgmma_commit`, `norm.wgmma_wait`).
void populateWarpgroupToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns);

} // namespace mlir::norm

#endif // NORM_PASSES_MATRIXTONVVM_H
