//===- DeepNormTest.cpp - DeepNorm's constants ----------------------------===//

#include "dialects/DeepNorm.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir::norm;

TEST(DeepNorm, ConstantsForNLayers) {
  // N = 1: alpha = 2^(1/4), beta = 8^(-1/4).
  auto one = getDeepNormConstants(1);
  ASSERT_TRUE(static_cast<bool>(one));
  EXPECT_DOUBLE_EQ(one->alpha, std::pow(2.0, 0.25));
  EXPECT_DOUBLE_EQ(one->beta, std::pow(8.0, -0.25));
  // N = 512 (a 1000-layer-class stack): alpha = 1024^(1/4) = 4*sqrt(2)^(1/2)...
  auto deep = getDeepNormConstants(512);
  ASSERT_TRUE(static_cast<bool>(deep));
  EXPECT_NEAR(deep->alpha, std::pow(1024.0, 0.25), 1e-12);
  EXPECT_NEAR(deep->alpha, 5.656854249492381, 1e-12);
  EXPECT_NEAR(deep->beta, std::pow(4096.0, -0.25), 1e-12);
  EXPECT_NEAR(deep->beta, 0.125, 1e-12);
  // alpha grows and beta shrinks with depth.
  EXPECT_GT(deep->alpha, one->alpha);
  EXPECT_LT(deep->beta, one->beta);
}

TEST(DeepNorm, RejectsNonPositiveLayerCounts) {
  for (int64_t n : {0, -1, -100}) {
    auto constants = getDeepNormConstants(n);
    ASSERT_FALSE(static_cast<bool>(constants));
    std::string message = llvm::toString(constants.takeError());
    EXPECT_NE(message.find("positive layer count"), std::string::npos) << message;
  }
}
