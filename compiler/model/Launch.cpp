//===- Launch.cpp - launch configurations and their rules -----------------===//

#include "compiler/model/Launch.h"

#include "compiler/model/Buffers.h"
#include "compiler/model/Target.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

using namespace norm;

static int64_t divideCeil(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool isPowerOf2(int64_t value) {
  return value > 0 && (value & (value - 1)) == 0;
}

std::string LaunchConfig::getMangledSuffix() const {
  std::ostringstream os;
  os << 'v' << vector << "_t" << threadsPerRow << "_w" << warps << "_r"
     << rowsPerCta;
  if (isAttention())
    os << "_n" << blockN << "_s" << stages;
  if (isWarpgroupAttention())
    os << "_g" << warpgroups << (overlap ? "o" : "");
  return os.str();
}

std::optional<LaunchConfig> norm::parseLaunchSuffix(std::string_view text) {
  long long v, t, w, r, n = 0, st = 0, g = 0;
  char tail[3] = {0, 0, 0};
  std::string copy(text);
  int fields =
      std::sscanf(copy.c_str(), "v%lld_t%lld_w%lld_r%lld_n%lld_s%lld_g%lld%2c",
                  &v, &t, &w, &r, &n, &st, &g, tail);
  if (fields != 4 && fields != 6 && fields != 7 &&
      !(fields == 8 && tail[0] == 'o' && !tail[1]))
    return std::nullopt;
  LaunchConfig launch{v, t, w, r, n, st, g, fields == 8};
  if (!verifyLaunch(launch) || launch.getMangledSuffix() != text)
    return std::nullopt;
  return launch;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// The shape of the sm_90a attention family: its warps and rows follow
/// from the warpgroups (the prologue's rows need not divide the CTA's: it
/// guards them).
static Status verifyWarpgroupLaunch(const LaunchConfig &launch) {
  auto str = [](int64_t value) { return std::to_string(value); };
  int64_t g = launch.warpgroups;
  if (g < 1 || g > kMaxConsumerWarpgroups)
    return Status::invalid("warpgroups must be 1 to " +
                           str(kMaxConsumerWarpgroups) + ", got " + str(g));
  if (launch.warps != 4 * (g + 1) || launch.rowsPerCta != 64 * g)
    return Status::invalid(
        "the sm_90a attention family's " + str(g) +
        " consumer warpgroups of 64 query rows and a producer warpgroup "
        "need warps = " +
        str(4 * (g + 1)) + " and rows_per_cta = " + str(64 * g) + ", got " +
        str(launch.warps) + " and " + str(launch.rowsPerCta));
  if (launch.blockN < 16 || launch.blockN > 256 || launch.blockN % 16 != 0)
    return Status::invalid("the sm_90a attention family's block_n must be a "
                           "multiple of 16 from 16 to 256, got " +
                           str(launch.blockN));
  if (launch.stages < 2 || launch.stages > 4)
    return Status::invalid("the sm_90a attention family keeps 2 to 4 stages "
                           "of key/value tiles in its ring, got " +
                           str(launch.stages));
  if (launch.overlap != 0 && launch.overlap != 1)
    return Status::invalid("overlap must be 0 or 1, got " +
                           str(launch.overlap));
  return Status::success();
}

Status norm::verifyLaunch(const LaunchConfig &launch) {
  int64_t vector = launch.vector, threads = launch.threadsPerRow;
  if (vector != 1 && vector != 2 && vector != 4 && vector != 8)
    return Status::invalid("vector width must be 1, 2, 4 or 8, got " +
                           std::to_string(vector));
  if (threads < 1 || threads > 1024 || (threads < 32 && !isPowerOf2(threads)) ||
      (threads >= 32 && threads % 32 != 0))
    return Status::invalid("threads_per_row must be 1, 2, 4, 8, 16 or a "
                           "multiple of 32 up to 1024, got " +
                           std::to_string(threads));
  if (launch.warps < 1 || launch.warps > 32)
    return Status::invalid("warps must be in [1, 32], got " +
                           std::to_string(launch.warps));
  if (launch.getThreadsPerCta() % threads != 0)
    return Status::invalid("threads_per_row (" + std::to_string(threads) +
                           ") must divide the " +
                           std::to_string(launch.getThreadsPerCta()) +
                           " threads of a CTA of " +
                           std::to_string(launch.warps) + " warps");
  if (launch.isWarpgroupAttention())
    return verifyWarpgroupLaunch(launch);
  if (launch.overlap)
    return Status::invalid("overlap applies to the sm_90a attention family "
                           "(warpgroups) only");
  int64_t concurrent = launch.getConcurrentRows();
  if (launch.rowsPerCta < 1 || launch.rowsPerCta % concurrent != 0)
    return Status::invalid("rows_per_cta (" + std::to_string(launch.rowsPerCta) +
                           ") must be a positive multiple of the " +
                           std::to_string(concurrent) +
                           " rows a CTA works on at once");
  if (launch.blockN == 0 && launch.stages == 0)
    return Status::success();
  int64_t n = launch.blockN;
  if (n != 16 && n != 32 && n != 64 && n != 128)
    return Status::invalid("block_n must be 16, 32, 64 or 128 (multiples of "
                           "16 up to 256 in the sm_90a family), got " +
                           std::to_string(n));
  if (launch.stages != 1 && launch.stages != 2)
    return Status::invalid("stages must be 1 or 2, got " +
                           std::to_string(launch.stages));
  return Status::success();
}

int64_t norm::getAttentionCopiesPerThread(const OpSpec &spec,
                                          const LaunchConfig &launch) {
  int64_t bytes = launch.blockN * spec.hidden * 2 * getElementBytes(spec.input);
  return divideCeil(bytes / 16, std::max<int64_t>(launch.warps, 1) * 32);
}

int64_t norm::getAttentionThreadsPerRow(int64_t headDim) {
  int64_t threads = 1;
  while (threads * 8 < headDim)
    threads *= 2;
  return threads;
}

AttentionTileLayout norm::getAttentionTileLayout(int64_t headDim) {
  AttentionTileLayout layout;
  layout.rowChunks = divideCeil(headDim, 8);
  bool swizzled = layout.rowChunks % 8 == 0;
  layout.swizzle = swizzled ? 8 : 1;
  // An odd pitch walks the 8 bank groups with a stride prime to 8.
  layout.pitchChunks = swizzled ? layout.rowChunks : layout.rowChunks | 1;
  return layout;
}

AttentionTileLayout norm::getFp8TileLayout(int64_t headDim) {
  return getAttentionTileLayout(headDim / 2);
}

int64_t norm::getMaxFp8DecodeBlockN(int64_t headDim, int64_t keyWarps) {
  if (keyWarps > 1)
    return headDim > 192 ? 16 : headDim > 128 ? 32 : 64;
  return headDim > 64 ? 16 : 64;
}

int64_t norm::getAttentionWideStages(const OpSpec &spec,
                                     const LaunchConfig &launch) {
  return spec.kind == OpKind::AttentionDecode && spec.fp8Cache ? 1
                                                               : launch.stages;
}

WarpgroupAttentionMemory
norm::getWarpgroupAttentionMemory(const OpSpec &spec,
                                  const LaunchConfig &launch) {
  int64_t tile = launch.blockN * spec.hidden;
  return {launch.rowsPerCta * spec.hidden, launch.stages * tile,
          launch.stages * tile, 2 * launch.stages * 8};
}

int64_t norm::getAttentionSharedBytes(const OpSpec &spec,
                                      const LaunchConfig &launch) {
  if (launch.isWarpgroupAttention())
    return getWarpgroupAttentionMemory(spec, launch).getBytes();
  int64_t rowBytes = getAttentionTileLayout(spec.hidden).pitchChunks * 16;
  // An FP8 cache's tiles land in bytes of their own, read from there.
  int64_t fp8Bytes = spec.kind == OpKind::AttentionDecode && spec.fp8Cache
                         ? 2 * launch.stages * launch.blockN *
                               getFp8TileLayout(spec.hidden).pitchChunks * 16
                         : 0;
  int64_t tiles = (launch.rowsPerCta +
                   2 * getAttentionWideStages(spec, launch) * launch.blockN) *
                      rowBytes +
                  fp8Bytes;
  return std::max(tiles, getKeyWarpMergeBytes(spec, launch));
}

int64_t norm::getKeyWarpMergeBytes(const OpSpec &spec,
                                   const LaunchConfig &launch) {
  if (launch.getKeyWarps() == 1)
    return 0;
  // Per warp and lane: its rows' maxima and sum shares, its output blocks.
  return launch.warps * 32 * (4 + spec.hidden / 2) * 4;
}

LaunchConfig norm::fitAttentionRows(const OpSpec &spec, LaunchConfig launch,
                                    int64_t rowTiles, int64_t maxSharedBytes) {
  if (spec.kind == OpKind::AttentionDecode &&
      verifyLaunchFor(spec, launch, maxSharedBytes))
    return launch;
  launch.rowsPerCta = 16 * rowTiles * launch.warps;
  if (rowTiles > 1 && !verifyLaunchFor(spec, launch, maxSharedBytes))
    launch.rowsPerCta = 16 * launch.warps;
  return launch;
}

bool norm::usesStagedOutput(const OpSpec &spec, const LaunchConfig &launch) {
  return spec.kind == OpKind::Attention &&
         getAttentionAccumulators(spec, launch) <=
             kMaxAccumulatorsForStagedOutput;
}

int64_t norm::getAttentionAccumulators(const OpSpec &spec,
                                       const LaunchConfig &launch) {
  return launch.getRowTiles() *
         (spec.hidden / 2 + launch.blockN / (2 * launch.getKeyWarps()));
}

int64_t norm::getWarpgroupAttentionAccumulators(int64_t headDim, int64_t blockN,
                                                bool overlapSoftmax) {
  return headDim / 2 + (overlapSoftmax ? blockN : blockN / 2);
}

int64_t norm::getMaxWarpgroupAttentionAccumulators(int64_t headDim,
                                                   bool overlapSoftmax,
                                                   int64_t warpgroups) {
  if (warpgroups >= 3)
    return kMaxWarpgroupAttentionAccumulatorsAt3;
  return overlapSoftmax && headDim > 128
             ? kMaxWarpgroupAttentionAccumulatorsOverlappedWide
             : kMaxWarpgroupAttentionAccumulators;
}

bool norm::fitsWarpgroupAttentionRegisters(int64_t headDim, int64_t blockN,
                                           bool overlapSoftmax,
                                           int64_t warpgroups) {
  return getWarpgroupAttentionAccumulators(headDim, blockN, overlapSoftmax) <=
         getMaxWarpgroupAttentionAccumulators(headDim, overlapSoftmax,
                                              warpgroups);
}

/// The rules of the sm_90a family (passes/WarpgroupAttention.h) beyond its
/// shape (verifyWarpgroupLaunch).
static Status verifyWarpgroupAttentionLaunch(const OpSpec &spec,
                                             const LaunchConfig &launch,
                                             int64_t maxSharedBytes) {
  auto str = [](int64_t value) { return std::to_string(value); };
  if (spec.kind != OpKind::Attention)
    return Status::invalid("the sm_90a attention family (warpgroups) "
                           "computes prefill attention only");
  if (spec.hidden % 64 != 0)
    return Status::invalid("the sm_90a attention family reads 64-column TMA "
                           "boxes: its head dim must be a multiple of 64, "
                           "got " +
                           str(spec.hidden));
  bool keyNorm =
      spec.qkStatistic != Statistic::None || spec.rope != RopeStyle::None;
  if (keyNorm && !spec.keysPrepared)
    return Status::invalid(
        "the sm_90a attention family reads K as TMA brings it: its keys "
        "must be prepared (norm.k_prepare) where they are normalized or "
        "rotated");
  bool overlap = launch.overlap != 0;
  if (!fitsWarpgroupAttentionRegisters(spec.hidden, launch.blockN, overlap,
                                       launch.warpgroups))
    return Status::invalid(
        "the sm_90a attention family at head dim " + str(spec.hidden) +
        " with block_n " + str(launch.blockN) +
        (overlap ? " and the softmax overlapped" : "") + " keeps " +
        str(getWarpgroupAttentionAccumulators(spec.hidden, launch.blockN,
                                              overlap)) +
        " f32 accumulators per thread of " + str(launch.warpgroups) +
        " consumer warpgroups, more than the " +
        str(getMaxWarpgroupAttentionAccumulators(spec.hidden, overlap,
                                                 launch.warpgroups)) +
        " that its registers hold; use a smaller block_n" +
        (overlap ? " or no overlap" : ""));
  int64_t shared = getAttentionSharedBytes(spec, launch);
  if (maxSharedBytes > 0 && shared > maxSharedBytes)
    return Status::invalid("attention tiles take " + str(shared) +
                           " bytes of shared memory, more than the target's " +
                           str(maxSharedBytes) +
                           "; use fewer warpgroups, a smaller block_n or "
                           "fewer stages");
  return Status::success();
}

/// The attention rules of verifyLaunchFor.
static Status verifyAttentionLaunch(const OpSpec &spec,
                                    const LaunchConfig &launch,
                                    int64_t maxSharedBytes) {
  auto str = [](int64_t value) { return std::to_string(value); };
  if (!launch.isAttention())
    return Status::invalid("attention needs a launch configuration with "
                           "block_n and stages");
  if (launch.vector * getElementBytes(spec.input) != kMaxAccessBytes)
    return Status::invalid("attention moves 16-byte vectors: vector must be " +
                           str(kMaxAccessBytes / getElementBytes(spec.input)) +
                           ", got " + str(launch.vector));
  int64_t threads = getAttentionThreadsPerRow(spec.hidden);
  if (launch.threadsPerRow != threads)
    return Status::invalid("attention at head dim " + str(spec.hidden) +
                           " maps " + str(threads) +
                           " threads onto a head row, got threads_per_row " +
                           str(launch.threadsPerRow));
  if (launch.isWarpgroupAttention())
    return verifyWarpgroupAttentionLaunch(spec, launch, maxSharedBytes);
  bool decode = spec.kind == OpKind::AttentionDecode;
  int64_t maxRowTiles = decode ? 1 : 2;
  int64_t rowTiles = launch.getRowTiles();
  int64_t keyWarps = launch.getKeyWarps();
  if (launch.warps > 8 || rowTiles > maxRowTiles ||
      launch.rowsPerCta % 16 != 0 ||
      launch.rowsPerCta * keyWarps != 16 * rowTiles * launch.warps ||
      (keyWarps > 1 && !decode))
    return Status::invalid(
        "attention gives each of at most 8 warps 16" +
        std::string(maxRowTiles > 1 ? " or 32" : "") + " query rows" +
        (decode ? " (or 16 to a group of warps that split the key tiles)"
                : "") +
        ": rows_per_cta must be " +
        (decode ? "16 times a divisor of " + str(launch.warps)
                : str(16 * launch.warps) + " or " + str(32 * launch.warps)) +
        ", got " + str(launch.rowsPerCta));
  if (launch.blockN < 16 * keyWarps)
    return Status::invalid(
        "decode attention's " + str(keyWarps) +
        " warps that share a tile of query rows take slices of at least 16 "
        "keys: block_n must be at least " +
        str(16 * keyWarps) + ", got " + str(launch.blockN));
  int64_t accumulators = getAttentionAccumulators(spec, launch);
  bool eightWarps = launch.warps > 4;
  int64_t maxAccumulators = eightWarps || rowTiles > 1
                                ? kMaxAttentionAccumulatorsAt8Warps
                                : kMaxAttentionAccumulators;
  if (accumulators > maxAccumulators)
    return Status::invalid(
        "attention at head dim " + str(spec.hidden) + " with block_n " +
        str(launch.blockN) + " and " + str(16 * rowTiles) +
        " query rows a warp keeps " + str(accumulators) +
        " f32 accumulators per thread, more than the " + str(maxAccumulators) +
        " that registers hold" + (eightWarps ? " beside 8 warps' copies" : "") +
        "; use " + (eightWarps ? "4 warps" + std::string(rowTiles > 1 ? ", " : " or ") : "") +
        "a smaller block_n" + (rowTiles > 1 ? " or 16 query rows a warp" : ""));
  int64_t copies = getAttentionCopiesPerThread(spec, launch);
  int64_t maxCopies = eightWarps ? kMaxAttentionCopiesPerThreadAt8Warps
                                 : kMaxAttentionCopiesPerThread;
  if (copies > maxCopies)
    return Status::invalid(
        "attention at head dim " + str(spec.hidden) + " with block_n " +
        str(launch.blockN) + " and " + str(launch.warps) + " warps issues " +
        str(copies) +
        " 16-byte copies of K and V per thread and key tile, more than the " +
        str(maxCopies) +
        " whose addresses registers hold beside the accumulators; use " +
        (eightWarps ? "4 warps" : "more warps") + " or a smaller block_n");
  if (spec.kind == OpKind::AttentionDecode &&
      (launch.blockN * spec.hidden > kMaxDecodeTileElements ||
       (spec.hidden > 128 && launch.warps > 4) ||
       (spec.hidden > kMaxDecodeHeadDimAt32Keys &&
        (launch.blockN > 16 || launch.warps != 4))))
    return Status::invalid(
        "decode attention at head dim " + str(spec.hidden) + " with block_n " +
        str(launch.blockN) + " and " + str(launch.warps) +
        " warps does not fit the registers (key tiles of at most " +
        str(kMaxDecodeTileElements) +
        " elements, at most 4 warps beyond head dim 128, 4 warps and key "
        "tiles of 16 beyond " +
        str(kMaxDecodeHeadDimAt32Keys) + ")");
  if (spec.kind == OpKind::AttentionDecode && spec.fp8Cache &&
      launch.blockN > getMaxFp8DecodeBlockN(spec.hidden, keyWarps))
    return Status::invalid(
        "decode attention over an FP8 cache at head dim " + str(spec.hidden) +
        " with block_n " + str(launch.blockN) +
        " does not fit the registers (key tiles of at most " +
        str(getMaxFp8DecodeBlockN(spec.hidden, keyWarps)) + ")");
  int64_t shared = getAttentionSharedBytes(spec, launch);
  if (maxSharedBytes > 0 && shared > maxSharedBytes)
    return Status::invalid("attention tiles take " + str(shared) +
                           " bytes of shared memory, more than the target's " +
                           str(maxSharedBytes) + "; use fewer warps, a "
                           "smaller block_n or one stage");
  return Status::success();
}

/// The longest row of `spec` that one CTA keeps (in `storage`) without
/// spilling: the CTA size that holds the most (a thread of 1024 has half
/// the registers of one of 512).
static int64_t getMostElements(const OpSpec &spec, RowStorage storage) {
  int64_t most = 0;
  for (int64_t threads : {256, 512, 1024})
    most = std::max(most, threads * getMaxElementsPerThread(
                                        spec, threads, getMaxVector(spec),
                                        storage));
  return most;
}

/// A backward kernel whose rows leave registers: v and grad_output staged
/// in shared memory, the column sums of the thread's share in registers.
static Status verifyStagedBackward(const OpSpec &spec,
                                   const LaunchConfig &launch,
                                   int64_t maxSharedBytes) {
  int64_t length = getRowLength(spec);
  int64_t most = getMostElements(spec, RowStorage::Shared);
  if (length > most)
    return Status::error(
        ErrorCode::Unsupported,
        "the backward kernel's f32 column sums of rows of " +
            std::to_string(length) +
            " elements do not fit in the registers of one CTA (at most " +
            std::to_string(most) + " elements); such rows are not supported");
  if (launch.getThreadsPerCta() > kMaxStagedBackwardThreads)
    return Status::invalid(
        "launch configuration keeps " +
        std::to_string(getElementsPerThread(spec, launch)) +
        " elements of a row per thread, more than the registers of a CTA of " +
        std::to_string(launch.getThreadsPerCta()) +
        " threads hold, and a backward kernel stages longer rows only in "
        "CTAs of at most " + std::to_string(kMaxStagedBackwardThreads) +
        " threads; use fewer warps");
  if (!fitsInRegisters(spec, launch, RowStorage::Shared))
    return Status::invalid(
        "launch configuration keeps the column sums of " +
        std::to_string(getElementsPerThread(spec, launch)) +
        " elements of a row per thread in registers, more than the " +
        std::to_string(getMaxElementsPerThread(
            spec, launch.getThreadsPerCta(), launch.vector,
            RowStorage::Shared)) +
        " a thread of a CTA of " + std::to_string(launch.getThreadsPerCta()) +
        " threads holds without spilling; use more threads per row");
  if (maxSharedBytes <= 0)
    return Status::success();
  int64_t available = maxSharedBytes - kReservedSharedBytes;
  int64_t row = getStagedRowBytes(spec, launch.vector);
  if (row > available)
    return Status::error(
        ErrorCode::Unsupported,
        "a backward row of " + std::to_string(length) +
            " elements takes " + std::to_string(row) +
            " bytes of shared memory staged (v and grad_output), more than "
            "the " + std::to_string(available) +
            " a CTA of the target may use; such rows are not supported "
            "there");
  if (launch.getConcurrentRows() * row > available)
    return Status::invalid(
        "launch configuration stages " +
        std::to_string(launch.getConcurrentRows()) + " rows of " +
        std::to_string(row) + " bytes at once, more than the " +
        std::to_string(available) +
        " bytes of shared memory a CTA of the target may use; use fewer rows "
        "at once");
  return Status::success();
}

/// Why a kernel that needs its rows held whole (`need`: what needs them)
/// cannot have them: streamed rows of `spec` under `launch`. Unsupported
/// where no launch stages them (`otherwise` says what then), invalid where
/// this launch stages too many at once.
static Status refuseStreamedRows(const OpSpec &spec, const LaunchConfig &launch,
                                 int64_t maxSharedBytes,
                                 const std::string &need,
                                 const char *otherwise) {
  std::string what = need +
                     " (in registers or staged in shared memory), but rows "
                     "of " +
                     std::to_string(getRowLength(spec)) + " elements ";
  int64_t row = getStagedRowBytes(spec, launch.vector);
  int64_t available = maxSharedBytes - kReservedSharedBytes;
  if (row > available)
    return Status::error(
        ErrorCode::Unsupported,
        what + "take " + std::to_string(row) + " bytes staged, more than the " +
            std::to_string(std::max<int64_t>(available, 0)) +
            " a CTA of the target may use" + otherwise);
  return Status::invalid(what + "are streamed with this launch (" +
                         std::to_string(launch.getConcurrentRows()) +
                         " rows of " + std::to_string(row) +
                         " bytes at once do not fit the shared memory of a "
                         "CTA): stage fewer rows at once");
}

/// In place: registers and staged rows store residual_out after the
/// exchange, when every thread has read the row. Streamed rows store it in
/// their first pass, each thread over its own elements; that is exact where
/// no other thread reads them in that pass and the second pass reads v
/// back from residual_out (rms and l2 rows: readsResidualBack), not where
/// every thread reads the first element (the mean-var pivot) or the second
/// pass reads the overwritten input again (an f32 residual stream).
static Status verifyInPlaceStorage(const OpSpec &spec,
                                   const LaunchConfig &launch,
                                   int64_t maxSharedBytes) {
  Statistic statistic = getStatistic(spec);
  if (spec.residualOver == RowOperand::None || statistic == Statistic::None ||
      (statistic != Statistic::MeanVar && readsResidualBack(spec)) ||
      getRowStorage(spec, launch, maxSharedBytes) != RowStorage::Streamed)
    return Status::success();
  return refuseStreamedRows(
      spec, launch, maxSharedBytes,
      "residual_out over '" +
          std::string(getRowOperandName(spec.residualOver)) + "' needs " +
          (statistic == Statistic::MeanVar
               ? "mean_var rows read whole before they are written (every "
                 "thread reads their first element)"
               : "rows read whole before they are written, or read back from "
                 "residual_out (not with an f32 residual stream)"),
      ", and streamed rows store residual_out in their first pass: such "
      "rows cannot write it in place");
}

/// Per-token FP8 scales need each row's amax before its first quantized
/// element: rows in registers or staged in shared memory normalize twice
/// (the amax, then the quantized stores); streamed rows would read global
/// memory a third time.
static Status verifyQuantizedStorage(const OpSpec &spec,
                                     const LaunchConfig &launch,
                                     int64_t maxSharedBytes) {
  if (spec.outputScale != OutputScale::PerToken ||
      getRowStorage(spec, launch, maxSharedBytes) != RowStorage::Streamed)
    return Status::success();
  return refuseStreamedRows(spec, launch, maxSharedBytes,
                            "per-token FP8 scales need rows held whole",
                            "; use a static scale there");
}

std::vector<RowSegment> norm::getRowSegments(const OpSpec &spec) {
  int64_t length = getRowLength(spec), rotary = spec.rotaryDim;
  if (!isHeadNorm(spec.kind) || spec.rope == RopeStyle::None ||
      rotary <= 0 || rotary > length)
    return {{0, length}};
  std::vector<RowSegment> segments;
  if (spec.rope == RopeStyle::NeoX)
    segments = {{0, rotary / 2}, {rotary / 2, rotary / 2}};
  else
    segments = {{0, rotary}};
  if (rotary < length)
    segments.push_back({rotary, length - rotary});
  return segments;
}

Status norm::verifyRotaryLayout(const OpSpec &spec,
                                const LaunchConfig &launch) {
  if (!isHeadNorm(spec.kind) || spec.rope == RopeStyle::None)
    return Status::success();
  bool neox = spec.rope == RopeStyle::NeoX;
  int64_t vector = launch.vector;
  int64_t boundary = neox ? spec.rotaryDim / 2 : spec.rotaryDim;
  if (boundary % vector == 0 && (neox || vector % 2 == 0))
    return Status::success();
  return Status::invalid(
      std::string(spec.kind == OpKind::KeyPrepare ? "K-prepare"
                                                  : "the QK-Norm prologue") +
      " turns " + std::string(getRopeStyleName(spec.rope)) +
      " pairs within a thread: the vector must " +
      (neox ? "" : "be even and ") + "divide " +
      (neox ? "rotary_dim / 2 (" : "rotary_dim (") + std::to_string(boundary) +
      "), got " + std::to_string(vector));
}

Status norm::verifyLaunchFor(const OpSpec &spec, const LaunchConfig &launch,
                             int64_t maxSharedBytes) {
  if (Status status = verifyLaunch(launch); !status)
    return status;
  if (isAttention(spec.kind))
    return verifyAttentionLaunch(spec, launch, maxSharedBytes);
  if (launch.isAttention())
    return Status::invalid("block_n and stages apply to attention only");
  for (const BufferSpec &buffer : getBuffers(spec)) {
    if (!hasVectorRows(buffer))
      continue;
    int64_t bytes = launch.vector * getElementBytes(buffer.type);
    if (bytes > kMaxAccessBytes)
      return Status::invalid(
          "launch vector width " + std::to_string(launch.vector) + " of " +
          std::string(getElementTypeName(buffer.type)) + " moves " +
          std::to_string(bytes) + " bytes per access (at most " +
          std::to_string(kMaxAccessBytes) + ")");
  }
  if (spec.kind == OpKind::BatchNormStats || spec.kind == OpKind::ColumnSum)
    return Status::success();

  int64_t length = getRowLength(spec);
  int64_t vector = launch.vector, threads = launch.threadsPerRow;
  if (getRowsPerToken(spec) > 1 && length % vector != 0)
    return Status::invalid(
        "launch configuration's vector (" + std::to_string(vector) +
        ") must divide the " + std::to_string(length) +
        " elements of a group or head, which start one after another");
  if ((threads - 1) * vector >= length)
    return Status::invalid(
        "launch configuration leaves threads without work: " +
        std::to_string(threads) + " threads x vector " +
        std::to_string(vector) + " for rows of " + std::to_string(length) +
        " elements");
  if (Status status = verifyRotaryLayout(spec, launch); !status)
    return status;
  if (Status status = verifyInPlaceStorage(spec, launch, maxSharedBytes);
      !status)
    return status;
  if (Status status = verifyQuantizedStorage(spec, launch, maxSharedBytes);
      !status)
    return status;
  if ((isFusedRow(spec) && !spec.backward) || fitsInRegisters(spec, launch))
    return Status::success();
  if (spec.backward)
    return verifyStagedBackward(spec, launch, maxSharedBytes);
  // Rows that only registers may hold: the CTA size that holds the most (a
  // thread of 1024 has half the registers of one of 512).
  int64_t most = getMostElements(spec, RowStorage::Registers);
  // A valid operation this kernel cannot hold: Unsupported.
  if (length > most)
    return Status::error(ErrorCode::Unsupported,
                         "rows of " + std::to_string(length) +
                             " elements do not fit in the registers of one "
                             "CTA (at most " + std::to_string(most) +
                             "), where this kernel keeps them; such rows "
                             "are not supported");
  return Status::invalid(
      "launch configuration keeps " +
      std::to_string(getElementsPerThread(spec, launch)) +
      " elements of a row per thread in registers, more than the " +
      std::to_string(getMaxElementsPerThread(spec, launch.getThreadsPerCta(),
                                             launch.vector)) +
      " a thread of a CTA of " + std::to_string(launch.getThreadsPerCta()) +
      " threads holds without spilling; use more threads per row");
}

int64_t norm::getChunksInFlight(const OpSpec &spec, const LaunchConfig &launch) {
  int64_t vector = std::max<int64_t>(launch.vector, 1);
  int64_t held =
      getMaxElementsPerThread(spec, launch.getThreadsPerCta(), vector) / vector;
  return std::clamp<int64_t>(held / 2, 1, kMaxChunksInFlight);
}

int64_t norm::getRegistersPerThread(int64_t threadsPerCta) {
  // ptxas counts the CTA in whole groups of 4 warps: 576 and 640 threads
  // take 96 registers at most, 800 take 72 (`ptxas -v`, sm_90, CUDA 13).
  int64_t threads = divideCeil(std::max<int64_t>(threadsPerCta, 1), 128) * 128;
  int64_t share = kRegistersPerCta / threads;
  return std::min<int64_t>(share / 8 * 8, kMaxRegistersPerThread);
}

ElementType norm::getStreamType(const OpSpec &spec) {
  return spec.f32Residual ? ElementType::f32 : spec.input;
}

int64_t norm::getRegisterBytesPerVector(const OpSpec &spec, int64_t vector,
                                        RowStorage storage) {
  // A vector of `vector` elements of `type` in whole 32-bit registers.
  auto bytes = [&](ElementType type) {
    return divideCeil(vector * getElementBytes(type), 4) * 4;
  };
  if (spec.kind == OpKind::QKNormPrologue)
    return bytes(spec.input) + (spec.hasWeight ? 2 * bytes(spec.param) : 0);
  if (spec.kind == OpKind::KeyPrepare)
    return bytes(spec.input) * (spec.copyValues ? 2 : 1) +
           (spec.hasWeight ? bytes(spec.param) : 0);
  // v and grad_output, the weight and the weight gradient's column sums
  // (and the bias gradient's) are all live in f32 across the reduction:
  // measured with `ptxas -v` (sm_90), bf16 RMSNorm rows of 16 elements a
  // thread take 109 registers at 512 threads, 32 spill at 128 (and 8 at
  // 64, in CTAs of 1024 threads: see kBackwardRegisterOverhead); f32
  // LayerNorm with a bias spills at 16 (test/Target/ptxas-backward.mlir).
  // Staged, the weight is read again from the cache where it is used.
  // mean_var rows also keep x-hat: LayerNorm's backward spilled 8-64 bytes
  // at 8 elements a thread in 96 registers without it (bf16 and f32 at
  // 4544 and 5120, norm-cpu-check --engine=ptxas).
  int64_t columnSums = (spec.hasWeight ? 1 : 0) + (spec.hasBias ? 1 : 0);
  int64_t normalized = getStatistic(spec) == Statistic::MeanVar ? 1 : 0;
  if (spec.backward)
    return bytes(ElementType::f32) *
           (storage == RowStorage::Registers
                ? 2 + (spec.hasWeight ? 1 : 0) + columnSums + normalized
                : columnSums);
  if (storage != RowStorage::Registers)
    return 0;
  int64_t total = bytes(getStreamType(spec));
  if (spec.hasWeight)
    total += bytes(spec.param);
  if (spec.hasBias)
    total += bytes(spec.param);
  if (spec.kind == OpKind::BatchNormInference) // the mean, 1 / std in f32
    total += bytes(spec.statsType) + bytes(ElementType::f32);
  // Measured with `ptxas -v` (sm_80, sm_89 and sm_90, CUDA 13) at 48
  // elements a thread in 128 registers: the skip joins y in f32 (f16
  // RMSNorm + skip spilled 8 bytes on sm_80 and sm_89 counted in its type),
  // and an in-place kernel, whose rows may alias, keeps v a second time
  // (LayerNorm + add in place spilled 4-28 bytes on all three).
  if (spec.hasSkip)
    total += bytes(ElementType::f32);
  if (spec.outputOver != RowOperand::None ||
      spec.residualOver != RowOperand::None)
    total += bytes(getStreamType(spec));
  return total;
}

int64_t norm::getLiveBytesPerVector(const OpSpec &spec, int64_t vector) {
  int64_t bytes = getRegisterBytesPerVector(spec, vector, RowStorage::Registers);
  int64_t stream =
      divideCeil(vector * getElementBytes(getStreamType(spec)), 4) * 4;
  // FP8 outputs: the scaled f32 values and their packing, and with
  // per-token scales y in f32 across the amax exchange besides v.
  int64_t fp8 = 0;
  if (isFp8ElementType(spec.output))
    fp8 = vector * (spec.outputScale == OutputScale::PerToken ? 4 : 2);
  return vector * 4 + (bytes - stream) + fp8;
}

int64_t norm::getElementsPerThread(const OpSpec &spec,
                                   const LaunchConfig &launch) {
  int64_t perChunk = launch.threadsPerRow * launch.vector, chunks = 0;
  for (RowSegment segment : getRowSegments(spec))
    chunks += divideCeil(segment.length, perChunk);
  return chunks * launch.vector;
}

int64_t norm::getMaxElementsPerThread(const OpSpec &spec,
                                      int64_t threadsPerCta, int64_t vector,
                                      RowStorage storage) {
  vector = std::max<int64_t>(vector, 1);
  int64_t most = kMaxElementsPerThread;
  if (spec.backward && storage != RowStorage::Registers) {
    if (threadsPerCta > kMaxStagedBackwardThreads)
      return 0;
    most = kMaxStagedBackwardElements;
  }
  int64_t bytesPerVector = getRegisterBytesPerVector(spec, vector, storage);
  if (bytesPerVector == 0)
    return most / vector * vector;
  int64_t rowRegisters =
      std::min(getRegistersPerThread(threadsPerCta), kRegisterBudget) -
      (spec.backward ? kBackwardRegisterOverhead : kRegisterOverhead);
  // 4 bytes a register, kRegisterBytesPerResidentByte / 2 of them a byte;
  // and at least v in f32 beside the parameters (getLiveBytesPerVector).
  int64_t liveBytes = bytesPerVector * kRegisterBytesPerResidentByte / 2;
  if (!spec.backward && storage == RowStorage::Registers)
    liveBytes = std::max(liveBytes, getLiveBytesPerVector(spec, vector));
  int64_t vectors = rowRegisters * 4 / liveBytes;
  return std::clamp<int64_t>(vectors * vector, 0, most / vector * vector);
}

bool norm::fitsInRegisters(const OpSpec &spec, const LaunchConfig &launch,
                           RowStorage storage) {
  if (launch.vector < 1 || launch.threadsPerRow < 1)
    return false;
  if (storage != RowStorage::Registers && !spec.backward)
    return true;
  // Whole vectors per thread, compared by division: huge rows must not
  // overflow the product.
  int64_t vectors = divideCeil(getRowLength(spec),
                               launch.threadsPerRow * launch.vector);
  return vectors <= getMaxElementsPerThread(spec, launch.getThreadsPerCta(),
                                            launch.vector, storage) /
                        launch.vector;
}

std::string_view norm::getRowStorageSuffix(RowStorage storage) {
  switch (storage) {
  case RowStorage::Registers:
    return "";
  case RowStorage::Shared:
    return "_smem";
  case RowStorage::Streamed:
    return "_stream";
  }
  return "";
}

int64_t norm::getBackwardGridMultiple(const OpSpec &spec,
                                      const LaunchConfig &launch) {
  if (!hasGroupedWeightGradients(spec))
    return 1;
  return spec.groups / std::gcd(spec.groups, launch.getConcurrentRows());
}

int64_t norm::getPersistentGridX(int64_t kernelRows, int64_t rowsPerCta,
                                 int64_t maxGridX, int64_t multiple) {
  int64_t blocks = divideCeil(std::max<int64_t>(kernelRows, 0), rowsPerCta);
  int64_t most = std::max(maxGridX / multiple, int64_t(1)) * multiple;
  return std::min(divideCeil(blocks, multiple) * multiple, most);
}

int64_t norm::getGradPartialRows(const OpSpec &spec, const LaunchConfig &launch,
                                 int64_t rows) {
  int64_t kernelRows = std::max<int64_t>(rows, 0) * getRowsPerToken(spec);
  int64_t threadGroups =
      getPersistentGridX(kernelRows, launch.rowsPerCta, kBackwardCtas,
                         getBackwardGridMultiple(spec, launch)) *
      launch.getConcurrentRows();
  return hasGroupedWeightGradients(spec) ? threadGroups / spec.groups
                                         : threadGroups;
}

std::vector<ElementType> norm::getStagedTypes(const OpSpec &spec) {
  if (spec.backward)
    return {spec.input, spec.output};
  return {getStreamType(spec)};
}

int64_t norm::getStagedRegionBytes(const OpSpec &spec, ElementType type,
                                   int64_t vector) {
  int64_t vectors = divideCeil(getRowLength(spec), vector);
  return divideCeil(vectors * vector * getElementBytes(type), 16) * 16;
}

int64_t norm::getStagedRowBytes(const OpSpec &spec, int64_t vector) {
  int64_t bytes = 0;
  for (ElementType type : getStagedTypes(spec))
    bytes += getStagedRegionBytes(spec, type, vector);
  return bytes;
}

bool norm::readsResidualBack(const OpSpec &spec) {
  return spec.writeResidual && getStatistic(spec) != Statistic::None &&
         getStreamType(spec) == spec.input;
}

RowStorage norm::getRowStorage(const OpSpec &spec, const LaunchConfig &launch,
                               int64_t maxSharedBytes) {
  if (!isFusedRow(spec) || fitsInRegisters(spec, launch))
    return RowStorage::Registers;
  // Without a statistic, one pass over the row is all there is, unless
  // per-token FP8 scales need its amax first.
  if (getStatistic(spec) == Statistic::None &&
      spec.outputScale != OutputScale::PerToken)
    return RowStorage::Streamed;
  if (launch.getConcurrentRows() * getStagedRowBytes(spec, launch.vector) <=
          maxSharedBytes - kReservedSharedBytes &&
      fitsInRegisters(spec, launch, RowStorage::Shared))
    return RowStorage::Shared;
  return RowStorage::Streamed;
}

int64_t norm::getSharedBytes(const OpSpec &spec, const LaunchConfig &launch,
                             int64_t maxSharedBytes) {
  if (isAttention(spec.kind))
    return getAttentionSharedBytes(spec, launch);
  if (getRowStorage(spec, launch, maxSharedBytes) != RowStorage::Shared)
    return 0;
  return launch.getConcurrentRows() * getStagedRowBytes(spec, launch.vector);
}

int64_t norm::getBufferAlignment(ElementType type, int64_t vector) {
  return std::min<int64_t>(vector * getElementBytes(type), kMaxAccessBytes);
}

int64_t norm::getMaxVector(const OpSpec &spec) {
  int64_t widest = 1;
  for (const BufferSpec &buffer : getBuffers(spec))
    if (hasVectorRows(buffer))
      widest = std::max(widest, getElementBytes(buffer.type));
  int64_t vector = kMaxAccessBytes / widest;
  int64_t length = getRowLength(spec);
  while (vector > 1 && length % vector != 0)
    vector /= 2;
  return vector;
}

/// The next valid threads-per-row value above `threads`.
static int64_t nextThreadsPerRow(int64_t threads) {
  return threads < 32 ? threads * 2 : threads + 32;
}

std::optional<LaunchConfig> norm::getScalarFallback(const OpSpec &spec,
                                                    const LaunchConfig &launch) {
  // Attention needs its 16-byte tiles (cp.async, ldmatrix).
  if (launch.vector == 1 || isAttention(spec.kind))
    return std::nullopt;
  LaunchConfig scalar = launch;
  scalar.vector = 1;
  // A share that registers held at `vector` may need more threads at one
  // element per access; staged, streamed and column rows loop over any
  // number of elements per thread.
  bool inRegisters = spec.kind != OpKind::BatchNormStats &&
                     spec.kind != OpKind::ColumnSum &&
                     fitsInRegisters(spec, launch);
  auto widen = [&] {
    int64_t threads = nextThreadsPerRow(scalar.threadsPerRow);
    scalar.threadsPerRow = threads;
    if (threads < 32)
      return;
    // The CTA holds whole rows: a multiple of the row's warps, or one row.
    int64_t rowWarps = threads / 32;
    scalar.warps = divideCeil(scalar.warps, rowWarps) * rowWarps;
    if (scalar.warps > 32)
      scalar.warps = rowWarps;
  };
  while (inRegisters && !fitsInRegisters(spec, scalar) &&
         scalar.threadsPerRow < 1024 &&
         nextThreadsPerRow(scalar.threadsPerRow) <= getRowLength(spec))
    widen();
  // Rows per CTA stay a multiple of the rows the CTA works on at once.
  int64_t concurrent = scalar.getConcurrentRows();
  scalar.rowsPerCta = divideCeil(scalar.rowsPerCta, concurrent) * concurrent;
  if (!verifyLaunchFor(spec, scalar))
    return std::nullopt;
  return scalar;
}
