//===- FloatFormats.cpp - exact f32/f16/bf16 storage for the checks -------===//

#include "compiler/model/FloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace norm;
using namespace norm::check;

namespace {
/// A binary floating-point format: precision (with the implicit bit), the
/// smallest normal exponent and the largest exponent.
struct Format {
  int precision;
  int minExponent;
  int maxExponent;
};
} // namespace

static Format getFormat(ElementType type) {
  switch (type) {
  case ElementType::f32:
    return {24, -126, 127};
  case ElementType::f16:
    return {11, -14, 15};
  case ElementType::bf16:
    return {8, -126, 127};
  case ElementType::f8E4M3FN:
    return {4, -6, 8};
  case ElementType::f8E5M2:
    return {3, -14, 15};
  case ElementType::i32:
    break;
  }
  return {24, -126, 127};
}

/// 2^exponent, for exponents of normal doubles.
static double getPowerOfTwo(int exponent) {
  uint64_t bits = static_cast<uint64_t>(exponent + 1023) << 52;
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// The binary exponent of a finite nonzero double (floor(log2(|value|))).
static int getExponent(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  return biased ? biased - 1023 : std::ilogb(value);
}

double check::ulp(ElementType type, double magnitude) {
  Format format = getFormat(type);
  int exponent = format.minExponent;
  if (std::isfinite(magnitude) && magnitude != 0.0)
    exponent = std::max(exponent, getExponent(magnitude));
  return getPowerOfTwo(exponent - (format.precision - 1));
}

double check::roundTo(ElementType type, double value) {
  // FP8 saturates, as quantization does (cvt.rn.satfinite): clamping first
  // is the same, the largest finite value being representable.
  if (isFp8ElementType(type) && !std::isnan(value)) {
    double max = getFp8MaxFinite(type);
    value = std::clamp(value, -max, max);
  }
  if (!std::isfinite(value) || value == 0.0)
    return value;
  Format format = getFormat(type);
  int exponent = getExponent(value);
  if (exponent >= format.minExponent && exponent <= format.maxExponent) {
    // A normal result: round the double's 52 fraction bits to
    // precision - 1 bits, to nearest even; a carry into the exponent is
    // the correct result, overflow past the largest finite value is
    // caught below.
    int dropped = 53 - format.precision;
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    uint64_t half = uint64_t(1) << (dropped - 1);
    bits += half - 1 + ((bits >> dropped) & 1);
    bits &= ~((uint64_t(1) << dropped) - 1);
    double rounded;
    std::memcpy(&rounded, &bits, sizeof(rounded));
    if (getExponent(rounded) <= format.maxExponent)
      return rounded;
    return std::copysign(std::numeric_limits<double>::infinity(), value);
  }
  if (exponent > format.maxExponent)
    return std::copysign(std::numeric_limits<double>::infinity(), value);
  // Subnormal in the format: multiples of the smallest spacing. Dividing by
  // a power of two is exact; nearbyint rounds to nearest even.
  double spacing = ulp(type, 0.0);
  return std::nearbyint(value / spacing) * spacing;
}

uint32_t check::encode(ElementType type, double value) {
  if (type == ElementType::i32)
    return static_cast<uint32_t>(static_cast<int32_t>(value));
  double rounded = roundTo(type, value);
  float single = static_cast<float>(rounded); // exact: rounded fits in f32
  uint32_t bits;
  std::memcpy(&bits, &single, sizeof(bits));
  switch (type) {
  case ElementType::f32:
    return bits;
  case ElementType::bf16:
    // bf16 is the upper half of f32 and `rounded` has no lower bits (NaN
    // keeps a quiet payload in the upper half).
    return bits >> 16;
  case ElementType::f16: {
    uint32_t sign = (bits >> 16) & 0x8000;
    if (std::isnan(rounded))
      return sign | 0x7e00;
    if (std::isinf(rounded))
      return sign | 0x7c00;
    double magnitude = std::fabs(rounded);
    if (magnitude < std::ldexp(1.0, -14)) // subnormal: multiples of 2^-24
      return sign | static_cast<uint32_t>(std::ldexp(magnitude, 24));
    int exponent = std::ilogb(magnitude);
    auto mantissa =
        static_cast<uint32_t>(std::ldexp(magnitude, 10 - exponent)) - 1024;
    return sign | static_cast<uint32_t>(exponent + 15) << 10 | mantissa;
  }
  case ElementType::f8E4M3FN:
  case ElementType::f8E5M2: {
    Format format = getFormat(type);
    int mantissaBits = format.precision - 1;
    int bias = 1 - format.minExponent;
    uint32_t sign = (bits >> 24) & 0x80;
    if (std::isnan(rounded)) // the quiet NaN cvt.rn.satfinite gives
      return sign | (type == ElementType::f8E4M3FN ? 0x7f : 0x7e);
    double magnitude = std::fabs(rounded); // finite: saturated
    if (magnitude < std::ldexp(1.0, format.minExponent))
      return sign | static_cast<uint32_t>(std::ldexp(
                        magnitude, mantissaBits - format.minExponent));
    int exponent = std::ilogb(magnitude);
    auto mantissa = static_cast<uint32_t>(std::ldexp(
                        magnitude, mantissaBits - exponent)) -
                    (1u << mantissaBits);
    return sign | static_cast<uint32_t>(exponent + bias) << mantissaBits |
           mantissa;
  }
  case ElementType::i32: // returned above
    break;
  }
  return 0;
}

double check::decode(ElementType type, uint32_t bits) {
  switch (type) {
  case ElementType::i32:
    return static_cast<int32_t>(bits);
  case ElementType::f32:
  case ElementType::bf16: {
    uint32_t single = type == ElementType::f32 ? bits : bits << 16;
    float value;
    std::memcpy(&value, &single, sizeof(value));
    return value;
  }
  case ElementType::f16: {
    double sign = (bits & 0x8000) ? -1.0 : 1.0;
    int exponent = (bits >> 10) & 0x1f;
    int mantissa = bits & 0x3ff;
    if (exponent == 0x1f)
      return mantissa ? std::numeric_limits<double>::quiet_NaN()
                      : sign * std::numeric_limits<double>::infinity();
    if (exponent == 0)
      return sign * std::ldexp(mantissa, -24);
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
  }
  case ElementType::f8E4M3FN:
  case ElementType::f8E5M2: {
    Format format = getFormat(type);
    int mantissaBits = format.precision - 1;
    int bias = 1 - format.minExponent;
    double sign = (bits & 0x80) ? -1.0 : 1.0;
    int exponent = (bits & 0x7f) >> mantissaBits;
    int mantissa = bits & ((1 << mantissaBits) - 1);
    int top = (1 << (7 - mantissaBits)) - 1;
    if (type == ElementType::f8E4M3FN && (bits & 0x7f) == 0x7f)
      return std::numeric_limits<double>::quiet_NaN();
    if (type == ElementType::f8E5M2 && exponent == top)
      return mantissa ? std::numeric_limits<double>::quiet_NaN()
                      : sign * std::numeric_limits<double>::infinity();
    if (exponent == 0)
      return sign * std::ldexp(mantissa, format.minExponent - mantissaBits);
    return sign * std::ldexp((1 << mantissaBits) + mantissa,
                             exponent - bias - mantissaBits);
  }
  }
  return 0.0;
}

void check::storeBits(ElementType type, void *base, int64_t index,
                      uint32_t bits) {
  if (getElementBytes(type) == 4) {
    std::memcpy(static_cast<char *>(base) + 4 * index, &bits, 4);
    return;
  }
  if (getElementBytes(type) == 1) {
    static_cast<uint8_t *>(base)[index] = static_cast<uint8_t>(bits);
    return;
  }
  auto half = static_cast<uint16_t>(bits);
  std::memcpy(static_cast<char *>(base) + 2 * index, &half, 2);
}

double check::loadElement(ElementType type, const void *base, int64_t index) {
  if (getElementBytes(type) == 4) {
    uint32_t bits;
    std::memcpy(&bits, static_cast<const char *>(base) + 4 * index, 4);
    return decode(type, bits);
  }
  if (getElementBytes(type) == 1)
    return decode(type, static_cast<const uint8_t *>(base)[index]);
  uint16_t half;
  std::memcpy(&half, static_cast<const char *>(base) + 2 * index, 2);
  return decode(type, half);
}

void check::storeElement(ElementType type, void *base, int64_t index,
                         double value) {
  storeBits(type, base, index, encode(type, value));
}

uint32_t check::getOutputPoison(ElementType type) {
  switch (type) {
  case ElementType::f32:
    return 0x7fc5a5a5;
  case ElementType::f16:
    return 0x7e5a;
  case ElementType::bf16:
    return 0x7fa5;
  case ElementType::i32:
    return 0xa5a5a5a5;
  case ElementType::f8E4M3FN: // e4m3 has one NaN pattern a sign
    return 0x7f;
  case ElementType::f8E5M2:
    return 0x7d;
  }
  return 0;
}

uint32_t check::getInputGuard(ElementType type) {
  switch (type) {
  case ElementType::f32:
    return 0xffc3c3c3;
  case ElementType::f16:
    return 0xfe33;
  case ElementType::bf16:
    return 0xffc3;
  case ElementType::i32:
    return 0xc3c3c3c3;
  case ElementType::f8E4M3FN:
    return 0xff;
  case ElementType::f8E5M2:
    return 0xfd;
  }
  return 0;
}
