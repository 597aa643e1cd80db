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
  constexpr int64_t kBudget = int64_t(256) << 20;
  int64_t perRow = std::max<int64_t>(getBytesPerRow(spec), 1);
  return std::clamp<int64_t>(kBudget / perRow, 2048, int64_t(1) << 20);
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

int64_t norm::jit::getTuningBufferBytes(const BufferSpec &buffer,
                                        int64_t rows) {
  int64_t elements = buffer.cols == 0 ? kTuningSequences + 1
                     : buffer.rows2D  ? buffer.cols * rows
                                      : buffer.cols;
  return elements * getElementBytes(buffer.type);
}

int64_t norm::jit::getTuningScratchBytes(const OpSpec &spec, int64_t rows) {
  int64_t bytes = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    bytes += getTuningBufferBytes(buffer, rows);
  return bytes;
}

int64_t norm::jit::fitTuningRows(const OpSpec &spec, RowBucket bucket,
                                 int64_t rows, int64_t budget) {
  int64_t smallest = getRowBucketMinRows(bucket);
  while (getTuningScratchBytes(spec, rows) > budget) {
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
  for (int64_t warps : {2, 4, 8})
    for (int64_t blockN : {32, 64, 128})
      for (int64_t stages : {1, 2}) {
        LaunchConfig launch = heuristic;
        launch.warps = warps;
        launch.rowsPerCta = 16 * warps;
        launch.blockN = blockN;
        launch.stages = stages;
        add(launch);
      }
  return candidates;
}

std::vector<LaunchConfig>
norm::jit::getTuningCandidates(const OpSpec &spec, RowBucket bucket,
                               const LaunchConfig &heuristic,
                               int64_t maxSharedBytes) {
  // Decode's tiles are prefill's (Planning.cpp does not tune it yet).
  if (isAttention(spec.kind))
    return getAttentionCandidates(spec, heuristic, maxSharedBytes);
  int64_t rowLength = getRowLength(spec);
  std::vector<LaunchConfig> candidates;
  // Staging a row that registers could hold only adds traffic.
  bool longRows = hasLongRows(spec);
  auto add = [&](const LaunchConfig &launch) {
    if (!verifyLaunchFor(spec, launch) ||
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
  // Column statistics map threads onto columns, not rows: nothing to vary.
  if (spec.kind == OpKind::BatchNormStats)
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
  // per CTA; how the row is kept follows from the compiler's target.
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
