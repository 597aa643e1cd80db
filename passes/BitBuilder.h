//===- BitBuilder.h - integer code on float bit patterns --------*- C++ -*-===//
//
// The conversions that must not depend on a CPU's (or a chip's) float
// instructions are written as i32 arithmetic on bit patterns: f16 on the
// host (HostNarrowFloats.cpp), FP8 on the host and on chips without cvt to
// FP8 (ExpandFp8Conversions.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_BITBUILDER_H
#define NORM_PASSES_BITBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::norm {

/// Integer arithmetic on scalars or vectors of one shape.
class BitBuilder {
public:
  BitBuilder(PatternRewriter &rewriter, Location loc, Type like)
      : b(rewriter), loc(loc), like(like) {}

  /// `like` with element type `element`.
  Type shaped(Type element) const {
    if (auto vector = dyn_cast<VectorType>(like))
      return vector.clone(element);
    return element;
  }
  Value i32(uint32_t value) {
    return createScalarOrSplatConstant(b, loc, shaped(b.getI32Type()),
                                       APInt(32, value));
  }
  Value f32(float value) {
    return createScalarOrSplatConstant(b, loc, shaped(b.getF32Type()),
                                       APFloat(value));
  }
  Value bitcast(Value v, Type element) {
    return arith::BitcastOp::create(b, loc, shaped(element), v);
  }
  Value andi(Value x, uint32_t mask) {
    return arith::AndIOp::create(b, loc, x, i32(mask));
  }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value addi(Value x, uint32_t y) {
    return arith::AddIOp::create(b, loc, x, i32(y));
  }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value shli(Value x, uint32_t bits) {
    return arith::ShLIOp::create(b, loc, x, i32(bits));
  }
  Value shrui(Value x, uint32_t bits) {
    return arith::ShRUIOp::create(b, loc, x, i32(bits));
  }
  Value cmp(arith::CmpIPredicate predicate, Value x, uint32_t y) {
    return arith::CmpIOp::create(b, loc, predicate, x, i32(y));
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }

  PatternRewriter &b;
  Location loc;
  Type like;
};

} // namespace mlir::norm

#endif // NORM_PASSES_BITBUILDER_H
