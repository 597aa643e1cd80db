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
#include "runtime/KernelCompiler.h"

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
/// it is timed at DRAM bandwidth as large batches run; decode attention,
/// whose traffic is its caches', at 2048 new tokens.
int64_t getTuningRows(const OpSpec &spec, RowBucket bucket);

/// The smallest row count of a bucket: 1, 2, 65, 1025.
int64_t getRowBucketMinRows(RowBucket bucket);

/// The sequences the tuner runs attention on: one of all the bucket's
/// tokens, so that its scratch cu_seqlens holds two offsets, 0 and the
/// tuning rows.
constexpr int64_t kTuningSequences = 1;

/// About the bytes of KV cache a decode tuning run reads: the largest row
/// bucket's traffic, beyond L2 (a decode step streams its caches).
constexpr int64_t kDecodeTuningCacheBytes = int64_t(256) << 20;
/// The cache lengths decode attention is tuned at: a long context for one
/// sequence, a short one (a tile of 64 keys) where many share the bytes.
constexpr int64_t kMinDecodeTuningCacheLength = 64;
constexpr int64_t kMaxDecodeTuningCacheLength = 4096;

/// The KV caches the tuner times a kernel of norm::hasKvCache at, `rows`
/// new tokens. Decode: one token of each of `rows` sequences (batch =
/// rows), each with a cache of kDecodeTuningCacheBytes / (rows x the bytes
/// of a key and its value), clamped to [kMinDecodeTuningCacheLength,
/// kMaxDecodeTuningCacheLength], as its capacity; `splits` 1 (see
/// getDecodeTuningLaunch). K-prepare into a cache: kTuningSequences
/// sequences of the rows, each into an empty cache that holds it.
DecodeShape getCacheTuningShape(const OpSpec &spec, int64_t rows);

/// getCacheTuningShape with the splits a launch of `launch` takes on
/// `smCount` SMs (getDecodeSplits, as Kernel::launch computes them).
DecodeShape getDecodeTuningLaunch(const OpSpec &spec, int64_t rows,
                                  const LaunchConfig &launch, int64_t smCount);

/// What one bucket's tuning run times, as far as its scratch depends on it:
/// decode's workspace and semaphores follow each configuration's splits and
/// query tiles, and the splits the SMs.
struct TuningRun {
  std::vector<LaunchConfig> launches;
  int64_t smCount = 1;
};

/// Whether `slot` holds a backward kernel's f32 gradient partials, whose
/// rows (getGradPartialRows) follow the launch configuration.
bool isGradPartials(BufferSlot slot);

/// Elements of one scratch buffer of the tuner for `rows` rows of `spec`:
/// `rows` rows of a 2-D buffer (decode's caches: batch x capacity rows of
/// getCacheTuningShape), a 1-D buffer once, and for a buffer whose length
/// comes with the launch its getLaunchLength: prefill's cu_seqlens
/// kTuningSequences + 1 offsets; decode's buffers the most any launch of
/// `run` takes (its workspace and semaphores follow the configuration; none
/// without launches); a backward kernel's gradient partials the most rows
/// a launch of `run` writes, and at least `rows`.
int64_t getTuningBufferElements(const OpSpec &spec, const BufferSpec &buffer,
                                int64_t rows, const TuningRun &run = {});

/// Device memory the tuner's scratch buffers take for `rows` rows of
/// `spec`: getTuningBufferElements of every buffer, in bytes.
int64_t getTuningScratchBytes(const OpSpec &spec, int64_t rows,
                              const TuningRun &run = {});

/// The default bound of the tuner's scratch memory: twice what the largest
/// bucket is meant to move (getTuningRows), so that only rows beyond
/// about 64K elements tune at fewer rows than that.
constexpr int64_t kDefaultTuningScratchBytes = int64_t(512) << 20;

/// The rows to tune `bucket` at when scratch may take `budget` bytes:
/// `rows`, halved (down to the bucket's smallest row count) until the
/// scratch fits; 0 when not even the smallest fits.
int64_t fitTuningRows(const OpSpec &spec, RowBucket bucket, int64_t rows,
                      int64_t budget, const TuningRun &run = {});

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
/// the tiles fit `maxSharedBytes` (0: unchecked) and the accumulators and
/// K/V copies the registers (norm::verifyLaunchFor). Decode attention, whose
/// query tile holds a token's query heads of one kv head: warps from the fewest
/// whose 16 rows each hold that group, doubled up to 8, x the same block_n and
/// stages, in every bucket (each runs one token per sequence). Prefill on
/// sm_90a (a heuristic of the wgmma family,
/// norm::getWarpgroupAttentionHeuristic): 2 or 3 consumer warpgroups x block_n
/// 64-176 x the softmax overlapped or not, then the mma.sync candidates above.
/// Every candidate meets norm::verifyLaunchFor. The configuration `compiler`
/// gives `spec` untuned for `rows` on `target`: the sm_90a family where it
/// takes the op, else the compiler's heuristic.
LaunchConfig getPlannedHeuristic(KernelCompiler &compiler, const OpSpec &spec,
                                 int64_t rows, const TargetOptions &target);

std::vector<LaunchConfig> getTuningCandidates(const OpSpec &spec,
                                              RowBucket bucket,
                                              const LaunchConfig &heuristic,
                                              int64_t maxSharedBytes = 0);

} // namespace norm::jit

#endif // NORM_RUNTIME_CANDIDATES_H
