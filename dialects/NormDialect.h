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
/// Row kernels keep each thread's share of a row in registers; a launch
/// configuration that needs more elements per thread is rejected.
constexpr int64_t kMaxElementsPerThread = 64;
/// The widest vector access of a row kernel, in bytes.
constexpr int64_t kMaxAccessBytes = 16;
} // namespace mlir::norm

#include "dialects/NormEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NormAttrs.h.inc"

#endif // NORM_DIALECTS_NORMDIALECT_H
