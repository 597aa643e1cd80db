//===- AttentionDecodeTest.cpp - the decode kernel on the CPU -------------===//
//
// The generated decode attention kernel (norm.attention_decode_kernel) on
// the host execution path against the float64 reference of the unfused
// sequence (QK-Norm, RoPE at the cache positions, cache append, attention):
// caches of several lengths (empty, one row, tile tails, over 1000, full),
// one or several new tokens per sequence, GQA ratios 1 to 32, every split
// count from one to more splits than key tiles (empty ranges), launch
// shapes. Outputs and the workspace are poisoned first; every cache row
// but the appended ones, the gaps and the guards must stay as they were,
// inputs unchanged, the semaphores zero again; a second launch gives the
// same bits (the combine is deterministic).
//
//===----------------------------------------------------------------------===//

#include "compiler/model/AttentionReference.h"
#include "compiler/model/Buffers.h"
#include "compiler/model/FloatFormats.h"
#include "test/Unit/AttentionHarness.h"
#include "tools/norm-cpu-check/Buffers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

using namespace norm;
using namespace norm::check;

namespace {

struct DecodeCase {
  const char *name;
  ElementType type;
  int64_t headDim, heads, kvHeads;
  Statistic norm; // None: no QK-Norm
  bool weights;
  double offset;
  RopeStyle rope;
  int64_t rotaryDim; // 0: the head dim
  double ropeTheta;
  std::vector<int64_t> cacheLengths, newTokens;
  int64_t capacity, splits;
  // 0: the heuristic's.
  int64_t warps = 0, blockN = 0, stages = 0;
  // The angles from a (Llama 3 scaled) table of theta's frequencies; the
  // positions from a buffer (each new token 5 past its cache position).
  bool table = false, positions = false;
  // Rotate, then normalize (Llama 4).
  bool ropeFirst = false;
  // A QK-Norm weight row per head (Command R+).
  bool weightPerHead = false;
};

/// `c` rotated before its QK-Norm.
DecodeCase withRopeFirst(DecodeCase c) {
  c.ropeFirst = true;
  return c;
}

/// `c` with a QK-Norm weight row per head.
DecodeCase withWeightPerHead(DecodeCase c) {
  c.weightPerHead = true;
  return c;
}

/// `c` with a rope table and, if asked, explicit positions.
DecodeCase withTable(DecodeCase c, bool positions) {
  c.table = true;
  c.positions = positions;
  return c;
}

std::ostream &operator<<(std::ostream &os, const DecodeCase &c) {
  return os << c.name;
}

OpSpec getSpec(const DecodeCase &c) {
  OpSpec spec = makeAttentionSpec(OpKind::AttentionDecode, c.type, c.headDim,
                                  c.heads, c.kvHeads, c.norm, c.weights,
                                  c.offset, c.rope, c.rotaryDim, c.ropeTheta);
  spec.ropeTable = c.table;
  spec.ropePositions = c.positions;
  spec.ropeFirst = c.ropeFirst;
  spec.qkWeightPerHead = c.weightPerHead;
  return spec;
}

class AttentionDecodeTest : public testing::TestWithParam<DecodeCase> {};

TEST_P(AttentionDecodeTest, MatchesTheUnfusedSequence) {
  const DecodeCase &c = GetParam();
  OpSpec spec = getSpec(c);
  LaunchConfig launch = getForcedLaunch(spec, c.warps, c.blockN, c.stages);
  AttentionRunner runner;
  Status compiled = runner.compile(spec, launch);
  ASSERT_TRUE(compiled) << compiled.message();
  const KernelSignature &signature = runner.getSignature();

  int64_t d = c.headDim, qCols = c.heads * d, kvCols = c.kvHeads * d;
  int64_t batch = c.newTokens.size(), capacity = c.capacity;
  std::vector<int64_t> cu = {0};
  for (int64_t count : c.newTokens)
    cu.push_back(cu.back() + count);
  int64_t tokens = cu.back();

  Random random(0xdec0de + d * 7 + c.heads);
  auto draw = [&](int64_t) { return random.uniform(-2.0, 2.0); };
  GuardedBuffer q(c.type, tokens, qCols, qCols + 8);
  GuardedBuffer k(c.type, tokens, kvCols, kvCols + 16);
  GuardedBuffer v(c.type, tokens, kvCols, kvCols);
  for (GuardedBuffer *buffer : {&q, &k, &v}) {
    buffer->fill(getInputGuard(c.type));
    buffer->fillRows(draw);
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
  GuardedBuffer lengths(ElementType::i32, 1, batch, batch);
  for (GuardedBuffer *buffer : {&offsets, &lengths})
    buffer->fill(getInputGuard(ElementType::i32));
  for (int64_t i = 0; i <= batch; ++i)
    offsets.store(0, i, static_cast<double>(cu[i]));
  for (int64_t i = 0; i < batch; ++i)
    lengths.store(0, i, static_cast<double>(c.cacheLengths[i]));

  // Positions and the table of their angles.
  std::vector<int64_t> positions(tokens);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t)
      positions[t] = c.cacheLengths[b] + (t - cu[b]) + (c.positions ? 5 : 0);
  GuardedBuffer positionBuffer(ElementType::i32, 1, tokens, tokens);
  positionBuffer.fill(getInputGuard(ElementType::i32));
  for (int64_t t = 0; t < tokens; ++t)
    positionBuffer.store(0, t, static_cast<double>(positions[t]));
  int64_t rotaryDim = c.rotaryDim ? c.rotaryDim : d;
  int64_t tableRows =
      *std::max_element(positions.begin(), positions.end()) + 2;
  std::vector<float> tableValues =
      makeRopeTable(c.ropeTheta, rotaryDim, tableRows, rotaryDim);
  GuardedBuffer table(ElementType::f32, tableRows, rotaryDim, rotaryDim);
  table.fill(getInputGuard(ElementType::f32));
  for (int64_t p = 0; p < tableRows; ++p)
    for (int64_t col = 0; col < rotaryDim; ++col)
      table.store(p, col, tableValues[p * rotaryDim + col]);

  // The caches: every row holds values (rows past a sequence's length
  // too, which the kernel must neither read nor write), and a copy of
  // what they must hold afterwards.
  int64_t cacheRows = batch * capacity;
  auto makeCache = [&](uint64_t seed) {
    auto cache = std::make_unique<GuardedBuffer>(c.type, cacheRows, kvCols,
                                                 kvCols + 8);
    cache->fill(getInputGuard(c.type));
    Random values(seed);
    cache->fillRows([&](int64_t) { return values.uniform(-2.5, 2.5); });
    return cache;
  };
  std::unique_ptr<GuardedBuffer> kCache = makeCache(1), vCache = makeCache(2);
  std::unique_ptr<GuardedBuffer> kWant = makeCache(1), vWant = makeCache(2);

  DecodeShape shape{tokens, batch, capacity, c.splits};
  int64_t rowsPerCta = signature.launch.rowsPerCta;
  int64_t workspaceLength =
      getLaunchLength(spec, BufferSlot::Workspace, rowsPerCta, shape);
  int64_t semaphoreCount =
      getLaunchLength(spec, BufferSlot::Semaphores, rowsPerCta, shape);
  GuardedBuffer workspace(ElementType::f32, 1, std::max<int64_t>(
                                                   workspaceLength, 1),
                          std::max<int64_t>(workspaceLength, 1));
  workspace.fill(getOutputPoison(ElementType::f32));
  GuardedBuffer semaphores(ElementType::i32, 1, semaphoreCount, semaphoreCount);
  semaphores.fill(getInputGuard(ElementType::i32));
  semaphores.fillRows([](int64_t) { return 0.0; });
  std::vector<uint8_t> zeroSemaphores = semaphores.snapshot();
  GuardedBuffer output(c.type, tokens, qCols, qCols + 8);

  std::vector<const GuardedBuffer *> inputs = {&q,       &k,      &v,
                                               &qWeight, &kWeight, &offsets,
                                               &lengths, &positionBuffer,
                                               &table};
  std::vector<std::vector<uint8_t>> before;
  for (const GuardedBuffer *buffer : inputs)
    before.push_back(buffer->snapshot());

  std::map<std::string, GuardedBuffer *> byName = {
      {"q", &q},
      {"k", &k},
      {"v", &v},
      {"q_weight", &qWeight},
      {"k_weight", &kWeight},
      {"cu_seqlens", &offsets},
      {"cache_seqlens", &lengths},
      {"positions", &positionBuffer},
      {"rope_table", &table},
      {"output", &output},
      {"k_cache", kCache.get()},
      {"v_cache", vCache.get()},
      {"workspace", &workspace},
      {"semaphores", &semaphores}};
  std::vector<SimBuffer> buffers;
  std::vector<int64_t> integers;
  for (const KernelParam &param : signature.params) {
    switch (param.kind) {
    case KernelParam::Kind::Rows:
      integers.push_back(tokens);
      continue;
    case KernelParam::Kind::Batch:
      integers.push_back(batch);
      continue;
    case KernelParam::Kind::KvSplits:
      integers.push_back(c.splits);
      continue;
    case KernelParam::Kind::CacheCapacity:
      integers.push_back(capacity);
      continue;
    case KernelParam::Kind::RopeTableRows:
      integers.push_back(tableRows);
      continue;
    case KernelParam::Kind::RowStride: {
      std::string buffer = param.name.substr(0, param.name.size() - 7);
      ASSERT_TRUE(byName.count(buffer)) << "unexpected " << param.name;
      integers.push_back(byName[buffer]->getStride());
      continue;
    }
    case KernelParam::Kind::Buffer:
      ASSERT_TRUE(byName.count(param.name)) << "unexpected " << param.name;
      buffers.push_back({byName[param.name]->data(),
                         byName[param.name]->getBytesFromData()});
      continue;
    }
  }
  int64_t grid = signature.getGridX(tokens, batch, c.splits);
  std::vector<uint8_t> firstOutput;
  for (int run = 0; run < 2; ++run) {
    output.fill(getOutputPoison(c.type));
    Status ran = runner.launch(buffers, integers, grid);
    ASSERT_TRUE(ran) << ran.message();
    EXPECT_TRUE(semaphores.matches(zeroSemaphores))
        << "semaphores not reset after launch " << run;
    if (run == 0)
      firstOutput = output.snapshot();
    else
      EXPECT_TRUE(output.matches(firstOutput)) << "a second launch differs";
  }

  DecodeProblem problem;
  AttentionProblem &step = problem.step;
  step.type = c.type;
  step.numHeads = c.heads;
  step.numKvHeads = c.kvHeads;
  step.headDim = d;
  step.scale = spec.scale;
  if (c.norm != Statistic::None)
    step.qkNorm = c.norm;
  step.qkEps = spec.eps;
  step.qkOffset = c.offset;
  step.cuSeqlens = cu;
  step.rope = spec.rope;
  step.rotaryDim = spec.rotaryDim;
  step.ropeTheta = spec.ropeTheta;
  step.ropeFirst = spec.ropeFirst;
  step.qkWeightPerHead = spec.qkWeightPerHead;
  if (c.positions)
    step.positions = positions;
  if (c.table)
    step.ropeTable = tableValues;
  problem.cacheSeqlens = c.cacheLengths;
  problem.cacheCapacity = capacity;
  DecodeOperands operands;
  operands.step.q = q.view();
  operands.step.k = k.view();
  operands.step.v = v.view();
  if (c.weights) {
    operands.step.qWeight = qWeight.paramView();
    operands.step.kWeight = kWeight.paramView();
  }
  operands.kCache = kWant->view();
  operands.vCache = vWant->view();
  Status valid = verifyDecodeProblem(problem, operands);
  ASSERT_TRUE(valid) << valid.message();
  DecodeExpected expected = referenceDecode(problem, operands);

  int64_t wrong = 0;
  std::string first;
  auto check = [&](const Expected &e, double actual, const std::string &what) {
    if (e.accepts(actual))
      return true;
    if (!wrong++)
      first = what + " = " + std::to_string(actual) + ", expected " +
              std::to_string(e.value) + " +- " + std::to_string(e.tolerance);
    return false;
  };
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < qCols; ++col)
      check(expected.output.at(t, col), output.load(t, col),
            "output[" + std::to_string(t) + "][" + std::to_string(col) + "]");
  // The appended rows; the copies take the kernel's value where the
  // reference allows either neighbour, and must then match byte for byte.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t) {
      // Rows past the capacity are dropped: the next sequence's stay.
      if (c.cacheLengths[b] + (t - cu[b]) >= capacity)
        continue;
      int64_t row = b * capacity + c.cacheLengths[b] + (t - cu[b]);
      for (auto [cache, want, rows] :
           {std::tuple{kCache.get(), kWant.get(), &expected.kAppended},
            std::tuple{vCache.get(), vWant.get(), &expected.vAppended}})
        for (int64_t col = 0; col < kvCols; ++col) {
          const Expected &e = rows->at(t, col);
          double actual = cache->load(row, col);
          bool ok = check(e, actual,
                          std::string(cache == kCache.get() ? "k" : "v") +
                              "_cache[" + std::to_string(row) + "][" +
                              std::to_string(col) + "]");
          want->store(row, col, ok && e.tolerance > 0 ? actual : e.value);
        }
    }
  EXPECT_EQ(wrong, 0) << "first: " << first << " (" << signature.name << ")";
  EXPECT_TRUE(kCache->matches(kWant->snapshot()))
      << "k_cache changed outside the appended rows";
  EXPECT_TRUE(vCache->matches(vWant->snapshot()))
      << "v_cache changed outside the appended rows";
  EXPECT_EQ(output.findStrayWrite(getOutputPoison(c.type)), std::nullopt);
  EXPECT_EQ(workspace.findStrayWrite(getOutputPoison(ElementType::f32)),
            std::nullopt);
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(inputs[i]->matches(before[i])) << "input " << i << " changed";
}

const Statistic kRms = Statistic::RMS, kL2 = Statistic::L2,
                kMeanVar = Statistic::MeanVar, kNone = Statistic::None;
const ElementType kBf16 = ElementType::bf16, kF16 = ElementType::f16;
const RopeStyle kNeoX = RopeStyle::NeoX, kGptJ = RopeStyle::GptJ,
                kNoRope = RopeStyle::None;

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionDecodeTest,
    testing::Values(
        // Qwen3: RMS QK-Norm, NeoX at theta 1e6, GQA 4; an empty cache, one
        // row, a tile tail, two tiles and a bit; one split and three.
        DecodeCase{"qwen3_d128_gqa4", kBf16, 128, 8, 2, kRms, true, 0.0,
                   kNeoX, 0, 1e6, {0, 1, 63, 130}, {1, 1, 1, 1}, 160, 1},
        DecodeCase{"qwen3_d128_gqa4_split3", kBf16, 128, 8, 2, kRms, true,
                   0.0, kNeoX, 0, 1e6, {0, 1, 63, 130}, {1, 1, 1, 1}, 160, 3},
        // Gemma 3: (1 + w), one KV head for 8, head dim 256, a cache over
        // 1000 rows in 4 splits.
        DecodeCase{"gemma_d256_mqa_split4", kBf16, 256, 8, 1, kRms, true, 1.0,
                   kNeoX, 0, 1e4, {1030, 7}, {1, 1}, 1100, 4},
        // Speculative decoding: several new tokens per sequence, causal
        // among themselves; f16, L2 norm, GPT-J's interleaved half.
        DecodeCase{"draft_d64_f16_l2_gptj", kF16, 64, 4, 4, kL2, false, 0.0,
                   kGptJ, 32, 1e4, {5, 64}, {3, 4}, 80, 2},
        // No QK-Norm, no rotation; head dim 96; more splits than the cache
        // fills (the last ones hold no cache keys).
        DecodeCase{"plain_d96_gqa8_split5", kBf16, 96, 8, 1, kNone, false,
                   0.0, kNoRope, 0, 0, {200}, {2}, 256, 5},
        DecodeCase{"short_cache_many_splits", kF16, 128, 4, 2, kMeanVar, true,
                   0.0, kNeoX, 64, 1e4, {10, 0}, {1, 2}, 16, 4},
        // 32 query heads on one KV head: two tokens a tile of 4 warps.
        DecodeCase{"mqa32_d128", kBf16, 128, 32, 1, kRms, true, 0.0, kNeoX, 0,
                   1e6, {100, 0}, {1, 1}, 128, 2},
        // A full cache: of 3 new tokens, the first fills it and the others
        // are attended to but not appended (the next sequence's rows stay).
        DecodeCase{"full_cache_drops_rows", kBf16, 64, 4, 2, kRms, true, 0.0,
                   kNeoX, 0, 1e4, {7, 2}, {3, 1}, 8, 2},
        // Launch shapes: 4 warps (several tokens a tile), the narrowest
        // key tiles, one stage.
        DecodeCase{"w4_n16_s1", kBf16, 128, 4, 1, kRms, true, 0.0, kNeoX, 0,
                   1e4, {70, 33}, {2, 5}, 96, 3, 4, 16, 1},
        // Angles from a table (Llama 3.1's scaled frequencies), at the
        // cache positions and at explicit ones; GPT-J over part of the head.
        withTable(DecodeCase{"table_neox_d128_gqa4", kBf16, 128, 8, 2, kRms,
                             true, 0.0, kNeoX, 0, 5e5, {0, 63, 130},
                             {1, 2, 1}, 160, 3},
                  /*positions=*/false),
        withTable(DecodeCase{"table_pos_gptj_d64_f16", kF16, 64, 4, 1, kL2,
                             false, 0.0, kGptJ, 32, 1e4, {5, 64}, {3, 1}, 80,
                             2},
                  /*positions=*/true),
        // Pairs one at a time: StableLM-3B's 20 of 80 (per-head LayerNorm),
        // and 10 GPT-J pairs from a table.
        DecodeCase{"stablelm_d80_rot20", kBf16, 80, 4, 4, kMeanVar, true, 0.0,
                   kNeoX, 20, 1e4, {40, 3}, {1, 2}, 64, 2},
        withTable(DecodeCase{"table_gptj_rot20_d64", kBf16, 64, 4, 2, kRms,
                             true, 0.0, kGptJ, 20, 1e4, {30, 0}, {2, 1}, 48,
                             1},
                  /*positions=*/false),
        // Rotated, then normalized: Llama 4's L2 QK-Norm (GQA 5, theta 5e5)
        // over 2 splits (a whole-row rotation keeps the L2 norm: the order
        // shows in the roundings only), and a weighted RMS norm of half
        // rotated rows, where the order shows.
        withRopeFirst(DecodeCase{"llama4_rope_first_l2", kBf16, 128, 10, 2,
                                 kL2, false, 0.0, kNeoX, 0, 5e5, {90, 4},
                                 {1, 2}, 128, 2}),
        withRopeFirst(DecodeCase{"rope_first_rms_half_gqa4", kBf16, 128, 8,
                                 2, kRms, true, 0.0, kNeoX, 64, 1e4, {40, 7},
                                 {2, 1}, 64, 1}),
        // A weight row per head (Command R+: LayerNorm, GQA 4): the query
        // rows of a tile span the heads of a group, each with its own; and
        // rotated first.
        withWeightPerHead(DecodeCase{"per_head_weights_cohere", kBf16, 128,
                                     8, 2, kMeanVar, true, 0.0, kNeoX, 0,
                                     7.5e7, {50, 3}, {2, 1}, 64, 2}),
        withWeightPerHead(withRopeFirst(
            DecodeCase{"per_head_weights_rope_first", kF16, 64, 4, 2, kRms,
                       true, 1.0, kGptJ, 32, 1e4, {20, 0}, {1, 3}, 32, 1}))),
    [](const testing::TestParamInfo<DecodeCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
