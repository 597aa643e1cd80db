//===- PerHeadNorm.cpp - QK-Norm written as reshapes around a norm --------===//

#include "passes/PerHeadNorm.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::norm;

/// Whether `op` groups its dimensions as `expected`.
template <typename ReshapeOp>
static bool hasReassociation(ReshapeOp op,
                             ArrayRef<ReassociationIndices> expected) {
  return op && op.getReassociationIndices() ==
                   SmallVector<ReassociationIndices, 4>(expected);
}

/// `[T, H, D]` as {H, D}, when both are static.
static std::optional<std::pair<int64_t, int64_t>>
getHeadShape(RankedTensorType type) {
  if (type.getRank() != 3 || type.isDynamicDim(1) || type.isDynamicDim(2))
    return std::nullopt;
  return std::make_pair(type.getDimSize(1), type.getDimSize(2));
}

/// Fills the norm's part of `match` from `norm` (a per-head norm QK-Norm
/// kernels implement) and returns its input; null for any other op.
static Value matchNorm(Operation *norm, PerHeadNorm &match) {
  if (auto rms = dyn_cast<RMSNormOp>(norm)) {
    match.kind = QKNormKind::rms;
    match.eps = rms.getEps().convertToDouble();
    match.weight = rms.getWeight();
    match.weightOffset = rms.getWeightOffset().convertToDouble();
    return rms.getInput();
  }
  if (auto l2 = dyn_cast<L2NormOp>(norm)) {
    match.kind = QKNormKind::l2;
    match.eps = l2.getEps().convertToDouble();
    return l2.getInput();
  }
  if (auto layer = dyn_cast<LayerNormOp>(norm); layer && !layer.getBias()) {
    match.kind = QKNormKind::mean_var;
    match.eps = layer.getEps().convertToDouble();
    match.weight = layer.getWeight();
    return layer.getInput();
  }
  return {};
}

/// The one-head form: the norm alone on `[T, D]` with D = `headDim`.
static std::optional<PerHeadNorm> matchOneHead(Value result, int64_t headDim) {
  Operation *norm = result.getDefiningOp();
  if (!norm)
    return std::nullopt;
  PerHeadNorm match;
  Value input = matchNorm(norm, match);
  auto type = cast<RankedTensorType>(result.getType());
  if (!input || input.getType() != result.getType() ||
      type.getDimSize(1) != headDim)
    return std::nullopt;
  match.source = input;
  match.result = result;
  match.heads = 1;
  match.headDim = headDim;
  return match;
}

/// The GroupNorm form: H groups of D channels on `[T, H * D]`, no bias, a
/// weight per channel (a weight per head) or none.
static std::optional<PerHeadNorm>
matchGroupNorm(Value result, std::optional<int64_t> headDim) {
  auto group = result.getDefiningOp<GroupNormOp>();
  if (!group || group.getBias())
    return std::nullopt;
  int64_t heads = group.getGroups();
  int64_t width = cast<RankedTensorType>(result.getType()).getDimSize(1);
  if (heads < 2 || (headDim && width != heads * *headDim))
    return std::nullopt;
  PerHeadNorm match;
  match.source = group.getInput();
  match.result = result;
  match.kind = QKNormKind::mean_var;
  match.eps = group.getEps().convertToDouble();
  match.weight = group.getWeight();
  match.weightPerHead = bool(match.weight);
  match.heads = heads;
  match.headDim = width / heads;
  return match;
}

std::optional<PerHeadNorm> PerHeadNorm::match(Value result,
                                              std::optional<int64_t> headDim) {
  if (std::optional<PerHeadNorm> group = matchGroupNorm(result, headDim))
    return group;
  const ReassociationIndices token = {0}, head = {1, 2}, tokenHead = {0, 1},
                             dim = {2};
  auto oneHead = [&]() -> std::optional<PerHeadNorm> {
    if (!headDim)
      return std::nullopt;
    return matchOneHead(result, *headDim);
  };
  // Back from the result: [T, H * D] <- [T, H, D] <- [T * H, D].
  auto join = result.getDefiningOp<tensor::CollapseShapeOp>();
  if (!hasReassociation(join, {token, head}))
    return oneHead();
  auto split = join.getSrc().getDefiningOp<tensor::ExpandShapeOp>();
  if (!hasReassociation(split, {tokenHead, dim}) || !split->hasOneUse())
    return std::nullopt;
  Operation *norm = split.getSrc().getDefiningOp();
  if (!norm || !norm->hasOneUse())
    return std::nullopt;

  PerHeadNorm match;
  match.result = result;
  Value normInput = matchNorm(norm, match);
  if (!normInput)
    return std::nullopt;

  // Forward to the norm: [T, H * D] -> [T, H, D] -> [T * H, D].
  auto rows = normInput.getDefiningOp<tensor::CollapseShapeOp>();
  if (!hasReassociation(rows, {tokenHead, dim}))
    return std::nullopt;
  auto heads = rows.getSrc().getDefiningOp<tensor::ExpandShapeOp>();
  if (!hasReassociation(heads, {token, head}))
    return std::nullopt;
  match.source = heads.getSrc();

  // Both sides must see the same heads, and the chain must keep the type.
  auto shape = getHeadShape(heads.getResultType());
  if (!shape || shape != getHeadShape(split.getResultType()) ||
      match.source.getType() != result.getType())
    return std::nullopt;
  std::tie(match.heads, match.headDim) = *shape;
  if (headDim && match.headDim != *headDim)
    return std::nullopt;
  return match;
}

std::optional<PerHeadNorm>
PerHeadNorm::findFrom(Value source, std::optional<int64_t> headDim) {
  // source -> group_norm (a weight row per head, or none).
  for (Operation *group : source.getUsers()) {
    if (!isa<GroupNormOp>(group))
      continue;
    std::optional<PerHeadNorm> match =
        matchGroupNorm(group->getResult(0), headDim);
    if (match && match->source == source)
      return match;
  }
  // source -> expand -> collapse -> norm -> expand -> collapse.
  for (Operation *heads : source.getUsers()) {
    if (!isa<tensor::ExpandShapeOp>(heads))
      continue;
    for (Operation *rows : heads->getUsers()) {
      if (!isa<tensor::CollapseShapeOp>(rows))
        continue;
      for (Operation *norm : rows->getUsers()) {
        if (!norm->hasOneUse() || !norm->user_begin()->hasOneUse())
          continue;
        Operation *join = *norm->user_begin()->user_begin();
        if (join->getNumResults() != 1)
          continue;
        std::optional<PerHeadNorm> match =
            PerHeadNorm::match(join->getResult(0), headDim);
        if (match && match->source == source)
          return match;
      }
    }
  }
  // One head: source -> norm.
  if (!headDim)
    return std::nullopt;
  for (Operation *norm : source.getUsers()) {
    if (norm->getNumResults() != 1)
      continue;
    std::optional<PerHeadNorm> match = matchOneHead(norm->getResult(0), *headDim);
    if (match && match->source == source)
      return match;
  }
  return std::nullopt;
}
