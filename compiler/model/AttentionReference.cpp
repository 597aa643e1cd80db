//===- AttentionReference.cpp - float64 reference of attention ------------===//

#include "compiler/model/AttentionReference.h"

#include "compiler/model/Buffers.h"
#include "compiler/model/FloatFormats.h"
#include "compiler/model/ReferenceDetail.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

using namespace norm;
using namespace norm::check;
using namespace norm::check::detail;

constexpr double u = kF32Roundoff;
/// ex2.approx.f32 and lg2.approx.f32: twice PTX's 2^-22.
constexpr double kApproxError = 0x1p-21;
/// f32's smallest normal: ex2.approx.ftz flushes p below it.
constexpr double kF32MinNormal = 0x1p-126;

Status check::verifyAttentionProblem(const AttentionProblem &problem,
                                     const AttentionOperands &operands) {
  const AttentionProblem &p = problem;
  if (p.type != ElementType::bf16 && p.type != ElementType::f16)
    return Status::invalid("attention: the type must be bf16 or f16");
  if (p.numHeads <= 0 || p.numKvHeads <= 0 || p.headDim <= 0)
    return Status::invalid("attention: heads and head_dim must be positive");
  if (p.numHeads % p.numKvHeads != 0)
    return Status::invalid("attention: numKvHeads must divide numHeads");
  if (!std::isfinite(p.scale))
    return Status::invalid("attention: the scale must be finite");
  if (p.cuSeqlens.empty() || p.cuSeqlens.front() != 0)
    return Status::invalid("attention: cuSeqlens must start at 0");
  if (!std::is_sorted(p.cuSeqlens.begin(), p.cuSeqlens.end()))
    return Status::invalid("attention: cuSeqlens must not decrease");
  if ((operands.qWeight || operands.kWeight || p.qkOffset != 0.0) &&
      !p.hasQKNorm())
    return Status::invalid("attention: QK-Norm weights without QK-Norm");
  if (p.hasQKNorm() && p.qkOffset != 0.0 &&
      !(operands.qWeight && operands.kWeight))
    return Status::invalid("attention: a weight offset needs both weights");
  bool table = !p.ropeTable.empty();
  if (Status status =
          verifyRope(p.rope, p.rotaryDim, p.ropeTheta, p.headDim, table);
      !status)
    return status.withContext("attention");
  if (!p.positions.empty() &&
      static_cast<int64_t>(p.positions.size()) != p.getNumTokens())
    return Status::invalid("attention: one position per token");
  if (table) {
    int64_t rows = static_cast<int64_t>(p.ropeTable.size()) / p.rotaryDim;
    if (rows * p.rotaryDim != static_cast<int64_t>(p.ropeTable.size()))
      return Status::invalid("attention: the rope table holds whole rows");
    for (int64_t position : p.positions)
      if (position < 0 || position >= rows)
        return Status::invalid("attention: a position outside the rope "
                               "table");
  }
  auto check = [&](const RowsView &view, const char *name, int64_t heads) {
    if (!view.data || view.type != p.type || view.rows < p.getNumTokens() ||
        view.cols != heads * p.headDim || view.stride < view.cols)
      return Status::invalid(std::string("attention: ") + name +
                             " does not match the problem");
    return Status::success();
  };
  if (Status status = check(operands.q, "q", p.numHeads); !status)
    return status;
  if (Status status = check(operands.k, "k", p.numKvHeads); !status)
    return status;
  return check(operands.v, "v", p.numKvHeads);
}

namespace {
/// qn or kn: the graph's value of each head row (rows = tokens x heads), the
/// largest deviation of the kernel's value, and where it may deviate.
struct HeadRows {
  int64_t headDim = 0;
  std::vector<double> value, deviation;
  /// Per row: the elements that may deviate, and the 2-norm of
  /// |value| + deviation (bounding the kernel's row).
  std::vector<std::vector<int32_t>> flips;
  std::vector<double> norm;

  const double *row(int64_t index) const {
    return value.data() + index * headDim;
  }
  const double *rowDeviation(int64_t index) const {
    return deviation.data() + index * headDim;
  }
};
} // namespace

/// sin.approx.f32 and cos.approx.f32 on [-pi, pi] (PTX states 2^-20.9).
constexpr double kTrigError = 0x1p-20;

std::pair<double, double> detail::roundWithin(ElementType type, double exact,
                                              double error) {
  double value = roundTo(type, exact);
  double low = roundTo(type, exact - error);
  double high = roundTo(type, exact + error);
  return {value, std::max(value - low, high - value)};
}

void detail::rotateRow(const Rotary &rope, ElementType type, int64_t pos,
                       double *x, double *dx) {
  int64_t half = rope.rotaryDim / 2;
  bool neox = rope.style == RopeStyle::NeoX;
  const float *row = rope.table ? rope.table + pos * rope.rotaryDim : nullptr;
  for (int64_t i = 0; i < half; ++i) {
    int64_t first = neox ? i : 2 * i, second = neox ? i + half : 2 * i + 1;
    double c, s, angleError = 0.0;
    if (row) {
      c = row[i];
      s = row[half + i];
    } else {
      double angle = static_cast<double>(pos) *
                     getRopeFrequency(rope.theta, rope.rotaryDim, i);
      // The reduction's second constant is off by 2^-46 per turn.
      angleError = 2.01 * u * std::fabs(angle) + 8 * u +
                   std::fabs(angle) * 0x1p-48 + kTrigError;
      c = std::cos(angle);
      s = std::sin(angle);
    }
    double a = x[first], b = x[second], da = dx[first], db = dx[second];
    // A table's cos and sin may exceed 1 a little; theta's do not.
    double gain = std::max({1.0, std::fabs(c), std::fabs(s)});
    double error = gain * (da + db + (std::fabs(a) + std::fabs(b) + da + db) *
                                         (angleError + 3 * u));
    std::tie(x[first], dx[first]) = roundWithin(type, a * c - b * s, error);
    std::tie(x[second], dx[second]) = roundWithin(type, b * c + a * s, error);
  }
}

/// Rotates the stored head row `x` (deviations `dx`) of position `pos` as
/// the attention kernels do.
static void rotateRow(const AttentionProblem &p, int64_t pos, double *x,
                      double *dx) {
  Rotary rope{p.rope, p.rotaryDim, p.ropeTheta,
              p.ropeTable.empty() ? nullptr : p.ropeTable.data()};
  detail::rotateRow(rope, p.type, pos, x, dx);
}

/// The head rows of `view` as the graph stores them: normalized and rounded
/// to T with QK-Norm, exactly as stored without, then rotated (or rotated,
/// then normalized, with ropeFirst).
/// Per token of `problem`, its position: its index within its sequence
/// plus `offsets[b]` (decode's cache lengths) when given.
static std::vector<int64_t>
getPositions(const AttentionProblem &problem,
             const std::vector<int64_t> *offsets = nullptr) {
  if (!problem.positions.empty())
    return problem.positions;
  std::vector<int64_t> positions(problem.getNumTokens());
  for (size_t b = 0; b + 1 < problem.cuSeqlens.size(); ++b)
    for (int64_t t = problem.cuSeqlens[b]; t < problem.cuSeqlens[b + 1]; ++t)
      positions[t] = t - problem.cuSeqlens[b] + (offsets ? (*offsets)[b] : 0);
  return positions;
}

/// The 2-norm bound and flip list of row `index` of `rows`, from its values
/// and deviations.
static void finishRow(HeadRows &rows, int64_t index) {
  double squares = 0.0;
  const double *out = rows.row(index), *dev = rows.rowDeviation(index);
  rows.flips[index].clear();
  for (int64_t d = 0; d < rows.headDim; ++d) {
    double bound = std::fabs(out[d]) + dev[d];
    squares += bound * bound;
    if (dev[d] > 0.0)
      rows.flips[index].push_back(static_cast<int32_t>(d));
  }
  rows.norm[index] = std::sqrt(squares);
}

static HeadRows makeHeadRows(int64_t rowCount, int64_t dim) {
  HeadRows rows;
  rows.headDim = dim;
  rows.value.assign(rowCount * dim, 0.0);
  rows.deviation.assign(rowCount * dim, 0.0);
  rows.flips.resize(rowCount);
  rows.norm.assign(rowCount, 0.0);
  return rows;
}

static HeadRows normalizeHeads(const AttentionProblem &problem,
                               const RowsView &view, const ParamView &weight,
                               int64_t heads,
                               const std::vector<int64_t> &positions) {
  int64_t tokens = problem.getNumTokens(), dim = problem.headDim;
  ElementType type = problem.type;
  HeadRows rows = makeHeadRows(tokens * heads, dim);
  std::vector<double> v(dim), dv(dim, 0.0);
  for (int64_t token = 0; token < tokens; ++token) {
    for (int64_t head = 0; head < heads; ++head) {
      int64_t index = token * heads + head;
      double *out = rows.value.data() + index * dim;
      double *dev = rows.deviation.data() + index * dim;
      for (int64_t d = 0; d < dim; ++d) {
        v[d] = view.at(token, head * dim + d);
        dv[d] = 0.0;
      }
      bool rotate = problem.rope != RopeStyle::None;
      if (rotate && problem.ropeFirst)
        rotateRow(problem, positions[token], v.data(), dv.data());
      if (!problem.hasQKNorm()) {
        std::copy(v.begin(), v.end(), out);
        std::copy(dv.begin(), dv.end(), dev);
      } else {
        RowStatistic stat =
            computeStatistic(*problem.qkNorm, problem.qkEps, v, dv);
        for (int64_t d = 0; d < dim; ++d) {
          // As Reference.cpp's epilogue: f32 normalize, weight, round to T.
          double normalized = (v[d] - stat.center) * stat.scale;
          double error = (stat.centerError + dv[d]) * stat.scale +
                         std::fabs(normalized) * stat.scaleRelError;
          int64_t column = problem.qkWeightPerHead ? head * dim + d : d;
          double factor = weight ? weight.at(column) + problem.qkOffset : 1.0;
          double exact = normalized * factor;
          error = error * std::fabs(factor) + 4 * u * std::fabs(exact);
          std::tie(out[d], dev[d]) = roundWithin(type, exact, error);
        }
      }
      if (rotate && !problem.ropeFirst)
        rotateRow(problem, positions[token], out, dev);
      finishRow(rows, index);
    }
  }
  return rows;
}

/// The unit roundoff of T, and the absolute error of rounding a p that may
/// lie below T's (or f32's) smallest normal.
static double getUnitRoundoff(ElementType type) { return ulp(type, 1.0) / 2; }
static double getMinNormal(ElementType type) {
  return ulp(type, 0.0) / ulp(type, 1.0);
}
static double getSubnormalError(ElementType type) {
  return std::max(ulp(type, 0.0) / 2, kF32MinNormal);
}

namespace {
/// The attention of the graph over prepared rows: qn (queries x heads), kn
/// and v (keys x kv heads), query i attending to keys [keyBegin[i],
/// keyEnd[i]).
struct Attend {
  const AttentionProblem &p;
  const HeadRows &qn, &kn;
  const std::vector<double> &v; // keys x numKvHeads x headDim
  std::vector<int64_t> keyBegin, keyEnd;
  /// The kernel combines the outputs of up to kMaxDecodeSplits key ranges
  /// (decode's split-KV): the extra roundings of each range's log2-sum-exp
  /// and of the combine.
  bool splitCombine = false;

  void run(ExpectedRows &output, ExpectedRows *lseRows) const;
};
} // namespace


void Attend::run(ExpectedRows &output, ExpectedRows *lseRows) const {
  ElementType type = p.type;
  int64_t dim = p.headDim, queries = keyBegin.size();
  double uT = getUnitRoundoff(type), minNormal = getMinNormal(type);
  double subnormal = 1.01 * getSubnormalError(type);
  double dotError = getStatisticError(dim);
  std::vector<double> s, tau, weight;
  std::vector<char> prone;
  std::vector<double> o(dim), spread(dim), magnitude(dim), small(dim);
  auto vRow = [&](int64_t key, int64_t g) {
    return v.data() + (key * p.numKvHeads + g) * dim;
  };

  for (int64_t i = 0; i < queries; ++i) {
    int64_t start = keyBegin[i], keys = keyEnd[i] - keyBegin[i];
    double accumulation = 2 * getStatisticError(2 * keys) + 4 * u;
    if (splitCombine)
      accumulation += 2 * getStatisticError(2 * kMaxDecodeSplits) + 4 * u;
    s.resize(keys);
    tau.resize(keys);
    weight.resize(keys);
    prone.resize(keys);
    for (int64_t h = 0; h < p.numHeads; ++h) {
      int64_t g = p.getKvHead(h), qIndex = i * p.numHeads + h;
      const double *q = qn.row(qIndex), *dq = qn.rowDeviation(qIndex);

      // Scores and their errors (before the exp argument's).
      for (int64_t j = 0; j < keys; ++j) {
        int64_t kIndex = (start + j) * p.numKvHeads + g;
        const double *k = kn.row(kIndex), *dk = kn.rowDeviation(kIndex);
        double dot = 0.0;
        for (int64_t d = 0; d < dim; ++d)
          dot += q[d] * k[d];
        double flip = 0.0;
        for (int32_t d : qn.flips[qIndex])
          flip += dq[d] * (std::fabs(k[d]) + dk[d]);
        for (int32_t d : kn.flips[kIndex])
          flip += std::fabs(q[d]) * dk[d];
        s[j] = p.scale * dot;
        tau[j] = std::fabs(p.scale) *
                 (flip + dotError * qn.norm[qIndex] * kn.norm[kIndex]);
      }
      double m = *std::max_element(s.begin(), s.end());
      double largest = 0.0;
      for (double score : s)
        largest = std::max(largest, std::fabs(score));
      // A range's lse = m + lg2(l) (lg2.approx, 4u of the sum) and the
      // combine's ex2.approx of lse - max (2u of each), in log2 units:
      // the same log perturbation of every key of the range.
      double combineTau = 0.0;
      if (splitCombine)
        combineTau = std::log(2.0) *
                     (2 * kApproxError +
                      8 * u * (2 * largest / std::log(2.0) +
                               std::log2(static_cast<double>(keys)) + 1));

      // The graph's softmax and output, and the log perturbations.
      double sum = 0.0, tauMax = 0.0;
      for (int64_t j = 0; j < keys; ++j) {
        weight[j] = std::exp(s[j] - m);
        sum += weight[j];
        tau[j] += 4 * u * (std::fabs(s[j]) + largest) + kApproxError +
                  combineTau;
        tauMax = std::max(tauMax, tau[j]);
      }
      std::fill(o.begin(), o.end(), 0.0);
      double tauBar = 0.0, perturbed = 0.0;
      for (int64_t j = 0; j < keys; ++j) {
        // The kernel's p in the final frame is >= e^(s - m - tau - tauMax).
        prone[j] = weight[j] * std::exp(-tau[j] - tauMax) < minNormal;
        weight[j] /= sum;
        tauBar += weight[j] * tau[j];
        perturbed += weight[j] * std::exp(tau[j]);
        const double *vj = vRow(start + j, g);
        for (int64_t d = 0; d < dim; ++d)
          o[d] += weight[j] * vj[d];
      }

      std::fill(spread.begin(), spread.end(), 0.0);
      std::fill(magnitude.begin(), magnitude.end(), 0.0);
      std::fill(small.begin(), small.end(), 0.0);
      for (int64_t j = 0; j < keys; ++j) {
        const double *vj = vRow(start + j, g);
        double shift = weight[j] * std::expm1(tau[j]);
        double bound = weight[j] * std::exp(tau[j] + tauBar);
        for (int64_t d = 0; d < dim; ++d) {
          spread[d] += shift * std::fabs(vj[d] - o[d]);
          magnitude[d] += bound * std::fabs(vj[d]);
        }
        if (prone[j])
          for (int64_t d = 0; d < dim; ++d)
            small[d] += std::fabs(vj[d]);
      }
      double zInverse = std::exp(tauBar);
      for (int64_t d = 0; d < dim; ++d) {
        double rounding = uT * magnitude[d] + subnormal * small[d];
        double error = zInverse * spread[d] + rounding +
                       accumulation * (magnitude[d] + rounding);
        output.at(i, h * dim + d) = {
            roundTo(type, o[d]), error + ulp(type, std::fabs(o[d]) + error)};
      }

      if (!lseRows)
        continue;
      double logSum = std::log(sum), lse = m + logSum;
      double error = std::log(perturbed) + 1.01 * getStatisticError(2 * keys) +
                     kApproxError * (1 + std::fabs(logSum)) +
                     4 * u * (std::fabs(m) + std::fabs(logSum));
      lseRows->at(h, i) = {lse,
                           error + ulp(ElementType::f32, std::fabs(lse) + error)};
    }
  }
}

/// Rows [first, first + count) of `view`, as doubles, appended to `out`.
static void appendRows(std::vector<double> &out, const RowsView &view,
                       int64_t first, int64_t count) {
  for (int64_t row = first; row < first + count; ++row)
    for (int64_t col = 0; col < view.cols; ++col)
      out.push_back(view.at(row, col));
}

AttentionExpected check::referenceAttention(const AttentionProblem &problem,
                                            const AttentionOperands &operands) {
  const AttentionProblem &p = problem;
  int64_t tokens = p.getNumTokens(), dim = p.headDim;
  AttentionExpected expected;
  expected.output = ExpectedRows(tokens, p.numHeads * dim);
  expected.lse = ExpectedRows(p.numHeads, tokens);

  std::vector<int64_t> positions = getPositions(p);
  HeadRows qn =
      normalizeHeads(p, operands.q, operands.qWeight, p.numHeads, positions);
  HeadRows kn =
      normalizeHeads(p, operands.k, operands.kWeight, p.numKvHeads, positions);
  std::vector<double> v;
  appendRows(v, operands.v, 0, tokens);
  Attend attend{p, qn, kn, v, {}, {}};
  for (size_t b = 0; b + 1 < p.cuSeqlens.size(); ++b)
    for (int64_t i = p.cuSeqlens[b]; i < p.cuSeqlens[b + 1]; ++i) {
      attend.keyBegin.push_back(p.cuSeqlens[b]);
      attend.keyEnd.push_back(p.causal ? i + 1 : p.cuSeqlens[b + 1]);
    }
  attend.run(expected.output, &expected.lse);
  return expected;
}

Status check::verifyDecodeProblem(const DecodeProblem &problem,
                                  const DecodeOperands &operands) {
  const AttentionProblem &p = problem.step;
  if (p.causal)
    return Status::invalid("decode: causal by position; 'causal' is prefill's");
  if (Status status = verifyAttentionProblem(p, operands.step); !status)
    return status;
  int64_t batch = static_cast<int64_t>(p.cuSeqlens.size()) - 1;
  if (static_cast<int64_t>(problem.cacheSeqlens.size()) != batch)
    return Status::invalid("decode: one cache length per sequence");
  bool ragged = !problem.pageIndptr.empty();
  if (ragged) {
    int64_t entries = problem.blockTables.size();
    bool valid = problem.blockSize > 0 &&
                 static_cast<int64_t>(problem.pageIndptr.size()) == batch + 1;
    for (int64_t b = 0; valid && b < batch; ++b)
      valid = problem.pageIndptr[b] >= 0 &&
              problem.pageIndptr[b] <= problem.pageIndptr[b + 1] &&
              problem.pageIndptr[b + 1] <= entries &&
              getCacheCapacity(problem, b) <= problem.cacheCapacity;
    if (!valid)
      return Status::invalid("decode: the ragged page table's offsets do not "
                             "match its entries");
  }
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = problem.cacheSeqlens[b];
    if (length < 0 || length > getCacheCapacity(problem, b))
      return Status::invalid("decode: the cache of sequence " +
                             std::to_string(b) + " exceeds its capacity");
  }
  int64_t cacheRows = batch * problem.cacheCapacity;
  if (problem.blockSize) {
    if (problem.blockSize < 1 ||
        problem.cacheCapacity % problem.blockSize != 0 ||
        (!ragged && static_cast<int64_t>(problem.blockTables.size()) !=
                        batch * (problem.cacheCapacity / problem.blockSize)))
      return Status::invalid("decode: the block table does not match the "
                             "capacity's pages");
    cacheRows = problem.cacheBlocks * problem.blockSize;
  }
  bool fp8 = !problem.kScales.empty();
  for (const std::vector<double> *scales : {&problem.kScales, &problem.vScales})
    if (fp8 && scales->size() != 1 &&
        static_cast<int64_t>(scales->size()) != p.numKvHeads)
      return Status::invalid("decode: an FP8 cache's scales are one or one "
                             "per kv head");
  if (!problem.newKeyCodes.empty() &&
      static_cast<int64_t>(problem.newKeyCodes.size()) !=
          p.getNumTokens() * p.numKvHeads * p.headDim)
    return Status::invalid("decode: one appended key code per element");
  for (const RowsView *cache : {&operands.kCache, &operands.vCache})
    if (!cache->data || cache->type != (fp8 ? ElementType::f8E4M3FN : p.type) ||
        cache->rows < cacheRows || cache->cols != p.numKvHeads * p.headDim ||
        cache->stride < cache->cols)
      return Status::invalid("decode: a cache does not match the problem");
  return Status::success();
}

double check::dequantizeFp8(double code, double scale) { return code * scale; }

double check::quantizeFp8(ElementType type, double x, double scale) {
  double inverse = roundTo(ElementType::f32, 1.0 / scale);
  return roundTo(ElementType::f8E4M3FN,
                 roundTo(ElementType::f32, roundTo(type, x) * inverse));
}

int64_t check::getCacheRow(const DecodeProblem &problem, int64_t b,
                           int64_t position, bool *own) {
  if (own)
    *own = true;
  if (!problem.blockSize)
    return b * problem.cacheCapacity + position;
  int64_t first = problem.pageIndptr.empty()
                      ? b * (problem.cacheCapacity / problem.blockSize)
                      : problem.pageIndptr[b];
  int64_t entry = problem.blockTables[first + position / problem.blockSize];
  bool page = entry >= 0 && entry < problem.cacheBlocks;
  if (own)
    *own = page;
  return (page ? entry : 0) * problem.blockSize + position % problem.blockSize;
}

int64_t check::getCacheCapacity(const DecodeProblem &problem, int64_t b) {
  if (problem.pageIndptr.empty())
    return problem.cacheCapacity;
  return (problem.pageIndptr[b + 1] - problem.pageIndptr[b]) *
         problem.blockSize;
}

DecodeExpected check::referenceDecode(const DecodeProblem &problem,
                                      const DecodeOperands &operands) {
  const AttentionProblem &p = problem.step;
  int64_t tokens = p.getNumTokens(), dim = p.headDim;
  int64_t kvCols = p.numKvHeads * dim;
  DecodeExpected expected;
  expected.output = ExpectedRows(tokens, p.numHeads * dim);
  expected.kAppended = ExpectedRows(tokens, kvCols);
  expected.vAppended = ExpectedRows(tokens, kvCols);

  std::vector<int64_t> positions = getPositions(p, &problem.cacheSeqlens);
  HeadRows qn = normalizeHeads(p, operands.step.q, operands.step.qWeight,
                               p.numHeads, positions);
  HeadRows added = normalizeHeads(p, operands.step.k, operands.step.kWeight,
                                  p.numKvHeads, positions);
  // The keys each sequence attends to: its cache rows as stored, then its
  // new rows as appended.
  int64_t keys = 0, batch = static_cast<int64_t>(p.cuSeqlens.size()) - 1;
  for (int64_t b = 0; b < batch; ++b)
    keys += problem.cacheSeqlens[b] + p.cuSeqlens[b + 1] - p.cuSeqlens[b];
  HeadRows kn = makeHeadRows(keys * p.numKvHeads, dim);
  std::vector<double> v;
  Attend attend{p, qn, kn, v, {}, {}};
  attend.splitCombine = true;
  // An FP8 cache's keys and values are read dequantized, by kv head.
  bool fp8 = !problem.kScales.empty();
  auto scaleOf = [&](const std::vector<double> &scales, int64_t g) {
    return scales[scales.size() == 1 ? 0 : g];
  };
  auto cachedValue = [&](const RowsView &cache,
                         const std::vector<double> &scales, int64_t row,
                         int64_t col) {
    double x = cache.at(row, col);
    return fp8 ? dequantizeFp8(x, scaleOf(scales, col / dim)) : x;
  };
  int64_t key = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t cached = problem.cacheSeqlens[b];
    int64_t first = p.cuSeqlens[b], count = p.cuSeqlens[b + 1] - first;
    int64_t begin = key;
    for (int64_t row = 0; row < cached; ++row, ++key)
      for (int64_t g = 0; g < p.numKvHeads; ++g) {
        int64_t index = key * p.numKvHeads + g;
        for (int64_t d = 0; d < dim; ++d)
          kn.value[index * dim + d] =
              cachedValue(operands.kCache, problem.kScales,
                          getCacheRow(problem, b, row), g * dim + d);
        finishRow(kn, index);
      }
    for (int64_t row = 0; row < cached; ++row)
      for (int64_t col = 0; col < kvCols; ++col)
        v.push_back(cachedValue(operands.vCache, problem.vScales,
                                getCacheRow(problem, b, row), col));
    for (int64_t t = first; t < first + count; ++t, ++key)
      for (int64_t g = 0; g < p.numKvHeads; ++g) {
        int64_t index = key * p.numKvHeads + g, from = t * p.numKvHeads + g;
        std::copy_n(added.row(from), dim, kn.value.data() + index * dim);
        std::copy_n(added.rowDeviation(from), dim,
                    kn.deviation.data() + index * dim);
        for (int64_t d = 0; d < dim; ++d)
          expected.kAppended.at(t, g * dim + d) = {added.row(from)[d],
                                                   added.rowDeviation(from)[d]};
        // FP8: the code the kernel appended, or every code the key may
        // round to.
        for (int64_t d = 0; fp8 && d < dim; ++d) {
          double scale = scaleOf(problem.kScales, g);
          double x = added.row(from)[d], dev = added.rowDeviation(from)[d];
          double code = problem.newKeyCodes.empty()
                            ? std::nan("")
                            : problem.newKeyCodes[from * dim + d];
          double low = dequantizeFp8(
              std::isnan(code) ? quantizeFp8(p.type, x - dev, scale) : code,
              scale);
          double high = dequantizeFp8(
              std::isnan(code) ? quantizeFp8(p.type, x + dev, scale) : code,
              scale);
          kn.value[index * dim + d] = (low + high) / 2;
          kn.deviation[index * dim + d] = (high - low) / 2;
        }
        finishRow(kn, index);
      }
    for (int64_t t = first; t < first + count; ++t)
      for (int64_t col = 0; col < kvCols; ++col) {
        double x = operands.step.v.at(t, col);
        double scale = fp8 ? scaleOf(problem.vScales, col / dim) : 1.0;
        v.push_back(fp8 ? dequantizeFp8(quantizeFp8(p.type, x, scale), scale)
                        : x);
      }
    for (int64_t t = first; t < first + count; ++t) {
      for (int64_t col = 0; col < kvCols; ++col)
        expected.vAppended.at(t, col) = {operands.step.v.at(t, col), 0.0};
      attend.keyBegin.push_back(begin);
      attend.keyEnd.push_back(begin + cached + (t - first) + 1);
    }
  }
  attend.run(expected.output, nullptr);
  return expected;
}

AttentionProblem
norm::check::getAttentionProblem(const OpSpec &spec,
                                 std::vector<int64_t> cuSeqlens) {
  AttentionProblem problem;
  problem.type = spec.input;
  problem.numHeads = spec.numQHeads;
  problem.numKvHeads = spec.numKvHeads;
  problem.headDim = spec.hidden;
  problem.causal = spec.causal;
  problem.scale = spec.scale;
  if (spec.qkStatistic != Statistic::None)
    problem.qkNorm = spec.qkStatistic;
  problem.qkEps = spec.eps;
  problem.qkOffset = spec.weightOffset;
  problem.cuSeqlens = std::move(cuSeqlens);
  problem.rope = spec.rope;
  problem.rotaryDim = spec.rotaryDim;
  problem.ropeTheta = spec.ropeTheta;
  problem.ropeFirst = spec.ropeFirst;
  problem.qkWeightPerHead = spec.qkWeightPerHead;
  return problem;
}
