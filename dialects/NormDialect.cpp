//===- NormDialect.cpp - the norm dialect ---------------------------------===//

#include "dialects/NormDialect.h"
#include "dialects/NormOps.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;

#include "dialects/NormDialect.cpp.inc"
#include "dialects/NormEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NormAttrs.cpp.inc"

void NormDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/NormOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NormAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// LaunchAttr
//===----------------------------------------------------------------------===//

LogicalResult LaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t vector, int64_t threadsPerRow,
                                 int64_t warps, int64_t rowsPerCta,
                                 int64_t blockN, int64_t stages,
                                 int64_t warpgroups, int64_t overlap) {
  ::norm::Status status =
      ::norm::verifyLaunch({vector, threadsPerRow, warps, rowsPerCta, blockN,
                            stages, warpgroups, overlap});
  if (!status)
    return emitError() << status.message();
  return success();
}

std::string LaunchAttr::getMangledSuffix() const {
  return getLaunchConfig(*this).getMangledSuffix();
}

//===----------------------------------------------------------------------===//
// SharedMatrixAttr
//===----------------------------------------------------------------------===//

LogicalResult
SharedMatrixAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t swizzle, int64_t lbo, int64_t sbo, bool) {
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "swizzle must be 0, 32, 64 or 128 (bytes), got "
                       << swizzle;
  // The descriptor holds both offsets >> 4 in 14 bits.
  for (auto [name, bytes] : {std::pair{"lbo", lbo}, std::pair{"sbo", sbo}})
    if (bytes < 0 || bytes >= (int64_t(1) << 18) || bytes % 16 != 0)
      return emitError() << name
                         << " must be a multiple of 16 below 2^18 (bytes), got "
                         << bytes;
  return success();
}

int64_t SharedMatrixAttr::getOffset(int64_t mn, int64_t k) const {
  int64_t swizzle = getSwizzle(), lbo = getLbo(), sbo = getSbo();
  if (!getMnMajor())
    return swizzle == 0
               ? (mn % 8) * 16 + (mn / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo
               : (mn % 8) * swizzle + (mn / 8) * sbo + 2 * k;
  if (swizzle == 0)
    return (mn % 8) * 2 + (mn / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo;
  int64_t line = swizzle / 2;
  return (mn % line) * 2 + (mn / line) * lbo + (k % 8) * swizzle +
         (k / 8) * sbo;
}

uint64_t SharedMatrixAttr::getDescriptorBits() const {
  // Bits 16-29: LBO >> 4; 32-45: SBO >> 4; 62-63: the swizzle mode (1:
  // 128 bytes, 2: 64, 3: 32). The start address (bits 0-13) and the base
  // offset (49-51, 0 for atoms aligned to their size) are not the layout's.
  uint64_t mode = 0;
  switch (getSwizzle()) {
  case 128:
    mode = 1;
    break;
  case 64:
    mode = 2;
    break;
  case 32:
    mode = 3;
    break;
  }
  return (uint64_t(getLbo()) >> 4) << 16 | (uint64_t(getSbo()) >> 4) << 32 |
         mode << 62;
}

//===----------------------------------------------------------------------===//
// TargetAttr
//===----------------------------------------------------------------------===//

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef chip, int64_t ptxVersion,
                                 int64_t maxSharedBytes, bool pdl) {
  ::norm::TargetOptions target;
  target.chip = chip.str();
  target.ptxVersion = static_cast<int>(ptxVersion);
  target.maxSharedBytes = maxSharedBytes;
  target.pdl = pdl;
  if (ptxVersion != target.ptxVersion)
    return emitError() << "ptx_version " << ptxVersion << " is out of range";
  if (::norm::Status status = target.verify(); !status)
    return emitError() << status.message();
  return success();
}

::norm::TargetOptions TargetAttr::getOptions() const {
  ::norm::TargetOptions target;
  target.chip = getChip().str();
  target.ptxVersion = static_cast<int>(getPtxVersion());
  target.maxSharedBytes = getMaxSharedBytes();
  target.pdl = getPdl();
  return target;
}

TargetAttr TargetAttr::get(MLIRContext *context,
                           const ::norm::TargetOptions &options) {
  return get(context, options.chip, options.ptxVersion, options.maxSharedBytes,
             options.pdl);
}

//===----------------------------------------------------------------------===//
// Attributes of other ops
//===----------------------------------------------------------------------===//

LogicalResult NormDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == kTargetAttrName) {
    if (!isa<TargetAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' must be a #norm.target, got "
                             << attribute.getValue();
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << name << "' belongs on a module";
    return success();
  }
  // Set by norm-kernels-to-host on the host functions it creates.
  if (name == "norm.host_kernel")
    return success();
  // The bytes of each kernel parameter passed by value
  // (norm-grid-constant-params).
  if (name == "norm.grid_constant") {
    auto bytes = dyn_cast<DenseI64ArrayAttr>(attribute.getValue());
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!bytes || !func ||
        static_cast<int64_t>(func.getNumArguments()) != bytes.size())
      return op->emitError() << "'" << name
                             << "' must be an array of i64 with one entry per "
                                "argument of a function";
    return success();
  }
  return op->emitError() << "unknown norm dialect attribute '" << name << "'";
}

LogicalResult mlir::norm::verifyNoUnknownAttributes(Operation *op) {
  ArrayRef<StringAttr> known = op->getName().getAttributeNames();
  for (NamedAttribute attribute : op->getDiscardableAttrs()) {
    StringRef name = attribute.getName().getValue();
    if (name.contains('.'))
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "has no attribute '" << name << "'";
    // The closest attribute the op defines, for a misspelling.
    StringRef closest;
    unsigned distance = 3;
    for (StringAttr candidate : known) {
      unsigned d = name.edit_distance(candidate.getValue(),
                                      /*AllowReplacements=*/true, distance);
      if (d < distance) {
        distance = d;
        closest = candidate.getValue();
      }
    }
    if (!closest.empty())
      diag << "; did you mean '" << closest << "'?";
    else
      diag << " (attributes of other dialects need their prefix, e.g. "
              "'mydialect.note')";
    return diag;
  }
  return success();
}
