//===- FloatFormats.h - exact f32, f16, bf16 and FP8 storage --*- C++ -*-===//
//
// The storage types of the kernels, emulated in double precision: rounding
// to nearest even straight from double (no double rounding through float),
// decoding, the spacing of representable values, and the NaN patterns that
// poison buffers.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_FLOATFORMATS_H
#define NORM_COMPILER_MODEL_FLOATFORMATS_H

#include "compiler/model/KernelModel.h"

#include <cstdint>

namespace norm::check {

/// `value` rounded to nearest even in `type` (overflow to infinity; FP8
/// saturates to its largest finite value, as quantization does).
double roundTo(ElementType type, double value);

/// The bits of `value` rounded to `type` (the low 16 bits for f16/bf16, the
/// low 8 for FP8).
uint32_t encode(ElementType type, double value);
/// The value of `bits` stored as `type`.
double decode(ElementType type, uint32_t bits);

/// Reads and writes element `index` of a buffer of `type`.
double loadElement(ElementType type, const void *base, int64_t index);
void storeElement(ElementType type, void *base, int64_t index, double value);
void storeBits(ElementType type, void *base, int64_t index, uint32_t bits);

/// The distance between representable values of `type` around `magnitude`
/// (for subnormal magnitudes, the subnormal spacing).
double ulp(ElementType type, double magnitude);

/// f32's unit roundoff, 2^-24.
constexpr double kF32Roundoff = 1.0 / 16777216.0;

/// Quiet-NaN patterns: what outputs are poisoned with, and what fills the
/// gaps and guards of inputs (a kernel that reads them gets NaN results).
uint32_t getOutputPoison(ElementType type);
uint32_t getInputGuard(ElementType type);

} // namespace norm::check

#endif // NORM_COMPILER_MODEL_FLOATFORMATS_H
