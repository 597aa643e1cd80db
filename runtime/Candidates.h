//===- Candidates.h - row buckets and autotuning candidates -----*- C++ -*-===//
//
// The autotuner times a small, principled set of launch configurations per
// operation and row-count bucket. Everything here is a pure function of the
// operation, so the set can be unit-tested without a device.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_CANDIDATES_H
#define NORM_RUNTIME_CANDIDATES_H

#include "compiler/model/KernelModel.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace norm::jit {

/// Row counts that may want different configurations: decode (1 row), small
/// batches, medium and large ones.
enum class RowBucket : int { One = 0, UpTo64 = 1, UpTo1K = 2, More = 3 };
constexpr int kNumRowBuckets = 4;
constexpr RowBucket kAllRowBuckets[] = {RowBucket::One, RowBucket::UpTo64,
                                        RowBucket::UpTo1K, RowBucket::More};

/// The bucket of a positive row count.
inline RowBucket getRowBucket(int64_t rows) {
  if (rows <= 1)
    return RowBucket::One;
  if (rows <= 64)
    return RowBucket::UpTo64;
  if (rows <= 1024)
    return RowBucket::UpTo1K;
  return RowBucket::More;
}

/// "1", "<=64", "<=1K", ">1K".
std::string_view getRowBucketName(RowBucket bucket);
std::optional<RowBucket> parseRowBucketName(std::string_view name);

/// The row count a bucket is tuned at. The largest bucket uses enough rows to
/// move about 256 MiB, well beyond the L2 cache of any current GPU, so that
/// it is timed at DRAM bandwidth as large batches run.
int64_t getTuningRows(const OpSpec &spec, RowBucket bucket);

/// The smallest row count of a bucket: 1, 2, 65, 1025.
int64_t getRowBucketMinRows(RowBucket bucket);

/// The sequences the tuner runs attention on: one of all the bucket's
/// tokens, so that its scratch cu_seqlens holds two offsets, 0 and the
/// tuning rows.
constexpr int64_t kTuningSequences = 1;

/// Device memory one scratch buffer of the tuner takes for `rows` rows:
/// `rows` rows of a 2-D buffer, a 1-D buffer once, and kTuningSequences + 1
/// offsets for a buffer whose length comes with the launch (cu_seqlens).
int64_t getTuningBufferBytes(const BufferSpec &buffer, int64_t rows);

/// Device memory the tuner's scratch buffers take for `rows` rows of
/// `spec`: getTuningBufferBytes of every buffer.
int64_t getTuningScratchBytes(const OpSpec &spec, int64_t rows);

/// The default bound of the tuner's scratch memory: twice what the largest
/// bucket is meant to move (getTuningRows), so that only rows beyond
/// about 64K elements tune at fewer rows than that.
constexpr int64_t kDefaultTuningScratchBytes = int64_t(512) << 20;

/// The rows to tune `bucket` at when scratch may take `budget` bytes:
/// `rows`, halved (down to the bucket's smallest row count) until the
/// scratch fits; 0 when not even the smallest fits.
int64_t fitTuningRows(const OpSpec &spec, RowBucket bucket, int64_t rows,
                      int64_t budget);

/// The configurations the tuner times for `bucket`, the heuristic's first (a
/// tie keeps it). Built from the shape of the row, not from a search:
/// - vector: the widest aligned width, and half of it for larger buckets;
/// - threads per row: one, two, four (and for larger buckets eight) vectors
///   per thread, plus the heuristic's ladder value and its neighbours;
/// - CTA shape: one row per CTA from 128 threads per row on; below, 128-thread
///   CTAs holding several rows (one warp for a single row), and for the
///   largest bucket also four times the rows per CTA, to amortize CTAs.
/// Rows that fit in the registers of some CTA get only configurations that
/// keep them there: staging a row that registers could hold only adds
/// traffic. Longer rows (row kernels whose shares leave the registers even
/// of 1024 threads) get 1024 and 512 threads per row, one row per CTA, each
/// vector: four candidates at most, staged in shared memory or streamed as
/// the compiler's target allows. Attention: warps 2, 4, 8 x block_n 32, 64,
/// 128 x stages 1, 2, at the only vector and threads per row it has, where
/// the tiles fit `maxSharedBytes` (0: unchecked) and the accumulators the
/// registers. Every candidate meets norm::verifyLaunchFor.
std::vector<LaunchConfig> getTuningCandidates(const OpSpec &spec,
                                              RowBucket bucket,
                                              const LaunchConfig &heuristic,
                                              int64_t maxSharedBytes = 0);

} // namespace norm::jit

#endif // NORM_RUNTIME_CANDIDATES_H
