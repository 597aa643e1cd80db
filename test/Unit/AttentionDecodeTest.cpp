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
// same bits (the combine is deterministic). K-prepare into the caches
// (write_cache) must append the same rows, from every case; and both over
// paged caches of every block size (Paged, PagedKeyPrepare), their
// tables also in FlashInfer's ragged form (RaggedPages,
// RaggedPagesKeyPrepare), and e4m3
// caches with their scales (Fp8, Fp8KeyPrepare).
//
//===----------------------------------------------------------------------===//

#include "test/Unit/AttentionHarness.h"

#include <gtest/gtest.h>

using namespace norm;
using namespace norm::check;

// In the case's namespace, where gtest looks to print a failing case.
namespace norm::check {
static std::ostream &operator<<(std::ostream &os, const DecodeCase &c) {
  return os << c.name;
}
} // namespace norm::check

namespace {

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

/// A serving batch of `count` sequences, past the 256 that take the search
/// for a CTA's sequence three rounds: caches of 0 to 40 rows (some full),
/// one new token each and two for every seventh.
DecodeCase getServingBatch(const char *name, int64_t count) {
  DecodeCase c{name,
               ElementType::bf16,
               64,
               4,
               1,
               Statistic::RMS,
               true,
               0.0,
               RopeStyle::NeoX,
               0,
               1e6,
               {},
               {},
               40,
               2};
  for (int64_t i = 0; i < count; ++i) {
    c.cacheLengths.push_back(i % 13 == 0 ? 40 : (i * 5) % 37);
    c.newTokens.push_back(i % 7 == 0 ? 2 : 1);
  }
  return c;
}

/// The K-prepare kernel into the caches of each case, in place of decode.
std::vector<DecodeCase> withKeysOnly(std::vector<DecodeCase> cases) {
  for (DecodeCase &c : cases)
    c.keysOnly = true;
  return cases;
}

/// `cases` over paged caches (shuffled block tables, spare pages, pages
/// only the append reaches unset or past the cache), every block size in
/// turn: SGLang's 1 to 256.
std::vector<DecodeCase> withPages(std::vector<DecodeCase> cases) {
  static constexpr int64_t kBlockSizes[] = {16, 1, 64, 256, 8, 32, 128, 2};
  for (size_t i = 0; i < cases.size(); ++i)
    cases[i].blockSize = kBlockSizes[i % std::size(kBlockSizes)];
  return cases;
}

/// `cases` over paged caches whose tables are FlashInfer's ragged ones
/// (kv_indptr, kv_indices): every other sequence without the pages only
/// its append would reach, unused pages around the table.
std::vector<DecodeCase> withRaggedPages(std::vector<DecodeCase> cases) {
  cases = withPages(cases);
  for (DecodeCase &c : cases)
    c.pageIndptr = true;
  return cases;
}

/// `cases` over e4m3 caches: one scale and one per kv head in turn (a
/// second kv head's small enough to saturate), contiguous and paged.
std::vector<DecodeCase> withFp8(std::vector<DecodeCase> cases) {
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].fp8Cache = true;
    cases[i].scalePerHead = i % 2;
    cases[i].blockSize = i % 3 == 2 ? 16 : 0;
    // Forced key tiles within what an FP8 cache's registers hold.
    if (cases[i].blockN)
      cases[i].blockN =
          std::min(cases[i].blockN, getMaxFp8DecodeBlockN(cases[i].headDim));
  }
  return cases;
}

class AttentionDecodeTest : public testing::TestWithParam<DecodeCase> {};

TEST_P(AttentionDecodeTest, MatchesTheUnfusedSequence) {
  AttentionEngine engine;
  Status selected = getEngineFromEnvironment(engine);
  ASSERT_TRUE(selected) << selected.message();
  AttentionResult result = runDecodeCase(GetParam(), engine);
  EXPECT_TRUE(result.ok()) << result.getMessage() << " (" << result.kernel
                           << ")";
}

const Statistic kRms = Statistic::RMS, kL2 = Statistic::L2,
                kMeanVar = Statistic::MeanVar, kNone = Statistic::None;
const ElementType kBf16 = ElementType::bf16, kF16 = ElementType::f16;
const RopeStyle kNeoX = RopeStyle::NeoX, kGptJ = RopeStyle::GptJ,
                kNoRope = RopeStyle::None;

const std::vector<DecodeCase> kCases = {
    // Qwen3: RMS QK-Norm, NeoX at theta 1e6, GQA 4; an empty cache, one
    // row, a tile tail, two tiles and a bit; one split and three.
    DecodeCase{"qwen3_d128_gqa4",
               kBf16,
               128,
               8,
               2,
               kRms,
               true,
               0.0,
               kNeoX,
               0,
               1e6,
               {0, 1, 63, 130},
               {1, 1, 1, 1},
               160,
               1},
    DecodeCase{"qwen3_d128_gqa4_split3",
               kBf16,
               128,
               8,
               2,
               kRms,
               true,
               0.0,
               kNeoX,
               0,
               1e6,
               {0, 1, 63, 130},
               {1, 1, 1, 1},
               160,
               3},
    // Gemma 3: (1 + w), one KV head for 8, head dim 256, a cache over
    // 1000 rows in 4 splits.
    DecodeCase{"gemma_d256_mqa_split4",
               kBf16,
               256,
               8,
               1,
               kRms,
               true,
               1.0,
               kNeoX,
               0,
               1e4,
               {1030, 7},
               {1, 1},
               1100,
               4},
    // Speculative decoding: several new tokens per sequence, causal
    // among themselves; f16, L2 norm, GPT-J's interleaved half.
    DecodeCase{"draft_d64_f16_l2_gptj",
               kF16,
               64,
               4,
               4,
               kL2,
               false,
               0.0,
               kGptJ,
               32,
               1e4,
               {5, 64},
               {3, 4},
               80,
               2},
    // No QK-Norm, no rotation; head dim 96; more splits than the cache
    // fills (the last ones hold no cache keys).
    DecodeCase{"plain_d96_gqa8_split5",
               kBf16,
               96,
               8,
               1,
               kNone,
               false,
               0.0,
               kNoRope,
               0,
               0,
               {200},
               {2},
               256,
               5},
    DecodeCase{"short_cache_many_splits",
               kF16,
               128,
               4,
               2,
               kMeanVar,
               true,
               0.0,
               kNeoX,
               64,
               1e4,
               {10, 0},
               {1, 2},
               16,
               4},
    // 32 query heads on one KV head: two tokens a tile of 4 warps.
    DecodeCase{"mqa32_d128",
               kBf16,
               128,
               32,
               1,
               kRms,
               true,
               0.0,
               kNeoX,
               0,
               1e6,
               {100, 0},
               {1, 1},
               128,
               2},
    // A full cache: of 3 new tokens, the first fills it and the others
    // are attended to but not appended (the next sequence's rows stay).
    DecodeCase{"full_cache_drops_rows",
               kBf16,
               64,
               4,
               2,
               kRms,
               true,
               0.0,
               kNeoX,
               0,
               1e4,
               {7, 2},
               {3, 1},
               8,
               2},
    // Launch shapes: 4 warps (several tokens a tile), the narrowest
    // key tiles, one stage.
    DecodeCase{"w4_n16_s1",
               kBf16,
               128,
               4,
               1,
               kRms,
               true,
               0.0,
               kNeoX,
               0,
               1e4,
               {70, 33},
               {2, 5},
               96,
               3,
               4,
               16,
               1},
    // 8 warps that split key tiles of 128 into slices of 16 (one token's 4
    // query heads a tile), the cache's tail in a partial slice.
    DecodeCase{"w8_key_slices_d64",
               kBf16,
               64,
               4,
               1,
               kRms,
               true,
               0.0,
               kNeoX,
               0,
               1e4,
               {300, 45, 0},
               {1, 1, 1},
               384,
               2,
               8,
               128,
               2},
    // Angles from a table (Llama 3.1's scaled frequencies), at the
    // cache positions and at explicit ones; GPT-J over part of the head.
    withTable(DecodeCase{"table_neox_d128_gqa4",
                         kBf16,
                         128,
                         8,
                         2,
                         kRms,
                         true,
                         0.0,
                         kNeoX,
                         0,
                         5e5,
                         {0, 63, 130},
                         {1, 2, 1},
                         160,
                         3},
              /*positions=*/false),
    withTable(DecodeCase{"table_pos_gptj_d64_f16",
                         kF16,
                         64,
                         4,
                         1,
                         kL2,
                         false,
                         0.0,
                         kGptJ,
                         32,
                         1e4,
                         {5, 64},
                         {3, 1},
                         80,
                         2},
              /*positions=*/true),
    // Pairs one at a time: StableLM-3B's 20 of 80 (per-head LayerNorm),
    // and 10 GPT-J pairs from a table.
    DecodeCase{"stablelm_d80_rot20",
               kBf16,
               80,
               4,
               4,
               kMeanVar,
               true,
               0.0,
               kNeoX,
               20,
               1e4,
               {40, 3},
               {1, 2},
               64,
               2},
    withTable(DecodeCase{"table_gptj_rot20_d64",
                         kBf16,
                         64,
                         4,
                         2,
                         kRms,
                         true,
                         0.0,
                         kGptJ,
                         20,
                         1e4,
                         {30, 0},
                         {2, 1},
                         48,
                         1},
              /*positions=*/false),
    // Rotated, then normalized: Llama 4's L2 QK-Norm (GQA 5, theta 5e5)
    // over 2 splits (a whole-row rotation keeps the L2 norm: the order
    // shows in the roundings only), and a weighted RMS norm of half
    // rotated rows, where the order shows.
    withRopeFirst(DecodeCase{"llama4_rope_first_l2",
                             kBf16,
                             128,
                             10,
                             2,
                             kL2,
                             false,
                             0.0,
                             kNeoX,
                             0,
                             5e5,
                             {90, 4},
                             {1, 2},
                             128,
                             2}),
    withRopeFirst(DecodeCase{"rope_first_rms_half_gqa4",
                             kBf16,
                             128,
                             8,
                             2,
                             kRms,
                             true,
                             0.0,
                             kNeoX,
                             64,
                             1e4,
                             {40, 7},
                             {2, 1},
                             64,
                             1}),
    // A weight row per head (Command R+: LayerNorm, GQA 4): the query
    // rows of a tile span the heads of a group, each with its own; and
    // rotated first.
    withWeightPerHead(DecodeCase{"per_head_weights_cohere",
                                 kBf16,
                                 128,
                                 8,
                                 2,
                                 kMeanVar,
                                 true,
                                 0.0,
                                 kNeoX,
                                 0,
                                 7.5e7,
                                 {50, 3},
                                 {2, 1},
                                 64,
                                 2}),
    withWeightPerHead(withRopeFirst(DecodeCase{"per_head_weights_rope_first",
                                               kF16,
                                               64,
                                               4,
                                               2,
                                               kRms,
                                               true,
                                               1.0,
                                               kGptJ,
                                               32,
                                               1e4,
                                               {20, 0},
                                               {1, 3},
                                               32,
                                               1})),
    getServingBatch("serving_300_sequences", 300)};

std::string getCaseName(const testing::TestParamInfo<DecodeCase> &info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionDecodeTest, testing::ValuesIn(kCases),
                         getCaseName);
INSTANTIATE_TEST_SUITE_P(KeyPrepareCache, AttentionDecodeTest,
                         testing::ValuesIn(withKeysOnly(kCases)), getCaseName);
INSTANTIATE_TEST_SUITE_P(Paged, AttentionDecodeTest,
                         testing::ValuesIn(withPages(kCases)), getCaseName);
INSTANTIATE_TEST_SUITE_P(PagedKeyPrepare, AttentionDecodeTest,
                         testing::ValuesIn(withKeysOnly(withPages(kCases))),
                         getCaseName);
INSTANTIATE_TEST_SUITE_P(RaggedPages, AttentionDecodeTest,
                         testing::ValuesIn(withRaggedPages(kCases)),
                         getCaseName);
INSTANTIATE_TEST_SUITE_P(
    RaggedPagesKeyPrepare, AttentionDecodeTest,
    testing::ValuesIn(withKeysOnly(withRaggedPages(kCases))), getCaseName);
INSTANTIATE_TEST_SUITE_P(Fp8, AttentionDecodeTest,
                         testing::ValuesIn(withFp8(kCases)), getCaseName);
INSTANTIATE_TEST_SUITE_P(Fp8KeyPrepare, AttentionDecodeTest,
                         testing::ValuesIn(withKeysOnly(withFp8(kCases))),
                         getCaseName);

} // namespace
