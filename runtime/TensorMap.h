//===- TensorMap.h - TMA tensor maps of attention operands ------*- C++ -*-===//
//
// The Hopper attention kernel reads its operands with TMA: each through a
// tensor map (CUtensorMap) that libnormjit encodes with the driver's
// cuTensorMapEncodeTiled and passes by value. The operands are row-major
// views (packed [tokens, heads, head_dim] with a row stride): two
// dimensions, columns contiguous, rows `rowStride` elements apart, read in
// boxes of `boxRows` x `boxColumns` that land in shared memory swizzled.
// The rules the driver enforces are checked first, with messages that name
// the operand, so that a bad stride is an error before anything reaches
// the driver.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_TENSORMAP_H
#define NORM_RUNTIME_TENSORMAP_H

#include "compiler/model/ElementType.h"
#include "runtime/CudaDriver.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>

namespace norm::jit {

struct TensorMapSpec {
  std::string name; // the operand, for messages ("q", "k", ...)
  ElementType type = ElementType::bf16;
  const void *base = nullptr; // device address of row 0, column 0
  uint64_t rows = 0, columns = 0;
  uint64_t rowStride = 0; // elements between consecutive rows
  uint32_t boxRows = 0, boxColumns = 0;
  /// 0 (none), 32, 64 or 128 bytes: the box's rows land with their 16-byte
  /// chunks exchanged as wgmma's layouts of that swizzle read them.
  int swizzleBytes = 128;
};

/// The rules of cuTensorMapEncodeTiled for `spec`: a 16-byte aligned base;
/// 1 to 2^32 rows and columns; a row stride of at least the columns whose
/// bytes are a multiple of 16 below 2^40; boxes of 1 to 256 rows and
/// columns, a row of a box a multiple of 16 bytes and, swizzled, at most
/// the swizzle's width; FP8, 16-bit or f32 elements.
Status checkTensorMap(const TensorMapSpec &spec);

/// Encodes `spec` into `map` (checkTensorMap first): interleave none, L2
/// promotion of 128 bytes, out-of-bounds elements read as zeros (boxes past
/// the last row or column are filled, not faulted).
Status encodeTensorMap(const CudaDriver &driver, const TensorMapSpec &spec,
                       cu::TensorMap &map);

} // namespace norm::jit

#endif // NORM_RUNTIME_TENSORMAP_H
