//===- KernelIR.cpp - the vocabulary of kernel programs -------------------===//

#include "passes/KernelIR.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace mlir::norm;

KernelBuilder::KernelBuilder(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                             const ::norm::KernelSignature &sig)
    : ValueBuilder(b), sig(sig), vector(sig.launch.vector),
      threads(sig.launch.threadsPerRow) {
  for (auto [param, arg] : llvm::zip(sig.params, func.getArguments())) {
    args[param.name] = arg;
    alignments[arg] = param.alignment;
  }
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  bid = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, index(threads));
  slot = arith::DivUIOp::create(b, tid, index(threads));
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Value ValueBuilder::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

Value ValueBuilder::constantF32(double value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

Value ValueBuilder::zero(Type type) {
  return arith::ConstantOp::create(b, type, b.getZeroAttr(type));
}

Value ValueBuilder::add(Value x, Value y) {
  return b.createOrFold<arith::AddIOp>(x, y);
}

Value ValueBuilder::mul(Value x, Value y) {
  return b.createOrFold<arith::MulIOp>(x, y);
}

Value ValueBuilder::addf(Value x, Value y) {
  return arith::AddFOp::create(b, x, y);
}

Value ValueBuilder::subf(Value x, Value y) {
  return arith::SubFOp::create(b, x, y);
}

Value ValueBuilder::mulf(Value x, Value y) {
  return arith::MulFOp::create(b, x, y);
}

Value KernelBuilder::divideApprox(Value x, Value y) {
  return arith::DivFOp::create(b, x, y, arith::FastMathFlags::afn);
}

Value KernelBuilder::rsqrt(Value x) {
  return math::RsqrtOp::create(b, x, arith::FastMathFlags::afn);
}

Value KernelBuilder::splat(Value scalar) {
  return vector::BroadcastOp::create(b, VectorType::get({vector}, f32), scalar);
}

Value KernelBuilder::splatF32(double value) {
  return splat(constantF32(value));
}

Value KernelBuilder::reduce(Value v) {
  return vector::ReductionOp::create(b, vector::CombiningKind::ADD, v);
}

Value KernelBuilder::convert(Value v, Type element) {
  Type from = getElementTypeOrSelf(v.getType());
  if (from == element)
    return v;
  Type to = element;
  if (auto vt = dyn_cast<VectorType>(v.getType()))
    to = vt.clone(element);
  if (from.getIntOrFloatBitWidth() < element.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, to, v);
  if (from.getIntOrFloatBitWidth() > element.getIntOrFloatBitWidth())
    return arith::TruncFOp::create(b, to, v);
  // f16 <-> bf16: through f32, as the unfused graph would.
  return convert(convert(v, f32), element);
}

Value KernelBuilder::indexArg(StringRef name) {
  return arith::IndexCastOp::create(b, b.getIndexType(), arg(name));
}

Type KernelBuilder::elementOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementType();
}

VectorType KernelBuilder::vectorOf(Value buffer) {
  return VectorType::get({vector}, elementOf(buffer));
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

/// An scf.if whose then region yields `then()` and whose else region
/// yields `otherwise(types of those)`.
static SmallVector<Value>
createIfElse(ImplicitLocOpBuilder &b, Value cond,
             function_ref<SmallVector<Value>()> then,
             function_ref<SmallVector<Value>(TypeRange)> otherwise) {
  SmallVector<Type> types;
  auto inRegion = [&](OpBuilder &nested, auto values) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
    scf::YieldOp::create(b, values());
  };
  auto ifOp = scf::IfOp::create(
      b, cond,
      [&](OpBuilder &nested, Location) {
        inRegion(nested, [&] {
          SmallVector<Value> values = then();
          types = llvm::to_vector(ValueRange(values).getTypes());
          return values;
        });
      },
      [&](OpBuilder &nested, Location) {
        inRegion(nested, [&] { return otherwise(types); });
      });
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value>
ValueBuilder::ifElseZeros(Value cond, function_ref<SmallVector<Value>()> then) {
  return createIfElse(b, cond, then, [&](TypeRange types) {
    return llvm::map_to_vector(types, [&](Type t) { return zero(t); });
  });
}

SmallVector<Value> ValueBuilder::ifElse(Value cond,
                                        function_ref<SmallVector<Value>()> then,
                                        ValueRange otherwise) {
  return createIfElse(b, cond, then, [&](TypeRange types) {
    assert(TypeRange(otherwise) == types && "branches of different types");
    return SmallVector<Value>(otherwise);
  });
}

SmallVector<Value>
ValueBuilder::ifElse(Value cond, function_ref<SmallVector<Value>()> then,
                     function_ref<SmallVector<Value>()> otherwise) {
  return createIfElse(b, cond, then, [&](TypeRange types) {
    SmallVector<Value> values = otherwise();
    assert(TypeRange(values) == types && "branches of different types");
    return values;
  });
}

void KernelBuilder::waitForPredecessor() {
  if (!sig.pdl)
    return;
  GridDependencyWaitOp::create(b);
  LaunchDependentsOp::create(b);
}

KernelBuilder::SequenceCache
KernelBuilder::getSequenceCache(const ::norm::OpSpec &spec, Value seq) {
  int64_t blockSize = spec.cacheBlockSize;
  if (spec.pageIndptr) {
    auto offsetAt = [&](Value i) {
      return arith::IndexCastOp::create(
          b, b.getIndexType(),
          memref::LoadOp::create(b, arg("page_indptr"), ValueRange{i}));
    };
    Value start = offsetAt(seq);
    // Clamped: a decreasing indptr holds no pages.
    Value pages = arith::MaxSIOp::create(
        b, arith::SubIOp::create(b, offsetAt(add(seq, index(1))), start),
        index(0));
    return {start, mul(pages, index(blockSize)), /*ragged=*/true};
  }
  Value capacity = indexArg("cache_capacity");
  if (!blockSize)
    return {mul(seq, capacity), capacity};
  Value maxBlocks =
      arith::ShRUIOp::create(b, capacity, index(llvm::Log2_64(blockSize)));
  return {mul(seq, maxBlocks), capacity};
}

std::pair<Value, Value> KernelBuilder::getCacheRow(int64_t blockSize,
                                                   const SequenceCache &cache,
                                                   Value position,
                                                   Value inside) {
  if (!blockSize)
    return {add(cache.start, position), Value()};
  // Power-of-two pages: shifts and masks.
  Value shift = index(llvm::Log2_64(blockSize));
  Value block = arith::ShRUIOp::create(b, position, shift);
  auto load = [&]() -> SmallVector<Value> {
    return {arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, arg("block_tables"),
                               ValueRange{add(cache.start, block)}))};
  };
  Value entry = cache.ragged && inside
                    ? ifElse(inside, load, ValueRange{index(-1)}).front()
                    : load().front();
  // Sign-extended: a negative entry compares as a huge one.
  Value own = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, entry,
                                    indexArg("cache_blocks"));
  Value page = arith::SelectOp::create(b, own, entry, index(0));
  Value row = add(arith::ShLIOp::create(b, page, shift),
                  arith::AndIOp::create(b, position, index(blockSize - 1)));
  return {row, own};
}

Value KernelBuilder::findLast(Value count, function_ref<Value(Value)> keyOf,
                              Value target, int64_t arity) {
  assert(arity >= 2 && "a search splits its range in two or more");
  // The answer lies in [low, low + size) and keyOf(low) <= target. Each
  // round probes arity - 1 points `step` apart; those that hold form a
  // prefix, whose length moves low.
  auto search = scf::WhileOp::create(
      b, TypeRange{b.getIndexType(), b.getIndexType()},
      ValueRange{index(0), count},
      [&](OpBuilder &nested, Location, ValueRange range) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value wide = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                                           range[1], index(1));
        scf::ConditionOp::create(b, wide, range);
      },
      [&](OpBuilder &nested, Location, ValueRange range) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value low = range[0], end = add(range[0], range[1]);
        Value step = arith::CeilDivUIOp::create(b, range[1], index(arity));
        Value held = index(0);
        for (int64_t j = 1; j < arity; ++j) {
          Value probe = add(low, mul(step, index(j)));
          Value inside =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, probe, end);
          // Probes past the range read its first key, which holds.
          Value key = keyOf(arith::SelectOp::create(b, inside, probe, low));
          Value holds = arith::AndIOp::create(
              b, inside,
              arith::CmpIOp::create(b, arith::CmpIPredicate::ule, key, target));
          held =
              add(held, arith::SelectOp::create(b, holds, index(1), index(0)));
        }
        Value next = add(low, mul(held, step));
        scf::YieldOp::create(
            b, ValueRange{next,
                          arith::MinUIOp::create(
                              b, step, arith::SubIOp::create(b, end, next))});
      });
  return search.getResult(0);
}

Value KernelBuilder::findSequence(Value offsets, Value batch, Value token) {
  return findLast(
      batch,
      [&](Value seq) -> Value {
        return arith::IndexCastUIOp::create(
            b, b.getIndexType(),
            memref::LoadOp::create(b, offsets, ValueRange{seq}));
      },
      token);
}

void ValueBuilder::ifThen(Value cond, function_ref<void()> then,
                          function_ref<void()> otherwise) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/bool(otherwise));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
  if (otherwise) {
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    otherwise();
  }
}

void KernelBuilder::forEachCtaRow(function_ref<void(Value row)> body) {
  int64_t concurrent = sig.launch.getConcurrentRows();
  int64_t iterations = sig.launch.rowsPerCta / concurrent;
  Value first = add(mul(bid, index(sig.launch.rowsPerCta)), slot);
  if (iterations == 1)
    return body(first);
  scf::ForOp::create(b, index(0), index(iterations), index(1), ValueRange{},
                     [&](OpBuilder &nested, Location, Value it, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(add(first, mul(it, index(concurrent))));
                       scf::YieldOp::create(b);
                     });
}

SmallVector<Value> KernelBuilder::forEachCtaRow(
    ValueRange carried,
    function_ref<SmallVector<Value>(Value row, ValueRange)> body) {
  int64_t concurrent = sig.launch.getConcurrentRows();
  auto loop = [&](Value lower, Value upper, Value step,
                  function_ref<Value(Value)> rowOf) {
    auto forOp = scf::ForOp::create(
        b, lower, upper, step, carried,
        [&](OpBuilder &nested, Location, Value it, ValueRange values) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b, body(rowOf(it), values));
        });
    return SmallVector<Value>(forOp.getResults());
  };
  if (!sig.maxGridX) {
    int64_t iterations = sig.launch.rowsPerCta / concurrent;
    Value first = add(mul(bid, index(sig.launch.rowsPerCta)), slot);
    if (iterations == 1)
      return body(first, carried);
    return loop(index(0), index(iterations), index(1), [&](Value it) {
      return add(first, mul(it, index(concurrent)));
    });
  }
  // A persistent grid: the CTA takes the row groups bid, bid + grid.x, ...
  // (rowsPerCta only sizes the grid for few rows). One loop, with the CTA's
  // bounds, so every thread reaches the body's collectives.
  Value kernelRows = mul(indexArg("rows"), index(sig.rowMultiplier));
  Value groups = arith::DivUIOp::create(
      b, add(kernelRows, index(concurrent - 1)), index(concurrent));
  Value grid = gpu::GridDimOp::create(b, gpu::Dimension::x);
  return loop(bid, groups, grid, [&](Value group) {
    return add(mul(group, index(concurrent)), slot);
  });
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

Value KernelBuilder::loadVector(Value buffer, Value rowBase, Value start,
                                int64_t length, bool inside) {
  VectorType type = vectorOf(buffer);
  Value at = add(rowBase, start);
  auto load = [&] {
    return vector::LoadOp::create(b, type, buffer, at, /*nontemporal=*/false,
                                  alignmentOf(buffer))
        .getResult();
  };
  if (inside)
    return load();
  Value full = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                     add(start, index(vector)), index(length));
  auto ifOp = scf::IfOp::create(b, TypeRange{type}, full, /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, load());
  b.setInsertionPointToStart(ifOp.elseBlock());
  Value tail = zero(type);
  if (length % vector != 0)
    tail = vector::MaskedLoadOp::create(b, type, buffer, at,
                                        tailMask(start, length), tail);
  scf::YieldOp::create(b, tail);
  return ifOp.getResult(0);
}

void KernelBuilder::storeVector(Value value, Value buffer, Value rowBase,
                                Value start, int64_t length, bool inside) {
  Value at = add(rowBase, start);
  auto store = [&] {
    vector::StoreOp::create(b, value, buffer, at, /*nontemporal=*/false,
                            alignmentOf(buffer));
  };
  if (inside)
    return store();
  Value full = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                     add(start, index(vector)), index(length));
  if (length % vector == 0)
    return ifThen(full, store);
  ifThen(full, store, [&] {
    vector::MaskedStoreOp::create(b, buffer, at, tailMask(start, length), value);
  });
}

Value KernelBuilder::tailMask(Value start, int64_t length) {
  Value left = arith::SubIOp::create(b, index(length), start);
  return vector::CreateMaskOp::create(
      b, VectorType::get({vector}, b.getI1Type()), ValueRange{left});
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

Value KernelBuilder::chunkStart(int64_t c) {
  return add(mul(lane, index(vector)), index(c * threads * vector));
}

Value KernelBuilder::loadChunk(const RowLayout &row, Value buffer,
                               Value rowBase, int64_t c) {
  return loadVector(buffer, rowBase, chunkStart(c), row.length, row.isFull(c));
}

SmallVector<Value> KernelBuilder::loadRow(const RowLayout &row, Value buffer,
                                          Value rowBase) {
  SmallVector<Value> chunks;
  for (int64_t c = 0; c < row.chunks; ++c)
    chunks.push_back(loadChunk(row, buffer, rowBase, c));
  return chunks;
}

void KernelBuilder::storeRow(const RowLayout &row, ArrayRef<Value> chunks,
                             Value buffer, Value rowBase) {
  for (int64_t c = 0; c < row.chunks; ++c)
    storeChunk(row, chunks[c], buffer, rowBase, c);
}

void KernelBuilder::storeChunk(const RowLayout &row, Value chunk, Value buffer,
                               Value rowBase, int64_t c) {
  storeVector(convert(chunk, elementOf(buffer)), buffer, rowBase,
              chunkStart(c), row.length, row.isFull(c));
}

Value KernelBuilder::maskOutside(const RowLayout &row, Chunk chunk, Value d) {
  if (chunk.inside)
    return d;
  return arith::SelectOp::create(b, tailMask(chunk.start, row.length), d,
                                 zero(d.getType()));
}

SmallVector<Value> KernelBuilder::forEachChunkGroup(
    const RowLayout &row, int64_t chunksAtOnce, ValueRange carried,
    function_ref<SmallVector<Value>(ArrayRef<Chunk>, ValueRange)> body) {
  int64_t perChunk = threads * vector;
  int64_t iterations = row.length / perChunk / chunksAtOnce;
  SmallVector<Value> values(carried);
  if (iterations > 0) {
    int64_t step = chunksAtOnce * perChunk;
    Value laneStart = chunkStart(0);
    auto loop = scf::ForOp::create(
        b, index(0), index(iterations * step), index(step), values,
        [&](OpBuilder &nested, Location, Value offset, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          Value first = add(offset, laneStart);
          SmallVector<Chunk> chunks;
          for (int64_t i = 0; i < chunksAtOnce; ++i)
            chunks.push_back({add(first, index(i * perChunk)), true});
          scf::YieldOp::create(b, body(chunks, args));
        });
    // Unrolled further (by `ptxas` where LLVM leaves the loop), its loads
    // move ahead of the sums and spill.
    MLIRContext *context = b.getContext();
    auto unroll = LLVM::LoopUnrollAttr::get(
        context, /*disable=*/b.getBoolAttr(true), {}, {}, {}, {}, {}, {});
    loop->setAttr("loop_annotation",
                  LLVM::LoopAnnotationAttr::get(
                      context, {}, {}, {}, unroll, {}, {}, {}, {}, {}, {}, {},
                      {}, {}, {}, {}));
    values = SmallVector<Value>(loop.getResults());
  }
  SmallVector<Chunk> rest;
  for (int64_t c = iterations * chunksAtOnce; c < row.chunks; ++c)
    rest.push_back({chunkStart(c), row.isFull(c)});
  if (!rest.empty())
    values = body(rest, values);
  return values;
}

void KernelBuilder::saveStatistics(Value token, Value column, Value rstd,
                                   Value mean) {
  Value rstdBuffer = arg("saved_rstd"), meanBuffer = arg("saved_mean");
  if (!rstdBuffer)
    return;
  Value first =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
  ifThen(first, [&] {
    memref::StoreOp::create(b, rstd, rstdBuffer,
                            add(mul(token, stride("saved_rstd")), column));
    if (meanBuffer)
      memref::StoreOp::create(b, mean, meanBuffer,
                              add(mul(token, stride("saved_mean")), column));
  });
}

//===----------------------------------------------------------------------===//
// Mean and variance
//===----------------------------------------------------------------------===//

std::pair<Value, Value>
KernelBuilder::allReduceDeviations(const RowLayout &row, ArrayRef<Value> chunks,
                                   Value sum) {
  Value mean = mulf(allReduce({sum}).front(),
                    constantF32(1.0 / static_cast<double>(row.length)));
  Value squares = zero(VectorType::get({vector}, f32));
  for (auto [c, v] : llvm::enumerate(chunks)) {
    Value d = maskOutside(row, {chunkStart(c), row.isFull(c)},
                          subf(toF32(v), splat(mean)));
    squares = addf(squares, mulf(d, d));
  }
  return {mean, allReduce({reduce(squares)}).front()};
}

Moments KernelBuilder::getZeroMoments() {
  Value zeroF32 = constantF32(0.0);
  return {zeroF32, zeroF32, zeroF32};
}

Moments KernelBuilder::getMoments(const RowLayout &row, ArrayRef<Chunk> chunks,
                                  ArrayRef<Value> values) {
  // The lanes of a chunk inside the row: clamp(length - start, 0, vector).
  Value count = index(0);
  Value sum = zero(VectorType::get({vector}, f32));
  SmallVector<Value> masked;
  for (auto [chunk, v] : llvm::zip(chunks, values)) {
    masked.push_back(maskOutside(row, chunk, toF32(v)));
    sum = addf(sum, masked.back());
    Value lanes = index(vector);
    if (!chunk.inside) {
      Value left = arith::SubIOp::create(b, index(row.length), chunk.start);
      lanes = arith::MaxSIOp::create(
          b, arith::MinSIOp::create(b, left, lanes), index(0));
    }
    count = add(count, lanes);
  }
  // Chunks inside the row for every lane: a count known here, a mean by
  // its reciprocal.
  Value countF32, mean;
  if (llvm::all_of(chunks, [](const Chunk &chunk) { return chunk.inside; })) {
    double lanes = static_cast<double>(vector * chunks.size());
    countF32 = constantF32(lanes);
    mean = mulf(reduce(sum), constantF32(1.0 / lanes));
  } else {
    countF32 = arith::SIToFPOp::create(
        b, f32, arith::IndexCastOp::create(b, b.getI32Type(), count));
    mean = divideApprox(reduce(sum), arith::MaximumFOp::create(
                                          b, countF32, constantF32(1.0)));
  }
  Value squares = zero(sum.getType());
  for (auto [chunk, v] : llvm::zip(chunks, masked)) {
    Value d = maskOutside(row, chunk, subf(v, splat(mean)));
    squares = addf(squares, mulf(d, d));
  }
  return {countF32, mean, reduce(squares)};
}

Moments KernelBuilder::combineMoments(const Moments &x, const Moments &y) {
  if (matchPattern(x.count, m_AnyZeroFloat()))
    return y;
  Value count = addf(x.count, y.count);
  Value delta = subf(y.mean, x.mean);
  Value share = divideApprox(
      y.count, arith::MaximumFOp::create(b, count, constantF32(1.0)));
  Value mean = addf(x.mean, mulf(delta, share));
  Value m2 = addf(addf(x.m2, y.m2),
                  mulf(mulf(delta, delta), mulf(x.count, share)));
  return {count, mean, m2};
}

std::pair<Value, Value> KernelBuilder::allReduceMoments(const Moments &local,
                                                        int64_t length) {
  Value sum = allReduce({mulf(local.count, local.mean)}).front();
  Value mean = mulf(sum, constantF32(1.0 / static_cast<double>(length)));
  Value d = subf(local.mean, mean);
  Value m2 =
      allReduce({addf(local.m2, mulf(local.count, mulf(d, d)))}).front();
  return {mean, m2};
}

SmallVector<Value> KernelBuilder::allReduce(ValueRange values) {
  if (values.empty())
    return {};
  return SmallVector<Value>(
      RowAllReduceOp::create(b, values, static_cast<uint64_t>(threads))
          .getResults());
}

//===----------------------------------------------------------------------===//
// Rotary embeddings
//===----------------------------------------------------------------------===//

// The frequencies are double-precision constants picked by the lane (exact
// to f32, where an in-kernel ex2 would cost 2^-21 of every angle): slot
// `slot`'s owner is lane + slot threads. A table needs the owner's first
// pair, its rows and their count; the caller knows how its pairs are
// aligned.
KernelBuilder::RopeAngles
KernelBuilder::prepareRopeAngles(const ::norm::OpSpec &spec,
                                 VectorType pairType, int64_t owners,
                                 int64_t slot,
                                 llvm::MaybeAlign tableAlignment) {
  int64_t pairsPerOwner = pairType.getNumElements();
  RopeAngles angles;
  angles.pairType = pairType;
  int64_t firstOwner = slot * threads;
  if (spec.ropeTable) {
    angles.firstPair =
        mul(add(lane, index(firstOwner)), index(pairsPerOwner));
    angles.tableRows = indexArg("rope_table_rows");
    angles.tableAlignment = tableAlignment;
    return angles;
  }
  auto frequencies = [&](int64_t owner) -> Value {
    SmallVector<float> values;
    for (int64_t j = 0; j < pairsPerOwner; ++j)
      values.push_back(static_cast<float>(::norm::getRopeFrequency(
          spec.ropeTheta, spec.rotaryDim, owner * pairsPerOwner + j)));
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(pairType, ArrayRef<float>(values)));
  };
  angles.frequency = frequencies(firstOwner);
  for (int64_t l = 1; l < threads && firstOwner + l < owners; ++l)
    angles.frequency = arith::SelectOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(l)),
        frequencies(firstOwner + l), angles.frequency);
  return angles;
}

// The angles at a position: from the table's row (NaN outside the table,
// so that a bad position cannot pass unseen), or
// pos * freq reduced to [-pi, pi] with 2 pi in two parts by fmas, where
// sin.approx and cos.approx are accurate. (The NVVM conversion would send
// roundeven to libdevice; the magic constant rounds with two adds.)
std::pair<Value, Value>
KernelBuilder::getRopeAngles(const ::norm::OpSpec &spec,
                             const RopeAngles &angles, Value position) {
  VectorType pairType = angles.pairType;
  auto broadcast = [&](Value scalar) -> Value {
    return vector::BroadcastOp::create(b, pairType, scalar);
  };
  if (spec.ropeTable) {
    // Negative positions wrap to huge ones: outside the table too.
    Value row = arith::IndexCastOp::create(b, b.getIndexType(), position);
    Value inTable = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                          angles.tableRows);
    Value table = arg("rope_table");
    SmallVector<Value> values = ifElseZeros(inTable, [&]() -> SmallVector<Value> {
      Value at = add(mul(row, stride("rope_table")), angles.firstPair);
      Value sinAt = add(at, index(spec.rotaryDim / 2));
      return {vector::LoadOp::create(b, pairType, table, at,
                                     /*nontemporal=*/false,
                                     angles.tableAlignment),
              vector::LoadOp::create(b, pairType, table, sinAt,
                                     /*nontemporal=*/false,
                                     angles.tableAlignment)};
    });
    Value nan = broadcast(constantF32(std::numeric_limits<double>::quiet_NaN()));
    return {arith::SelectOp::create(b, inTable, values[0], nan),
            arith::SelectOp::create(b, inTable, values[1], nan)};
  }
  constexpr double kTwoPi = 6.283185307179586;
  float twoPiHigh = static_cast<float>(kTwoPi);
  float twoPiLow = static_cast<float>(kTwoPi - static_cast<double>(twoPiHigh));
  Value angle = mulf(broadcast(arith::SIToFPOp::create(b, f32, position)),
                     angles.frequency);
  // Whole turns, rounded to nearest by adding and taking away 1.5 2^23
  // (exact for |x| < 2^22: angles of positions below 2^24 are).
  Value magic = broadcast(constantF32(0x1.8p23));
  Value turns = subf(
      addf(mulf(angle, broadcast(constantF32(1.0 / kTwoPi))), magic), magic);
  Value negTurns = arith::NegFOp::create(b, turns);
  Value reduced = math::FmaOp::create(
      b, negTurns, broadcast(constantF32(twoPiLow)),
      math::FmaOp::create(b, negTurns, broadcast(constantF32(twoPiHigh)),
                          angle));
  return {math::CosOp::create(b, reduced, arith::FastMathFlags::afn),
          math::SinOp::create(b, reduced, arith::FastMathFlags::afn)};
}
