//===- QKNormPrologueKernel.cpp - norm.qk_norm_prologue and norm.k_prepare ===//
//
// Kernel rows are heads: row r of the launch is head r % (Hq + Hkv) of token
// r / (Hq + Hkv), read from the packed qkv row of the token (q heads, then
// k heads) and written to q or k; K-prepare's rows are the Hkv heads of k
// alone (Hq = 0), written to k_out, with v's head row copied to v_out
// beside each, or both into a KV cache (write_cache: the token's row after
// its sequence's cached rows, decode's append). The threads of a head keep
// it in
// registers; both weights stay in registers for the CTA's lifetime and each
// head picks its own, or, with a weight row per head (Command R+), each head
// loads its own row with the head.
//
// Rotary embeddings turn the pairs in registers, after the norm or, with
// rope_first (Llama 4), before it, each result rounded to the element type
// as the unfused graph stores it. The head row is dealt out to the threads
// segment by segment (norm::getRowSegments): neox's two halves of the
// rotary dims alike, so that chunk c of the first and chunk c of the second
// hold a thread's pairs at the same lanes, and gptj's rotary dims in even
// vectors that hold whole pairs; so StableLM's 20 of 80 turns in registers
// as a whole head does. Owner c * threads + lane of chunk c turns the pairs
// from owner * pairsPerChunk on, the attention kernel's owners.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelBuilder.h"
#include "passes/KernelIR.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

/// A segment of the head row and its layout over the threads.
struct Segment {
  int64_t offset;
  RowLayout row;
};

class QKNormPrologueEmitter : public KernelBuilder {
public:
  QKNormPrologueEmitter(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                        const ::norm::KernelSignature &sig,
                        const ::norm::OpSpec &spec)
      : KernelBuilder(b, func, sig), spec(spec),
        keysOnly(spec.kind == ::norm::OpKind::KeyPrepare) {
    for (::norm::RowSegment segment : ::norm::getRowSegments(spec))
      segments.push_back(
          {segment.offset, RowLayout(segment.length, vector, threads)});
  }

  void emit();

private:
  /// The chunks of the head row at `base` of `buffer`, segment after
  /// segment.
  SmallVector<Value> loadHead(Value buffer, Value base);
  void storeHead(ArrayRef<Value> chunks, Value buffer, Value base);
  /// Each chunk's start within its segment, and whether it is inside it for
  /// every lane.
  SmallVector<std::pair<const Segment *, Chunk>> getChunks();

  /// The chunks of a weight every head shares (empty without weights or
  /// with a row per head).
  SmallVector<Value> loadWeight(StringRef name);
  /// The chunks of the weight row of q head `head` (or k head `head` -
  /// num_q_heads) of a weight per head.
  SmallVector<Value> loadHeadWeight(Value isQ, Value head);
  /// The angles' sources of the chunks with rotary pairs (empty without
  /// rope): one owner slot per chunk of the first segment.
  SmallVector<RopeAngles> prepareRotation();
  /// The chunks of a head row (f32, the values the graph stored) rotated
  /// by position `position` (i32), in `element`.
  SmallVector<Value> rotate(ArrayRef<RopeAngles> angles, ArrayRef<Value> chunks,
                            Value position, Type element);
  /// Where the heads of token `token` turn and go: the rotary position (i32,
  /// with rope) and, with a cache, the cache row and whether it is written
  /// (i1: within the sequence's capacity and, paged, on a page of its own).
  SmallVector<Value> placeToken(Value token);
  /// An FP8 cache's values of `chunks` (rounded to `element` first) over
  /// the scale of `name` (the tensor's, or head `head`'s): storeHead rounds
  /// them to e4m3.
  SmallVector<Value> overFp8Scale(ArrayRef<Value> chunks, Type element,
                                  StringRef name, Value head);

  const ::norm::OpSpec &spec;
  /// K-prepare: k heads from `k` to `k_out`, not q and k heads from `qkv`.
  bool keysOnly;
  SmallVector<Segment> segments;
};

} // namespace

SmallVector<Value> QKNormPrologueEmitter::loadHead(Value buffer, Value base) {
  SmallVector<Value> chunks;
  for (const Segment &segment : segments)
    llvm::append_range(chunks, loadRow(segment.row, buffer,
                                       add(base, index(segment.offset))));
  return chunks;
}

void QKNormPrologueEmitter::storeHead(ArrayRef<Value> chunks, Value buffer,
                                      Value base) {
  for (const Segment &segment : segments) {
    storeRow(segment.row, chunks.take_front(segment.row.chunks), buffer,
             add(base, index(segment.offset)));
    chunks = chunks.drop_front(segment.row.chunks);
  }
}

SmallVector<std::pair<const Segment *, Chunk>>
QKNormPrologueEmitter::getChunks() {
  SmallVector<std::pair<const Segment *, Chunk>> chunks;
  for (const Segment &segment : segments)
    for (int64_t c = 0; c < segment.row.chunks; ++c)
      chunks.push_back({&segment, {chunkStart(c), segment.row.isFull(c)}});
  return chunks;
}

SmallVector<Value> QKNormPrologueEmitter::loadWeight(StringRef name) {
  Value buffer = arg(name);
  if (!buffer || spec.qkWeightPerHead)
    return {};
  // Register-lean: the weights stay in their storage type until used.
  return loadHead(buffer, index(0));
}

SmallVector<Value> QKNormPrologueEmitter::loadHeadWeight(Value isQ,
                                                         Value head) {
  int64_t headDim = spec.hidden;
  if (keysOnly)
    return loadHead(arg("k_weight"), mul(head, index(headDim)));
  return ifElse(
      isQ,
      [&]() -> SmallVector<Value> {
        return loadHead(arg("q_weight"), mul(head, index(headDim)));
      },
      [&]() -> SmallVector<Value> {
        Value kHead = arith::SubIOp::create(b, head, index(spec.numQHeads));
        return loadHead(arg("k_weight"), mul(kHead, index(headDim)));
      });
}

SmallVector<KernelBuilder::RopeAngles>
QKNormPrologueEmitter::prepareRotation() {
  if (spec.rope == ::norm::RopeStyle::None)
    return {};
  bool neox = spec.rope == ::norm::RopeStyle::NeoX;
  const RowLayout &first = segments.front().row;
  int64_t pairsPerChunk = neox ? vector : vector / 2;
  VectorType pairType = VectorType::get({pairsPerChunk}, f32);
  // Table rows are 16-byte aligned (the signature); owners' pairs start at
  // multiples of pairsPerChunk.
  llvm::MaybeAlign alignment(std::min<int64_t>(16, 4 * pairsPerChunk));
  SmallVector<RopeAngles> angles;
  for (int64_t c = 0; c < first.chunks; ++c)
    angles.push_back(prepareRopeAngles(
        spec, pairType, first.length / vector, c, alignment));
  return angles;
}

SmallVector<Value> QKNormPrologueEmitter::placeToken(Value token) {
  bool rope = spec.rope != ::norm::RopeStyle::None;
  if (!rope && !spec.writeCache)
    return {};
  // K-prepare: the index within the key's sequence, as attention turns it
  // (after the cached rows, as decode does); the prologue: the row index.
  Value offsets = arg("cu_seqlens"), seq, at = token;
  if (offsets) {
    seq = findSequence(offsets, indexArg("batch"), token);
    Value start = arith::IndexCastUIOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, offsets, ValueRange{seq}));
    at = arith::SubIOp::create(b, token, start);
  }
  Value capacity;
  SequenceCache cache;
  if (spec.writeCache) {
    // The cached length clamped to the capacity, as decode attention reads
    // it.
    cache = getSequenceCache(spec, seq);
    capacity = cache.capacity;
    Value stored = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, arg("cache_seqlens"), ValueRange{seq}));
    at = add(arith::MinSIOp::create(
                 b, arith::MaxSIOp::create(b, stored, index(0)), capacity),
             at);
  }
  SmallVector<Value> place;
  if (rope)
    place.push_back(
        spec.ropePositions
            ? memref::LoadOp::create(b, arg("positions"), ValueRange{token})
                  .getResult()
            : arith::IndexCastUIOp::create(b, b.getI32Type(), at).getResult());
  if (spec.writeCache) {
    // A paged cache looks the page up at a position inside the capacity.
    Value inside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, capacity);
    auto [row, own] = getCacheRow(
        spec.cacheBlockSize, cache,
        spec.cacheBlockSize ? arith::SelectOp::create(b, inside, at, index(0))
                            : at,
        inside);
    place.push_back(row);
    place.push_back(own ? arith::AndIOp::create(b, inside, own) : inside);
  }
  return place;
}

SmallVector<Value> QKNormPrologueEmitter::overFp8Scale(ArrayRef<Value> chunks,
                                                       Type element,
                                                       StringRef name,
                                                       Value head) {
  Value scale = memref::LoadOp::create(
      b, arg(name), ValueRange{spec.cacheScalePerHead ? head : index(0)});
  Value inverse =
      splat(arith::DivFOp::create(b, constantF32(1.0), scale).getResult());
  return llvm::map_to_vector(chunks, [&](Value x) {
    return mulf(toF32(convert(x, element)), inverse);
  });
}

SmallVector<Value> QKNormPrologueEmitter::rotate(ArrayRef<RopeAngles> angles,
                                                 ArrayRef<Value> chunks,
                                                 Value position, Type element) {
  bool neox = spec.rope == ::norm::RopeStyle::NeoX;
  const RowLayout &first = segments.front().row;
  SmallVector<Value> out(chunks);
  // (a, b) -> (a cos - b sin, b cos + a sin).
  auto turn = [&](Value x, Value y, Value cos,
                  Value sin) -> std::pair<Value, Value> {
    return {subf(mulf(x, cos), mulf(y, sin)), addf(mulf(y, cos), mulf(x, sin))};
  };
  for (auto [c, chunkAngles] : llvm::enumerate(angles)) {
    // Owners past the pairs (threads of a partial chunk) read no angles.
    std::pair<Value, Value> cosSin;
    if (first.isFull(c)) {
      cosSin = getRopeAngles(spec, chunkAngles, position);
    } else {
      Value owns = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                         chunkStart(c), index(first.length));
      SmallVector<Value> values = ifElseZeros(owns, [&]() -> SmallVector<Value> {
        auto [cos, sin] = getRopeAngles(spec, chunkAngles, position);
        return {cos, sin};
      });
      cosSin = {values[0], values[1]};
    }
    auto [cos, sin] = cosSin;
    if (neox) {
      // The second half's chunk c follows the first's chunks.
      int64_t second = first.chunks + c;
      auto [x, y] = turn(out[c], out[second], cos, sin);
      out[c] = x;
      out[second] = y;
      continue;
    }
    SmallVector<int64_t> evens, odds, interleave;
    for (int64_t j = 0; j < vector / 2; ++j) {
      evens.push_back(2 * j);
      odds.push_back(2 * j + 1);
      interleave.append({j, vector / 2 + j});
    }
    Value chunk = out[c];
    auto [even, odd] =
        turn(mlir::vector::ShuffleOp::create(b, chunk, chunk, evens),
             mlir::vector::ShuffleOp::create(b, chunk, chunk, odds), cos, sin);
    out[c] = mlir::vector::ShuffleOp::create(b, even, odd, interleave);
  }
  return llvm::map_to_vector(out, [&](Value x) { return convert(x, element); });
}

void QKNormPrologueEmitter::emit() {
  int64_t headDim = spec.hidden, qHeads = spec.numQHeads;
  int64_t heads = qHeads + spec.numKvHeads;
  ::norm::Statistic statistic = spec.qkStatistic;
  SmallVector<Value> qWeight = loadWeight("q_weight");
  SmallVector<Value> kWeight = loadWeight("k_weight");
  SmallVector<RopeAngles> angles = prepareRotation();
  bool ropeFirst = spec.ropeFirst && !angles.empty();
  bool ropeAfter = !spec.ropeFirst && !angles.empty();
  SmallVector<std::pair<const Segment *, Chunk>> chunks = getChunks();
  int64_t numChunks = chunks.size();
  // Only the heads may be the grid before's outputs.
  waitForPredecessor();

  Value qkv = arg(keysOnly ? "k" : "qkv");
  StringRef source = keysOnly ? "k" : "qkv";
  StringRef kOut = spec.writeCache ? "k_cache" : keysOnly ? "k_out" : "k";
  StringRef vOut = spec.writeCache ? "v_cache" : "v_out";
  int64_t numPlace = (angles.empty() ? 0 : 1) + (spec.writeCache ? 2 : 0);
  Value kernelRows = mul(indexArg("rows"), index(heads));
  forEachCtaRow([&](Value rowIndex) {
    Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowIndex,
                                        kernelRows);
    Value token = arith::DivUIOp::create(b, rowIndex, index(heads));
    Value head = arith::RemUIOp::create(b, rowIndex, index(heads));
    Value isQ = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, head,
                                      index(qHeads));

    // 1. The head into registers and its partial sum: of x^2, or for
    // mean_var of x (then the squared deviations from the mean).
    bool meanVar = statistic == ::norm::Statistic::MeanVar;
    // Then its place (see placeToken) and the partial sum.
    SmallVector<Value> loaded = ifElseZeros(valid, [&] {
      Value base = add(mul(token, stride(source)), mul(head, index(headDim)));
      SmallVector<Value> out = loadHead(qkv, base);
      SmallVector<Value> place = placeToken(token);
      // Llama 4: the norm of the rotated rows, as the graph stored them.
      if (ropeFirst)
        out = rotate(
            angles, llvm::map_to_vector(out, [&](Value x) { return toF32(x); }),
            place.front(), elementOf(qkv));
      Value sum = zero(VectorType::get({vector}, f32));
      for (Value chunk : out) {
        Value x = toF32(chunk);
        sum = addf(sum, meanVar ? x : mulf(x, x));
      }
      llvm::append_range(out, place);
      out.push_back(reduce(sum));
      return out;
    });
    ArrayRef<Value> values = ArrayRef<Value>(loaded).take_front(numChunks);
    ArrayRef<Value> place = ArrayRef<Value>(loaded).slice(numChunks, numPlace);
    Value partial = loaded.back();
    // A cache row past the sequence's capacity is dropped.
    Value writes =
        spec.writeCache
            ? arith::AndIOp::create(b, valid, place.back()).getResult()
            : valid;
    // Without a statistic (K-prepare's rotation or plain cache write alone)
    // there is no total.
    Value total, mean;
    bool normalize = statistic != ::norm::Statistic::None;
    if (normalize && meanVar) {
      // Two passes over the registers: the mean, then the squared
      // deviations (lanes outside their segment hold zeros, not x).
      mean = mulf(allReduce({partial}).front(),
                  constantF32(1.0 / static_cast<double>(headDim)));
      Value squares = zero(VectorType::get({vector}, f32));
      for (auto [chunk, v] : llvm::zip(chunks, values)) {
        Value d = maskOutside(chunk.first->row, chunk.second,
                              subf(toF32(v), splat(mean)));
        squares = addf(squares, mulf(d, d));
      }
      total = allReduce({reduce(squares)}).front();
    } else if (normalize) {
      total = allReduce({partial}).front();
    }

    // 2. Normalize, scale, store to q or k.
    ifThen(writes, [&] {
      double invLength = 1.0 / static_cast<double>(headDim);
      Value scale;
      if (normalize) {
        Value eps = constantF32(spec.eps);
        // rms and mean_var: the mean of x^2 or (x - mean)^2; l2: the sum.
        scale = statistic == ::norm::Statistic::L2
                    ? rsqrt(addf(total, eps))
                    : rsqrt(addf(mulf(total, constantF32(invLength)), eps));
        // save_stats: the head's statistic, for the backward.
        saveStatistics(token, head, scale, mean);
      }
      SmallVector<Value> headWeight;
      if (spec.qkWeightPerHead)
        headWeight = loadHeadWeight(isQ, head);
      SmallVector<Value> outputs;
      for (int64_t c = 0; c < numChunks; ++c) {
        Value y = toF32(values[c]);
        if (mean)
          y = subf(y, splat(mean));
        if (scale)
          y = mulf(y, splat(scale));
        if (spec.hasWeight) {
          Value w;
          if (!headWeight.empty()) {
            w = toF32(headWeight[c]);
          } else if (keysOnly) {
            w = toF32(kWeight[c]);
          } else {
            Value wq = toF32(qWeight[c]);
            Value wk = toF32(kWeight[c]);
            w = arith::SelectOp::create(b, isQ, wq, wk);
          }
          if (spec.weightOffset != 0.0)
            w = addf(w, splatF32(spec.weightOffset));
          y = mulf(y, w);
        }
        outputs.push_back(y);
      }
      // The graph stores the normalized rows, then rotates them.
      // The keys' type (an FP8 cache's keys are rounded to it first).
      Type keyElement = spec.fp8Cache ? elementOf(qkv)
                                      : elementOf(arg(keysOnly ? kOut : "q"));
      if (ropeAfter) {
        Type element = keyElement;
        outputs = rotate(
            angles,
            llvm::map_to_vector(
                outputs, [&](Value y) { return toF32(convert(y, element)); }),
            place.front(), element);
      }
      // The token's output row: its own, or its cache row.
      Value outRow = spec.writeCache ? place[place.size() - 2] : token;
      auto storeKeys = [&] {
        Value kHead = arith::SubIOp::create(b, head, index(qHeads));
        Value base = add(mul(outRow, stride(kOut)), mul(kHead, index(headDim)));
        storeHead(spec.fp8Cache
                      ? overFp8Scale(outputs, keyElement, "k_scale", kHead)
                      : outputs,
                  arg(kOut), base);
      };
      if (keysOnly)
        storeKeys();
      else
        ifThen(
            isQ,
            [&] {
              Value base =
                  add(mul(token, stride("q")), mul(head, index(headDim)));
              storeHead(outputs, arg("q"), base);
            },
            storeKeys);
      // The value head beside its key: one more row in flight.
      if (spec.copyValues || spec.writeCache) {
        Value offset = mul(head, index(headDim));
        SmallVector<Value> values =
            loadHead(arg("v"), add(mul(token, stride("v")), offset));
        if (spec.fp8Cache)
          values = overFp8Scale(values, elementOf(arg("v")), "v_scale", head);
        storeHead(values, arg(vOut), add(mul(outRow, stride(vOut)), offset));
      }
    });
  });
}

void mlir::norm::emitQKNormPrologueKernel(ImplicitLocOpBuilder &b,
                                          gpu::GPUFuncOp func,
                                          const ::norm::KernelSignature &sig,
                                          const ::norm::OpSpec &spec) {
  QKNormPrologueEmitter(b, func, sig, spec).emit();
}
