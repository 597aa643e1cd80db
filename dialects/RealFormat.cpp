//===- RealFormat.cpp - how the norm dialect spells reals -----------------===//

#include "dialects/RealFormat.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

std::string mlir::norm::formatReal(double value) {
  if (!std::isfinite(value)) {
    std::string text;
    llvm::raw_string_ostream(text)
        << llvm::format_hex(llvm::bit_cast<uint64_t>(value), 18,
                            /*Upper=*/true);
    return text;
  }
  // Without a precision, to_chars gives the fewest digits that parse back to
  // the same double, here in the style of %g (1e-06, 0.5, 123456).
  char buffer[32];
  std::to_chars_result result = std::to_chars(
      buffer, buffer + sizeof(buffer), value, std::chars_format::general);
  std::string text(buffer, result.ptr);
  // MLIR's float literals need a '.' before any exponent: 1e-06 -> 1.0e-06.
  if (text.find('.') == std::string::npos)
    text.insert(std::min(text.find('e'), text.size()), ".0");
  return text;
}
