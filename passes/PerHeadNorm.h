//===- PerHeadNorm.h - QK-Norm written as reshapes around a norm -*- C++ -*-===//
//
// Models write per-head QK-Norm on a token-major tensor `[T, H * D]` as
//
//   expand [[0], [1, 2]] -> [T, H, D] -> collapse [[0, 1], [2]] -> [T * H, D]
//   -> rms_norm | l2_norm -> expand [[0, 1], [2]] -> [T, H, D]
//   -> collapse [[0], [1, 2]] -> [T, H * D]
//
// Both QK-Norm fusions (into norm.attention, into norm.qk_norm_prologue)
// match this chain.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_PERHEADNORM_H
#define NORM_PASSES_PERHEADNORM_H

#include "dialects/NormOps.h"

#include <optional>

namespace mlir::norm {

struct PerHeadNorm {
  /// `[T, H * D]` before the chain.
  Value source;
  /// `[T, H * D]` after the chain; same type as `source`.
  Value result;
  QKNormKind kind;
  double eps;
  /// The norm's `D`-long weight; null for none.
  Value weight;
  int64_t heads;
  int64_t headDim;

  /// Matches the chain ending in `result`. The norm and the reshapes after it
  /// must have no users outside the chain (else the fused norm would still be
  /// needed), and an RMSNorm no weight offset (QK-Norm kernels have none).
  static std::optional<PerHeadNorm> match(Value result);

  /// The first chain that starts at `source`.
  static std::optional<PerHeadNorm> findFrom(Value source);

  /// Whether `other` normalizes the same way (kind and eps; the weights and
  /// head counts may differ).
  bool isCompatibleWith(const PerHeadNorm &other) const {
    return kind == other.kind && eps == other.eps &&
           headDim == other.headDim;
  }
};

} // namespace mlir::norm

#endif // NORM_PASSES_PERHEADNORM_H
