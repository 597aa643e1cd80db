//===- AttentionReference.h - float64 reference of attention ----*- C++ -*-===//
//
// What the attention kernel (FlashAttention-2 style, optionally with QK-Norm
// in its prologue) must compute: the UNFUSED graph, in double precision from
// the stored (exactly decoded) inputs, with a per-element bound on the error
// a correct kernel may make. As in Reference.h, the bound is propagated
// through the kernel's arithmetic, never a fixed per-type tolerance.
//
// The graph (T = bf16 or f16, per sequence of a varlen batch, per q head h
// and its kv head g = h / (numHeads / numKvHeads)):
//   qn = round_T(norm(q_row) * (w + offset)), kn likewise (Reference.h's
//        rms / l2 / mean_var forms); qn = q, kn = k without QK-Norm;
//   with rotary embeddings, qn = round_T(rope(qn, pos)), kn likewise: the
//        pairs (a, b) of the style turn to (a cos - b sin, b cos + a sin)
//        (the unfused graph's norm kernel, then a rotary kernel with f32
//        math, as vLLM's; HF's rotates in T with cos and sin rounded to T,
//        which is less exact);
//   s_j = scale * qn . kn_j over the unmasked keys j (causal: j <= i);
//   pi_j = softmax(s)_j, o = sum_j pi_j v_j, output round_T(o);
//   lse = log(sum_j exp(s_j)) (natural log, f32).
//
// The kernel's arithmetic and what each step costs (u = 2^-24; u_T the unit
// roundoff of T, 2^-8 bf16, 2^-11 f16: the relative error of a tie just
// above a power of two; g(n) = u (4 sqrt(n) + 16), Reference.h's f32 sum of
// n terms):
// - QK-Norm in f32 (Reference.h's statistic bound, rsqrt.approx), then
//   rounded to T: exact unless the f64 value lies within the f32 error of a
//   rounding midpoint ("flip-prone"); then qn (kn) may be the other
//   neighbour, |dqn_d| <= 1 ulp of T.
// - Rotary embeddings in f32 on the rounded qn (kn): from a table, its f32
//   cos and sin as given, so the rotation's 3u alone; else angle pos *
//   f32(freq) (2u relative), reduced to [-pi, pi] by two fmas with 2 pi split
//   in two f32s (8u absolute), sin.approx / cos.approx (2^-20 absolute; PTX
//   states 2^-20.9 on [-pi, pi]), the rotation 3u relative to |a| + |b|;
//   a deviating
//   input element moves each output of its pair by its deviation. The
//   rounding to T is exact unless a midpoint lies within that error, as
//   for the norm.
// - Scores: f32 sums of exact products, any order: per key, in natural-log
//   units, |ds_j| <= scale (sum_d |dq_d||k_d| + |q_d||dk_d| + |dq_d||dk_d|)
//   + g(D) scale |qn~| |kn~| (Cauchy-Schwarz bounds sum |qn~_d kn~_d|).
// - p_j = ex2((s_j - m_b) log2e) in f32 (or ex2(S_j c - m_b c)), m_b the
//   running max of the key block: the argument costs 4u (|s_j| + max|s|)
//   (the scale and log2e constants, the products, the subtraction),
//   ex2.approx 2^-21 (twice PTX's 2^-22). The running max and the rescale
//   factors cancel between O and l, so only these log perturbations count:
//   |delta_j| <= tau_j, the sum of the above.
// - The unrounded weights w_j = pi_j e^delta_j / Z, Z = sum pi e^delta:
//   since sum_j pi_j (v_j - o) = 0, exactly
//     sum_j w_j v_j - o = (1 / Z) sum_j pi_j (e^delta_j - 1) (v_j - o),
//   and Z >= e^-taubar (Jensen, taubar = sum pi_j tau_j), so
//     |dO_score| <= e^taubar sum_j pi_j (e^tau_j - 1) |v_j - o|
//   (first order: sum pi |ds| |v - o|; the exponentials are the margin).
// - P rounded to T for P.V, l summed from the unrounded p: relative u_T per
//   key of its kernel weight w_j <= W_j = pi_j e^(tau_j + taubar); a p that
//   may be subnormal in T (f16) costs half the subnormal spacing (the
//   rescale to the final max only shrinks it; l >= ~1, the max's own p).
// - O and l accumulated in f32 with the rescales, o = O / l (or O rcp(l)):
//   2 g(2n) + 4u relative to sum_j W_j |v_j| (n keys).
// - The final rounding to T: one ulp of T, as Reference.h.
// - lse = m + log(l) in f32: |dlse| <= log(sum pi_j e^tau_j) + 1.01 g(2n)
//   + 2^-21 (1 + |log l|) (lg2.approx) + 4u (|m| + |log l|) (the scale
//   and ln 2 constants, products, the add) + 1 ulp f32.
//
// Assumed of the kernel: round-to-nearest conversions (P may be subnormal
// in T: the conversion does not flush it; ex2.approx.ftz flushes a p below
// 2^-126 to 0, which moves l >= 1 and O by under n 2^-126, far inside the
// bound), l from the unrounded p (as FlashAttention-2), one
// pass over the keys, or (decode) up to 64 key ranges combined: each
// range's f32 output o_s = O_s / l_s and log2-sum-exp m_s + lg2.approx(l_s)
// (2^-21 + 4u (|m_s| + |log2 l_s|)), weighed by ex2.approx(lse_s - max)
// (2^-21 + 4u of the argument): a log perturbation of every key of the
// range, ln 2 (2^-20 + 8u (2 max|s| log2 e + log2 n + 1)), and the
// combine's f32 sums, 2 g(128) + 4u more of the accumulation.
//
// Decode (referenceDecode): the keys of sequence b are its cache rows as
// stored (no norm, no rotation: they were appended so), then its new rows
// normalized and rotated at positions cacheSeqlens[b] + i; new token i
// attends to the cache and the new tokens up to itself. The appended k rows
// are the graph's kn (exact unless flip-prone: then 1 ulp), the v rows the
// stored v.
//
// The expected output value is round_T(o) (the graph's output); the expected
// lse is the exact one. In effect: 1 ulp plus u_T sum_j pi_j |v_j|, the
// worst case of the P rounding and the dominant term (random data: median
// ~4 ulps at ~100 keys, ~14 at ~500, about 0.6 sqrt(keys)), plus the score
// terms, small unless qn/kn flip or |s| is large. NaN never passes.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_ATTENTIONREFERENCE_H
#define NORM_COMPILER_MODEL_ATTENTIONREFERENCE_H

#include "compiler/model/KernelModel.h"
#include "compiler/model/Reference.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace norm::check {

/// One attention problem: a varlen batch of sequences (q, k and v share
/// cuSeqlens), grouped-query heads, an optional causal mask and QK-Norm.
struct AttentionProblem {
  ElementType type = ElementType::bf16; // q, k, v, output: bf16 or f16
  int64_t numHeads = 1, numKvHeads = 1, headDim = 0;
  /// Masks key j > query i within a sequence (positions are indices within
  /// the sequence).
  bool causal = false;
  /// softmax(scale * qn kn^T).
  double scale = 1.0;
  /// Per head row of q and k: rms, l2 or mean_var (LayerNorm without bias);
  /// none when absent (or Statistic::None).
  std::optional<Statistic> qkNorm;
  double qkEps = 1e-6;
  /// Added to the weights when given (Gemma's 1 + w: 1.0).
  double qkOffset = 0.0;
  /// The weights hold a row of headDim per head (OpSpec::qkWeightPerHead).
  bool qkWeightPerHead = false;
  /// Rotary embeddings of qn and kn (Operation.h's RopeStyle): pair i of
  /// the first rotaryDim elements turns by pos * theta^(-2i / rotaryDim),
  /// pos the token's index within its sequence.
  RopeStyle rope = RopeStyle::None;
  int64_t rotaryDim = 0;
  double ropeTheta = 10000.0;
  /// Per token (of `cuSeqlens`: the new tokens in decode), its position
  /// (OpSpec::ropePositions); empty: its index within the sequence (after
  /// the cache in decode).
  std::vector<int64_t> positions;
  /// The angles instead of ropeTheta (OpSpec::ropeTable): contiguous rows
  /// of rotaryDim f32, the cosines of position p's pairs, then their sines.
  /// Every position must lie inside (the kernel's NaN rows are not a
  /// reference's business).
  std::vector<float> ropeTable;
  /// Rotate the rows before the QK-Norm (OpSpec::ropeFirst), each step
  /// rounded to T, not after it.
  bool ropeFirst = false;
  /// Sequence b is tokens [cuSeqlens[b], cuSeqlens[b + 1]); starts at 0,
  /// non-decreasing (empty sequences allowed).
  std::vector<int64_t> cuSeqlens;

  int64_t getNumTokens() const {
    return cuSeqlens.empty() ? 0 : cuSeqlens.back();
  }
  bool hasQKNorm() const { return qkNorm && *qkNorm != Statistic::None; }
  /// The kv head q head `head` attends with.
  int64_t getKvHead(int64_t head) const {
    return head / (numHeads / numKvHeads);
  }
};

/// The problem `spec` (an attention kind of Operation.h) computes over the
/// sequences of `cuSeqlens`: its heads, QK-Norm, rotary and mask; the rope
/// table and positions are the caller's to fill.
AttentionProblem getAttentionProblem(const OpSpec &spec,
                                     std::vector<int64_t> cuSeqlens);

/// The stored inputs: q (tokens x numHeads * headDim), k and v (tokens x
/// numKvHeads * headDim), of the problem's type, any row strides; the
/// QK-Norm weights (headDim), optional.
struct AttentionOperands {
  RowsView q, k, v;
  ParamView qWeight, kWeight;
};

struct AttentionExpected {
  /// tokens x numHeads * headDim, values of the problem's type.
  ExpectedRows output;
  /// numHeads x tokens: the f32 natural-log sum of exp of the scores.
  ExpectedRows lse;
};

/// Whether `problem` and `operands` fit together (types, shapes, heads,
/// cuSeqlens); referenceAttention requires it.
Status verifyAttentionProblem(const AttentionProblem &problem,
                              const AttentionOperands &operands);

AttentionExpected referenceAttention(const AttentionProblem &problem,
                                     const AttentionOperands &operands);

/// One decode step: `step` holds the new tokens (cuSeqlens; its `causal`
/// must be false: decode is causal by position), sequence b has
/// cacheSeqlens[b] rows at rows b x cacheCapacity on of the caches (or on
/// its pages: getCacheRow).
struct DecodeProblem {
  AttentionProblem step;
  std::vector<int64_t> cacheSeqlens;
  int64_t cacheCapacity = 0;
  /// A paged cache (OpSpec::cacheBlockSize; 0: contiguous): `cacheBlocks`
  /// pages of `blockSize` rows, sequence b's in blockTables[b x maxBlocks,
  /// (b + 1) x maxBlocks), maxBlocks = cacheCapacity / blockSize.
  int64_t blockSize = 0, cacheBlocks = 0;
  std::vector<int64_t> blockTables;
  /// FlashInfer's ragged table (OpSpec::pageIndptr; empty: vLLM's):
  /// sequence b's pages are blockTables[pageIndptr[b], pageIndptr[b + 1]),
  /// its capacity their count x blockSize (at most cacheCapacity).
  std::vector<int64_t> pageIndptr;
  /// An FP8 cache (OpSpec::fp8Cache; empty: none): the caches hold e4m3
  /// values, and these scales (one, or one per kv head).
  std::vector<double> kScales, vScales;
  /// An FP8 cache: the e4m3 keys the kernel appended (new tokens x kv
  /// columns; NaN where not seen, as a dropped row's), which the attention
  /// reads dequantized. Unseen ones are every code the reference's key may
  /// round to (its deviation).
  std::vector<double> newKeyCodes;
};

/// An FP8 cache's element as the attention reads it: code * scale, exact
/// (the kernels scale the scores and the output, not the elements).
double dequantizeFp8(double code, double scale);
/// The e4m3 value an FP8 cache stores for key or value `x`: e4m3(f32(x_T *
/// f32(1 / scale))), x_T its rounding to `type`, rounded to nearest even,
/// saturated.
double quantizeFp8(ElementType type, double x, double scale);

/// The cache row of position `position` (below the capacity) of sequence
/// `b`, as the kernels find it: b x capacity + position, or paged through
/// the block table, where an entry that is no page of the cache (unset,
/// -1) gives page 0's row and `own` false (such a row is never written).
int64_t getCacheRow(const DecodeProblem &problem, int64_t b, int64_t position,
                    bool *own = nullptr);
/// The positions sequence `b` has in the cache: cacheCapacity, or a ragged
/// table's pages of it.
int64_t getCacheCapacity(const DecodeProblem &problem, int64_t b);

/// The new tokens' q, k, v and weights, and the caches before the append
/// (batch x cacheCapacity rows of numKvHeads x headDim).
struct DecodeOperands {
  AttentionOperands step;
  RowsView kCache, vCache;
};

struct DecodeExpected {
  /// New tokens x numHeads * headDim.
  ExpectedRows output;
  /// New tokens x numKvHeads * headDim: the rows appended to the caches
  /// (token t of sequence b at the cache row of position cacheSeqlens[b] +
  /// t - cuSeqlens[b], where that is below the capacity and on a page of
  /// the sequence's own: others are dropped, though attended to); every
  /// other cache row stays as it was.
  ExpectedRows kAppended, vAppended;
};

/// Whether `problem` and `operands` fit together (as verifyAttentionProblem,
/// and every sequence's cache within the capacity).
Status verifyDecodeProblem(const DecodeProblem &problem,
                           const DecodeOperands &operands);

DecodeExpected referenceDecode(const DecodeProblem &problem,
                               const DecodeOperands &operands);

} // namespace norm::check

#endif // NORM_COMPILER_MODEL_ATTENTIONREFERENCE_H
