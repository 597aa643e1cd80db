//===- Candidates.h - row buckets and autotuning candidates -----*- C++ -*-===//
//
// The autotuner times a small, principled set of launch configurations per
// operation and row-count bucket. Everything here is a pure function of the
// operation, so the set can be unit-tested without a device.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_CANDIDATES_H
#define NORM_RUNTIME_CANDIDATES_H

#include "compiler/Compiler.h"

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

/// Device memory the tuner's scratch buffers take for `rows` rows of
/// `spec`: every 2-D buffer for `rows` rows, every 1-D buffer once.
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

/// Elements one thread may keep in registers (kMaxElementsPerThread of
/// dialects/NormDialect.h, which the kernel verifier enforces).
constexpr int64_t kMaxElementsPerThread = 64;
/// The longest rows whose shares fit in the registers of one CTA: 1024
/// threads x kMaxElementsPerThread elements.
constexpr int64_t kMaxRegisterRowLength = 1024 * kMaxElementsPerThread;

/// Whether the kernel of `spec` can keep longer rows than that: row kernels
/// (norm.fused_row) stage them in shared memory or stream them
/// (norm::getRowStorage); QK-Norm heads live in registers, and column
/// statistics map threads onto columns.
bool hasLongRowStorage(const OpSpec &spec);

/// Whether the kernel of `spec` with `launch` keeps each thread's share of a
/// row in registers (at most kMaxElementsPerThread elements), as the
/// compiler decides (norm::getRowStorage). Only kernels whose rows leave
/// registers depend on the shared memory of the target.
bool keepsRowInRegisters(const LaunchConfig &launch, const OpSpec &spec);

/// The rules of #norm.launch: vector 1/2/4/8, threads per row 1..16 (powers
/// of two) or multiples of 32 up to 1024, 1..32 warps that the rows divide,
/// rows per CTA a multiple of the rows a CTA works on at once.
bool isValidLaunch(const LaunchConfig &launch);
/// The rules a configuration must meet for the rows of `spec`: no thread
/// without work, and rows that fit in registers (up to
/// kMaxRegisterRowLength) kept there, at most kMaxElementsPerThread elements
/// per thread. Longer rows of row kernels fit any configuration (they are
/// staged or streamed); column statistics fit any configuration.
bool fitsRow(const LaunchConfig &launch, const OpSpec &spec);

/// Parses LaunchConfig::getMangledSuffix ("v8_t128_w4_r1").
std::optional<LaunchConfig> parseLaunchSuffix(std::string_view text);

/// The widest vector (elements per 16-byte access) that every row buffer
/// allows and that divides the row length, so contiguous rows stay aligned.
int64_t getMaxVector(const OpSpec &spec);

/// The configurations the tuner times for `bucket`, the heuristic's first (a
/// tie keeps it). Built from the shape of the row, not from a search:
/// - vector: the widest aligned width, and half of it for larger buckets;
/// - threads per row: one, two, four (and for larger buckets eight) vectors
///   per thread, plus the heuristic's ladder value and its neighbours;
/// - CTA shape: one row per CTA from 128 threads per row on; below, 128-thread
///   CTAs holding several rows (one warp for a single row), and for the
///   largest bucket also four times the rows per CTA, to amortize CTAs.
/// Rows that fit in registers get only configurations that keep them there:
/// staging a row that registers could hold only adds traffic. Longer rows
/// (row kernels beyond kMaxRegisterRowLength) get 1024 and 512 threads per
/// row, one row per CTA, each vector: four candidates at most, staged in
/// shared memory or streamed as the compiler's target allows.
/// Every candidate passes isValidLaunch and fitsRow.
std::vector<LaunchConfig> getTuningCandidates(const OpSpec &spec,
                                              RowBucket bucket,
                                              const LaunchConfig &heuristic);

/// The scalar (vector = 1) variant of `launch` served when a buffer is not
/// aligned for it: the same mapping, with more threads where one thread would
/// hold too many elements of a row that fits in registers. Longer rows of row
/// kernels keep the mapping (the kernel stages or streams them, as the
/// vector kernel does), and so do column statistics. nullopt when no scalar
/// configuration fits.
std::optional<LaunchConfig> getScalarVariant(const LaunchConfig &launch,
                                             const OpSpec &spec);

} // namespace norm::jit

#endif // NORM_RUNTIME_CANDIDATES_H
