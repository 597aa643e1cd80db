//===- TensorMap.cpp - TMA tensor maps of attention operands --------------===//

#include "runtime/TensorMap.h"

using namespace norm;
using namespace norm::jit;

namespace {

/// CUtensorMapDataType of `type`; -1 for none.
int getDataType(ElementType type) {
  switch (type) {
  case ElementType::bf16:
    return cu::kTensorMapDataTypeBfloat16;
  case ElementType::f16:
    return cu::kTensorMapDataTypeFloat16;
  case ElementType::f32:
    return cu::kTensorMapDataTypeFloat32;
  case ElementType::f8E4M3FN:
  case ElementType::f8E5M2:
    // TMA moves FP8 as bytes.
    return cu::kTensorMapDataTypeUint8;
  case ElementType::i32:
    break;
  }
  return -1;
}

int getSwizzle(int bytes) {
  switch (bytes) {
  case 32:
    return cu::kTensorMapSwizzle32B;
  case 64:
    return cu::kTensorMapSwizzle64B;
  case 128:
    return cu::kTensorMapSwizzle128B;
  }
  return cu::kTensorMapSwizzleNone;
}

} // namespace

Status norm::jit::checkTensorMap(const TensorMapSpec &spec) {
  auto fail = [&](const std::string &message) {
    return Status::invalid("tensor map of " + spec.name + ": " + message);
  };
  if (getDataType(spec.type) < 0)
    return fail("TMA does not load " +
                std::string(getElementTypeName(spec.type)) + " elements");
  int64_t bytes = getElementBytes(spec.type);
  if (!spec.base)
    return fail("the base address is null");
  if (reinterpret_cast<uintptr_t>(spec.base) % 16 != 0)
    return Status::error(ErrorCode::Misaligned,
                         "tensor map of " + spec.name +
                             ": the base address must be 16-byte aligned");
  constexpr uint64_t kMaxDim = uint64_t(1) << 32;
  if (spec.rows < 1 || spec.rows > kMaxDim || spec.columns < 1 ||
      spec.columns > kMaxDim)
    return fail("rows and columns must be 1 to 2^32, got " +
                std::to_string(spec.rows) + " x " +
                std::to_string(spec.columns));
  if (spec.rowStride < spec.columns)
    return fail("the row stride (" + std::to_string(spec.rowStride) +
                " elements) is below the " + std::to_string(spec.columns) +
                " columns");
  uint64_t strideBytes = spec.rowStride * bytes;
  if (strideBytes % 16 != 0 || strideBytes >= (uint64_t(1) << 40))
    return fail("the row stride must be a multiple of 16 bytes below 2^40, "
                "got " +
                std::to_string(strideBytes) + " bytes");
  if (spec.boxRows < 1 || spec.boxRows > 256 || spec.boxColumns < 1 ||
      spec.boxColumns > 256)
    return fail("boxes must have 1 to 256 rows and columns, got " +
                std::to_string(spec.boxRows) + " x " +
                std::to_string(spec.boxColumns));
  int64_t boxRowBytes = int64_t(spec.boxColumns) * bytes;
  if (boxRowBytes % 16 != 0)
    return fail("a box row must be a multiple of 16 bytes, got " +
                std::to_string(boxRowBytes));
  int swizzle = spec.swizzleBytes;
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return fail("the swizzle must be 0, 32, 64 or 128 bytes, got " +
                std::to_string(swizzle));
  if (swizzle && boxRowBytes > swizzle)
    return fail("a box row of " + std::to_string(boxRowBytes) +
                " bytes is wider than the " + std::to_string(swizzle) +
                "-byte swizzle");
  return Status::success();
}

Status norm::jit::encodeTensorMap(const CudaDriver &driver,
                                  const TensorMapSpec &spec,
                                  cu::TensorMap &map) {
  if (Status status = checkTensorMap(spec); !status)
    return status;
  // Dimension 0 is the contiguous one: columns, then rows.
  unsigned long long dims[2] = {spec.columns, spec.rows};
  unsigned long long strides[1] = {spec.rowStride * getElementBytes(spec.type)};
  unsigned box[2] = {spec.boxColumns, spec.boxRows};
  unsigned elementStrides[2] = {1, 1};
  return driver.check(
      driver.tensorMapEncodeTiled(
          &map, getDataType(spec.type), 2, const_cast<void *>(spec.base), dims,
          strides, box, elementStrides, cu::kTensorMapInterleaveNone,
          getSwizzle(spec.swizzleBytes), cu::kTensorMapL2Promotion128B,
          cu::kTensorMapFloatOobFillNone),
      "cuTensorMapEncodeTiled");
}
