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

#include "test/Unit/AttentionHarness.h"

#include <gtest/gtest.h>

using namespace norm;
using namespace norm::check;

// In the case's namespace, where gtest looks to print a failing case.
namespace norm::check {
static std::ostream &operator<<(std::ostream &os, const AttentionCase &c) {
  return os << c.name;
}
} // namespace norm::check

namespace {

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

/// `c` in the sm_90a family: `warpgroups` consumer warpgroups, key tiles of
/// `blockN` in `stages` stages, the softmax overlapped where asked.
AttentionCase withWarpgroups(AttentionCase c, int64_t warpgroups,
                             int64_t blockN, int64_t stages, bool overlap,
                             const char *name) {
  c.warpgroups = warpgroups;
  c.blockN = blockN;
  c.stages = stages;
  c.overlap = overlap;
  c.name = name;
  return c;
}

/// `c` with adversarial inputs (AttentionCase::adversarial).
AttentionCase withAdversarialInputs(AttentionCase c) {
  c.adversarial = true;
  return c;
}

/// `count` sequence lengths that walk every round of the 16-way search for
/// a CTA's sequence (three rounds past 256 sequences): mostly 0 to 3 tokens,
/// runs of empty sequences, and a tile and more at the rounds' edges
/// (sequences 15-17, 255-257 and the last).
std::vector<int64_t> getManyLengths(int64_t count) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < count; ++i)
    lengths.push_back(i % 11 < 3 ? 0 : (i * 7) % 4);
  for (int64_t i :
       {int64_t(15), int64_t(17), int64_t(255), int64_t(257), count - 1})
    if (i < count)
      lengths[i] = 60 + i % 80;
  return lengths;
}

class AttentionKernelTest : public testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionKernelTest, MatchesTheUnfusedGraph) {
  AttentionEngine engine;
  Status selected = getEngineFromEnvironment(engine);
  ASSERT_TRUE(selected) << selected.message();
  AttentionResult result = runAttentionCase(GetParam(), engine);
  EXPECT_TRUE(result.ok()) << result.getMessage() << " (" << result.kernel
                           << ")";
}

const Statistic kRms = Statistic::RMS, kL2 = Statistic::L2,
                kMeanVar = Statistic::MeanVar, kNone = Statistic::None;
const ElementType kBf16 = ElementType::bf16, kF16 = ElementType::f16;
const RopeStyle kNeoX = RopeStyle::NeoX, kGptJ = RopeStyle::GptJ;

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionKernelTest,
    testing::Values(
        // Qwen3-like: RMS QK-Norm, GQA 4, causal, every tile tail.
        AttentionCase{"qwen3_d128_gqa4_causal",
                      kBf16,
                      128,
                      8,
                      2,
                      true,
                      kRms,
                      true,
                      0.0,
                      {1, 7, 64, 129}},
        // Gemma 3: (1 + w), one KV head (GQA 8), head dim 256.
        AttentionCase{"gemma_d256_mqa_causal",
                      kBf16,
                      256,
                      8,
                      1,
                      true,
                      kRms,
                      true,
                      1.0,
                      {70, 33}},
        AttentionCase{"l2_d64_f16_noncausal",
                      kF16,
                      64,
                      4,
                      4,
                      false,
                      kL2,
                      false,
                      0.0,
                      {65, 1, 30}},
        AttentionCase{"layernorm_d96_gqa8",
                      kBf16,
                      96,
                      8,
                      1,
                      true,
                      kMeanVar,
                      true,
                      0.0,
                      {40, 17},
                      /*packed=*/true,
                      /*lse=*/true},
        AttentionCase{"plain_d128_packed_lse",
                      kF16,
                      128,
                      4,
                      2,
                      true,
                      kNone,
                      false,
                      0.0,
                      {129, 3},
                      /*packed=*/true,
                      /*lse=*/true},
        AttentionCase{
            "long_d64_causal", kBf16, 64, 1, 1, true, kRms, true, 0.0, {1030}},
        AttentionCase{"long_d128_gqa2_f16",
                      kF16,
                      128,
                      2,
                      1,
                      false,
                      kRms,
                      true,
                      0.0,
                      {1100}},
        // An empty sequence in the batch, and one of a single token.
        AttentionCase{"varlen_empty_d64_gqa8",
                      kBf16,
                      64,
                      8,
                      1,
                      true,
                      kL2,
                      true,
                      0.0,
                      {7, 0, 1, 64}},
        // Launch shapes: 8 warps, the narrowest and widest key tiles, one
        // stage, one warp (at most 16 K/V copies a thread:
        // kMaxAttentionCopiesPerThread).
        AttentionCase{"w8_n16_s1",
                      kBf16,
                      128,
                      2,
                      1,
                      true,
                      kRms,
                      true,
                      0.0,
                      {150, 9},
                      false,
                      true,
                      8,
                      16,
                      1},
        AttentionCase{"w4_n128_s2",
                      kF16,
                      64,
                      2,
                      2,
                      false,
                      kRms,
                      false,
                      0.0,
                      {200},
                      false,
                      false,
                      4,
                      128,
                      2},
        AttentionCase{"w1_n32_s1_layernorm",
                      kBf16,
                      64,
                      1,
                      1,
                      false,
                      kMeanVar,
                      true,
                      1.0,
                      {33},
                      false,
                      true,
                      1,
                      32,
                      1},
        // Rotary embeddings after the QK-Norm: Qwen3 (theta 1e6), Gemma 3
        // (1e4 local layers), ChatGLM's interleaved half, a long f16
        // sequence (angles to 1100 rad), gptj on a packed projection with
        // the narrowest tiles.
        withRope(AttentionCase{"rope_neox_qwen3_d128_gqa4",
                               kBf16,
                               128,
                               8,
                               2,
                               true,
                               kRms,
                               true,
                               0.0,
                               {1, 7, 64, 129}},
                 kNeoX, 0, 1e6),
        withRope(AttentionCase{"rope_neox_gemma_d256",
                               kBf16,
                               256,
                               4,
                               1,
                               true,
                               kRms,
                               true,
                               1.0,
                               {70, 33}},
                 kNeoX, 0, 1e4),
        withRope(AttentionCase{"rope_gptj_half_d128_f16",
                               kF16,
                               128,
                               4,
                               2,
                               true,
                               kNone,
                               false,
                               0.0,
                               {65, 130}},
                 kGptJ, 64, 1e4),
        withRope(AttentionCase{"rope_neox_d96_long_f16",
                               kF16,
                               96,
                               2,
                               1,
                               true,
                               kRms,
                               true,
                               0.0,
                               {1100}},
                 kNeoX, 0, 1e6),
        withRope(AttentionCase{"rope_gptj_d64_packed_w8_n16",
                               kBf16,
                               64,
                               2,
                               2,
                               false,
                               kL2,
                               false,
                               0.0,
                               {150, 3},
                               true,
                               true,
                               8,
                               16,
                               1},
                 kGptJ, 32, 1e4),
        // Angles from a table (Llama 3.1's scaled frequencies) and
        // positions from a buffer: a chunked prefill's offsets, sequences
        // backwards; NeoX with GQA 4 and every tile tail, GPT-J over part
        // of the head, positions alone with theta, and positions outside
        // the table (their rows NaN, nothing else).
        withRopeTable(AttentionCase{"table_pos_neox_d128_gqa4",
                                    kBf16,
                                    128,
                                    8,
                                    2,
                                    true,
                                    kRms,
                                    true,
                                    0.0,
                                    {1, 7, 64, 129}},
                      kNeoX, 0, /*positions=*/true),
        withRopeTable(AttentionCase{"table_gptj_half_d64_f16",
                                    kF16,
                                    64,
                                    2,
                                    1,
                                    false,
                                    kL2,
                                    false,
                                    0.0,
                                    {65, 20}},
                      kGptJ, 32, /*positions=*/false),
        withRopePositions(AttentionCase{"pos_theta_neox_d256_mqa",
                                        kBf16,
                                        256,
                                        4,
                                        1,
                                        true,
                                        kRms,
                                        true,
                                        1.0,
                                        {33, 70}},
                          kNeoX, 128, 1e4),
        withRopeTable(AttentionCase{"table_bad_positions_nan",
                                    kBf16,
                                    128,
                                    2,
                                    1,
                                    true,
                                    kRms,
                                    true,
                                    0.0,
                                    {5, 9, 40}},
                      kNeoX, 0, /*positions=*/true, /*badPositions=*/true),
        // Rotary dims whose pairs do not fill 16-byte chunks, turned a pair
        // at a time: StableLM-3B (20 of 80, per-head LayerNorm), GPT-NeoX-20B
        // (24 of 96), 31 GPT-J pairs over 4 slots of a head-64 row's
        // threads, from a table with positions.
        withRope(AttentionCase{"rope_neox_stablelm_d80",
                               kBf16,
                               80,
                               4,
                               4,
                               true,
                               kMeanVar,
                               true,
                               0.0,
                               {37, 70}},
                 kNeoX, 20, 1e4),
        withRope(AttentionCase{"rope_neox_neox20b_d96_f16",
                               kF16,
                               96,
                               4,
                               2,
                               false,
                               kNone,
                               false,
                               0.0,
                               {65, 3}},
                 kNeoX, 24, 1e4),
        withRopeTable(AttentionCase{"table_pos_gptj_rot62_d64",
                                    kBf16,
                                    64,
                                    2,
                                    1,
                                    true,
                                    kRms,
                                    true,
                                    1.0,
                                    {40, 17}},
                      kGptJ, 62, /*positions=*/true),
        // Rotated, then normalized: Llama 4 (L2 QK-Norm without weights,
        // theta 5e5, GQA 5; a whole-row rotation keeps the L2 norm, so the
        // order shows in the roundings only), and a weighted RMS norm of a
        // partial GPT-J rotation in f16, where it shows.
        withRopeFirst(AttentionCase{"rope_first_llama4_l2_d128",
                                    kBf16,
                                    128,
                                    10,
                                    2,
                                    true,
                                    kL2,
                                    false,
                                    0.0,
                                    {1, 70, 129}},
                      kNeoX, 0, 5e5),
        withRopeFirst(AttentionCase{"rope_first_rms_gptj_d64_f16",
                                    kF16,
                                    64,
                                    4,
                                    4,
                                    false,
                                    kRms,
                                    true,
                                    0.0,
                                    {50, 9}},
                      kGptJ, 32, 1e4),
        // A weight row per head: Command R+ (LayerNorm QK-Norm, GQA 4, head
        // dim 128, NeoX), and RMS with Gemma's offset on one KV head.
        withWeightPerHead(withRope(AttentionCase{"per_head_weights_cohere_d128",
                                                 kBf16,
                                                 128,
                                                 8,
                                                 2,
                                                 true,
                                                 kMeanVar,
                                                 true,
                                                 0.0,
                                                 {1, 66, 130}},
                                   kNeoX, 0, 7.5e7)),
        withWeightPerHead(AttentionCase{"per_head_weights_offset_mqa_d64",
                                        kF16,
                                        64,
                                        4,
                                        1,
                                        false,
                                        kRms,
                                        true,
                                        1.0,
                                        {40, 17}}),
        // Prepared keys (K-prepare, then attention normalizing and
        // rotating q alone) against the same unfused graph: Qwen 3 with
        // every tile tail (keys turned by their index within each
        // sequence), Gemma 3 on one KV head, an L2 norm without weights in
        // f16 and an empty sequence, Command R+'s weights per head, Llama
        // 4's rotate-then-norm, a table with positions, StableLM's partial
        // rotation, and a rotation without QK-Norm.
        withPreparedKeys(withRope(AttentionCase{"",
                                                kBf16,
                                                128,
                                                8,
                                                2,
                                                true,
                                                kRms,
                                                true,
                                                0.0,
                                                {1, 7, 64, 129}},
                                  kNeoX, 0, 1e6),
                         "prepared_qwen3_d128_gqa4"),
        withPreparedKeys(
            withRope(
                AttentionCase{
                    "", kBf16, 256, 8, 1, true, kRms, true, 1.0, {70, 33}},
                kNeoX, 0, 1e4),
            "prepared_gemma_d256_mqa"),
        withPreparedKeys(
            AttentionCase{
                "", kF16, 64, 4, 4, false, kL2, false, 0.0, {65, 0, 1, 30}},
            "prepared_l2_d64_f16_varlen"),
        withPreparedKeys(
            withWeightPerHead(withRope(AttentionCase{"",
                                                     kBf16,
                                                     128,
                                                     8,
                                                     2,
                                                     true,
                                                     kMeanVar,
                                                     true,
                                                     0.0,
                                                     {1, 66, 130},
                                                     /*packed=*/true},
                                       kNeoX, 0, 7.5e7)),
            "prepared_cohere_per_head_packed"),
        withPreparedKeys(
            withRopeFirst(
                AttentionCase{
                    "", kBf16, 128, 10, 2, true, kL2, false, 0.0, {1, 70, 129}},
                kNeoX, 0, 5e5),
            "prepared_rope_first_llama4"),
        withPreparedKeys(
            withRopeTable(
                AttentionCase{
                    "", kBf16, 64, 2, 1, true, kRms, true, 1.0, {40, 17}},
                kGptJ, 62, /*positions=*/true),
            "prepared_table_pos_gptj_rot62"),
        withPreparedKeys(withRope(AttentionCase{"",
                                                kBf16,
                                                80,
                                                4,
                                                4,
                                                true,
                                                kMeanVar,
                                                true,
                                                0.0,
                                                {37, 0, 70}},
                                  kNeoX, 20, 1e4),
                         "prepared_stablelm_d80"),
        withPreparedKeys(
            withRope(
                AttentionCase{
                    "", kF16, 96, 4, 2, false, kNone, false, 0.0, {65, 3}},
                kNeoX, 24, 1e4),
            "prepared_rope_only_d96_f16"),
        // 32 query rows a warp (two m16 tiles share each K and V fragment;
        // the heuristic's at head dim 64): every tile tail of 128-row CTAs
        // with the causal diagonal inside a warp's rows, head dim 96 with
        // 32 keys, 80 (padded rows, copies of partial rows) with one
        // stage, 8 warps, prepared keys; and 16 rows at head dim 64.
        withRowTiles(AttentionCase{"",
                                   kBf16,
                                   96,
                                   8,
                                   2,
                                   true,
                                   kRms,
                                   true,
                                   0.0,
                                   {1, 127, 128, 129, 300},
                                   false,
                                   true,
                                   4,
                                   32,
                                   2},
                     2, "rows32_d96_n32_gqa4_causal_lse"),
        withRowTiles(AttentionCase{"",
                                   kF16,
                                   80,
                                   2,
                                   1,
                                   false,
                                   kL2,
                                   false,
                                   0.0,
                                   {200, 17},
                                   false,
                                   false,
                                   4,
                                   32,
                                   1},
                     2, "rows32_d80_n32_s1_noncausal"),
        withRowTiles(AttentionCase{"",
                                   kBf16,
                                   64,
                                   4,
                                   4,
                                   true,
                                   kMeanVar,
                                   true,
                                   1.0,
                                   {257, 0, 40},
                                   true,
                                   false,
                                   8,
                                   64,
                                   2},
                     2, "rows32_d64_w8_packed_varlen"),
        withPreparedKeys(withRowTiles(withRope(AttentionCase{"",
                                                             kBf16,
                                                             64,
                                                             8,
                                                             2,
                                                             true,
                                                             kRms,
                                                             true,
                                                             0.0,
                                                             {1, 129, 260}},
                                               kNeoX, 0, 1e6),
                                      2, ""),
                         "prepared_rows32_d64_gqa4"),
        withRowTiles(
            AttentionCase{
                "", kBf16, 64, 4, 2, true, kRms, true, 0.0, {70, 130}},
            1, "rows16_d64_causal"),
        // A batch of 37 sequences (empty ones first, between and last; 1 to
        // 200 tokens): each CTA's 16-way search over the slots of the
        // sequences, causal tiles longest first.
        AttentionCase{"varlen_37_sequences_causal",
                      kBf16,
                      64,
                      4,
                      1,
                      true,
                      kL2,
                      false,
                      0.0,
                      {0,   0,  1,  2,  3, 127, 128, 129, 0,  5,  64, 65, 200,
                       7,   0,  31, 33, 1, 1,   150, 16,  17, 90, 0,  3,  66,
                       129, 12, 2,  45, 0, 8,   9,   130, 1,  40, 0}}),
    [](const testing::TestParamInfo<AttentionCase> &info) {
      return std::string(info.param.name);
    });

// The sm_90a family (wgmma, TMA, warp-specialized; #34) on the host path:
// its query prologue (QK-Norm, rotary embeddings, rotate-then-norm) into
// TMA's boxes, keys prepared by the K-prepare kernel or plain, every tile
// tail and empty sequences, 1 to 3 consumer warpgroups, 2 to 4 stages, the
// softmax overlapped or not, packed projections, the LSE, head dims 64 to
// 256 and one kv head.
INSTANTIATE_TEST_SUITE_P(
    Hopper, AttentionKernelTest,
    testing::Values(
        withWarpgroups(withPreparedKeys(withRope(AttentionCase{"",
                                                               kBf16,
                                                               128,
                                                               8,
                                                               2,
                                                               true,
                                                               kRms,
                                                               true,
                                                               0.0,
                                                               {1, 7, 130,
                                                                200}},
                                                 kNeoX, 0, 1e6),
                                        ""),
                       2, 64, 2, false, "hopper_qwen3_d128_gqa4_causal"),
        withWarpgroups(AttentionCase{"",
                                     kF16,
                                     64,
                                     4,
                                     4,
                                     false,
                                     kNone,
                                     false,
                                     0.0,
                                     {65, 1, 0, 30},
                                     /*packed=*/true,
                                     /*lse=*/true},
                       1, 64, 3, true,
                       "hopper_plain_d64_f16_packed_lse_overlap"),
        withWarpgroups(
            withPreparedKeys(
                withRope(
                    AttentionCase{
                        "", kBf16, 256, 4, 1, true, kRms, true, 1.0, {70, 33}},
                    kNeoX, 0, 1e4),
                ""),
            2, 64, 2, false, "hopper_gemma_d256_mqa_causal"),
        withWarpgroups(withPreparedKeys(AttentionCase{"",
                                                      kF16,
                                                      128,
                                                      4,
                                                      2,
                                                      true,
                                                      kL2,
                                                      false,
                                                      0.0,
                                                      {0, 129, 0, 64, 3},
                                                      /*packed=*/false,
                                                      /*lse=*/true},
                                        ""),
                       2, 128, 2, true, "hopper_l2_d128_f16_varlen_overlap"),
        withWarpgroups(
            withPreparedKeys(
                withRopeFirst(
                    AttentionCase{
                        "", kBf16, 64, 6, 2, false, kRms, true, 0.0, {200, 5}},
                    kGptJ, 0, 1e4),
                ""),
            3, 80, 4, true, "hopper_rope_first_gptj_d64_g3"),
        // The prologue's other paths in TMA's boxes: a table at explicit
        // positions (one outside it: its own rows NaN), GPT-J over 62 of 64
        // columns pair by pair, weights per head (Command R+), LayerNorm.
        withWarpgroups(withPreparedKeys(withWeightPerHead(withRopeTable(
                                            AttentionCase{"",
                                                          kBf16,
                                                          64,
                                                          4,
                                                          2,
                                                          true,
                                                          kMeanVar,
                                                          true,
                                                          0.0,
                                                          {40, 0, 97}},
                                            kGptJ, 62, /*positions=*/true,
                                            /*badPositions=*/true)),
                                        ""),
                       2, 64, 2, true, "hopper_table_pos_gptj_rot62_per_head"),
        withWarpgroups(
            withAdversarialInputs(AttentionCase{
                "", kBf16, 128, 4, 1, true, kNone, false, 0.0, {150, 77}}),
            2, 128, 2, true, "hopper_adversarial_d128_mqa"),
        withAdversarialInputs(AttentionCase{"adversarial_d128_mma_sync",
                                            kBf16,
                                            128,
                                            4,
                                            1,
                                            true,
                                            kRms,
                                            true,
                                            0.0,
                                            {150, 77}})));

// 300 sequences: three rounds of the 16-way search for a CTA's sequence
// (varlen_37_sequences_causal above takes two).
INSTANTIATE_TEST_SUITE_P(ManySequences, AttentionKernelTest,
                         testing::Values(AttentionCase{
                             "varlen_300_sequences_causal", kBf16, 64, 2, 1,
                             true, kRms, true, 0.0, getManyLengths(300)}),
                         [](const testing::TestParamInfo<AttentionCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
