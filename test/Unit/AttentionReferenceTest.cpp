//===- AttentionReferenceTest.cpp - the attention reference and its bound -===//
//
// The float64 reference of attention (AttentionReference.h): its values on
// cases with known answers, and its bound against an f32 emulation of the
// FlashAttention-2 kernel: every element of a correct emulation accepted,
// each typical bug caught, and the tolerance a few ulps wide.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/AttentionReference.h"
#include "compiler/model/FloatFormats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace norm;
using namespace norm::check;

namespace {

/// A stored matrix of bf16 or f16, a few elements of padding per row.
struct Matrix {
  ElementType type;
  int64_t rows, cols, stride;
  std::vector<uint16_t> data;
  Matrix(ElementType type, int64_t rows, int64_t cols)
      : type(type), rows(rows), cols(cols), stride(cols + 8),
        data(std::max<int64_t>(rows, 1) * stride, 0) {}
  void set(int64_t row, int64_t col, double value) {
    storeElement(type, data.data(), row * stride + col, value);
  }
  double get(int64_t row, int64_t col) const {
    return loadElement(type, data.data(), row * stride + col);
  }
  RowsView view() const { return {type, data.data(), rows, cols, stride}; }
};

struct Weights {
  ElementType type;
  std::vector<uint16_t> data;
  Weights(ElementType type, int64_t size) : type(type), data(size, 0) {}
  void set(int64_t index, double value) {
    storeElement(type, data.data(), index, value);
  }
  ParamView view() const { return {type, data.data()}; }
};

/// A problem with its stored inputs.
struct Case {
  AttentionProblem problem;
  Matrix q, k, v;
  std::optional<Weights> qWeight, kWeight;

  Case(const AttentionProblem &problem)
      : problem(problem), q(problem.type, problem.getNumTokens(),
                            problem.numHeads * problem.headDim),
        k(problem.type, problem.getNumTokens(),
          problem.numKvHeads * problem.headDim),
        v(problem.type, problem.getNumTokens(),
          problem.numKvHeads * problem.headDim) {}

  AttentionOperands operands() const {
    AttentionOperands operands{q.view(), k.view(), v.view(), {}, {}};
    if (qWeight)
      operands.qWeight = qWeight->view();
    if (kWeight)
      operands.kWeight = kWeight->view();
    return operands;
  }
};

std::vector<int64_t> getCuSeqlens(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> cu{0};
  for (int64_t length : lengths)
    cu.push_back(cu.back() + length);
  return cu;
}

struct Config {
  ElementType type;
  int64_t heads, kvHeads, dim;
  bool causal;
  std::optional<Statistic> qkNorm;
  double offset; // with weights when nonzero or `weights`
  bool weights;
  std::vector<int64_t> lengths;
  double scaleFactor = 1.0; // scale = scaleFactor / sqrt(dim)
  RopeStyle rope = RopeStyle::None;
  int64_t rotaryDim = 0; // 0: dim
  double ropeTheta = 1e4;
};

/// Random inputs: q and k of rms ~2 (the norm has work to do), v ~ N(0, 1).
Case makeRandomCase(const Config &config, unsigned seed) {
  AttentionProblem problem;
  problem.type = config.type;
  problem.numHeads = config.heads;
  problem.numKvHeads = config.kvHeads;
  problem.headDim = config.dim;
  problem.causal = config.causal;
  problem.qkNorm = config.qkNorm;
  problem.qkEps = 1e-6;
  problem.qkOffset = config.offset;
  problem.cuSeqlens = getCuSeqlens(config.lengths);
  problem.rope = config.rope;
  problem.rotaryDim = config.rotaryDim ? config.rotaryDim : config.dim;
  problem.ropeTheta = config.ropeTheta;
  double scale = config.scaleFactor / std::sqrt(double(config.dim));
  // An l2-normalized dot product is a cosine: give it the usual learned
  // temperature so that the softmax is not flat.
  if (config.qkNorm == Statistic::L2)
    scale *= config.dim;
  problem.scale = scale;
  Case c(problem);
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  for (int64_t t = 0; t < problem.getNumTokens(); ++t) {
    for (int64_t col = 0; col < c.q.cols; ++col)
      c.q.set(t, col, 2 * normal(random) + 0.3);
    for (int64_t col = 0; col < c.k.cols; ++col) {
      c.k.set(t, col, 2 * normal(random) - 0.2);
      c.v.set(t, col, normal(random));
    }
  }
  if (config.weights || config.offset != 0.0) {
    c.qWeight.emplace(config.type, config.dim);
    c.kWeight.emplace(config.type, config.dim);
    for (int64_t d = 0; d < config.dim; ++d) {
      // Gemma's stored weights are small around 0 (1 + w applied).
      double center = config.offset != 0.0 ? 0.0 : 1.0;
      c.qWeight->set(d, center + 0.2 * normal(random));
      c.kWeight->set(d, center + 0.2 * normal(random));
    }
  }
  return c;
}

//===----------------------------------------------------------------------===//
// An f32 emulation of the kernel
//===----------------------------------------------------------------------===//

struct Bugs {
  bool kvHeadOffByOne = false; // q head h reads kv head h / group + 1
  bool causalShift = false;    // query i also sees key i + 1
  bool noRescale = false;      // O not rescaled when the running max grows
  bool unnormalizedQ = false;  // QK-Norm applied to k only
  bool keyPositionShift = false; // keys turned as if one position later
  bool ropeBackwards = false;  // rope turns by -angle
};

struct KernelResult {
  std::vector<double> output; // tokens x heads * dim
  std::vector<double> lse;    // heads x tokens
};

/// QK-Norm of one head row in f32, as the prologue does (rsqrt one ulp off
/// on odd rows, as rsqrt.approx may be), rounded to T.
std::vector<float> normalizeRow(const Case &c, const Matrix &m,
                                const std::optional<Weights> &weight,
                                int64_t token, int64_t head, bool skip) {
  const AttentionProblem &p = c.problem;
  int64_t dim = p.headDim;
  std::vector<float> x(dim);
  for (int64_t d = 0; d < dim; ++d)
    x[d] = static_cast<float>(m.get(token, head * dim + d));
  if (!p.hasQKNorm() || skip)
    return x;
  float mean = 0.0f, squares = 0.0f;
  if (*p.qkNorm == Statistic::MeanVar) {
    for (float value : x)
      mean += value;
    mean /= static_cast<float>(dim);
  }
  for (float value : x)
    squares += (value - mean) * (value - mean);
  float eps = static_cast<float>(p.qkEps);
  float denominator = *p.qkNorm == Statistic::L2
                          ? squares + eps
                          : squares / static_cast<float>(dim) + eps;
  float r = 1.0f / std::sqrt(denominator);
  if ((token + head) % 2)
    r = std::nextafter(r, (token % 4 == 1) ? 0.0f : 2.0f * r);
  for (int64_t d = 0; d < dim; ++d) {
    float factor = 1.0f;
    if (weight)
      factor = static_cast<float>(
                   loadElement(weight->type, weight->data.data(), d)) +
               static_cast<float>(p.qkOffset);
    float y = (x[d] - mean) * r * factor;
    x[d] = static_cast<float>(roundTo(p.type, y));
  }
  return x;
}

/// Rotary embeddings of a stored head row in f32, as the kernel turns it:
/// angle pos * f32(freq), reduced by two fmas, sin and cos, rounded to T.
void rotateRow(const AttentionProblem &p, std::vector<float> &x, int64_t pos,
               const Bugs &bugs) {
  if (p.rope == RopeStyle::None)
    return;
  int64_t half = p.rotaryDim / 2;
  const float twoPiHigh = 6.28318548f;
  const float twoPiLow = static_cast<float>(6.283185307179586 - 6.28318548);
  for (int64_t i = 0; i < half; ++i) {
    bool neox = p.rope == RopeStyle::NeoX;
    int64_t first = neox ? i : 2 * i, second = neox ? i + half : 2 * i + 1;
    float freq =
        static_cast<float>(getRopeFrequency(p.ropeTheta, p.rotaryDim, i));
    float angle = static_cast<float>(pos) * freq;
    float turns = std::nearbyint(angle * static_cast<float>(1 / 6.283185307179586));
    float r = std::fma(-turns, twoPiLow, std::fma(-turns, twoPiHigh, angle));
    if (bugs.ropeBackwards)
      r = -r;
    float c = std::cos(r), s = std::sin(r), a = x[first], b = x[second];
    x[first] = static_cast<float>(roundTo(p.type, a * c - b * s));
    x[second] = static_cast<float>(roundTo(p.type, b * c + a * s));
  }
}

/// FlashAttention-2's loop in f32: key blocks of 64, running max, p in f32
/// via exp2, l from the unrounded p, P rounded to T for P.V, O rescaled, a
/// final divide and rounding.
KernelResult emulateKernel(const Case &c, Bugs bugs = {}) {
  const AttentionProblem &p = c.problem;
  int64_t tokens = p.getNumTokens(), dim = p.headDim, heads = p.numHeads;
  int64_t group = heads / p.numKvHeads;
  KernelResult result;
  result.output.assign(tokens * heads * dim, 0.0);
  result.lse.assign(heads * tokens, 0.0);
  std::vector<std::vector<float>> q(tokens * heads), k(tokens * p.numKvHeads);
  for (size_t b = 0; b + 1 < p.cuSeqlens.size(); ++b) {
    for (int64_t t = p.cuSeqlens[b]; t < p.cuSeqlens[b + 1]; ++t) {
      int64_t pos = t - p.cuSeqlens[b];
      for (int64_t h = 0; h < heads; ++h) {
        q[t * heads + h] =
            normalizeRow(c, c.q, c.qWeight, t, h, bugs.unnormalizedQ);
        rotateRow(p, q[t * heads + h], pos, bugs);
      }
      for (int64_t g = 0; g < p.numKvHeads; ++g) {
        k[t * p.numKvHeads + g] = normalizeRow(c, c.k, c.kWeight, t, g, false);
        rotateRow(p, k[t * p.numKvHeads + g], pos + bugs.keyPositionShift,
                  bugs);
      }
    }
  }
  const float ln2 = 0.6931471805599453f;
  std::vector<float> v(tokens * p.numKvHeads * dim);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < p.numKvHeads * dim; ++col)
      v[t * p.numKvHeads * dim + col] = static_cast<float>(c.v.get(t, col));
  float scaleLog2 = static_cast<float>(p.scale * 1.4426950408889634);
  constexpr int64_t kBlock = 64;
  std::vector<float> o(dim), x(kBlock), pv(kBlock);
  for (size_t b = 0; b + 1 < p.cuSeqlens.size(); ++b) {
    int64_t start = p.cuSeqlens[b], end = p.cuSeqlens[b + 1];
    for (int64_t i = start; i < end; ++i) {
      int64_t last = end - 1;
      if (p.causal)
        last = std::min(end - 1, bugs.causalShift ? i + 1 : i);
      for (int64_t h = 0; h < heads; ++h) {
        int64_t g = h / group;
        if (bugs.kvHeadOffByOne)
          g = (g + 1) % p.numKvHeads;
        const std::vector<float> &qi = q[i * heads + h];
        float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
        std::fill(o.begin(), o.end(), 0.0f);
        for (int64_t first = start; first <= last; first += kBlock) {
          int64_t count = std::min(kBlock, last + 1 - first);
          float blockMax = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < count; ++j) {
            const std::vector<float> &kj = k[(first + j) * p.numKvHeads + g];
            // Exact products, f32 sums in 16-element MMA chunks.
            float dot = 0.0f;
            for (int64_t d0 = 0; d0 < dim; d0 += 16) {
              float chunk = 0.0f;
              for (int64_t d = d0; d < std::min(dim, d0 + 16); ++d)
                chunk += qi[d] * kj[d];
              dot += chunk;
            }
            x[j] = dot * scaleLog2;
            blockMax = std::max(blockMax, x[j]);
          }
          float newMax = std::max(m, blockMax);
          float alpha = std::exp2(m - newMax); // 0 on the first block
          float rowSum = 0.0f;
          for (int64_t j = 0; j < count; ++j) {
            float pj = std::exp2(x[j] - newMax);
            rowSum += pj;
            pv[j] = static_cast<float>(roundTo(p.type, pj));
          }
          l = l * alpha + rowSum;
          for (int64_t d = 0; d < dim; ++d) {
            float acc = 0.0f;
            for (int64_t j = 0; j < count; ++j)
              acc += pv[j] * v[((first + j) * p.numKvHeads + g) * dim + d];
            o[d] = (bugs.noRescale ? o[d] : o[d] * alpha) + acc;
          }
          m = newMax;
        }
        for (int64_t d = 0; d < dim; ++d)
          result.output[(i * heads + h) * dim + d] = roundTo(p.type, o[d] / l);
        result.lse[h * tokens + i] = m * ln2 + std::log(l);
      }
    }
  }
  return result;
}

struct Rejections {
  int64_t output = 0, lse = 0;
  double worstRatio = 0.0; // max |actual - value| / tolerance
};

Rejections countRejections(const AttentionExpected &expected,
                           const KernelResult &actual) {
  Rejections r;
  for (size_t i = 0; i < expected.output.values.size(); ++i) {
    const Expected &e = expected.output.values[i];
    r.output += !e.accepts(actual.output[i]);
    r.worstRatio = std::max(
        r.worstRatio, std::fabs(actual.output[i] - e.value) / e.tolerance);
  }
  for (size_t i = 0; i < expected.lse.values.size(); ++i)
    r.lse += !expected.lse.values[i].accepts(actual.lse[i]);
  return r;
}

//===----------------------------------------------------------------------===//
// Known answers
//===----------------------------------------------------------------------===//

TEST(AttentionReference, UniformScoresAverageV) {
  for (bool causal : {false, true}) {
    for (ElementType type : {ElementType::bf16, ElementType::f16}) {
      Config config{type, 4, 1, 64, causal, {}, 0.0, false, {7, 0, 64}};
      Case c = makeRandomCase(config, 7);
      std::fill(c.q.data.begin(), c.q.data.end(), 0); // +0.0: all scores 0
      AttentionExpected expected = referenceAttention(c.problem, c.operands());
      ASSERT_EQ(expected.output.rows, 71);
      for (int64_t b = 0; b < 3; ++b) {
        int64_t start = c.problem.cuSeqlens[b],
                end = c.problem.cuSeqlens[b + 1];
        for (int64_t i = start; i < end; ++i) {
          int64_t keys = (causal ? i + 1 : end) - start;
          for (int64_t h = 0; h < 4; ++h) {
            EXPECT_NEAR(expected.lse.at(h, i).value, std::log(double(keys)),
                        1e-12);
            for (int64_t d = 0; d < 64; ++d) {
              double mean = 0.0;
              for (int64_t j = start; j < start + keys; ++j)
                mean += c.v.get(j, d);
              mean /= keys;
              const Expected &e = expected.output.at(i, h * 64 + d);
              EXPECT_TRUE(e.accepts(mean));
              EXPECT_TRUE(e.accepts(roundTo(type, mean)));
              EXPECT_LT(e.tolerance, 0.05);
            }
          }
        }
      }
    }
  }
}

TEST(AttentionReference, HandComputedCausal) {
  // D = 2, scale ln 3: scores 0, ln 3, 2 ln 3 give weights 1 : 3 : 9.
  AttentionProblem problem;
  problem.type = ElementType::bf16;
  problem.headDim = 2;
  problem.causal = true;
  problem.scale = std::log(3.0);
  problem.cuSeqlens = {0, 3};
  Case c(problem);
  double k[3][2] = {{0, 0}, {1, 0}, {2, 0}};
  double v[3][2] = {{4, 0}, {0, 8}, {13, -13}};
  for (int t = 0; t < 3; ++t) {
    c.q.set(t, 0, 1);
    for (int d = 0; d < 2; ++d) {
      c.k.set(t, d, k[t][d]);
      c.v.set(t, d, v[t][d]);
    }
  }
  ASSERT_TRUE(verifyAttentionProblem(c.problem, c.operands()).ok());
  AttentionExpected e = referenceAttention(c.problem, c.operands());
  // Token 0 sees v0; token 1: (v0 + 3 v1) / 4; token 2: (v0 + 3 v1 + 9 v2)
  // / 13 = (121, -93) / 13.
  double want[3][2] = {{4, 0}, {1, 6}, {121.0 / 13, -93.0 / 13}};
  double lse[3] = {0, std::log(4.0), std::log(13.0)};
  for (int t = 0; t < 3; ++t) {
    EXPECT_NEAR(e.lse.at(0, t).value, lse[t], 1e-14);
    EXPECT_LT(e.lse.at(0, t).tolerance, 1e-5);
    for (int d = 0; d < 2; ++d) {
      const Expected &out = e.output.at(t, d);
      EXPECT_EQ(out.value, roundTo(ElementType::bf16, want[t][d]));
      EXPECT_TRUE(out.accepts(want[t][d]));
      // At most the final ulp and the P rounding (u_T sum p |v|) ~2 ulps.
      EXPECT_LE(out.tolerance, 3 * ulp(ElementType::bf16, want[t][d]) + 1e-30);
    }
  }
  EXPECT_TRUE(e.output.at(0, 1).accepts(0.0));
  EXPECT_FALSE(e.output.at(2, 0).accepts(121.0 / 13 + 0.2));
}

TEST(AttentionReference, HandComputedL2WithGemmaOffset) {
  // L2 QK-Norm (eps 0): q (0, 5) -> (0, 1), k0 (7, 0) -> (1, 0), k1 (0, 3)
  // -> (0, 1); weights 1 + (0, 1) double the second column of qn and kn, so
  // the scores are 0 and 4 scale = ln 3: weights 1 : 3, non-causal.
  AttentionProblem problem;
  problem.type = ElementType::f16;
  problem.headDim = 2;
  problem.scale = std::log(3.0) / 4;
  problem.qkNorm = Statistic::L2;
  problem.qkEps = 0.0;
  problem.qkOffset = 1.0;
  problem.cuSeqlens = {0, 2};
  Case c(problem);
  c.qWeight.emplace(ElementType::f16, 2);
  c.kWeight.emplace(ElementType::f16, 2);
  for (int d = 0; d < 2; ++d) {
    c.qWeight->set(d, d);
    c.kWeight->set(d, d);
  }
  double q[2][2] = {{0, 5}, {0, -1}};
  double k[2][2] = {{7, 0}, {0, 3}};
  double v[2][2] = {{8, 4}, {0, -4}};
  for (int t = 0; t < 2; ++t)
    for (int d = 0; d < 2; ++d) {
      c.q.set(t, d, q[t][d]);
      c.k.set(t, d, k[t][d]);
      c.v.set(t, d, v[t][d]);
    }
  ASSERT_TRUE(verifyAttentionProblem(c.problem, c.operands()).ok());
  AttentionExpected e = referenceAttention(c.problem, c.operands());
  // Token 0: (v0 + 3 v1) / 4 = (2, -2). Token 1 (q -> (0, -2)): scores 0 and
  // -ln 3: (3 v0 + v1) / 4 = (6, 2).
  EXPECT_DOUBLE_EQ(e.output.at(0, 0).value, 2.0);
  EXPECT_DOUBLE_EQ(e.output.at(0, 1).value, -2.0);
  EXPECT_DOUBLE_EQ(e.output.at(1, 0).value, 6.0);
  EXPECT_DOUBLE_EQ(e.output.at(1, 1).value, 2.0);
  EXPECT_NEAR(e.lse.at(0, 0).value, std::log(4.0), 1e-14);
  EXPECT_NEAR(e.lse.at(0, 1).value, std::log(4.0 / 3), 1e-14);
  EXPECT_FALSE(e.output.at(0, 0).accepts(2.0 + 4 * ulp(ElementType::f16, 2.0)));
  EXPECT_FALSE(e.output.at(0, 0).accepts(std::nan("")));
}

TEST(AttentionReference, VerifiesTheProblem) {
  Config config{ElementType::bf16, 4, 2, 64, true, Statistic::RMS, 0.0, false};
  config.lengths = {3, 5};
  Case c = makeRandomCase(config, 1);
  EXPECT_TRUE(verifyAttentionProblem(c.problem, c.operands()).ok());
  AttentionProblem bad = c.problem;
  bad.numKvHeads = 3;
  EXPECT_FALSE(verifyAttentionProblem(bad, c.operands()).ok());
  bad = c.problem;
  bad.type = ElementType::f32;
  EXPECT_FALSE(verifyAttentionProblem(bad, c.operands()).ok());
  bad = c.problem;
  bad.cuSeqlens = {0, 5, 3};
  EXPECT_FALSE(verifyAttentionProblem(bad, c.operands()).ok());
  bad = c.problem;
  bad.cuSeqlens = {0, 3, 9}; // more tokens than the views hold
  EXPECT_FALSE(verifyAttentionProblem(bad, c.operands()).ok());
  bad = c.problem;
  bad.qkOffset = 1.0; // no weights to offset
  EXPECT_FALSE(verifyAttentionProblem(bad, c.operands()).ok());
}

TEST(AttentionReference, ProblemOfASpec) {
  OpSpec spec;
  spec.kind = OpSpec::Kind::Attention;
  spec.input = ElementType::f16;
  spec.hidden = 128;
  spec.numQHeads = 32;
  spec.numKvHeads = 8;
  spec.causal = true;
  spec.scale = 0.125;
  spec.qkStatistic = Statistic::MeanVar;
  spec.eps = 1e-5;
  spec.weightOffset = 1.0;
  spec.qkWeightPerHead = true;
  spec.rope = RopeStyle::GptJ;
  spec.rotaryDim = 64;
  spec.ropeTheta = 5e5;
  spec.ropeFirst = true;
  AttentionProblem problem = getAttentionProblem(spec, {0, 3, 3, 10});
  EXPECT_EQ(problem.type, ElementType::f16);
  EXPECT_EQ(problem.numHeads, 32);
  EXPECT_EQ(problem.numKvHeads, 8);
  EXPECT_EQ(problem.headDim, 128);
  EXPECT_TRUE(problem.causal);
  EXPECT_EQ(problem.scale, 0.125);
  EXPECT_EQ(problem.qkNorm, Statistic::MeanVar);
  EXPECT_EQ(problem.qkEps, 1e-5);
  EXPECT_EQ(problem.qkOffset, 1.0);
  EXPECT_TRUE(problem.qkWeightPerHead);
  EXPECT_EQ(problem.rope, RopeStyle::GptJ);
  EXPECT_EQ(problem.rotaryDim, 64);
  EXPECT_EQ(problem.ropeTheta, 5e5);
  EXPECT_TRUE(problem.ropeFirst);
  EXPECT_EQ(problem.cuSeqlens, (std::vector<int64_t>{0, 3, 3, 10}));
  EXPECT_EQ(problem.getNumTokens(), 10);
  // No QK-Norm: none in the problem either.
  spec.qkStatistic = Statistic::None;
  EXPECT_FALSE(getAttentionProblem(spec, {0, 1}).qkNorm.has_value());
}

//===----------------------------------------------------------------------===//
// The bound against the emulated kernel
//===----------------------------------------------------------------------===//

TEST(AttentionReference, AcceptsEmulatedKernel) {
  using E = ElementType;
  using S = Statistic;
  std::vector<Config> configs = {
      {E::bf16, 8, 2, 64, true, S::RMS, 0.0, true, {1, 129, 70}},
      {E::f16, 8, 2, 128, false, S::L2, 0.0, false, {1, 129, 70}},
      {E::bf16, 4, 1, 256, true, S::MeanVar, 1.0, true, {0, 7, 129, 0, 64}},
      {E::f16, 8, 1, 96, true, std::nullopt, 0.0, false, {1, 129, 70}},
      {E::bf16, 8, 8, 128, false, S::RMS, 1.0, true, {70, 1, 129}},
      // Peaked scores: f16 p below the smallest normal.
      {E::f16, 4, 1, 64, true, S::RMS, 0.0, false, {129, 70}, 6.0},
      {E::f16, 4, 4, 256, true, S::MeanVar, 0.0, true, {1, 70}},
      // A long sequence; one kv head.
      {E::bf16, 2, 1, 64, true, S::RMS, 1.0, true, {1030}},
  };
  unsigned seed = 100;
  for (const Config &config : configs) {
    Case c = makeRandomCase(config, ++seed);
    ASSERT_TRUE(verifyAttentionProblem(c.problem, c.operands()).ok());
    AttentionExpected expected = referenceAttention(c.problem, c.operands());
    Rejections r = countRejections(expected, emulateKernel(c));
    EXPECT_EQ(r.output, 0) << "config " << seed - 100 << ", worst error / "
                           << "tolerance " << r.worstRatio;
    EXPECT_EQ(r.lse, 0) << "config " << seed - 100;
  }
}

TEST(AttentionReference, RejectsTypicalBugs) {
  for (ElementType type : {ElementType::bf16, ElementType::f16}) {
    Config config{type, 8, 2, 64, true, Statistic::RMS, 0.0, true};
    config.lengths = {1, 129, 70};
    Case c = makeRandomCase(config, 42);
    AttentionExpected expected = referenceAttention(c.problem, c.operands());
    EXPECT_EQ(countRejections(expected, emulateKernel(c)).output, 0);
    Bugs bugs[4];
    bugs[0].kvHeadOffByOne = true;
    bugs[1].causalShift = true;
    bugs[2].noRescale = true;
    bugs[3].unnormalizedQ = true;
    const char *names[] = {"kv head off by one", "causal mask shifted",
                           "O not rescaled", "q not normalized"};
    for (int bug = 0; bug < 4; ++bug)
      EXPECT_GT(countRejections(expected, emulateKernel(c, bugs[bug])).output,
                0)
          << names[bug];
  }
}

double getMedianToleranceUlps(const AttentionExpected &expected,
                              ElementType type) {
  std::vector<double> ulps;
  for (const Expected &e : expected.output.values)
    ulps.push_back(e.tolerance / ulp(type, std::fabs(e.value)));
  std::nth_element(ulps.begin(), ulps.begin() + ulps.size() / 2, ulps.end());
  return ulps[ulps.size() / 2];
}

TEST(AttentionReference, RotaryEmbeddingsOfKnownAngles) {
  // One head, dim 16, q = k = e_0 at every position: neox turns (e_0, e_8)
  // by pos * 1 (pair 0's frequency is 1), so the score of query i and key j
  // is cos(i - j), the relative position, whatever the absolute one.
  for (RopeStyle style : {RopeStyle::NeoX, RopeStyle::GptJ}) {
    Config config{ElementType::f16, 1, 1, 16, false, {}, 0.0, false, {3, 5}};
    config.rope = style;
    Case c = makeRandomCase(config, 9);
    std::fill(c.q.data.begin(), c.q.data.end(), 0);
    std::fill(c.k.data.begin(), c.k.data.end(), 0);
    for (int64_t t = 0; t < 8; ++t) {
      c.q.set(t, 0, 1.0);
      c.k.set(t, 0, 1.0);
      for (int64_t d = 0; d < 16; ++d)
        c.v.set(t, d, d == 0 ? double(t) : 0.0);
    }
    c.problem.scale = 1.0;
    AttentionExpected expected = referenceAttention(c.problem, c.operands());
    // Query 1 of the first sequence (token 1), keys 0..2 at distances 1, 0,
    // -1; v_0 = token: o_0 = sum_j softmax(cos(1 - j))_j j.
    double w0 = std::exp(std::cos(1.0)), w1 = std::exp(1.0),
           w2 = std::exp(std::cos(-1.0));
    double o = (w1 * 1 + w2 * 2) / (w0 + w1 + w2);
    const Expected &e = expected.output.at(1, 0);
    EXPECT_NEAR(e.value, o, 2 * ulp(ElementType::f16, o))
        << getRopeStyleName(style);
    EXPECT_LT(e.tolerance, 8 * ulp(ElementType::f16, o));
    // The second sequence starts its positions at 0 again: token 4 is its
    // query 1, keys 3..7 (tokens), v_0 = 3..7.
    double sum = 0, weighted = 0;
    for (int64_t j = 0; j < 5; ++j) {
      double w = std::exp(std::cos(1.0 - j));
      sum += w;
      weighted += w * (3 + j);
    }
    EXPECT_NEAR(expected.output.at(4, 0).value, weighted / sum,
                2 * ulp(ElementType::f16, weighted / sum));
  }
}

TEST(AttentionReference, RotaryEmbeddingsAcceptTheKernelAndCatchBugs) {
  using E = ElementType;
  using S = Statistic;
  std::vector<Config> configs = {
      {E::bf16, 8, 2, 128, true, S::RMS, 0.0, true, {1, 129, 70}},
      {E::f16, 4, 1, 64, false, std::nullopt, 0.0, false, {70, 1, 129}},
      {E::f16, 4, 4, 96, true, S::RMS, 1.0, true, {7, 1030}},
      {E::bf16, 4, 1, 256, true, S::L2, 0.0, false, {129, 64}},
  };
  RopeStyle styles[] = {RopeStyle::NeoX, RopeStyle::GptJ, RopeStyle::NeoX,
                        RopeStyle::GptJ};
  int64_t rotaryDims[] = {0, 32, 0, 64}; // 0: the head dim
  double thetas[] = {1e4, 1e6, 1e6, 1e4};
  for (size_t i = 0; i < configs.size(); ++i) {
    Config config = configs[i];
    config.rope = styles[i];
    config.rotaryDim = rotaryDims[i];
    config.ropeTheta = thetas[i];
    Case c = makeRandomCase(config, 200 + i);
    ASSERT_TRUE(verifyAttentionProblem(c.problem, c.operands()).ok());
    AttentionExpected expected = referenceAttention(c.problem, c.operands());
    Rejections r = countRejections(expected, emulateKernel(c));
    EXPECT_EQ(r.output, 0) << "config " << i << ", worst error / tolerance "
                           << r.worstRatio;
    EXPECT_EQ(r.lse, 0) << "config " << i;
    // The rotation's f32 error widens the tolerance only a little.
    AttentionProblem unrotated = c.problem;
    unrotated.rope = RopeStyle::None;
    double median = getMedianToleranceUlps(expected, config.type);
    double plain = getMedianToleranceUlps(
        referenceAttention(unrotated, c.operands()), config.type);
    EXPECT_LT(median, 1.6 * plain) << "config " << i;
    // (A shared offset of q's and k's positions would go unseen: scores
    // depend on relative positions only, RoPE's point.)
    Bugs shifted, backwards;
    shifted.keyPositionShift = true;
    backwards.ropeBackwards = true;
    EXPECT_GT(countRejections(expected, emulateKernel(c, shifted)).output, 0)
        << "config " << i << ": keys one position off";
    EXPECT_GT(countRejections(expected, emulateKernel(c, backwards)).output, 0)
        << "config " << i << ": rotation backwards";
  }
  Config config{E::bf16, 2, 1, 64, false, {}, 0.0, false, {8}};
  config.rope = RopeStyle::NeoX;
  config.rotaryDim = 23;
  Case c = makeRandomCase(config, 1);
  Status status = verifyAttentionProblem(c.problem, c.operands());
  EXPECT_NE(status.message().find("attention: neox rotary embeddings need"),
            std::string::npos)
      << status.message();
}

TEST(AttentionReference, ToleranceIsAFewUlps) {
  Config config{ElementType::bf16, 4, 1, 128, true, Statistic::RMS, 0.0, true};
  config.lengths = {1, 129, 70, 7};
  Case c = makeRandomCase(config, 3);
  AttentionExpected expected = referenceAttention(c.problem, c.operands());
  double median = getMedianToleranceUlps(expected, ElementType::bf16);
  Rejections r = countRejections(expected, emulateKernel(c));
  RecordProperty("median_tolerance_ulps", std::to_string(median));
  RecordProperty("worst_error_over_tolerance", std::to_string(r.worstRatio));
  // Measured: median 4.4 ulps (1 for the final rounding, the rest mostly the
  // worst case of the P rounding, u_T sum_j p_j |v_j|, over <= 129 keys);
  // the emulated kernel reaches 0.6 of its tolerance (a value near a tie
  // that rounds the other way: 1 ulp of 1.6).
  EXPECT_LT(median, 6.0);
  EXPECT_GT(median, 1.0);
  EXPECT_EQ(r.output, 0);
  EXPECT_GT(r.worstRatio, 0.2);
}

} // namespace
