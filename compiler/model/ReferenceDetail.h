//===- ReferenceDetail.h - shared pieces of the references ------*- C++ -*-===//
//
// The f32 statistic model of Reference.h, shared by the row references and
// the attention reference (whose QK-Norm must use the same forms and
// bounds). Not an interface of its own.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_REFERENCEDETAIL_H
#define NORM_COMPILER_MODEL_REFERENCEDETAIL_H

#include "compiler/model/KernelModel.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace norm::check::detail {

/// Relative error of an f32 statistic (or any f32 sum) over `n` elements,
/// relative to the sum of magnitudes (see Reference.h).
double getStatisticError(int64_t n);

/// A row (or group) statistic: the center subtracted from each element, the
/// scale it is multiplied by, and the errors of both.
struct RowStatistic {
  double center = 0.0, centerError = 0.0;
  double scale = 1.0, scaleRelError = 0.0;
};

/// The statistic of values `v` (errors `dv`) as the kernel computes it:
/// rms 1/sqrt(mean(v^2) + eps), l2 1/sqrt(sum(v^2) + eps), mean_var the
/// mean and 1/sqrt(var + eps).
RowStatistic computeStatistic(Statistic statistic, double eps,
                              const std::vector<double> &v,
                              const std::vector<double> &dv);

/// The rounding of `exact` to `type` and how far a kernel's value may lie
/// from it when its f32 value is within `error` of `exact` (0 unless a
/// rounding midpoint lies inside: rounding is monotonic).
std::pair<double, double> roundWithin(ElementType type, double exact,
                                      double error);

/// Rotary embeddings as the kernels apply them (OpSpec's rope fields): by
/// theta, or from `table` (contiguous rows of rotary_dim, cosines then
/// sines; null: theta).
struct Rotary {
  RopeStyle style = RopeStyle::None;
  int64_t rotaryDim = 0;
  double theta = 10000.0;
  const float *table = nullptr;
};

/// Rotates the stored head row `x` (deviations `dx`, see roundWithin) of
/// position `pos` in f32 with sin.approx and cos.approx (or the table's
/// angles) and rounds the result to `type`, as the kernels do.
void rotateRow(const Rotary &rope, ElementType type, int64_t pos, double *x,
               double *dx);

} // namespace norm::check::detail

#endif // NORM_COMPILER_MODEL_REFERENCEDETAIL_H
