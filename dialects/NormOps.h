//===- NormOps.h - norm dialect operations ----------------------*- C++ -*-===//

#ifndef NORM_DIALECTS_NORMOPS_H
#define NORM_DIALECTS_NORMOPS_H

#include "dialects/NormDialect.h"

#define GET_OP_CLASSES
#include "dialects/NormOps.h.inc"

namespace mlir::norm {
/// Whether every value of `narrow` is exactly representable in `wide`: a
/// cast between them can be folded into the reader.
bool widensExactly(Type narrow, Type wide);
} // namespace mlir::norm

#endif // NORM_DIALECTS_NORMOPS_H
