//===- Buffers.h - the buffers of a kernel, in ABI order --------*- C++ -*-===//
//
// One list of the buffers an operation's kernel takes: the kernel signature
// (its parameters), the dialect's kernel ops (their operands and results),
// the runtime's launch checks and the checkers all read it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_BUFFERS_H
#define NORM_COMPILER_MODEL_BUFFERS_H

#include "compiler/model/Operation.h"

#include <optional>
#include <string_view>
#include <vector>

namespace norm {

/// Every buffer a kernel may take. The values are those of the C API's
/// normjit_buffer.
enum class BufferSlot : int {
  Input,
  Addend,
  Skip,
  Weight,
  Bias,
  Mean,
  Variance,
  Output,
  ResidualOut,
  Qkv,
  QWeight,
  KWeight,
  Q,
  K,
  V,
  CuSeqlens,
  Lse,
  KCache,
  VCache,
  CacheSeqlens,
  Workspace,
  Semaphores,
  Positions,
  RopeTable,
  // Training.
  GradOutput,
  ResidualGrad,
  SavedMean,
  SavedRstd,
  GradInput,
  AddendGrad,
  WeightGradPartials,
  BiasGradPartials,
  /// The column sums of the partials: no kernel's buffer, but a backward
  /// launch's in libnormjit, which runs the column sums (getGradientSums).
  WeightGrad,
  BiasGrad,
  // FP8 outputs: the static scale and the per-token scales' upper bound
  // (f32 scalars), the per-token scales (tokens x 1 f32).
  OutputScale,
  ScaleUpperBound,
  OutputScales,
  // K-prepare's outputs: the normalized, rotated k heads and the copied v.
  KOut,
  VOut,
  /// A paged cache's block table (OpSpec::cacheBlockSize): i32, batch x
  /// max_blocks entries, sequence after sequence.
  BlockTables,
  /// An FP8 cache's f32 scales (OpSpec::fp8Cache): one, or one per kv head.
  KScale,
  VScale,
  /// A ragged block table's sequence offsets (OpSpec::pageIndptr): i32,
  /// batch + 1 (FlashInfer's kv_indptr).
  PageIndptr,
};
constexpr int kNumBufferSlots = 43;

/// "input", "residual_out", "q_weight", ...: the names of the kernel ops'
/// operands and results and of kernel parameters.
std::string_view getBufferSlotName(BufferSlot slot);
std::optional<BufferSlot> parseBufferSlot(std::string_view name);

/// One buffer of an operation's kernel.
struct BufferSpec {
  BufferSlot slot;
  ElementType type;
  /// Row length (2-D) or element count (1-D); 0 for a 1-D buffer whose
  /// length comes with the launch (attention's batch + 1 sequence offsets,
  /// decode's cache lengths and workspace: see getLaunchLength).
  int64_t cols;
  bool rows2D;  // rows x cols, with a row stride
  bool written; // an output
  /// Read and written in place (decode's KV cache): an operand of the
  /// kernel op whose new value is a result.
  bool updated = false;
  /// 2-D with rows of its own, not the launch's tokens: decode's caches
  /// (batch x cache_capacity) and the rope table (rope_table_rows).
  bool ownRows = false;
  /// Scratch the runtime owns (decode's split-KV partials and their
  /// semaphores), not a tensor of the graph.
  bool scratch = false;
  /// An in-place output (OpSpec::outputOver, residualOver): the input whose
  /// buffer a launch may pass for it, exactly the same rows.
  std::optional<BufferSlot> over;
};

/// The buffers of the kernel of `spec` in parameter order: the inputs
/// (norm.fused_row: input, addend, skip, weight, bias, mean, variance;
/// norm.qk_norm_prologue: qkv, q_weight, k_weight; norm.k_prepare: k, v,
/// k_weight, positions, rope_table; norm.column_stats:
/// input; norm.attention_kernel: q, k, v, q_weight, k_weight, cu_seqlens,
/// positions, rope_table; norm.attention_decode_kernel: q, k, v, q_weight,
/// k_weight, cu_seqlens, cache_seqlens, positions, rope_table; a paged
/// cache's block_tables (and, ragged, page_indptr) and an FP8 cache's
/// k_scale and v_scale follow cache_seqlens), then the
/// outputs (output, residual_out; q, k; k_out, v_out; mean, variance;
/// output, lse;
/// output, k_cache and v_cache (updated), workspace and semaphores
/// (scratch)). A forward row kernel with save_stats adds saved_mean
/// (mean_var) and saved_rstd, f32 rows of one value per group. A backward
/// row kernel (norm.fused_row_grad) takes input (the `v` its forward
/// normalized), grad_output, residual_grad (with residual_out), weight,
/// saved_mean (mean_var) and saved_rstd, and writes grad_input, addend_grad
/// (an addend scaled by alpha != 1) and weight_grad_partials and
/// bias_grad_partials (f32 rows of their own: getGradPartialRows). A
/// column sum (norm.column_sum) reads f32 input rows and writes an output
/// vector. An FP8 output's static scale (output_scale) and per-token
/// scales' bound (scale_ub), one f32 each, follow the row inputs; its
/// per-token scales (output_scales, one f32 a token row) follow
/// residual_out.
std::vector<BufferSpec> getBuffers(const OpSpec &spec);

/// The operation's parameters: weight, bias, mean, variance, q_weight,
/// k_weight, and an FP8 output's output_scale and scale_ub (calibrated
/// constants, as vLLM's static scales). Under programmatic dependent launch (TargetOptions::pdl) no
/// kernel before a kernel in its stream writes them while it starts (the
/// caller's promise), so they may be loaded before the wait and through
/// the non-coherent cache; the other inputs may still be being written by
/// that kernel then, and are read coherently, after the wait.
bool isParameterBuffer(BufferSlot slot);

/// The input slot of an in-place operand (none for RowOperand::None).
std::optional<BufferSlot> getRowOperandSlot(RowOperand operand);

/// Whether the row accesses of `buffer` move `vector` elements, so that the
/// 16-byte rule and the widest vector apply to it: every 2-D buffer but
/// the saved statistics (one f32 per group, stored one at a time) and the
/// f32 gradient partials (accumulators, stored in 16-byte parts) and the
/// rope table (a lane's pairs at a time, 16-byte aligned rows).
bool hasVectorRows(const BufferSpec &buffer);

/// One weight or bias gradient of a backward row kernel: the column sum
/// that reduces its f32 `partials` into the `gradient` vector.
struct GradientSum {
  BufferSlot partials;
  BufferSlot gradient;
  OpSpec columnSum; // hidden: the gradient's length; output: its type
};

/// The gradient sums of the backward row kernel `backward` (its weight's,
/// then its bias's), in launch order after it.
std::vector<GradientSum> getGradientSums(const OpSpec &backward);

/// Bytes all 2-D buffers move per logical row (per token for QK-Norm).
int64_t getBytesPerRow(const OpSpec &spec);

/// The most sequence offsets a launch's `cu_seqlens` may hold: they are i32,
/// and the grid (query heads x (query tiles + batch) CTAs) must stay
/// countable.
constexpr int64_t kMaxSequenceOffsets = int64_t(1) << 31;

/// The rule of the 1-D buffers whose length comes with the launch
/// (BufferSpec::cols 0: attention's `cu_seqlens`): batch + 1 offsets, at
/// least 2 (one sequence) and at most kMaxSequenceOffsets. InvalidArgument
/// naming `count` otherwise.
Status verifySequenceOffsetCount(int64_t count);

/// The sequences that `count` offsets delimit (the kernel's `batch`).
inline int64_t getBatchOfOffsets(int64_t count) { return count - 1; }

/// One decode launch: `rows` new tokens of `batch` sequences, a cache of
/// `cacheCapacity` rows per sequence, the keys split over `splits` CTAs.
struct DecodeShape {
  int64_t rows = 0, batch = 0, cacheCapacity = 0, splits = 1;
};

/// The most rows of a rope table (positions are i32).
constexpr int64_t kMaxRopeTableRows = int64_t(1) << 31;

/// The query tiles an attention grid counts per head (prefill) or kv head
/// (decode): each sequence's query rows (tokens x `group` heads, token-major)
/// in tiles of `rowsPerCta`, the last partial, so ceil(rows x group /
/// rowsPerCta) + batch at most, the bound the grid uses.
inline int64_t getQueryTiles(int64_t rows, int64_t group, int64_t rowsPerCta,
                             int64_t batch) {
  return (rows * group + rowsPerCta - 1) / rowsPerCta + batch;
}

/// The query tiles with rows of a decode launch per kv head, as far as the
/// host knows them: max(batch, ceil(rows x group / rowsPerCta)), exact
/// where each sequence's new rows fit one tile (one token, or a few, a
/// sequence: decode), at most the real count otherwise; the grid's spare
/// tiles (getDecodeTiles) do no work and are not counted.
int64_t getDecodeWorkTiles(const OpSpec &spec, int64_t rowsPerCta,
                           const DecodeShape &shape);

/// getQueryTiles of a decode launch, whose rows are the query heads of one
/// kv head.
int64_t getDecodeTiles(const OpSpec &spec, int64_t rowsPerCta,
                       const DecodeShape &shape);

/// The elements of a 1-D buffer whose length comes with the launch
/// (BufferSpec::cols 0): cu_seqlens batch + 1, cache_seqlens batch, a
/// paged cache's block_tables batch x (cacheCapacity / block size) (a
/// ragged table's at most; its page_indptr batch + 1),
/// positions one per token (`rows`); decode's
/// workspace splits x rows x heads x (head_dim + 1) f32 (each split's
/// normalized output row and its log2-sum-exp) and its semaphores, one i32
/// per query tile and kv head, zero before the first launch (every launch
/// leaves them zero).
int64_t getLaunchLength(const OpSpec &spec, BufferSlot slot,
                        int64_t rowsPerCta, const DecodeShape &shape);

/// The most CTAs over which a decode launch splits a sequence's keys (each
/// split of a query tile runs the combine's loop over all of them).
constexpr int64_t kMaxDecodeSplits = 64;

} // namespace norm

#endif // NORM_COMPILER_MODEL_BUFFERS_H
