//===- KernelIR.h - the vocabulary of kernel programs -----------*- C++ -*-===//
//
// What every kernel emitter is built from: values, control flow with
// uniform bounds, vector accesses that stay inside a row (whole 16-byte
// vectors inside it, masked ones on its ragged end), the chunks of a row a
// thread owns, and the one collective, norm.row_allreduce. Only gpu
// thread/block ids, arith, math, vector, scf, memref and norm ops: the GPU
// lowering and the host execution path both run the result.
//
// Thread `lane` owns chunks c = 0..C-1 of `vector` elements starting at
// (c * T + lane) * vector. Chunks that lie inside the row for every lane are
// plain vector accesses; the last chunks test the lane's position and fall
// back to a masked access for a partial vector, so any row length works and
// nothing past the row is touched.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_KERNELIR_H
#define NORM_PASSES_KERNELIR_H

#include "compiler/model/KernelModel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::norm {

/// How the threads of a row share it.
struct RowLayout {
  RowLayout(int64_t length, int64_t vector, int64_t threads)
      : length(length), vector(vector), threads(threads),
        chunks((length + threads * vector - 1) / (threads * vector)) {}

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

/// A thread's share of a mean_var statistic: how many of the row's elements
/// it holds, their mean and the sum of their squared deviations from that
/// mean (f32 scalars). Deviations from the thread's own mean, combined with
/// Chan et al.'s formula, keep the variance exact to rounding where sums of
/// v - v[0] or E[v^2] - mean^2 cancel (a row with one outlier channel).
struct Moments {
  Value count, mean, m2;
};

/// Values and branches at a builder's insertion point: what every emitter
/// builds with, a whole kernel's (KernelBuilder) or a building block's that
/// kernels share (the Hopper key/value loop).
class ValueBuilder {
public:
  explicit ValueBuilder(ImplicitLocOpBuilder &b) : b(b), f32(b.getF32Type()) {}

protected:
  Value index(int64_t value);
  Value constantF32(double value);
  Value zero(Type type);
  // Index arithmetic folds as it goes (x + 0, x * 1, constants).
  Value add(Value x, Value y);
  Value mul(Value x, Value y);
  Value addf(Value x, Value y);
  Value subf(Value x, Value y);
  Value mulf(Value x, Value y);
  void ifThen(Value cond, function_ref<void()> then,
              function_ref<void()> otherwise = nullptr);
  /// Values that `then` computes when `cond` holds, zeros otherwise.
  SmallVector<Value> ifElseZeros(Value cond,
                                 function_ref<SmallVector<Value>()> then);
  /// Values that `then` computes when `cond` holds, `otherwise` (of the
  /// same types) when it does not.
  SmallVector<Value> ifElse(Value cond, function_ref<SmallVector<Value>()> then,
                            ValueRange otherwise);
  /// Values that `then` computes when `cond` holds, `otherwise` (of the
  /// same types) when it does not, each in its own branch.
  SmallVector<Value> ifElse(Value cond, function_ref<SmallVector<Value>()> then,
                            function_ref<SmallVector<Value>()> otherwise);

  ImplicitLocOpBuilder &b;
  Type f32;
};

/// Emits the body of one kernel with the ABI of `sig`: derive an emitter
/// per kernel kind from it.
class KernelBuilder : public ValueBuilder {
public:
  KernelBuilder(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                const ::norm::KernelSignature &sig);

protected:
  //===--- Values ---------------------------------------------------------===//

  /// x / y, approximate (afn): div.approx.f32 on the GPU (2 ulp, no slow
  /// path); for the means of counts, not for values a user sees.
  Value divideApprox(Value x, Value y);
  /// Approximate (afn): rsqrt.approx.f32 on the GPU.
  Value rsqrt(Value x);
  /// `scalar` in every lane of a `vector`-wide f32 vector.
  Value splat(Value scalar);
  Value splatF32(double value);
  /// Sum of the elements of an f32 vector.
  Value reduce(Value v);
  /// `v` (scalar or vector) converted to `element` (round to nearest even;
  /// f16 <-> bf16 through f32, as the unfused graph converts).
  Value convert(Value v, Type element);
  Value toF32(Value v) { return convert(v, f32); }

  /// The parameter named `name` in the signature (null if it has none).
  Value arg(StringRef name) { return args.lookup(name); }
  /// An i64 argument (rows, strides) as an index.
  Value indexArg(StringRef name);
  Value stride(StringRef buffer) { return indexArg((buffer + "_stride").str()); }
  Type elementOf(Value buffer);
  VectorType vectorOf(Value buffer);
  /// What the signature promises for the buffer's pointer and row stride.
  llvm::MaybeAlign alignmentOf(Value buffer) {
    return llvm::MaybeAlign(alignments.lookup(buffer));
  }

  //===--- Control flow ---------------------------------------------------===//

  /// Runs `body` for each row this thread's group works on: one or, when a
  /// CTA handles more rows than it holds at once, a loop with uniform bounds
  /// (every thread reaches the collectives of the body).
  void forEachCtaRow(function_ref<void(Value row)> body);
  /// forEachCtaRow threading `carried` through the rows in order (the
  /// accumulators of a backward kernel); returns the final values. With a
  /// persistent grid (KernelSignature::maxGridX) the CTA loops over its
  /// groups of concurrent rows, grid.x apart.
  SmallVector<Value> forEachCtaRow(
      ValueRange carried,
      function_ref<SmallVector<Value>(Value row, ValueRange)> body);

  /// The sequence that holds token `token` (index) of a varlen batch of
  /// `batch` sequences (index) whose i32 offsets are `offsets`: the last b
  /// with offsets[b] <= token (so an empty sequence never holds one), by a
  /// binary search of ceil(log2(batch)) dependent loads.
  Value findSequence(Value offsets, Value batch, Value token);
  /// The last b in [0, count) with keyOf(b) <= target (index values), for a
  /// non-decreasing keyOf with keyOf(0) <= target: an `arity`-way search,
  /// ceil(log_arity(count)) rounds of arity - 1 independent keys (a binary
  /// search by default).
  Value findLast(Value count, function_ref<Value(Value)> keyOf, Value target,
                 int64_t arity = 2);

  /// A sequence's rows of a KV cache: its positions (`capacity`) and where
  /// they start: its first row (contiguous: seq x capacity) or, paged
  /// (OpSpec::cacheBlockSize), its first `block_tables` entry (vLLM's: seq x
  /// capacity / blockSize, capacity = `cache_capacity`; ragged
  /// (OpSpec::pageIndptr): page_indptr[seq], capacity = its pages x
  /// blockSize).
  struct SequenceCache {
    Value start, capacity;
    /// A ragged table: an entry past the sequence's is not loaded (it may
    /// lie past the table).
    bool ragged = false;
  };
  SequenceCache getSequenceCache(const ::norm::OpSpec &spec, Value seq);
  /// The row of position `position` (index, below `cache.capacity`) in a KV
  /// cache, and whether it is the sequence's own (i1; null: always). Paged,
  /// an entry outside [0, `cache_blocks`) (unset, -1) is not, and its row is
  /// then page 0's, in bounds for a read. With `inside` (i1), positions
  /// where it fails may lie past the capacity: a ragged table is not read
  /// for them (its entries past the sequence's pages are another's or past
  /// its end), and their row is not the sequence's own.
  std::pair<Value, Value> getCacheRow(int64_t blockSize,
                                      const SequenceCache &cache,
                                      Value position, Value inside = {});

  /// Programmatic dependent launch (KernelSignature::pdl): waits for the
  /// grid before this one, then lets the next one start
  /// (norm.grid_dependency_wait, norm.launch_dependents). Every emitter
  /// calls it once, after its independent prologue: what it loads that no
  /// grid before it writes (the weights), or first.
  void waitForPredecessor();

  //===--- Memory ---------------------------------------------------------===//

  /// Elements [start, start + vector) of a row of `length` elements that
  /// begins at `rowBase` in `buffer`, zero where they leave the row.
  /// `inside`: the caller knows they lie inside.
  Value loadVector(Value buffer, Value rowBase, Value start, int64_t length,
                   bool inside);
  void storeVector(Value value, Value buffer, Value rowBase, Value start,
                   int64_t length, bool inside);
  /// Lanes [start, start + vector) that lie inside a row of `length`.
  Value tailMask(Value start, int64_t length);

  //===--- Rows -----------------------------------------------------------===//

  /// Where chunk `c` of this thread starts in its row.
  Value chunkStart(int64_t c);
  Value loadChunk(const RowLayout &row, Value buffer, Value rowBase, int64_t c);
  SmallVector<Value> loadRow(const RowLayout &row, Value buffer, Value rowBase);
  /// Stores chunk `c`, converted to the buffer's element type.
  void storeChunk(const RowLayout &row, Value chunk, Value buffer,
                  Value rowBase, int64_t c);
  /// Stores `chunks`, converted to the buffer's element type.
  void storeRow(const RowLayout &row, ArrayRef<Value> chunks, Value buffer,
                Value rowBase);
  /// `d` with the lanes outside the row zeroed (for chunks that may leave it).
  Value maskOutside(const RowLayout &row, Chunk chunk, Value d);
  /// Runs `body` over this thread's chunks of `row` in order, threading
  /// `carried` through: the chunks inside the row for every lane in an
  /// scf.for, `chunksAtOnce` at a time, the others after it (the last one
  /// may be partial). The loop is marked not to be unrolled (LLVM's
  /// `llvm.loop.unroll.disable`, `.pragma "nounroll"` for ptxas): the
  /// registers its body holds are what norm::getChunksInFlight counted.
  /// Returns the final carried values.
  SmallVector<Value> forEachChunkGroup(
      const RowLayout &row, int64_t chunksAtOnce, ValueRange carried,
      function_ref<SmallVector<Value>(ArrayRef<Chunk>, ValueRange)> body);

  /// mean_var of a row held in registers, from this thread's `chunks` of
  /// it and their `sum` (lanes outside the row zero): the row's mean from
  /// one exchange, then the sum of squared deviations from it from another
  /// (every thread of the CTA calls it). Returns {mean, m2}.
  std::pair<Value, Value> allReduceDeviations(const RowLayout &row,
                                              ArrayRef<Value> chunks,
                                              Value sum);
  /// Moments of no elements.
  Moments getZeroMoments();
  /// The moments of `values`, this thread's chunks `chunks` of `row` (any
  /// float type; lanes outside the row do not count): two passes over them.
  Moments getMoments(const RowLayout &row, ArrayRef<Chunk> chunks,
                     ArrayRef<Value> values);
  /// The moments of the elements of `x` and `y` together.
  Moments combineMoments(const Moments &x, const Moments &y);
  /// The mean and the sum of squared deviations of a row of `length`
  /// elements from every thread's moments (every thread of the CTA calls
  /// it): one exchange for the mean, one for sum(m2 + count * (mean_t -
  /// mean)^2), whose terms are all nonnegative.
  std::pair<Value, Value> allReduceMoments(const Moments &local,
                                           int64_t length);

  /// save_stats: the row's first thread stores `rstd` in saved_rstd and,
  /// where the kernel has it, `mean` in saved_mean, at column `column` (the
  /// group or head) of row `token`; nothing without saved_rstd.
  void saveStatistics(Value token, Value column, Value rstd, Value mean);

  /// norm.row_allreduce of `values` over the threads of a row.
  SmallVector<Value> allReduce(ValueRange values);

  //===--- Rotary embeddings ----------------------------------------------===//

  /// What the angles of a thread's pairs come from: their frequencies
  /// (theta), or the first pair of a table row and the table's rows.
  struct RopeAngles {
    VectorType pairType;
    Value frequency, firstPair, tableRows;
    llvm::MaybeAlign tableAlignment;
  };
  /// The angles of owner `lane + slot * threads` (of `owners`), which turns
  /// the pairType-many pairs from owner * that on; a table's rows of such
  /// pairs are `tableAlignment` aligned.
  RopeAngles prepareRopeAngles(const ::norm::OpSpec &spec, VectorType pairType,
                               int64_t owners, int64_t slot,
                               llvm::MaybeAlign tableAlignment);
  /// The cosines and sines of the pairs of `angles` at `position` (i32).
  std::pair<Value, Value> getRopeAngles(const ::norm::OpSpec &spec,
                                        const RopeAngles &angles,
                                        Value position);

  const ::norm::KernelSignature &sig;
  int64_t vector, threads;
  Value bid, lane, slot;

private:
  llvm::StringMap<Value> args;
  DenseMap<Value, int64_t> alignments;
};

} // namespace mlir::norm

#endif // NORM_PASSES_KERNELIR_H
