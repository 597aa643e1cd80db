//===- KernelBuilder.cpp - the gpu.func of a kernel op --------------------===//
//
// Every row kernel has the same frame:
//
//   thread geometry   lane = tid % T (thread in the row), slot = tid / T (row
//                     of the CTA), CTA rows bid * rows_per_cta + it * CR + slot
//   per-CTA loads     parameters shared by all rows, before the row loop
//   for each row      1. if the row exists: load the row into registers,
//                        prologue, partial sums
//                     2. norm.row_allreduce of all sums at once (every thread)
//                     3. if the row exists: epilogue and stores
//
// Thread `lane` owns chunks c = 0..C-1 of `vector` elements starting at
// (c * T + lane) * vector. Chunks that lie inside the row for every lane are
// plain 16-byte vector accesses; the last chunks test the lane's position and
// fall back to a masked access for a partial vector, so any row length works
// and nothing past the row is touched.
//
// A thread keeps up to kMaxElementsPerThread elements in registers, the
// chunks unrolled. norm.fused_row kernels whose threads own more loop over
// their chunks (kChunksPerIteration at a time) and keep the row elsewhere
// (norm::getRowStorage):
//   shared    step 1 stores v in dynamic shared memory as it accumulates the
//             sums, step 3 reads it back: global memory is read once;
//   streamed  step 3 reads the row again (v from residual_out when that holds
//             it exactly, else input and addend once more).
// Either way a thread reads back only the elements it wrote itself, in
// program order: no barrier or fence is needed between the steps.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelBuilder.h"

#include "compiler/KernelDescription.h"
#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;
using ::norm::KernelParam;
using ::norm::KernelSignature;
using ::norm::RowStorage;

namespace {

/// Static extent of the 1-D memrefs that stand for kernel buffers: the
/// bare-pointer calling convention needs static shapes, and no allocation
/// comes near 2^40 elements.
constexpr int64_t kBufferExtent = int64_t(1) << 40;

/// Chunks a thread loads per iteration of a loop over a long row: four
/// independent 16-byte loads in flight per thread and buffer.
constexpr int64_t kChunksPerIteration = 4;

/// Alignment of the vectors of a staged row: the dynamic shared memory and
/// each row's region in it start at 16 bytes.
constexpr uint64_t kStagedAlignment = 16;

Type getMlirType(MLIRContext *context, ::norm::ElementType type) {
  switch (type) {
  case ::norm::ElementType::f32:
    return Float32Type::get(context);
  case ::norm::ElementType::f16:
    return Float16Type::get(context);
  case ::norm::ElementType::bf16:
    return BFloat16Type::get(context);
  }
  llvm_unreachable("unknown element type");
}

/// How the threads of a row share it.
struct RowLayout {
  RowLayout(int64_t length, int64_t vector, int64_t threads)
      : length(length), vector(vector), threads(threads),
        chunks(llvm::divideCeil(length, threads * vector)) {}

  /// Whether chunk `c` lies inside the row for every lane.
  bool isFull(int64_t c) const { return (c + 1) * threads * vector <= length; }

  int64_t length, vector, threads, chunks;
};

/// One chunk of a thread: where it starts in the row, and whether it lies
/// inside the row for every lane.
struct Chunk {
  Value start;
  bool inside;
};

/// Per-channel parameters of a row, `vector`-wide chunks in storage type
/// (register-lean), except `invStd` (f32).
struct ParamChunks {
  SmallVector<Value> weight, bias, mean, invStd;
};

/// The operands of the epilogue for one chunk; null where absent.
struct ChunkParams {
  Value weight, bias, mean, invStd, skip;
};

/// The attributes of a norm.fused_row its kernel code reads.
struct FusedRow {
  FusedRow(FusedRowOp op, int64_t vector, int64_t threads)
      : op(op), groups(op.getGroups()),
        row(op.getHidden() / groups, vector, threads),
        statistic(op.getStatistic()), streamType(op.getStreamElementType()),
        outputType(getElementTypeOrSelf(op.getOutput().getType())),
        alpha(op.getAlpha().convertToDouble()),
        eps(op.getEps().convertToDouble()),
        offset(op.getWeightOffset().convertToDouble()) {}

  FusedRowOp op;
  int64_t groups;
  RowLayout row;
  Statistic statistic;
  /// The element type of v (see FusedRowOp::getStreamElementType).
  Type streamType, outputType;
  double alpha, eps, offset;
};

/// Where one row of a norm.fused_row kernel lies.
struct RowPosition {
  Value valid;   // whether the row exists
  Value token;   // its row in the 2-D buffers
  Value colBase; // its first channel (GroupNorm rows are groups)
};

/// What normalizes a row: `scale` (null without a statistic) and, for
/// mean_var, `pivot` and `centre` (mean = pivot + centre).
struct RowScale {
  Value scale, pivot, centre;
};

class KernelBuilder {
public:
  KernelBuilder(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                const KernelSignature &sig)
      : b(b), sig(sig), f32(b.getF32Type()), vector(sig.launch.vector),
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

  void build(FusedRowOp op);
  void build(QKNormPrologueOp op);
  void build(ColumnStatsOp op);

private:
  /// norm.fused_row with rows in shared memory or streamed.
  void buildLongRows(const FusedRow &fused, RowStorage storage);

  //===--- Values ---------------------------------------------------------===//

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }
  Value constantF32(double value) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
  }
  Value zero(Type type) {
    return arith::ConstantOp::create(b, type, b.getZeroAttr(type));
  }
  // Index arithmetic folds as it goes (x + 0, x * 1, constants).
  Value add(Value x, Value y) { return b.createOrFold<arith::AddIOp>(x, y); }
  Value mul(Value x, Value y) { return b.createOrFold<arith::MulIOp>(x, y); }
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value subf(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value rsqrt(Value x) {
    return math::RsqrtOp::create(b, x, arith::FastMathFlags::afn);
  }
  Value splat(Value scalar) {
    return vector::BroadcastOp::create(b, VectorType::get({vector}, f32),
                                       scalar);
  }
  Value splatF32(double value) { return splat(constantF32(value)); }
  /// Sum of the elements of an f32 vector.
  Value reduce(Value v) {
    return vector::ReductionOp::create(b, vector::CombiningKind::ADD, v);
  }

  /// `v` (scalar or vector) converted to `element` (round to nearest even).
  Value convert(Value v, Type element) {
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
  Value toF32(Value v) { return convert(v, f32); }

  Value arg(StringRef name) { return args.lookup(name); }
  /// An i64 argument (rows, strides) as an index.
  Value indexArg(StringRef name) {
    return arith::IndexCastOp::create(b, b.getIndexType(), arg(name));
  }
  Value stride(StringRef buffer) { return indexArg((buffer + "_stride").str()); }
  Type elementOf(Value buffer) {
    return cast<MemRefType>(buffer.getType()).getElementType();
  }
  VectorType vectorOf(Value buffer) {
    return VectorType::get({vector}, elementOf(buffer));
  }
  /// What the signature promises for the buffer's pointer and row stride.
  llvm::MaybeAlign alignmentOf(Value buffer) {
    return llvm::MaybeAlign(alignments.lookup(buffer));
  }

  //===--- Control flow ---------------------------------------------------===//

  /// Values that `then` computes when `cond` holds, zeros otherwise.
  SmallVector<Value> ifElseZeros(Value cond,
                                 function_ref<SmallVector<Value>()> then) {
    SmallVector<Type> types;
    auto ifOp = scf::IfOp::create(
        b, cond,
        [&](OpBuilder &nested, Location loc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          SmallVector<Value> values = then();
          types = llvm::to_vector(ValueRange(values).getTypes());
          scf::YieldOp::create(b, values);
        },
        [&](OpBuilder &nested, Location loc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(
              b, llvm::map_to_vector(types, [&](Type t) { return zero(t); }));
        });
    return SmallVector<Value>(ifOp.getResults());
  }

  void ifThen(Value cond, function_ref<void()> then,
              function_ref<void()> otherwise = nullptr) {
    auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/bool(otherwise));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    then();
    if (otherwise) {
      b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
      otherwise();
    }
  }

  /// Runs `body` for each row this thread's group works on: one or, when a
  /// CTA handles more rows than it holds at once, a loop with uniform bounds
  /// (every thread reaches the collectives of the body).
  void forEachCtaRow(function_ref<void(Value row)> body) {
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

  //===--- Memory ---------------------------------------------------------===//

  /// Elements [start, start + vector) of a row of `length` elements that
  /// begins at `rowBase` in `buffer`, zero where they leave the row.
  /// `inside`: the caller knows they lie inside.
  Value loadVector(Value buffer, Value rowBase, Value start, int64_t length,
                   bool inside) {
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

  void storeVector(Value value, Value buffer, Value rowBase, Value start,
                   int64_t length, bool inside) {
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
      vector::MaskedStoreOp::create(b, buffer, at, tailMask(start, length),
                                    value);
    });
  }

  /// Lanes [start, start + vector) that lie inside a row of `length`.
  Value tailMask(Value start, int64_t length) {
    Value left = arith::SubIOp::create(b, index(length), start);
    return vector::CreateMaskOp::create(
        b, VectorType::get({vector}, b.getI1Type()), ValueRange{left});
  }

  //===--- Rows -----------------------------------------------------------===//

  /// Where chunk `c` of this thread starts in its row.
  Value chunkStart(int64_t c) {
    return add(mul(lane, index(vector)), index(c * threads * vector));
  }
  Value loadChunk(const RowLayout &row, Value buffer, Value rowBase,
                  int64_t c) {
    return loadVector(buffer, rowBase, chunkStart(c), row.length,
                      row.isFull(c));
  }
  SmallVector<Value> loadRow(const RowLayout &row, Value buffer,
                             Value rowBase) {
    SmallVector<Value> chunks;
    for (int64_t c = 0; c < row.chunks; ++c)
      chunks.push_back(loadChunk(row, buffer, rowBase, c));
    return chunks;
  }
  void storeRow(const RowLayout &row, ArrayRef<Value> chunks, Value buffer,
                Value rowBase) {
    Type element = elementOf(buffer);
    for (int64_t c = 0; c < row.chunks; ++c)
      storeVector(convert(chunks[c], element), buffer, rowBase,
                  chunkStart(c), row.length, row.isFull(c));
  }
  /// `d` with the lanes outside the row zeroed (for chunks that may leave it).
  Value maskOutside(const RowLayout &row, Chunk chunk, Value d) {
    if (chunk.inside)
      return d;
    return arith::SelectOp::create(b, tailMask(chunk.start, row.length), d,
                                   zero(d.getType()));
  }

  /// Runs `body` over this thread's chunks of `row` in order, threading
  /// `carried` through: the chunks inside the row for every lane in an
  /// scf.for, kChunksPerIteration at a time, the others after it (the last
  /// one may be partial). Returns the final carried values.
  SmallVector<Value> forEachChunkGroup(
      const RowLayout &row, ValueRange carried,
      function_ref<SmallVector<Value>(ArrayRef<Chunk>, ValueRange)> body) {
    int64_t perChunk = threads * vector;
    int64_t iterations = row.length / perChunk / kChunksPerIteration;
    SmallVector<Value> values(carried);
    if (iterations > 0) {
      int64_t step = kChunksPerIteration * perChunk;
      Value laneStart = chunkStart(0);
      auto loop = scf::ForOp::create(
          b, index(0), index(iterations * step), index(step), values,
          [&](OpBuilder &nested, Location, Value offset, ValueRange args) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            Value first = add(offset, laneStart);
            SmallVector<Chunk> chunks;
            for (int64_t i = 0; i < kChunksPerIteration; ++i)
              chunks.push_back({add(first, index(i * perChunk)), true});
            scf::YieldOp::create(b, body(chunks, args));
          });
      values = SmallVector<Value>(loop.getResults());
    }
    SmallVector<Chunk> rest;
    for (int64_t c = iterations * kChunksPerIteration; c < row.chunks; ++c)
      rest.push_back({chunkStart(c), row.isFull(c)});
    if (!rest.empty())
      values = body(rest, values);
    return values;
  }

  /// Weight, bias and per-channel statistics of the channels at `colBase`.
  ParamChunks loadParams(const RowLayout &row, FusedRowOp op, Value colBase) {
    ParamChunks params;
    auto load = [&](StringRef name, SmallVector<Value> &into) {
      if (Value buffer = arg(name))
        into = loadRow(row, buffer, colBase);
    };
    load("weight", params.weight);
    load("bias", params.bias);
    load("mean", params.mean);
    if (Value variance = arg("variance")) {
      Value eps = splatF32(op.getEps().convertToDouble());
      for (Value chunk : loadRow(row, variance, colBase))
        params.invStd.push_back(rsqrt(addf(toF32(chunk), eps)));
    }
    return params;
  }

  //===--- norm.fused_row -------------------------------------------------===//

  /// This thread group's row in shared memory, as whole vectors of `vector`
  /// elements of v. Accessed with memref.load/store of vectors, which the
  /// NVVM conversion lowers: vector.load on workgroup memory would meet
  /// convert-vector-to-llvm first, which cannot map that address space.
  struct StagedRow {
    Value buffer; // memref<concurrent rows x row vectors x vector<V x T>>
    Value base;   // the first vector of this thread group's row
  };

  StagedRow createStagedRow(const FusedRow &fused) {
    auto workgroup = gpu::AddressSpaceAttr::get(
        b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    int64_t vectorBytes = vector * fused.streamType.getIntOrFloatBitWidth() / 8;
    int64_t rowVectors =
        ::norm::getStagedRowBytes(FusedRowOp(fused.op), vector) / vectorBytes;
    Value memory = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           MemRefLayoutAttrInterface{}, workgroup));
    StagedRow staged;
    staged.buffer = memref::ViewOp::create(
        b,
        MemRefType::get({sig.launch.getConcurrentRows() * rowVectors},
                        VectorType::get({vector}, fused.streamType),
                        MemRefLayoutAttrInterface{}, workgroup),
        memory, index(0), ValueRange{});
    staged.base = mul(slot, index(rowVectors));
    return staged;
  }

  /// Where chunk `chunk` lies in `staged`, and whether it starts inside the
  /// row (a partial chunk is staged whole: its lanes outside the row are
  /// zeros and the region holds whole vectors).
  std::pair<Value, Value> locateStaged(const StagedRow &staged,
                                       const RowLayout &row, Chunk chunk) {
    Value at = add(staged.base,
                   arith::DivUIOp::create(b, chunk.start, index(vector)));
    if (chunk.inside)
      return {at, Value()};
    Value starts = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                         chunk.start, index(row.length));
    return {at, starts};
  }

  void stage(const StagedRow &staged, const RowLayout &row, Chunk chunk,
             Value v) {
    auto [at, starts] = locateStaged(staged, row, chunk);
    auto store = [&] {
      memref::StoreOp::create(b, v, staged.buffer, at, /*nontemporal=*/false,
                              llvm::MaybeAlign(kStagedAlignment));
    };
    if (!starts)
      return store();
    ifThen(starts, store);
  }

  Value unstage(const StagedRow &staged, const RowLayout &row, Chunk chunk) {
    auto [at, starts] = locateStaged(staged, row, chunk);
    auto load = [&] {
      return SmallVector<Value>{memref::LoadOp::create(
          b, staged.buffer, at, /*nontemporal=*/false,
          llvm::MaybeAlign(kStagedAlignment))};
    };
    if (!starts)
      return load().front();
    return ifElseZeros(starts, load).front();
  }

  /// Runs `body` for each row of the CTA's thread group.
  void forEachFusedRow(const FusedRow &fused,
                       function_ref<void(const RowPosition &)> body) {
    int64_t groups = fused.groups;
    Value kernelRows = mul(indexArg("rows"), index(groups));
    forEachCtaRow([&](Value rowIndex) {
      RowPosition position;
      position.valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                             rowIndex, kernelRows);
      position.token = rowIndex;
      position.colBase = index(0);
      if (groups > 1) {
        position.token = arith::DivUIOp::create(b, rowIndex, index(groups));
        position.colBase =
            mul(arith::RemUIOp::create(b, rowIndex, index(groups)),
                index(fused.row.length));
      }
      body(position);
    });
  }

  /// Where the row at `position` begins in the 2-D buffer `buffer`.
  Value rowBase(const RowPosition &position, StringRef buffer) {
    return add(mul(position.token, stride(buffer)), position.colBase);
  }

  /// v = alpha * x + a, rounded to the stream type; x itself without `a`.
  Value prologue(const FusedRow &fused, Value x, Value a) {
    if (!a) // without an addend, v is the input as it is stored
      return x;
    Value v = toF32(x);
    if (fused.alpha != 1.0)
      v = mulf(v, isa<VectorType>(v.getType()) ? splatF32(fused.alpha)
                                               : constantF32(fused.alpha));
    return convert(addf(v, toF32(a)), fused.streamType);
  }

  /// v of one chunk, from input (and addend) at their row bases.
  Value loadPrologue(const FusedRow &fused, Chunk chunk, Value inputBase,
                     Value addendBase) {
    Value addend = arg("addend");
    auto load = [&](Value buffer, Value base) {
      return loadVector(buffer, base, chunk.start, fused.row.length,
                        chunk.inside);
    };
    return prologue(fused, load(arg("input"), inputBase),
                    addend ? load(addend, addendBase) : Value());
  }

  /// The pivot of mean_var sums: the row's first v (null otherwise). Every
  /// thread loads it: the sums of v - pivot then need no difference of
  /// large numbers.
  Value loadPivot(const FusedRow &fused, Value inputBase, Value addendBase) {
    if (fused.statistic != Statistic::mean_var)
      return {};
    Value addend = arg("addend");
    Value first = memref::LoadOp::create(b, arg("input"), inputBase);
    return toF32(prologue(
        fused, first,
        addend ? memref::LoadOp::create(b, addend, addendBase).getResult()
               : Value()));
  }

  /// Zeros for the per-thread sums of the statistic: sum(v^2) for rms and
  /// l2, sum(v - pivot) and sum((v - pivot)^2) for mean_var.
  SmallVector<Value> initialSums(const FusedRow &fused) {
    int64_t count = fused.statistic == Statistic::mean_var ? 2
                    : fused.statistic == Statistic::none   ? 0
                                                           : 1;
    return SmallVector<Value>(count, zero(VectorType::get({vector}, f32)));
  }

  /// Adds chunk `v` to `sums` (see initialSums).
  void accumulate(const FusedRow &fused, Chunk chunk, Value v, Value pivot,
                  MutableArrayRef<Value> sums) {
    Value vf = toF32(v);
    switch (fused.statistic) {
    case Statistic::rms:
    case Statistic::l2:
      sums[0] = addf(sums[0], mulf(vf, vf));
      break;
    case Statistic::mean_var: {
      Value d = maskOutside(fused.row, chunk, subf(vf, splat(pivot)));
      sums[0] = addf(sums[0], d);
      sums[1] = addf(sums[1], mulf(d, d));
      break;
    }
    case Statistic::none:
      break;
    }
  }

  /// The scale of the row from the row sums of its statistic.
  RowScale getRowScale(const FusedRow &fused, ArrayRef<Value> sums,
                       Value pivot) {
    RowScale result;
    result.pivot = pivot;
    double invLength = 1.0 / static_cast<double>(fused.row.length);
    switch (fused.statistic) {
    case Statistic::rms:
      result.scale = rsqrt(addf(mulf(sums[0], constantF32(invLength)),
                                constantF32(fused.eps)));
      break;
    case Statistic::l2:
      result.scale = rsqrt(addf(sums[0], constantF32(fused.eps)));
      break;
    case Statistic::mean_var: {
      // mean = pivot + centre; var = E[(v - pivot)^2] - centre^2.
      result.centre = mulf(sums[0], constantF32(invLength));
      Value variance = subf(mulf(sums[1], constantF32(invLength)),
                            mulf(result.centre, result.centre));
      variance = arith::MaximumFOp::create(b, variance, constantF32(0.0));
      result.scale = rsqrt(addf(variance, constantF32(fused.eps)));
      break;
    }
    case Statistic::none:
      break;
    }
    return result;
  }

  /// The f32 output of one chunk of v.
  Value normalize(const FusedRow &fused, const RowScale &scale, Value v,
                  const ChunkParams &params) {
    Value y = toF32(v);
    if (scale.centre)
      y = subf(subf(y, splat(scale.pivot)), splat(scale.centre));
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

  /// The epilogue operands of one chunk, loaded from global memory (rows too
  /// long to keep them in registers).
  ChunkParams loadChunkParams(const FusedRow &fused, Chunk chunk,
                              Value colBase, Value skipBase) {
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

  /// norm.row_allreduce of `values` over the threads of a row.
  SmallVector<Value> allReduce(ValueRange values) {
    if (values.empty())
      return {};
    return SmallVector<Value>(
        RowAllReduceOp::create(b, values, static_cast<uint64_t>(threads))
            .getResults());
  }

  ImplicitLocOpBuilder &b;
  const KernelSignature &sig;
  Type f32;
  int64_t vector, threads;
  llvm::StringMap<Value> args;
  DenseMap<Value, int64_t> alignments;
  Value bid, lane, slot;
};

//===----------------------------------------------------------------------===//
// norm.fused_row
//===----------------------------------------------------------------------===//

void KernelBuilder::build(FusedRowOp op) {
  FusedRow fused(op, vector, threads);
  RowStorage storage = ::norm::getRowStorage(op, sig);
  if (storage != RowStorage::Registers)
    return buildLongRows(fused, storage);
  const RowLayout &row = fused.row;
  Value input = arg("input"), addend = arg("addend"), skip = arg("skip");

  // Parameters of the whole row are the same for every row of the CTA: load
  // them once. GroupNorm rows are groups of channels, each with its own
  // parameters, loaded per row (any row's channels exist, valid or not).
  // Either way before the reduction, so that the loads overlap it.
  ParamChunks ctaParams;
  if (op.getGroups() == 1)
    ctaParams = loadParams(row, op, index(0));

  forEachFusedRow(fused, [&](const RowPosition &position) {
    ParamChunks params = op.getGroups() > 1
                             ? loadParams(row, op, position.colBase)
                             : ctaParams;

    // 1. The row into registers, and its partial sums.
    SmallVector<Value> loaded = ifElseZeros(position.valid, [&] {
      Value inputBase = rowBase(position, "input");
      Value addendBase = addend ? rowBase(position, "addend") : Value();
      SmallVector<Value> values;
      for (int64_t c = 0; c < row.chunks; ++c)
        values.push_back(prologue(
            fused, loadChunk(row, input, inputBase, c),
            addend ? loadChunk(row, addend, addendBase, c) : Value()));
      // The residual stream is complete before the reduction: storing it now
      // overlaps the writes with the exchange.
      if (Value residual = arg("residual_out"))
        storeRow(row, values, residual, rowBase(position, "residual_out"));
      SmallVector<Value> out = values;
      if (skip)
        llvm::append_range(out, loadRow(row, skip, rowBase(position, "skip")));
      Value pivot = loadPivot(fused, inputBase, addendBase);
      SmallVector<Value> sums = initialSums(fused);
      for (auto [c, v] : llvm::enumerate(values))
        accumulate(fused, {chunkStart(c), row.isFull(c)}, v, pivot, sums);
      if (pivot)
        out.push_back(pivot);
      for (Value sum : sums)
        out.push_back(reduce(sum));
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
    Value pivot =
        fused.statistic == Statistic::mean_var ? take(1).front() : Value();

    // 2. One exchange for all sums of the row.
    SmallVector<Value> sums = allReduce(cursor);

    // 3. Normalize, scale, store.
    ifThen(position.valid, [&] {
      RowScale scale = getRowScale(fused, sums, pivot);
      auto at = [](ArrayRef<Value> chunks, int64_t c) {
        return chunks.empty() ? Value() : chunks[c];
      };
      SmallVector<Value> outputs;
      for (int64_t c = 0; c < row.chunks; ++c)
        outputs.push_back(normalize(
            fused, scale, values[c],
            {at(params.weight, c), at(params.bias, c), at(params.mean, c),
             at(params.invStd, c), at(skipChunks, c)}));
      storeRow(row, outputs, arg("output"), rowBase(position, "output"));
    });
  });
}

// Rows whose shares do not fit in registers: the same three steps, each a
// loop over the thread's chunks. Parameters are loaded per chunk in step 3.
void KernelBuilder::buildLongRows(const FusedRow &fused, RowStorage storage) {
  const RowLayout &row = fused.row;
  Value addend = arg("addend"), skip = arg("skip");
  Value residual = arg("residual_out");
  bool twoSteps = fused.statistic != Statistic::none;

  // Shared: one region per row the CTA works on at once, in the dynamic
  // shared memory of the launch (sharedBytes of the signature).
  StagedRow staged;
  if (storage == RowStorage::Shared)
    staged = createStagedRow(fused);
  // Streamed rows take v back from residual_out when it holds v exactly
  // (one buffer to read instead of two; residual_out is no readonly
  // argument, so these loads stay coherent with the thread's own stores).
  bool readBack =
      storage == RowStorage::Streamed && residual && twoSteps &&
      elementOf(residual) == fused.streamType;

  forEachFusedRow(fused, [&](const RowPosition &position) {
    // 1. Read the row once: its partial sums, v staged or stored.
    SmallVector<Value> partial;
    if (twoSteps)
      partial = ifElseZeros(position.valid, [&] {
        Value inputBase = rowBase(position, "input");
        Value addendBase = addend ? rowBase(position, "addend") : Value();
        Value residualBase =
            residual ? rowBase(position, "residual_out") : Value();
        Value pivot = loadPivot(fused, inputBase, addendBase);
        SmallVector<Value> sums = forEachChunkGroup(
            row, initialSums(fused),
            [&](ArrayRef<Chunk> chunks, ValueRange carried) {
              SmallVector<Value> values;
              for (Chunk chunk : chunks)
                values.push_back(
                    loadPrologue(fused, chunk, inputBase, addendBase));
              SmallVector<Value> next(carried);
              for (auto [chunk, v] : llvm::zip(chunks, values)) {
                if (staged.buffer)
                  stage(staged, row, chunk, v);
                if (residual)
                  storeVector(convert(v, elementOf(residual)), residual,
                              residualBase, chunk.start, row.length,
                              chunk.inside);
                accumulate(fused, chunk, v, pivot, next);
              }
              return next;
            });
        SmallVector<Value> out;
        if (pivot)
          out.push_back(pivot);
        for (Value sum : sums)
          out.push_back(reduce(sum));
        return out;
      });
    Value pivot = fused.statistic == Statistic::mean_var ? partial.front()
                                                         : Value();

    // 2. One exchange for all sums of the row.
    SmallVector<Value> sums =
        allReduce(ArrayRef<Value>(partial).drop_front(pivot ? 1 : 0));

    // 3. v back, normalize, scale, store.
    ifThen(position.valid, [&] {
      RowScale scale = getRowScale(fused, sums, pivot);
      bool fromInput = !staged.buffer && !readBack;
      Value inputBase = fromInput ? rowBase(position, "input") : Value();
      Value addendBase =
          fromInput && addend ? rowBase(position, "addend") : Value();
      Value residualBase = residual && (readBack || !twoSteps)
                               ? rowBase(position, "residual_out")
                               : Value();
      Value skipBase = skip ? rowBase(position, "skip") : Value();
      Value output = arg("output");
      Value outputBase = rowBase(position, "output");
      forEachChunkGroup(
          row, {}, [&](ArrayRef<Chunk> chunks, ValueRange) {
            SmallVector<Value> values;
            SmallVector<ChunkParams> params;
            for (Chunk chunk : chunks) {
              if (staged.buffer)
                values.push_back(unstage(staged, row, chunk));
              else if (readBack)
                values.push_back(loadVector(residual, residualBase,
                                            chunk.start, row.length,
                                            chunk.inside));
              else
                values.push_back(
                    loadPrologue(fused, chunk, inputBase, addendBase));
              params.push_back(
                  loadChunkParams(fused, chunk, position.colBase, skipBase));
            }
            for (auto [chunk, v, chunkParams] :
                 llvm::zip(chunks, values, params)) {
              Value y = normalize(fused, scale, v, chunkParams);
              storeVector(convert(y, elementOf(output)), output, outputBase,
                          chunk.start, row.length, chunk.inside);
              if (residual && !twoSteps)
                storeVector(convert(v, elementOf(residual)), residual,
                            residualBase, chunk.start, row.length,
                            chunk.inside);
            }
            return SmallVector<Value>();
          });
    });
  });
}

//===----------------------------------------------------------------------===//
// norm.qk_norm_prologue
//===----------------------------------------------------------------------===//

void KernelBuilder::build(QKNormPrologueOp op) {
  int64_t headDim = op.getHeadDim(), qHeads = op.getNumQHeads();
  int64_t heads = qHeads + op.getNumKvHeads();
  RowLayout row(headDim, vector, threads);
  bool l2 = op.getKind() == QKNormKind::l2;
  double eps = op.getEps().convertToDouble();

  // Both weights stay in registers; each row picks its own.
  SmallVector<Value> qWeight, kWeight;
  if (Value w = arg("q_weight"))
    qWeight = loadRow(row, w, index(0));
  if (Value w = arg("k_weight"))
    kWeight = loadRow(row, w, index(0));

  Value qkv = arg("qkv");
  Value kernelRows = mul(indexArg("rows"), index(heads));
  forEachCtaRow([&](Value rowIndex) {
    Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowIndex,
                                        kernelRows);
    Value token = arith::DivUIOp::create(b, rowIndex, index(heads));
    Value head = arith::RemUIOp::create(b, rowIndex, index(heads));
    Value isQ = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, head,
                                      index(qHeads));

    SmallVector<Value> loaded = ifElseZeros(valid, [&] {
      Value base = add(mul(token, stride("qkv")), mul(head, index(headDim)));
      SmallVector<Value> out = loadRow(row, qkv, base);
      Value squares = zero(VectorType::get({vector}, f32));
      for (Value x : out) {
        Value xf = toF32(x);
        squares = addf(squares, mulf(xf, xf));
      }
      out.push_back(reduce(squares));
      return out;
    });
    SmallVector<Value> sums = allReduce(loaded.back());

    ifThen(valid, [&] {
      Value sum = sums[0];
      if (!l2)
        sum = mulf(sum, constantF32(1.0 / static_cast<double>(headDim)));
      Value scale = splat(rsqrt(addf(sum, constantF32(eps))));
      SmallVector<Value> outputs;
      for (int64_t c = 0; c < row.chunks; ++c) {
        Value y = mulf(toF32(loaded[c]), scale);
        if (!qWeight.empty() || !kWeight.empty()) {
          Value wq = qWeight.empty() ? splatF32(1.0) : toF32(qWeight[c]);
          Value wk = kWeight.empty() ? splatF32(1.0) : toF32(kWeight[c]);
          y = mulf(y, arith::SelectOp::create(b, isQ, wq, wk));
        }
        outputs.push_back(y);
      }
      ifThen(
          isQ,
          [&] {
            Value base = add(mul(token, stride("q")), mul(head, index(headDim)));
            storeRow(row, outputs, arg("q"), base);
          },
          [&] {
            Value kHead = arith::SubIOp::create(b, head, index(qHeads));
            Value base = add(mul(token, stride("k")), mul(kHead, index(headDim)));
            storeRow(row, outputs, arg("k"), base);
          });
    });
  });
}

//===----------------------------------------------------------------------===//
// norm.column_stats
//===----------------------------------------------------------------------===//

// A tile of `vector` adjacent columns is the kernel's "row": the T threads
// of a tile take every T-th input row, accumulate shifted sums (pivot: the
// first input row) in f32 registers, and reduce them with one
// norm.row_allreduce. No atomics: the result does not depend on scheduling.
void KernelBuilder::build(ColumnStatsOp op) {
  int64_t hidden = cast<RankedTensorType>(op.getInput().getType()).getDimSize(1);
  int64_t tiles = llvm::divideCeil(hidden, vector);
  bool ragged = hidden % vector != 0;
  Value input = arg("input");
  Value rows = indexArg("rows");
  Value inputStride = stride("input");
  VectorType f32Vector = VectorType::get({vector}, f32);

  forEachCtaRow([&](Value tile) {
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tile, index(tiles));
    Value column = mul(tile, index(vector));
    auto loadTile = [&](Value rowBase) {
      return toF32(loadVector(input, rowBase, column, hidden, !ragged));
    };

    SmallVector<Value> partial = ifElseZeros(valid, [&] {
      Value hasRows =
          arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, rows, index(0));
      Value pivot =
          ifElseZeros(hasRows, [&] { return SmallVector<Value>{loadTile(index(0))}; })
              .front();
      Value init = zero(f32Vector);
      auto loop = scf::ForOp::create(
          b, lane, rows, index(threads), ValueRange{init, init},
          [&](OpBuilder &nested, Location, Value r, ValueRange sums) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            Value d = subf(loadTile(mul(r, inputStride)), pivot);
            if (ragged)
              d = arith::SelectOp::create(b, tailMask(column, hidden), d,
                                          zero(f32Vector));
            scf::YieldOp::create(
                b, ValueRange{addf(sums[0], d), addf(sums[1], mulf(d, d))});
          });
      return SmallVector<Value>{pivot, loop.getResult(0), loop.getResult(1)};
    });

    SmallVector<Value> lanes;
    for (Value sum : ArrayRef<Value>(partial).drop_front())
      for (int64_t i = 0; i < vector; ++i)
        lanes.push_back(vector::ExtractOp::create(b, sum, i));
    SmallVector<Value> sums = allReduce(lanes);

    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                        index(0));
    ifThen(arith::AndIOp::create(b, valid, first), [&] {
      // n = 0 gives NaN statistics: an empty batch has none.
      Value count = arith::UIToFPOp::create(
          b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), rows));
      Value invCount = splat(arith::DivFOp::create(b, constantF32(1.0), count));
      auto gather = [&](ArrayRef<Value> scalars) {
        return vector::FromElementsOp::create(b, f32Vector, scalars).getResult();
      };
      Value centre = mulf(gather(ArrayRef(sums).take_front(vector)), invCount);
      Value meanSquare = mulf(gather(ArrayRef(sums).drop_front(vector)), invCount);
      Value variance = arith::MaximumFOp::create(
          b, subf(meanSquare, mulf(centre, centre)), zero(f32Vector));
      storeVector(addf(partial[0], centre), arg("mean"), index(0), column,
                  hidden, !ragged);
      storeVector(variance, arg("variance"), index(0), column, hidden, !ragged);
    });
  });
}

} // namespace

FailureOr<gpu::GPUFuncOp>
mlir::norm::buildKernel(OpBuilder &builder, Operation *kernelOp,
                        const KernelSignature &sig) {
  MLIRContext *context = builder.getContext();
  SmallVector<Type> inputs;
  for (const KernelParam &param : sig.params) {
    if (param.kind == KernelParam::Kind::Buffer)
      inputs.push_back(MemRefType::get(
          {kBufferExtent}, getMlirType(context, param.elementType)));
    else
      inputs.push_back(builder.getI64Type());
  }
  Location loc = kernelOp->getLoc();
  auto func = gpu::GPUFuncOp::create(builder, loc, sig.name,
                                     builder.getFunctionType(inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(sig.blockThreads), 1, 1}));
  for (auto [i, param] : llvm::enumerate(sig.params)) {
    if (param.kind != KernelParam::Kind::Buffer)
      continue;
    // noalias + readonly let inputs load through the non-coherent cache
    // (ld.global.nc); the alignment lets 16-byte accesses stay whole.
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                    builder.getUnitAttr());
    if (param.readOnly)
      func.setArgAttr(i, LLVM::LLVMDialect::getReadonlyAttrName(),
                      builder.getUnitAttr());
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    builder.getI64IntegerAttr(param.alignment));
  }

  ImplicitLocOpBuilder b(loc, builder.getContext());
  b.setInsertionPointToStart(&func.getBody().front());
  auto ret = gpu::ReturnOp::create(b);
  b.setInsertionPoint(ret);
  KernelBuilder kernel(b, func, sig);
  llvm::TypeSwitch<Operation *>(kernelOp)
      .Case<FusedRowOp, QKNormPrologueOp, ColumnStatsOp>(
          [&](auto op) { kernel.build(op); });
  return func;
}
