//===- NormDialect.cpp - the norm dialect ---------------------------------===//

#include "dialects/NormDialect.h"
#include "dialects/NormOps.h"

#include "mlir/IR/DialectImplementation.h"
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
                                 int64_t warps, int64_t rowsPerCta) {
  if (vector != 1 && vector != 2 && vector != 4 && vector != 8)
    return emitError() << "vector width must be 1, 2, 4 or 8, got " << vector;
  if (threadsPerRow < 1 || threadsPerRow > 1024 ||
      (threadsPerRow < 32 && !llvm::isPowerOf2_64(threadsPerRow)) ||
      (threadsPerRow >= 32 && threadsPerRow % 32 != 0))
    return emitError() << "threads_per_row must be 1, 2, 4, 8, 16 or a "
                          "multiple of 32 up to 1024, got "
                       << threadsPerRow;
  if (warps < 1 || warps > 32)
    return emitError() << "warps must be in [1, 32], got " << warps;
  if ((warps * 32) % threadsPerRow != 0)
    return emitError() << "threads_per_row (" << threadsPerRow
                       << ") must divide the " << warps * 32
                       << " threads of a CTA of " << warps << " warps";
  int64_t concurrentRows = warps * 32 / threadsPerRow;
  if (rowsPerCta < 1 || rowsPerCta % concurrentRows != 0)
    return emitError() << "rows_per_cta (" << rowsPerCta
                       << ") must be a positive multiple of the "
                       << concurrentRows << " rows a CTA works on at once";
  return success();
}

std::string LaunchAttr::getMangledSuffix() const {
  return llvm::formatv("v{0}_t{1}_w{2}_r{3}", getVector(), getThreadsPerRow(),
                       getWarps(), getRowsPerCta())
      .str();
}
