//===- Reference.h - float64 references of the kernels ----------*- C++ -*-===//
//
// What each kernel must compute, in double precision from the stored
// (exactly decoded) inputs, with a bound on the error a correct kernel may
// make. The bound is propagated through the kernel's arithmetic rather than
// fixed per type:
//
// - f32 arithmetic: each elementwise step contributes a few units of f32
//   roundoff (u = 2^-24) relative to its operands; a statistic over n
//   elements is off by at most u * (4 sqrt(n) + 16) relative (accumulation
//   in any order, probabilistic bound with a factor ~7 of margin, plus
//   division, eps and an approximate rsqrt of 2 ulp), times the cancellation
//   factor sum(v^2) / sum((v - mean)^2) for the variance.
// - Rounding points (the residual sum rounded to the input type, the
//   normalized value rounded to the output type before a Sandwich skip add):
//   the f32 value of the kernel may round to the other neighbour of the exact
//   value, one ulp of that type, propagated to the output.
// - The final rounding to the output type: one ulp of the output type (half
//   for the rounding, half for the f32 error around a tie).
//
// In effect: f32 outputs within ~1e-6..3e-5 relative (growing with sqrt of
// the row length), f16/bf16 outputs within 1 ulp plus the propagated flips
// of their inputs (<= 2-3 ulp). NaN never passes.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_REFERENCE_H
#define NORM_COMPILER_MODEL_REFERENCE_H

#include "compiler/model/KernelModel.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace norm::check {

/// Rows of `cols` elements of `type`, `stride` elements apart.
struct RowsView {
  ElementType type = ElementType::f32;
  const void *data = nullptr;
  int64_t rows = 0, cols = 0, stride = 0;
  double at(int64_t row, int64_t col) const;
};

/// A 1-D parameter; absent when `data` is null.
struct ParamView {
  ElementType type = ElementType::f32;
  const void *data = nullptr;
  explicit operator bool() const { return data != nullptr; }
  double at(int64_t index) const;
};

/// One expected element: the exact value and the largest error allowed.
struct Expected {
  double value = 0.0;
  double tolerance = 0.0;
  /// Whether `actual` is within the tolerance (never for NaN).
  bool accepts(double actual) const;
};

/// Expected rows x cols values, row-major.
struct ExpectedRows {
  int64_t rows = 0, cols = 0;
  std::vector<Expected> values;
  ExpectedRows() = default;
  ExpectedRows(int64_t rows, int64_t cols)
      : rows(rows), cols(cols), values(rows * cols) {}
  Expected &at(int64_t row, int64_t col) { return values[row * cols + col]; }
  const Expected &at(int64_t row, int64_t col) const {
    return values[row * cols + col];
  }
};

/// norm.fused_row: the operands the spec has.
struct FusedRowOperands {
  RowsView input;
  std::optional<RowsView> addend, skip;
  ParamView weight, bias, mean, variance;
  /// FP8 outputs: the static scale, the per-token scales' bound.
  ParamView outputScale, scaleUpperBound;
};

struct FusedRowExpected {
  /// FP8 outputs: the quantized values y / scale, saturated; within half
  /// an FP8 spacing plus the propagated f32 error (a kernel that rounds
  /// toward zero is off by up to a whole spacing).
  ExpectedRows output;
  ExpectedRows residual; // empty without residual_out
  /// rows x 1 (per-token FP8 scales).
  ExpectedRows outputScales;
  /// rows x groups (save_stats; saved_mean for mean_var only).
  ExpectedRows savedMean, savedRstd;
};

FusedRowExpected referenceFusedRow(const OpSpec &spec,
                                   const FusedRowOperands &operands);

/// norm.fused_row_grad: the operands the spec has. The saved statistics are
/// inputs: the gradients are a function of them, whatever computed them.
struct FusedRowGradOperands {
  RowsView input, gradOutput;
  std::optional<RowsView> residualGrad, savedMean;
  RowsView savedRstd;
  ParamView weight;
};

struct FusedRowGradExpected {
  ExpectedRows gradInput;
  ExpectedRows addendGrad; // empty without addend_grad
  /// The weight and bias gradients, sums over all rows of the f32 partials
  /// (what norm.column_sum of them computes before its final rounding).
  std::vector<Expected> weightGrad, biasGrad;
};

FusedRowGradExpected referenceFusedRowGrad(const OpSpec &spec,
                                           const FusedRowGradOperands &operands);

/// A weight or bias gradient of referenceFusedRowGrad as norm.column_sum
/// leaves it: its f32 sums (in any order, through the partials) rounded
/// to `type`.
std::vector<Expected> roundGradientSums(const std::vector<Expected> &sums,
                                        ElementType type);

/// norm.column_sum: the sum of each column of f32 `input`, rounded to
/// `output`.
std::vector<Expected> referenceColumnSum(const RowsView &input,
                                         ElementType output);

struct QKNormExpected {
  ExpectedRows q, k;
  /// tokens x heads (save_stats; saved_mean for mean_var only).
  ExpectedRows savedMean, savedRstd;
};

/// The rotary inputs of a QK-Norm prologue with rope.
struct QKNormRotary {
  /// One per token (OpSpec::ropePositions); empty: the token's row index.
  std::vector<int64_t> positions;
  /// Contiguous rows of rotary_dim (OpSpec::ropeTable); empty: rope_theta.
  /// Every position must have its row.
  std::vector<float> table;
};

/// norm.qk_norm_prologue over `qkv` (tokens x (Hq + 2 Hkv) * head_dim), or
/// norm.k_prepare over k (Hq = 0; no statistic: the rotation alone).
/// With rope, each element is the graph's stored value (rounded to the
/// element type after the norm and after the rotation) with the deviation
/// a kernel's f32 rounding may cause (0 unless a rounding midpoint is near).
QKNormExpected referenceQKNorm(const OpSpec &spec, const RowsView &qkv,
                               const ParamView &qWeight,
                               const ParamView &kWeight,
                               const QKNormRotary &rotary = {});

struct ColumnStatsExpected {
  std::vector<Expected> mean, variance;
};

/// norm.column_stats: f32 mean and biased variance of each column.
ColumnStatsExpected referenceColumnStats(const RowsView &input);

} // namespace norm::check

#endif // NORM_COMPILER_MODEL_REFERENCE_H
