//===- RealFormat.cpp - how norm-opt spells reals -------------------------===//

#include "compiler/model/RealFormat.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

std::string norm::formatReal(double value) {
  if (!std::isfinite(value)) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    char buffer[24];
    std::snprintf(buffer, sizeof(buffer), "0x%016llX",
                  static_cast<unsigned long long>(bits));
    return buffer;
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

std::string norm::describeReal(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "+inf" : "-inf";
  return formatReal(value);
}
