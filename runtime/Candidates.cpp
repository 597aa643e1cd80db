//===- Candidates.cpp - row buckets and autotuning candidates -------------===//

#include "runtime/Candidates.h"

#include "runtime/OpSpecs.h"

#include <algorithm>
#include <cstdio>

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

int64_t norm::jit::getTuningScratchBytes(const OpSpec &spec, int64_t rows) {
  int64_t bytes = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    bytes += buffer.cols * getElementBytes(buffer.type) *
             (buffer.rows2D ? rows : 1);
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

static bool isPowerOf2(int64_t value) {
  return value > 0 && (value & (value - 1)) == 0;
}

static int64_t divideCeil(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool isValidThreadsPerRow(int64_t threads) {
  if (threads < 32)
    return isPowerOf2(threads);
  return threads <= 1024 && threads % 32 == 0;
}

bool norm::jit::isValidLaunch(const LaunchConfig &launch) {
  if (launch.vector != 1 && launch.vector != 2 && launch.vector != 4 &&
      launch.vector != 8)
    return false;
  if (!isValidThreadsPerRow(launch.threadsPerRow))
    return false;
  if (launch.warps < 1 || launch.warps > 32 ||
      launch.getThreadsPerCta() % launch.threadsPerRow != 0)
    return false;
  return launch.rowsPerCta >= 1 &&
         launch.rowsPerCta % launch.getConcurrentRows() == 0;
}

bool norm::jit::hasLongRowStorage(const OpSpec &spec) {
  return spec.kind != OpSpec::Kind::QKNormPrologue &&
         spec.kind != OpSpec::Kind::BatchNormStats;
}

/// Rows of `spec` too long for the registers of a CTA: staged or streamed
/// whatever the configuration.
static bool hasLongRows(const OpSpec &spec) {
  return hasLongRowStorage(spec) && getRowLength(spec) > kMaxRegisterRowLength;
}

bool norm::jit::keepsRowInRegisters(const LaunchConfig &launch,
                                    const OpSpec &spec) {
  if (!hasLongRowStorage(spec))
    return true;
  int64_t chunks =
      divideCeil(getRowLength(spec), launch.threadsPerRow * launch.vector);
  return chunks * launch.vector <= kMaxElementsPerThread;
}

bool norm::jit::fitsRow(const LaunchConfig &launch, const OpSpec &spec) {
  if (launch.vector < 1 || launch.threadsPerRow < 1)
    return false;
  if (spec.kind == OpSpec::Kind::BatchNormStats)
    return true;
  int64_t rowLength = getRowLength(spec);
  if (rowLength < 1 || (launch.threadsPerRow - 1) * launch.vector >= rowLength)
    return false;
  if (hasLongRows(spec))
    return true;
  int64_t chunks = divideCeil(rowLength, launch.threadsPerRow * launch.vector);
  return chunks * launch.vector <= kMaxElementsPerThread;
}

std::optional<LaunchConfig>
norm::jit::parseLaunchSuffix(std::string_view text) {
  LaunchConfig launch;
  long long v, t, w, r;
  char tail;
  std::string copy(text);
  if (std::sscanf(copy.c_str(), "v%lld_t%lld_w%lld_r%lld%c", &v, &t, &w, &r,
                  &tail) != 4)
    return std::nullopt;
  launch.vector = v;
  launch.threadsPerRow = t;
  launch.warps = w;
  launch.rowsPerCta = r;
  if (!isValidLaunch(launch) || launch.getMangledSuffix() != text)
    return std::nullopt;
  return launch;
}

int64_t norm::jit::getMaxVector(const OpSpec &spec) {
  int64_t widest = 1;
  for (const BufferSpec &buffer : getBuffers(spec))
    if (buffer.rows2D)
      widest = std::max(widest, getElementBytes(buffer.type));
  int64_t vector = 16 / widest;
  int64_t rowLength = getRowLength(spec);
  while (vector > 1 && rowLength % vector != 0)
    vector /= 2;
  return vector;
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

std::vector<LaunchConfig>
norm::jit::getTuningCandidates(const OpSpec &spec, RowBucket bucket,
                               const LaunchConfig &heuristic) {
  int64_t rowLength = getRowLength(spec);
  std::vector<LaunchConfig> candidates;
  auto add = [&](const LaunchConfig &launch) {
    if (!isValidLaunch(launch) || !fitsRow(launch, spec))
      return;
    if (std::find(candidates.begin(), candidates.end(), launch) ==
        candidates.end())
      candidates.push_back(launch);
  };
  // The heuristic always competes (even where the rules above would not
  // produce it), so tuning never ends slower than not tuning.
  if (isValidLaunch(heuristic))
    candidates.push_back(heuristic);
  // Column statistics map threads onto columns, not rows: nothing to vary.
  if (spec.kind == OpSpec::Kind::BatchNormStats)
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
  bool longRows = hasLongRows(spec);
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

std::optional<LaunchConfig>
norm::jit::getScalarVariant(const LaunchConfig &launch, const OpSpec &spec) {
  LaunchConfig scalar = launch;
  scalar.vector = 1;
  int64_t rowLength = getRowLength(spec);
  // Only rows kept in registers may need more threads; staged and streamed
  // rows loop over any number of elements per thread.
  bool inRegisters =
      spec.kind != OpSpec::Kind::BatchNormStats && !hasLongRows(spec);
  int64_t needed = divideCeil(rowLength, kMaxElementsPerThread);
  if (inRegisters && scalar.threadsPerRow < needed) {
    scalar.threadsPerRow = roundThreadsPerRow(needed, 1, rowLength);
    if (scalar.threadsPerRow < needed)
      return std::nullopt;
    scalar.warps = std::max(scalar.warps, scalar.threadsPerRow / 32);
  }
  int64_t concurrent = scalar.getThreadsPerCta() / scalar.threadsPerRow;
  scalar.rowsPerCta = divideCeil(scalar.rowsPerCta, concurrent) * concurrent;
  if (!isValidLaunch(scalar) || !fitsRow(scalar, spec))
    return std::nullopt;
  return scalar;
}
