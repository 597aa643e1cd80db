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

} // namespace norm::check::detail

#endif // NORM_COMPILER_MODEL_REFERENCEDETAIL_H
