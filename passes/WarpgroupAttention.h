//===- WarpgroupAttention.h - the key/value loop on Hopper ------*- C++ -*-===//
//
// The key/value loop of the sm_90a attention kernel (#34), FlashAttention-3's
// structure: `warpgroups` consumer warpgroups of 64 query rows each and one
// producer warpgroup after them. The producer's first lane keeps a ring of
// `stages` key and value tiles full with TMA boxes (128-byte swizzle, 64
// head-dim columns a box), each stage guarded by a full barrier (its
// transaction bytes) and an empty one (every consumer thread's arrival);
// the consumers compute S = Q K^T with shared-memory wgmma, the online
// softmax on the accumulator fragment in f32 (exp2 with the scale folded in,
// masks past the sequence and above the causal diagonal), and O += P V with
// P from registers.
//
// The roles are two branches of the CTA, the producer's warpgroup after the
// consumers', each with its own loop over the key tiles and its own
// register count (setmaxnreg): they meet only at the barriers, so the
// producer runs ahead by the ring. The host execution path
// (norm-kernels-to-host) runs the two loops in lockstep, the producer's
// iteration first, so that every load lands before the wait that reads it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_WARPGROUPATTENTION_H
#define NORM_PASSES_WARPGROUPATTENTION_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::norm {

/// Where the loop's tiles lie and what it reads.
struct WarpgroupAttentionLoop {
  int64_t headDim;    // a multiple of 64, at most 256
  int64_t blockN;     // keys a tile: a multiple of 16, at most 256
  int64_t stages;     // key/value tiles in flight, at least 2
  int64_t warpgroups; // consumer warpgroups of 64 query rows

  /// Workgroup memory as elements (bf16 or f16; 1024-byte aligned): the
  /// query tile at `queryBase` (getQueryElement), then the stages' key and
  /// value tiles at keyBase/valueBase + stage * getTileElements().
  Value shared;
  /// The same memory as 16-byte chunks (vector<8 x element>): the stores
  /// of whole chunks (the vector conversion has no workgroup address space
  /// for vector.store).
  Value sharedChunks;
  int64_t queryBase, keyBase, valueBase;
  /// 2 x stages mbarriers (i64, workgroup memory): full ones first.
  Value barriers;

  /// K and V: row-major views [rows, columns] with `rowStride` elements a
  /// row (V `valueRowStride` where set; the GPU reads them through the
  /// tensor maps `keyMap`/`valueMap`);
  /// the CTA's keys are rows firstKey + i, i < keys, from column
  /// `firstColumn` (its kv head's).
  Value keyMap, valueMap, key, value, rows, columns, rowStride, valueRowStride;
  Value firstKey, firstColumn, keys;
  /// Causal: query row r of the tile (0 .. 64 warpgroups) is at position
  /// queryPosition + r of the sequence, and sees keys up to it.
  bool causal;
  Value queryPosition;
  /// log2(e) / sqrt(head dim) or the caller's scale, times log2(e).
  double scaleLog2;
  /// FlashAttention-3's intra-warpgroup overlap: the next tile's S = Q K^T
  /// runs while this tile's softmax does (two tiles of scores live:
  /// getOverlapsSoftmax says where they fit the registers).
  bool overlapSoftmax = false;

  /// Elements of one key (or value) tile.
  int64_t getTileElements() const { return blockN * headDim; }
  /// Elements of workgroup memory the loop uses past queryBase's tile.
  int64_t getQueryElements() const { return 64 * warpgroups * headDim; }
  /// The element offset (from the tile's start) of query (or key, with
  /// `tileRows` = blockN) element (row, column): boxes of 64 columns, rows
  /// of 128 bytes, 16-byte chunks XOR the row's index mod 8 (TMA's 128-byte
  /// swizzle, which wgmma reads).
  static int64_t getBoxedElement(int64_t tileRows, int64_t row, int64_t column);
};

/// The loop's result in each consumer thread: its accumulators of O
/// normalized by the row sums (wgmma's C layout, head dim / 2 values), and
/// the log2-sum-exp of its two rows (scaled scores; -inf for rows that saw
/// no key).
struct WarpgroupAttentionResult {
  Value output;
  Value rowLse[2];
};

/// The registers a thread of each role keeps after setmaxnreg: the
/// producer warpgroup few (its loop holds a tile index and addresses), the
/// consumers the rest of the 64K register file (producer + warpgroups x
/// consumer <= 512 per thread of a warpgroup); FlashAttention-3's split.
struct RegisterSplit {
  int64_t producer, consumer;
};
RegisterSplit getRegisterSplit(int64_t consumerWarpgroups);

/// Emits barrier initialization (thread 0, then a CTA barrier) and the
/// roles, the consumers' ending in `epilogue` (the result's stores: nothing
/// the consumers compute lives past their branch, whose registers the
/// producer's do not hold). Every thread of the CTA, 128 x (warpgroups + 1),
/// must reach it.
void emitWarpgroupAttentionLoop(
    ImplicitLocOpBuilder &b, const WarpgroupAttentionLoop &loop,
    function_ref<void(const WarpgroupAttentionResult &)> epilogue);

} // namespace mlir::norm

#endif // NORM_PASSES_WARPGROUPATTENTION_H
