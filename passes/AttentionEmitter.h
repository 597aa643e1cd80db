//===- AttentionEmitter.h - the attention kernels' vocabulary ---*- C++ -*-===//
//
// What the two families of the attention kernel share: the CTA's query tile
// (the 16-way search for its sequence), the prologue that normalizes and
// rotates the tile's rows into shared memory, the tiles' layouts, the
// QK-Norm weights and the rotary angles. AttentionKernel.cpp holds the
// mma.sync family (FlashAttention-2's loop, prefill and decode; sm_80 on),
// WarpgroupAttentionKernel.cpp the sm_90a family (FlashAttention-3's
// roles, passes/WarpgroupAttention.h), as Triton splits
// TritonGPUToLLVM/{MMAv2,WGMMA}.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_ATTENTIONEMITTER_H
#define NORM_PASSES_ATTENTIONEMITTER_H

#include "passes/KernelIR.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::norm {

/// Elements of one 16-byte chunk of a tile row (bf16 or f16).
constexpr int64_t kChunk = 8;
/// The ways of the search for a CTA's sequence: each round's 15 loads of
/// cu_seqlens are independent, so one latency a round.
constexpr int64_t kSequenceSearchArity = 16;

class AttentionEmitter : public KernelBuilder {
public:
  AttentionEmitter(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                   const ::norm::KernelSignature &sig,
                   const ::norm::OpSpec &spec);

  void emit();

private:
  /// The sm_90a family's kernel (WarpgroupAttentionKernel.cpp).
  void emitWarpgroupKernel();
  /// Which query tile of which sequence and head the CTA computes (seq,
  /// seqStart, seqLength, qTileStart, head, kvHead, found; decode's split
  /// too): its rows in the tile, 0 for a CTA without one; `tileIndex` its
  /// slot.
  Value locateQueryTile(Value &tileIndex);
  /// The QK-Norm weights of the CTA's heads, one chunk a lane.
  void loadQkWeights(Value chunkValid);
  /// Views of the dynamic shared memory as elements, 16-byte chunks and
  /// pairs, `elements` of them.
  Value createSharedViews(int64_t elements);

  //===--- Tiles in shared memory
  //------------------------------------------===//

  /// A tile's rows in shared memory: 16-byte chunks of `chunk` elements,
  /// `pitch` elements from one row to the next, chunk c of row r at
  /// c XOR (r mod swizzle) (norm::AttentionTileLayout). With `boxChunks`,
  /// in TMA's boxes of boxRows rows x boxChunks chunks (rows of `pitch`),
  /// `boxes` of them across a row, box after box (WarpgroupAttentionLoop::
  /// getBoxedElement).
  struct TileLayout {
    int64_t chunk, pitch, swizzle;
    int64_t boxChunks = 0, boxRows = 0, boxes = 0;
  };
  /// Element offset of (row, chunk) in a tile at `base`: the swizzled chunk.
  Value tileOffset(Value base, Value row, Value chunk,
                   const TileLayout &layout);
  Value tileOffset(Value base, Value row, Value chunk) {
    return tileOffset(base, row, chunk, tiles);
  }
  /// The lane's part of the offsets of fragment rows `rowConst + rowLane`,
  /// chunks `chunkConst + chunkLane` (rowConst a multiple of 8, chunkConst
  /// even, chunkLane 0 or 1, or null: 0 and any chunkConst): with the row's low
  /// bits fixed per lane, the swizzled chunk is chunkConst's high bits plus
  /// (its low bits XOR a lane value), so every fragment address is one of a few
  /// lane bases plus a constant, and nothing per fragment stays live across the
  /// loop.
  struct FragmentRows {
    Value rowLane, chunkLane;
    TileLayout layout;
    /// The lane bases by chunkConst's low bits (computed before the loop).
    llvm::SmallDenseMap<int64_t, Value> bases;
  };
  FragmentRows makeFragmentRows(Value rowLane, Value chunkLane,
                                ArrayRef<int64_t> chunkConsts,
                                const TileLayout &layout);
  Value fragmentOffset(Value tileBase, FragmentRows &rows, int64_t rowConst,
                       int64_t chunkConst);
  /// The chunk at that offset, and stores into it.
  Value loadChunk(Value offset);
  void storeChunk(Value value, Value offset);
  Value tileOffset(int64_t base, Value row, Value chunk) {
    return tileOffset(index(base), row, chunk);
  }

  //===--- Warp-level matrix ops
  //-------------------------------------------===//

  Value mma(Value a, Value bFragment, Value c);
  /// acc(mt, j) += a[mt] B_j for the two B fragments of an ldmatrix x4 (or
  /// an FP8 x2, widenFp8Fragments)
  /// (matrices 2j and 2j + 1): each K or V fragment feeds every row tile.
  void mmaFragmentPair(ArrayRef<Value> a, Value fragments,
                       function_ref<Value &(int64_t mt, int64_t j)> acc);
  Value ldmatrix(Value offset, bool transpose);
  /// ldmatrix of `matrices` 8x8 matrices of e4m3 byte pairs from the FP8
  /// tiles at byte `offset`: 4 bytes of each a lane.
  Value ldmatrixFp8(Value offset, int64_t matrices, bool transpose);
  /// The e4m3 bytes of ldmatrixFp8 as B fragments of f16 (exact), 4
  /// elements each: fragment i from the bytes `order` picks of each 8.
  Value widenFp8Fragments(Value bytes, ArrayRef<int64_t> order);
  Value allReduceMax(Value value, int64_t groupSize);
  Value allReduceSum(Value value, int64_t groupSize);

  //===--- Stages of the kernel
  //--------------------------------------------===//

  /// Normalizes the 8 elements `x` (f32) of a head row shared by
  /// threadsPerRow threads, `lane` holding chunk `lane`; `validChunk` is
  /// false for lanes past the row.
  Value normalizeChunk(Value x, Value validChunk, Value weight);
  /// Runs `body` for rows [0, rows) of a tile, rowsAtOnce at a time (in an
  /// scf.for with uniform bounds: the body may hold row reductions); `row`
  /// is this thread's row, which may lie past `rows` in the last step. With
  /// `active` (uniform), not at all unless it holds.
  void forEachTileRow(int64_t rows, function_ref<void(Value row)> body,
                      Value active = {});
  /// `body` for this thread's items of `count` dealt over the CTA's threads
  /// (item tid + i x ctaThreads, round i); the last round, where partial,
  /// under item < count.
  void forEachCtaItem(int64_t count,
                      function_ref<void(int64_t round, Value item)> body);
  /// `body`, under `item < count` where the round is `partial` (some of
  /// the CTA's threads are past the count).
  void guardPartialRound(bool partial, Value item, int64_t count,
                         function_ref<void()> body);
  /// The lane's chunk of QK-Norm weight `name` (of head `weightHead` where
  /// each head has its own), zeros past the row.
  Value loadWeightChunk(StringRef name, Value weightHead, Value chunkValid);
  /// The query weight chunk of tile row `row`: the CTA's, or in decode with
  /// a weight per head, the row's head's.
  Value getQueryWeight(Value row, Value chunkValid);
  /// The query tile into shared memory, normalized and rotated (in the
  /// order the op asks for).
  void emitQueryPrologue(Value tileRows, Value chunkValid);
  /// cp.async of key and value tile `tile` into stage `stage`; a `full`
  /// tile (every row inside the range: prefill's, or decode's of cached
  /// keys) copies without guards.
  void emitKeyValueCopies(Value tile, Value stage, bool full = false);
  /// Rows [0, rows) of the tile at `base` normalized in place, row r with
  /// `weightOf(r)` (if `active`).
  void emitTileNorm(Value base, int64_t rows,
                    function_ref<Value(Value row)> weightOf, Value active = {});
  /// Rotary embeddings of rows [0, rows) of the tile at `base`, in place (if
  /// `active`); row r is token `tokenOf(r)` of the sequence (an index among
  /// the new tokens in decode).
  void emitRope(Value base, int64_t rows, function_ref<Value(Value)> tokenOf,
                Value active = {});
  /// The rotary position (i32) of token `token` of the sequence: its
  /// positions entry, or its index (after the cache, in decode).
  Value tokenPosition(Value token);
  //===--- Decode
  //----------------------------------------------------------===//

  /// Query row `row` of the tile: its token within the sequence and its
  /// query head.
  Value rowToken(Value row);
  Value rowHead(Value row);
  /// Where the keys of tile `tile` of this CTA's range start (a position in
  /// the cache, or an index among the new tokens) and end.
  struct KeyTile {
    Value isNew, first, end;
  };
  KeyTile getKeyTile(Value tile);
  /// emitKeyValueCopies of cached keys from a paged cache: a page lookup per
  /// span of a thread's rows that one page holds.
  void emitPagedCacheCopies(const KeyTile &keys, Value stage, bool full);
  /// A cached row's copy: past a partial tile's `available` keys (not
  /// `full`), key 0's address and no elements read (a zero fill).
  struct RowCopy {
    Value key, count;
  };
  RowCopy guardRowCopy(Value row, Value available, bool full, int64_t elements);
  /// An FP8 cache: cp.async of the cached keys' and values' bytes of tile
  /// `keys` into stage `stage` of the FP8 tiles.
  void emitFp8CacheCopies(const KeyTile &keys, Value stage, bool full);
  /// A tile of new keys and values rounded to the cache's e4m3 into stage
  /// `stage` of the FP8 tiles (they are read as the cache holds them;
  /// cached tiles arrived there as bytes), then a barrier.
  void emitNewKeysToFp8(const KeyTile &keys, Value stage);
  /// The byte offset of the key (or value) FP8 tile of `stage`.
  Value fp8StageBase(Value stage, bool value);
  /// The query tile for the FP8 key fragments: within each 16 columns the
  /// even ones, then the odd ones (the order in which a lane's ldmatrix of
  /// e4m3 keys holds them, widenFp8Fragments), as f16.
  void emitFp8QueryLayout();
  /// e4m3 of the f32 chunk `x` of a key (or value) over its scale.
  Value quantizeFp8(Value x, bool value);
  /// The new rows of the k and v tiles of `stage` appended to the cache.
  void emitCacheAppend(Value tile, Value stage);
  /// The epilogue of a split: the normalized rows and log2-sum-exps of the
  /// loop's final `state` to the workspace, and the combine by the last split.
  /// Without `combined` (one split), the semaphore is left alone.
  void emitSplitEpilogue(ValueRange state, ArrayRef<Value> rowSums,
                         Value tileRows, Value tileIndex, Value combined);
  /// Chunk `chunk` of the output rows staged in the query tile (row-major
  /// chunks), stored where its row is one of the tile's `tileRows`.
  void storeStagedOutput(Value chunk, Value tileRows);
  /// The output row chunk of query row `row` at element `column`.
  Value outputOffset(Value row, Value column);
  /// The output columns a lane's accumulators (`acc`, a row tile's output
  /// blocks) hold for its row g + 8h: pairs of adjacent columns, each at
  /// `column` past the lane's own first column (getOutputLaneColumn).
  struct OutputPair {
    int64_t column;
    Value first, second;
  };
  SmallVector<OutputPair> getOutputPairs(ValueRange acc, int64_t h);
  Value getOutputLaneColumn();
  /// Decode's key-split warps: the loop state `state` (one row tile) of the
  /// warps that share this warp's rows merged into the first of them (the
  /// others' own is returned unchanged), through shared memory.
  SmallVector<Value> mergeKeyWarps(ValueRange state);

  Value stageBase(Value stage, bool value);

  const ::norm::OpSpec &spec;
  int64_t headDim, blockM, blockN, stages, ctaThreads, chunksPerRow;
  /// Stages of key and value tiles in the input type
  /// (norm::getAttentionWideStages).
  int64_t wideStages;
  /// The m16 tiles of query rows each warp owns (LaunchConfig::getRowTiles),
  /// the warps that share them (getKeyWarps) and the keys of a tile each of
  /// those takes.
  int64_t rowTiles, keyWarps, sliceN;
  /// Rows of a tile the CTA's threads cover at once in the prologue.
  int64_t rowsAtOnce;
  /// The query, key and value tiles' layout (norm::getAttentionTileLayout),
  /// and an FP8 cache's byte tiles' (norm::getFp8TileLayout).
  TileLayout tiles, fp8Layout;
  bool hasNorm, hasRope;
  /// The tiles' element type, and the mma.sync operands' (f16 with an FP8
  /// cache, whose e4m3 values it holds exactly).
  Type element, mmaElement;
  VectorType chunkType, f32Chunk;
  /// Three views of the tiles: elements (ldmatrix, cp.async), 16-byte
  /// chunks (the prologue's loads and stores) and pairs (the output's
  /// accumulator fragments).
  Value shared, sharedChunks, sharedPairs, tid, warp, laneInWarp;
  /// The tiles as mmaElement (the query tile's ldmatrix).
  Value sharedMma;
  // The warp's first query row of the tile, its slice of each key tile (0
  // to keyWarps - 1) and whether it stores its rows (the first slice).
  Value warpFirstRow, keySlot, ownsRows;
  // Per CTA: the sequence's first token and length, the tile's first query
  // row within the sequence, the head and its key/value head.
  Value seqStart, seqLength, qTileStart, head, kvHead, found;
  Value qWeight, kWeight;
  // Decode: query heads per kv head (1 for prefill), the sequence, its
  // cache rows (base row, length before the append, capacity), this CTA's
  // split of them and its cache tiles.
  bool decode;
  int64_t group;
  Value seq, cacheLength, capacity, splits, split, isLastSplit;
  /// The sequence's cache rows (getSequenceCache).
  SequenceCache seqCache;
  Value splitStart, splitEnd, cacheTiles, wholeCacheTiles;
  // An FP8 cache: its tiles' bytes, also in 8-byte chunks, and the CTA's kv
  // head's scales (f32).
  static constexpr int64_t kFp8Chunk = 8;
  Value fp8Tiles, fp8Bytes, kScale, vScale, kInverse, vInverse;
};

} // namespace mlir::norm

#endif // NORM_PASSES_ATTENTIONEMITTER_H
