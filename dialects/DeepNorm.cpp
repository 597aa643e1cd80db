//===- DeepNorm.cpp - DeepNorm's constants --------------------------------===//

#include "dialects/DeepNorm.h"

#include <cmath>

using namespace mlir::norm;

llvm::Expected<DeepNormConstants>
mlir::norm::getDeepNormConstants(int64_t numLayers) {
  if (numLayers <= 0)
    return llvm::createStringError(
        "DeepNorm needs a positive layer count, got " +
        std::to_string(numLayers));
  double n = static_cast<double>(numLayers);
  return DeepNormConstants{std::pow(2.0 * n, 0.25), std::pow(8.0 * n, -0.25)};
}
