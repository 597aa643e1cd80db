//===- Launch.h - launch configurations and their rules ---------*- C++ -*-===//
//
// How a kernel maps rows onto a CTA (#norm.launch), the rules a
// configuration must meet for an operation, where threads keep their share
// of a row (registers, shared memory, or nowhere), and the configuration a
// kernel gets when nobody tuned it. The dialect's verifiers, the kernel
// generator, the tuner and the checkers all ask these functions.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_LAUNCH_H
#define NORM_COMPILER_MODEL_LAUNCH_H

#include "compiler/model/Operation.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

/// The launch configuration of a row kernel (see #norm.launch).
struct LaunchConfig {
  int64_t vector = 1;        // elements per access
  int64_t threadsPerRow = 32;
  int64_t warps = 1;         // warps per CTA
  int64_t rowsPerCta = 1;    // rows one CTA handles in all
  // Attention only (0 for row kernels): rows are query rows, 16 or 32 per
  // warp (getRowTiles), or in decode 16 per group of warps that split the
  // key tiles (getKeyWarps); the prologue maps threadsPerRow threads onto
  // each head row.
  int64_t blockN = 0;        // keys per tile of the key/value loop
  int64_t stages = 0;        // key/value tiles in flight (cp.async)
  // The sm_90a (wgmma) family of prefill attention (0: mma.sync): consumer
  // warpgroups of 64 query rows, a producer warpgroup after them (warps =
  // 4 x (warpgroups + 1)) whose TMA loads keep `stages` key/value tiles in
  // flight; `overlap` runs each tile's softmax beside the next tile's
  // Q K^T (FlashAttention-3's intra-warpgroup overlap).
  int64_t warpgroups = 0;
  int64_t overlap = 0;

  int64_t getThreadsPerCta() const { return warps * 32; }
  /// Rows a CTA works on at the same time.
  int64_t getConcurrentRows() const { return warps * 32 / threadsPerRow; }
  /// `v8_t128_w4_r1` (attention: `v8_t16_w4_r64_n64_s2`, the sm_90a
  /// family `v8_t16_w12_r128_n128_s2_g2`, `..._g2o` overlapped): the suffix
  /// of kernel names.
  std::string getMangledSuffix() const;
  bool isAttention() const { return blockN != 0; }
  /// The sm_90a attention family (passes/WarpgroupAttention.h).
  bool isWarpgroupAttention() const { return warpgroups != 0; }
  /// Attention: the m16 tiles of query rows each warp owns (FlashAttention-2
  /// gives a warp 32 rows, so that every K and V fragment feeds two).
  int64_t getRowTiles() const {
    if (isWarpgroupAttention())
      return 1;
    return std::max<int64_t>(rowsPerCta / (16 * warps), 1);
  }
  /// Attention: the warps that share one m16 tile of query rows, each taking
  /// a slice of every key tile (decode, where a kv head's query rows fill
  /// less than a tile per warp: no warp computes padding tiles); 1 where
  /// each warp owns its rows.
  int64_t getKeyWarps() const {
    if (isWarpgroupAttention())
      return 1;
    return rowsPerCta >= 16 * warps
               ? 1
               : 16 * warps / std::max<int64_t>(rowsPerCta, 1);
  }
  bool operator==(const LaunchConfig &other) const {
    return vector == other.vector && threadsPerRow == other.threadsPerRow &&
           warps == other.warps && rowsPerCta == other.rowsPerCta &&
           blockN == other.blockN && stages == other.stages &&
           warpgroups == other.warpgroups && overlap == other.overlap;
  }
  bool operator!=(const LaunchConfig &other) const { return !(*this == other); }
};

/// Parses LaunchConfig::getMangledSuffix ("v8_t128_w4_r1") of a valid
/// configuration.
std::optional<LaunchConfig> parseLaunchSuffix(std::string_view text);

//===----------------------------------------------------------------------===//
// Limits
//===----------------------------------------------------------------------===//

/// The widest vector access of a kernel, in bytes.
constexpr int64_t kMaxAccessBytes = 16;
/// Elements of a row one thread keeps in registers at most (its chunks are
/// unrolled); fewer where the registers of the CTA do not hold them.
constexpr int64_t kMaxElementsPerThread = 64;
/// What a thread's share of a row costs in registers, measured with
/// `ptxas -v` (sm_90, CUDA 13) on every kernel kind, f32 and bf16 rows,
/// vectors 1, 2 and the widest, 256 to 1024 threads per CTA and 4 to 64
/// elements per thread: a vector of v elements of b bytes
/// takes ceil(v x b / 4) registers (a lone bf16 takes a whole one), the
/// unrolled kernels keep about 1.5 times those register bytes live
/// (kRegisterBytesPerResidentByte / 2), and kRegisterOverhead registers go
/// to indices, pointers, sums and the row scale. Of at most
/// kRegisterBudget registers: with more to spend (CTAs of 256 threads),
/// ptxas may still keep a kernel at 128 for occupancy, and spill. Of 928
/// configurations measured in registers, the rule keeps 612 there and none
/// of them spilled (the rest are staged; 252 of those had not spilled), and
/// test/Target/ptxas-storage-regimes.mlir checks it at every boundary.
constexpr int64_t kRegisterBytesPerResidentByte = 3;
constexpr int64_t kRegisterOverhead = 16;
/// A backward kernel's loop over the rows of its CTA carries the column
/// sums and more addresses: 32 registers besides its rows (bf16 RMSNorm
/// rows of 8 elements a thread spill at 64 registers, 16 take 109).
constexpr int64_t kBackwardRegisterOverhead = 32;
/// A backward kernel that stages v and grad_output keeps the column sums
/// of its share in registers, at most 32 elements a thread in CTAs of at
/// most 512 threads: measured with `ptxas -v` (sm_90, CUDA 13), bf16 and
/// f32 RMSNorm rows of 40 and 48 elements a thread spill at 128 registers,
/// and DeepNorm's at 16 elements in CTAs of 1024 threads (64 registers);
/// at 32 elements and 512 threads none of the kinds does
/// (test/Target/ptxas-backward.mlir).
constexpr int64_t kMaxStagedBackwardElements = 32;
constexpr int64_t kMaxStagedBackwardThreads = 512;
constexpr int64_t kRegisterBudget = 128;
/// Chunks a thread of a row kernel that loops over its row loads at once at
/// most (getChunksInFlight): four 16-byte loads a buffer.
constexpr int64_t kMaxChunksInFlight = 4;
/// Shared memory of a CTA that staged rows leave to the static buffer of
/// the row reduction (at most 32 warps x 3 sums x 4 bytes).
constexpr int64_t kReservedSharedBytes = 1024;

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// f32 accumulators an attention kernel's thread may keep
/// (getAttentionAccumulators). Measured with `ptxas -v`
/// (sm_90 and sm_80, CUDA 13): head dim 256 with block_n 32 (144) takes 245
/// registers and does not spill, with block_n 64 (160) it spills; head dim
/// 128 with block_n 128 (128) takes 255 without spilling.
/// test/Target/ptxas-attention.mlir checks the configurations at the edge.
constexpr int64_t kMaxAttentionAccumulators = 144;
/// ... and at 8 warps: measured the same way over every tuner candidate of
/// 10 QK-Norm/RoPE/GQA variants at head dims 64-256 (every 16), ptxas
/// spilled 8 bytes at head dim 208 with block_n 64 (136, sm_80) and 224
/// (144, sm_90); 128 (head dim 192 with block_n 64) never did. The same
/// bound holds 32 query rows a warp: their two row tiles spilled 8-164 bytes
/// at 144 (head dim 80 with block_n 64, sm_80) and 160 (96 with 64, 128
/// with 32; sm_90), not at 128 (64 with 64, 96 with 32, 4 and 8 warps).
constexpr int64_t kMaxAttentionAccumulatorsAt8Warps = 128;
/// f32 accumulators a consumer thread of the sm_90a (wgmma) attention loop
/// keeps: O's head dim / 2 and a tile's block_n / 2 scores, two tiles' with
/// the softmax overlapped with the next tile's Q K^T (FlashAttention-3's
/// intra-warpgroup overlap). At 240 registers (two consumer warpgroups),
/// measured with `ptxas -arch=sm_90a -v` (CUDA 13, 2026-12-07) over head
/// dims 64-256 and block_n 32-192: no spills up to 192 accumulators, and
/// with the overlap beyond head dim 128 up to 160 (head dim 192 with 96
/// keys, 192, spilled 4 bytes; 256 with 64, 192, spilled 32); every
/// configuration past these spilled (test/Target/warpgroup-attention-
/// ptxas.test checks all that fitsWarpgroupAttentionRegisters admits).
constexpr int64_t kMaxWarpgroupAttentionAccumulators = 192;
constexpr int64_t kMaxWarpgroupAttentionAccumulatorsOverlappedWide = 160;
/// ... and at 160 registers (three consumer warpgroups, FlashAttention-3's
/// choice at head dim 64), measured the same way over head dims 64 and 128,
/// block_n 32-128, overlapped or not: none spilled up to 120 accumulators,
/// every one at 128 or beyond did (8 bytes at head dim 64 with 96 keys
/// overlapped, 28 at 128 with 64, 44 at 128 with 128 not overlapped).
/// One consumer warpgroup has more registers than two and keeps their rule.
constexpr int64_t kMaxWarpgroupAttentionAccumulatorsAt3 = 120;
/// Consumer warpgroups of the sm_90a attention family: FlashAttention-3's
/// 2 (head dims to 128) or 3, and 1 (getRegisterSplit gives each count its
/// registers).
constexpr int64_t kMaxConsumerWarpgroups = 3;
int64_t getWarpgroupAttentionAccumulators(int64_t headDim, int64_t blockN,
                                          bool overlapSoftmax);
/// The accumulators a consumer thread of `warpgroups` consumer warpgroups
/// keeps at most (the constants above).
int64_t getMaxWarpgroupAttentionAccumulators(int64_t headDim,
                                             bool overlapSoftmax,
                                             int64_t warpgroups);
bool fitsWarpgroupAttentionRegisters(int64_t headDim, int64_t blockN,
                                     bool overlapSoftmax, int64_t warpgroups);
/// 16-byte cp.async copies of a K and V tile one thread of an attention
/// kernel may issue (getAttentionCopiesPerThread), and the largest key tile
/// (block_n x head dim) of a decode kernel, which also keeps its query
/// group and the cache append. Measured with `ptxas -v` (sm_90, CUDA 13)
/// over every tuner candidate of 7 QK-Norm/RoPE/GQA combinations at head
/// dims 64-256 (norm-cpu-check --engine=ptxas): prefill spilled at 24-64
/// copies (head dim 96-128 with block_n 128 and 2-4 warps, 256 with 32 and
/// 2 warps) and never at 16; decode also with block_n 128 at head dims 96
/// and 128 with any warps, and with 8 warps at head dim 256 (4-8 bytes).
constexpr int64_t kMaxAttentionCopiesPerThread = 16;
/// ... and at 8 warps, whose 128 accumulators leave less room: ptxas spilled
/// 8 bytes with 16 (head dim 128, block_n 128; sm_80 and sm_90, after the
/// key loop was split into unmasked and masked tiles), not with 12 (96).
constexpr int64_t kMaxAttentionCopiesPerThreadAt8Warps = 12;
constexpr int64_t kMaxDecodeTileElements = 8192;
/// The most keys a tile of decode over an FP8 cache takes at head dim
/// `headDim`: its fragments widen in registers beside the accumulators.
/// ptxas (CUDA 13, 2026-12-07, every tuner candidate of 4 decode variants,
/// GQA 4 and 32, at head dims 64-256 on sm_80, sm_89 and sm_90) spilled
/// 4-60 bytes on sm_89 where each warp takes whole key tiles, at head dims
/// 80-160 with 32 or 64 keys, never at 64 with 64 or beyond with 16: 64
/// up to head dim 64, 16 beyond. Warps that split the key tiles (`keyWarps`
/// > 1) keep a slice's scores only and never spilled with the tiles that
/// the bf16 cache takes there: 64 up to head dim 128, 32 up to 192, 16
/// beyond.
int64_t getMaxFp8DecodeBlockN(int64_t headDim, int64_t keyWarps = 1);
/// Decode kernels beyond this head dim take 4 warps and key tiles of 16
/// rows: with 32 they sat at 254-255 registers and ptxas spilled 4-40 bytes
/// at head dims 208-256 (one stage on sm_80, sm_89 and sm_90; two stages at
/// 224 without QK-Norm on sm_80 and at 256 with rope_first on sm_89), where
/// 16 take 236; 2 warps with 16 (fewer copies a thread) spilled 4-40 bytes
/// with one stage (the audit of kMaxAttentionAccumulatorsAt8Warps).
constexpr int64_t kMaxDecodeHeadDimAt32Keys = 192;

/// The rules of #norm.launch: vector 1, 2, 4 or 8; threads per row 1, 2,
/// 4, 8, 16 or a multiple of 32 up to 1024; 1 to 32 warps, whose threads
/// the rows divide; rows per CTA a positive multiple of the rows a CTA works
/// on at once.
Status verifyLaunch(const LaunchConfig &launch);

/// verifyLaunch, and the rules for the rows of `spec`: accesses of at most
/// kMaxAccessBytes of every row buffer, a vector that divides rows that
/// start one after another (groups, heads), no thread of a row without
/// work, and, for kernels that keep rows in registers only (the QK-Norm
/// prologue), a share that fits them (fitsInRegisters). Forward row kernels
/// keep longer shares elsewhere (getRowStorage); backward kernels stage them
/// in shared memory where their column sums fit the registers
/// (fitsInRegisters with RowStorage::Shared) and, given `maxSharedBytes`,
/// the staged rows fit it (Unsupported where no configuration could hold
/// such rows: ErrorCode::Unsupported); column statistics map threads
/// onto columns and need only the access width. Attention: 16-byte
/// accesses, getAttentionThreadsPerRow threads per head row, 16 or (prefill)
/// 32 query rows per warp, accumulators within kMaxAttentionAccumulators
/// (kMaxAttentionAccumulatorsAt8Warps for 8 warps or 32 rows) and tiles
/// within `maxSharedBytes` (0: no limit checked).
Status verifyLaunchFor(const OpSpec &spec, const LaunchConfig &launch,
                       int64_t maxSharedBytes = 0);

/// A run of a head row that the QK-Norm prologue lays out on its own.
struct RowSegment {
  int64_t offset, length;
};

/// The segments of the QK-Norm prologue's head rows: with rope, the rotary
/// pairs' halves (neox: [0, rotary_dim / 2) and [rotary_dim / 2,
/// rotary_dim); gptj: [0, rotary_dim)) and the rest, each dealt out to the
/// threads chunk by chunk, so that a pair's elements meet in one thread and
/// vector lane (neox) or one vector (gptj) and turn in registers; one
/// segment, the row, otherwise (and for every other kernel).
std::vector<RowSegment> getRowSegments(const OpSpec &spec);

/// The rule of getRowSegments for a launch: the vector divides where each
/// segment starts, and is even for gptj pairs. Success for every other
/// kernel.
Status verifyRotaryLayout(const OpSpec &spec, const LaunchConfig &launch);

/// 16-byte copies of one K and V tile each thread of an attention kernel
/// issues.
int64_t getAttentionCopiesPerThread(const OpSpec &spec,
                                    const LaunchConfig &launch);

/// Threads that share a head row in an attention kernel's prologue (each
/// a 16-byte vector at a time): the head dim / 8 rounded up to a power of
/// two, so that the row reduction's groups are whole.
int64_t getAttentionThreadsPerRow(int64_t headDim);

/// The layout of an attention kernel's tiles in shared memory: head rows in
/// 16-byte chunks (8 bf16/f16). Rows of a multiple of 8 chunks hold chunk c
/// of row r at c XOR (r mod 8), an XOR swizzle within groups of 8 chunks;
/// other rows are padded to an odd number of chunks and not swizzled. Either
/// way the 8 consecutive rows that an ldmatrix matrix reads at one chunk
/// column lie in 8 different 16-byte bank groups, at every head dim (80, 96
/// and 160 too, where a narrower swizzle left 2-way conflicts).
struct AttentionTileLayout {
  int64_t rowChunks = 0;   // chunks of a head row
  int64_t pitchChunks = 0; // chunks from one row's start to the next
  int64_t swizzle = 1;     // 8: XOR swizzle; 1: none
  /// The 16-byte slot of chunk `chunk` of row `row` from the tile's start.
  int64_t getSlot(int64_t row, int64_t chunk) const {
    return row * pitchChunks + (chunk ^ (row & (swizzle - 1)));
  }
};
AttentionTileLayout getAttentionTileLayout(int64_t headDim);
/// The layout of an FP8 cache's byte tiles in an attention kernel: rows of
/// `headDim` bytes in the same 16-byte chunks (16 elements each), laid out
/// as getAttentionTileLayout lays out rows of headDim / 2 two-byte elements,
/// so that the byte ldmatrix of 8 consecutive rows is free of conflicts too.
AttentionTileLayout getFp8TileLayout(int64_t headDim);

/// The stages of key and value tiles in the input type of an attention
/// kernel: `stages`, or one where decode reads an FP8 cache (its own tiles
/// hold the stages; only a tile of new keys passes through these, to be
/// normalized, rotated and rounded into them).
int64_t getAttentionWideStages(const OpSpec &spec, const LaunchConfig &launch);
/// Bytes of the tiles of an attention kernel in shared memory: the query
/// tile and `stages` key and value tiles, rows of getAttentionTileLayout;
/// with an FP8 cache, `stages` key and value tiles of its bytes too; the
/// key-split warps' merge (getKeyWarpMergeBytes) reuses them where it fits.
int64_t getAttentionSharedBytes(const OpSpec &spec, const LaunchConfig &launch);
/// The sm_90a family's workgroup memory: the query tile (64 rows a
/// consumer warpgroup, in TMA's boxes; the output passes through it), the
/// ring's key and value tiles, then its full and empty mbarriers.
struct WarpgroupAttentionMemory {
  int64_t queryElements, keyElements, valueElements, barrierBytes;
  int64_t getBarrierOffset() const {
    return 2 * (queryElements + keyElements + valueElements);
  }
  int64_t getBytes() const { return getBarrierOffset() + barrierBytes; }
};
WarpgroupAttentionMemory
getWarpgroupAttentionMemory(const OpSpec &spec, const LaunchConfig &launch);
/// Bytes in which decode's key-split warps (LaunchConfig::getKeyWarps) merge
/// their (max, sum, output) after the key loop, over the tiles: f32 state
/// per warp and lane; 0 without them.
int64_t getKeyWarpMergeBytes(const OpSpec &spec, const LaunchConfig &launch);
/// `launch` (attention) with `rowTiles` x 16 query rows a warp, or 16 where
/// the rest of it leaves no room for more (verifyLaunchFor): what forcing
/// some fields of the heuristic's launch keeps of its rows. Decode keeps
/// its rows a CTA (the warps left over split the key tiles) where the rest
/// allows them.
LaunchConfig fitAttentionRows(const OpSpec &spec, LaunchConfig launch,
                              int64_t rowTiles, int64_t maxSharedBytes);
/// f32 accumulators each thread of an attention kernel keeps across its key
/// loop: per row tile, its output rows (head dim / 2) and scores (block_n /
/// 2); checked against kMaxAttentionAccumulators.
int64_t getAttentionAccumulators(const OpSpec &spec,
                                 const LaunchConfig &launch);

/// The most accumulators (getAttentionAccumulators) with which prefill
/// attention stages its output rows in shared memory: the staging's
/// addresses need registers beside them; ptxas spilled 12-52 bytes with
/// 120 to 136 (head dims 208 to 240, block_n 32, sm_80) and 16 with 128
/// (head dim 64, 32 rows a warp, a QK-Norm weight per head, sm_90).
constexpr int64_t kMaxAccumulatorsForStagedOutput = 112;
/// Whether prefill attention writes its output through shared memory in
/// whole 16-byte chunks of rows (full sectors), not a pair of elements per
/// store from the accumulator fragments.
bool usesStagedOutput(const OpSpec &spec, const LaunchConfig &launch);

/// Where the threads of a kernel keep their share of a row between the
/// statistic and the epilogue.
enum class RowStorage {
  /// Registers (fitsInRegisters).
  Registers,
  /// Dynamic shared memory (row kernels only): the row is read from global
  /// memory once, staged while its statistic accumulates, and read back; a
  /// backward kernel stages v and grad_output and keeps its column sums in
  /// registers.
  Shared,
  /// Nowhere (row kernels only): rows too long for shared memory are read
  /// twice, once for the statistic and once to normalize them; rows without
  /// a statistic once. Backward kernels have no streamed variant.
  Streamed,
};

/// 32-bit registers one thread of a CTA of `threadsPerCta` threads may use:
/// the share of the register file of the CTA counted in groups of 4 warps,
/// in the allocation granule of 8, at most kMaxRegistersPerThread (64 at
/// 1024 threads, 128 at 512, 96 at 576).
int64_t getRegistersPerThread(int64_t threadsPerCta);

/// Register bytes of `vector` elements of a row that a thread of the kernel
/// of `spec` holds when the kernel keeps its rows in `storage`: in
/// registers, v and what the epilogue combines it with (weight, bias,
/// per-channel statistics, skip; both QK-Norm weights), each a vector of
/// whole 32-bit registers; a backward kernel, v, grad_output, the weight and
/// the f32 column sums. A backward kernel that stages v and grad_output in
/// shared memory keeps only the column sums (0 without a weight); forward
/// kernels with rows elsewhere loop over their chunks and keep none.
int64_t getRegisterBytesPerVector(const OpSpec &spec, int64_t vector,
                                  RowStorage storage = RowStorage::Registers);

/// A forward row kept in registers holds each element of v in f32 from
/// its sum to its normalization, beside the parameters in storage type:
/// 4 bytes an element plus the rest of getRegisterBytesPerVector. This
/// bounds narrow rows without parameters, which the 1.5 ratio undercounts:
/// measured with `ptxas -v` (sm_90 and sm_80, CUDA 13), weightless bf16 and
/// f16 RMSNorm, L2 and LayerNorm rows at 1024 threads (64 registers) spill
/// 12-196 bytes from 56 elements a thread (hidden 52224 to 65536) and not at
/// 48 (test/Target/ptxas-storage-regimes.mlir). FP8 outputs add 2 bytes an
/// element, 4 with per-token scales (y in f32 across the amax exchange):
/// bf16 and f16 RMSNorm to e4m3 spilled 4-8 bytes at 28 elements a thread
/// in 64 registers, with per-token scales 76-124 bytes at 28 in 64 and 64
/// in 128 (norm-cpu-check --engine=ptxas).
int64_t getLiveBytesPerVector(const OpSpec &spec, int64_t vector);

/// Elements of a row each thread of `launch` holds: whole vectors.
int64_t getElementsPerThread(const OpSpec &spec, const LaunchConfig &launch);

/// Elements of a row of `spec` one thread of a CTA of `threadsPerCta`
/// threads holds without spilling, at accesses of `vector` elements, when
/// the kernel keeps its rows in `storage`: what its registers (at most
/// kRegisterBudget) hold besides kRegisterOverhead (kBackwardRegisterOverhead)
/// at the measured cost, in whole vectors, at most kMaxElementsPerThread
/// (its chunks are unrolled; staged backward kernels: at most
/// kMaxStagedBackwardElements, none in CTAs beyond
/// kMaxStagedBackwardThreads). bf16 RMSNorm with a weight, vector 8: 64 at
/// 512 threads, 32 at 1024; vector 1: 37 and 16; its backward, 16 at 512
/// threads in registers and 32 staged.
int64_t getMaxElementsPerThread(const OpSpec &spec, int64_t threadsPerCta,
                                int64_t vector,
                                RowStorage storage = RowStorage::Registers);

/// Whether the threads of `launch` keep in registers what the kernel of
/// `spec` holds there when it keeps its rows in `storage`: at most
/// getMaxElementsPerThread each. Forward kernels with rows elsewhere always
/// do.
bool fitsInRegisters(const OpSpec &spec, const LaunchConfig &launch,
                     RowStorage storage = RowStorage::Registers);

/// Chunks of its row a thread of a forward row kernel that loops over them
/// (rows staged or streamed) loads at once, one loop iteration: half of the
/// vectors the register rule lets it keep (getMaxElementsPerThread), since
/// the loop also carries its partial sums and each chunk's addresses, 1 to
/// kMaxChunksInFlight. The loop is not unrolled further (by LLVM or
/// `ptxas`), so this is what is in flight: measured with `ptxas -v` (sm_80
/// and sm_90, CUDA 13), 4 chunks a thread of bf16 LayerNorm + skip at 1024
/// threads (64 registers) spilled 8-44 bytes, and rows unrolled by `ptxas`
/// past the emitter's 4 spilled from f16 RMSNorm at 131072 (16 bytes) to
/// f32 at 262144 (test/Target/ptxas-register-sweep.test).
int64_t getChunksInFlight(const OpSpec &spec, const LaunchConfig &launch);

/// "" (registers), "_smem" or "_stream": the suffix of kernel names.
std::string_view getRowStorageSuffix(RowStorage storage);

/// How the kernel of `spec` with `launch` keeps its rows on a target whose
/// CTAs may use `maxSharedBytes` of shared memory: registers when a
/// thread's share fits them, else shared memory when the rows the CTA works
/// on at once fit in `maxSharedBytes` less kReservedSharedBytes (and, for a
/// backward kernel, its column sums fit the registers), else streamed. So
/// a row of 100000 bf16 values is staged on sm_90 (227 KiB)
/// and streamed on sm_80 (163 KiB) and sm_89 (99 KiB), which would refuse
/// to launch the staged kernel.
RowStorage getRowStorage(const OpSpec &spec, const LaunchConfig &launch,
                         int64_t maxSharedBytes);

/// Whether a streamed row kernel reads `v` back from residual_out in its
/// second pass (one buffer instead of input and addend): with a statistic
/// and a residual_out that holds v exactly (its type is the stream type).
bool readsResidualBack(const OpSpec &spec);

/// The element type a row kernel holds `v` in between prologue and
/// statistic: f32 with an f32 residual, else the input's.
ElementType getStreamType(const OpSpec &spec);

/// The CTAs of a backward kernel's persistent grid are a multiple of this:
/// for groups with their own channels of the weight (GroupNorm), groups /
/// gcd(groups, the rows a CTA works on at once), so that the thread groups
/// of the grid are a multiple of the groups and each takes kernel rows of
/// one group only (its column sums are that group's channels); else 1.
int64_t getBackwardGridMultiple(const OpSpec &spec, const LaunchConfig &launch);

/// grid.x of a persistent grid over `kernelRows` rows: ceil(kernelRows /
/// rowsPerCta) rounded up to a multiple of `multiple`, at most `maxGridX`
/// rounded down to one (at least `multiple`). Rounded-up CTAs take rows
/// past the last, which add exact zeros.
int64_t getPersistentGridX(int64_t kernelRows, int64_t rowsPerCta,
                           int64_t maxGridX, int64_t multiple);

/// The rows of a backward kernel's f32 gradient partials for `rows` rows:
/// one per thread group of each CTA of its persistent grid (getPersistentGridX
/// of rows x getRowsPerToken, kBackwardCtas and getBackwardGridMultiple) x
/// the rows the CTA works on at once (a group's partial sums its kernel rows
/// in order); for GroupNorm rows of the hidden size, `groups` thread groups
/// a row.
int64_t getGradPartialRows(const OpSpec &spec, const LaunchConfig &launch,
                           int64_t rows);

/// The element types of the rows a kernel stages in shared memory, one
/// region each: v in the stream type, and for a backward kernel grad_output
/// after it.
std::vector<ElementType> getStagedTypes(const OpSpec &spec);

/// Bytes of one staged row of `type`: whole `vector`s, rounded up to 16 (so
/// that every region starts 16-byte aligned).
int64_t getStagedRegionBytes(const OpSpec &spec, ElementType type,
                             int64_t vector);

/// Bytes one row takes when staged in shared memory: its regions
/// (getStagedTypes).
int64_t getStagedRowBytes(const OpSpec &spec, int64_t vector);

/// Dynamic shared memory per CTA of the kernel: the staged rows the CTA
/// works on at once, region after region (all v rows, then all grad_output
/// rows), or 0.
int64_t getSharedBytes(const OpSpec &spec, const LaunchConfig &launch,
                       int64_t maxSharedBytes);

/// Bytes a buffer of `type` must be aligned to for `vector`-wide accesses
/// (16-byte accesses at most; wider vectors split in 16-byte parts).
int64_t getBufferAlignment(ElementType type, int64_t vector);

/// The widest vector (elements per 16-byte access) that every row buffer
/// allows and that divides the row length, so that consecutive rows stay
/// aligned.
int64_t getMaxVector(const OpSpec &spec);

/// The scalar variant of a vector configuration, launched instead when a
/// buffer or row stride misses the alignment the vector kernel needs: the
/// same mapping with vector 1, and more threads per row where a share that
/// registers held no longer fits them at one element per access. nullopt
/// for a scalar `launch`, or when no scalar configuration fits.
std::optional<LaunchConfig> getScalarFallback(const OpSpec &spec,
                                              const LaunchConfig &launch);

/// The configuration the kernel of `spec` gets when nobody tuned it, for
/// `rows` logical rows (tokens for the QK-Norm prologue; -1 when unknown):
/// see LaunchHeuristic.cpp.
LaunchConfig getHeuristicLaunch(const OpSpec &spec, int64_t rows);
/// The sm_90a family's configuration of `spec` on `target` when nobody
/// tuned it (FlashAttention-3's tiles within the register rule and the
/// shared memory): nullopt where the target is not sm_90a or the family
/// does not take the op (decode, head dims not a multiple of 64, keys that
/// the loop would have to normalize or rotate).
std::optional<LaunchConfig>
getWarpgroupAttentionHeuristic(const OpSpec &spec, int64_t maxSharedBytes,
                               std::string_view chip);

/// The most CTAs of a backward kernel's persistent grid: two waves of a
/// 132-SM GPU (Liger-Kernel and QuACK size theirs by the SM count), so that
/// the weight gradient partials (one row per thread group and CTA) stay
/// few rows for the column sum whatever the row count
/// (KernelSignature::maxGridX).
constexpr int64_t kBackwardCtas = 264;

struct DecodeShape; // Buffers.h

/// The CTAs over which a decode launch of `shape` (its `splits` ignored)
/// splits each sequence's keys: enough CTAs with work for about two waves
/// on `smCount` SMs, ceil(2 * smCount / (kv heads x getDecodeWorkTiles)),
/// at least 1 and at most kMaxDecodeSplits and ceil(cache capacity /
/// blockN) (no split without a key tile to read when the cache is full);
/// `blockN` 0: the heuristic's (getHeuristicLaunch). A pure function of the
/// launch, so every launch of the same shape splits alike (the combine is
/// deterministic for a given split count).
int64_t getDecodeSplits(const OpSpec &spec, int64_t rowsPerCta,
                        const DecodeShape &shape, int64_t smCount,
                        int64_t blockN = 0);

} // namespace norm

#endif // NORM_COMPILER_MODEL_LAUNCH_H
