//===- FusedRowKernel.h - the kernel of norm.fused_row ----------*- C++ -*-===//
//
// Every row kernel has the same frame:
//
//   thread geometry   lane = tid % T (thread in the row), slot = tid / T (row
//                     of the CTA), CTA rows bid * rows_per_cta + it * CR + slot
//   per-CTA loads     parameters shared by all rows, before the row loop
//   for each row      1. if the row exists: load the row, prologue, partial
//                        sums
//                     2. norm.row_allreduce of all sums at once (every thread)
//                     3. if the row exists: epilogue and stores
//
// Threads keep their share of a row in registers where the CTA's registers
// hold it (norm::fitsInRegisters), the chunks unrolled (FusedRowKernel.cpp).
// Otherwise they loop over their chunks (norm::getChunksInFlight at a time) and
// keep the row elsewhere (norm::getRowStorage; LongRowKernel.cpp):
//   shared    step 1 stores v in dynamic shared memory as it accumulates the
//             sums, step 3 reads it back: global memory is read once;
//   streamed  step 3 reads the row again (v from residual_out when that holds
//             it exactly, else input and addend once more).
// Either way a thread reads back only the elements it wrote itself, in
// program order: no barrier or fence is needed between the steps.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_FUSEDROWKERNEL_H
#define NORM_PASSES_FUSEDROWKERNEL_H

#include "passes/KernelIR.h"

namespace mlir::norm {

/// What the kernel code of a norm.fused_row reads of its operation.
struct FusedRow {
  FusedRow(MLIRContext *context, const ::norm::OpSpec &spec, int64_t vector,
           int64_t threads);

  ::norm::OpSpec spec;
  int64_t groups;
  RowLayout row;
  ::norm::Statistic statistic;
  /// The element type of v (norm::getStreamType) and of the output.
  Type streamType, outputType;
  double alpha, eps, offset;
  /// FP8 outputs: how they are scaled (OutputScale::None otherwise).
  ::norm::OutputScale outputScale;
};

/// Where one row of a norm.fused_row kernel lies.
struct RowPosition {
  Value valid;   // whether the row exists
  Value token;   // its row in the 2-D buffers
  Value colBase; // its first channel (GroupNorm rows are groups)
  Value group;   // its group within the token (0 without groups)
};

/// What normalizes a row: `scale` (null without a statistic) and, for
/// mean_var, the row's `mean`.
struct RowScale {
  Value scale, mean;
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

class FusedRowEmitter : public KernelBuilder {
public:
  FusedRowEmitter(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                  const ::norm::KernelSignature &sig,
                  const ::norm::OpSpec &spec)
      : KernelBuilder(b, func, sig),
        fused(b.getContext(), spec, sig.launch.vector,
              sig.launch.threadsPerRow) {}

  /// The kernel, with its rows kept where the signature's target put them.
  void emit();

private:
  /// Rows in registers.
  void emitRegisterRows();
  /// The gradients of rows in registers (BackwardRowKernel.cpp).
  void emitBackwardRows();

  /// Rows in shared memory or streamed (LongRowKernel.cpp); `inverse`: the
  /// reciprocal of a static FP8 scale.
  void emitLongRows(::norm::RowStorage storage, Value inverse);

  /// This thread group's row of one staged buffer in shared memory, as
  /// whole vectors of `vector` elements. Accessed with memref.load/store of
  /// vectors, which the NVVM conversion lowers: vector.load on workgroup
  /// memory would meet convert-vector-to-llvm first, which cannot map that
  /// address space.
  struct StagedRow {
    Value buffer; // memref<concurrent rows x row vectors x vector<V x T>>
    Value base;   // the first vector of this thread group's row
    Type element;
  };
  /// The regions of the dynamic shared memory, one per staged buffer
  /// (norm::getStagedTypes: v, and grad_output for a backward kernel), each
  /// holding the rows the CTA works on at once.
  SmallVector<StagedRow> createStagedRows();
  int64_t getStagedVectorBytes(const StagedRow &staged);
  /// Where chunk `chunk` lies in `staged`, and whether it starts inside the
  /// row (a partial chunk is staged whole: its lanes outside the row are
  /// zeros and the region holds whole vectors).
  std::pair<Value, Value> locateStaged(const StagedRow &staged, Chunk chunk);
  void stage(const StagedRow &staged, Chunk chunk, Value v);
  Value unstage(const StagedRow &staged, Chunk chunk);

  /// Runs `body` for each row of the CTA's thread group.
  void forEachFusedRow(function_ref<void(const RowPosition &)> body);
  /// Where the row at `position` begins in the 2-D buffer `buffer`.
  Value rowBase(const RowPosition &position, StringRef buffer);

  /// v = alpha * x + a, rounded to the stream type; x itself without `a`.
  Value prologue(Value x, Value a);
  /// v of one chunk, from input (and addend) at their row bases.
  Value loadPrologue(Chunk chunk, Value inputBase, Value addendBase);
  /// Zeros for the per-thread sums of the statistic: sum(v^2) for rms and
  /// l2 (a vector), the thread's Moments for mean_var (count, mean, m2).
  SmallVector<Value> initialSums();
  /// Adds this thread's chunks `chunks` of v to `sums` (see initialSums).
  void accumulate(ArrayRef<Chunk> chunks, ArrayRef<Value> values,
                  MutableArrayRef<Value> sums);
  /// The thread's sums as scalars, ready for the exchange.
  SmallVector<Value> finishSums(ArrayRef<Value> sums);
  /// The row's totals from every thread's finished sums (every thread of
  /// the CTA calls it): sum(v^2), or the mean and sum((v - mean)^2).
  SmallVector<Value> exchangeSums(ArrayRef<Value> sums);
  /// The scale of the row from its totals (exchangeSums).
  RowScale getRowScale(ArrayRef<Value> totals);
  /// The f32 output of one chunk of v.
  Value normalize(const RowScale &scale, Value v, const ChunkParams &params);

  /// FP8 outputs (FusedRowKernel.cpp). The reciprocal of the static scale,
  /// loaded once with the parameters (null for other outputs).
  Value loadInverseStaticScale();
  /// `y` scaled by `inverse` and saturated to the FP8 output's finite
  /// range (storing it rounds to nearest even); `y` itself for outputs of
  /// other types.
  Value quantize(Value y, Value inverse);
  /// Per-token scales: `amax` (a vector of f32 maxima) with |y| of `chunk`
  /// (its lanes outside the row do not count).
  Value accumulateAmax(Chunk chunk, Value y, Value amax);
  /// The row's amax over its threads (every thread of the CTA calls it).
  Value reduceAmax(Value amax);
  /// The per-token scale of row `token` from its amax: the row's first
  /// thread stores it in output_scales; returns its reciprocal.
  Value storeTokenScale(Value token, Value amax);

  /// Weight, bias and per-channel statistics of the channels at `colBase`,
  /// for rows in registers.
  ParamChunks loadParams(Value colBase);
  /// The epilogue operands of one chunk, loaded from global memory (rows too
  /// long to keep them in registers).
  ChunkParams loadChunkParams(Chunk chunk, Value colBase, Value skipBase);

  FusedRow fused;
};

} // namespace mlir::norm

#endif // NORM_PASSES_FUSEDROWKERNEL_H
