//===- ElementTypesTest.cpp - host f16/bf16 conversions -------------------===//

#include "runtime/ElementTypes.h"

#include <gtest/gtest.h>

using namespace norm;
using namespace norm::jit;

namespace {

TEST(ElementTypes, EveryFiniteValueRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    auto value = static_cast<uint16_t>(bits);
    float bf = bf16ToFloat(value);
    if (!std::isnan(bf)) {
      EXPECT_EQ(floatToBf16(bf), value) << std::hex << bits;
    }
    float half = f16ToFloat(value);
    if (!std::isnan(half)) {
      EXPECT_EQ(floatToF16(half), value) << std::hex << bits;
    }
  }
}

TEST(ElementTypes, RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between two bf16 values: to the even one (1.0);
  // 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(1e6f), 0x7c00);
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);      // halfway: to even
  EXPECT_EQ(floatToF16(0x1.8p-25f), 0x0001);    // above halfway
  EXPECT_EQ(floatToF16(-3 * 0x1p-24f), 0x8003); // negative subnormal
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(NAN))));
}

} // namespace
