//===- CandidatesTest.cpp - row buckets and tuning candidates -------------===//

#include "runtime/Candidates.h"

#include "compiler/model/KernelModel.h"
#include "test/Unit/Runtime/TestSupport.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <set>

using namespace norm;
using namespace norm::jit;

namespace {

OpSpec rmsNorm(int64_t hidden, ElementType type = ElementType::bf16) {
  OpSpec spec;
  spec.hidden = hidden;
  spec.hasWeight = true;
  spec.input = spec.output = spec.param = type;
  return spec;
}

LaunchConfig config(int64_t v, int64_t t, int64_t w, int64_t r) {
  LaunchConfig launch;
  launch.vector = v;
  launch.threadsPerRow = t;
  launch.warps = w;
  launch.rowsPerCta = r;
  return launch;
}

bool contains(const std::vector<LaunchConfig> &list, const LaunchConfig &c) {
  return std::find(list.begin(), list.end(), c) != list.end();
}

std::vector<LaunchConfig> candidatesFor(const OpSpec &spec, RowBucket bucket) {
  test::FakeCompiler compiler;
  return getTuningCandidates(
      spec, bucket,
      compiler.getHeuristicLaunch(spec, getTuningRows(spec, bucket)));
}

TEST(Candidates, RowBuckets) {
  EXPECT_EQ(getRowBucket(1), RowBucket::One);
  EXPECT_EQ(getRowBucket(2), RowBucket::UpTo64);
  EXPECT_EQ(getRowBucket(64), RowBucket::UpTo64);
  EXPECT_EQ(getRowBucket(65), RowBucket::UpTo1K);
  EXPECT_EQ(getRowBucket(1024), RowBucket::UpTo1K);
  EXPECT_EQ(getRowBucket(1025), RowBucket::More);
  for (RowBucket bucket : kAllRowBuckets) {
    EXPECT_EQ(parseRowBucketName(getRowBucketName(bucket)), bucket);
    // Each bucket is tuned at a row count inside it.
    EXPECT_EQ(getRowBucket(getTuningRows(rmsNorm(4096), bucket)), bucket);
    EXPECT_EQ(getRowBucket(getTuningRows(rmsNorm(128), bucket)), bucket);
  }
  // The largest bucket moves about 256 MiB: 4 buffers... here 2 of 8 KiB.
  EXPECT_EQ(getTuningRows(rmsNorm(4096), RowBucket::More), 16384);
}

TEST(Candidates, EveryCandidateIsValidAndFits) {
  for (int64_t hidden : {32, 64, 100, 128, 769, 1152, 2048, 4096, 5120, 7168,
                         8192, 12288, 16384, 32768, 65536, 65537, 100000,
                         262144}) {
    for (ElementType type : {ElementType::bf16, ElementType::f32}) {
      OpSpec spec = rmsNorm(hidden, type);
      for (RowBucket bucket : kAllRowBuckets) {
        std::vector<LaunchConfig> candidates = candidatesFor(spec, bucket);
        ASSERT_FALSE(candidates.empty()) << hidden;
        EXPECT_LE(candidates.size(), 16u) << hidden;
        for (const LaunchConfig &c : candidates) {
          EXPECT_TRUE(verifyLaunchFor(spec, c).ok())
              << hidden << " " << c.getMangledSuffix();
          EXPECT_EQ(std::count(candidates.begin(), candidates.end(), c), 1);
        }
      }
    }
  }
}

TEST(Candidates, HeuristicComesFirst) {
  OpSpec spec = rmsNorm(4096);
  test::FakeCompiler compiler;
  LaunchConfig heuristic = compiler.getHeuristicLaunch(spec, 64);
  std::vector<LaunchConfig> candidates =
      getTuningCandidates(spec, RowBucket::UpTo64, heuristic);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front(), heuristic);
}

TEST(Candidates, ThreadsPerRowFollowTheRowShape) {
  // One 16-byte vector per thread: 896 threads for 7168 (the best measured
  // on an H200), 1024 for 8192, 256 for 2048.
  EXPECT_TRUE(contains(candidatesFor(rmsNorm(7168), RowBucket::One),
                       config(8, 896, 28, 1)));
  EXPECT_TRUE(contains(candidatesFor(rmsNorm(8192), RowBucket::More),
                       config(8, 1024, 32, 1)));
  EXPECT_TRUE(contains(candidatesFor(rmsNorm(2048), RowBucket::UpTo64),
                       config(8, 256, 8, 1)));
  // Two vectors per thread.
  EXPECT_TRUE(contains(candidatesFor(rmsNorm(4096), RowBucket::One),
                       config(8, 256, 8, 1)));
}

TEST(Candidates, LargerBucketsAlsoTryHalfVectors) {
  for (const LaunchConfig &c : candidatesFor(rmsNorm(4096), RowBucket::One))
    EXPECT_EQ(c.vector, 8) << c.getMangledSuffix();
  std::vector<LaunchConfig> large =
      candidatesFor(rmsNorm(4096), RowBucket::More);
  EXPECT_TRUE(std::any_of(large.begin(), large.end(),
                          [](const LaunchConfig &c) { return c.vector == 4; }));
}

TEST(Candidates, ShortRowsShareCtas) {
  // Per-head rows of 128: 128-thread CTAs holding several rows, and four
  // times as many rows per CTA for large batches.
  std::vector<LaunchConfig> large =
      candidatesFor(rmsNorm(128), RowBucket::More);
  EXPECT_TRUE(contains(large, config(8, 16, 4, 8)));
  EXPECT_TRUE(contains(large, config(8, 16, 4, 32)));
  for (const LaunchConfig &c : candidatesFor(rmsNorm(128), RowBucket::UpTo1K))
    EXPECT_EQ(c.rowsPerCta, c.getConcurrentRows()) << c.getMangledSuffix();
  // A single row needs no more than one warp of threads sharing it.
  std::vector<LaunchConfig> one = candidatesFor(rmsNorm(128), RowBucket::One);
  for (size_t i = 1; i < one.size(); ++i)
    EXPECT_EQ(one[i].warps, 1) << one[i].getMangledSuffix();
}

TEST(Candidates, ColumnStatisticsOnlyUseTheHeuristic) {
  OpSpec stats;
  stats.kind = OpSpec::Kind::BatchNormStats;
  stats.hidden = 256;
  LaunchConfig heuristic = config(4, 32, 4, 4);
  EXPECT_EQ(getTuningCandidates(stats, RowBucket::More, heuristic),
            std::vector<LaunchConfig>{heuristic});
}

TEST(Candidates, LongRowsGetAFewWideConfigurations) {
  // 1024 threads and half as many, one row per CTA, for each vector: a
  // staged bf16 row, a streamed f32 one and an odd length (scalar accesses)
  // alike. The heuristic's configuration comes first.
  struct Case {
    OpSpec spec;
    RowBucket bucket;
    std::vector<LaunchConfig> candidates;
  };
  for (const Case &c :
       {Case{rmsNorm(100000), RowBucket::One,
             {config(8, 1024, 32, 1), config(8, 512, 16, 1)}},
        Case{rmsNorm(100000), RowBucket::More,
             {config(8, 1024, 32, 1), config(8, 512, 16, 1),
              config(4, 1024, 32, 1), config(4, 512, 16, 1)}},
        Case{rmsNorm(262144, ElementType::f32), RowBucket::UpTo1K,
             {config(4, 1024, 32, 1), config(4, 512, 16, 1),
              config(2, 1024, 32, 1), config(2, 512, 16, 1)}},
        Case{rmsNorm(65537, ElementType::f16), RowBucket::More,
             {config(1, 1024, 32, 1), config(1, 512, 16, 1)}}})
    EXPECT_EQ(getTuningCandidates(c.spec, c.bucket, c.candidates.front()),
              c.candidates)
        << c.spec.hidden << " " << getRowBucketName(c.bucket);
  // The longest row a CTA holds in registers (1024 threads x 32 bf16
  // elements) gets register configurations only.
  for (const LaunchConfig &c : candidatesFor(rmsNorm(32768), RowBucket::More))
    EXPECT_TRUE(fitsInRegisters(rmsNorm(32768), c)) << c.getMangledSuffix();
}

TEST(Candidates, StagedBackwardRowsUseCtasOfAtMost512Threads) {
  // bf16 RMSNorm backward at 16384: beyond the registers, staged in CTAs of
  // 512 threads (1024 would leave the column sums 64 registers a thread);
  // f32 LayerNorm with a bias: not at all where the target's shared memory
  // is too small for v and dy (sm_89's 99 KiB).
  OpSpec rms = rmsNorm(16384);
  rms.backward = true;
  LaunchConfig heuristic = getHeuristicLaunch(rms, 4096);
  EXPECT_EQ(getTuningCandidates(rms, RowBucket::More, heuristic, 232448),
            (std::vector<LaunchConfig>{config(8, 512, 16, 1),
                                       config(4, 512, 16, 1)}));
  OpSpec layer = rmsNorm(16384, ElementType::f32);
  layer.kind = OpKind::LayerNorm;
  layer.hasBias = layer.backward = true;
  layer.param = ElementType::f32;
  heuristic = getHeuristicLaunch(layer, 4096);
  EXPECT_EQ(getTuningCandidates(layer, RowBucket::More, heuristic, 232448),
            (std::vector<LaunchConfig>{config(4, 512, 16, 1),
                                       config(2, 512, 16, 1)}));
  // sm_89: only the heuristic, which the compiler then refuses.
  EXPECT_EQ(getTuningCandidates(layer, RowBucket::More, heuristic, 101376),
            (std::vector<LaunchConfig>{config(4, 512, 16, 1)}));
}

TEST(TuningScratch, BucketsStartWhereTheSmallerEnds) {
  for (RowBucket bucket : kAllRowBuckets) {
    int64_t smallest = getRowBucketMinRows(bucket);
    EXPECT_EQ(getRowBucket(smallest), bucket);
    if (smallest > 1) {
      EXPECT_NE(getRowBucket(smallest - 1), bucket);
    }
  }
}

TEST(TuningScratch, RowsHalveUntilTheScratchFits) {
  OpSpec spec = rmsNorm(4096); // 16 KiB of rows, 8 KiB of weight
  EXPECT_EQ(getTuningScratchBytes(spec, 1), 24576);
  EXPECT_EQ(getTuningScratchBytes(spec, 1024), 1024 * 16384 + 8192);
  int64_t mib = int64_t(1) << 20;
  // The default budget leaves ordinary rows alone.
  for (RowBucket bucket : kAllRowBuckets)
    EXPECT_EQ(fitTuningRows(spec, bucket, getTuningRows(spec, bucket),
                            kDefaultTuningScratchBytes),
              getTuningRows(spec, bucket));
  EXPECT_EQ(fitTuningRows(spec, RowBucket::UpTo1K, 1024, 4 * mib), 128);
  EXPECT_EQ(fitTuningRows(spec, RowBucket::UpTo1K, 1024, 2 * mib), 65)
      << "not below the bucket";
  EXPECT_EQ(fitTuningRows(spec, RowBucket::UpTo1K, 1024, mib), 0);
  EXPECT_EQ(fitTuningRows(spec, RowBucket::More, 16384, 24 * mib), 1025);
  EXPECT_EQ(fitTuningRows(spec, RowBucket::More, 16384, 4 * mib), 0);
  EXPECT_EQ(fitTuningRows(spec, RowBucket::One, 1, 24576), 1);
  EXPECT_EQ(fitTuningRows(spec, RowBucket::One, 1, 24575), 0);
  // 4M bf16 elements: the largest bucket would take 32 GiB at 2048 rows.
  OpSpec huge = rmsNorm(int64_t(1) << 22);
  EXPECT_EQ(getTuningRows(huge, RowBucket::More), 2048);
  EXPECT_EQ(getTuningScratchBytes(huge, 2048), (int64_t(32) << 30) + 8 * mib);
  EXPECT_EQ(fitTuningRows(huge, RowBucket::More, 2048,
                          kDefaultTuningScratchBytes),
            0);
  EXPECT_EQ(fitTuningRows(huge, RowBucket::UpTo64, 64,
                          kDefaultTuningScratchBytes),
            16);
}

} // namespace

namespace {

// Attention: warps 2, 4, 8 x block_n 32, 64, 128 x stages 1, 2 where the
// tiles fit the target's shared memory and the accumulators and copies the
// registers; the heuristic first. Scratch holds one sequence's two offsets.
TEST(Candidates, AttentionShapes) {
  OpSpec spec = examples::makeAttention();
  LaunchConfig heuristic = getHeuristicLaunch(spec, -1);
  std::vector<LaunchConfig> all =
      getTuningCandidates(spec, RowBucket::More, heuristic, 232448);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), heuristic);
  // Head dim 128 fits every tile on sm_90; 2 warps with block_n 64 or 128
  // and 4 with 128 issue more than 16 copies a thread, 8 with 128 more than
  // 12 (ptxas spilled); 32 query rows a warp keep too many accumulators.
  EXPECT_EQ(all.size(), 10u);
  for (const LaunchConfig &launch : all) {
    EXPECT_TRUE(verifyLaunchFor(spec, launch, 232448))
        << launch.getMangledSuffix();
    EXPECT_EQ(launch.vector, 8);
    EXPECT_EQ(launch.threadsPerRow, 16);
  }
  // Head dim 64: 16 and 32 query rows a warp, the heuristic's 32 first.
  OpSpec narrow = spec;
  narrow.hidden = 64;
  std::vector<LaunchConfig> narrowAll = getTuningCandidates(
      narrow, RowBucket::More, getHeuristicLaunch(narrow, -1), 232448);
  ASSERT_FALSE(narrowAll.empty());
  EXPECT_EQ(narrowAll.front().getRowTiles(), 2);
  EXPECT_TRUE(std::any_of(
      narrowAll.begin(), narrowAll.end(),
      [](const LaunchConfig &launch) { return launch.getRowTiles() == 1; }));
  // Head dim 256 on 99 KiB (sm_89): no block_n 128 (too many accumulators)
  // and only the tiles that fit.
  spec.hidden = 256;
  heuristic = getHeuristicLaunch(spec, -1);
  all = getTuningCandidates(spec, RowBucket::One, heuristic, 101376);
  ASSERT_FALSE(all.empty());
  for (const LaunchConfig &launch : all) {
    EXPECT_TRUE(verifyLaunchFor(spec, launch, 101376))
        << launch.getMangledSuffix();
    EXPECT_NE(launch.blockN, 128);
    EXPECT_LE(getAttentionSharedBytes(spec, launch), 101376);
  }
  EXPECT_LT(all.size(), 12u);
  // q, k, v and output rows, both weights once, two i32 offsets.
  EXPECT_EQ(getTuningScratchBytes(spec, 10),
            10 * (32 + 8 + 8 + 32) * 256 * 2 + 2 * 256 * 2 + 2 * 4);
}

} // namespace

namespace {

/// Decode attention of `qHeads` query and `kvHeads` key/value heads of
/// `headDim`, no QK-Norm.
OpSpec makeDecode(int64_t qHeads, int64_t kvHeads, int64_t headDim = 128) {
  OpSpec spec;
  spec.kind = OpKind::AttentionDecode;
  spec.hidden = headDim;
  spec.numQHeads = qHeads;
  spec.numKvHeads = kvHeads;
  spec.qkStatistic = Statistic::None;
  spec.scale = 0.125;
  return spec;
}

std::set<int64_t> warpsOf(const std::vector<LaunchConfig> &candidates) {
  std::set<int64_t> warps;
  for (const LaunchConfig &launch : candidates)
    warps.insert(launch.warps);
  return warps;
}

// Decode's query tile holds a token's query heads of one kv head: warps
// start at the fewest whose 16 rows hold the group and double up to 8, in
// every bucket, x block_n 32, 64, 128 x stages 1, 2, each warp with rows of
// its own or splitting the keys of the group's tiles; the heuristic first.
TEST(Candidates, DecodeWarpsFollowTheGroup) {
  struct Case {
    int64_t qHeads, kvHeads;
    std::set<int64_t> warps;
    size_t count, keySplits;
  };
  // Head dim 128 on sm_90: key tiles of block_n 32 and 64 (128 spilled),
  // 16 copies a thread at most (one warp none, two block_n 32), 2 stages;
  // and where a group of up to 64 heads fills fewer tiles than the warps,
  // those tiles shared by warps that split the keys (slices of 16 keys at
  // least: 2 warps of 32 or 64 keys, 4 of 64; the heuristic's for groups
  // of up to 16).
  for (const Case &c :
       {Case{8, 2, {2, 4, 8}, 14, 4}, Case{32, 8, {2, 4, 8}, 14, 4},
        Case{32, 1, {2, 4, 8}, 16, 6}, Case{64, 1, {4, 8}, 12, 4},
        Case{128, 1, {8}, 4, 0},
        // 3 and 6 warps hold 48 heads, and the heuristic's 4 competes; 6
        // warps also as 3 tiles of 2 warps each.
        Case{48, 1, {3, 4, 6}, 11, 4},
        // No CTA holds 256 heads: the most warps.
        Case{256, 1, {8}, 4, 0}}) {
    OpSpec spec = makeDecode(c.qHeads, c.kvHeads);
    LaunchConfig heuristic = getHeuristicLaunch(spec, -1);
    std::vector<LaunchConfig> all =
        getTuningCandidates(spec, RowBucket::UpTo64, heuristic, 232448);
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front(), heuristic);
    EXPECT_EQ(warpsOf(all), c.warps) << c.qHeads << "/" << c.kvHeads;
    size_t keySplits = 0;
    EXPECT_EQ(all.size(), c.count) << c.qHeads << "/" << c.kvHeads;
    for (const LaunchConfig &launch : all) {
      EXPECT_TRUE(verifyLaunchFor(spec, launch, 232448))
          << launch.getMangledSuffix();
      // Each warp its own 16 rows, or the fewest tiles of 16 rows that
      // hold the group, shared by warps that split the key tiles.
      int64_t groupRows = 16 * ((c.qHeads / c.kvHeads + 15) / 16);
      if (launch.rowsPerCta != 16 * launch.warps) {
        EXPECT_EQ(launch.rowsPerCta, groupRows) << launch.getMangledSuffix();
        EXPECT_GT(launch.getKeyWarps(), 1) << launch.getMangledSuffix();
        ++keySplits;
      }
    }
    EXPECT_EQ(keySplits, c.keySplits) << c.qHeads << "/" << c.kvHeads;
    for (RowBucket bucket : kAllRowBuckets)
      EXPECT_EQ(getTuningCandidates(spec, bucket, heuristic, 232448), all);
  }
  // Head dim 256 on 99 KiB: 4 warps and key tiles of 16, in one or two
  // stages (32 keys spilled beyond head dim 192).
  OpSpec wide = makeDecode(8, 2, 256);
  std::vector<LaunchConfig> all = getTuningCandidates(
      wide, RowBucket::One, getHeuristicLaunch(wide, -1), 101376);
  ASSERT_EQ(all.size(), 2u);
  for (const LaunchConfig &launch : all) {
    EXPECT_TRUE(verifyLaunchFor(wide, launch, 101376))
        << launch.getMangledSuffix();
    EXPECT_EQ(launch.blockN, 16);
    EXPECT_EQ(launch.warps, 4);
  }
  // At head dim 192, 32 keys and more; never 16.
  for (const LaunchConfig &launch :
       getTuningCandidates(makeDecode(8, 2, 192), RowBucket::One,
                           getHeuristicLaunch(makeDecode(8, 2, 192), -1),
                           101376))
    EXPECT_GE(launch.blockN, 32) << launch.getMangledSuffix();
}

// One new token per sequence, the caches holding about 256 MiB: a long
// context for one sequence, short ones for many.
// sm_90a prefill over prepared keys: the heuristic is the wgmma family's,
// and tuning times its tiles (2 and 3 consumer warpgroups, block_n 64 to
// 176, overlapped or not, each within its register rule) beside the
// mma.sync kernel's heuristic and candidates; none where the family does
// not take the op, and never on another chip.
TEST(Candidates, Sm90aAttentionTimesBothFamilies) {
  OpSpec spec = examples::makeAttention();
  spec.keysPrepared = true;
  std::optional<LaunchConfig> heuristic =
      getWarpgroupAttentionHeuristic(spec, 232448, "sm_90a");
  ASSERT_TRUE(heuristic);
  EXPECT_EQ(heuristic->getMangledSuffix(), "v8_t16_w12_r128_n128_s2_g2o");
  std::vector<LaunchConfig> candidates =
      getTuningCandidates(spec, RowBucket::More, *heuristic, 232448);
  EXPECT_EQ(candidates.front(), *heuristic);
  std::set<std::string> wgmma, mma;
  for (const LaunchConfig &launch : candidates) {
    EXPECT_TRUE(verifyLaunchFor(spec, launch, 232448));
    (launch.isWarpgroupAttention() ? wgmma : mma)
        .insert(launch.getMangledSuffix());
  }
  EXPECT_TRUE(wgmma.count("v8_t16_w16_r192_n112_s2_g3"));
  EXPECT_FALSE(wgmma.count("v8_t16_w16_r192_n128_s2_g3"));
  EXPECT_FALSE(wgmma.count("v8_t16_w12_r128_n176_s2_g2o"));
  // Two warpgroups: 5 overlapped, 6 not; three: 4 not overlapped.
  EXPECT_EQ(wgmma.size(), 15u);
  EXPECT_TRUE(mma.count(getHeuristicLaunch(spec, -1).getMangledSuffix()));
  EXPECT_GT(mma.size(), 4u);

  EXPECT_FALSE(getWarpgroupAttentionHeuristic(spec, 232448, "sm_90"));
  EXPECT_FALSE(getWarpgroupAttentionHeuristic(examples::makeAttention(), 232448,
                                              "sm_90a"));
}

TEST(TuningScratch, DecodeShapes) {
  OpSpec spec = makeDecode(32, 8); // a key and its value: 4 KiB
  auto shape = [&](int64_t rows) { return getCacheTuningShape(spec, rows); };
  EXPECT_EQ(shape(1).batch, 1);
  EXPECT_EQ(shape(1).cacheCapacity, kMaxDecodeTuningCacheLength);
  EXPECT_EQ(shape(64).batch, 64);
  EXPECT_EQ(shape(64).cacheCapacity, 1024);
  EXPECT_EQ(shape(1024).cacheCapacity, 64);
  EXPECT_EQ(shape(2048).cacheCapacity, kMinDecodeTuningCacheLength);
  EXPECT_EQ(getTuningRows(spec, RowBucket::More), 2048);
  // The splits are the kernel model's for each configuration.
  LaunchConfig launch = getHeuristicLaunch(spec, 1);
  DecodeShape timed = getDecodeTuningLaunch(spec, 1, launch, 132);
  EXPECT_EQ(timed.splits, getDecodeSplits(spec, launch.rowsPerCta, shape(1),
                                          132, launch.blockN));
  EXPECT_GT(timed.splits, 1);
}

// The scratch holds the rows, the caches of every sequence, their offsets
// and lengths, and the workspace and semaphores of the launch that needs
// the most; the budget counts all of it.
TEST(TuningScratch, DecodeCountsCachesAndTheLargestWorkspace) {
  OpSpec spec = makeDecode(4, 1); // 512 bytes a key and its value
  auto elementsOf = [&](BufferSlot slot, int64_t rows, const TuningRun &run) {
    for (const BufferSpec &buffer : getBuffers(spec))
      if (buffer.slot == slot)
        return getTuningBufferElements(spec, buffer, rows, run);
    ADD_FAILURE() << "no buffer " << getBufferSlotName(slot);
    return int64_t(0);
  };
  LaunchConfig n128 = getHeuristicLaunch(spec, 1), n64 = n128, w1 = n128;
  n128.blockN = 128;
  n64.blockN = 64;
  w1.warps = 1;
  w1.rowsPerCta = 16;
  // 1000 SMs want more splits than 4096 keys have tiles of 128 (32), not
  // more than of 64 (64, kMaxDecodeSplits).
  TuningRun wide{{n128}, 1000}, both{{n64, n128}, 1000};
  EXPECT_EQ(elementsOf(BufferSlot::Workspace, 1, wide), 32 * 4 * 129);
  EXPECT_EQ(elementsOf(BufferSlot::Workspace, 1, both), 64 * 4 * 129);
  // 64 sequences: 16-row tiles (one warp) make the most semaphores,
  // kv heads x (ceil(64 x 4 / 16) + 64).
  TuningRun tiles{{n128, w1}, 132};
  EXPECT_EQ(elementsOf(BufferSlot::Semaphores, 64, tiles), 16 + 64);
  EXPECT_EQ(elementsOf(BufferSlot::CuSeqlens, 64, tiles), 65);
  EXPECT_EQ(elementsOf(BufferSlot::CacheSeqlens, 64, tiles), 64);
  // 64 sequences of 4096 keys.
  EXPECT_EQ(elementsOf(BufferSlot::KCache, 64, tiles), 64 * 4096 * 128);
  EXPECT_EQ(elementsOf(BufferSlot::Q, 64, tiles), 64 * 4 * 128);
  int64_t workspace = elementsOf(BufferSlot::Workspace, 64, tiles);
  EXPECT_EQ(getTuningScratchBytes(spec, 64, tiles),
            64 * (4 + 1 + 1 + 4) * 128 * 2 + 2 * 64 * 4096 * 128 * 2 + 65 * 4 +
                64 * 4 + workspace * 4 + 80 * 4);

  // The budget: 2048 sequences of 64 keys of a 4 KiB key and value take
  // 512 MiB of caches; 1025 of them half that.
  OpSpec llama = makeDecode(32, 8);
  LaunchConfig heuristic = getHeuristicLaunch(llama, 2048);
  TuningRun run{getTuningCandidates(llama, RowBucket::More, heuristic, 232448),
                132};
  EXPECT_GT(getTuningScratchBytes(llama, 2048, run),
            kDefaultTuningScratchBytes);
  EXPECT_EQ(fitTuningRows(llama, RowBucket::More, 2048,
                          kDefaultTuningScratchBytes, run),
            1025);
  EXPECT_LE(getTuningScratchBytes(llama, 1025, run),
            kDefaultTuningScratchBytes);
  // A single sequence's 4096 keys (16 MiB) do not fit 8 MiB.
  EXPECT_EQ(fitTuningRows(llama, RowBucket::One, 1, 8 << 20, run), 0);
}

} // namespace
