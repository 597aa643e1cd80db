//===- DeepNorm.h - DeepNorm's constants ------------------------*- C++ -*-===//
//
// DeepNorm (Wang et al., 2022) stabilises post-norm transformers of N layers
// by up-weighting the residual, x_{l+1} = LN(alpha * x_l + F(x_l)), and by
// scaling the initialisation of some weights by beta.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECTS_DEEPNORM_H
#define NORM_DIALECTS_DEEPNORM_H

#include "llvm/Support/Error.h"

namespace mlir::norm {

struct DeepNormConstants {
  /// Residual scale, (2N)^(1/4): the `alpha` of `norm.residual_add`.
  double alpha;
  /// Initialisation scale, (8N)^(-1/4), for the value and output projections
  /// of attention and the second matrix of the FFN (not used by kernels).
  double beta;
};

/// DeepNorm's constants for a decoder-only stack of `numLayers` layers
/// (N = numLayers). Fails for numLayers <= 0.
llvm::Expected<DeepNormConstants> getDeepNormConstants(int64_t numLayers);

} // namespace mlir::norm

#endif // NORM_DIALECTS_DEEPNORM_H
