//===- Candidates.cpp - row buckets and autotuning candidates -------------===//

#include "runtime/Candidates.h"

#include <algorithm>
#include <cstdio>

using namespace norm;
using namespace norm::jit;

std::string_view norm::jit::getRowBucketName(RowBucket bucket) {
  switch (bucket) {
  case RowBucket::One:
    return "1";
  case RowBucket::UpTo64:
    return "<=64";
  case RowBucket::UpTo1K:
    return "<=1K";
  case RowBucket::More:
    return ">1K";
  }
  return "?";
}

std::optional<RowBucket> norm::jit::parseRowBucketName(std::string_view name) {
  for (RowBucket bucket : kAllRowBuckets)
    if (getRowBucketName(bucket) == name)
      return bucket;
  return std::nullopt;
}

/// The fewest rows the largest bucket is tuned at.
static constexpr int64_t kMinLargeTuningRows = 2048;

int64_t norm::jit::getTuningRows(const OpSpec &spec, RowBucket bucket) {
  switch (bucket) {
  case RowBucket::One:
    return 1;
  case RowBucket::UpTo64:
    return 64;
  case RowBucket::UpTo1K:
    return 1024;
  case RowBucket::More:
    break;
  }
  // Decode's sequences' caches move its bytes (getCacheTuningShape).
  if (spec.kind == OpKind::AttentionDecode)
    return kMinLargeTuningRows;
  constexpr int64_t kBudget = int64_t(256) << 20;
  int64_t perRow = std::max<int64_t>(getBytesPerRow(spec), 1);
  return std::clamp<int64_t>(kBudget / perRow, kMinLargeTuningRows,
                             int64_t(1) << 20);
}

int64_t norm::jit::getRowBucketMinRows(RowBucket bucket) {
  switch (bucket) {
  case RowBucket::One:
    return 1;
  case RowBucket::UpTo64:
    return 2;
  case RowBucket::UpTo1K:
    return 65;
  case RowBucket::More:
    break;
  }
  return 1025;
}

DecodeShape norm::jit::getCacheTuningShape(const OpSpec &spec, int64_t rows) {
  // A paged cache's capacity is whole pages.
  auto pages = [&](int64_t capacity) {
    int64_t page = std::max<int64_t>(spec.cacheBlockSize, 1);
    return (capacity + page - 1) / page * page;
  };
  if (spec.kind != OpKind::AttentionDecode)
    return DecodeShape{rows, kTuningSequences,
                       pages((rows + kTuningSequences - 1) / kTuningSequences),
                       1};
  // The bytes of one key and its value: a row of each cache.
  int64_t keyBytes = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    if (buffer.updated)
      keyBytes += buffer.cols * getElementBytes(buffer.type);
  int64_t length = kDecodeTuningCacheBytes /
                   std::max<int64_t>(keyBytes * std::max<int64_t>(rows, 1), 1);
  return DecodeShape{rows, rows,
                     pages(std::clamp(length, kMinDecodeTuningCacheLength,
                                      kMaxDecodeTuningCacheLength)),
                     1};
}

DecodeShape norm::jit::getDecodeTuningLaunch(const OpSpec &spec, int64_t rows,
                                             const LaunchConfig &launch,
                                             int64_t smCount) {
  DecodeShape shape = getCacheTuningShape(spec, rows);
  shape.splits =
      getDecodeSplits(spec, launch.rowsPerCta, shape, smCount, launch.blockN);
  return shape;
}

/// The elements of a buffer whose length comes with the launch: prefill's
/// offsets of kTuningSequences, the most a decode launch of `run` takes.
static int64_t getTuningLaunchLength(const OpSpec &spec, BufferSlot slot,
                                     int64_t rows, const TuningRun &run) {
  if (spec.kind != OpKind::AttentionDecode)
    return getLaunchLength(spec, slot, 1,
                           hasKvCache(spec)
                               ? getCacheTuningShape(spec, rows)
                               : DecodeShape{rows, kTuningSequences, 0, 1});
  int64_t most = 0;
  for (const LaunchConfig &launch : run.launches)
    most =
        std::max(most, getLaunchLength(spec, slot, launch.rowsPerCta,
                                       getDecodeTuningLaunch(spec, rows, launch,
                                                             run.smCount)));
  return most;
}

bool norm::jit::isGradPartials(BufferSlot slot) {
  return slot == BufferSlot::WeightGradPartials ||
         slot == BufferSlot::BiasGradPartials;
}

int64_t norm::jit::getTuningBufferElements(const OpSpec &spec,
                                           const BufferSpec &buffer,
                                           int64_t rows, const TuningRun &run) {
  if (buffer.cols == 0)
    return getTuningLaunchLength(spec, buffer.slot, rows, run);
  // A backward kernel's partials: the most rows any launch of the run
  // writes (at least the launch's rows).
  if (isGradPartials(buffer.slot)) {
    int64_t most = rows;
    for (const LaunchConfig &launch : run.launches)
      most = std::max(most, getGradPartialRows(spec, launch, rows));
    return buffer.cols * most;
  }
  if (!buffer.rows2D)
    return buffer.cols;
  if (!buffer.updated)
    return buffer.cols * rows;
  DecodeShape shape = getCacheTuningShape(spec, rows);
  return buffer.cols * shape.batch * shape.cacheCapacity;
}

int64_t norm::jit::getTuningScratchBytes(const OpSpec &spec, int64_t rows,
                                         const TuningRun &run) {
  int64_t bytes = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    bytes += getTuningBufferElements(spec, buffer, rows, run) *
             getElementBytes(buffer.type);
  return bytes;
}

int64_t norm::jit::fitTuningRows(const OpSpec &spec, RowBucket bucket,
                                 int64_t rows, int64_t budget,
                                 const TuningRun &run) {
  int64_t smallest = getRowBucketMinRows(bucket);
  while (getTuningScratchBytes(spec, rows, run) > budget) {
    if (rows <= smallest)
      return 0;
    rows = std::max(rows / 2, smallest);
  }
  return rows;
}

static int64_t divideCeil(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rows of a row kernel whose shares leave registers whatever the
/// configuration (the most threads hold the least each): staged or streamed.
static bool hasLongRows(const OpSpec &spec) {
  return isFusedRow(spec) &&
         !fitsInRegisters(spec, {getMaxVector(spec), 1024, 32, 1});
}

/// The smallest valid threads-per-row value from `threads` up, stepped down
/// until no thread is left without work.
static int64_t roundThreadsPerRow(int64_t threads, int64_t vector,
                                  int64_t rowLength) {
  int64_t t = 1;
  if (threads > 16)
    t = std::min<int64_t>(divideCeil(threads, 32) * 32, 1024);
  else
    while (t < threads)
      t *= 2;
  while (t > 1 && (t - 1) * vector >= rowLength)
    t = t > 32 ? t - 32 : t / 2;
  return t;
}

/// The CTA shapes (warps, rows per CTA) tried for one threads-per-row value.
static std::vector<std::pair<int64_t, int64_t>>
getCtaShapes(int64_t threadsPerRow, RowBucket bucket) {
  if (threadsPerRow >= 128)
    return {{threadsPerRow / 32, 1}};
  if (bucket == RowBucket::One) {
    int64_t warps = std::max<int64_t>(threadsPerRow / 32, 1);
    return {{warps, warps * 32 / threadsPerRow}};
  }
  int64_t concurrent = 128 / threadsPerRow;
  if (bucket == RowBucket::More)
    return {{4, concurrent}, {4, 4 * concurrent}};
  return {{4, concurrent}};
}

/// The warps attention candidates try: prefill's 2, 4 and 8; decode's from
/// the fewest whose 16 query rows each hold one token's query heads of a kv
/// head (so that the group reads its cache once), doubled up to prefill's
/// most: more threads stream the cache, or hold several tokens' groups. A
/// group beyond the most gets the most.
static std::vector<int64_t> getAttentionWarps(const OpSpec &spec) {
  constexpr int64_t kMostWarps = 8;
  if (spec.kind != OpKind::AttentionDecode)
    return {2, 4, kMostWarps};
  int64_t group = spec.numQHeads / std::max<int64_t>(spec.numKvHeads, 1);
  std::vector<int64_t> warps;
  for (int64_t w = std::min(divideCeil(group, 16), kMostWarps); w <= kMostWarps;
       w *= 2)
    warps.push_back(w);
  return warps;
}

/// Attention's candidates: the CTA's warps (query rows), the key tile and
/// the pipeline depth; the vector and the threads per head row are fixed.
static std::vector<LaunchConfig>
getAttentionCandidates(const OpSpec &spec, const LaunchConfig &heuristic,
                       int64_t maxSharedBytes) {
  std::vector<LaunchConfig> candidates;
  auto add = [&](const LaunchConfig &launch) {
    if (verifyLaunchFor(spec, launch, maxSharedBytes) &&
        std::find(candidates.begin(), candidates.end(), launch) ==
            candidates.end())
      candidates.push_back(launch);
  };
  add(heuristic);
  // sm_90a (a heuristic of the wgmma family): its tiles, then the mma.sync
  // kernel's candidates beside them, so that tuning keeps whichever is
  // faster, measured.
  LaunchConfig base = heuristic;
  if (heuristic.isWarpgroupAttention()) {
    for (int64_t warpgroups : {2, 3})
      for (int64_t blockN : {64, 80, 96, 112, 128, 176})
        for (int64_t overlap : {1, 0}) {
          LaunchConfig launch = heuristic;
          launch.warpgroups = warpgroups;
          launch.warps = 4 * (warpgroups + 1);
          launch.rowsPerCta = 64 * warpgroups;
          launch.blockN = blockN;
          launch.overlap = overlap;
          add(launch);
        }
    base = getHeuristicLaunch(spec, -1);
    add(base);
  }
  // Query rows a warp: 16, or FlashAttention-2's 32 (prefill); decode's
  // 16 rows also to a group of 2, 4 or 8 warps that split the key tiles.
  bool decode = spec.kind == OpKind::AttentionDecode;
  std::vector<int64_t> rowSteps = {16, 32};
  if (decode)
    rowSteps = {16, 8, 4, 2};
  int64_t group = spec.numQHeads / std::max<int64_t>(spec.numKvHeads, 1);
  int64_t groupRows = 16 * ((group + 15) / 16);
  for (int64_t warps : getAttentionWarps(spec))
    for (int64_t rowsPerWarp : rowSteps)
      for (int64_t blockN : {16, 32, 64, 128})
        for (int64_t stages : {1, 2}) {
          // Key tiles of 16: decode's beyond head dim 192 (verifyLaunchFor),
          // where 32 would not fit the registers.
          if (blockN == 16 && (spec.kind != OpKind::AttentionDecode ||
                               spec.hidden <= kMaxDecodeHeadDimAt32Keys))
            continue;
          // Warps split the keys in the fewest m16 tiles that hold one
          // token's group of query heads, which then holds no padding
          // tile.
          if (rowsPerWarp < 16 && rowsPerWarp * warps != groupRows)
            continue;
          LaunchConfig launch = base;
          launch.warps = warps;
          launch.rowsPerCta = rowsPerWarp * warps;
          launch.blockN = blockN;
          launch.stages = stages;
          add(launch);
        }
  return candidates;
}

LaunchConfig norm::jit::getPlannedHeuristic(KernelCompiler &compiler,
                                            const OpSpec &spec, int64_t rows,
                                            const TargetOptions &target) {
  if (std::optional<LaunchConfig> hopper = getWarpgroupAttentionHeuristic(
          spec, target.getMaxSharedBytes(), target.chip))
    return *hopper;
  return compiler.getHeuristicLaunch(spec, rows);
}

std::vector<LaunchConfig>
norm::jit::getTuningCandidates(const OpSpec &spec, RowBucket bucket,
                               const LaunchConfig &heuristic,
                               int64_t maxSharedBytes) {
  if (isAttention(spec.kind))
    return getAttentionCandidates(spec, heuristic, maxSharedBytes);
  int64_t rowLength = getRowLength(spec);
  std::vector<LaunchConfig> candidates;
  // Staging a row that registers could hold only adds traffic.
  bool longRows = hasLongRows(spec);
  auto add = [&](const LaunchConfig &launch) {
    if (!verifyLaunchFor(spec, launch, maxSharedBytes) ||
        (!longRows && !fitsInRegisters(spec, launch)))
      return;
    if (std::find(candidates.begin(), candidates.end(), launch) ==
        candidates.end())
      candidates.push_back(launch);
  };
  // The heuristic always competes (even where the rules above would not
  // produce it), so tuning never ends slower than not tuning.
  if (verifyLaunch(heuristic))
    candidates.push_back(heuristic);
  // Column statistics and sums map threads onto columns, not rows: nothing
  // to vary.
  if (spec.kind == OpKind::BatchNormStats || spec.kind == OpKind::ColumnSum)
    return candidates;

  bool small = bucket == RowBucket::One || bucket == RowBucket::UpTo64;
  int64_t widest = getMaxVector(spec);
  std::vector<int64_t> vectors = {widest};
  if (!small && widest > 1)
    vectors.push_back(widest / 2);
  std::vector<int64_t> vectorsPerThread = {1, 2, 4};
  if (!small)
    vectorsPerThread.push_back(8);

  // Rows beyond the registers of a CTA take as many threads as a CTA has,
  // and half as many (more CTAs per SM where shared memory allows), one row
  // per CTA; how the row is kept follows from the compiler's target (a
  // backward kernel stages them in CTAs of 512 at most).
  for (int64_t vector : vectors) {
    if (longRows) {
      for (int64_t t : {1024, 512})
        add({vector, t, t / 32, 1});
      continue;
    }
    int64_t chunks = divideCeil(rowLength, vector);
    std::vector<int64_t> threads;
    for (int64_t perThread : vectorsPerThread)
      threads.push_back(
          roundThreadsPerRow(divideCeil(chunks, perThread), vector, rowLength));
    int64_t ladder = heuristic.threadsPerRow;
    for (int64_t t : {ladder / 2, ladder, ladder * 2})
      if (t >= 1)
        threads.push_back(roundThreadsPerRow(t, vector, rowLength));
    for (int64_t t : threads)
      for (auto [warps, rows] : getCtaShapes(t, bucket))
        add({vector, t, warps, rows});
  }
  return candidates;
}
