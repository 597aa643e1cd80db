//===- RowKernelSpec.h - a norm.fused_row under construction ----*- C++ -*-===//
//
// The fusion passes share one view of the ops they rewrite: every op that is
// one row kernel (a row norm, a residual add, a cast, an unconfigured
// norm.fused_row) has a RowKernelSpec. A pattern takes the spec of one op,
// folds a neighbour into it (an addend, a skip, another output type) and
// builds the resulting norm.fused_row.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_ROWKERNELSPEC_H
#define NORM_PASSES_ROWKERNELSPEC_H

#include "dialects/NormOps.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::norm {

/// The operands and attributes of one norm.fused_row.
struct RowKernelSpec {
  Statistic statistic = Statistic::none;
  Value input, addend, skip, weight, bias, mean, variance;
  /// Read by a statistic or per-channel variances only (readsEps).
  double eps = 0.0;
  double alpha = 1.0;
  double weightOffset = 0.0;
  int64_t groups = 1;
  bool f32Residual = false;
  RankedTensorType outputType;
  /// The type of `residual_out`; null when the kernel does not store `v`.
  RankedTensorType residualType;
  /// FP8 outputs: the static scale, or the type of the per-token scales
  /// (null where absent) and their bound.
  Value outputScale, scaleUb;
  RankedTensorType scalesType;

  /// The row kernel `op` is on its own: for rms_norm, layer_norm, l2_norm,
  /// group_norm, batch_norm_inference, residual_add, cast, and fused_row ops
  /// with neither `launch` nor `kernel` (a configured kernel is not
  /// re-fused). std::nullopt for every other op.
  static std::optional<RowKernelSpec> get(Operation *op);

  /// The element type `v` is held in between prologue and statistic.
  Type getStreamElementType() const;
  /// Whether the output is `v` itself, before rounding to the output type:
  /// no statistic, no per-channel statistics, scale, shift or skip.
  bool isElementwiseCopy() const;
  /// Whether the kernel reads `eps`: it has a statistic or per-channel
  /// variances.
  bool readsEps() const { return statistic != Statistic::none || variance; }
  /// Whether the kernel only converts `input` to the output type.
  bool isConversion() const { return isElementwiseCopy() && !addend; }

  /// The operands of the op `build` creates.
  SmallVector<Value> getOperands() const;

  FusedRowOp build(OpBuilder &builder, Location loc) const;
};

/// Replaces `op`, an op with a RowKernelSpec, by `fused`, result by result
/// (`output`, then `residual_out` and `output_scales` where `op` has them).
void replaceRowKernel(RewriterBase &rewriter, Operation *op, FusedRowOp fused);

/// The first of `candidates` before which a new op can be created that reads
/// `operands` and whose results `users` will read; null when there is none.
Operation *findInsertionPoint(ArrayRef<Operation *> candidates,
                              ArrayRef<Value> operands,
                              ArrayRef<Operation *> users);

/// The users of `values`, except `excluded` (ops about to be replaced).
SmallVector<Operation *> getUsersExcept(ValueRange values,
                                        ArrayRef<Operation *> excluded);

} // namespace mlir::norm

#endif // NORM_PASSES_ROWKERNELSPEC_H
