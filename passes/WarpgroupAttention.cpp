//===- WarpgroupAttention.cpp - the key/value loop on Hopper --------------===//
//
// See WarpgroupAttention.h. Layouts (PTX ISA, wgmma .m64nNk16 and the
// shared-memory matrix descriptors):
//
// - Q (per consumer warpgroup, 64 x head dim) and each K tile (blockN x head
//   dim) are K-major operands: boxes of 64 columns, 128-byte rows, swizzled
//   by 128 bytes (leading byte offset unused, stride byte offset 1024: eight
//   rows); the k16 step kk starts 32 bytes further inside its box, the next
//   box's steps in the next box.
// - Each V tile (blockN x head dim, the same boxes) is B of O += P V with N
//   along the head dim: MN-major, 64 head-dim columns a 128-byte row, the
//   leading byte offset the distance between boxes (blockN rows), the k16
//   step 16 rows on.
// - Accumulator element i of a thread (lane l, warp w of the warpgroup) is
//   at row 16w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) +
//   i % 2; elements [8c, 8c + 8) of S's accumulators are then exactly the
//   register A fragment of P's k16 step c (mma.sync's A layout), so P
//   never leaves the registers.
//
//===----------------------------------------------------------------------===//

#include "passes/WarpgroupAttention.h"
#include "passes/KernelIR.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::norm;

namespace {

constexpr int64_t kWarpgroupThreads = 128;
/// Head-dim columns of one TMA box (128 bytes of bf16 or f16).
constexpr int64_t kBoxColumns = 64;
constexpr int64_t kSwizzle = 128;
/// The named barrier at which the consumer warpgroups meet.
constexpr int64_t kConsumerBarrier = 1;

class LoopEmitter : public ValueBuilder {
public:
  LoopEmitter(ImplicitLocOpBuilder &b, const WarpgroupAttentionLoop &loop)
      : ValueBuilder(b), loop(loop),
        element(cast<MemRefType>(loop.shared.getType()).getElementType()) {}

  void emit(function_ref<void(const WarpgroupAttentionResult &)> epilogue);

private:
  using ValueBuilder::add;
  using ValueBuilder::mul;
  Value add(Value x, int64_t y) { return add(x, index(y)); }
  Value mul(Value x, int64_t y) { return mul(x, index(y)); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }

  Value zeroScores() {
    auto type = VectorType::get({loop.blockN / 2}, f32);
    return arith::ConstantOp::create(b, type,
                                     DenseElementsAttr::get(type, 0.0f));
  }
  /// `then`'s value where `cond` (uniform) holds, `otherwise` where not.
  Value select(Value cond, Value otherwise, function_ref<Value()> then) {
    return ifElse(
               cond, [&]() -> SmallVector<Value> { return {then()}; },
               ValueRange{otherwise})
        .front();
  }
  /// Waits for tile `tile`'s keys and issues S = Q K^T (committed, in
  /// flight).
  Value issueScores(Value tile);
  /// Zeros in the rows of the value tile at `stageOffset` (elements) from
  /// the last key on; the tile's first key is `firstKeyOfTile`.
  void emitValueTail(Value stageOffset, Value firstKeyOfTile);
  /// The producer's loads of tile `tile` (uniform) into its stage.
  void emitTileLoads(Value tile);
  /// A consumer's step over tile `tile`, whose scores are state[5]: the new
  /// (O, m0, m1, l0, l1, the next tile's scores).
  SmallVector<Value> emitConsumerStep(Value tile, ValueRange state);
  Value fullBarrier(Value stage) { return stage; }
  Value emptyBarrier(Value stage) { return add(stage, loop.stages); }
  Value stageOf(Value tile) {
    return arith::RemUIOp::create(b, tile, index(loop.stages));
  }
  /// The parity of tile `tile`'s use of its stage.
  Value parityOf(Value tile) {
    return arith::AndIOp::create(
        b, arith::DivUIOp::create(b, tile, index(loop.stages)), index(1));
  }
  SharedMatrixAttr kMajor() {
    return SharedMatrixAttr::get(b.getContext(), kSwizzle, 16, 8 * kSwizzle,
                                 false);
  }

  const WarpgroupAttentionLoop &loop;
  Type element;
  Value tid, warpgroup, rowInWarpgroup, laneColumn, tiles, visibleKeys;
};

} // namespace

RegisterSplit mlir::norm::getRegisterSplit(int64_t consumerWarpgroups) {
  int64_t g = consumerWarpgroups;
  int64_t producer = g == 1 ? 56 : g == 2 ? 24 : 32;
  int64_t consumer = std::min<int64_t>(256, (512 - producer) / g / 8 * 8);
  return {producer, consumer};
}

int64_t WarpgroupAttentionLoop::getBoxedElement(int64_t tileRows, int64_t row,
                                                int64_t column) {
  int64_t box = column / kBoxColumns;
  int64_t byte = row * kSwizzle + 2 * (column % kBoxColumns);
  byte ^= ((byte >> 7) & 7) << 4;
  return box * tileRows * kBoxColumns + byte / 2;
}

void LoopEmitter::emitTileLoads(Value tile) {
  Value stage = stageOf(tile);
  // A stage's second use on waits for the consumers to release its first.
  ifThen(cmp(arith::CmpIPredicate::uge, tile, index(loop.stages)), [&] {
    Value parity = arith::XOrIOp::create(b, parityOf(tile), index(1));
    MbarrierWaitOp::create(b, loop.barriers, emptyBarrier(stage), parity);
  });
  int64_t tileBytes = loop.getTileElements() * 2;
  MbarrierArriveOp::create(b, loop.barriers, fullBarrier(stage),
                           index(2 * tileBytes));
  Value row = add(loop.firstKey, mul(tile, loop.blockN));
  Value stageOffset = mul(stage, loop.getTileElements());
  Value valueStride =
      loop.valueRowStride ? loop.valueRowStride : loop.rowStride;
  for (auto [map, source, stride, base] :
       {std::tuple{loop.keyMap, loop.key, loop.rowStride, loop.keyBase},
        std::tuple{loop.valueMap, loop.value, valueStride, loop.valueBase}})
    for (int64_t box = 0; box < loop.headDim / kBoxColumns; ++box)
      TmaLoadOp::create(
          b, map, source, loop.rows, loop.columns, stride, row,
          add(loop.firstColumn, box * kBoxColumns), loop.shared,
          add(stageOffset, base + box * loop.blockN * kBoxColumns),
          loop.barriers, fullBarrier(stage), loop.blockN, kBoxColumns,
          kSwizzle);
}

Value LoopEmitter::issueScores(Value tile) {
  int64_t n = loop.blockN, d = loop.headDim;
  Value stage = stageOf(tile);
  MbarrierWaitOp::create(b, loop.barriers, fullBarrier(stage), parityOf(tile));
  Value stageOffset = mul(stage, loop.getTileElements());
  // S = Q K^T, head dim / 16 steps.
  Value scores = zeroScores();
  scores = WgmmaFenceOp::create(b, ValueRange{scores}).getResult(0);
  Value queryTile = add(mul(warpgroup, 64 * d), loop.queryBase);
  for (int64_t k = 0; k < d / 16; ++k) {
    int64_t inBox = (16 * k / kBoxColumns) * kBoxColumns;
    int64_t qStep = inBox * 64 + 16 * k % kBoxColumns;
    int64_t kStep = loop.keyBase + inBox * n + 16 * k % kBoxColumns;
    scores =
        WgmmaOp::create(b, scores.getType(), loop.shared, add(queryTile, qStep),
                        loop.shared, add(stageOffset, kStep), scores, kMajor(),
                        kMajor(), b.getBoolAttr(k != 0));
  }
  WgmmaCommitOp::create(b);
  return scores;
}

void LoopEmitter::emitValueTail(Value stageOffset, Value firstKeyOfTile) {
  int64_t n = loop.blockN, chunks = loop.headDim / 8;
  int64_t consumers = kWarpgroupThreads * loop.warpgroups;
  Value firstRow = arith::SubIOp::create(b, loop.keys, firstKeyOfTile);
  auto vector = VectorType::get({8}, element);
  Value zeros = arith::ConstantOp::create(
      b, vector, DenseElementsAttr::get(vector, b.getZeroAttr(element)));
  // Chunk i of the tail: row firstRow + i / chunks, 16-byte chunk i % chunks
  // of it (box c / 8, its position XOR the row's index mod 8).
  Value count = mul(arith::SubIOp::create(b, index(n), firstRow), chunks);
  auto chunkLoop = scf::ForOp::create(b, tid, count, index(consumers));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(chunkLoop.getBody());
    Value i = chunkLoop.getInductionVar();
    Value row = add(firstRow, arith::DivUIOp::create(b, i, index(chunks)));
    Value chunk = arith::RemUIOp::create(b, i, index(chunks));
    Value box = arith::DivUIOp::create(b, chunk, index(8));
    Value swizzled =
        arith::XOrIOp::create(b, arith::RemUIOp::create(b, chunk, index(8)),
                              arith::RemUIOp::create(b, row, index(8)));
    Value at = add(add(stageOffset, loop.valueBase),
                   add(add(mul(box, n * kBoxColumns), mul(row, kBoxColumns)),
                       mul(swizzled, 8)));
    memref::StoreOp::create(
        b, zeros, loop.sharedChunks,
        ValueRange{arith::DivUIOp::create(b, at, index(8))});
  }
  AsyncProxyFenceOp::create(b);
  NamedBarrierOp::create(b, kConsumerBarrier, consumers);
}

SmallVector<Value> LoopEmitter::emitConsumerStep(Value tile, ValueRange state) {
  int64_t n = loop.blockN, d = loop.headDim;
  Value stage = stageOf(tile);
  Value stageOffset = mul(stage, loop.getTileElements());
  // A tile past the last key holds the next sequence's rows, which may be
  // anything (Inf, NaN): P's zeros times those are NaN, so its value rows
  // past the keys become zeros before P V reads them, once the tile has
  // landed (both warpgroups write the same zeros, then meet; the async
  // proxy reads them after the fence).
  Value firstKeyOfTile = mul(tile, n);
  auto zeroValueTail = [&] {
    ifThen(cmp(arith::CmpIPredicate::ugt, add(firstKeyOfTile, n), loop.keys),
           [&] { emitValueTail(stageOffset, firstKeyOfTile); });
  };
  // Overlapped, this tile's scores arrived with the previous step's wait
  // and the next tile's multiplies run while this one's softmax does.
  Value scores, nextScores;
  if (loop.overlapSoftmax) {
    scores = state[5];
    zeroValueTail();
    Value next = add(tile, 1);
    nextScores = select(cmp(arith::CmpIPredicate::ult, next, tiles),
                        zeroScores(), [&] { return issueScores(next); });
  } else {
    scores = issueScores(tile);
    scores = WgmmaWaitOp::create(b, ValueRange{scores}, 0).getResult(0);
    zeroValueTail();
  }

  // The online softmax of the thread's two rows on the raw scores: the row
  // maxima scaled once, each probability one fma and one exp2. Only tiles
  // that reach past the warpgroup's first row's last key are masked (a
  // uniform branch; its later rows see at least as many keys).
  Value negInf = constantF32(-std::numeric_limits<double>::infinity());
  SmallVector<Value> x(n / 2);
  for (int64_t i = 0; i < n / 2; ++i)
    x[i] = vector::ExtractOp::create(b, scores, i);
  auto rowLimit = [&](Value row) -> Value {
    if (!loop.causal)
      return loop.keys;
    return arith::MinUIOp::create(b, loop.keys,
                                  add(add(loop.queryPosition, row), 1));
  };
  Value whole = cmp(arith::CmpIPredicate::ule, add(firstKeyOfTile, n),
                    rowLimit(mul(warpgroup, 64)));
  auto masking = scf::IfOp::create(b, ValueRange(x).getTypes(), whole,
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(masking.thenBlock());
    scf::YieldOp::create(b, x);
    b.setInsertionPointToStart(masking.elseBlock());
    Value limit[2];
    for (int64_t h = 0; h < 2; ++h)
      limit[h] = rowLimit(add(add(mul(warpgroup, 64), rowInWarpgroup), 8 * h));
    SmallVector<Value> masked(n / 2);
    for (int64_t i = 0; i < n / 2; ++i) {
      Value key = add(add(firstKeyOfTile, laneColumn), 8 * (i / 4) + i % 2);
      masked[i] = arith::SelectOp::create(
          b, cmp(arith::CmpIPredicate::ult, key, limit[(i / 2) % 2]), x[i],
          negInf);
    }
    scf::YieldOp::create(b, masked);
  }
  x.assign(masking.getResults().begin(), masking.getResults().end());
  Value tileMax[2] = {negInf, negInf};
  for (int64_t i = 0; i < n / 2; ++i)
    tileMax[i / 2 % 2] = arith::MaximumFOp::create(b, tileMax[i / 2 % 2], x[i]);
  Value scale = constantF32(loop.scaleLog2);
  Value output = state[0];
  Value maxUsed[2], negReference[2], rescale[2], rowSum[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value rowMax =
        RowAllReduceOp::create(b, ValueRange{tileMax[h]}, 4, ReductionKind::max)
            .getResult(0);
    maxUsed[h] = arith::MaximumFOp::create(
        b, state[1 + h], arith::MulFOp::create(b, rowMax, scale));
    // A row with no key yet keeps -inf: exp2 against 0 gives its zeros.
    Value reference = arith::SelectOp::create(
        b,
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, maxUsed[h], negInf),
        constantF32(0.0), maxUsed[h]);
    negReference[h] = arith::NegFOp::create(b, reference);
    rescale[h] = math::Exp2Op::create(
        b, arith::SubFOp::create(b, state[1 + h], reference),
        arith::FastMathFlags::afn);
    rowSum[h] = arith::MulFOp::create(b, state[3 + h], rescale[h]);
  }
  SmallVector<Value> p(n / 2);
  for (int64_t i = 0; i < n / 2; ++i) {
    int64_t h = (i / 2) % 2;
    p[i] = math::Exp2Op::create(
        b, math::FmaOp::create(b, x[i], scale, negReference[h]),
        arith::FastMathFlags::afn);
    rowSum[h] = arith::AddFOp::create(b, rowSum[h], p[i]);
  }
  auto outputType = cast<VectorType>(output.getType());
  for (int64_t i = 0; i < d / 2; ++i) {
    Value scaled = arith::MulFOp::create(
        b, vector::ExtractOp::create(b, output, i), rescale[(i / 2) % 2]);
    output = vector::InsertOp::create(b, scaled, output, i);
  }

  // O += P V, P's k16 step c from S's elements [8c, 8c + 8).
  auto fragmentType = VectorType::get({8}, element);
  SmallVector<Value> fenced = {output};
  for (int64_t c = 0; c < n / 16; ++c) {
    SmallVector<Value> values(p.begin() + 8 * c, p.begin() + 8 * c + 8);
    Value fragment =
        vector::FromElementsOp::create(b, VectorType::get({8}, f32), values);
    fenced.push_back(arith::TruncFOp::create(b, fragmentType, fragment));
  }
  SmallVector<Value> registers(WgmmaFenceOp::create(b, fenced).getResults());
  output = registers[0];
  auto valueLayout = SharedMatrixAttr::get(b.getContext(), kSwizzle,
                                           n * kSwizzle, 8 * kSwizzle, true);
  for (int64_t c = 0; c < n / 16; ++c)
    output = WgmmaOp::create(
        b, outputType, registers[1 + c], Value(), loop.shared,
        add(stageOffset, loop.valueBase + 16 * c * kBoxColumns), output,
        SharedMatrixAttr(), valueLayout, b.getBoolAttr(true));
  WgmmaCommitOp::create(b);
  SmallVector<Value> inFlight = {output};
  if (nextScores)
    inFlight.push_back(nextScores);
  auto done = WgmmaWaitOp::create(b, inFlight, 0);
  // The stage is free once this thread's multiplies have read it.
  MbarrierArriveOp::create(b, loop.barriers, emptyBarrier(stage), Value());
  SmallVector<Value> next = {done.getResult(0), maxUsed[0], maxUsed[1],
                             rowSum[0], rowSum[1]};
  if (nextScores)
    next.push_back(done.getResult(1));
  return next;
}

void LoopEmitter::emit(
    function_ref<void(const WarpgroupAttentionResult &)> epilogue) {
  int64_t consumers = kWarpgroupThreads * loop.warpgroups;
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, tid, index(32));
  warpgroup = arith::DivUIOp::create(b, tid, index(kWarpgroupThreads));
  Value lane = arith::RemUIOp::create(b, tid, index(32));
  rowInWarpgroup = add(mul(arith::RemUIOp::create(b, warp, index(4)), 16),
                       arith::DivUIOp::create(b, lane, index(4)));
  laneColumn = mul(arith::RemUIOp::create(b, lane, index(4)), 2);
  Value isProducer =
      cmp(arith::CmpIPredicate::eq, warpgroup, index(loop.warpgroups));

  // Full barriers complete on the producer's arrival and the bytes; empty
  // ones on every consumer thread's.
  ifThen(cmp(arith::CmpIPredicate::eq, tid, index(0)), [&] {
    for (int64_t s = 0; s < loop.stages; ++s) {
      MbarrierInitOp::create(b, loop.barriers, index(s), 1);
      MbarrierInitOp::create(b, loop.barriers, index(loop.stages + s),
                             consumers);
    }
  });
  gpu::BarrierOp::create(b);

  // The tiles the CTA visits: up to its last query row's key, causal.
  visibleKeys = loop.keys;
  if (loop.causal)
    visibleKeys = arith::MinUIOp::create(
        b, visibleKeys, add(loop.queryPosition, 64 * loop.warpgroups));
  tiles = arith::CeilDivUIOp::create(b, visibleKeys, index(loop.blockN));
  Value first = index(0), step = index(1);

  // The roles, each with its own loop over the tiles and its own registers
  // (the producer's loop holds a few addresses; setmaxnreg needs each
  // role's code to fit its count).
  auto outputType = VectorType::get({loop.headDim / 2}, f32);
  Value negInf = constantF32(-std::numeric_limits<double>::infinity());
  RegisterSplit split = getRegisterSplit(loop.warpgroups);
  auto roles = scf::IfOp::create(b, TypeRange(), isProducer,
                                 /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  // The producer: its first thread loads tile j after the consumers freed
  // its stage (tile j - stages).
  b.setInsertionPointToStart(roles.thenBlock());
  SetMaxRegistersOp::create(b, split.producer, /*increase=*/false);
  Value issues = cmp(arith::CmpIPredicate::eq, tid, index(consumers));
  // Overlapped, tile j + 1 in iteration j (tile 0 before): the consumers'
  // iteration j multiplies it while their softmax of tile j runs.
  int64_t ahead = loop.overlapSoftmax ? 1 : 0;
  if (ahead)
    ifThen(issues, [&] {
      ifThen(cmp(arith::CmpIPredicate::ult, first, tiles),
             [&] { emitTileLoads(first); });
    });
  auto loads = scf::ForOp::create(b, first, tiles, step);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loads.getBody());
    Value tile = add(loads.getInductionVar(), ahead);
    ifThen(issues, [&] {
      ifThen(cmp(arith::CmpIPredicate::ult, tile, tiles),
             [&] { emitTileLoads(tile); });
    });
  }

  // The consumers: the online softmax over the tiles, then O / l and the
  // log2-sum-exps.
  b.setInsertionPointToStart(roles.elseBlock());
  SetMaxRegistersOp::create(b, split.consumer, /*increase=*/true);
  SmallVector<Value> initial = {
      arith::ConstantOp::create(b, outputType,
                                DenseElementsAttr::get(outputType, 0.0f)),
      negInf, negInf, constantF32(0.0), constantF32(0.0)};
  if (loop.overlapSoftmax)
    initial.push_back(
        select(cmp(arith::CmpIPredicate::ult, first, tiles), zeroScores(), [&] {
          Value scores = issueScores(first);
          return WgmmaWaitOp::create(b, ValueRange{scores}, 0).getResult(0);
        }));
  auto keyLoop = scf::ForOp::create(b, first, tiles, step, initial);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    scf::YieldOp::create(b, emitConsumerStep(keyLoop.getInductionVar(),
                                             keyLoop.getRegionIterArgs()));
  }
  ValueRange final = keyLoop.getResults();
  Value sum[2], lse[2];
  for (int64_t h = 0; h < 2; ++h) {
    sum[h] =
        RowAllReduceOp::create(b, ValueRange{final[3 + h]}, 4).getResult(0);
    lse[h] = arith::AddFOp::create(
        b, final[1 + h],
        math::Log2Op::create(b, sum[h], arith::FastMathFlags::afn));
  }
  // O / l; zeros for a row that saw no key (l = 0), NaN for a row whose
  // scores were (a query rotated outside its table: l is NaN).
  Value output = final[0];
  for (int64_t i = 0; i < loop.headDim / 2; ++i) {
    Value total = sum[(i / 2) % 2];
    Value normalized = arith::SelectOp::create(
        b,
        arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, total,
                              constantF32(0.0)),
        arith::DivFOp::create(b, vector::ExtractOp::create(b, output, i),
                              total),
        constantF32(0.0));
    output = vector::InsertOp::create(b, normalized, output, i);
  }
  epilogue({output, {lse[0], lse[1]}});
}

void mlir::norm::emitWarpgroupAttentionLoop(
    ImplicitLocOpBuilder &b, const WarpgroupAttentionLoop &loop,
    function_ref<void(const WarpgroupAttentionResult &)> epilogue) {
  LoopEmitter(b, loop).emit(epilogue);
}
