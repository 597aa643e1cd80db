//===- AttentionKernelTest.cpp - the attention kernel on the CPU ----------===//
//
// The generated attention kernel (norm-generate-kernels of a
// norm.attention_kernel) runs on the host execution path, warp matrix ops
// emulated per the PTX fragment layouts, and must match the float64
// reference of the unfused graph (norm, round, attention) within its
// propagated bound: every head dim class, sequence lengths that leave every
// tile tail (1, 7, 64, 129, over 1000), GQA ratios 1, 4 and 8, causal and
// not, variable-length batches, packed and separate q/k/v, every launch
// shape (warps, block_n, stages). Outputs are poisoned first; guards
// around every buffer and the row gaps must stay intact and inputs
// unchanged.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/AttentionReference.h"
#include "compiler/model/FloatFormats.h"
#include "test/Unit/AttentionHarness.h"
#include "tools/norm-cpu-check/Buffers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>

using namespace norm;
using namespace norm::check;

namespace {

struct AttentionCase {
  const char *name;
  ElementType type;
  int64_t headDim, heads, kvHeads;
  bool causal;
  Statistic norm; // None: no QK-Norm
  bool weights;
  double offset;
  std::vector<int64_t> lengths;
  bool packed = false; // q, k, v are column slices of one qkv buffer
  bool lse = false;
  // 0: the heuristic's.
  int64_t warps = 0, blockN = 0, stages = 0;
  RopeStyle rope = RopeStyle::None;
  int64_t rotaryDim = 0; // 0: the head dim
  double ropeTheta = 1e4;
  // The angles from a (Llama 3 scaled) table of theta's frequencies; the
  // positions from a buffer (a start per sequence, the second and later
  // sequences' in reverse); the last token of each sequence outside the
  // table (causal cases: only its own output may turn NaN).
  bool table = false, positions = false, badPositions = false;
  // Rotate, then normalize (Llama 4).
  bool ropeFirst = false;
  // A QK-Norm weight row per head (Command R+).
  bool weightPerHead = false;
  // The keys normalized and rotated once by the K-prepare kernel
  // (getKeyPrepareSpec), then read as they are (OpSpec::keysPrepared).
  bool preparedKeys = false;
  // Query rows a warp in tiles of 16 (0: the heuristic's).
  int64_t rowTiles = 0;
};

/// `c` with `rowTiles` x 16 query rows a warp, named `name`.
AttentionCase withRowTiles(AttentionCase c, int64_t rowTiles,
                           const char *name) {
  c.rowTiles = rowTiles;
  c.name = name;
  return c;
}

/// `c` with rotary embeddings.
AttentionCase withRope(AttentionCase c, RopeStyle style, int64_t rotaryDim,
                       double theta) {
  c.rope = style;
  c.rotaryDim = rotaryDim ? rotaryDim : c.headDim;
  c.ropeTheta = theta;
  return c;
}

/// `c` with its rotary angles from a table and positions as asked.
AttentionCase withRopeTable(AttentionCase c, RopeStyle style,
                            int64_t rotaryDim, bool positions,
                            bool badPositions = false) {
  c = withRope(c, style, rotaryDim, 5e5);
  c.table = true;
  c.positions = positions;
  c.badPositions = badPositions;
  return c;
}

/// `c` rotated before its QK-Norm (Llama 4), angles from theta.
AttentionCase withRopeFirst(AttentionCase c, RopeStyle style,
                            int64_t rotaryDim, double theta) {
  c = withRope(c, style, rotaryDim, theta);
  c.ropeFirst = true;
  return c;
}

/// `c` with a QK-Norm weight row per head.
AttentionCase withWeightPerHead(AttentionCase c) {
  c.weightPerHead = true;
  return c;
}

/// `c` with its positions from a buffer, angles from theta.
AttentionCase withRopePositions(AttentionCase c, RopeStyle style,
                                int64_t rotaryDim, double theta) {
  c = withRope(c, style, rotaryDim, theta);
  c.positions = true;
  return c;
}

/// `c` with its keys prepared by the K-prepare kernel.
AttentionCase withPreparedKeys(AttentionCase c, const char *name) {
  c.name = name;
  c.preparedKeys = true;
  return c;
}

std::ostream &operator<<(std::ostream &os, const AttentionCase &c) {
  return os << c.name;
}

OpSpec getSpec(const AttentionCase &c) {
  OpSpec spec = makeAttentionSpec(OpKind::Attention, c.type, c.headDim,
                                  c.heads, c.kvHeads, c.norm, c.weights,
                                  c.offset, c.rope, c.rotaryDim, c.ropeTheta);
  spec.causal = c.causal;
  spec.writeLse = c.lse;
  spec.ropeTable = c.table;
  spec.ropePositions = c.positions;
  spec.ropeFirst = c.ropeFirst;
  spec.qkWeightPerHead = c.weightPerHead;
  spec.keysPrepared = c.preparedKeys;
  return spec;
}

class AttentionKernelTest : public testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionKernelTest, MatchesTheUnfusedGraph) {
  const AttentionCase &c = GetParam();
  OpSpec spec = getSpec(c);
  LaunchConfig launch =
      getForcedLaunch(spec, c.warps, c.blockN, c.stages, c.rowTiles);
  AttentionRunner runner;
  Status compiled = runner.compile(spec, launch);
  ASSERT_TRUE(compiled) << compiled.message();
  const KernelSignature &signature = runner.getSignature();

  int64_t d = c.headDim, qCols = c.heads * d, kvCols = c.kvHeads * d;
  std::vector<int64_t> cu = {0};
  for (int64_t length : c.lengths)
    cu.push_back(cu.back() + length);
  int64_t tokens = cu.back(), batch = c.lengths.size();

  // Inputs: separate tensors with a gap after each row, or one packed
  // projection read through three column offsets.
  Random random(0x5eed + d * 31 + c.heads);
  auto draw = [&](int64_t) { return random.uniform(-2.0, 2.0); };
  int64_t packedCols = qCols + 2 * kvCols;
  std::unique_ptr<GuardedBuffer> qkv, q, k, v;
  const void *qData, *kData, *vData;
  int64_t qBytes, kBytes, vBytes;
  int64_t qStride, kStride, vStride;
  if (c.packed) {
    qkv = std::make_unique<GuardedBuffer>(c.type, tokens, packedCols,
                                          packedCols + 8);
    qkv->fill(getInputGuard(c.type));
    qkv->fillRows(draw);
    auto at = [&](int64_t col) {
      return static_cast<const char *>(qkv->data()) +
             col * getElementBytes(c.type);
    };
    qData = at(0), kData = at(qCols), vData = at(qCols + kvCols);
    auto bytesFrom = [&](int64_t col) {
      return qkv->getBytesFromData() - col * getElementBytes(c.type);
    };
    qBytes = bytesFrom(0), kBytes = bytesFrom(qCols);
    vBytes = bytesFrom(qCols + kvCols);
    qStride = kStride = vStride = qkv->getStride();
  } else {
    q = std::make_unique<GuardedBuffer>(c.type, tokens, qCols, qCols + 8);
    k = std::make_unique<GuardedBuffer>(c.type, tokens, kvCols, kvCols + 16);
    v = std::make_unique<GuardedBuffer>(c.type, tokens, kvCols, kvCols);
    for (GuardedBuffer *buffer : {q.get(), k.get(), v.get()}) {
      buffer->fill(getInputGuard(c.type));
      buffer->fillRows(draw);
    }
    qData = q->data(), kData = k->data(), vData = v->data();
    qBytes = q->getBytesFromData(), kBytes = k->getBytesFromData();
    vBytes = v->getBytesFromData();
    qStride = q->getStride(), kStride = k->getStride(), vStride = v->getStride();
  }
  int64_t qWeights = d * (c.weightPerHead ? c.heads : 1);
  int64_t kWeights = d * (c.weightPerHead ? c.kvHeads : 1);
  GuardedBuffer qWeight(c.type, 1, qWeights, qWeights);
  GuardedBuffer kWeight(c.type, 1, kWeights, kWeights);
  for (GuardedBuffer *w : {&qWeight, &kWeight}) {
    w->fill(getInputGuard(c.type));
    w->fillRows([&](int64_t) { return random.uniform(-0.5, 1.5); });
  }
  GuardedBuffer offsets(ElementType::i32, 1, batch + 1, batch + 1);
  offsets.fill(getInputGuard(ElementType::i32));
  for (int64_t i = 0; i <= batch; ++i)
    offsets.store(0, i, static_cast<double>(cu[i]));
  GuardedBuffer output(c.type, tokens, qCols, qCols + 8);
  output.fill(getOutputPoison(c.type));
  GuardedBuffer lse(ElementType::f32, tokens, c.heads, c.heads + 4);
  lse.fill(getOutputPoison(ElementType::f32));

  // Explicit positions: sequence b from 300 + 37 b, the later ones
  // backwards; the last token of each outside the table when asked (one
  // past its end, or -1), which the reference takes as position 0.
  std::vector<int64_t> positions(tokens), referencePositions;
  std::vector<bool> poisoned(tokens, false);
  int64_t tableRows = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t) {
      int64_t i = t - cu[b], length = cu[b + 1] - cu[b];
      positions[t] = 300 + 37 * b + (b == 0 ? i : length - 1 - i);
      tableRows = std::max(tableRows, positions[t] + 3);
    }
  if (!c.positions)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = cu[b]; t < cu[b + 1]; ++t)
        tableRows = std::max(tableRows, t - cu[b] + 1);
  referencePositions = positions;
  if (c.badPositions)
    for (int64_t b = 0; b < batch; ++b)
      if (cu[b + 1] > cu[b]) {
        int64_t last = cu[b + 1] - 1;
        positions[last] = b % 2 ? -1 : tableRows;
        referencePositions[last] = 0;
        poisoned[last] = true;
      }
  GuardedBuffer positionBuffer(ElementType::i32, 1, std::max<int64_t>(tokens, 1),
                               std::max<int64_t>(tokens, 1));
  positionBuffer.fill(getInputGuard(ElementType::i32));
  for (int64_t t = 0; t < tokens; ++t)
    positionBuffer.store(0, t, static_cast<double>(positions[t]));
  int64_t rotaryDim = c.rotaryDim ? c.rotaryDim : d;
  int64_t tableStride = rotaryDim + 4;
  std::vector<float> tableValues =
      makeRopeTable(c.ropeTheta, rotaryDim, tableRows, tableStride);
  GuardedBuffer table(ElementType::f32, tableRows, rotaryDim, tableStride);
  table.fill(getInputGuard(ElementType::f32));
  std::vector<float> contiguousTable;
  for (int64_t p = 0; p < tableRows; ++p)
    for (int64_t col = 0; col < rotaryDim; ++col) {
      table.store(p, col, tableValues[p * tableStride + col]);
      contiguousTable.push_back(tableValues[p * tableStride + col]);
    }

  std::vector<std::vector<uint8_t>> before;
  std::vector<const GuardedBuffer *> inputs = {&qWeight, &kWeight, &offsets,
                                               &positionBuffer, &table};
  for (const auto &buffer : {qkv.get(), q.get(), k.get(), v.get()})
    if (buffer)
      inputs.push_back(buffer);
  for (const GuardedBuffer *buffer : inputs)
    before.push_back(buffer->snapshot());

  // Prepared keys: the K-prepare kernel writes them (poisoned first) from k,
  // and the attention kernel reads them instead of k.
  GuardedBuffer prepared(c.type, tokens, kvCols, kvCols + 24);
  prepared.fill(getOutputPoison(c.type));
  if (c.preparedKeys) {
    OpSpec keySpec = getKeyPrepareSpec(spec);
    AttentionRunner keyRunner;
    Status keyCompiled =
        keyRunner.compile(keySpec, getHeuristicLaunch(keySpec, -1));
    ASSERT_TRUE(keyCompiled) << keyCompiled.message();
    std::vector<SimBuffer> keyBuffers;
    std::vector<int64_t> keyIntegers;
    for (const KernelParam &param : keyRunner.getSignature().params) {
      const std::string &n = param.name;
      switch (param.kind) {
      case KernelParam::Kind::Rows:
        keyIntegers.push_back(tokens);
        continue;
      case KernelParam::Kind::Batch:
        keyIntegers.push_back(batch);
        continue;
      case KernelParam::Kind::RopeTableRows:
        keyIntegers.push_back(tableRows);
        continue;
      case KernelParam::Kind::RowStride:
        keyIntegers.push_back(n == "k_stride"            ? kStride
                              : n == "k_out_stride"      ? prepared.getStride()
                              : n == "rope_table_stride" ? table.getStride()
                                                         : -1);
        ASSERT_GE(keyIntegers.back(), 0) << "unexpected parameter " << n;
        continue;
      default:
        break;
      }
      SimBuffer buffer =
          n == "k"            ? SimBuffer{const_cast<void *>(kData), kBytes}
          : n == "k_weight"   ? SimBuffer{kWeight.data(),
                                          kWeight.getBytesFromData()}
          : n == "positions"  ? SimBuffer{positionBuffer.data(),
                                          positionBuffer.getBytesFromData()}
          : n == "cu_seqlens" ? SimBuffer{offsets.data(),
                                          offsets.getBytesFromData()}
          : n == "rope_table" ? SimBuffer{table.data(),
                                          table.getBytesFromData()}
          : n == "k_out"      ? SimBuffer{prepared.data(),
                                          prepared.getBytesFromData()}
                              : SimBuffer();
      ASSERT_NE(buffer.data, nullptr) << "unexpected parameter " << n;
      keyBuffers.push_back(buffer);
    }
    // One kernel row per token and kv head.
    Status keysRan = keyRunner.launch(
        keyBuffers, keyIntegers, keyRunner.getSignature().getGridX(tokens, 1));
    ASSERT_TRUE(keysRan) << keysRan.message();
    EXPECT_EQ(prepared.findStrayWrite(getOutputPoison(c.type)), std::nullopt);
  }
  const void *attentionK = c.preparedKeys ? prepared.data() : kData;
  int64_t attentionKBytes =
      c.preparedKeys ? prepared.getBytesFromData() : kBytes;
  int64_t attentionKStride = c.preparedKeys ? prepared.getStride() : kStride;

  // Parameters in signature order.
  std::vector<SimBuffer> buffers;
  std::vector<int64_t> integers;
  for (const KernelParam &param : signature.params) {
    if (param.kind == KernelParam::Kind::Rows) {
      integers.push_back(tokens);
      continue;
    }
    if (param.kind == KernelParam::Kind::Batch) {
      integers.push_back(batch);
      continue;
    }
    if (param.kind == KernelParam::Kind::RopeTableRows) {
      integers.push_back(tableRows);
      continue;
    }
    if (param.kind == KernelParam::Kind::RowStride) {
      const std::string &n = param.name;
      integers.push_back(n == "q_stride"            ? qStride
                         : n == "k_stride"          ? attentionKStride
                         : n == "v_stride"          ? vStride
                         : n == "output_stride"     ? output.getStride()
                         : n == "rope_table_stride" ? table.getStride()
                                                    : lse.getStride());
      continue;
    }
    const std::string &n = param.name;
    auto whole = [](GuardedBuffer &buffer) {
      return SimBuffer{buffer.data(), buffer.getBytesFromData()};
    };
    auto slice = [](const void *data, int64_t bytes) {
      return SimBuffer{const_cast<void *>(data), bytes};
    };
    SimBuffer buffer = n == "q"            ? slice(qData, qBytes)
                       : n == "k"          ? slice(attentionK, attentionKBytes)
                       : n == "v"          ? slice(vData, vBytes)
                       : n == "q_weight"   ? whole(qWeight)
                       : n == "k_weight"   ? whole(kWeight)
                       : n == "cu_seqlens" ? whole(offsets)
                       : n == "positions"  ? whole(positionBuffer)
                       : n == "rope_table" ? whole(table)
                       : n == "output"     ? whole(output)
                       : n == "lse"        ? whole(lse)
                                           : SimBuffer();
    ASSERT_NE(buffer.data, nullptr) << "unexpected parameter " << n;
    buffers.push_back(buffer);
  }
  Status ran = runner.launch(buffers, integers,
                             signature.getGridX(tokens, batch));
  ASSERT_TRUE(ran) << ran.message();

  // The reference of the unfused graph.
  AttentionProblem problem;
  problem.type = c.type;
  problem.numHeads = c.heads;
  problem.numKvHeads = c.kvHeads;
  problem.headDim = d;
  problem.causal = c.causal;
  problem.scale = spec.scale;
  if (c.norm != Statistic::None)
    problem.qkNorm = c.norm;
  problem.qkEps = spec.eps;
  problem.qkOffset = c.offset;
  problem.cuSeqlens = cu;
  problem.rope = c.rope;
  problem.rotaryDim = c.rotaryDim;
  problem.ropeTheta = c.ropeTheta;
  problem.ropeFirst = c.ropeFirst;
  problem.qkWeightPerHead = c.weightPerHead;
  if (c.positions)
    problem.positions = referencePositions;
  if (c.table)
    problem.ropeTable = contiguousTable;
  AttentionOperands operands;
  operands.q = {c.type, qData, tokens, qCols, qStride};
  operands.k = {c.type, kData, tokens, kvCols, kStride};
  operands.v = {c.type, vData, tokens, kvCols, vStride};
  if (c.weights) {
    operands.qWeight = qWeight.paramView();
    operands.kWeight = kWeight.paramView();
  }
  Status valid = verifyAttentionProblem(problem, operands);
  ASSERT_TRUE(valid) << valid.message();
  AttentionExpected expected = referenceAttention(problem, operands);

  int64_t wrong = 0;
  std::string first;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < qCols; ++col) {
      double actual = output.load(t, col);
      // A query outside the table: NaN, whatever the reference says.
      if (poisoned[t]) {
        if (!std::isnan(actual) && !wrong++)
          first = "output[" + std::to_string(t) + "][" + std::to_string(col) +
                  "] = " + std::to_string(actual) +
                  ", expected NaN (its position lies outside the table)";
        continue;
      }
      const Expected &e = expected.output.at(t, col);
      if (e.accepts(actual))
        continue;
      if (!wrong++)
        first = "output[" + std::to_string(t) + "][" + std::to_string(col) +
                "] = " + std::to_string(actual) + ", expected " +
                std::to_string(e.value) + " +- " + std::to_string(e.tolerance);
    }
  if (c.lse)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < c.heads; ++h) {
        if (poisoned[t])
          continue;
        double actual = lse.load(t, h);
        const Expected &e = expected.lse.at(h, t);
        if (e.accepts(actual))
          continue;
        if (!wrong++)
          first = "lse[" + std::to_string(t) + "][" + std::to_string(h) +
                  "] = " + std::to_string(actual) + ", expected " +
                  std::to_string(e.value) + " +- " +
                  std::to_string(e.tolerance);
      }
  EXPECT_EQ(wrong, 0) << "first: " << first << " (" << signature.name << ")";

  EXPECT_EQ(output.findStrayWrite(getOutputPoison(c.type)), std::nullopt);
  if (c.lse) {
    EXPECT_EQ(lse.findStrayWrite(getOutputPoison(ElementType::f32)),
              std::nullopt);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(inputs[i]->matches(before[i])) << "input " << i << " changed";
}

const Statistic kRms = Statistic::RMS, kL2 = Statistic::L2,
                kMeanVar = Statistic::MeanVar, kNone = Statistic::None;
const ElementType kBf16 = ElementType::bf16, kF16 = ElementType::f16;
const RopeStyle kNeoX = RopeStyle::NeoX, kGptJ = RopeStyle::GptJ;

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionKernelTest,
    testing::Values(
        // Qwen3-like: RMS QK-Norm, GQA 4, causal, every tile tail.
        AttentionCase{"qwen3_d128_gqa4_causal", kBf16, 128, 8, 2, true, kRms,
                      true, 0.0, {1, 7, 64, 129}},
        // Gemma 3: (1 + w), one KV head (GQA 8), head dim 256.
        AttentionCase{"gemma_d256_mqa_causal", kBf16, 256, 8, 1, true, kRms,
                      true, 1.0, {70, 33}},
        AttentionCase{"l2_d64_f16_noncausal", kF16, 64, 4, 4, false, kL2,
                      false, 0.0, {65, 1, 30}},
        AttentionCase{"layernorm_d96_gqa8", kBf16, 96, 8, 1, true, kMeanVar,
                      true, 0.0, {40, 17}, /*packed=*/true, /*lse=*/true},
        AttentionCase{"plain_d128_packed_lse", kF16, 128, 4, 2, true, kNone,
                      false, 0.0, {129, 3}, /*packed=*/true, /*lse=*/true},
        AttentionCase{"long_d64_causal", kBf16, 64, 1, 1, true, kRms, true,
                      0.0, {1030}},
        AttentionCase{"long_d128_gqa2_f16", kF16, 128, 2, 1, false, kRms,
                      true, 0.0, {1100}},
        // An empty sequence in the batch, and one of a single token.
        AttentionCase{"varlen_empty_d64_gqa8", kBf16, 64, 8, 1, true, kL2,
                      true, 0.0, {7, 0, 1, 64}},
        // Launch shapes: 8 warps, the narrowest and widest key tiles, one
        // stage, one warp (at most 16 K/V copies a thread:
        // kMaxAttentionCopiesPerThread).
        AttentionCase{"w8_n16_s1", kBf16, 128, 2, 1, true, kRms, true, 0.0,
                      {150, 9}, false, true, 8, 16, 1},
        AttentionCase{"w4_n128_s2", kF16, 64, 2, 2, false, kRms, false, 0.0,
                      {200}, false, false, 4, 128, 2},
        AttentionCase{"w1_n32_s1_layernorm", kBf16, 64, 1, 1, false, kMeanVar,
                      true, 1.0, {33}, false, true, 1, 32, 1},
        // Rotary embeddings after the QK-Norm: Qwen3 (theta 1e6), Gemma 3
        // (1e4 local layers), ChatGLM's interleaved half, a long f16
        // sequence (angles to 1100 rad), gptj on a packed projection with
        // the narrowest tiles.
        withRope(AttentionCase{"rope_neox_qwen3_d128_gqa4", kBf16, 128, 8, 2,
                               true, kRms, true, 0.0, {1, 7, 64, 129}},
                 kNeoX, 0, 1e6),
        withRope(AttentionCase{"rope_neox_gemma_d256", kBf16, 256, 4, 1, true,
                               kRms, true, 1.0, {70, 33}},
                 kNeoX, 0, 1e4),
        withRope(AttentionCase{"rope_gptj_half_d128_f16", kF16, 128, 4, 2,
                               true, kNone, false, 0.0, {65, 130}},
                 kGptJ, 64, 1e4),
        withRope(AttentionCase{"rope_neox_d96_long_f16", kF16, 96, 2, 1, true,
                               kRms, true, 0.0, {1100}},
                 kNeoX, 0, 1e6),
        withRope(AttentionCase{"rope_gptj_d64_packed_w8_n16", kBf16, 64, 2, 2,
                               false, kL2, false, 0.0, {150, 3}, true, true,
                               8, 16, 1},
                 kGptJ, 32, 1e4),
        // Angles from a table (Llama 3.1's scaled frequencies) and
        // positions from a buffer: a chunked prefill's offsets, sequences
        // backwards; NeoX with GQA 4 and every tile tail, GPT-J over part
        // of the head, positions alone with theta, and positions outside
        // the table (their rows NaN, nothing else).
        withRopeTable(AttentionCase{"table_pos_neox_d128_gqa4", kBf16, 128, 8,
                                    2, true, kRms, true, 0.0, {1, 7, 64, 129}},
                      kNeoX, 0, /*positions=*/true),
        withRopeTable(AttentionCase{"table_gptj_half_d64_f16", kF16, 64, 2, 1,
                                    false, kL2, false, 0.0, {65, 20}},
                      kGptJ, 32, /*positions=*/false),
        withRopePositions(AttentionCase{"pos_theta_neox_d256_mqa", kBf16, 256,
                                        4, 1, true, kRms, true, 1.0,
                                        {33, 70}},
                          kNeoX, 128, 1e4),
        withRopeTable(AttentionCase{"table_bad_positions_nan", kBf16, 128, 2,
                                    1, true, kRms, true, 0.0, {5, 9, 40}},
                      kNeoX, 0, /*positions=*/true, /*badPositions=*/true),
        // Rotary dims whose pairs do not fill 16-byte chunks, turned a pair
        // at a time: StableLM-3B (20 of 80, per-head LayerNorm), GPT-NeoX-20B
        // (24 of 96), 31 GPT-J pairs over 4 slots of a head-64 row's
        // threads, from a table with positions.
        withRope(AttentionCase{"rope_neox_stablelm_d80", kBf16, 80, 4, 4, true,
                               kMeanVar, true, 0.0, {37, 70}},
                 kNeoX, 20, 1e4),
        withRope(AttentionCase{"rope_neox_neox20b_d96_f16", kF16, 96, 4, 2,
                               false, kNone, false, 0.0, {65, 3}},
                 kNeoX, 24, 1e4),
        withRopeTable(AttentionCase{"table_pos_gptj_rot62_d64", kBf16, 64, 2,
                                    1, true, kRms, true, 1.0, {40, 17}},
                      kGptJ, 62, /*positions=*/true),
        // Rotated, then normalized: Llama 4 (L2 QK-Norm without weights,
        // theta 5e5, GQA 5; a whole-row rotation keeps the L2 norm, so the
        // order shows in the roundings only), and a weighted RMS norm of a
        // partial GPT-J rotation in f16, where it shows.
        withRopeFirst(AttentionCase{"rope_first_llama4_l2_d128", kBf16, 128,
                                    10, 2, true, kL2, false, 0.0,
                                    {1, 70, 129}},
                      kNeoX, 0, 5e5),
        withRopeFirst(AttentionCase{"rope_first_rms_gptj_d64_f16", kF16, 64,
                                    4, 4, false, kRms, true, 0.0, {50, 9}},
                      kGptJ, 32, 1e4),
        // A weight row per head: Command R+ (LayerNorm QK-Norm, GQA 4, head
        // dim 128, NeoX), and RMS with Gemma's offset on one KV head.
        withWeightPerHead(withRope(
            AttentionCase{"per_head_weights_cohere_d128", kBf16, 128, 8, 2,
                          true, kMeanVar, true, 0.0, {1, 66, 130}},
            kNeoX, 0, 7.5e7)),
        withWeightPerHead(AttentionCase{"per_head_weights_offset_mqa_d64",
                                        kF16, 64, 4, 1, false, kRms, true,
                                        1.0, {40, 17}}),
        // Prepared keys (K-prepare, then attention normalizing and
        // rotating q alone) against the same unfused graph: Qwen 3 with
        // every tile tail (keys turned by their index within each
        // sequence), Gemma 3 on one KV head, an L2 norm without weights in
        // f16 and an empty sequence, Command R+'s weights per head, Llama
        // 4's rotate-then-norm, a table with positions, StableLM's partial
        // rotation, and a rotation without QK-Norm.
        withPreparedKeys(withRope(AttentionCase{"", kBf16, 128, 8, 2, true,
                                                kRms, true, 0.0,
                                                {1, 7, 64, 129}},
                                  kNeoX, 0, 1e6),
                         "prepared_qwen3_d128_gqa4"),
        withPreparedKeys(withRope(AttentionCase{"", kBf16, 256, 8, 1, true,
                                                kRms, true, 1.0, {70, 33}},
                                  kNeoX, 0, 1e4),
                         "prepared_gemma_d256_mqa"),
        withPreparedKeys(AttentionCase{"", kF16, 64, 4, 4, false, kL2, false,
                                       0.0, {65, 0, 1, 30}},
                         "prepared_l2_d64_f16_varlen"),
        withPreparedKeys(
            withWeightPerHead(withRope(
                AttentionCase{"", kBf16, 128, 8, 2, true, kMeanVar, true, 0.0,
                              {1, 66, 130}, /*packed=*/true},
                kNeoX, 0, 7.5e7)),
            "prepared_cohere_per_head_packed"),
        withPreparedKeys(
            withRopeFirst(AttentionCase{"", kBf16, 128, 10, 2, true, kL2,
                                        false, 0.0, {1, 70, 129}},
                          kNeoX, 0, 5e5),
            "prepared_rope_first_llama4"),
        withPreparedKeys(
            withRopeTable(AttentionCase{"", kBf16, 64, 2, 1, true, kRms, true,
                                        1.0, {40, 17}},
                          kGptJ, 62, /*positions=*/true),
            "prepared_table_pos_gptj_rot62"),
        withPreparedKeys(withRope(AttentionCase{"", kBf16, 80, 4, 4, true,
                                                kMeanVar, true, 0.0,
                                                {37, 0, 70}},
                                  kNeoX, 20, 1e4),
                         "prepared_stablelm_d80"),
        withPreparedKeys(withRope(AttentionCase{"", kF16, 96, 4, 2, false,
                                                kNone, false, 0.0, {65, 3}},
                                  kNeoX, 24, 1e4),
                         "prepared_rope_only_d96_f16"),
        // 32 query rows a warp (two m16 tiles share each K and V fragment;
        // the heuristic's at head dim 64): every tile tail of 128-row CTAs
        // with the causal diagonal inside a warp's rows, head dim 96 with
        // 32 keys, 80 (padded rows, copies of partial rows) with one
        // stage, 8 warps, prepared keys; and 16 rows at head dim 64.
        withRowTiles(AttentionCase{"", kBf16, 96, 8, 2, true, kRms, true, 0.0,
                                   {1, 127, 128, 129, 300}, false, true, 4,
                                   32, 2},
                     2, "rows32_d96_n32_gqa4_causal_lse"),
        withRowTiles(AttentionCase{"", kF16, 80, 2, 1, false, kL2, false,
                                   0.0, {200, 17}, false, false, 4, 32, 1},
                     2, "rows32_d80_n32_s1_noncausal"),
        withRowTiles(AttentionCase{"", kBf16, 64, 4, 4, true, kMeanVar, true,
                                   1.0, {257, 0, 40}, true, false, 8, 64, 2},
                     2, "rows32_d64_w8_packed_varlen"),
        withPreparedKeys(
            withRowTiles(withRope(AttentionCase{"", kBf16, 64, 8, 2, true,
                                                kRms, true, 0.0,
                                                {1, 129, 260}},
                                  kNeoX, 0, 1e6),
                         2, ""),
            "prepared_rows32_d64_gqa4"),
        withRowTiles(AttentionCase{"", kBf16, 64, 4, 2, true, kRms, true, 0.0,
                                   {70, 130}},
                     1, "rows16_d64_causal"),
        // A batch of 37 sequences (empty ones first, between and last; 1 to
        // 200 tokens): each CTA's binary search over the slots of the
        // sequences, causal tiles longest first.
        AttentionCase{"varlen_37_sequences_causal", kBf16, 64, 4, 1, true,
                      kL2, false, 0.0,
                      {0, 0, 1, 2, 3, 127, 128, 129, 0, 5, 64, 65, 200, 7,
                       0, 31, 33, 1, 1, 150, 16, 17, 90, 0, 3, 66, 129, 12,
                       2, 45, 0, 8, 9, 130, 1, 40, 0}}),
    [](const testing::TestParamInfo<AttentionCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
