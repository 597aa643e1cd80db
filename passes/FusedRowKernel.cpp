//===- FusedRowKernel.cpp - norm.fused_row, rows in registers -------------===//

#include "passes/FusedRowKernel.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::norm;

FusedRow::FusedRow(MLIRContext *context, const ::norm::OpSpec &spec,
                   int64_t vector, int64_t threads)
    : spec(spec), groups(spec.groups),
      row(::norm::getRowLength(spec), vector, threads),
      statistic(::norm::getStatistic(spec)),
      streamType(getMlirType(context, ::norm::getStreamType(spec))),
      outputType(getMlirType(context, spec.output)), alpha(spec.alpha),
      eps(spec.eps), offset(spec.weightOffset),
      outputScale(spec.outputScale) {}

void FusedRowEmitter::emit() {
  if (fused.spec.backward)
    return emitBackwardRows();
  if (::norm::fitsInRegisters(fused.spec, sig.launch))
    return emitRegisterRows();
  // Long rows load their parameters chunk by chunk, with the row.
  Value inverse = loadInverseStaticScale();
  waitForPredecessor();
  // Rows leave registers; the signature says whether the target had the
  // shared memory to stage them (norm::getRowStorage).
  emitLongRows(sig.sharedBytes > 0 ? ::norm::RowStorage::Shared
                                   : ::norm::RowStorage::Streamed,
               inverse);
}

void FusedRowEmitter::emitRegisterRows() {
  const RowLayout &row = fused.row;
  bool residualInPlace = fused.spec.residualOver != ::norm::RowOperand::None;
  Value input = arg("input"), addend = arg("addend"), skip = arg("skip");

  // Parameters of the whole row are the same for every row of the CTA: load
  // them once. GroupNorm rows are groups of channels, each with its own
  // parameters, loaded per row (any row's channels exist, valid or not).
  // Either way before the reduction, so that the loads overlap it.
  ParamChunks ctaParams;
  if (fused.groups == 1)
    ctaParams = loadParams(index(0));
  Value inverse = loadInverseStaticScale();
  // Only the rows may be the grid before's outputs.
  waitForPredecessor();

  forEachFusedRow([&](const RowPosition &position) {
    ParamChunks params =
        fused.groups > 1 ? loadParams(position.colBase) : ctaParams;

    // 1. The row into registers, and its partial sums.
    SmallVector<Value> loaded = ifElseZeros(position.valid, [&] {
      Value inputBase = rowBase(position, "input");
      Value addendBase = addend ? rowBase(position, "addend") : Value();
      SmallVector<Value> values;
      for (int64_t c = 0; c < row.chunks; ++c)
        values.push_back(
            prologue(loadChunk(row, input, inputBase, c),
                     addend ? loadChunk(row, addend, addendBase, c) : Value()));
      // The residual stream is complete before the reduction: storing it now
      // overlaps the writes with the exchange. In place, it waits for the
      // exchange, when every thread has read the row.
      Value residual = arg("residual_out");
      if (residual && !residualInPlace)
        storeRow(row, values, residual, rowBase(position, "residual_out"));
      SmallVector<Value> out = values;
      if (skip)
        llvm::append_range(out, loadRow(row, skip, rowBase(position, "skip")));
      // mean_var: the sum of v now, the deviations after the mean.
      if (fused.statistic == ::norm::Statistic::MeanVar) {
        Value sum = zero(VectorType::get({vector}, f32));
        for (Value v : values)
          sum = addf(sum, toF32(v));
        out.push_back(reduce(sum));
        return out;
      }
      SmallVector<Chunk> chunks;
      for (int64_t c = 0; c < row.chunks; ++c)
        chunks.push_back({chunkStart(c), row.isFull(c)});
      SmallVector<Value> sums = initialSums();
      accumulate(chunks, values, sums);
      llvm::append_range(out, finishSums(sums));
      return out;
    });

    ArrayRef<Value> cursor = loaded;
    auto take = [&](size_t n) {
      ArrayRef<Value> part = cursor.take_front(n);
      cursor = cursor.drop_front(n);
      return part;
    };
    ArrayRef<Value> values = take(row.chunks);
    ArrayRef<Value> skipChunks = take(skip ? row.chunks : 0);

    // 2. The exchange of the row's sums (mean_var: the mean, then the
    // squared deviations from it, over the row in registers).
    SmallVector<Value> totals;
    if (fused.statistic == ::norm::Statistic::MeanVar) {
      auto [mean, m2] = allReduceDeviations(row, values, cursor.front());
      totals = {mean, m2};
    } else {
      totals = exchangeSums(cursor);
    }

    // 3. Normalize and scale (per-token FP8 scales: twice, the amax over
    // the row's threads in between), store.
    auto at = [](ArrayRef<Value> chunks, int64_t c) {
      return chunks.empty() ? Value() : chunks[c];
    };
    auto normalizeRow = [&](const RowScale &scale) {
      SmallVector<Value> outputs;
      for (int64_t c = 0; c < row.chunks; ++c)
        outputs.push_back(normalize(
            scale, values[c],
            {at(params.weight, c), at(params.bias, c), at(params.mean, c),
             at(params.invStd, c), at(skipChunks, c)}));
      return outputs;
    };
    Value amax;
    if (fused.outputScale == ::norm::OutputScale::PerToken) {
      amax = ifElseZeros(position.valid, [&] {
               Value local = zero(VectorType::get({vector}, f32));
               for (auto [c, y] :
                    llvm::enumerate(normalizeRow(getRowScale(totals))))
                 local = accumulateAmax({chunkStart(c), row.isFull(c)}, y,
                                        local);
               return SmallVector<Value>{local};
             }).front();
      amax = reduceAmax(amax);
    }
    ifThen(position.valid, [&] {
      if (residualInPlace)
        storeRow(row, values, arg("residual_out"),
                 rowBase(position, "residual_out"));
      RowScale scale = getRowScale(totals);
      saveStatistics(position.token, position.group, scale.scale,
                     scale.mean);
      Value rowInverse =
          amax ? storeTokenScale(position.token, amax) : inverse;
      SmallVector<Value> outputs;
      for (Value y : normalizeRow(scale))
        outputs.push_back(quantize(y, rowInverse));
      storeRow(row, outputs, arg("output"), rowBase(position, "output"));
    });
  });
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

void FusedRowEmitter::forEachFusedRow(
    function_ref<void(const RowPosition &)> body) {
  int64_t groups = fused.groups;
  Value kernelRows = mul(indexArg("rows"), index(groups));
  forEachCtaRow([&](Value rowIndex) {
    RowPosition position;
    position.valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           rowIndex, kernelRows);
    position.token = rowIndex;
    position.colBase = position.group = index(0);
    if (groups > 1) {
      position.token = arith::DivUIOp::create(b, rowIndex, index(groups));
      position.group = arith::RemUIOp::create(b, rowIndex, index(groups));
      position.colBase = mul(position.group, index(fused.row.length));
    }
    body(position);
  });
}

Value FusedRowEmitter::rowBase(const RowPosition &position, StringRef buffer) {
  return add(mul(position.token, stride(buffer)), position.colBase);
}

//===----------------------------------------------------------------------===//
// Prologue and statistic
//===----------------------------------------------------------------------===//

Value FusedRowEmitter::prologue(Value x, Value a) {
  if (!a) // without an addend, v is the input as it is stored
    return x;
  Value v = toF32(x);
  if (fused.alpha != 1.0)
    v = mulf(v, isa<VectorType>(v.getType()) ? splatF32(fused.alpha)
                                             : constantF32(fused.alpha));
  return convert(addf(v, toF32(a)), fused.streamType);
}

Value FusedRowEmitter::loadPrologue(Chunk chunk, Value inputBase,
                                    Value addendBase) {
  Value addend = arg("addend");
  auto load = [&](Value buffer, Value base) {
    return loadVector(buffer, base, chunk.start, fused.row.length,
                      chunk.inside);
  };
  return prologue(load(arg("input"), inputBase),
                  addend ? load(addend, addendBase) : Value());
}

SmallVector<Value> FusedRowEmitter::initialSums() {
  switch (fused.statistic) {
  case ::norm::Statistic::MeanVar: {
    Moments none = getZeroMoments();
    return {none.count, none.mean, none.m2};
  }
  case ::norm::Statistic::None:
    return {};
  default:
    return {zero(VectorType::get({vector}, f32))};
  }
}

void FusedRowEmitter::accumulate(ArrayRef<Chunk> chunks, ArrayRef<Value> values,
                                 MutableArrayRef<Value> sums) {
  switch (fused.statistic) {
  case ::norm::Statistic::RMS:
  case ::norm::Statistic::L2:
    for (Value v : values) {
      Value vf = toF32(v);
      sums[0] = addf(sums[0], mulf(vf, vf));
    }
    break;
  case ::norm::Statistic::MeanVar: {
    Moments total = combineMoments({sums[0], sums[1], sums[2]},
                                   getMoments(fused.row, chunks, values));
    sums[0] = total.count;
    sums[1] = total.mean;
    sums[2] = total.m2;
    break;
  }
  case ::norm::Statistic::None:
    break;
  }
}

SmallVector<Value> FusedRowEmitter::finishSums(ArrayRef<Value> sums) {
  if (fused.statistic == ::norm::Statistic::MeanVar)
    return SmallVector<Value>(sums);
  SmallVector<Value> scalars;
  for (Value sum : sums)
    scalars.push_back(reduce(sum));
  return scalars;
}

SmallVector<Value> FusedRowEmitter::exchangeSums(ArrayRef<Value> sums) {
  if (fused.statistic != ::norm::Statistic::MeanVar)
    return allReduce(sums);
  auto [mean, m2] =
      allReduceMoments({sums[0], sums[1], sums[2]}, fused.row.length);
  return {mean, m2};
}

RowScale FusedRowEmitter::getRowScale(ArrayRef<Value> totals) {
  RowScale result;
  double invLength = 1.0 / static_cast<double>(fused.row.length);
  switch (fused.statistic) {
  case ::norm::Statistic::RMS:
    result.scale = rsqrt(addf(mulf(totals[0], constantF32(invLength)),
                              constantF32(fused.eps)));
    break;
  case ::norm::Statistic::L2:
    result.scale = rsqrt(addf(totals[0], constantF32(fused.eps)));
    break;
  case ::norm::Statistic::MeanVar:
    result.mean = totals[0];
    result.scale = rsqrt(addf(mulf(totals[1], constantF32(invLength)),
                              constantF32(fused.eps)));
    break;
  case ::norm::Statistic::None:
    break;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Epilogue
//===----------------------------------------------------------------------===//

Value FusedRowEmitter::normalize(const RowScale &scale, Value v,
                                 const ChunkParams &params) {
  Value y = toF32(v);
  if (scale.mean)
    y = subf(y, splat(scale.mean));
  else if (params.mean)
    y = subf(y, toF32(params.mean));
  if (scale.scale)
    y = mulf(y, splat(scale.scale));
  else if (params.invStd)
    y = mulf(y, params.invStd);
  if (params.weight) {
    Value w = toF32(params.weight);
    if (fused.offset != 0.0)
      w = addf(w, splatF32(fused.offset));
    y = mulf(y, w);
  }
  if (params.bias)
    y = addf(y, toF32(params.bias));
  // Sandwich: the normalized value is rounded before the add.
  if (params.skip)
    y = addf(toF32(convert(y, fused.outputType)), toF32(params.skip));
  return y;
}

//===----------------------------------------------------------------------===//
// FP8 outputs
//===----------------------------------------------------------------------===//

Value FusedRowEmitter::loadInverseStaticScale() {
  if (fused.outputScale != ::norm::OutputScale::Static)
    return {};
  Value scale = memref::LoadOp::create(b, arg("output_scale"), index(0));
  return arith::DivFOp::create(b, constantF32(1.0), scale);
}

Value FusedRowEmitter::quantize(Value y, Value inverse) {
  if (fused.outputScale == ::norm::OutputScale::None)
    return y;
  double max = ::norm::getFp8MaxFinite(getElementType(fused.outputType));
  // minimumf/maximumf keep NaN, which the store rounds to FP8's NaN.
  Value q = mulf(y, splat(inverse));
  q = arith::MinimumFOp::create(b, q, splatF32(max));
  return arith::MaximumFOp::create(b, q, splatF32(-max));
}

Value FusedRowEmitter::accumulateAmax(Chunk chunk, Value y, Value amax) {
  Value magnitude = maskOutside(fused.row, chunk, math::AbsFOp::create(b, y));
  return arith::MaximumFOp::create(b, amax, magnitude);
}

Value FusedRowEmitter::reduceAmax(Value amax) {
  Value local = vector::ReductionOp::create(b, vector::CombiningKind::MAXIMUMF,
                                            amax);
  return RowAllReduceOp::create(b, ValueRange{local},
                                static_cast<uint64_t>(threads),
                                ReductionKind::max)
      .getResult(0);
}

Value FusedRowEmitter::storeTokenScale(Value token, Value amax) {
  double max = ::norm::getFp8MaxFinite(getElementType(fused.outputType));
  if (Value bound = arg("scale_ub"))
    amax = arith::MinimumFOp::create(
        b, amax, memref::LoadOp::create(b, bound, index(0)));
  Value scale = arith::MaximumFOp::create(
      b, arith::DivFOp::create(b, amax, constantF32(max)),
      constantF32(1.0 / (max * ::norm::kMinScaleFactor)));
  Value first =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
  ifThen(first, [&] {
    memref::StoreOp::create(b, scale, arg("output_scales"),
                            mul(token, stride("output_scales")));
  });
  return arith::DivFOp::create(b, constantF32(1.0), scale);
}

ParamChunks FusedRowEmitter::loadParams(Value colBase) {
  const RowLayout &row = fused.row;
  ParamChunks params;
  auto load = [&](StringRef name, SmallVector<Value> &into) {
    if (Value buffer = arg(name))
      into = loadRow(row, buffer, colBase);
  };
  load("weight", params.weight);
  load("bias", params.bias);
  load("mean", params.mean);
  if (Value variance = arg("variance")) {
    Value eps = splatF32(fused.eps);
    for (Value chunk : loadRow(row, variance, colBase))
      params.invStd.push_back(rsqrt(addf(toF32(chunk), eps)));
  }
  return params;
}

ChunkParams FusedRowEmitter::loadChunkParams(Chunk chunk, Value colBase,
                                             Value skipBase) {
  ChunkParams params;
  auto load = [&](StringRef name, Value base) -> Value {
    Value buffer = arg(name);
    if (!buffer)
      return {};
    return loadVector(buffer, base, chunk.start, fused.row.length,
                      chunk.inside);
  };
  params.weight = load("weight", colBase);
  params.bias = load("bias", colBase);
  params.mean = load("mean", colBase);
  if (Value variance = load("variance", colBase))
    params.invStd = rsqrt(addf(toF32(variance), splatF32(fused.eps)));
  params.skip = load("skip", skipBase);
  return params;
}
