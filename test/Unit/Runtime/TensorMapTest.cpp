//===- TensorMapTest.cpp - TMA tensor maps through the fake driver --------===//
//
// encodeTensorMap against the fake driver, which records each request:
// the attention operands' maps (packed [tokens, heads, head_dim] with a row
// stride, 64-column boxes in the 128-byte swizzle) reach the driver as
// cuTensorMapEncodeTiled expects them, and every rule the driver enforces is
// refused before it with a message naming the operand.
//
//===----------------------------------------------------------------------===//

#include "runtime/TensorMap.h"
#include "test/Unit/Runtime/FakeCuda.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

using namespace norm;
using namespace norm::jit;

namespace {

class TensorMapTest : public ::testing::Test {
protected:
  void SetUp() override {
    fakecuda_reset();
    Status status = CudaDriver::load(NORM_FAKE_CUDA_LIBRARY, driver);
    ASSERT_TRUE(status) << status.message();
  }

  /// K of Qwen3-8B's attention: 8 kv heads of 128 in rows of 1536 elements
  /// (q, k, v packed), 128-row boxes of 64 columns.
  TensorMapSpec keys() const {
    TensorMapSpec spec;
    spec.name = "k";
    spec.base = reinterpret_cast<const void *>(uintptr_t(0x7f0000001000));
    spec.rows = 4096;
    spec.columns = 8 * 128;
    spec.rowStride = 1536;
    spec.boxRows = 128;
    spec.boxColumns = 64;
    return spec;
  }

  std::shared_ptr<const CudaDriver> driver;
};

TEST_F(TensorMapTest, EncodesARowMajorViewInSwizzledBoxes) {
  cu::TensorMap map;
  Status status = encodeTensorMap(*driver, keys(), map);
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(fakecuda_tensor_map_count(), 1);
  fakecuda_tensor_map request;
  ASSERT_TRUE(fakecuda_get_tensor_map(0, &request));
  EXPECT_EQ(request.data_type, 9); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(request.rank, 2u);
  EXPECT_EQ(request.address, 0x7f0000001000u);
  // Dimension 0 the columns, 1 the rows 1536 * 2 bytes apart.
  EXPECT_EQ(request.dims[0], 1024u);
  EXPECT_EQ(request.dims[1], 4096u);
  EXPECT_EQ(request.strides[0], 3072u);
  EXPECT_EQ(request.box[0], 64u);
  EXPECT_EQ(request.box[1], 128u);
  EXPECT_EQ(request.element_strides[0], 1u);
  EXPECT_EQ(request.element_strides[1], 1u);
  EXPECT_EQ(request.interleave, 0);
  EXPECT_EQ(request.swizzle, 3); // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(request.l2_promotion, 2);
  EXPECT_EQ(request.oob_fill, 0); // zeros past the last row
  uint64_t written;
  std::memcpy(&written, &map, sizeof written);
  EXPECT_EQ(written, 0u);
}

TEST_F(TensorMapTest, FP8AndNarrowSwizzles) {
  TensorMapSpec spec = keys();
  spec.type = ElementType::f8E4M3FN;
  spec.boxColumns = 128; // 128 bytes
  cu::TensorMap map;
  ASSERT_TRUE(encodeTensorMap(*driver, spec, map));
  spec.type = ElementType::f16;
  spec.boxColumns = 16;
  spec.swizzleBytes = 32;
  ASSERT_TRUE(encodeTensorMap(*driver, spec, map));
  fakecuda_tensor_map request;
  ASSERT_TRUE(fakecuda_get_tensor_map(0, &request));
  EXPECT_EQ(request.data_type, 0); // bytes
  EXPECT_EQ(request.strides[0], 1536u);
  ASSERT_TRUE(fakecuda_get_tensor_map(1, &request));
  EXPECT_EQ(request.data_type, 6);
  EXPECT_EQ(request.swizzle, 1);
}

TEST_F(TensorMapTest, RefusesWhatTheDriverWould) {
  struct Case {
    void (*change)(TensorMapSpec &);
    const char *message;
    ErrorCode code = ErrorCode::InvalidArgument;
  };
  const Case cases[] = {
      {[](TensorMapSpec &s) { s.base = reinterpret_cast<const void *>(8); },
       "tensor map of k: the base address must be 16-byte aligned",
       ErrorCode::Misaligned},
      {[](TensorMapSpec &s) { s.base = nullptr; },
       "tensor map of k: the base address is null"},
      {[](TensorMapSpec &s) { s.rowStride = 1540; },
       "the row stride must be a multiple of 16 bytes below 2^40, got 3080"},
      {[](TensorMapSpec &s) { s.rowStride = 512; },
       "the row stride (512 elements) is below the 1024 columns"},
      {[](TensorMapSpec &s) { s.rows = 0; },
       "rows and columns must be 1 to 2^32, got 0 x 1024"},
      {[](TensorMapSpec &s) { s.boxRows = 512; },
       "boxes must have 1 to 256 rows and columns, got 512 x 64"},
      {[](TensorMapSpec &s) { s.boxColumns = 128; },
       "a box row of 256 bytes is wider than the 128-byte swizzle"},
      {[](TensorMapSpec &s) { s.boxColumns = 4; },
       "a box row must be a multiple of 16 bytes, got 8"},
      {[](TensorMapSpec &s) { s.swizzleBytes = 16; },
       "the swizzle must be 0, 32, 64 or 128 bytes, got 16"},
      {[](TensorMapSpec &s) { s.type = ElementType::i32; },
       "TMA does not load i32 elements"},
  };
  for (const Case &c : cases) {
    TensorMapSpec spec = keys();
    c.change(spec);
    cu::TensorMap map;
    Status status = encodeTensorMap(*driver, spec, map);
    ASSERT_FALSE(status) << c.message;
    EXPECT_EQ(status.code(), c.code) << c.message;
    EXPECT_NE(status.message().find(c.message), std::string::npos)
        << status.message();
  }
  EXPECT_EQ(fakecuda_tensor_map_count(), 0);
}

TEST_F(TensorMapTest, DriverFailuresAreStatuses) {
  fakecuda_fail_next("cuTensorMapEncodeTiled", 1, 1);
  cu::TensorMap map;
  Status status = encodeTensorMap(*driver, keys(), map);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.code(), ErrorCode::DriverError);
  EXPECT_NE(status.message().find("cuTensorMapEncodeTiled failed"),
            std::string::npos)
      << status.message();
}

} // namespace
