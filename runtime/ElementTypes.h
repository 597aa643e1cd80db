//===- ElementTypes.h - f16 and bf16 values on the host ---------*- C++ -*-===//
//
// Conversions between float and the 16-bit element types, rounding to
// nearest even as the kernels' stores do: for hosts that prepare inputs and
// read results (examples, tools, tests).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_ELEMENTTYPES_H
#define NORM_RUNTIME_ELEMENTTYPES_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace norm::jit {

inline uint16_t floatToBf16(float value) {
  if (std::isnan(value))
    return 0x7fc0;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16ToFloat(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

/// Subnormal results are kept; values beyond the range become infinity.
inline uint16_t floatToF16(float value) {
  if (std::isnan(value))
    return 0x7e00;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (exponent <= 0) { // subnormal: shift the implicit bit in
    if (exponent < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  if (exponent >= 31)
    return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent: still the right value
  return static_cast<uint16_t>(sign | half);
}

inline float f16ToFloat(uint16_t value) {
  uint32_t sign = (value & 0x8000u) << 16;
  int exponent = (value >> 10) & 0x1f;
  uint32_t mantissa = value & 0x3ff;
  uint32_t bits;
  if (exponent == 0 && mantissa == 0) {
    bits = sign;
  } else if (exponent == 0) { // subnormal: normalize
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) |
           ((mantissa & 0x3ff) << 13);
  } else if (exponent == 31) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else {
    bits = sign | (static_cast<uint32_t>(exponent - 15 + 127) << 23) |
           (mantissa << 13);
  }
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

} // namespace norm::jit

#endif // NORM_RUNTIME_ELEMENTTYPES_H
