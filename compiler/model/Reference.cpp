//===- Reference.cpp - float64 references of the kernels ------------------===//

#include "compiler/model/Reference.h"

#include "compiler/model/FloatFormats.h"
#include "compiler/model/ReferenceDetail.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace norm;
using namespace norm::check;
using namespace norm::check::detail;

constexpr double u = kF32Roundoff;

double RowsView::at(int64_t row, int64_t col) const {
  return loadElement(type, data, row * stride + col);
}

double ParamView::at(int64_t index) const {
  return loadElement(type, data, index);
}

bool Expected::accepts(double actual) const {
  return !std::isnan(actual) && std::fabs(actual - value) <= tolerance;
}

double detail::getStatisticError(int64_t n) {
  return u * (4.0 * std::sqrt(static_cast<double>(n)) + 16.0);
}

namespace {
/// The output of one element once normalized to `normalized` (error
/// `error`): scaled, shifted, optionally rounded and added to a skip value,
/// then rounded to `output`.
struct Epilogue {
  ElementType output;
  double weight = 1.0, bias = 0.0;
  std::optional<double> skip;

  /// The f32 value before the final rounding, and its error.
  Expected compute(double normalized, double error) const {
    double value = normalized * weight + bias;
    error = error * std::fabs(weight) +
            4 * u * (std::fabs(normalized * weight) + std::fabs(bias));
    if (skip) {
      // Sandwich-Norm: the unfused graph rounds the normalized value to the
      // output type before the add; the kernel's f32 value may round to the
      // other neighbour.
      double rounded = roundTo(output, value);
      error += ulp(output, value);
      value = rounded + *skip;
      error += 2 * u * (std::fabs(rounded) + std::fabs(*skip));
    }
    return {value, error};
  }

  Expected apply(double normalized, double error) const {
    Expected y = compute(normalized, error);
    return {y.value, y.tolerance + ulp(output, std::fabs(y.value) + y.tolerance)};
  }
};

/// An FP8 output element: y (with its error) times 1 / scale (the kernel
/// rounds the reciprocal and the product: a few units of f32 roundoff),
/// saturated, rounded to nearest even.
Expected quantizeExpected(ElementType output, const Expected &y, double scale,
                          double scaleRelError) {
  double max = getFp8MaxFinite(output);
  double value = y.value / scale;
  double error = y.tolerance / scale +
                 std::fabs(value) * (scaleRelError + 4 * u);
  value = std::clamp(value, -max, max);
  return {value, error + 0.5 * ulp(output, std::fabs(value) + error)};
}
} // namespace

RowStatistic detail::computeStatistic(Statistic statistic, double eps,
                                      const std::vector<double> &v,
                                      const std::vector<double> &dv) {
  RowStatistic result;
  auto n = static_cast<double>(v.size());
  if (statistic == Statistic::MeanVar) {
    double sum = 0.0, sumAbs = 0.0, sumError = 0.0;
    for (size_t i = 0; i < v.size(); ++i) {
      sum += v[i];
      sumAbs += std::fabs(v[i]);
      sumError += dv[i];
    }
    result.center = sum / n;
    result.centerError =
        sumError / n + getStatisticError(v.size()) * sumAbs / n;
  }
  double centered = 0.0, squares = 0.0, sensitivity = 0.0;
  for (size_t i = 0; i < v.size(); ++i) {
    double d = v[i] - result.center;
    centered += d * d;
    squares += v[i] * v[i];
    sensitivity += 2 * std::fabs(d) * dv[i];
  }
  // scale = rsqrt(statistic + eps) = rsqrt(denominator / divisor).
  double divisor = statistic == Statistic::L2 ? 1.0 : n;
  double denominator = centered + divisor * eps;
  result.scale = 1.0 / std::sqrt(denominator / divisor);
  if (denominator > 0.0)
    result.scaleRelError =
        0.5 * (sensitivity + getStatisticError(v.size()) * squares) /
            denominator +
        4 * u;
  return result;
}

FusedRowExpected check::referenceFusedRow(const OpSpec &spec,
                                          const FusedRowOperands &operands) {
  const RowsView &input = operands.input;
  int64_t rows = input.rows, hidden = spec.hidden;
  int64_t width = hidden / spec.groups;
  Statistic statistic = getStatistic(spec);
  FusedRowExpected expected;
  expected.output = ExpectedRows(rows, hidden);
  if (spec.writeResidual)
    expected.residual = ExpectedRows(rows, hidden);
  if (spec.saveStats) {
    expected.savedRstd = ExpectedRows(rows, spec.groups);
    if (statistic == Statistic::MeanVar)
      expected.savedMean = ExpectedRows(rows, spec.groups);
  }

  bool fp8 = isFp8ElementType(spec.output);
  bool perToken = spec.outputScale == OutputScale::PerToken;
  if (perToken)
    expected.outputScales = ExpectedRows(rows, 1);
  std::optional<double> upperBound;
  if (operands.scaleUpperBound)
    upperBound = operands.scaleUpperBound.at(0);
  // FP8: y before quantization, per row (per-token scales need its amax).
  std::vector<Expected> y(fp8 ? hidden : 0);

  std::vector<double> v(hidden), dv(hidden);
  for (int64_t row = 0; row < rows; ++row) {
    // Prologue: v = alpha * input + addend, in f32, rounded to the input
    // type unless the residual stream stays in f32.
    for (int64_t col = 0; col < hidden; ++col) {
      double exact = input.at(row, col), error = 0.0;
      if (operands.addend) {
        double scaled = spec.alpha * exact;
        double addend = operands.addend->at(row, col);
        exact = scaled + addend;
        error = 2 * u * (std::fabs(scaled) + std::fabs(addend));
      }
      double flip = error > 0.0 ? ulp(spec.input, exact) : 0.0;
      if (spec.writeResidual)
        expected.residual.at(row, col) = {roundTo(spec.input, exact),
                                          error + flip};
      v[col] = spec.f32Residual ? exact : roundTo(spec.input, exact);
      dv[col] = spec.f32Residual ? error : error + flip;
    }
    for (int64_t first = 0; first < hidden; first += width) {
      std::vector<double> groupV(v.begin() + first, v.begin() + first + width);
      std::vector<double> groupDv(dv.begin() + first,
                                  dv.begin() + first + width);
      RowStatistic stat;
      if (statistic != Statistic::None)
        stat = computeStatistic(statistic, spec.eps, groupV, groupDv);
      if (spec.saveStats) {
        int64_t group = first / width;
        expected.savedRstd.at(row, group) = {
            stat.scale, stat.scale * stat.scaleRelError +
                            ulp(ElementType::f32, stat.scale)};
        if (statistic == Statistic::MeanVar)
          expected.savedMean.at(row, group) = {
              stat.center,
              stat.centerError + ulp(ElementType::f32, stat.center)};
      }
      for (int64_t col = first; col < first + width; ++col) {
        RowStatistic own = stat;
        if (operands.mean) {
          own.center = operands.mean.at(col);
          own.scale = 1.0 / std::sqrt(operands.variance.at(col) + spec.eps);
          own.scaleRelError = 8 * u;
        }
        double normalized = (v[col] - own.center) * own.scale;
        double error = (dv[col] + own.centerError) * own.scale +
                       std::fabs(normalized) * own.scaleRelError;
        Epilogue epilogue{spec.output};
        if (operands.weight)
          epilogue.weight = operands.weight.at(col) + spec.weightOffset;
        if (operands.bias)
          epilogue.bias = operands.bias.at(col);
        if (operands.skip)
          epilogue.skip = operands.skip->at(row, col);
        if (fp8)
          y[col] = epilogue.compute(normalized, error);
        else
          expected.output.at(row, col) = epilogue.apply(normalized, error);
      }
    }
    if (!fp8)
      continue;
    double scale = 0.0, scaleRelError = 2 * u; // the static scale's reciprocal
    if (perToken) {
      // The kernel's amax is off by at most the largest error of a y.
      double amax = 0.0, amaxError = 0.0;
      for (const Expected &e : y) {
        amax = std::max(amax, std::fabs(e.value));
        amaxError = std::max(amaxError, e.tolerance);
      }
      scale = getPerTokenScale(spec.output, amax, upperBound);
      // The kernel divides its amax (off by amaxError) by fp8_max; a
      // bound or the smallest scale it may take instead is exact but for
      // that division.
      double error = amaxError / getFp8MaxFinite(spec.output) + 2 * u * scale;
      expected.outputScales.at(row, 0) = {scale, error};
      scaleRelError += scale > 0.0 ? error / scale : 0.0;
    } else {
      scale = operands.outputScale.at(0);
    }
    for (int64_t col = 0; col < hidden; ++col)
      expected.output.at(row, col) =
          quantizeExpected(spec.output, y[col], scale, scaleRelError);
  }
  return expected;
}

FusedRowGradExpected
check::referenceFusedRowGrad(const OpSpec &spec,
                             const FusedRowGradOperands &operands) {
  int64_t rows = operands.input.rows, hidden = spec.hidden;
  // Groups are heads sharing one head's weight (per_head_weight).
  int64_t n = hidden / spec.groups;
  int64_t paramCols = spec.perHeadWeight ? n : hidden;
  Statistic statistic = getStatistic(spec);
  bool addendGrad = spec.hasAddend && spec.alpha != 1.0;
  FusedRowGradExpected expected;
  expected.gradInput = ExpectedRows(rows, hidden);
  if (addendGrad)
    expected.addendGrad = ExpectedRows(rows, hidden);
  std::vector<double> dw(paramCols, 0.0), dwAbs(paramCols, 0.0),
      db(paramCols, 0.0), dbAbs(paramCols, 0.0);
  std::vector<double> xhat(n), xhatError(n), g(n);
  double sumError = getStatisticError(n);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t group = 0; group < spec.groups; ++group) {
      int64_t first = group * n;
      auto param = [&](int64_t i) { return spec.perHeadWeight ? i : first + i; };
      double rstd = operands.savedRstd.at(row, group);
      double mean =
          operands.savedMean ? operands.savedMean->at(row, group) : 0.0;
      // x-hat and g = dy (w + offset) in f32: a few roundings each.
      double dot = 0.0, dotAbs = 0.0, total = 0.0, totalAbs = 0.0;
      double dotError = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        double v = operands.input.at(row, first + i);
        double dy = operands.gradOutput.at(row, first + i);
        xhat[i] = (v - mean) * rstd;
        xhatError[i] =
            2 * u * (std::fabs(xhat[i]) + (std::fabs(v) + std::fabs(mean)) *
                                              std::fabs(rstd));
        double w = operands.weight
                       ? operands.weight.at(param(i)) + spec.weightOffset
                       : 1.0;
        g[i] = dy * w;
        dot += g[i] * xhat[i];
        dotAbs += std::fabs(g[i] * xhat[i]);
        dotError += std::fabs(g[i]) * xhatError[i];
        total += g[i];
        totalAbs += std::fabs(g[i]);
        dw[param(i)] += dy * xhat[i];
        dwAbs[param(i)] += std::fabs(dy) * (std::fabs(xhat[i]) + xhatError[i]);
        db[param(i)] += dy;
        dbAbs[param(i)] += std::fabs(dy);
      }
      // c1 = mean(g xhat) (l2: the sum), c0 = mean(g) for mean_var.
      double divisor =
          statistic == Statistic::L2 ? 1.0 : static_cast<double>(n);
      double c1 = dot / divisor;
      double c1Error =
          (sumError * dotAbs + dotError) / divisor + 4 * u * dotAbs;
      double c0 = statistic == Statistic::MeanVar ? total / n : 0.0;
      double c0Error =
          statistic == Statistic::MeanVar ? sumError * totalAbs / n : 0.0;
      for (int64_t i = 0; i < n; ++i) {
        int64_t col = first + i;
        double inner = g[i] - c0 - xhat[i] * c1;
        double innerError =
            4 * u * (std::fabs(g[i]) + std::fabs(c0) +
                     std::fabs(xhat[i] * c1)) +
            c0Error + std::fabs(xhat[i]) * c1Error +
            xhatError[i] * std::fabs(c1) + 2 * u * std::fabs(g[i]);
        double dv = rstd * inner;
        double dvError = std::fabs(rstd) * innerError + u * std::fabs(dv);
        if (operands.residualGrad) {
          double r = operands.residualGrad->at(row, col);
          dv += r;
          dvError += 2 * u * (std::fabs(dv) + std::fabs(r));
        }
        double dx = spec.alpha * dv;
        double dxError =
            std::fabs(spec.alpha) * dvError + 2 * u * std::fabs(dx);
        expected.gradInput.at(row, col) = {
            dx, dxError + ulp(spec.input, std::fabs(dx) + dxError)};
        if (addendGrad)
          expected.addendGrad.at(row, col) = {
              dv, dvError + ulp(spec.addendType, std::fabs(dv) + dvError)};
      }
    }
  // Column sums in f32 over the rows (and heads), in any order.
  double columnError =
      u * (static_cast<double>(rows * spec.groups) + 16.0);
  for (int64_t col = 0; col < paramCols; ++col) {
    if (spec.hasWeight)
      expected.weightGrad.push_back(
          {dw[col], columnError * dwAbs[col] + 4 * u * dwAbs[col]});
    if (spec.hasBias)
      expected.biasGrad.push_back({db[col], columnError * dbAbs[col]});
  }
  return expected;
}

std::vector<Expected>
check::roundGradientSums(const std::vector<Expected> &sums, ElementType type) {
  std::vector<Expected> rounded;
  for (const Expected &e : sums)
    rounded.push_back(
        {e.value, e.tolerance + ulp(type, std::fabs(e.value) + e.tolerance)});
  return rounded;
}

std::vector<Expected> check::referenceColumnSum(const RowsView &input,
                                                ElementType output) {
  std::vector<Expected> expected;
  double error = u * (static_cast<double>(input.rows) + 16.0);
  for (int64_t col = 0; col < input.cols; ++col) {
    double sum = 0.0, sumAbs = 0.0;
    for (int64_t row = 0; row < input.rows; ++row) {
      sum += input.at(row, col);
      sumAbs += std::fabs(input.at(row, col));
    }
    double tolerance = error * sumAbs;
    expected.push_back({sum, tolerance + ulp(output, std::fabs(sum) + tolerance)});
  }
  return expected;
}

QKNormExpected check::referenceQKNorm(const OpSpec &spec, const RowsView &qkv,
                                      const ParamView &qWeight,
                                      const ParamView &kWeight,
                                      const QKNormRotary &rotary) {
  int64_t tokens = qkv.rows, headDim = spec.hidden;
  QKNormExpected expected;
  expected.q = ExpectedRows(tokens, spec.numQHeads * headDim);
  expected.k = ExpectedRows(tokens, spec.numKvHeads * headDim);
  int64_t heads = spec.numQHeads + spec.numKvHeads;
  bool meanVar = getStatistic(spec) == Statistic::MeanVar;
  if (spec.saveStats) {
    expected.savedRstd = ExpectedRows(tokens, heads);
    if (meanVar)
      expected.savedMean = ExpectedRows(tokens, heads);
  }
  bool rotate = spec.rope != RopeStyle::None;
  Rotary rope{spec.rope, spec.rotaryDim, spec.ropeTheta,
              rotary.table.empty() ? nullptr : rotary.table.data()};
  std::vector<double> v(headDim), dv(headDim, 0.0), y(headDim), dy(headDim);
  for (int64_t token = 0; token < tokens; ++token) {
    int64_t position =
        rotary.positions.empty() ? token : rotary.positions[token];
    for (int64_t head = 0; head < spec.numQHeads + spec.numKvHeads; ++head) {
      bool isQ = head < spec.numQHeads;
      ExpectedRows &out = isQ ? expected.q : expected.k;
      const ParamView &weight = isQ ? qWeight : kWeight;
      int64_t outHead = isQ ? head : head - spec.numQHeads;
      for (int64_t d = 0; d < headDim; ++d) {
        v[d] = qkv.at(token, head * headDim + d);
        dv[d] = 0.0;
      }
      // Llama 4: the graph rotates the rows it reads and stores them.
      if (rotate && spec.ropeFirst)
        rotateRow(rope, spec.input, position, v.data(), dv.data());
      // K-prepare may only rotate: then the rows are the graph's as read.
      RowStatistic stat;
      if (getStatistic(spec) != Statistic::None)
        stat = computeStatistic(getStatistic(spec), spec.eps, v, dv);
      if (spec.saveStats) {
        expected.savedRstd.at(token, head) = {
            stat.scale, stat.scale * stat.scaleRelError +
                            ulp(ElementType::f32, stat.scale)};
        if (meanVar)
          expected.savedMean.at(token, head) = {
              stat.center,
              stat.centerError + ulp(ElementType::f32, stat.center)};
      }
      for (int64_t d = 0; d < headDim; ++d) {
        double normalized = (v[d] - stat.center) * stat.scale;
        double error = (stat.centerError + dv[d]) * stat.scale +
                       std::fabs(normalized) * stat.scaleRelError;
        Epilogue epilogue{spec.output};
        if (weight)
          epilogue.weight =
              weight.at(spec.qkWeightPerHead ? outHead * headDim + d : d) +
              spec.weightOffset;
        if (!rotate) {
          out.at(token, outHead * headDim + d) =
              epilogue.apply(normalized, error);
          continue;
        }
        // Stored, then rotated (or stored as the result of a rotated row):
        // the rounded value and how far the kernel's may lie from it.
        Expected exact = epilogue.compute(normalized, error);
        std::tie(y[d], dy[d]) =
            roundWithin(spec.output, exact.value, exact.tolerance);
      }
      if (!rotate)
        continue;
      if (!spec.ropeFirst)
        rotateRow(rope, spec.output, position, y.data(), dy.data());
      for (int64_t d = 0; d < headDim; ++d)
        out.at(token, outHead * headDim + d) = {y[d], dy[d]};
    }
  }
  return expected;
}

ColumnStatsExpected check::referenceColumnStats(const RowsView &input) {
  ColumnStatsExpected expected;
  auto n = static_cast<double>(input.rows);
  double error = getStatisticError(input.rows);
  for (int64_t col = 0; col < input.cols; ++col) {
    double sum = 0.0, sumAbs = 0.0, squares = 0.0;
    for (int64_t row = 0; row < input.rows; ++row) {
      double x = input.at(row, col);
      sum += x;
      sumAbs += std::fabs(x);
      squares += x * x;
    }
    double mean = sum / n, centered = 0.0;
    for (int64_t row = 0; row < input.rows; ++row) {
      double d = input.at(row, col) - mean;
      centered += d * d;
    }
    double variance = centered / n;
    expected.mean.push_back(
        {mean, error * sumAbs / n + ulp(ElementType::f32, mean)});
    // E[x^2] - mean^2 in f32 cancels: the error is relative to E[x^2].
    expected.variance.push_back(
        {variance, 3 * error * squares / n + ulp(ElementType::f32, variance)});
  }
  return expected;
}
