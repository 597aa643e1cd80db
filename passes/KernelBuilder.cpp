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

namespace {

/// Static extent of the 1-D memrefs that stand for kernel buffers: the
/// bare-pointer calling convention needs static shapes, and no allocation
/// comes near 2^40 elements.
constexpr int64_t kBufferExtent = int64_t(1) << 40;

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

/// Per-channel parameters of a row, `vector`-wide chunks in storage type
/// (register-lean), except `invStd` (f32).
struct ParamChunks {
  SmallVector<Value> weight, bias, mean, invStd;
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
  Value maskOutside(const RowLayout &row, int64_t c, Value d) {
    if (row.isFull(c))
      return d;
    return arith::SelectOp::create(b, tailMask(chunkStart(c), row.length),
                                   d, zero(d.getType()));
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
  int64_t groups = op.getGroups();
  RowLayout row(op.getHidden() / groups, vector, threads);
  Statistic statistic = op.getStatistic();
  Type streamType = op.getStreamElementType();
  Type outputType = getElementTypeOrSelf(op.getOutput().getType());
  double alpha = op.getAlpha().convertToDouble();
  double eps = op.getEps().convertToDouble();
  double offset = op.getWeightOffset().convertToDouble();
  Value input = arg("input"), addend = arg("addend"), skip = arg("skip");

  // Parameters of the whole row are the same for every row of the CTA: load
  // them once. GroupNorm rows are groups of channels, each with its own
  // parameters, loaded per row (any row's channels exist, valid or not).
  // Either way before the reduction, so that the loads overlap it.
  ParamChunks ctaParams;
  if (groups == 1)
    ctaParams = loadParams(row, op, index(0));

  Value kernelRows = mul(indexArg("rows"), index(groups));
  forEachCtaRow([&](Value rowIndex) {
    Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowIndex,
                                        kernelRows);
    Value token = rowIndex, colBase = index(0);
    if (groups > 1) {
      token = arith::DivUIOp::create(b, rowIndex, index(groups));
      colBase = mul(arith::RemUIOp::create(b, rowIndex, index(groups)),
                    index(row.length));
    }
    ParamChunks params =
        groups > 1 ? loadParams(row, op, colBase) : ctaParams;
    auto rowBase = [&](StringRef buffer) {
      return add(mul(token, stride(buffer)), colBase);
    };
    // v = alpha * input + addend, rounded to the stream type.
    auto prologue = [&](Value x, Value a) {
      if (!a) // without an addend, v is the input as it is stored
        return x;
      Value v = toF32(x);
      if (alpha != 1.0)
        v = mulf(v, isa<VectorType>(v.getType()) ? splatF32(alpha)
                                                 : constantF32(alpha));
      return convert(addf(v, toF32(a)), streamType);
    };

    // 1. The row into registers, and its partial sums.
    SmallVector<Value> loaded = ifElseZeros(valid, [&] {
      Value inputBase = rowBase("input");
      Value addendBase = addend ? rowBase("addend") : Value();
      SmallVector<Value> values;
      for (int64_t c = 0; c < row.chunks; ++c)
        values.push_back(prologue(
            loadChunk(row, input, inputBase, c),
            addend ? loadChunk(row, addend, addendBase, c) : Value()));
      SmallVector<Value> out = values;
      if (skip)
        llvm::append_range(out, loadRow(row, skip, rowBase("skip")));

      switch (statistic) {
      case Statistic::rms:
      case Statistic::l2: {
        Value squares = zero(VectorType::get({vector}, f32));
        for (Value v : values) {
          Value vf = toF32(v);
          squares = addf(squares, mulf(vf, vf));
        }
        out.push_back(reduce(squares));
        break;
      }
      case Statistic::mean_var: {
        // Sums of v - pivot, with the row's first value as pivot: the
        // variance then needs no difference of large numbers.
        Value first = memref::LoadOp::create(b, input, inputBase);
        Value pivot = toF32(prologue(
            first, addend ? memref::LoadOp::create(b, addend, addendBase)
                                .getResult()
                          : Value()));
        Value shifted = zero(VectorType::get({vector}, f32));
        Value squares = shifted;
        for (auto [c, v] : llvm::enumerate(values)) {
          Value d = maskOutside(row, c, subf(toF32(v), splat(pivot)));
          shifted = addf(shifted, d);
          squares = addf(squares, mulf(d, d));
        }
        out.push_back(pivot);
        out.push_back(reduce(shifted));
        out.push_back(reduce(squares));
        break;
      }
      case Statistic::none:
        break;
      }
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
    Value pivot = statistic == Statistic::mean_var ? take(1).front() : Value();

    // 2. One exchange for all sums of the row.
    SmallVector<Value> sums = allReduce(cursor);

    // 3. Normalize, scale, store.
    ifThen(valid, [&] {
      Value scale, centre;
      double invLength = 1.0 / static_cast<double>(row.length);
      switch (statistic) {
      case Statistic::rms:
        scale = rsqrt(addf(mulf(sums[0], constantF32(invLength)),
                           constantF32(eps)));
        break;
      case Statistic::l2:
        scale = rsqrt(addf(sums[0], constantF32(eps)));
        break;
      case Statistic::mean_var: {
        // mean = pivot + centre; var = E[(v - pivot)^2] - centre^2.
        centre = mulf(sums[0], constantF32(invLength));
        Value variance = subf(mulf(sums[1], constantF32(invLength)),
                              mulf(centre, centre));
        variance = arith::MaximumFOp::create(b, variance, constantF32(0.0));
        scale = rsqrt(addf(variance, constantF32(eps)));
        break;
      }
      case Statistic::none:
        break;
      }

      SmallVector<Value> outputs;
      for (int64_t c = 0; c < row.chunks; ++c) {
        Value y = toF32(values[c]);
        if (statistic == Statistic::mean_var)
          y = subf(subf(y, splat(pivot)), splat(centre));
        else if (!params.mean.empty())
          y = subf(y, toF32(params.mean[c]));
        if (scale)
          y = mulf(y, splat(scale));
        else if (!params.invStd.empty())
          y = mulf(y, params.invStd[c]);
        if (!params.weight.empty()) {
          Value w = toF32(params.weight[c]);
          if (offset != 0.0)
            w = addf(w, splatF32(offset));
          y = mulf(y, w);
        }
        if (!params.bias.empty())
          y = addf(y, toF32(params.bias[c]));
        // Sandwich: the normalized value is rounded before the add.
        if (skip)
          y = addf(toF32(convert(y, outputType)), toF32(skipChunks[c]));
        outputs.push_back(y);
      }
      storeRow(row, outputs, arg("output"), rowBase("output"));
      if (Value residual = arg("residual_out"))
        storeRow(row, values, residual, rowBase("residual_out"));
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
