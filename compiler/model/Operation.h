//===- Operation.h - one kernel's operation, and its rules ------*- C++ -*-===//
//
// The kernel model: plain C++ (no MLIR, no LLVM) that the dialect's
// verifiers, the passes, libnormjit and the checkers all call, so that every
// rule about an operation is stated once. An OpSpec describes what one
// kernel computes; each kernel op of the norm dialect describes itself as
// one (NormKernelOpInterface::getOpSpec).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_OPERATION_H
#define NORM_COMPILER_MODEL_OPERATION_H

#include "compiler/model/ElementType.h"
#include "compiler/model/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

/// What a kernel reduces each row to: `rms` (root mean square), `mean_var`
/// (mean and biased variance), `l2` (Euclidean norm) or `none`.
enum class Statistic { RMS, MeanVar, L2, None };

/// "rms", "mean_var", "l2", "none" (the dialect's spelling).
std::string_view getStatisticName(Statistic statistic);
std::optional<Statistic> parseStatisticName(std::string_view name);

/// Rotary position embeddings of attention's q and k rows, after the
/// QK-Norm: `neox` rotates pairs (d, d + rotary_dim / 2) (GPT-NeoX, Llama,
/// Qwen, Gemma), `gptj` pairs (2i, 2i + 1) (GPT-J, interleaved); pair i
/// turns by pos * theta^(-2i / rotary_dim), pos the token's index within its
/// sequence (or its entry in a positions buffer), or by the angle whose
/// cosine and sine a table gives; elements from rotary_dim on stay as they
/// are.
enum class RopeStyle { None, NeoX, GptJ };

/// "none", "neox", "gptj" (the dialect's spelling).
std::string_view getRopeStyleName(RopeStyle style);
std::optional<RopeStyle> parseRopeStyleName(std::string_view name);

/// The row input that an output of a forward row kernel may overwrite in
/// place: none, `input` or `addend`.
enum class RowOperand { None, Input, Addend };

/// "none", "input", "addend" (the dialect's spelling).
std::string_view getRowOperandName(RowOperand operand);
std::optional<RowOperand> parseRowOperandName(std::string_view name);

/// How a forward row kernel quantizes an FP8 output (vLLM's
/// rms_norm_static_fp8_quant and rms_norm_dynamic_per_token_quant): `none`
/// for outputs of f32/f16/bf16; `static` divides every output by the f32
/// scalar `output_scale` (a device buffer); `per_token` takes each token
/// row's scale from its amax, scale = max(min(amax, scale_ub) / fp8_max,
/// 1 / (fp8_max * 512)), and writes it to `output_scales` (tokens x 1 f32)
/// beside the row. Either way q = fp8(y * (1 / scale)), rounded to nearest
/// even and saturated to the largest finite value (cvt.rn.satfinite); y is
/// the normalized f32 value, never rounded to another type first.
enum class OutputScale { None, Static, PerToken };

/// "none", "static", "per_token" (the dialect's spelling).
std::string_view getOutputScaleName(OutputScale scale);
std::optional<OutputScale> parseOutputScaleName(std::string_view name);

/// vLLM's smallest per-token scale is 1 / (fp8_max * 512): a row of zeros
/// still divides by a finite scale.
constexpr double kMinScaleFactor = 512.0;

/// One operation: what one kernel computes.
struct OpSpec {
  enum class Kind {
    RMSNorm,            // norm.fused_row <rms>
    LayerNorm,          // norm.fused_row <mean_var>
    L2Norm,             // norm.fused_row <l2>
    GroupNorm,          // norm.fused_row <mean_var>, groups > 1
    BatchNormInference, // norm.fused_row <none> with mean/variance
    Elementwise,        // norm.fused_row <none>: residual add and/or cast
    BatchNormStats,     // norm.column_stats
    QKNormPrologue,     // norm.qk_norm_prologue
    Attention,          // norm.attention_kernel (prefill, variable length)
    AttentionDecode,    // norm.attention_decode_kernel (new tokens + cache)
    KeyPrepare,         // norm.k_prepare (k heads normalized once)
    ColumnSum,          // norm.column_sum (f32 partial rows -> one row)
  };
  Kind kind = Kind::RMSNorm;
  int64_t hidden = 0; // row length (head_dim for QK-Norm and attention)
  ElementType input = ElementType::bf16;
  ElementType output = ElementType::bf16;
  ElementType param = ElementType::bf16;     // weight and bias
  ElementType statsType = ElementType::bf16; // mean and variance (BatchNorm)
  ElementType addendType = ElementType::bf16;
  bool hasWeight = false;
  bool hasBias = false;
  bool hasAddend = false;          // v = alpha * input + addend
  bool writeResidual = false;      // store v (residual_out)
  bool f32Residual = false;        // normalize the unrounded f32 sum
  bool hasSkip = false;            // y = skip + norm(v) (Sandwich)
  ElementType skipType = ElementType::bf16;
  double eps = 1e-6;
  double alpha = 1.0;
  double weightOffset = 0.0;       // 1.0: Gemma's (1 + w)
  int64_t groups = 1;
  // QK-Norm prologue and attention:
  int64_t numQHeads = 0, numKvHeads = 0;
  /// rms, l2 or mean_var per head; attention: none without a QK-Norm.
  Statistic qkStatistic = Statistic::RMS;
  // Attention only (q, k, v and the output are `input`; weights `param`;
  // `eps` and `weightOffset` are the QK-Norm's; decode attends causally by
  // position and has neither `causal` nor `writeLse`):
  bool causal = false;
  double scale = 1.0;              // softmax(scale * q k^T)
  bool writeLse = false;           // the f32 log-sum-exp of each score row
  RopeStyle rope = RopeStyle::None;
  int64_t rotaryDim = 0;           // rotated elements per head row
  double ropeTheta = 10000.0;      // the base of the rotary frequencies
  /// Positions from a `positions` buffer (i32, one per token), not the
  /// token's index within its sequence (plus the cache length in decode).
  /// They turn the rotations only: the causal mask stays by index.
  bool ropePositions = false;
  /// Angles from a `rope_table` buffer, not rope_theta: f32 rows of
  /// rotary_dim, row p holding cos(p freq_i) at column i and sin(p freq_i)
  /// at rotary_dim / 2 + i (FlashInfer's and vLLM's cos_sin_cache), so any
  /// frequency scaling (linear, NTK, Llama 3, YaRN) is the caller's table.
  /// A position outside the table rotates its row to NaN.
  bool ropeTable = false;
  /// The rotation before the QK-Norm (Llama 4's L2 norm after RoPE), not
  /// after it: each rounded to the element type, as the graph stores them.
  bool ropeFirst = false;
  /// Attention: each head has its own QK-Norm weight (Command R+'s q_norm
  /// and k_norm of [heads, head_dim]): q_weight holds numQHeads rows of
  /// head_dim, k_weight numKvHeads, head after head; not one head_dim row
  /// that every head shares.
  bool qkWeightPerHead = false;
  /// Prefill attention: k holds keys already normalized and rotated (by
  /// norm.k_prepare, once per token and kv head, not once per query tile);
  /// the QK-Norm and rotary fields apply to q alone, and the weight is q's.
  bool keysPrepared = false;
  /// K-prepare: the v heads of each token are copied beside the normalized
  /// k heads (v_out), so that one launch writes both.
  bool copyValues = false;
  /// K-prepare: the keys and values go into a KV cache in place of k_out
  /// and v_out: new token i of sequence b (of cu_seqlens) to row b *
  /// capacity + cache_seqlens[b] + i of k_cache and v_cache (capacity = the
  /// caches' rows / batch; rows past it are dropped), at rotary position
  /// cache_seqlens[b] + i without `positions`: decode attention's append,
  /// for a prefill (or chunked prefill) step. Implies the values.
  bool writeCache = false;
  /// Decode attention and K-prepare into a cache: 0, each sequence owns
  /// contiguous cache rows (above); else the caches are pages of this many
  /// rows (vLLM's [num_blocks, block_size, kv_heads, head_dim], SGLang's
  /// pages of 1), and token p of sequence b is row block_tables[b *
  /// max_blocks + p / block_size] * block_size + p % block_size, max_blocks
  /// = the table's entries / batch (capacity = max_blocks * block_size). An
  /// entry outside [0, cache_blocks) is never written; reading it reads
  /// page 0 (in bounds). A power of two up to kMaxCacheBlockSize.
  int64_t cacheBlockSize = 0;
  /// A paged cache's table in FlashInfer's ragged form: sequence b's pages
  /// are block_tables[page_indptr[b] .. page_indptr[b + 1]) (kv_indices and
  /// kv_indptr), its capacity their count x block_size; token p is row
  /// block_tables[page_indptr[b] + p / block_size] * block_size + p %
  /// block_size. Positions past its pages are never written and read page
  /// 0, as unset entries are.
  bool pageIndptr = false;
  /// Decode attention and K-prepare into a cache: the caches hold e4m3
  /// (f8E4M3FN) with f32 scales (`k_scale`, `v_scale`: one, or one per kv
  /// head with cacheScalePerHead; vLLM's): a key or value x is stored as
  /// e4m3(x * (1 / scale)), rounded to nearest even and saturated, and read
  /// as its element type's rounding of e4m3 * scale, the new tokens'
  /// included (as the unfused step reads them back from the cache).
  bool fp8Cache = false;
  bool cacheScalePerHead = false;
  // Training (row norms: rms, layer, l2; the QK-Norm prologue):
  /// The forward kernel also writes what its backward reads: the f32
  /// `saved_rstd` of each kernel row (group, head; the scale the statistic
  /// gives) and, for mean_var, its `saved_mean`, in the same pass.
  bool saveStats = false;
  /// The kernel computes the gradients of the forward operation the other
  /// fields describe (see getBuffers): from the row `v` it normalized (the
  /// input, or the residual stream it wrote), `grad_output` and the saved
  /// statistics, grad_input = alpha dv (dv = dnorm/dv dy, plus the
  /// `residual_grad` of a residual stream output), addend_grad = dv where
  /// alpha is not 1 (else grad_input is both), and f32 partial sums of the
  /// weight and bias gradients, one row per thread group of each CTA, that a
  /// column_sum reduces: the same partials every run, no atomics. `output`
  /// is the type of grad_output, `input` of grad_input.
  bool backward = false;
  /// Backward only: the groups are the heads of a token row (QK-Norm's q or
  /// k heads, packed or not), sharing one head's weight (getRowLength
  /// elements) and its gradient: the backward of the per-head QK-Norm, the
  /// q and the k heads one launch each (row slices of qkv and of the saved
  /// statistics of the forward).
  bool perHeadWeight = false;
  // In place (forward row kernels; vLLM's fused_add_rms_norm writes
  // residual_out over its residual stream and output over the sublayer's
  // output):
  /// The row input whose buffer a launch may pass as `output`, and as
  /// `residual_out`: the same address, row stride and element type (exactly
  /// the same rows; no other overlap). Such a kernel claims no noalias for
  /// either buffer (no non-coherent loads of them) and writes a row only
  /// after every thread has read it (verifyInPlace).
  RowOperand outputOver = RowOperand::None;
  RowOperand residualOver = RowOperand::None;
  // FP8 outputs (forward row kernels; `output` f8E4M3FN or f8E5M2):
  OutputScale outputScale = OutputScale::None;
  /// Per-token scales: each row's amax is first clamped by the f32 scalar
  /// `scale_ub` (vLLM's scale_ub).
  bool scaleUpperBound = false;
};

using OpKind = OpSpec::Kind;

/// Either attention kernel: prefill (Attention) or decode (AttentionDecode).
inline bool isAttention(OpKind kind) {
  return kind == OpKind::Attention || kind == OpKind::AttentionDecode;
}

/// The kernels that write a KV cache of their own rows (batch x capacity,
/// the cache_capacity parameter): decode attention and K-prepare into a
/// cache.
inline bool hasKvCache(const OpSpec &spec) {
  return spec.kind == OpSpec::Kind::AttentionDecode || spec.writeCache;
}

/// The largest page of a paged KV cache (OpSpec::cacheBlockSize).
constexpr int64_t kMaxCacheBlockSize = 256;

/// Whether `blockSize` pages a KV cache: a power of two in [1,
/// kMaxCacheBlockSize]. Shared by the dialect, the runtime and the checkers.
Status verifyCacheBlockSize(int64_t blockSize);

/// The kernels whose rows are the heads of token rows, normalized (and
/// rotated) one at a time: the QK-Norm prologue (q and k heads) and the
/// K-prepare kernel (k heads; numQHeads is 0).
inline bool isHeadNorm(OpKind kind) {
  return kind == OpKind::QKNormPrologue || kind == OpKind::KeyPrepare;
}

/// "rms_norm", "layer_norm", ..., "qk_norm", "k_prepare".
std::string_view getOpKindName(OpKind kind);
std::optional<OpKind> parseOpKindName(std::string_view name);

/// The kernel op that implements `kind`: "fused_row", "qk_norm_prologue",
/// "column_stats", "attention_kernel" or "attention_decode_kernel" (the
/// signature's kind).
std::string_view getKernelOpName(OpKind kind);
/// The kernel op of `spec`: getKernelOpName of its kind, or
/// "fused_row_grad" for a backward row kernel.
std::string_view getKernelOpName(const OpSpec &spec);

/// The kind of a row kernel with `statistic` over `groups` (GroupNorm for
/// mean_var over groups; without a statistic, BatchNorm inference with
/// per-channel statistics, else elementwise): the inverse of getStatistic.
OpKind getRowKind(Statistic statistic, int64_t groups,
                  bool perChannelStats = false);

/// The per-row statistic of the kernel of `spec` (none for column
/// statistics, whose reduction runs over columns).
Statistic getStatistic(const OpSpec &spec);

/// The per-token FP8 scale of a row whose normalized values have the
/// largest magnitude `amax` (OutputScale::PerToken), in double precision:
/// what the float64 references compare the kernels' f32 scales with.
double getPerTokenScale(ElementType output, double amax,
                        std::optional<double> upperBound);

/// Whether the kernel of `spec` reads `eps`: it has a statistic, or
/// per-channel variances (BatchNorm inference).
bool usesEps(const OpSpec &spec);

/// Whether the kernel of `spec` is a norm.fused_row (every kind but column
/// statistics, the QK-Norm prologue and attention): rows too long for registers are
/// staged in shared memory or streamed.
bool isFusedRow(const OpSpec &spec);

/// The length of the rows threads are mapped onto: the hidden size, a
/// group's width (GroupNorm, or any statistic over groups) or the head dim
/// (QK-Norm).
int64_t getRowLength(const OpSpec &spec);

/// Kernel rows per logical row (token): the groups of a row kernel, query
/// plus key/value heads for QK-Norm, query heads for attention, else 1
/// (column statistics have no rows).
int64_t getRowsPerToken(const OpSpec &spec);

/// A backward kernel over groups with their own channels of the weight
/// (GroupNorm, or rms and l2 over groups): the gradient partials of a
/// thread group are its group's channels, `groups` thread groups a
/// hidden-wide partial row. Heads that share one weight (per_head_weight)
/// are not.
bool hasGroupedWeightGradients(const OpSpec &spec);

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// The longest row of any kernel (2^24 elements, far beyond any hidden size
/// of a model): index arithmetic and f32 sums stay well inside their range,
/// and larger values are a caller's bug (bytes passed as elements, say).
constexpr int64_t kMaxRowLength = int64_t(1) << 24;

/// `eps` (and `qk_norm_eps`, with `name`): positive and finite.
Status verifyEps(double eps, std::string_view name = "eps");
/// DeepNorm's alpha, attention's scale: positive and finite.
Status verifyPositiveFinite(double value, std::string_view name);
/// Gemma's `1 + w`: finite, and only with a weight to shift.
Status verifyWeightOffset(double offset, bool hasWeight);
/// GroupNorm: positive and dividing the hidden size.
Status verifyGroups(int64_t groups, int64_t hidden);

/// The rules of in-place outputs (OpSpec::outputOver, residualOver): forward
/// row kernels only; the row input an output overwrites exists and has the
/// output's element type (so that both cover the same bytes); the two
/// outputs never overwrite the same input. Where the rows go is the
/// launch's concern (verifyLaunchFor: streamed rows with a statistic store
/// residual_out in their first pass, before every thread has read the row
/// it would overwrite, so those refuse residualOver).
Status verifyInPlace(const OpSpec &spec);
/// Attention's head dim: a multiple of 16 (the k-steps of the tensor-core
/// tiles) from 16 to kMaxAttentionHeadDim.
Status verifyAttentionHeadDim(int64_t headDim);
/// Query and key/value head counts: positive, and the key/value heads
/// dividing the query heads (grouped-query attention).
Status verifyHeadCounts(int64_t numQHeads, int64_t numKvHeads);

/// Rotary embeddings over the first `rotaryDim` of `headDim` elements:
/// rotaryDim even, positive and at most headDim (the kernel turns whole
/// 16-byte chunks where the pairs fill them, a multiple of 16 for neox and
/// of 8 for gptj, and single pairs otherwise); theta positive, finite and not 1
/// unless the angles come `fromTable` (which needs no theta).
Status verifyRope(RopeStyle style, int64_t rotaryDim, double theta,
                  int64_t headDim, bool fromTable = false);

/// The angle per position of rotary pair `pair` (0 <= pair < rotaryDim / 2):
/// theta^(-2 pair / rotaryDim), in double precision (the kernel's constants
/// and the reference's angles).
double getRopeFrequency(double theta, int64_t rotaryDim, int64_t pair);

/// The longest head of an attention kernel: its output rows stay in
/// registers, D / 2 f32 accumulators per thread.
constexpr int64_t kMaxAttentionHeadDim = 256;

/// Every rule an operation must meet for a kernel to implement it: known
/// kinds and types, sizes within kMaxRowLength, eps, alpha, the weight
/// offset, groups, head counts, and flags only where the kind uses them
/// (InvalidArgument, with a message naming the field).
Status verifyOpSpec(const OpSpec &spec);

/// The K-prepare operation that normalizes and rotates the keys of prefill
/// attention `attention` once (its QK-Norm, k's weight, eps, offset and
/// rotary fields; numKvHeads heads of its head dim), for the attention with
/// keysPrepared to read: together they compute `attention`.
OpSpec getKeyPrepareSpec(const OpSpec &attention);

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

/// The kernels that differentiate the forward operation `forward`, in
/// launch order: for a row norm, its backward row kernel (the same fields,
/// without the Sandwich skip, whose gradient is grad_output itself); for
/// the QK-Norm prologue, one per-head backward for the q heads and one for
/// the k heads (rows of heads x head_dim sharing their weight); then a
/// column sum per weight and bias gradient, in the parameter type.
/// InvalidArgument when `forward` has no backward kernels (an elementwise
/// kernel, BatchNorm, attention, f32_residual, GroupNorm: the message says
/// which), or breaks a rule.
struct BackwardKernels {
  std::vector<OpSpec> rows;        // backward row kernels
  std::vector<OpSpec> columnSums;  // their weight and bias gradients
};
Status getBackwardKernels(const OpSpec &forward, BackwardKernels &kernels);

//===----------------------------------------------------------------------===//
// Identity
//===----------------------------------------------------------------------===//

/// The same operation with the fields it does not use reset to defaults, so
/// that equal operations have equal identities.
OpSpec normalizeOpSpec(const OpSpec &spec);

/// Every field of the normalized operation on one line (doubles exact, in
/// hexadecimal): the identity of the operation in kernel names, cache keys
/// and bundles.
std::string getCanonicalSpec(const OpSpec &spec);
/// Inverse of getCanonicalSpec (bundles list their operations this way).
std::optional<OpSpec> parseCanonicalSpec(std::string_view text,
                                         std::string &error);

/// A short form for logs: "rms_norm h4096 bf16 +addend +residual_out".
std::string describeOpSpec(const OpSpec &spec);

} // namespace norm

#endif // NORM_COMPILER_MODEL_OPERATION_H
