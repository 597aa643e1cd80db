//===- LaunchHeuristic.cpp - the analytical launch configuration ----------===//
//
// The configuration a kernel gets when nobody tuned it. Row kernels keep each
// thread's share of a row in registers where the CTA's registers hold it
// (fitsInRegisters: at most 64 elements a thread, fewer in CTAs of more than
// 512 threads), so the choice is how many threads share a row:
//
//  - short rows (up to 1024 elements) follow the QuACK / FlashInfer ladder:
//    8 threads (<= 64), 16 (<= 128), 32 (<= 1024), several rows per
//    128-thread CTA;
//  - longer rows get about 8 elements per thread (16 above 8192), the
//    configurations the MLIR feasibility probe on an H200 found fastest:
//    256 threads for 2048, 896 for 7168, 1024 for 8192 and 16384;
//  - rows whose shares do not fit the registers of a 1024-thread CTA (bf16
//    RMSNorm beyond about 32K elements) get 1024 threads, one row per CTA:
//    the kernel stages them in shared memory, or streams rows too long for
//    the shared memory of the target (getRowStorage: bf16 rows up to 115712
//    elements are staged on sm_90, 82944 on sm_80, 50176 on sm_89). The
//    configuration is the same either way, so it does not depend on the
//    chip. Backward kernels stage rows beyond their registers (v and
//    grad_output; bf16 RMSNorm beyond 8192 elements) and keep the f32
//    column sums of their share in registers: the most threads whose
//    registers hold those (512 for f32 LayerNorm with a bias at 16384).
//    Short backward rows (GroupNorm's groups) that no thread count holds
//    in registers at the widest vector without idle threads take a
//    narrower one first.
//
// Accesses are 16 bytes wide (8 x bf16, 4 x f32) when the row length allows
// it: a row of odd length cannot keep consecutive rows aligned, so it gets
// the widest vector that divides it.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/Launch.h"

#include "compiler/model/Buffers.h"

#include <algorithm>
#include <tuple>

using namespace norm;

namespace {

/// Threads of a CTA for the short-row ladder and column statistics.
constexpr int64_t kSmallCtaThreads = 128;
/// CTAs worth launching before a CTA loops over several row groups: about
/// eight waves of 128-thread CTAs on a 132-SM GPU.
constexpr int64_t kTargetCtas = 8192;
constexpr int64_t kMaxRowsPerCtaFactor = 8;

int64_t divideCeil(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t floorPowerOf2(int64_t value) {
  int64_t power = 1;
  while (power * 2 <= value)
    power *= 2;
  return power;
}

/// Completes a configuration from its vector and threads per row: CTAs of
/// 128 threads holding several short rows (or one long row), and for short
/// rows a CTA loops over several row groups when the grid would otherwise
/// have far more CTAs than the GPU runs at once, which amortizes its
/// parameter loads. A long row gains nothing from that and would only
/// serialize rows that could run in parallel.
LaunchConfig completeLaunch(int64_t vector, int64_t threadsPerRow,
                            int64_t kernelRows) {
  LaunchConfig launch;
  launch.vector = vector;
  launch.threadsPerRow = threadsPerRow;
  bool shortRows = kSmallCtaThreads % threadsPerRow == 0;
  launch.warps = (shortRows ? kSmallCtaThreads : threadsPerRow) / 32;
  int64_t concurrent = launch.getConcurrentRows();
  int64_t factor = 1;
  if (kernelRows > 0 && concurrent > 1)
    factor = std::clamp<int64_t>(
        floorPowerOf2(std::max<int64_t>(kernelRows / (concurrent * kTargetCtas),
                                        1)),
        1, kMaxRowsPerCtaFactor);
  launch.rowsPerCta = concurrent * factor;
  return launch;
}

/// Threads per row for the rows of `spec` read `vector` at a time.
int64_t pickThreadsPerRow(const OpSpec &spec, int64_t vector) {
  int64_t length = getRowLength(spec);
  int64_t threads;
  if (length <= 1024) {
    threads = length <= 64 ? 8 : length <= 128 ? 16 : 32;
  } else {
    int64_t perThread = length <= 8192 ? 8 : 16;
    threads = std::clamp<int64_t>(
        divideCeil(divideCeil(length, perThread), 32) * 32, 32, 1024);
  }
  // Every thread must own at least one element...
  auto idle = [&](int64_t t) { return (t - 1) * vector >= length; };
  while (threads > 32 && idle(threads))
    threads -= 32;
  while (threads > 1 && idle(threads))
    threads /= 2;
  // ... and its share must fit in the registers of the CTA it runs in,
  // with more threads as long as none of them idles.
  auto more = [](int64_t t) { return t < 32 ? t * 2 : t + 32; };
  while (threads < 1024 && !idle(more(threads)) &&
         !fitsInRegisters(spec, completeLaunch(vector, threads, -1)))
    threads = more(threads);
  // A backward kernel stages rows beyond them, and keeps the column sums of
  // its share in registers: the most threads whose registers hold those (a
  // thread of 512 has twice the registers of one of 1024).
  if (spec.backward &&
      !fitsInRegisters(spec, completeLaunch(vector, threads, -1)))
    for (int64_t t = threads; t >= 1; t = t > 32 ? t - 32 : t / 2)
      if (fitsInRegisters(spec, completeLaunch(vector, t, -1),
                          RowStorage::Shared))
        return t;
  return threads;
}

} // namespace

/// Two consumer warpgroups of 64 query rows (FlashAttention-3's 128-row
/// tiles), two stages, the widest key tile of 128 down to 16 that the
/// registers and the shared memory hold, the softmax overlapped with the
/// next tile's Q K^T where the registers hold both tiles of scores: head
/// dims 64 and 128, 128 keys overlapped; 256, 80 keys without the overlap
/// (FlashAttention-3's 128 x 80; overlapped, 32 keys would fit).
std::optional<LaunchConfig>
norm::getWarpgroupAttentionHeuristic(const OpSpec &spec, int64_t maxSharedBytes,
                                     std::string_view chip) {
  if (chip != "sm_90a")
    return std::nullopt;
  LaunchConfig launch;
  launch.vector = 16 / getElementBytes(spec.input);
  launch.threadsPerRow = getAttentionThreadsPerRow(spec.hidden);
  launch.warpgroups = 2;
  launch.warps = 4 * (launch.warpgroups + 1);
  launch.rowsPerCta = 64 * launch.warpgroups;
  launch.stages = 2;
  for (int64_t blockN = 128; blockN >= 16; blockN -= 16)
    for (int64_t overlap : {1, 0}) {
      launch.overlap = overlap;
      launch.blockN = blockN;
      if (verifyLaunchFor(spec, launch, maxSharedBytes))
        return launch;
    }
  return std::nullopt;
}

/// Attention (FlashAttention-2's choices on sm_80/sm_90): 4 warps of 32
/// query rows where their accumulators fit the registers (head dims up to
/// 64; 16 rows beyond, and in decode), key tiles of 64 (32 at head dims
/// over 128, 16 in decode beyond 192: the output rows take most
/// registers), two stages where the target's shared memory holds them.
/// Decode's tile holds one token's query heads of a kv head, the warps that
/// it leaves without rows splitting the key tiles.
static LaunchConfig getAttentionHeuristic(const OpSpec &spec) {
  LaunchConfig launch;
  launch.vector = 8;
  launch.threadsPerRow = getAttentionThreadsPerRow(spec.hidden);
  launch.warps = 4;
  launch.rowsPerCta = 16 * launch.warps;
  launch.blockN = spec.hidden > 128 ? 32 : 64;
  launch.stages = 2;
  if (spec.kind != OpKind::AttentionDecode)
    launch = fitAttentionRows(spec, launch, /*rowTiles=*/2,
                              /*maxSharedBytes=*/0);
  if (spec.kind == OpKind::AttentionDecode) {
    // A decode tile holds the query heads of one kv head for a few tokens:
    // 4 warps, so that 128 threads stream the cache (one warp would also
    // spill at head dim 128), more where a token's group of heads needs
    // them, so that the group reads its cache once.
    int64_t group = spec.numQHeads / spec.numKvHeads;
    launch.warps = std::clamp<int64_t>((group + 15) / 16, 4, 8);
    launch.rowsPerCta = 16 * launch.warps;
    // Beyond head dim 192 the output rows leave room for key tiles of 16.
    if (spec.hidden > kMaxDecodeHeadDimAt32Keys)
      launch.blockN = 16;
    // An FP8 cache's fragments widen in registers of their own.
    int64_t blockN = launch.blockN;
    auto fitFp8 = [&](LaunchConfig &l) {
      if (spec.fp8Cache)
        l.blockN = std::min(
            blockN, getMaxFp8DecodeBlockN(spec.hidden, l.getKeyWarps()));
    };
    fitFp8(launch);
    // One token's group of query rows in as few m16 tiles as hold it; the
    // warps left over split each key tile (slices of at least 16 keys)
    // instead of computing padding tiles.
    int64_t groupRows = 16;
    while (groupRows < group)
      groupRows *= 2;
    while (launch.rowsPerCta / 2 >= groupRows) {
      LaunchConfig fewerRows = launch;
      fewerRows.rowsPerCta /= 2;
      fewerRows.blockN = blockN;
      fitFp8(fewerRows);
      if (fewerRows.blockN < 16 * fewerRows.getKeyWarps())
        break;
      launch = fewerRows;
    }
  }
  return launch;
}

/// The widest vector of at most `maxVector` that the QK-Norm prologue's
/// rotary rule (verifyRotaryLayout) allows, and its threads per row.
static std::pair<int64_t, int64_t> pickRotaryLayout(const OpSpec &spec,
                                                    int64_t maxVector) {
  int64_t vector = maxVector;
  while (vector > 1 && !verifyRotaryLayout(spec, completeLaunch(vector, 1, -1)))
    vector /= 2;
  return {vector, pickThreadsPerRow(spec, vector)};
}

LaunchConfig norm::getHeuristicLaunch(const OpSpec &spec, int64_t rows) {
  if (isAttention(spec.kind))
    return getAttentionHeuristic(spec);
  int64_t vector = getMaxVector(spec);
  if (spec.kind == OpKind::BatchNormStats || spec.kind == OpKind::ColumnSum) {
    // Tiles of `vector` columns; the threads sharing a tile split the rows.
    // 16 threads per tile make each warp read two 16-byte pieces of a row,
    // one full 32-byte sector; many rows want more threads per tile.
    int64_t threads = rows > 4096 ? 128 : 16;
    LaunchConfig launch;
    launch.vector = vector;
    launch.threadsPerRow = threads;
    launch.warps = std::max<int64_t>(threads, kSmallCtaThreads) / 32;
    launch.rowsPerCta = launch.getConcurrentRows();
    return launch;
  }
  if (getRowLength(spec) <= 0)
    return LaunchConfig{};
  int64_t threads = pickThreadsPerRow(spec, vector);
  // Short backward rows (GroupNorm's groups of 40) that the widest vector
  // leaves beyond the registers, since more threads would idle, take
  // narrower vectors before they are staged: more threads, each with less.
  for (int64_t v = vector / 2;
       spec.backward && getRowLength(spec) <= 1024 && v >= 1 &&
       !fitsInRegisters(spec, completeLaunch(vector, threads, -1));
       v /= 2) {
    int64_t t = pickThreadsPerRow(spec, v);
    if (fitsInRegisters(spec, completeLaunch(v, t, -1))) {
      vector = v;
      threads = t;
    }
  }
  // The prologue's rotary pairs lie within a thread: a vector that divides
  // where its segments start.
  if (!verifyRotaryLayout(spec, completeLaunch(vector, threads, -1)))
    std::tie(vector, threads) = pickRotaryLayout(spec, vector);
  // Each thread group of a backward CTA sums its rows' weight gradients in
  // registers over the persistent grid's blocks of one row a group.
  if (spec.backward)
    return completeLaunch(vector, threads, -1);
  return completeLaunch(vector, threads,
                        rows > 0 ? rows * getRowsPerToken(spec) : -1);
}

int64_t norm::getDecodeSplits(const OpSpec &spec, int64_t rowsPerCta,
                              const DecodeShape &shape, int64_t smCount,
                              int64_t blockN) {
  if (blockN <= 0)
    blockN = getHeuristicLaunch(spec, shape.rows).blockN;
  // CTAs with work: a split of the grid's spare tiles adds no loads.
  int64_t ctasPerSplit = std::max<int64_t>(
      spec.numKvHeads * getDecodeWorkTiles(spec, rowsPerCta, shape), 1);
  int64_t waves = 2 * std::max<int64_t>(smCount, 1);
  int64_t keyTiles =
      std::max<int64_t>(divideCeil(shape.cacheCapacity, std::max<int64_t>(
                                                            blockN, 1)),
                        1);
  return std::clamp<int64_t>(divideCeil(waves, ctasPerSplit), 1,
                             std::min(kMaxDecodeSplits, keyTiles));
}
