//===- NormDialect.h - the norm dialect -------------------------*- C++ -*-===//

#ifndef NORM_DIALECTS_NORMDIALECT_H
#define NORM_DIALECTS_NORMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/NormDialect.h.inc"

namespace mlir::norm {
/// Elements of a row one thread may keep in registers. norm.fused_row stages
/// longer shares of its rows in shared memory or streams them; the other
/// kernel ops reject launch configurations that need more.
constexpr int64_t kMaxElementsPerThread = 64;
/// The longest row of a norm.fused_row (2^24 elements, far beyond any hidden
/// size of a model): index arithmetic and f32 sums stay well inside their
/// range.
constexpr int64_t kMaxFusedRowLength = int64_t(1) << 24;
/// The widest vector access of a row kernel, in bytes.
constexpr int64_t kMaxAccessBytes = 16;

/// Whether `threadsPerRow` threads with `vector`-wide accesses keep rows of
/// `rowLength` elements in registers (kMaxElementsPerThread each). Compared
/// by division: huge rows must not overflow the product.
inline bool fitsInRegisters(int64_t rowLength, int64_t threadsPerRow,
                            int64_t vector) {
  return (rowLength + threadsPerRow * vector - 1) / (threadsPerRow * vector) <=
         kMaxElementsPerThread / vector;
}
} // namespace mlir::norm

#include "dialects/NormEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NormAttrs.h.inc"

#endif // NORM_DIALECTS_NORMDIALECT_H
