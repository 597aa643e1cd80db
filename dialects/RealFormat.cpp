//===- RealFormat.cpp - how the norm dialect spells reals -----------------===//

#include "dialects/RealFormat.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

std::string mlir::norm::formatReal(double value) {
  if (!std::isfinite(value)) {
    std::string text;
    llvm::raw_string_ostream(text)
        << llvm::format_hex(llvm::bit_cast<uint64_t>(value), 18,
                            /*Upper=*/true);
    return text;
  }
  // %.17g always round-trips; stop at the first precision that does.
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text(buffer);
  // MLIR's float literals need a '.' before any exponent: 1e-06 -> 1.0e-06.
  if (text.find('.') == std::string::npos)
    text.insert(std::min(text.find('e'), text.size()), ".0");
  return text;
}
