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

#include "compiler/model/KernelModel.h"

#include "dialects/NormDialect.h.inc"

namespace mlir::norm {

/// Refuses attributes an op does not define unless they carry a dialect
/// prefix (`norm.` for the dialect's own discardable attributes): a misspelt
/// attribute must be an error, not a silently different kernel.
LogicalResult verifyNoUnknownAttributes(Operation *op);

template <typename ConcreteType>
class RejectUnknownAttributes
    : public OpTrait::TraitBase<ConcreteType, RejectUnknownAttributes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyNoUnknownAttributes(op);
  }
};

} // namespace mlir::norm

#include "dialects/NormEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NormAttrs.h.inc"

#endif // NORM_DIALECTS_NORMDIALECT_H
