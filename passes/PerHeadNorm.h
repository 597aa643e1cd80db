//===- PerHeadNorm.h - QK-Norm written as reshapes around a norm -*- C++ -*-===//
//
// Models write per-head QK-Norm on a token-major tensor `[T, H * D]` as
//
//   expand [[0], [1, 2]] -> [T, H, D] -> collapse [[0, 1], [2]] -> [T * H, D]
//   -> rms_norm | l2_norm | layer_norm -> expand [[0, 1], [2]] -> [T, H, D]
//   -> collapse [[0], [1, 2]] -> [T, H * D]
//
// With one head (multi-query attention's single key/value head) the
// reshapes are identities that canonicalization folds away: the chain is
// then the norm alone on `[T, D]`. Both QK-Norm fusions (into
// norm.attention, into norm.qk_norm_prologue) match either form.
//
// A LayerNorm with a weight per head (Command R+'s q_norm and k_norm of
// [H, D]) is a GroupNorm of H groups on `[T, H * D]` with an `H * D` weight
// and no bias: matched too, with `weightPerHead` (both fusions take it).
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
  /// The norm's `D`-long weight (`H * D` with weightPerHead); null for none.
  Value weight;
  bool weightPerHead = false;
  /// Gemma's `1 + w` (RMSNorm only).
  double weightOffset = 0.0;
  int64_t heads;
  int64_t headDim;

  /// Matches the chain ending in `result`. The norm and the reshapes after it
  /// must have no users outside the chain (else the fused norm would still be
  /// needed); a LayerNorm must have no bias (QK-Norm kernels have none).
  /// `headDim`: the head dim the caller expects, which a one-head chain
  /// (the norm alone) must have.
  static std::optional<PerHeadNorm>
  match(Value result, std::optional<int64_t> headDim = std::nullopt);

  /// The first chain that starts at `source`; one-head chains only with
  /// `headDim` given.
  static std::optional<PerHeadNorm>
  findFrom(Value source, std::optional<int64_t> headDim = std::nullopt);

  /// Whether `other` normalizes the same way (kind, eps and the weight
  /// offset; the weights and head counts may differ, but not whether each
  /// head has its own weight where both have several heads and weights).
  bool isCompatibleWith(const PerHeadNorm &other) const {
    auto sharesOrHasOne = [](const PerHeadNorm &n) {
      return !n.weight || n.heads == 1;
    };
    return kind == other.kind && eps == other.eps &&
           headDim == other.headDim && weightOffset == other.weightOffset &&
           (weightPerHead == other.weightPerHead || sharesOrHasOne(*this) ||
            sharesOrHasOne(other));
  }
};

} // namespace mlir::norm

#endif // NORM_PASSES_PERHEADNORM_H
