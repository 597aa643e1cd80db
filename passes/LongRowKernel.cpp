//===- LongRowKernel.cpp - norm.fused_row, rows beyond registers ----------===//
//
// Rows whose shares do not fit in registers: the same three steps as rows
// in registers, each a loop over the thread's chunks; parameters are loaded
// per chunk in step 3. See FusedRowKernel.h.
//
//===----------------------------------------------------------------------===//

#include "passes/FusedRowKernel.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::norm;

void FusedRowEmitter::emitLongRows(::norm::RowStorage storage,
                                   Value inverse) {
  const RowLayout &row = fused.row;
  Value addend = arg("addend"), skip = arg("skip");
  Value residual = arg("residual_out");
  bool twoSteps = fused.statistic != ::norm::Statistic::None;
  int64_t inFlight = ::norm::getChunksInFlight(fused.spec, sig.launch);

  // Shared: one region per row the CTA works on at once, in the dynamic
  // shared memory of the launch (sharedBytes of the signature).
  StagedRow staged;
  if (storage == ::norm::RowStorage::Shared)
    staged = createStagedRows().front();
  // Streamed rows take v back from residual_out when it holds v exactly
  // (one buffer to read instead of two; residual_out is no readonly
  // argument, so these loads stay coherent with the thread's own stores).
  bool readBack = storage == ::norm::RowStorage::Streamed &&
                  ::norm::readsResidualBack(fused.spec);
  // residual_out is stored with v in step 1, or in step 3: without a
  // statistic (one step), and staged in place, once every thread has read
  // the row (streamed rows store it in step 1, each thread over its own
  // elements: norm::verifyLaunchFor allows that where it is exact).
  bool residualLate =
      residual &&
      (!twoSteps || (storage == ::norm::RowStorage::Shared &&
                     fused.spec.residualOver != ::norm::RowOperand::None));

  forEachFusedRow([&](const RowPosition &position) {
    // 1. Read the row once: its partial sums, v staged or stored (staged
    // also without a statistic where per-token scales need the amax).
    SmallVector<Value> partial;
    if (twoSteps || staged.buffer)
      partial = ifElseZeros(position.valid, [&] {
        Value inputBase = rowBase(position, "input");
        Value addendBase = addend ? rowBase(position, "addend") : Value();
        Value residualBase = residual && !residualLate
                                 ? rowBase(position, "residual_out")
                                 : Value();
        SmallVector<Value> sums = forEachChunkGroup(
            row, inFlight, initialSums(),
            [&](ArrayRef<Chunk> chunks, ValueRange carried) {
              SmallVector<Value> values;
              for (Chunk chunk : chunks)
                values.push_back(loadPrologue(chunk, inputBase, addendBase));
              SmallVector<Value> next(carried);
              for (auto [chunk, v] : llvm::zip(chunks, values)) {
                if (staged.buffer)
                  stage(staged, chunk, v);
                if (residual && !residualLate)
                  storeVector(convert(v, elementOf(residual)), residual,
                              residualBase, chunk.start, row.length,
                              chunk.inside);
              }
              accumulate(chunks, values, next);
              return next;
            });
        return finishSums(sums);
      });

    // 2. The exchange of the row's sums.
    SmallVector<Value> totals = exchangeSums(partial);

    Value skipBase = skip ? rowBase(position, "skip") : Value();
    // Per-token FP8 scales: the amax of the normalized staged row, over the
    // row's threads (norm::verifyLaunchFor: such rows are staged).
    Value amax;
    if (fused.outputScale == ::norm::OutputScale::PerToken) {
      assert(staged.buffer && "per-token scales of a streamed row");
      amax = ifElseZeros(position.valid, [&] {
               RowScale scale = getRowScale(totals);
               return forEachChunkGroup(
                   row, inFlight, {zero(VectorType::get({vector}, f32))},
                   [&](ArrayRef<Chunk> chunks, ValueRange carried) {
                     Value local = carried.front();
                     for (Chunk chunk : chunks)
                       local = accumulateAmax(
                           chunk,
                           normalize(scale, unstage(staged, chunk),
                                     loadChunkParams(chunk, position.colBase,
                                                     skipBase)),
                           local);
                     return SmallVector<Value>{local};
                   });
             }).front();
      amax = reduceAmax(amax);
    }

    // 3. v back, normalize, scale, store.
    ifThen(position.valid, [&] {
      RowScale scale = getRowScale(totals);
      Value rowInverse =
          amax ? storeTokenScale(position.token, amax) : inverse;
      saveStatistics(position.token, position.group, scale.scale,
                     scale.mean);
      bool fromInput = !staged.buffer && !readBack;
      Value inputBase = fromInput ? rowBase(position, "input") : Value();
      Value addendBase =
          fromInput && addend ? rowBase(position, "addend") : Value();
      Value residualBase = residual && (readBack || residualLate)
                               ? rowBase(position, "residual_out")
                               : Value();
      Value output = arg("output");
      Value outputBase = rowBase(position, "output");
      forEachChunkGroup(row, inFlight, {}, [&](ArrayRef<Chunk> chunks,
                                               ValueRange) {
        SmallVector<Value> values;
        SmallVector<ChunkParams> params;
        for (Chunk chunk : chunks) {
          if (staged.buffer)
            values.push_back(unstage(staged, chunk));
          else if (readBack)
            values.push_back(loadVector(residual, residualBase, chunk.start,
                                        row.length, chunk.inside));
          else
            values.push_back(loadPrologue(chunk, inputBase, addendBase));
          params.push_back(loadChunkParams(chunk, position.colBase, skipBase));
        }
        for (auto [chunk, v, chunkParams] : llvm::zip(chunks, values, params)) {
          Value y = quantize(normalize(scale, v, chunkParams), rowInverse);
          storeVector(convert(y, elementOf(output)), output, outputBase,
                      chunk.start, row.length, chunk.inside);
          if (residualLate)
            storeVector(convert(v, elementOf(residual)), residual,
                        residualBase, chunk.start, row.length, chunk.inside);
        }
        return SmallVector<Value>();
      });
    });
  });
}

//===----------------------------------------------------------------------===//
// Staging in shared memory
//===----------------------------------------------------------------------===//

SmallVector<FusedRowEmitter::StagedRow> FusedRowEmitter::createStagedRows() {
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Value memory = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                         MemRefLayoutAttrInterface{}, workgroup));
  int64_t concurrent = sig.launch.getConcurrentRows();
  SmallVector<StagedRow> regions;
  int64_t shift = 0;
  for (::norm::ElementType type : ::norm::getStagedTypes(fused.spec)) {
    StagedRow staged;
    staged.element = getMlirType(b.getContext(), type);
    int64_t rowBytes = ::norm::getStagedRegionBytes(fused.spec, type, vector);
    int64_t rowVectors = rowBytes / getStagedVectorBytes(staged);
    staged.buffer = memref::ViewOp::create(
        b,
        MemRefType::get({concurrent * rowVectors},
                        VectorType::get({vector}, staged.element),
                        MemRefLayoutAttrInterface{}, workgroup),
        memory, index(shift), ValueRange{});
    staged.base = mul(slot, index(rowVectors));
    regions.push_back(staged);
    shift += concurrent * rowBytes;
  }
  return regions;
}

int64_t FusedRowEmitter::getStagedVectorBytes(const StagedRow &staged) {
  return vector * staged.element.getIntOrFloatBitWidth() / 8;
}

/// The alignment of the vectors of a staged row: the dynamic shared memory
/// and each row's region in it start at 16 bytes (regions are whole
/// multiples of 16 bytes), and the vectors lie at multiples of their size
/// within them, so a vector is aligned to its size up to 16 bytes and no
/// more (a vector<4xf16> of 8 bytes may start 8 bytes into a region).
static llvm::MaybeAlign getStagedAlignment(int64_t vectorBytes) {
  return llvm::MaybeAlign(std::min<int64_t>(vectorBytes, 16));
}

std::pair<Value, Value> FusedRowEmitter::locateStaged(const StagedRow &staged,
                                                      Chunk chunk) {
  Value at =
      add(staged.base, arith::DivUIOp::create(b, chunk.start, index(vector)));
  if (chunk.inside)
    return {at, Value()};
  Value starts = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                       chunk.start, index(fused.row.length));
  return {at, starts};
}

void FusedRowEmitter::stage(const StagedRow &staged, Chunk chunk, Value v) {
  auto [at, starts] = locateStaged(staged, chunk);
  int64_t bytes = getStagedVectorBytes(staged);
  auto store = [&] {
    memref::StoreOp::create(b, v, staged.buffer, at, /*nontemporal=*/false,
                            getStagedAlignment(bytes));
  };
  if (!starts)
    return store();
  ifThen(starts, store);
}

Value FusedRowEmitter::unstage(const StagedRow &staged, Chunk chunk) {
  auto [at, starts] = locateStaged(staged, chunk);
  int64_t bytes = getStagedVectorBytes(staged);
  auto load = [&] {
    return SmallVector<Value>{memref::LoadOp::create(
        b, staged.buffer, at, /*nontemporal=*/false,
        getStagedAlignment(bytes))};
  };
  if (!starts)
    return load().front();
  return ifElseZeros(starts, load).front();
}
