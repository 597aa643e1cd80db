//===- AttentionKernel.cpp - the kernel of norm.attention_kernel ----------===//
//
// FlashAttention-2's forward pass on tensor cores (mma.sync m16n8k16), with
// the QK-Norm where the user asked for it: in the prologue.
//
// A CTA computes the M = 16 x warps query rows of one query tile of one
// sequence and head. Its prologue loads the tile, normalizes each head row
// (threadsPerRow threads per row, a row reduction) and stores it, rounded
// to the element type as the unfused graph stores it, to shared memory. The
// key/value loop then streams tiles of N keys and values through shared
// memory with cp.async, `stages` tiles in flight; each key tile is
// normalized in place once it has arrived, and both are then rotated in
// place by the rotary embeddings (see emitRope); with rope_first (Llama 4's
// norm of rotated rows) the query and key rows are rotated first and then
// normalized in place (emitTileNorm). Warp w owns query rows
// [16w, 16w + 16): S = Q K^T from ldmatrix fragments, the online softmax in
// f32 (row max and sum over the four lanes that share a row), P rounded to
// the element type and O += P V with V's fragments from ldmatrix.trans.
// Causal kernels stop at the tile that holds the tile's last query row.
//
// With prepared keys (norm.k_prepare wrote them normalized and rotated,
// once per token and kv head) the loop reads K as it is: no norm, no
// rotation, no barrier beyond the stage's.
//
// The decode kernel (norm.attention_decode_kernel) is the same loop over
// other rows: a CTA's query rows are the new tokens x the query heads of
// one kv head (token-major), so that a group reads its cache once, and its
// key tiles are one of kv_splits ranges of the cache followed, in the last
// range, by the new keys, which are normalized and rotated as they arrive
// and written to the cache by the first query tile's CTA. Each split
// stores its normalized output and log2-sum-exp to the workspace; the last
// CTA of a tile to finish (a semaphore per tile, fenced on both sides)
// combines them in split order and resets the semaphore.
//
// Over an FP8 (e4m3) cache the stages are tiles of its bytes, which the
// loop's ldmatrix reads as they arrived and widens to f16 in registers
// (emitFp8QueryLayout says how the fragments line up); a tile of new keys
// passes through the one tile of the input type (normalized, rotated,
// appended, rounded to e4m3 into the stage's FP8 tiles).
//
// Shared memory holds tiles of D-element rows in 16-byte chunks whose
// position in the row is XORed with the row index (within groups of 8
// chunks) or, where a row is not a multiple of 8 chunks, in rows padded to
// an odd number of chunks (norm::getAttentionTileLayout), so that the 8 row
// addresses of an ldmatrix hit different banks.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 and ldmatrix): lane l of a warp,
// g = l / 4, t = l % 4. A (16 x 16) element i: row g + 8 ((i / 2) % 2),
// column 2t + i % 2 + 8 (i / 4); B (16 x 8) element i: row 2t + i % 2 +
// 8 (i / 2), column g; C (16 x 8) element i: row g + 8 (i / 2), column
// 2t + i % 2. So the C fragments of score columns [16c, 16c + 8) and
// [16c + 8, 16c + 16) side by side are the A fragment of P's k-block c.
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionEmitter.h"
#include "passes/KernelBuilder.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::norm;

AttentionEmitter::AttentionEmitter(ImplicitLocOpBuilder &b,
                                   gpu::GPUFuncOp func,
                                   const ::norm::KernelSignature &sig,
                                   const ::norm::OpSpec &spec)
    : KernelBuilder(b, func, sig), spec(spec), headDim(spec.hidden),
      blockM(sig.launch.rowsPerCta), blockN(sig.launch.blockN),
      stages(sig.launch.stages), ctaThreads(sig.launch.getThreadsPerCta()),
      chunksPerRow(spec.hidden / kChunk),
      hasNorm(spec.qkStatistic != ::norm::Statistic::None),
      hasRope(spec.rope != ::norm::RopeStyle::None),
      decode(spec.kind == ::norm::OpKind::AttentionDecode),
      group(decode ? spec.numQHeads / spec.numKvHeads : 1) {
  rowsAtOnce = ctaThreads / threads;
  wideStages = ::norm::getAttentionWideStages(spec, sig.launch);
  rowTiles = sig.launch.getRowTiles();
  keyWarps = sig.launch.getKeyWarps();
  sliceN = blockN / keyWarps;
  assert((!decode || rowTiles == 1) && "decode warps own one row tile");
  assert((keyWarps == 1 || (decode && sliceN % 16 == 0)) &&
         "key slices are whole m16n8k16 steps");
  ::norm::AttentionTileLayout layout = ::norm::getAttentionTileLayout(headDim);
  tiles = {kChunk, layout.pitchChunks * kChunk, layout.swizzle};
  // The sm_90a family's query tile lies in the boxes wgmma reads.
  if (sig.launch.isWarpgroupAttention())
    tiles = {kChunk, 8 * kChunk, 8, 8, 64, headDim / 64};
  ::norm::AttentionTileLayout bytes = ::norm::getFp8TileLayout(headDim);
  fp8Layout = {2 * kChunk, bytes.pitchChunks * 2 * kChunk, bytes.swizzle};
  element = getMlirType(b.getContext(), spec.input);
  mmaElement = spec.fp8Cache ? Type(b.getF16Type()) : element;
  chunkType = VectorType::get({kChunk}, element);
  f32Chunk = VectorType::get({kChunk}, f32);
}

//===----------------------------------------------------------------------===//
// Tiles and warp-level ops
//===----------------------------------------------------------------------===//

Value AttentionEmitter::tileOffset(Value base, Value row, Value chunk,
                                   const TileLayout &layout) {
  if (layout.boxChunks) {
    // Box (row / boxRows, chunk / boxChunks), then the row and the chunk
    // within it, XOR the row's low bits.
    Value within = arith::RemUIOp::create(b, chunk, index(layout.boxChunks));
    Value swizzled = arith::XOrIOp::create(
        b, within, arith::AndIOp::create(b, row, index(layout.swizzle - 1)));
    Value box = add(mul(arith::DivUIOp::create(b, row, index(layout.boxRows)),
                        index(layout.boxes)),
                    arith::DivUIOp::create(b, chunk, index(layout.boxChunks)));
    int64_t boxElements = layout.boxRows * layout.pitch;
    return add(add(base, mul(box, index(boxElements))),
               add(mul(arith::RemUIOp::create(b, row, index(layout.boxRows)),
                       index(layout.pitch)),
                   mul(swizzled, index(layout.chunk))));
  }
  Value swizzled = chunk;
  if (layout.swizzle > 1) {
    Value bits = arith::AndIOp::create(b, row, index(layout.swizzle - 1));
    swizzled = arith::XOrIOp::create(b, chunk, bits);
  }
  return add(base, add(mul(row, index(layout.pitch)),
                       mul(swizzled, index(layout.chunk))));
}

AttentionEmitter::FragmentRows
AttentionEmitter::makeFragmentRows(Value rowLane, Value chunkLane,
                                   ArrayRef<int64_t> chunkConsts,
                                   const TileLayout &layout) {
  FragmentRows rows;
  rows.rowLane = rowLane;
  rows.chunkLane = chunkLane;
  rows.layout = layout;
  int64_t swizzle = layout.swizzle;
  Value rowTerm = mul(rowLane, index(layout.pitch));
  Value lanes = chunkLane ? chunkLane : index(0);
  if (swizzle > 1)
    lanes = arith::XOrIOp::create(
        b, lanes, arith::AndIOp::create(b, rowLane, index(swizzle - 1)));
  for (int64_t chunkConst : chunkConsts) {
    int64_t low = chunkConst & (swizzle - 1);
    if (rows.bases.count(low))
      continue;
    Value chunk =
        swizzle > 1 ? arith::XOrIOp::create(b, lanes, index(low)) : lanes;
    rows.bases[low] = add(rowTerm, mul(chunk, index(layout.chunk)));
  }
  return rows;
}

Value AttentionEmitter::fragmentOffset(Value tileBase, FragmentRows &rows,
                                       int64_t rowConst, int64_t chunkConst) {
  assert(rowConst % 8 == 0 && (chunkConst % 2 == 0 || !rows.chunkLane) &&
         "see FragmentRows");
  const TileLayout &layout = rows.layout;
  int64_t low = chunkConst & (layout.swizzle - 1);
  assert(rows.bases.count(low) && "a chunk constant of makeFragmentRows");
  int64_t constant =
      rowConst * layout.pitch + (chunkConst - low) * layout.chunk;
  return add(add(tileBase, rows.bases.lookup(low)), index(constant));
}

Value AttentionEmitter::loadChunk(Value offset) {
  return memref::LoadOp::create(
      b, sharedChunks,
      ValueRange{arith::DivUIOp::create(b, offset, index(kChunk))});
}

void AttentionEmitter::storeChunk(Value value, Value offset) {
  memref::StoreOp::create(
      b, value, sharedChunks,
      ValueRange{arith::DivUIOp::create(b, offset, index(kChunk))});
}

Value AttentionEmitter::stageBase(Value stage, bool value) {
  int64_t tile = blockN * tiles.pitch;
  int64_t first = blockM * tiles.pitch + (value ? wideStages * tile : 0);
  if (wideStages == 1)
    return index(first);
  return add(index(first), mul(stage, index(tile)));
}

Value AttentionEmitter::mma(Value a, Value bFragment, Value c) {
  return MmaSyncOp::create(b, c.getType(), a, bFragment, c);
}

void AttentionEmitter::mmaFragmentPair(
    ArrayRef<Value> a, Value fragments,
    function_ref<Value &(int64_t mt, int64_t j)> acc) {
  for (int64_t j = 0; j < 2; ++j) {
    Value bFragment = vector::ExtractStridedSliceOp::create(
        b, fragments, ArrayRef<int64_t>{4 * j}, ArrayRef<int64_t>{4},
        ArrayRef<int64_t>{1});
    for (size_t mt = 0; mt < a.size(); ++mt)
      acc(mt, j) = mma(a[mt], bFragment, acc(mt, j));
  }
}

Value AttentionEmitter::ldmatrix(Value offset, bool transpose) {
  return LdMatrixOp::create(b, VectorType::get({8}, mmaElement), sharedMma,
                            ValueRange{offset}, /*count=*/4, transpose);
}

Value AttentionEmitter::ldmatrixFp8(Value offset, int64_t matrices,
                                    bool transpose) {
  return LdMatrixOp::create(
      b, VectorType::get({4 * matrices}, b.getType<Float8E4M3FNType>()),
      fp8Bytes, ValueRange{offset}, matrices, transpose);
}

Value AttentionEmitter::widenFp8Fragments(Value bytes,
                                          ArrayRef<int64_t> order) {
  int64_t count = cast<VectorType>(bytes.getType()).getNumElements();
  SmallVector<int64_t> mask;
  for (int64_t i = 0; i < count; ++i)
    mask.push_back(i / 8 * 8 + order[i % 8]);
  Value picked = vector::ShuffleOp::create(b, bytes, bytes, mask);
  // Pairs of adjacent bytes: one cvt.rn.f16x2.e4m3x2 each (sm_89 on).
  return arith::ExtFOp::create(b, VectorType::get({count}, b.getF16Type()),
                               picked);
}

Value AttentionEmitter::allReduceMax(Value value, int64_t groupSize) {
  return RowAllReduceOp::create(b, ValueRange{value},
                                static_cast<uint64_t>(groupSize),
                                ReductionKind::max)
      .getResult(0);
}

Value AttentionEmitter::allReduceSum(Value value, int64_t groupSize) {
  return RowAllReduceOp::create(b, ValueRange{value},
                                static_cast<uint64_t>(groupSize))
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// The prologue: QK-Norm of head rows
//===----------------------------------------------------------------------===//

Value AttentionEmitter::loadWeightChunk(StringRef name, Value weightHead,
                                        Value chunkValid) {
  Value buffer = arg(name);
  Value at = mul(lane, index(kChunk));
  if (spec.qkWeightPerHead)
    at = add(mul(weightHead, index(headDim)), at);
  return ifElseZeros(chunkValid, [&]() -> SmallVector<Value> {
           return {vector::LoadOp::create(
               b, VectorType::get({kChunk}, elementOf(buffer)), buffer, at,
               /*nontemporal=*/false, alignmentOf(buffer))};
         }).front();
}

Value AttentionEmitter::getQueryWeight(Value row, Value chunkValid) {
  if (!spec.hasWeight || qWeight)
    return qWeight;
  return loadWeightChunk("q_weight", rowHead(row), chunkValid);
}

Value AttentionEmitter::normalizeChunk(Value x, Value validChunk,
                                       Value weight) {
  if (!hasNorm)
    return x;
  double invLength = 1.0 / static_cast<double>(headDim);
  Value eps = constantF32(spec.eps);
  Value scale, centred = x;
  // Lanes past the row hold zeros, which add nothing to the sums.
  switch (spec.qkStatistic) {
  case ::norm::Statistic::RMS:
  case ::norm::Statistic::L2: {
    Value squares = allReduceSum(reduce(mulf(x, x)), threads);
    Value mean = spec.qkStatistic == ::norm::Statistic::RMS
                     ? mulf(squares, constantF32(invLength))
                     : squares;
    scale = rsqrt(addf(mean, eps));
    break;
  }
  default: {
    // Two passes over registers: the variance of the centred values.
    Value mean = mulf(allReduceSum(reduce(x), threads), constantF32(invLength));
    centred = arith::SelectOp::create(b, validChunk, subf(x, splat(mean)),
                                      zero(f32Chunk));
    Value variance = mulf(allReduceSum(reduce(mulf(centred, centred)), threads),
                          constantF32(invLength));
    scale = rsqrt(addf(variance, eps));
    break;
  }
  }
  Value y = mulf(centred, splat(scale));
  if (weight) {
    Value w = toF32(weight);
    if (spec.weightOffset != 0.0)
      w = addf(w, splatF32(spec.weightOffset));
    y = mulf(y, w);
  }
  return y;
}

void AttentionEmitter::forEachTileRow(int64_t rows,
                                      function_ref<void(Value row)> body,
                                      Value active) {
  Value steps = index(llvm::divideCeil(rows, rowsAtOnce));
  if (active)
    steps = arith::SelectOp::create(b, active, steps, index(0));
  scf::ForOp::create(
      b, index(0), steps, index(1),
      ValueRange{}, [&](OpBuilder &nested, Location, Value it, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        body(add(mul(it, index(rowsAtOnce)), slot));
        scf::YieldOp::create(b);
      });
}

void AttentionEmitter::forEachCtaItem(
    int64_t count, function_ref<void(int64_t round, Value item)> body) {
  for (int64_t i = 0; i * ctaThreads < count; ++i) {
    Value item = add(tid, index(i * ctaThreads));
    guardPartialRound((i + 1) * ctaThreads > count, item, count,
                      [&] { body(i, item); });
  }
}

void AttentionEmitter::guardPartialRound(bool partial, Value item,
                                         int64_t count,
                                         function_ref<void()> body) {
  if (!partial)
    return body();
  ifThen(
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, index(count)),
      body);
}

void AttentionEmitter::emitQueryPrologue(Value tileRows, Value chunkValid) {
  Value q = arg("q");
  Value chunkStart = mul(lane, index(kChunk));
  forEachTileRow(blockM, [&](Value row) {
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, tileRows);
    Value valid = arith::AndIOp::create(b, inRange, chunkValid);
    Value x = ifElseZeros(valid, [&]() -> SmallVector<Value> {
                Value token = add(seqStart, rowToken(row));
                Value at = add(add(mul(token, stride("q")),
                                   mul(rowHead(row), index(headDim))),
                               chunkStart);
                return {toF32(vector::LoadOp::create(b, chunkType, q, at,
                                                     /*nontemporal=*/false,
                                                     alignmentOf(q)))};
              }).front();
    // Rotated first, the rows are normalized after (emitTileNorm).
    Value y = spec.ropeFirst ? x
                             : normalizeChunk(x, chunkValid,
                                              getQueryWeight(row, chunkValid));
    // Where the CTA's rows at once do not divide the tile (the sm_90a
    // family's 384 threads), the last step's rows past it store nothing.
    Value stores = chunkValid;
    if (blockM % rowsAtOnce != 0)
      stores = arith::AndIOp::create(
          b, stores,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                index(blockM)));
    ifThen(stores,
           [&] { storeChunk(convert(y, element), tileOffset(0, row, lane)); });
  });
  gpu::BarrierOp::create(b);
  if (hasRope)
    emitRope(index(0), blockM, [&](Value row) { return rowToken(row); });
  if (hasNorm && spec.ropeFirst)
    emitTileNorm(index(0), blockM,
                 [&](Value row) { return getQueryWeight(row, chunkValid); });
}

//===----------------------------------------------------------------------===//
// The key/value loop
//===----------------------------------------------------------------------===//

void AttentionEmitter::emitKeyValueCopies(Value tile, Value stage, bool full) {
  int64_t chunks = blockN * chunksPerRow;
  int64_t iterations = llvm::divideCeil(chunks, ctaThreads);
  KeyTile keys = getKeyTile(tile);
  // From `k` and `v` at token rows `firstRow` + key (new keys), or from
  // the caches (prefill reads a sequence; decode's cache range).
  auto copies = [&](StringRef kName, StringRef vName, Value firstRow) {
    // Where the CTA's threads cover whole rows at once, each thread copies
    // one chunk column of every rowStep-th row: its source addresses are one
    // 64-bit add apart, its row's swizzle is fixed (its shared offsets a
    // constant apart where rowStep is a multiple of the swizzle's rows).
    // Opaque to loop strength
    // reduction, which would keep each address as an induction variable of
    // its own (two registers across the loop each: ptxas spilled at 32
    // query rows a warp).
    bool wholeRows = ctaThreads % chunksPerRow == 0;
    int64_t rowStep = ctaThreads / chunksPerRow;
    Value firstKey = OpaqueIndexOp::create(b, add(firstRow, keys.first));
    Value available = arith::SubIOp::create(b, keys.end, keys.first);
    for (bool value : {false, true}) {
      StringRef name = value ? vName : kName;
      Value source = arg(name);
      Value base = stageBase(stage, value);
      Value headColumn = mul(kvHead, index(headDim));
      if (wholeRows) {
        Value row = arith::DivUIOp::create(b, tid, index(chunksPerRow));
        Value col = arith::RemUIOp::create(b, tid, index(chunksPerRow));
        // Rows past the range are zeros, read from the range's first row.
        Value first = add(add(mul(firstKey, stride(name)), headColumn),
                          mul(col, index(kChunk)));
        Value step = mul(stride(name), index(rowStep));
        Value at = add(first, mul(row, stride(name)));
        bool fixedSwizzle = rowStep % tiles.swizzle == 0;
        Value firstOffset = tileOffset(base, row, col);
        // A whole tile's rows: one add and one cp.async a row. A thread's
        // rows fall in `classes` swizzle classes (its row is below rowStep,
        // so a power-of-two rowStep adds no carry into the swizzle bits):
        // within each, shared offsets are a constant apart.
        int64_t classes = tiles.swizzle / std::gcd(tiles.swizzle, rowStep);
        if (full && iterations * rowStep == blockN &&
            iterations % classes == 0 &&
            (classes == 1 || llvm::isPowerOf2_64(rowStep))) {
          Value classStep = classes == 1 ? step : mul(step, index(classes));
          for (int64_t c = 0; c < classes; ++c)
            AsyncCopyRowsOp::create(
                b, source, c == 0 ? at : add(at, mul(step, index(c))),
                classStep, shared,
                c == 0 ? firstOffset
                       : tileOffset(base, add(row, index(c * rowStep)), col),
                classes * rowStep * tiles.pitch, kChunk, iterations / classes);
          continue;
        }
        for (int64_t i = 0; i < iterations; ++i) {
          if (i > 0)
            at = add(OpaqueIndexOp::create(b, at), step);
          Value tileRow = add(row, index(i * rowStep));
          Value offset =
              fixedSwizzle ? add(firstOffset, index(i * rowStep * tiles.pitch))
                           : tileOffset(base, tileRow, col);
          auto copy = [&] {
            if (full) {
              AsyncCopyOp::create(b, source, ValueRange{at}, shared,
                                  ValueRange{offset}, Value(), kChunk);
              return;
            }
            Value inside = arith::CmpIOp::create(
                b, arith::CmpIPredicate::ult, tileRow, available);
            AsyncCopyOp::create(
                b, source,
                ValueRange{arith::SelectOp::create(b, inside, at, first)},
                shared, ValueRange{offset},
                arith::SelectOp::create(b, inside, index(kChunk), index(0)),
                kChunk);
          };
          // Threads past the tile's rows (more threads than chunks) copy
          // nothing.
          guardPartialRound((i + 1) * rowStep > blockN, tileRow, blockN, copy);
        }
        continue;
      }
      forEachCtaItem(chunks, [&](int64_t, Value chunk) {
        Value row = arith::DivUIOp::create(b, chunk, index(chunksPerRow));
        Value col = arith::RemUIOp::create(b, chunk, index(chunksPerRow));
        // Keys past the range are zeros, read from its first row.
        RowCopy guarded = guardRowCopy(row, available, full, kChunk);
        Value at =
            add(add(mul(add(firstKey, guarded.key), stride(name)), headColumn),
                mul(col, index(kChunk)));
        AsyncCopyOp::create(b, source, ValueRange{at}, shared,
                            ValueRange{tileOffset(base, row, col)},
                            guarded.count, kChunk);
      });
    }
  };
  auto cached = [&] {
    if (spec.fp8Cache)
      emitFp8CacheCopies(keys, stage, full);
    else if (spec.cacheBlockSize)
      emitPagedCacheCopies(keys, stage, full);
    else
      copies("k_cache", "v_cache", seqCache.start);
  };
  if (!decode)
    copies("k", "v", seqStart);
  else if (full)
    cached();
  else
    ifThen(
        keys.isNew, [&] { copies("k", "v", seqStart); }, cached);
  AsyncCommitOp::create(b);
}

// A thread's rows of a tile lie rowStep apart where its threads cover whole
// rows at once: the `perPage` of them in one page-aligned span of a full
// tile (tiles start at multiples of blockN) share one block-table load.
// Elsewhere each row looks its page up. Rows past a partial tile's keys
// read nothing, from the page of its first key.
void AttentionEmitter::emitPagedCacheCopies(const KeyTile &keys, Value stage,
                                            bool full) {
  int64_t blockSize = spec.cacheBlockSize;
  int64_t chunks = blockN * chunksPerRow;
  int64_t iterations = llvm::divideCeil(chunks, ctaThreads);
  bool wholeRows = ctaThreads % chunksPerRow == 0;
  int64_t rowStep = ctaThreads / chunksPerRow;
  int64_t perPage = 1;
  if (full && wholeRows && iterations * rowStep == blockN &&
      llvm::isPowerOf2_64(rowStep) && rowStep <= blockSize)
    perPage = std::min(iterations, blockSize / rowStep);
  Value available = arith::SubIOp::create(b, keys.end, keys.first);
  Value headColumn = mul(kvHead, index(headDim));
  Value threadRow = arith::DivUIOp::create(b, tid, index(chunksPerRow));
  Value threadCol = arith::RemUIOp::create(b, tid, index(chunksPerRow));
  // A page's rows of the thread, shared offsets a constant apart (a fixed
  // swizzle): one add and one cp.async a row (norm.async_copy_rows).
  if (perPage > 1 && rowStep % tiles.swizzle == 0) {
    for (int64_t i = 0; i < iterations; i += perPage) {
      Value row = add(threadRow, index(i * rowStep));
      Value cacheRow =
          getCacheRow(blockSize, seqCache, add(keys.first, row)).first;
      for (bool value : {false, true}) {
        StringRef name = value ? "v_cache" : "k_cache";
        Value at = add(add(mul(cacheRow, stride(name)), headColumn),
                       mul(threadCol, index(kChunk)));
        AsyncCopyRowsOp::create(
            b, arg(name), at, mul(stride(name), index(rowStep)), shared,
            tileOffset(stageBase(stage, value), row, threadCol),
            rowStep * tiles.pitch, kChunk, perPage);
      }
    }
    return;
  }
  // The k and v addresses of the current page's row; the next row of the
  // page one add on (opaque, as in emitKeyValueCopies).
  Value pageAt[2];
  for (int64_t i = 0; i < iterations; ++i) {
    Value row = threadRow, col = threadCol, chunk;
    if (wholeRows) {
      row = add(threadRow, index(i * rowStep));
    } else {
      chunk = add(tid, index(i * ctaThreads));
      row = arith::DivUIOp::create(b, chunk, index(chunksPerRow));
      col = arith::RemUIOp::create(b, chunk, index(chunksPerRow));
    }
    auto copy = [&] {
      RowCopy guarded = guardRowCopy(row, available, full, kChunk);
      Value cacheRow;
      if (i % perPage == 0)
        cacheRow =
            getCacheRow(blockSize, seqCache, add(keys.first, guarded.key))
                .first;
      Value count = guarded.count;
      for (bool value : {false, true}) {
        StringRef name = value ? "v_cache" : "k_cache";
        Value &at = pageAt[value];
        at = cacheRow ? add(add(mul(cacheRow, stride(name)), headColumn),
                            mul(col, index(kChunk)))
                      : add(OpaqueIndexOp::create(b, at),
                            mul(stride(name), index(rowStep)));
        AsyncCopyOp::create(
            b, arg(name), ValueRange{at}, shared,
            ValueRange{tileOffset(stageBase(stage, value), row, col)}, count,
            kChunk);
      }
    };
    // Threads past the tile's chunks copy nothing.
    guardPartialRound((i + 1) * ctaThreads > chunks, wholeRows ? row : chunk,
                      wholeRows ? blockN : chunks, copy);
  }
}

AttentionEmitter::RowCopy AttentionEmitter::guardRowCopy(Value row,
                                                         Value available,
                                                         bool full,
                                                         int64_t elements) {
  if (full)
    return {row, Value()};
  Value inside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, available);
  return {arith::SelectOp::create(b, inside, row, index(0)),
          arith::SelectOp::create(b, inside, index(elements), index(0))};
}

Value AttentionEmitter::fp8StageBase(Value stage, bool value) {
  int64_t tile = blockN * fp8Layout.pitch;
  return add(index(value ? stages * tile : 0), mul(stage, index(tile)));
}

// A 16-byte copy moves one chunk of a row (16 e4m3 elements), each
// thread's rows looked up in the cache one at a time (a page at a time
// where paged). Rows past a partial tile's keys read nothing (zeros).
void AttentionEmitter::emitFp8CacheCopies(const KeyTile &keys, Value stage,
                                          bool full) {
  constexpr int64_t kBytes = 16;
  int64_t rowCopies = headDim / kBytes, copies = blockN * rowCopies;
  Value available = arith::SubIOp::create(b, keys.end, keys.first);
  forEachCtaItem(copies, [&](int64_t, Value copy) {
    Value row = arith::DivUIOp::create(b, copy, index(rowCopies));
    Value col = arith::RemUIOp::create(b, copy, index(rowCopies));
    RowCopy guarded = guardRowCopy(row, available, full, kBytes);
    Value cacheRow =
        getCacheRow(spec.cacheBlockSize, seqCache, add(keys.first, guarded.key))
            .first;
    Value count = guarded.count;
    for (bool value : {false, true}) {
      StringRef name = value ? "v_cache" : "k_cache";
      Value at =
          add(add(mul(cacheRow, stride(name)), mul(kvHead, index(headDim))),
              mul(col, index(kBytes)));
      Value to = tileOffset(fp8StageBase(stage, value), row, col, fp8Layout);
      AsyncCopyOp::create(b, arg(name), ValueRange{at}, fp8Bytes,
                          ValueRange{to}, count, kBytes);
    }
  });
}

void AttentionEmitter::emitNewKeysToFp8(const KeyTile &keys, Value stage) {
  ifThen(keys.isNew, [&] {
    for (bool value : {false, true})
      forEachCtaItem(blockN * chunksPerRow, [&](int64_t, Value item) {
        // Chunk c of a row is half c % 2 of the FP8 row's chunk c / 2.
        Value row = arith::DivUIOp::create(b, item, index(chunksPerRow));
        Value col = arith::RemUIOp::create(b, item, index(chunksPerRow));
        Value bytes = quantizeFp8(
            toF32(loadChunk(tileOffset(stageBase(stage, value), row, col))),
            value);
        Value at =
            tileOffset(fp8StageBase(stage, value), row,
                       arith::DivUIOp::create(b, col, index(2)), fp8Layout);
        at = add(at, mul(arith::RemUIOp::create(b, col, index(2)),
                         index(kFp8Chunk)));
        memref::StoreOp::create(
            b, bytes, fp8Tiles,
            ValueRange{arith::DivUIOp::create(b, at, index(kFp8Chunk))});
      });
  });
  // Uniform, but a barrier stays out of branches (the host's execution
  // model); a cached tile's costs one more than it needs.
  gpu::BarrierOp::create(b);
}

void AttentionEmitter::emitFp8QueryLayout() {
  // After the rotation or a norm of the tile, a barrier already.
  if (!hasRope && !(hasNorm && spec.ropeFirst))
    gpu::BarrierOp::create(b);
  int64_t blocks = headDim / 16;
  SmallVector<int64_t> evens, odds;
  for (int64_t i = 0; i < 16; i += 2) {
    evens.push_back(i);
    odds.push_back(i + 1);
  }
  forEachCtaItem(blockM * blocks, [&](int64_t, Value item) {
    Value row = arith::DivUIOp::create(b, item, index(blocks));
    Value first = mul(arith::RemUIOp::create(b, item, index(blocks)), index(2));
    Value low = tileOffset(index(0), row, first);
    Value high = tileOffset(index(0), row, add(first, index(1)));
    Value x = loadChunk(low), y = loadChunk(high);
    for (auto [order, offset] : {std::pair(ArrayRef<int64_t>(evens), low),
                                 std::pair(ArrayRef<int64_t>(odds), high)}) {
      Value picked =
          convert(vector::ShuffleOp::create(b, x, y, order), b.getF16Type());
      if (picked.getType() != chunkType)
        picked = vector::BitCastOp::create(b, chunkType, picked);
      storeChunk(picked, offset);
    }
  });
}

Value AttentionEmitter::quantizeFp8(Value x, bool value) {
  Value inverse = value ? vInverse : kInverse;
  return arith::TruncFOp::create(
      b, VectorType::get({kChunk}, b.getType<Float8E4M3FNType>()),
      mulf(x, splat(inverse)));
}

void AttentionEmitter::emitTileNorm(Value base, int64_t rows,
                                    function_ref<Value(Value row)> weightOf,
                                    Value active) {
  Value chunkValid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                           index(chunksPerRow));
  forEachTileRow(rows, [&](Value row) {
    Value inTile = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                         index(rows));
    Value valid = arith::AndIOp::create(b, inTile, chunkValid);
    Value offset = tileOffset(base, row, lane);
    Value x = ifElseZeros(valid, [&]() -> SmallVector<Value> {
                return {toF32(loadChunk(offset))};
              }).front();
    Value y = normalizeChunk(x, chunkValid, weightOf(row));
    ifThen(valid, [&] { storeChunk(convert(y, element), offset); });
  }, active);
  gpu::BarrierOp::create(b);
}

//===----------------------------------------------------------------------===//
// Rotary embeddings
//===----------------------------------------------------------------------===//

// The pairs are dealt out to the threads of a row: where they fill 16-byte
// chunks, owner o (of threads' lanes, o = lane + s threads) turns the
// pairs of chunk o, neox pairs 8 o + j of the first half with the chunk
// rotaryDim / 16 further on, gptj the 4 pairs (2i, 2i + 1) inside it;
// otherwise (StableLM's 20 of 80, any even rotary dim) owner o turns pair o
// alone, element by element. Each pair has one owner, so the tile is
// rotated in place from the rounded values the norm stored, as the unfused
// graph rotates them, and rounded to T again. Rows past their sequence (a
// tile's tail) stay as they are.
void AttentionEmitter::emitRope(Value base, int64_t rows,
                                function_ref<Value(Value)> tokenOf,
                                Value active) {
  bool neox = spec.rope == ::norm::RopeStyle::NeoX;
  int64_t pairs = spec.rotaryDim / 2;
  int64_t pairsPerChunk = neox ? kChunk : kChunk / 2;
  bool byChunk = pairs % pairsPerChunk == 0;
  int64_t pairsPerOwner = byChunk ? pairsPerChunk : 1;
  int64_t owners = pairs / pairsPerOwner;
  VectorType pairType = VectorType::get({pairsPerOwner}, f32);
  SmallVector<Value> ownerOf, owns;
  SmallVector<RopeAngles> angles;
  for (int64_t slot = 0; slot * threads < owners; ++slot) {
    ownerOf.push_back(add(lane, index(slot * threads)));
    owns.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                         ownerOf.back(), index(owners)));
    angles.push_back(prepareRopeAngles(
        spec, pairType, owners, slot,
        byChunk ? alignmentOf(arg("rope_table")) : llvm::MaybeAlign(4)));
  }
  // The element offset of element `e` (an index) of the row.
  auto elementOffset = [&](Value row, Value e) -> Value {
    Value chunk = arith::DivUIOp::create(b, e, index(kChunk));
    return add(tileOffset(base, row, chunk),
               arith::RemUIOp::create(b, e, index(kChunk)));
  };
  // Scalar memref accesses (the NVVM conversion gives them the shared
  // address space), as 1-element vectors for the angles' arithmetic.
  VectorType single = VectorType::get({1}, element);
  auto loadElement = [&](Value offset) -> Value {
    Value value = memref::LoadOp::create(b, shared, ValueRange{offset});
    return toF32(vector::BroadcastOp::create(b, single, value));
  };
  auto storeElement = [&](Value value, Value offset) {
    Value rounded = vector::ExtractOp::create(b, convert(value, element),
                                              ArrayRef<int64_t>{0});
    memref::StoreOp::create(b, rounded, shared, ValueRange{offset});
  };
  forEachTileRow(rows, [&](Value row) {
    Value token = tokenOf(row);
    Value exists = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, index(rows)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, seqLength));
    for (auto [owner, ownsPair, slotAngles] : llvm::zip(ownerOf, owns, angles))
      ifThen(arith::AndIOp::create(b, exists, ownsPair), [&] {
        auto [cos, sin] = getRopeAngles(spec, slotAngles, tokenPosition(token));
        // (a, b) -> (a cos - b sin, b cos + a sin).
        auto turn = [&](Value x, Value y) -> std::pair<Value, Value> {
          return {subf(mulf(x, cos), mulf(y, sin)),
                  addf(mulf(y, cos), mulf(x, sin))};
        };
        if (!byChunk) {
          Value first = neox ? owner : mul(owner, index(2));
          Value second = add(first, index(neox ? pairs : 1));
          Value firstAt = elementOffset(row, first);
          Value secondAt = elementOffset(row, second);
          auto [x, y] = turn(loadElement(firstAt), loadElement(secondAt));
          storeElement(x, firstAt);
          storeElement(y, secondAt);
          return;
        }
        if (neox) {
          Value first = tileOffset(base, row, owner);
          Value second = tileOffset(base, row, add(owner, index(owners)));
          auto [x, y] =
              turn(toF32(loadChunk(first)), toF32(loadChunk(second)));
          storeChunk(convert(x, element), first);
          storeChunk(convert(y, element), second);
          return;
        }
        Value offset = tileOffset(base, row, owner);
        Value chunk = toF32(loadChunk(offset));
        auto [even, odd] =
            turn(vector::ShuffleOp::create(b, chunk, chunk,
                                           ArrayRef<int64_t>{0, 2, 4, 6}),
                 vector::ShuffleOp::create(b, chunk, chunk,
                                           ArrayRef<int64_t>{1, 3, 5, 7}));
        Value turned = vector::ShuffleOp::create(
            b, even, odd, ArrayRef<int64_t>{0, 4, 1, 5, 2, 6, 3, 7});
        storeChunk(convert(turned, element), offset);
      });
  }, active);
  gpu::BarrierOp::create(b);
}

// The position of token `token` of the sequence: its positions entry, or
// its index (after the cache, in decode).
Value AttentionEmitter::tokenPosition(Value token) {
  if (spec.ropePositions)
    return memref::LoadOp::create(b, arg("positions"),
                                  ValueRange{add(seqStart, token)});
  return arith::IndexCastUIOp::create(b, b.getI32Type(),
                                      decode ? add(cacheLength, token) : token);
}

//===----------------------------------------------------------------------===//
// Query rows, key tiles and the decode epilogue
//===----------------------------------------------------------------------===//

Value AttentionEmitter::rowToken(Value row) {
  Value flat = add(qTileStart, row);
  return decode ? arith::DivUIOp::create(b, flat, index(group)).getResult()
                : flat;
}

Value AttentionEmitter::rowHead(Value row) {
  if (!decode)
    return head;
  Value flat = add(qTileStart, row);
  return add(mul(kvHead, index(group)),
             arith::RemUIOp::create(b, flat, index(group)));
}

AttentionEmitter::KeyTile AttentionEmitter::getKeyTile(Value tile) {
  if (!decode)
    return {Value(), mul(tile, index(blockN)), seqLength};
  Value isNew =
      arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tile, cacheTiles);
  Value newFirst = mul(arith::SubIOp::create(b, tile, cacheTiles), index(blockN));
  Value cacheFirst = add(splitStart, mul(tile, index(blockN)));
  return {isNew, arith::SelectOp::create(b, isNew, newFirst, cacheFirst),
          arith::SelectOp::create(b, isNew, seqLength, splitEnd)};
}

Value AttentionEmitter::outputOffset(Value row, Value column) {
  Value token = add(seqStart, rowToken(row));
  return add(mul(token, stride("output")),
             add(mul(rowHead(row), index(headDim)), column));
}

// The CTA of the last split and first query tile writes the new keys (as
// normalized and rotated in shared memory) and values; rows past the
// capacity are dropped, so no sequence's cache spills into the next.
void AttentionEmitter::emitCacheAppend(Value tile, Value stage) {
  KeyTile keys = getKeyTile(tile);
  Value writer = arith::AndIOp::create(
      b, arith::AndIOp::create(b, isLastSplit, found),
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, qTileStart,
                            index(0)));
  int64_t chunks = blockN * chunksPerRow;
  ifThen(arith::AndIOp::create(b, keys.isNew, writer), [&] {
    forEachCtaItem(chunks, [&](int64_t, Value chunk) {
      Value row = arith::DivUIOp::create(b, chunk, index(chunksPerRow));
      Value col = arith::RemUIOp::create(b, chunk, index(chunksPerRow));
      Value key = add(keys.first, row);
      Value position = add(cacheLength, key);
      Value valid = arith::AndIOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, seqLength),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position,
                                capacity));
      ifThen(valid, [&] {
        // A paged cache's unset page takes nothing.
        auto [cacheRow, own] =
            getCacheRow(spec.cacheBlockSize, seqCache, position);
        auto store = [&] {
          for (bool value : {false, true}) {
            StringRef name = value ? "v_cache" : "k_cache";
            Value cache = arg(name);
            Value at = add(
                add(mul(cacheRow, stride(name)), mul(kvHead, index(headDim))),
                mul(col, index(kChunk)));
            Value data =
                loadChunk(tileOffset(stageBase(stage, value), row, col));
            // FP8: the chunk over the scale, rounded (each thread rounds
            // the same chunks again in emitFp8Tiles).
            if (spec.fp8Cache)
              data = quantizeFp8(toF32(data), value);
            vector::StoreOp::create(b, data, cache, at, /*nontemporal=*/false,
                                    spec.fp8Cache ? llvm::MaybeAlign(kChunk)
                                                  : alignmentOf(cache));
          }
        };
        if (own)
          ifThen(own, store);
        else
          store();
      });
    });
  });
}

SmallVector<AttentionEmitter::OutputPair>
AttentionEmitter::getOutputPairs(ValueRange acc, int64_t h) {
  auto element = [&](int64_t d, int64_t i) -> Value {
    return vector::ExtractOp::create(b, acc[d], 2 * h + i);
  };
  SmallVector<OutputPair> pairs;
  // Block d: columns 8d + 2t + {0, 1}; an FP8 cache's blocks 2e and 2e + 1:
  // columns 16e + 4t + {0, 2} and {1, 3} (the values' fragments).
  for (int64_t d = 0; d < static_cast<int64_t>(acc.size()); ++d) {
    if (!spec.fp8Cache)
      pairs.push_back({8 * d, element(d, 0), element(d, 1)});
    else if (d % 2 == 0)
      for (int64_t i = 0; i < 2; ++i)
        pairs.push_back({8 * d + 2 * i, element(d, i), element(d + 1, i)});
  }
  return pairs;
}

Value AttentionEmitter::getOutputLaneColumn() {
  Value t = arith::RemUIOp::create(b, laneInWarp, index(4));
  return mul(t, index(spec.fp8Cache ? 4 : 2));
}

void AttentionEmitter::emitSplitEpilogue(ValueRange state,
                                         ArrayRef<Value> rowSums,
                                         Value tileRows, Value tileIndex,
                                         Value combined) {
  MLIRContext *context = b.getContext();
  int64_t heads = spec.numQHeads;
  double negInf = -std::numeric_limits<double>::infinity();
  Value workspace = arg("workspace"), semaphores = arg("semaphores");
  Value rows = indexArg("rows");
  Value t = arith::RemUIOp::create(b, laneInWarp, index(4));
  Value warpRow =
      add(warpFirstRow, arith::DivUIOp::create(b, laneInWarp, index(4)));
  // Entry (split, token, head): its output row at entry * D, its
  // log2-sum-exp at lseBase + entry.
  Value lseBase = mul(mul(splits, rows), index(heads * headDim));
  auto entryOf = [&](Value splitIndex, Value row) {
    Value token = add(seqStart, rowToken(row));
    return add(mul(add(mul(splitIndex, rows), token), index(heads)),
               rowHead(row));
  };
  VectorType pairType = VectorType::get({2}, f32);
  for (int64_t h = 0; h < 2; ++h) {
    Value row = add(warpRow, index(8 * h));
    Value sum = rowSums[h];
    // A split without keys (a short cache) has l = 0: it adds nothing.
    Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum,
                                        constantF32(0.0));
    Value inverse = arith::SelectOp::create(
        b, empty, constantF32(0.0),
        arith::DivFOp::create(b, spec.fp8Cache ? vScale : constantF32(1.0),
                              sum));
    Value stores = arith::AndIOp::create(
        b, ownsRows,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, tileRows));
    ifThen(stores, [&] {
      Value entry = entryOf(split, row);
      Value rowBase = add(mul(entry, index(headDim)), getOutputLaneColumn());
      for (const OutputPair &pair :
           getOutputPairs(state.slice(4, headDim / 8), h))
        vector::StoreOp::create(b,
                                vector::FromElementsOp::create(
                                    b, pairType,
                                    ValueRange{mulf(pair.first, inverse),
                                               mulf(pair.second, inverse)}),
                                workspace, add(rowBase, index(pair.column)),
                                /*nontemporal=*/false, llvm::Align(8));
      ifThen(
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, index(0)), [&] {
            Value lse =
                addf(state[h],
                     math::Log2Op::create(b, sum, arith::FastMathFlags::afn));
            lse = arith::SelectOp::create(b, empty, constantF32(negInf), lse);
            memref::StoreOp::create(b, lse, workspace,
                                    ValueRange{add(lseBase, entry)});
          });
    });
  }

  // The semaphore of (tile, kv head): the release fence makes this CTA's
  // partials (all threads' stores, ordered by the barrier) visible before
  // its count, the acquire fence of the last CTA the others' before its
  // reads.
  gpu::BarrierOp::create(b);
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  Value flag = memref::ViewOp::create(
      b, MemRefType::get({1}, b.getI32Type(), nullptr, workgroup),
      gpu::DynamicSharedMemoryOp::create(
          b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                             workgroup)),
      index(0), ValueRange{});
  auto fence = [&] {
    LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "device");
  };
  Value i32One = arith::ConstantIntOp::create(b, 1, 32);
  Value i32Zero = arith::ConstantIntOp::create(b, 0, 32);
  Value first =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, index(0));
  ifThen(first, [&] {
    memref::StoreOp::create(b, i32Zero, flag, ValueRange{index(0)});
  });
  ifThen(arith::AndIOp::create(b, first, combined), [&] {
    Value at = add(mul(tileIndex, index(spec.numKvHeads)), kvHead);
    fence();
    Value before = memref::AtomicRMWOp::create(
        b, arith::AtomicRMWKind::addi, i32One, semaphores, ValueRange{at});
    Value last = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq,
        arith::IndexCastOp::create(b, b.getIndexType(), before),
        arith::SubIOp::create(b, splits, index(1)));
    ifThen(last, [&] {
      memref::StoreOp::create(b, i32Zero, semaphores, ValueRange{at});
      fence();
      memref::StoreOp::create(b, i32One, flag, ValueRange{index(0)});
    });
  });
  gpu::BarrierOp::create(b);
  Value isLast = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ne,
      memref::LoadOp::create(b, flag, ValueRange{index(0)}), i32Zero);

  // The combine, in split order: out = sum_s 2^(lse_s - m) o_s /
  // sum_s 2^(lse_s - m), one 4-element quad of a row per thread and step.
  int64_t quads = headDim / 4;
  VectorType quadType = VectorType::get({4}, f32);
  ifThen(isLast, [&] {
    Value steps = index(llvm::divideCeil(blockM * quads, ctaThreads));
    scf::ForOp::create(
        b, index(0), steps, index(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value step, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          Value item = add(tid, mul(step, index(ctaThreads)));
          Value row = arith::DivUIOp::create(b, item, index(quads));
          Value quad = arith::RemUIOp::create(b, item, index(quads));
          ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                       tileRows),
                 [&] {
            auto combine = scf::ForOp::create(
                b, index(0), splits, index(1),
                ValueRange{constantF32(negInf), constantF32(0.0),
                           zero(quadType)},
                [&](OpBuilder &inner, Location, Value s, ValueRange state) {
                  OpBuilder::InsertionGuard guard(b);
                  b.setInsertionPoint(inner.getInsertionBlock(),
                                      inner.getInsertionPoint());
                  Value entry = entryOf(s, row);
                  Value lse = memref::LoadOp::create(
                      b, workspace, ValueRange{add(lseBase, entry)});
                  Value o = vector::LoadOp::create(
                      b, quadType, workspace,
                      add(mul(entry, index(headDim)), mul(quad, index(4))),
                      /*nontemporal=*/false, llvm::Align(16));
                  Value m = arith::MaximumFOp::create(b, state[0], lse);
                  Value isInf = arith::CmpFOp::create(
                      b, arith::CmpFPredicate::OEQ, m, constantF32(negInf));
                  Value mUsed =
                      arith::SelectOp::create(b, isInf, constantF32(0.0), m);
                  Value rescale = math::Exp2Op::create(
                      b, subf(state[0], mUsed), arith::FastMathFlags::afn);
                  Value w = math::Exp2Op::create(b, subf(lse, mUsed),
                                                 arith::FastMathFlags::afn);
                  auto quadOf = [&](Value x) {
                    return vector::BroadcastOp::create(b, quadType, x);
                  };
                  Value acc = addf(mulf(state[2], quadOf(rescale)),
                                   mulf(o, quadOf(w)));
                  Value l = addf(mulf(state[1], rescale), w);
                  scf::YieldOp::create(b, ValueRange{m, l, acc});
                });
            Value inverse = arith::DivFOp::create(b, constantF32(1.0),
                                                  combine.getResult(1));
            Value out = mulf(combine.getResult(2),
                             vector::BroadcastOp::create(b, quadType, inverse));
            vector::StoreOp::create(b, convert(out, element), arg("output"),
                                    outputOffset(row, mul(quad, index(4))),
                                    /*nontemporal=*/false, llvm::Align(8));
          });
          scf::YieldOp::create(b);
        });
  });
}

SmallVector<Value> AttentionEmitter::mergeKeyWarps(ValueRange state) {
  MLIRContext *context = b.getContext();
  int64_t outBlocks = headDim / 8;
  VectorType quad = VectorType::get({4}, f32);
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  // Over the tiles (read by now; the barrier also orders a loop that did
  // not run after the query prologue's stores): per warp, records of 1 +
  // outBlocks quads, lane-major, so that each 16-byte store and load of a
  // warp is one contiguous 512-byte run.
  Value records = memref::ViewOp::create(
      b,
      MemRefType::get({ctaThreads / 32 * (1 + outBlocks) * 32}, quad, nullptr,
                      workgroup),
      gpu::DynamicSharedMemoryOp::create(
          b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                             workgroup)),
      index(0), ValueRange{});
  auto at = [&](Value warpIndex, int64_t j) {
    return add(
        mul(add(mul(warpIndex, index(1 + outBlocks)), index(j)), index(32)),
        laneInWarp);
  };
  gpu::BarrierOp::create(b);
  // (m_g, m_g+8, l_g, l_g+8): the maxima (log2 units) and this lane's sum
  // shares, then the output blocks.
  ifThen(
      arith::XOrIOp::create(b, ownsRows, arith::ConstantIntOp::create(b, 1, 1)),
      [&] {
        memref::StoreOp::create(
            b, vector::FromElementsOp::create(b, quad, state.take_front(4)),
            records, ValueRange{at(warp, 0)});
        for (int64_t d = 0; d < outBlocks; ++d)
          memref::StoreOp::create(b, state[4 + d], records,
                                  ValueRange{at(warp, 1 + d)});
      });
  gpu::BarrierOp::create(b);
  double negInf = -std::numeric_limits<double>::infinity();
  return ifElse(
      ownsRows,
      [&]() -> SmallVector<Value> {
        // m = max_w m_w; each warp's part rescaled by 2^(m_w - m) (0 where
        // every key so far was masked: m = -inf stands in as 0, as in the
        // loop).
        SmallVector<Value> heads = {
            vector::FromElementsOp::create(b, quad, state.take_front(4))};
        for (int64_t w = 1; w < keyWarps; ++w)
          heads.push_back(memref::LoadOp::create(
              b, records, ValueRange{at(add(warp, index(w)), 0)}));
        SmallVector<Value> merged(4 + outBlocks);
        SmallVector<Value> maxUsed(2);
        for (int64_t h = 0; h < 2; ++h) {
          Value m = vector::ExtractOp::create(b, heads[0], h);
          for (int64_t w = 1; w < keyWarps; ++w)
            m = arith::MaximumFOp::create(
                b, m, vector::ExtractOp::create(b, heads[w], h));
          merged[h] = m;
          Value isInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m,
                                              constantF32(negInf));
          maxUsed[h] = arith::SelectOp::create(b, isInf, constantF32(0.0), m);
          merged[2 + h] = constantF32(0.0);
        }
        for (int64_t d = 0; d < outBlocks; ++d)
          merged[4 + d] = zero(quad);
        for (int64_t w = 0; w < keyWarps; ++w) {
          SmallVector<Value> rescale(2);
          for (int64_t h = 0; h < 2; ++h) {
            rescale[h] = math::Exp2Op::create(
                b, subf(vector::ExtractOp::create(b, heads[w], h), maxUsed[h]),
                arith::FastMathFlags::afn);
            merged[2 + h] = math::FmaOp::create(
                b, vector::ExtractOp::create(b, heads[w], 2 + h), rescale[h],
                merged[2 + h]);
          }
          Value rescaleQuad = vector::FromElementsOp::create(
              b, quad,
              ValueRange{rescale[0], rescale[0], rescale[1], rescale[1]});
          for (int64_t d = 0; d < outBlocks; ++d) {
            Value o = w == 0 ? state[4 + d]
                             : memref::LoadOp::create(
                                   b, records,
                                   ValueRange{at(add(warp, index(w)), 1 + d)});
            merged[4 + d] =
                math::FmaOp::create(b, o, rescaleQuad, merged[4 + d]);
          }
        }
        return merged;
      },
      state);
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

Value AttentionEmitter::locateQueryTile(Value &tileIndex) {
  int64_t heads = spec.numQHeads;
  int64_t headsPerKvHead = spec.numQHeads / spec.numKvHeads;
  // Which tile of which sequence: CTA `bid` is slot bid / H (below), head
  // bid % H. CTAs of a slot without a tile do no work: every loop below runs
  // zero times and nothing is stored.
  if (decode) {
    // Decode: CTA `bid` is kv head bid % Hkv, split (bid / Hkv) % splits,
    // query tile bid / (Hkv splits).
    int64_t kvHeads = spec.numKvHeads;
    splits = indexArg("kv_splits");
    kvHead = arith::RemUIOp::create(b, bid, index(kvHeads));
    Value rest = arith::DivUIOp::create(b, bid, index(kvHeads));
    split = arith::RemUIOp::create(b, rest, splits);
    tileIndex = arith::DivUIOp::create(b, rest, splits);
    isLastSplit = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, split,
        arith::SubIOp::create(b, splits, index(1)));
  } else {
    head = arith::RemUIOp::create(b, bid, index(heads));
    kvHead = arith::DivUIOp::create(b, head, index(headsPerKvHead));
    tileIndex = arith::DivUIOp::create(b, bid, index(heads));
  }
  Value cuSeqlens = arg("cu_seqlens");
  auto offsetAt = [&](Value i) {
    return arith::IndexCastOp::create(
        b, b.getIndexType(), memref::LoadOp::create(b, cuSeqlens, i));
  };
  // Sequences of `length` tokens have length x group query rows (group
  // heads a token in decode tiles). Sequence s owns the slots from
  // slot(s) = floor((start_s - start_0) group / M) + s on, one for each of
  // its ceil(length group / M) tiles: slot() increases, and a sequence's
  // tiles end before the next one's slots begin (floor(a / M) + ceil(l / M)
  // <= floor((a + l) / M) + 1), within the grid's ceil(rows group / M) +
  // batch slots. A 16-way search over slot() finds the CTA's sequence in
  // ceil(log16(batch)) rounds of 15 independent loads (one round to 16
  // sequences, two to 256, three to 4096; a binary search took
  // ceil(log2(batch)) dependent loads); slots past a sequence's tiles do no
  // work.
  Value firstStart = offsetAt(index(0));
  auto slotOf = [&](Value s) -> Value {
    Value rows = mul(arith::SubIOp::create(b, offsetAt(s), firstStart),
                     index(group));
    return add(arith::DivUIOp::create(b, rows, index(blockM)), s);
  };
  if (!decode && spec.causal) {
    // Longest first: a causal tile's work grows with its index within the
    // sequence, and the GPU starts CTAs about in order.
    Value slots = arith::DivUIOp::create(
        b, gpu::GridDimOp::create(b, gpu::Dimension::x), index(heads));
    tileIndex = arith::SubIOp::create(
        b, arith::SubIOp::create(b, slots, index(1)), tileIndex);
  }
  seq = findLast(indexArg("batch"), slotOf, tileIndex, kSequenceSearchArity);
  seqStart = offsetAt(seq);
  seqLength = arith::MaxSIOp::create(
      b, arith::SubIOp::create(b, offsetAt(add(seq, index(1))), seqStart),
      index(0));
  Value tileInSeq = arith::SubIOp::create(b, tileIndex, slotOf(seq));
  found = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ult, tileInSeq,
      arith::CeilDivUIOp::create(b, mul(seqLength, index(group)),
                                 index(blockM)));
  qTileStart = mul(tileInSeq, index(blockM));
  Value seqRows = mul(seqLength, index(group));
  Value remaining = arith::SubIOp::create(
      b, arith::MaxSIOp::create(b, seqRows, qTileStart), qTileStart);
  Value tileRows = arith::SelectOp::create(
      b, found, arith::MinSIOp::create(b, remaining, index(blockM)), index(0));
  return tileRows;
}

void AttentionEmitter::loadQkWeights(Value chunkValid) {
  // With a weight row per head: the CTA's head's (decode's query rows span
  // a group of heads: each row loads its own, see getQueryWeight).
  if (spec.hasWeight) {
    if (!spec.keysPrepared)
      kWeight = loadWeightChunk("k_weight", kvHead, chunkValid);
    if (!(decode && spec.qkWeightPerHead))
      qWeight = loadWeightChunk("q_weight", head, chunkValid);
  }
}

Value AttentionEmitter::createSharedViews(int64_t elements) {
  MLIRContext *context = b.getContext();
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  Value memory = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                         workgroup));
  shared = memref::ViewOp::create(
      b, MemRefType::get({elements}, element, nullptr, workgroup), memory,
      index(0), ValueRange{});
  // memref.load/store of whole vectors: 16-byte aligned shared accesses that
  // the NVVM conversion lowers with the shared address space.
  sharedChunks = memref::ViewOp::create(
      b, MemRefType::get({elements / kChunk}, chunkType, nullptr, workgroup),
      memory, index(0), ValueRange{});
  sharedPairs = memref::ViewOp::create(
      b,
      MemRefType::get({elements / 2}, VectorType::get({2}, element), nullptr,
                      workgroup),
      memory, index(0), ValueRange{});
  sharedMma = shared;
  if (mmaElement != element)
    sharedMma = memref::ViewOp::create(
        b, MemRefType::get({elements}, mmaElement, nullptr, workgroup), memory,
        index(0), ValueRange{});
  return memory;
}

void AttentionEmitter::emit() {
  waitForPredecessor();
  MLIRContext *context = b.getContext();
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  warp = arith::DivUIOp::create(b, tid, index(32));
  laneInWarp = arith::RemUIOp::create(b, tid, index(32));
  if (sig.launch.isWarpgroupAttention())
    return emitWarpgroupKernel();
  // Warps w keyWarps .. w keyWarps + keyWarps - 1 share row tile w.
  keySlot = arith::RemUIOp::create(b, warp, index(keyWarps));
  ownsRows =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keySlot, index(0));
  warpFirstRow = mul(arith::DivUIOp::create(b, warp, index(keyWarps)),
                     index(16 * rowTiles));

  // Shared memory: the query tile, then `wideStages` key tiles, then as
  // many value tiles, then an FP8 cache's tiles.
  int64_t sharedElements = (blockM + 2 * wideStages * blockN) * tiles.pitch;
  Value memory = createSharedViews(sharedElements);
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  // An FP8 cache's tiles as they arrive, after the others (their bytes):
  // the loop's fragments widen in registers.
  if (spec.fp8Cache) {
    int64_t bytes = 2 * stages * blockN * fp8Layout.pitch;
    Value start = index(sharedElements * element.getIntOrFloatBitWidth() / 8);
    Type fp8 = b.getType<Float8E4M3FNType>();
    fp8Bytes = memref::ViewOp::create(
        b, MemRefType::get({bytes}, fp8, nullptr, workgroup), memory, start,
        ValueRange{});
    fp8Tiles = memref::ViewOp::create(
        b,
        MemRefType::get({bytes / kFp8Chunk}, VectorType::get({kFp8Chunk}, fp8),
                        nullptr, workgroup),
        memory, start, ValueRange{});
  }

  Value tileIndex;
  Value tileRows = locateQueryTile(tileIndex);

  // The QK-Norm weights, one chunk per lane, for the whole kernel.
  Value chunkValid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                           index(chunksPerRow));
  loadQkWeights(chunkValid);
  // An FP8 cache's scales: the tensor's, or the kv head's.
  if (spec.fp8Cache) {
    Value at = spec.cacheScalePerHead ? kvHead : index(0);
    kScale = memref::LoadOp::create(b, arg("k_scale"), ValueRange{at});
    vScale = memref::LoadOp::create(b, arg("v_scale"), ValueRange{at});
    kInverse = arith::DivFOp::create(b, constantF32(1.0), kScale);
    vInverse = arith::DivFOp::create(b, constantF32(1.0), vScale);
  }

  // Decode: the sequence's cache rows (its length clamped to the capacity,
  // so that reads stay inside its rows) and this split's range of them,
  // whole key tiles each; the last split also holds the new keys.
  Value keyTiles;
  if (decode) {
    seqCache = getSequenceCache(spec, seq);
    capacity = seqCache.capacity;
    Value stored = ifElseZeros(found, [&]() -> SmallVector<Value> {
                     return {arith::IndexCastOp::create(
                         b, b.getIndexType(),
                         memref::LoadOp::create(b, arg("cache_seqlens"),
                                                ValueRange{seq}))};
                   }).front();
    cacheLength = arith::MinSIOp::create(
        b, arith::MaxSIOp::create(b, stored, index(0)), capacity);
    Value perSplit = mul(
        arith::CeilDivUIOp::create(
            b, arith::CeilDivUIOp::create(b, cacheLength, splits),
            index(blockN)),
        index(blockN));
    splitStart = arith::MinUIOp::create(b, mul(split, perSplit), cacheLength);
    splitEnd = arith::MinUIOp::create(b, add(splitStart, perSplit), cacheLength);
    Value splitKeys = arith::SubIOp::create(b, splitEnd, splitStart);
    cacheTiles = arith::CeilDivUIOp::create(b, splitKeys, index(blockN));
    wholeCacheTiles = arith::DivUIOp::create(b, splitKeys, index(blockN));
    Value newTiles = arith::SelectOp::create(
        b, isLastSplit, arith::CeilDivUIOp::create(b, seqLength, index(blockN)),
        index(0));
    keyTiles = add(cacheTiles, newTiles);
  }

  // Key tiles to visit: all of the sequence's, or up to the one holding the
  // tile's last query row.
  if (!decode)
    keyTiles = arith::CeilDivUIOp::create(b, seqLength, index(blockN));
  if (spec.causal) {
    Value lastRow = add(qTileStart, tileRows);
    keyTiles = arith::MinUIOp::create(
        b, keyTiles, arith::CeilDivUIOp::create(b, lastRow, index(blockN)));
  }
  keyTiles = arith::SelectOp::create(b, found, keyTiles, index(0));

  // Prefetch the first stages - 1 tiles (a group each, empty past the end)
  // before the query prologue: their copies overlap its loads and norms.
  for (int64_t s = 0; s + 1 < stages; ++s)
    ifThen(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, index(s), keyTiles),
        [&] { emitKeyValueCopies(index(s), index(s)); },
        [&] { AsyncCommitOp::create(b); });

  emitQueryPrologue(tileRows, chunkValid);
  if (spec.fp8Cache)
    emitFp8QueryLayout();

  // Per thread: rows g and g + 8 of each of the warp's row tiles (16 rows
  // each, the warp's rowTiles x 16 rows in a row), columns 2t, 2t + 1 of
  // each 8-wide score block of its slice of the keys and each output block.
  Value g = arith::DivUIOp::create(b, laneInWarp, index(4));
  Value t = arith::RemUIOp::create(b, laneInWarp, index(4));
  Value sliceFirstKey = mul(keySlot, index(sliceN));
  auto rowOf = [&](int64_t mt, int64_t h) {
    return add(warpFirstRow, add(g, index(16 * mt + 8 * h)));
  };
  int64_t scoreBlocks = sliceN / 8, outBlocks = headDim / 8;
  // Loop state per row tile: the running maxima of rows g and g + 8, this
  // lane's shares of their sums, the output blocks.
  int64_t stateStride = 4 + outBlocks;
  VectorType accType = VectorType::get({4}, f32);
  double negInf = -std::numeric_limits<double>::infinity();
  double log2e = 1.4426950408889634;
  Value scaleLog2 = constantF32(spec.scale * log2e);
  // An FP8 cache's tiles hold the e4m3 values: the key scale joins the
  // softmax's (the value scale the output's, emitSplitEpilogue).
  if (spec.fp8Cache)
    scaleLog2 = mulf(scaleLog2, kScale);

  // ldmatrix x4 row addresses (lane l gives row l % 8 of matrix l / 8):
  // Q: rows 16 (rowTiles w + mt) + l % 16, chunks 2kk + l / 16; K: keys
  // 8n + l % 8 + 8 (j / 2), chunks 2kk + j % 2; V (transposed): keys 16c +
  // l % 8 + 8 (j % 2), chunks d + j / 2, with j = l / 8.
  Value matrix = arith::DivUIOp::create(b, laneInWarp, index(8));
  Value rowInMatrix = arith::RemUIOp::create(b, laneInWarp, index(8));
  Value matrixHigh = arith::RemUIOp::create(b, matrix, index(2));
  Value matrixPair = arith::DivUIOp::create(b, matrix, index(2));
  SmallVector<int64_t> kSteps, dSteps;
  for (int64_t kk = 0; kk < headDim / 16; ++kk)
    kSteps.push_back(2 * kk);
  for (int64_t d = 0; d < outBlocks; d += 2)
    dSteps.push_back(d);
  FragmentRows qRows = makeFragmentRows(
      add(warpFirstRow, arith::RemUIOp::create(b, laneInWarp, index(16))),
      arith::DivUIOp::create(b, laneInWarp, index(16)), kSteps, tiles);
  // A slice starts at a multiple of 16 keys: the swizzle's row bits stay.
  FragmentRows kRows = makeFragmentRows(
      add(sliceFirstKey, add(mul(matrixPair, index(8)), rowInMatrix)),
      matrixHigh, kSteps, tiles);
  FragmentRows vRows = makeFragmentRows(
      add(sliceFirstKey, add(mul(matrixHigh, index(8)), rowInMatrix)),
      matrixPair, dSteps, tiles);
  // An FP8 cache's keys and values alike, an ldmatrix x2 (x4 kept 16 more
  // widened values live, and ptxas spilled on sm_89 at head dims 80-160):
  // keys 16c + l % 8 + 8 (j % 2), 16-byte chunk e (16 head columns).
  int64_t fp8Chunks = headDim / 16;
  FragmentRows fp8Rows;
  if (spec.fp8Cache) {
    SmallVector<int64_t> chunkSteps;
    for (int64_t e = 0; e < fp8Chunks; ++e)
      chunkSteps.push_back(e);
    fp8Rows = makeFragmentRows(
        add(sliceFirstKey, add(mul(matrixHigh, index(8)), rowInMatrix)),
        Value(), chunkSteps, fp8Layout);
  }

  SmallVector<Value> init;
  for (int64_t mt = 0; mt < rowTiles; ++mt) {
    init.push_back(constantF32(negInf)); // running max, row g
    init.push_back(constantF32(negInf)); // row g + 8
    init.push_back(constantF32(0.0));    // this lane's share of the row sums
    init.push_back(constantF32(0.0));
    for (int64_t d = 0; d < outBlocks; ++d)
      init.push_back(zero(accType));
  }
  // One key tile: the loop state after it, scores masked with `masked`.
  auto keyTileStep = [&](Value tile, ValueRange state,
                         bool masked) -> SmallVector<Value> {
    // Issue tile + stages - 1, then wait for tile `tile`. Prefill's
    // unmasked loop stops where that tile would be the last or a partial
    // one: its copies need neither a branch nor row guards.
    Value ahead = add(tile, index(stages - 1));
    Value aheadStage = arith::RemUIOp::create(b, ahead, index(stages));
    auto guardedCopies = [&] {
      ifThen(
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, ahead, keyTiles),
          [&] { emitKeyValueCopies(ahead, aheadStage); },
          [&] { AsyncCommitOp::create(b); });
    };
    auto issueAhead = [&] {
      if (!masked && !decode)
        emitKeyValueCopies(ahead, aheadStage, /*full=*/true);
      else if (decode)
        // A split's whole tiles of cached keys (all but its last) copy
        // without row guards, as prefill's unmasked loop does.
        ifThen(
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, ahead,
                                  wholeCacheTiles),
            [&] { emitKeyValueCopies(ahead, aheadStage, /*full=*/true); },
            guardedCopies);
      else
        guardedCopies();
    };
    // With an FP8 cache's two stages the next tile's copies wait until this
    // tile's new keys are in its FP8 tiles: then they may overwrite the one
    // tile of new keys (wideStages).
    bool lateCopies = wideStages == 1 && stages == 2;
    if (!lateCopies)
      issueAhead();
    AsyncWaitOp::create(b, lateCopies ? 0 : stages - 1);
    gpu::BarrierOp::create(b);
    Value stage = arith::RemUIOp::create(b, tile, index(stages));
    // Decode normalizes and rotates the new keys only: the cache holds
    // them as they were appended.
    KeyTile keys = getKeyTile(tile);
    Value kBase = stageBase(stage, /*value=*/false);
    auto keyWeight = [&](Value) { return kWeight; };
    bool keyNorm = hasNorm && !spec.keysPrepared;
    bool keyRope = hasRope && !spec.keysPrepared;
    if (keyNorm && !spec.ropeFirst)
      emitTileNorm(kBase, blockN, keyWeight, keys.isNew);
    if (keyRope)
      emitRope(
          kBase, blockN, [&](Value row) { return add(keys.first, row); },
          keys.isNew);
    if (keyNorm && spec.ropeFirst)
      emitTileNorm(kBase, blockN, keyWeight, keys.isNew);
    if (decode)
      emitCacheAppend(tile, stage);
    if (spec.fp8Cache)
      emitNewKeysToFp8(keys, stage);
    if (lateCopies)
      issueAhead();

    // S = Q K^T: (16 rowTiles) x N per warp; each K fragment feeds
    // every row tile.
    Value vBase = stageBase(stage, true);
    SmallVector<Value> scores(rowTiles * scoreBlocks, zero(accType));
    auto score = [&](int64_t mt, int64_t n) -> Value & {
      return scores[mt * scoreBlocks + n];
    };
    // An FP8 cache's keys: an ldmatrix x2 of keys [8n, 8n + 16) at head
    // columns [16kk, 16kk + 16) gives lane l key 8n + l / 4 (+ 8), columns
    // 16kk + 4 (l % 4) + {0, 1, 2, 3}: fragment rows 2t, 2t + 1, 2t + 8,
    // 2t + 9 take columns 4t, 4t + 2, 4t + 1, 4t + 3, the query's order
    // (emitFp8QueryLayout).
    for (int64_t kk = 0; spec.fp8Cache && kk < fp8Chunks; ++kk) {
      SmallVector<Value> a;
      for (int64_t mt = 0; mt < rowTiles; ++mt)
        a.push_back(ldmatrix(fragmentOffset(index(0), qRows, 16 * mt, 2 * kk),
                             /*transpose=*/false));
      for (int64_t n = 0; n < scoreBlocks; n += 2) {
        Value fragments = widenFp8Fragments(
            ldmatrixFp8(
                fragmentOffset(fp8StageBase(stage, false), fp8Rows, 8 * n, kk),
                /*matrices=*/2, /*transpose=*/false),
            {0, 2, 1, 3, 4, 6, 5, 7});
        mmaFragmentPair(a, fragments, [&](int64_t mt, int64_t j) -> Value & {
          return score(mt, n + j);
        });
      }
    }
    for (int64_t kk = 0; !spec.fp8Cache && kk < headDim / 16; ++kk) {
      SmallVector<Value> a;
      for (int64_t mt = 0; mt < rowTiles; ++mt)
        a.push_back(ldmatrix(fragmentOffset(index(0), qRows, 16 * mt, 2 * kk),
                             /*transpose=*/false));
      for (int64_t n = 0; n < scoreBlocks; n += 2) {
        // Matrices: keys [8n, 8n + 8) and [8n + 8, 8n + 16), each at
        // head columns [16kk, 16kk + 8) and [16kk + 8, 16kk + 16).
        Value fragments = ldmatrix(fragmentOffset(kBase, kRows, 8 * n, 2 * kk),
                                   /*transpose=*/false);
        mmaFragmentPair(a, fragments, [&](int64_t mt, int64_t j) -> Value & {
          return score(mt, n + j);
        });
      }
    }

    // Mask keys past the sequence and, causal, after the query row.
    // Per row, keys [0, limit) of this lane's columns 2t + 8n + i % 2
    // are kept: one i32 compare per element.
    auto maskScores = [&]() -> SmallVector<Value> {
      Value keyBase = add(add(keys.first, sliceFirstKey), mul(t, index(2)));
      SmallVector<Value> masked;
      for (int64_t mt = 0; mt < rowTiles; ++mt) {
        SmallVector<Value> limit(2);
        for (int64_t h = 0; h < 2; ++h) {
          Value row = rowOf(mt, h);
          Value end = keys.end;
          if (spec.causal)
            end = arith::MinUIOp::create(b, end,
                                         add(add(qTileStart, row), index(1)));
          // A new token sees the new keys up to itself.
          if (decode)
            end = arith::SelectOp::create(
                b, keys.isNew,
                arith::MinUIOp::create(b, end, add(rowToken(row), index(1))),
                end);
          limit[h] = arith::IndexCastOp::create(
              b, b.getI32Type(), arith::SubIOp::create(b, end, keyBase));
        }
        for (int64_t n = 0; n < scoreBlocks; ++n) {
          SmallVector<Value> elements;
          for (int64_t i = 0; i < 4; ++i) {
            Value column = arith::ConstantIntOp::create(b, 8 * n + i % 2, 32);
            Value keep = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                               column, limit[i / 2]);
            Value s = vector::ExtractOp::create(b, score(mt, n), i);
            elements.push_back(
                arith::SelectOp::create(b, keep, s, constantF32(negInf)));
          }
          masked.push_back(
              vector::FromElementsOp::create(b, accType, elements));
        }
      }
      return masked;
    };
    if (masked)
      scores = maskScores();

    // Online softmax per row, in log2 units (the running max m is
    // scaled): the raw scores' max (the scale is positive), the new
    // max over the 4 lanes of the row, the rescale of what came
    // before, p = 2^(s c - m) with c = scale log2(e), one fma and
    // ex2.approx.ftz per score.
    SmallVector<Value> next;
    SmallVector<Value> pBlocks;
    for (int64_t mt = 0; mt < rowTiles; ++mt) {
      ValueRange tileState = state.slice(mt * stateStride, stateStride);
      SmallVector<Value> rowMax(2, constantF32(negInf));
      for (int64_t n = 0; n < scoreBlocks; ++n)
        for (int64_t i = 0; i < 4; ++i)
          rowMax[i / 2] = arith::MaximumFOp::create(
              b, rowMax[i / 2], vector::ExtractOp::create(b, score(mt, n), i));
      SmallVector<Value> rescale(2), negMax(2);
      for (int64_t h = 0; h < 2; ++h) {
        Value m = arith::MaximumFOp::create(
            b, tileState[h], mulf(allReduceMax(rowMax[h], 4), scaleLog2));
        // A row with every key masked so far keeps max -inf; 0 stands
        // in so that 2^(-inf - 0) = 0 instead of NaN.
        Value isInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m,
                                            constantF32(negInf));
        Value maxUsed = arith::SelectOp::create(b, isInf, constantF32(0.0), m);
        rescale[h] = math::Exp2Op::create(b, subf(tileState[h], maxUsed),
                                          arith::FastMathFlags::afn);
        negMax[h] = arith::NegFOp::create(b, maxUsed);
        next.push_back(m);
      }
      SmallVector<Value> rowSum = {mulf(tileState[2], rescale[0]),
                                   mulf(tileState[3], rescale[1])};
      for (int64_t n = 0; n < scoreBlocks; ++n) {
        SmallVector<Value> p;
        for (int64_t i = 0; i < 4; ++i) {
          Value s = vector::ExtractOp::create(b, score(mt, n), i);
          Value e = math::Exp2Op::create(
              b, math::FmaOp::create(b, s, scaleLog2, negMax[i / 2]),
              arith::FastMathFlags::afn);
          rowSum[i / 2] = addf(rowSum[i / 2], e);
          p.push_back(e);
        }
        score(mt, n) = vector::FromElementsOp::create(b, accType, p);
      }
      next.push_back(rowSum[0]);
      next.push_back(rowSum[1]);
      Value rescaleVector = vector::FromElementsOp::create(
          b, accType,
          ValueRange{rescale[0], rescale[0], rescale[1], rescale[1]});
      for (int64_t d = 0; d < outBlocks; ++d)
        next.push_back(mulf(tileState[4 + d], rescaleVector));
    }

    // O += P V: P's k-block c is score blocks 2c and 2c + 1; each V
    // fragment feeds every row tile.
    auto out = [&](int64_t mt, int64_t d) -> Value & {
      return next[mt * stateStride + 4 + d];
    };
    for (int64_t c = 0; c < sliceN / 16; ++c) {
      SmallVector<Value> a;
      for (int64_t mt = 0; mt < rowTiles; ++mt)
        a.push_back(convert(vector::ShuffleOp::create(
                                b, score(mt, 2 * c), score(mt, 2 * c + 1),
                                ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}),
                            mmaElement));
      // An FP8 cache's values: an ldmatrix x2, transposed, of keys [16c,
      // 16c + 16) at head columns [16e, 16e + 16) gives lane l keys
      // 16c + 2t + {0, 1} (+ 8) at columns 16e + 2g + {0, 1}: the even
      // columns' bytes are the B fragment of output columns 16e + 2n (block
      // 2e), the odd ones' of 16e + 2n + 1 (block 2e + 1), so the lane
      // accumulates columns 16e + 4t + {0, 2} and {1, 3} (getOutputPairs).
      for (int64_t e = 0; spec.fp8Cache && e < fp8Chunks; ++e) {
        Value fragments = widenFp8Fragments(
            ldmatrixFp8(
                fragmentOffset(fp8StageBase(stage, true), fp8Rows, 16 * c, e),
                /*matrices=*/2, /*transpose=*/true),
            {0, 2, 4, 6, 1, 3, 5, 7});
        mmaFragmentPair(a, fragments, [&](int64_t mt, int64_t j) -> Value & {
          return out(mt, 2 * e + j);
        });
      }
      // Matrices: keys [16c, 16c + 8) and [16c + 8, 16c + 16), each at
      // head columns [8d, 8d + 8) and [8d + 8, 8d + 16), transposed.
      for (int64_t d = 0; !spec.fp8Cache && d < outBlocks; d += 2) {
        Value fragments = ldmatrix(fragmentOffset(vBase, vRows, 16 * c, d),
                                   /*transpose=*/true);
        mmaFragmentPair(a, fragments, [&](int64_t mt, int64_t j) -> Value & {
          return out(mt, d + j);
        });
      }
    }
    // The next iteration's copies overwrite the stage read here.
    gpu::BarrierOp::create(b);
    return next;
  };
  // FlashAttention-2's split: the tiles before the first that holds the
  // sequence's end or, causal, a key past the CTA's first query row need no
  // mask (uniform over the CTA, whose loops hold barriers); the rest do.
  // The unmasked loop also stops stages - 1 tiles before the last tile to
  // visit and the last whole one, so that the tile it prefetches is whole
  // and visited (the masked loop takes those few unmasked tiles too).
  // Decode masks every tile.
  Value unmaskedTiles = index(0);
  if (!decode) {
    Value limit = seqLength;
    if (spec.causal)
      limit = arith::MinUIOp::create(b, limit, add(qTileStart, index(1)));
    unmaskedTiles = arith::MinUIOp::create(
        b, keyTiles, arith::DivUIOp::create(b, limit, index(blockN)));
    Value prefetched = arith::MinUIOp::create(
        b, keyTiles, arith::DivUIOp::create(b, seqLength, index(blockN)));
    Value lean = arith::SelectOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, prefetched,
                              index(stages - 1)),
        index(0), arith::SubIOp::create(b, prefetched, index(stages - 1)));
    unmaskedTiles = arith::MinUIOp::create(b, unmaskedTiles, lean);
  }
  auto keyLoop = [&](Value from, Value to, ValueRange state, bool masked) {
    return scf::ForOp::create(
        b, from, to, index(1), state,
        [&](OpBuilder &nested, Location, Value tile, ValueRange state) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b, keyTileStep(tile, state, masked));
        });
  };
  scf::ForOp loop = keyLoop(index(0), unmaskedTiles, init, /*masked=*/false);
  loop = keyLoop(unmaskedTiles, keyTiles, loop.getResults(), /*masked=*/true);
  AsyncWaitOp::create(b, 0);
  SmallVector<Value> result = loop.getResults();
  if (keyWarps > 1)
    result = mergeKeyWarps(result);

  // O / l, stored by the rows inside the sequence; the log-sum-exp in
  // natural-log units. Decode with several splits leaves its rows to the
  // combine.
  Value output = arg("output");
  SmallVector<Value> rowSums;
  for (int64_t mt = 0; mt < rowTiles; ++mt)
    for (int64_t h = 0; h < 2; ++h)
      rowSums.push_back(allReduceSum(result[mt * stateStride + 2 + h], 4));
  Value direct = arith::ConstantIntOp::create(b, 1, 1);
  if (decode)
    direct = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, splits,
                                   index(1));
  // Prefill stages the rows in the query tile (each warp's own rows, which
  // only it read) and stores them in whole 16-byte chunks where the
  // registers allow it (norm::usesStagedOutput); decode's rows (a group of
  // heads each) and the rest go out a pair of elements at a time.
  bool stagedOutput = ::norm::usesStagedOutput(spec, sig.launch);
  for (int64_t mt = 0; mt < rowTiles; ++mt)
    for (int64_t h = 0; h < 2; ++h) {
      Value sum = rowSums[2 * mt + h];
      Value row = rowOf(mt, h);
      Value inTile = arith::AndIOp::create(
          b, arith::AndIOp::create(b, direct, ownsRows),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, tileRows));
      Value token = add(seqStart, rowToken(row));
      // An FP8 cache's value scale (emitFp8Tiles).
      Value inverse = arith::DivFOp::create(
          b, spec.fp8Cache ? vScale : constantF32(1.0), sum);
      SmallVector<OutputPair> pairs = getOutputPairs(
          ValueRange(result).slice(mt * stateStride + 4, outBlocks), h);
      auto pairOf = [&](const OutputPair &pair) {
        return convert(vector::FromElementsOp::create(
                           b, VectorType::get({2}, f32),
                           ValueRange{mulf(pair.first, inverse),
                                      mulf(pair.second, inverse)}),
                       element);
      };
      // Pairs of elements at even columns: 4-byte aligned. Staged: pair
      // d of a lane is at column 8d + 2t (no FP8 cache in prefill).
      if (stagedOutput)
        for (auto [d, pair] : llvm::enumerate(pairs))
          memref::StoreOp::create(
              b, pairOf(pair), sharedPairs,
              ValueRange{
                  add(arith::DivUIOp::create(
                          b, tileOffset(index(0), row, index(d)), index(2)),
                      t)});
      ifThen(inTile, [&] {
        Value rowBase = outputOffset(row, getOutputLaneColumn());
        for (const OutputPair &pair : pairs)
          if (!stagedOutput)
            vector::StoreOp::create(b, pairOf(pair), output,
                                    add(rowBase, index(pair.column)),
                                    /*nontemporal=*/false, llvm::Align(4));
        if (spec.writeLse) {
          Value isFirst =
              arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, index(0));
          ifThen(isFirst, [&] {
            Value m = result[mt * stateStride + h];
            Value lse = mulf(addf(m, math::Log2Op::create(
                                         b, sum, arith::FastMathFlags::afn)),
                             constantF32(1.0 / log2e));
            memref::StoreOp::create(
                b, lse, arg("lse"),
                ValueRange{add(mul(token, stride("lse")), head)});
          });
        }
      });
    }
  if (decode)
    emitSplitEpilogue(result, rowSums,
                      arith::SelectOp::create(b, direct, index(0), tileRows),
                      tileIndex,
                      arith::XOrIOp::create(
                          b, direct, arith::ConstantIntOp::create(b, 1, 1)));
  if (!stagedOutput)
    return;
  gpu::BarrierOp::create(b);
  forEachCtaItem(blockM * chunksPerRow, [&](int64_t, Value chunk) {
    storeStagedOutput(chunk, tileRows);
  });
}

void AttentionEmitter::storeStagedOutput(Value chunk, Value tileRows) {
  Value row = arith::DivUIOp::create(b, chunk, index(chunksPerRow));
  Value col = arith::RemUIOp::create(b, chunk, index(chunksPerRow));
  // Rows past the tile's are not stored.
  ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, tileRows),
         [&] {
           vector::StoreOp::create(
               b, loadChunk(tileOffset(index(0), row, col)), arg("output"),
               outputOffset(row, mul(col, index(kChunk))),
               /*nontemporal=*/false, alignmentOf(arg("output")));
         });
}

void mlir::norm::emitAttentionKernel(ImplicitLocOpBuilder &b,
                                     gpu::GPUFuncOp func,
                                     const ::norm::KernelSignature &sig,
                                     const ::norm::OpSpec &spec) {
  AttentionEmitter(b, func, sig, spec).emit();
}
