//===- KeyPrepareCacheTest.cpp - K-prepare into a KV cache on the CPU -----===//
//
// The generated K-prepare kernel with write_cache (norm.k_prepare with a
// cache) on the host execution path, or on GPGPU-Sim as the environment
// selects: each new token's key, normalized and rotated at its cache
// position, and its value must land in the row after its sequence's cached
// rows and match the float64 reference of the unfused graph (QK-Norm,
// rounding, RoPE, rounding); rows past the capacity are dropped, stored
// lengths outside [0, capacity] clamp as decode attention reads them. Every
// other cache row, the gaps and the guards must stay as they were, the
// inputs unchanged.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/FloatFormats.h"
#include "compiler/model/Reference.h"
#include "test/Unit/AttentionHarness.h"
#include "tools/norm-cpu-check/Buffers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

using namespace norm;
using namespace norm::check;

namespace {

struct CacheCase {
  const char *name;
  ElementType type;
  int64_t headDim, kvHeads;
  Statistic norm; // None: rope alone
  bool weights;
  double offset;
  RopeStyle rope;
  int64_t rotaryDim; // 0: the head dim
  // Stored lengths (clamped to [0, capacity] by the kernel) and new tokens
  // per sequence; the capacity of each.
  std::vector<int64_t> cacheLengths, newTokens;
  int64_t capacity;
  // Angles from a table; positions from a buffer (7 past the cache's).
  bool table = false, positions = false;
  bool ropeFirst = false, weightPerHead = false;
};

std::ostream &operator<<(std::ostream &os, const CacheCase &c) {
  return os << c.name;
}

CacheCase withTable(CacheCase c, bool positions) {
  c.table = true;
  c.positions = positions;
  return c;
}

OpSpec getSpec(const CacheCase &c) {
  OpSpec attention = makeAttentionSpec(
      OpKind::Attention, c.type, c.headDim, /*heads=*/c.kvHeads, c.kvHeads,
      c.norm, c.weights, c.offset, c.rope, c.rotaryDim, /*theta=*/1e6);
  attention.ropeTable = c.table;
  attention.ropePositions = c.positions;
  attention.ropeFirst = c.ropeFirst;
  attention.qkWeightPerHead = c.weightPerHead;
  OpSpec spec = getKeyPrepareSpec(attention);
  spec.writeCache = true;
  return spec;
}

class KeyPrepareCacheTest : public testing::TestWithParam<CacheCase> {};

TEST_P(KeyPrepareCacheTest, AppendsThePreparedRows) {
  const CacheCase &c = GetParam();
  OpSpec spec = getSpec(c);
  ASSERT_TRUE(verifyOpSpec(spec)) << verifyOpSpec(spec).message();
  AttentionRunner runner;
  Status compiled = runner.compile(spec, getHeuristicLaunch(spec, -1));
  ASSERT_TRUE(compiled) << compiled.message();
  const KernelSignature &signature = runner.getSignature();

  int64_t d = c.headDim, kvCols = c.kvHeads * d;
  int64_t batch = c.newTokens.size(), capacity = c.capacity;
  std::vector<int64_t> cu = {0}, stored;
  for (int64_t count : c.newTokens)
    cu.push_back(cu.back() + count);
  for (int64_t length : c.cacheLengths)
    stored.push_back(std::clamp<int64_t>(length, 0, capacity));
  int64_t tokens = cu.back();

  Random random(0xcac4e + d * 5 + c.kvHeads);
  GuardedBuffer k(c.type, tokens, kvCols, kvCols + 16);
  GuardedBuffer v(c.type, tokens, kvCols, kvCols + 8);
  for (GuardedBuffer *buffer : {&k, &v}) {
    buffer->fill(getInputGuard(c.type));
    buffer->fillRows([&](int64_t) { return random.uniform(-2.0, 2.0); });
  }
  // An outlier channel and a constant row (LayerNorm's zero variance).
  if (tokens > 1)
    for (int64_t col = 0; col < kvCols; ++col) {
      k.store(0, col, col % d == 3 ? 96.0 : k.load(0, col));
      k.store(1, col, 0.75);
    }
  int64_t weights = d * (c.weightPerHead ? c.kvHeads : 1);
  GuardedBuffer kWeight(c.type, 1, weights, weights);
  kWeight.fill(getInputGuard(c.type));
  kWeight.fillRows([&](int64_t) { return random.uniform(-0.5, 1.5); });
  GuardedBuffer offsets(ElementType::i32, 1, batch + 1, batch + 1);
  GuardedBuffer lengths(ElementType::i32, 1, batch, batch);
  for (GuardedBuffer *buffer : {&offsets, &lengths})
    buffer->fill(getInputGuard(ElementType::i32));
  for (int64_t i = 0; i <= batch; ++i)
    offsets.store(0, i, static_cast<double>(cu[i]));
  for (int64_t i = 0; i < batch; ++i)
    lengths.store(0, i, static_cast<double>(c.cacheLengths[i]));

  // Each token at its cache position (or 7 past it, from the buffer).
  std::vector<int64_t> positions(tokens);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t)
      positions[t] = stored[b] + (t - cu[b]) + (c.positions ? 7 : 0);
  GuardedBuffer positionBuffer(ElementType::i32, 1, tokens, tokens);
  positionBuffer.fill(getInputGuard(ElementType::i32));
  for (int64_t t = 0; t < tokens; ++t)
    positionBuffer.store(0, t, static_cast<double>(positions[t]));
  int64_t rotaryDim = spec.rotaryDim ? spec.rotaryDim : d;
  int64_t tableRows = *std::max_element(positions.begin(), positions.end()) + 2;
  std::vector<float> tableValues =
      makeRopeTable(1e6, rotaryDim, tableRows, rotaryDim);
  GuardedBuffer table(ElementType::f32, tableRows, rotaryDim, rotaryDim + 4);
  table.fill(getInputGuard(ElementType::f32));
  for (int64_t p = 0; p < tableRows; ++p)
    for (int64_t col = 0; col < rotaryDim; ++col)
      table.store(p, col, tableValues[p * rotaryDim + col]);

  // Every cache row holds values, and a copy holds what they must hold
  // afterwards.
  auto makeCache = [&](uint64_t seed) {
    auto cache = std::make_unique<GuardedBuffer>(c.type, batch * capacity,
                                                 kvCols, kvCols + 8);
    cache->fill(getInputGuard(c.type));
    Random values(seed);
    cache->fillRows([&](int64_t) { return values.uniform(-2.5, 2.5); });
    return cache;
  };
  std::unique_ptr<GuardedBuffer> kCache = makeCache(1), vCache = makeCache(2);
  std::unique_ptr<GuardedBuffer> kWant = makeCache(1), vWant = makeCache(2);

  std::vector<const GuardedBuffer *> inputs = {
      &k, &v, &kWeight, &offsets, &lengths, &positionBuffer, &table};
  std::vector<std::vector<uint8_t>> before;
  for (const GuardedBuffer *buffer : inputs)
    before.push_back(buffer->snapshot());

  std::map<std::string, GuardedBuffer *> byName = {
      {"k", &k},
      {"v", &v},
      {"k_weight", &kWeight},
      {"cu_seqlens", &offsets},
      {"cache_seqlens", &lengths},
      {"positions", &positionBuffer},
      {"rope_table", &table},
      {"k_cache", kCache.get()},
      {"v_cache", vCache.get()}};
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
      buffers.push_back(
          {byName[param.name]->data(), byName[param.name]->getBytesFromData()});
      continue;
    default:
      FAIL() << "unexpected parameter " << param.name;
    }
  }
  Status ran =
      runner.launch(buffers, integers, signature.getGridX(tokens, batch));
  ASSERT_TRUE(ran) << ran.message();

  // The reference: K-prepare's rows at the positions above.
  OpSpec reference = spec;
  reference.writeCache = false;
  QKNormRotary rotary;
  if (spec.rope != RopeStyle::None)
    rotary.positions = positions;
  if (c.table)
    rotary.table = tableValues;
  QKNormExpected expected =
      referenceQKNorm(reference, k.view(), ParamView(),
                      c.weights ? kWeight.paramView() : ParamView(), rotary);

  int64_t wrong = 0, appended = 0;
  std::string first;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t) {
      int64_t at = stored[b] + (t - cu[b]);
      if (at >= capacity)
        continue; // dropped: the next sequence's rows stay
      int64_t row = b * capacity + at;
      ++appended;
      for (int64_t col = 0; col < kvCols; ++col) {
        // Keys within the reference's bound (the copy takes the kernel's
        // value where it allows either neighbour), values bit for bit.
        const Expected &e = expected.k.at(t, col);
        double key = kCache->load(row, col);
        if (!e.accepts(key) && !wrong++)
          first = "k_cache[" + std::to_string(row) + "][" +
                  std::to_string(col) + "] = " + std::to_string(key) +
                  ", expected " + std::to_string(e.value) + " +- " +
                  std::to_string(e.tolerance);
        kWant->store(row, col, e.accepts(key) ? key : e.value);
        vWant->store(row, col, v.load(t, col));
      }
    }
  EXPECT_GT(appended, 0) << "a case that appends nothing checks nothing";
  EXPECT_EQ(wrong, 0) << "first: " << first << " (" << signature.name << ")";
  EXPECT_TRUE(kCache->matches(kWant->snapshot()))
      << "k_cache changed outside the appended rows";
  EXPECT_TRUE(vCache->matches(vWant->snapshot()))
      << "v_cache differs from v's bits or changed outside the appended "
         "rows";
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(inputs[i]->matches(before[i])) << "input " << i << " changed";
}

const Statistic kRms = Statistic::RMS, kL2 = Statistic::L2,
                kMeanVar = Statistic::MeanVar, kNone = Statistic::None;
const ElementType kBf16 = ElementType::bf16, kF16 = ElementType::f16;
const RopeStyle kNeoX = RopeStyle::NeoX, kGptJ = RopeStyle::GptJ,
                kNoRope = RopeStyle::None;

INSTANTIATE_TEST_SUITE_P(
    Shapes, KeyPrepareCacheTest,
    testing::Values(
        // Qwen3's chunked prefill: RMS with weights, NeoX, 8 kv heads; an
        // empty cache, a partial one, one that fills up (its last tokens
        // dropped), an empty chunk.
        CacheCase{"qwen3_d128_kv8",
                  kBf16,
                  128,
                  8,
                  kRms,
                  true,
                  0.0,
                  kNeoX,
                  0,
                  {0, 37, 60, 5},
                  {9, 20, 9, 0},
                  64},
        // Gemma's (1 + w), head dim 256, one kv head; stored lengths out
        // of range (negative, past the capacity) clamp.
        CacheCase{"gemma_d256_mqa_clamped",
                  kBf16,
                  256,
                  1,
                  kRms,
                  true,
                  1.0,
                  kNeoX,
                  0,
                  {-3, 40, 7},
                  {3, 2, 4},
                  32},
        // LayerNorm QK-Norm, GPT-J over half the head, f16.
        CacheCase{"layer_gptj_half_f16",
                  kF16,
                  64,
                  2,
                  kMeanVar,
                  true,
                  0.0,
                  kGptJ,
                  32,
                  {3, 0},
                  {17, 5},
                  24},
        // Rotation alone (no QK-Norm), StableLM's 20 of 80.
        CacheCase{"rope_only_d80_rot20",
                  kBf16,
                  80,
                  4,
                  kNone,
                  false,
                  0.0,
                  kNeoX,
                  20,
                  {10},
                  {12},
                  40},
        // No rotation: the L2 norm and the cache write alone.
        CacheCase{"l2_no_rope",
                  kBf16,
                  64,
                  2,
                  kL2,
                  false,
                  0.0,
                  kNoRope,
                  0,
                  {2, 9},
                  {5, 3},
                  16},
        // Angles from a table at the cache positions, and at explicit
        // positions from a buffer.
        withTable(CacheCase{"table_neox_d128",
                            kBf16,
                            128,
                            2,
                            kRms,
                            true,
                            0.0,
                            kNeoX,
                            0,
                            {5, 70},
                            {6, 3},
                            80},
                  /*positions=*/false),
        withTable(CacheCase{"table_positions_gptj_d64",
                            kF16,
                            64,
                            1,
                            kL2,
                            false,
                            0.0,
                            kGptJ,
                            64,
                            {0, 8},
                            {4, 4},
                            16},
                  /*positions=*/true),
        [] {
          // Llama 4: rotated, then the L2 norm.
          CacheCase c{"llama4_rope_first",
                      kBf16,
                      128,
                      2,
                      kL2,
                      false,
                      0.0,
                      kNeoX,
                      0,
                      {4, 0},
                      {3, 5},
                      16};
          c.ropeFirst = true;
          return c;
        }(),
        [] {
          // Command R+: a weight row per kv head.
          CacheCase c{"per_head_weights",
                      kBf16,
                      128,
                      4,
                      kMeanVar,
                      true,
                      0.0,
                      kNeoX,
                      0,
                      {1, 2},
                      {2, 2},
                      8};
          c.weightPerHead = true;
          return c;
        }()),
    [](const testing::TestParamInfo<CacheCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
