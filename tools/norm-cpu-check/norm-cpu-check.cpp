//===- norm-cpu-check.cpp - run the kernels on the CPU and check them -----===//
//
// The correctness sweep without a GPU: for every kernel kind, the main flag
// combinations, hidden sizes from 1 to 16384 (and a few long rows up to
// 262144), row counts 0 to 64, f32, f16 and bf16, and several launch
// configurations each, it JIT-compiles the
// kernel for the CPU (compiler/HostExecution.h), runs it on guarded,
// poisoned buffers and compares the outputs with a float64 reference
// (Reference.h) at an explicit tolerance. Stray writes (guards, gaps between
// rows), modified inputs and unwritten outputs (still NaN) fail a case.
//
// The attention variants (attn_*, decode_*, kprep_cache_*; run only where
// named) run the prefill and decode kernels, and K-prepare into a KV cache,
// as the unit tests do (AttentionCheck.h): --hidden gives their head dims,
// --seqlens the lengths of their one varlen batch (decode and the cache
// writes: of the KV caches), --types f16 or bf16 (unless
// told: bf16, head dims 64 and 128, lengths 1, 0, 63, 65 and 129). On the
// host their kernels are compiled for the x86-64 baseline at -O0 whatever
// --host-cpu and --opt-level say (compileForHost): results must not depend
// on this machine's CPU.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "compiler/HostExecution.h"
#include "compiler/model/FloatFormats.h"
#include "compiler/model/Reference.h"
#include "runtime/Candidates.h"
#include "tools/norm-cpu-check/AttentionCheck.h"
#include "tools/norm-cpu-check/Buffers.h"
#include "tools/norm-cpu-check/KernelSource.h"
#include "tools/norm-cpu-check/Ptxsim.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

using namespace norm;
using namespace norm::check;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

static cl::OptionCategory checkCategory("norm-cpu-check options");

static cl::opt<std::string> kernelsOption(
    "kernels", cl::cat(checkCategory),
    cl::desc("Kernel source: 'generated' (the compiler's kernel generator) or "
             "'hand-written' (simple reference kernels)"),
    cl::init("generated"));
static cl::list<int64_t> hiddenOption(
    "hidden", cl::CommaSeparated, cl::cat(checkCategory),
    cl::desc("Hidden sizes (the head dim for QK-Norm and attention; "
             "attention's default: 64,128, with --every-size 64 to 256)"));
static cl::list<int64_t> rowsOption("rows", cl::CommaSeparated,
                                    cl::cat(checkCategory),
                                    cl::desc("Row counts (attention: "
                                             "--seqlens)"));
static cl::list<int64_t> seqlensOption(
    "seqlens", cl::CommaSeparated, cl::cat(checkCategory),
    cl::desc("Attention: the sequence lengths of its one varlen batch, 0 an "
             "empty sequence (decode: the lengths of their KV caches before "
             "the step); default 1,0,63,65,129"));
static cl::opt<int64_t> cacheBlockSizeOption(
    "cache-block-size", cl::cat(checkCategory),
    cl::desc("Decode and K-prepare variants: a paged KV cache of pages of "
             "this many rows (a power of two to 256) with shuffled block "
             "tables, in place of the variant's own cache (0)"),
    cl::init(0));
static cl::opt<bool> pageIndptrOption(
    "page-indptr", cl::cat(checkCategory),
    cl::desc("With --cache-block-size: the block tables in FlashInfer's "
             "ragged form (kv_indices, kv_indptr), every other sequence "
             "without the pages only its append reaches"),
    cl::init(false));
static cl::opt<std::string> fp8CacheOption(
    "fp8-cache", cl::cat(checkCategory),
    cl::desc("Decode and K-prepare variants: an e4m3 KV cache with one scale "
             "('tensor') or one per kv head ('head'), in place of the "
             "variant's own cache"),
    cl::init(""));
static cl::list<std::string>
    typesOption("types", cl::CommaSeparated, cl::cat(checkCategory),
                cl::desc("Element types (attention's default: bf16)"));
static cl::list<std::string> variantsOption(
    "variants", cl::CommaSeparated, cl::cat(checkCategory),
    cl::desc("Operation variants (see --list-variants; the attention ones "
             "run only where named)"));
static cl::opt<bool> listVariants("list-variants", cl::cat(checkCategory),
                                  cl::desc("List the variants and exit"));
static cl::opt<bool>
    printKernel("print-kernel", cl::cat(checkCategory),
                cl::desc("Print the kernel source of each configuration"));
static cl::opt<unsigned>
    jobsOption("jobs", cl::cat(checkCategory),
               cl::desc("Kernels compiled and run in parallel (0: all cores)"),
               cl::init(0));
static cl::opt<int> optLevelOption("opt-level", cl::cat(checkCategory),
                                   cl::desc("LLVM optimization level of the "
                                            "JIT"),
                                   cl::init(1));
static cl::opt<std::string> hostCpuOption(
    "host-cpu", cl::cat(checkCategory),
    cl::desc("CPU the JIT compiles for, with only its own features "
             "(x86-64: the baseline of every x86-64 machine); default: this "
             "machine's"),
    cl::init(""));
static cl::opt<std::string> injectOption(
    "inject", cl::cat(checkCategory),
    cl::desc("Corrupt each run after the kernel to show the checks work: "
             "value, nan, guard, gap or input; with --engine=ptxas, spill "
             "(each kernel limited to 24 registers a thread)"),
    cl::init(""));
static cl::opt<bool> reverseThreadsOption(
    "reverse-threads", cl::cat(checkCategory),
    cl::desc("Run the threads of each CTA from the last to the first between "
             "meeting points, so that a thread reading what another writes "
             "before they meet (a race on the GPU) sees the other order"));
static cl::opt<bool> pdlOption(
    "pdl", cl::cat(checkCategory),
    cl::desc("Generate the kernels for programmatic dependent launch (their "
             "rows read coherently, after the grid dependency wait)"));
static cl::opt<std::string> inputsOption(
    "inputs", cl::cat(checkCategory),
    cl::desc("How the rows (input, qkv) are drawn: uniform (noise of rows "
             "of varied magnitudes), outlier (channel 0 of every row at 512 "
             "times the row's magnitude: LLMs' massive activations), spikes "
             "(one element in 500 at +-64..512 times it), constant (every "
             "element of a row the same), offset (a common offset of 1000 "
             "times the noise), tiny or huge (magnitudes near the type's "
             "smallest normals or largest squares f32 holds); forward row "
             "kernels only"),
    cl::init("uniform"));
static cl::opt<std::string> engineOption(
    "engine", cl::cat(checkCategory),
    cl::desc("Where kernels run: 'host' (their kernel IR JIT-compiled for "
             "this CPU), 'ptxsim' (their PTX on GPGPU-Sim: $NORM_PTXSIM, "
             "else ../shared/tools/ptxsim beside the source tree), or "
             "'ptxas' (nowhere: their PTX assembled with ptxas -v for "
             "--chip, with every tuner candidate of every row bucket, and "
             "any spill a failure)"),
    cl::init("host"));
static cl::opt<bool> defaultLaunchOnly(
    "default-launch-only", cl::cat(checkCategory),
    cl::desc("Only the heuristic's launch configuration of each case, not "
             "the alternates"));
static cl::opt<std::string> chipOption(
    "chip", cl::cat(checkCategory),
    cl::desc("The chip of the generated kernels (sm_80, sm_89, sm_90, ...)"),
    cl::init("sm_90"));
static cl::opt<unsigned> warpShuffleOption(
    "warp-shuffle", cl::cat(checkCategory),
    cl::desc("ptxsim: step the warps of each CTA in an order drawn from this "
             "seed (0: in order), so that a missing barrier shows"),
    cl::init(0));
static cl::opt<bool> cpAsyncDeferOption(
    "cp-async-defer", cl::cat(checkCategory),
    cl::desc("ptxsim: cp.async bytes land at the thread's wait, so that a "
             "missing wait shows"));
static cl::opt<bool> verboseOption("v", cl::cat(checkCategory),
                                   cl::desc("Print every case"));
static cl::opt<bool> everySizeOption(
    "every-size", cl::cat(checkCategory),
    cl::desc("Run every variant at every hidden size (by default, variants "
             "beside the main ones run at a subset of the sizes), attention "
             "at head dims 64, 80, 96, 112, 128, 160, 192 and 256"));

//===----------------------------------------------------------------------===//
// What runs
//===----------------------------------------------------------------------===//

static constexpr int64_t kHiddenSizes[] = {1,    3,    8,    127,  128,  769,
                                           1152, 2880, 4096, 5120, 8192, 16384};
/// Sizes for the variants beside the main ones: 1, odd, prime, a power of
/// two and the largest.
static constexpr int64_t kSubsetSizes[] = {1, 3, 127, 769, 4096, 16384};
static constexpr int64_t kRowCounts[] = {0, 1, 5, 64};

namespace {
/// A row too long for registers, with the default launch unless `launch`
/// has a vector.
struct LongRowCase {
  const char *variant;
  ElementType type;
  int64_t hidden;
  LaunchConfig launch = {0, 0, 0, 0};
};
} // namespace

/// Long rows, run at kLongRowCounts by the default sweep: staged in shared
/// memory (bf16/f16 up to 115712 elements), streamed (re-read from input and
/// addend, or from residual_out), and in one pass without a statistic.
static constexpr LongRowCase kLongRows[] = {
    {"rms", ElementType::bf16, 65537},      // shared, scalar accesses
    {"rms_add", ElementType::bf16, 100000}, // shared, residual out
    {"rms_add_inplace", ElementType::bf16, 100000}, // shared, in place
    {"layer_add_inplace", ElementType::f16, 65537}, // shared, in place
    {"rms_add_fp8_token", ElementType::bf16, 100000}, // shared, amax pass
    {"residual_fp8_token", ElementType::f16, 65537},  // shared, no statistic
    {"rms_fp8", ElementType::f32, 100000},            // streamed, static
    {"layer", ElementType::f16, 100000},    // shared, mean_var
    {"rms_add", ElementType::f32, 100000},  // streamed, v from residual_out
    {"rms_add_inplace", ElementType::f32, 100000}, // streamed, in place
    {"rms_add_inplace", ElementType::bf16, 262144}, // streamed, in place
    {"rms_deepnorm_f32", ElementType::bf16, 100000}, // streamed, f32 v
    {"layer", ElementType::f32, 65537}, // streamed, scalar accesses
    {"layer_add_sandwich", ElementType::bf16, 262144}, // streamed, skip
    {"l2", ElementType::bf16, 262144},                 // streamed from input
    {"residual_cast", ElementType::f16, 65537},        // one pass, residual out
    {"batch_norm", ElementType::bf16, 100000},         // one pass
    // Shared, 4 rows at a time, a partial last vector (4100 = 16 * 256 + 4).
    {"rms_add", ElementType::bf16, 4100, {8, 32, 4, 8}},
};
static constexpr int64_t kLongRowCounts[] = {0, 1, 5};
static constexpr ElementType kTypes[] = {ElementType::f32, ElementType::f16,
                                         ElementType::bf16};

/// --engine=ptxas: kernels are assembled, not run.
static bool ptxasAudit = false;

namespace {
struct AttentionVariant;

/// One operation with its flags, at any hidden size and element type.
struct Variant {
  const char *name;
  const char *description;
  /// Main variants run at every hidden size, the others at kSubsetSizes.
  bool main;
  /// Sets up `spec` for `hidden` and `type`; false where the variant does
  /// not apply (a group norm needs a hidden size with a divisor).
  std::function<bool(OpSpec &spec)> configure;
  /// Attention: run by AttentionCheck.h (not runCase), at the head dims of
  /// --hidden or kAttentionHeadDims, over --seqlens.
  const AttentionVariant *attention = nullptr;
};
} // namespace

/// A larger type for fused output casts: bf16/f16 -> f32, f32 -> bf16.
static ElementType getCastType(ElementType type) {
  return type == ElementType::f32 ? ElementType::bf16 : ElementType::f32;
}

/// Heads longer than this are no model's (the longest are 256): the QK-Norm
/// variants skip larger "hidden" sizes, whose heads would not fit in the
/// registers the prologue keeps them in.
constexpr int64_t kMaxHeadDim = 1024;
/// Rows of the rope tables of QK-Norm prologue cases (positions below it).
constexpr int64_t kRopeTableRows = 97;

/// The sequence offsets of a K-prepare case's `rows` tokens: a third, an
/// empty sequence, one token, the rest (each clamped to the rows).
static std::vector<int64_t> getSequenceOffsets(int64_t rows) {
  int64_t third = rows / 3, one = std::min(rows, third + 1);
  return {0, third, third, one, rows};
}

/// GroupNorm: the most groups of 32, 8, 4, 3 and 2 that leave at least two
/// channels a group; false for hidden sizes without one.
static bool pickGroups(OpSpec &spec) {
  for (int64_t groups : {32, 8, 4, 3, 2})
    if (spec.hidden % groups == 0 && spec.hidden / groups >= 2) {
      spec.groups = groups;
      return true;
    }
  return false;
}

/// Backward kernels keep their rows in registers, or stage them in shared
/// memory with the column sums in registers: the variants skip hidden sizes
/// beyond what a CTA holds either way (16384 elements with column sums).
static bool fitsBackward(const OpSpec &spec) {
  return bool(verifyLaunchFor(spec, getHeuristicLaunch(spec, -1)));
}

/// The backward of a per-head QK-Norm: `heads` heads of the sweep's size
/// (the head dim) in a token row, sharing one head's weight.
static bool configureHeadsBackward(OpSpec &spec, ::norm::OpKind kind,
                                   int64_t heads) {
  spec.kind = kind;
  spec.hasWeight = spec.backward = spec.perHeadWeight = true;
  spec.groups = heads;
  spec.hidden *= heads;
  return spec.hidden / heads <= kMaxHeadDim && fitsBackward(spec);
}

namespace {
/// An attention kernel (AttentionCheck.h): the sweep's sizes are its head
/// dims, 16-bit types only, and one varlen batch of --seqlens its shape
/// (prefill: the sequences' lengths; decode: their caches' lengths, each
/// sequence appending the variant's new tokens to a cache just long enough
/// for the longest); scale 1 / sqrt(head dim), eps 1e-6 with a QK-Norm.
/// `prefill` or `decode` sets the heads and flags of a case whose type,
/// head dim and lengths are set.
struct AttentionVariant {
  const char *name, *description;
  void (*prefill)(AttentionCase &c);
  void (*decode)(DecodeCase &c);
};

/// Rotary embeddings of `style` over 1 / `fraction` of the head (even) of
/// base `theta`.
template <typename Case>
void setRope(Case &c, ::norm::RopeStyle style, int64_t fraction, double theta) {
  c.rope = style;
  c.rotaryDim = c.headDim / fraction / 2 * 2;
  c.ropeTheta = theta;
}

/// `heads` query and `kvHeads` key/value heads with a QK-Norm of `norm`
/// (None: none), weighted when `weights`; no rotary embeddings unless
/// setRope.
template <typename Case>
void setHeads(Case &c, int64_t heads, int64_t kvHeads, ::norm::Statistic norm,
              bool weights) {
  c.heads = heads;
  c.kvHeads = kvHeads;
  c.norm = norm;
  c.weights = weights;
}

/// `count` new tokens a sequence, the keys in `splits` ranges.
void setStep(DecodeCase &c, int64_t count, int64_t splits) {
  c.newTokens.assign(c.cacheLengths.size(), count);
  c.splits = splits;
}
} // namespace

static const AttentionVariant kAttentionVariants[] = {
    {"attn_rms_rope",
     "prefill attention, causal: RMS QK-Norm with weights, NeoX rotary "
     "theta 1e6, 8 q / 2 kv heads (Qwen3)",
     [](AttentionCase &c) {
       setHeads(c, 8, 2, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       c.causal = true;
     }},
    {"attn_layer_gptj",
     "prefill attention, causal: LayerNorm QK-Norm with weights, GPT-J "
     "rotary over half the head, 4 q / 4 kv heads",
     [](AttentionCase &c) {
       setHeads(c, 4, 4, Statistic::MeanVar, true);
       setRope(c, RopeStyle::GptJ, 2, 1e6);
       c.causal = true;
     }},
    {"attn_plain_mqa",
     "prefill attention, causal: no QK-Norm or rotary, 8 q heads on one kv "
     "head",
     [](AttentionCase &c) {
       setHeads(c, 8, 1, Statistic::None, false);
       c.causal = true;
     }},
    {"attn_l2_rope_first",
     "prefill attention, causal: L2 QK-Norm of rotated rows (NeoX), 10 q / "
     "2 kv heads (Llama 4)",
     [](AttentionCase &c) {
       setHeads(c, 10, 2, Statistic::L2, false);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       c.causal = c.ropeFirst = true;
     }},
    {"attn_layer_quarter",
     "prefill attention, causal: LayerNorm QK-Norm with weights, NeoX rotary "
     "over a quarter of the head (StableLM: a pair at a time at head dim "
     "80), 4 q / 4 kv heads",
     [](AttentionCase &c) {
       setHeads(c, 4, 4, Statistic::MeanVar, true);
       setRope(c, RopeStyle::NeoX, 4, 1e6);
       c.causal = true;
     }},
    {"attn_gemma_lse",
     "prefill attention, not causal, with the LSE: RMS QK-Norm with (1 + w) "
     "weights, NeoX rotary theta 1e4, 4 q heads on one kv head (Gemma 3)",
     [](AttentionCase &c) {
       setHeads(c, 4, 1, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e4);
       c.offset = 1.0;
       c.lse = true;
     }},
    {"attn_table_gqa8",
     "prefill attention, causal: RMS QK-Norm with weights, GPT-J rotary over "
     "half the head from a table (Llama 3.1's scaled frequencies) at "
     "explicit positions, 16 q / 2 kv heads",
     [](AttentionCase &c) {
       setHeads(c, 16, 2, Statistic::RMS, true);
       setRope(c, RopeStyle::GptJ, 2, 5e5);
       c.causal = c.table = c.positions = true;
     }},
    {"attn_prepared_rms_rope",
     "prefill attention on keys prepared by the K-prepare kernel, causal, "
     "with the LSE: RMS QK-Norm with weights, NeoX rotary theta 1e6, 8 q / 2 "
     "kv heads (Qwen3)",
     [](AttentionCase &c) {
       setHeads(c, 8, 2, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       c.causal = c.lse = c.preparedKeys = true;
     }},
    {"attn_prepared_layer_table",
     "prefill attention on keys prepared by the K-prepare kernel, not "
     "causal: LayerNorm QK-Norm with a weight row per head (Command R+), "
     "NeoX rotary from a table at explicit positions, 4 q / 2 kv heads",
     [](AttentionCase &c) {
       setHeads(c, 4, 2, Statistic::MeanVar, true);
       setRope(c, RopeStyle::NeoX, 1, 5e5);
       c.weightPerHead = c.table = c.positions = c.preparedKeys = true;
     }},
    {"decode_rms_rope",
     "decode attention with cache append, 1 new token a sequence, 3 splits: "
     "RMS QK-Norm with weights, NeoX rotary, 8 q / 2 kv heads",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 8, 2, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       setStep(c, 1, 3);
     }},
    {"decode_l2_gptj_mha",
     "decode attention, 3 new tokens a sequence (speculative), 2 splits: L2 "
     "QK-Norm, GPT-J rotary over half the head, 4 q / 4 kv heads",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 4, 4, Statistic::L2, false);
       setRope(c, RopeStyle::GptJ, 2, 1e6);
       setStep(c, 3, 2);
     }},
    {"decode_layer_mqa32",
     "decode attention, 1 new token a sequence, 2 splits: LayerNorm QK-Norm "
     "with weights, NeoX rotary, 32 q heads on one kv head",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 32, 1, Statistic::MeanVar, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       setStep(c, 1, 2);
     }},
    {"decode_l2_rope_first",
     "decode attention, 2 new tokens a sequence, 1 split: L2 QK-Norm of "
     "rotated rows (NeoX), 10 q / 2 kv heads (Llama 4)",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 10, 2, Statistic::L2, false);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       c.ropeFirst = true;
       setStep(c, 2, 1);
     }},
    {"decode_plain",
     "decode attention, 1 new token a sequence, 5 splits: no QK-Norm or "
     "rotary, 8 q / 1 kv head",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 8, 1, Statistic::None, false);
       setStep(c, 1, 5);
     }},
    {"decode_gemma_table",
     "decode attention, 1 new token a sequence, 4 splits: RMS QK-Norm with "
     "(1 + w) weights, NeoX rotary from a table at explicit positions, 4 q "
     "heads on one kv head",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 4, 1, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e4);
       c.offset = 1.0;
       c.table = c.positions = true;
       setStep(c, 1, 4);
     }},
    {"decode_layer_per_head",
     "decode attention, 2 new tokens a sequence, 3 splits: LayerNorm QK-Norm "
     "with a weight row per head (Command R+), GPT-J rotary over a quarter "
     "of the head, 8 q / 2 kv heads",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 8, 2, Statistic::MeanVar, true);
       setRope(c, RopeStyle::GptJ, 4, 1e4);
       c.weightPerHead = true;
       setStep(c, 2, 3);
     }},
    {"decode_paged_gqa4",
     "decode attention over a paged cache (vLLM's block tables, pages of 16 "
     "rows, shuffled), 1 new token a sequence, 2 splits: RMS QK-Norm with "
     "weights, NeoX rotary, 16 q / 4 kv heads",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 16, 4, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       setStep(c, 1, 2);
       c.blockSize = 16;
     }},
    {"decode_fp8_paged",
     "decode attention over a paged e4m3 cache (pages of 16, a scale per kv "
     "head, one small enough to saturate), 2 new tokens a sequence, 3 "
     "splits: RMS QK-Norm with weights, NeoX rotary, 8 q / 2 kv heads",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 8, 2, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       setStep(c, 2, 3);
       c.blockSize = 16;
       c.fp8Cache = c.scalePerHead = true;
     }},
    {"kprep_cache_rms_rope",
     "K-prepare into a KV cache, 3 new tokens a sequence: RMS QK-Norm with "
     "weights, NeoX rotary theta 1e6 at the cache positions, 8 kv heads "
     "(the rows decode attention appends)",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 8, 8, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       setStep(c, 3, 1);
       c.keysOnly = true;
     }},
    {"kprep_cache_l2_table",
     "K-prepare into a KV cache, 2 new tokens a sequence: L2 QK-Norm of "
     "rotated rows (GPT-J over half the head, from a table at explicit "
     "positions), one kv head",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 1, 1, Statistic::L2, false);
       setRope(c, RopeStyle::GptJ, 2, 1e4);
       c.table = c.positions = c.ropeFirst = true;
       setStep(c, 2, 1);
       c.keysOnly = true;
     }},
    {"kprep_paged_sglang",
     "K-prepare into a paged KV cache of pages of one row (SGLang's token "
     "pool), 2 new tokens a sequence: RMS QK-Norm with (1 + w) weights, "
     "NeoX rotary, 4 kv heads",
     nullptr,
     [](DecodeCase &c) {
       setHeads(c, 4, 4, Statistic::RMS, true);
       setRope(c, RopeStyle::NeoX, 1, 1e6);
       c.offset = 1.0;
       setStep(c, 2, 1);
       c.keysOnly = true;
       c.blockSize = 1;
     }},
};

/// Head dims of the attention variants: by default, and with --every-size
/// (the models' head dims).
static constexpr int64_t kAttentionHeadDims[] = {64, 128};
static constexpr int64_t kEveryAttentionHeadDim[] = {64,  80,  96,  112,
                                                     128, 160, 192, 256};
/// The default batch of the attention variants: an empty sequence, one
/// token, and the tails of 64- and 128-row tiles.
static constexpr int64_t kSequenceLengths[] = {1, 0, 63, 65, 129};

/// The prefill case of `variant` in `type` at `headDim` over `lengths`.
static AttentionCase makePrefillCase(const AttentionVariant &variant,
                                     ElementType type, int64_t headDim,
                                     const std::vector<int64_t> &lengths) {
  AttentionCase c{};
  c.name = variant.name;
  c.type = type;
  c.headDim = headDim;
  c.lengths = lengths;
  variant.prefill(c);
  return c;
}

/// The decode case of `variant` in `type` at `headDim` over caches of
/// `lengths`, the longest full after the step.
static DecodeCase makeDecodeCase(const AttentionVariant &variant,
                                 ElementType type, int64_t headDim,
                                 const std::vector<int64_t> &lengths) {
  DecodeCase c{};
  c.name = variant.name;
  c.type = type;
  c.headDim = headDim;
  c.cacheLengths = lengths;
  variant.decode(c);
  for (size_t b = 0; b < lengths.size(); ++b)
    c.capacity = std::max(c.capacity, lengths[b] + c.newTokens[b]);
  if (cacheBlockSizeOption)
    c.blockSize = cacheBlockSizeOption;
  c.pageIndptr = pageIndptrOption;
  if (!fp8CacheOption.empty()) {
    c.fp8Cache = true;
    c.scalePerHead = fp8CacheOption == "head";
  }
  return c;
}

/// The operation of `variant` in `type` at `headDim`.
static OpSpec getAttentionSpec(const AttentionVariant &variant,
                               ElementType type, int64_t headDim) {
  return variant.prefill ? getSpec(makePrefillCase(variant, type, headDim, {}))
                         : getSpec(makeDecodeCase(variant, type, headDim, {}));
}

static const std::vector<Variant> &getVariants() {
  using Kind = OpSpec::Kind;
  static const std::vector<Variant> variants = [] {
  std::vector<Variant> all = {
      {"rms", "RMSNorm with weight", true,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = true;
         return true;
       }},
      {"rms_inplace", "RMSNorm with weight, output over input", false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = true;
         s.outputOver = ::norm::RowOperand::Input;
         return true;
       }},
      {"rms_add_inplace",
       "residual add + RMSNorm in place as vLLM's fused_add_rms_norm: "
       "residual_out over input, output over addend",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = true;
         s.residualOver = ::norm::RowOperand::Input;
         s.outputOver = ::norm::RowOperand::Addend;
         return true;
       }},
      {"layer_add_inplace",
       "residual add + LayerNorm with bias in place: residual_out over "
       "addend, output over input (every thread reads the first element)",
       false,
       [](OpSpec &s) {
         s.kind = Kind::LayerNorm;
         s.hasAddend = s.hasWeight = s.hasBias = s.writeResidual = true;
         s.residualOver = ::norm::RowOperand::Addend;
         s.outputOver = ::norm::RowOperand::Input;
         s.eps = 1e-5;
         return true;
       }},
      // Inference: FP8 outputs in the same pass.
      {"rms_fp8",
       "RMSNorm with weight, e4m3 output, static scale "
       "(rms_norm_static_fp8_quant)",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = true;
         s.output = ElementType::f8E4M3FN;
         s.outputScale = ::norm::OutputScale::Static;
         return true;
       }},
      {"rms_add_fp8_token",
       "residual add + RMSNorm, residual out, e4m3 output with per-token "
       "scales (rms_norm_dynamic_per_token_quant)",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = true;
         s.output = ElementType::f8E4M3FN;
         s.outputScale = ::norm::OutputScale::PerToken;
         return true;
       }},
      {"layer_fp8_e5m2_ub",
       "LayerNorm with weight and bias, e5m2 output, per-token scales "
       "bounded by scale_ub",
       false,
       [](OpSpec &s) {
         s.kind = Kind::LayerNorm;
         s.hasWeight = s.hasBias = true;
         s.eps = 1e-5;
         s.output = ElementType::f8E5M2;
         s.outputScale = ::norm::OutputScale::PerToken;
         s.scaleUpperBound = true;
         return true;
       }},
      {"residual_fp8_token",
       "alpha * x + y with residual out, no statistic, e4m3 output with "
       "per-token scales",
       false,
       [](OpSpec &s) {
         s.kind = Kind::Elementwise;
         s.hasAddend = s.writeResidual = true;
         s.alpha = 2.0;
         s.output = ElementType::f8E4M3FN;
         s.outputScale = ::norm::OutputScale::PerToken;
         return true;
       }},
      {"rms_gemma", "RMSNorm, (1 + w) weight (weight_offset 1)", false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = true;
         s.weightOffset = 1.0;
         return true;
       }},
      {"rms_add", "residual add + RMSNorm, residual out (pre-norm)", true,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = true;
         return true;
       }},
      {"rms_deepnorm_f32",
       "DeepNorm alpha * x + f(x), f32 residual stream, "
       "residual out",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = s.f32Residual = true;
         s.alpha = 1.8612097182041991; // (2 * 6)^(1/4)
         return true;
       }},
      {"rms_cast", "RMSNorm without weight, output cast", false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.output = getCastType(s.input);
         return true;
       }},
      {"rms_sandwich", "Sandwich: skip + RMSNorm(x) with weight", false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = s.hasSkip = true;
         return true;
       }},
      {"layer", "LayerNorm with weight and bias", true,
       [](OpSpec &s) {
         s.kind = Kind::LayerNorm;
         s.hasWeight = s.hasBias = true;
         s.eps = 1e-5;
         return true;
       }},
      {"layer_add_sandwich",
       "residual add + LayerNorm + skip, residual out, "
       "f32 parameters",
       false,
       [](OpSpec &s) {
         s.kind = Kind::LayerNorm;
         s.hasAddend = s.hasWeight = s.hasBias = s.hasSkip = true;
         s.writeResidual = true;
         s.param = ElementType::f32;
         s.eps = 1e-5;
         return true;
       }},
      {"l2", "L2 norm", false,
       [](OpSpec &s) {
         s.kind = Kind::L2Norm;
         s.eps = 1e-12;
         return true;
       }},
      {"group", "GroupNorm with weight and bias", false,
       [](OpSpec &s) {
         s.kind = Kind::GroupNorm;
         s.hasWeight = s.hasBias = true;
         s.eps = 1e-5;
         return pickGroups(s);
       }},
      {"batch_norm",
       "BatchNorm inference (running statistics), f32 "
       "parameters",
       false,
       [](OpSpec &s) {
         s.kind = Kind::BatchNormInference;
         s.hasWeight = s.hasBias = true;
         s.param = s.statsType = ElementType::f32;
         s.eps = 1e-5;
         return true;
       }},
      {"residual_cast",
       "alpha * x + y with residual out and an output cast, "
       "no statistic",
       false,
       [](OpSpec &s) {
         s.kind = Kind::Elementwise;
         s.hasAddend = s.writeResidual = true;
         s.alpha = 2.0;
         s.output = getCastType(s.input);
         return true;
       }},
      {"qk_rms", "QK-Norm prologue, RMS with weights, 4 q / 2 kv heads", true,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.hasWeight = true;
         s.numQHeads = 4;
         s.numKvHeads = 2;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_gemma",
       "QK-Norm prologue, Gemma 3: RMS with (1 + w) weights, 4 q / 1 kv head "
       "(multi-query)",
       false,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.hasWeight = true;
         s.weightOffset = 1.0;
         s.numQHeads = 4;
         s.numKvHeads = 1;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_layer",
       "QK-Norm prologue, LayerNorm per head with weights (ViT-22B), 2 q / 2 "
       "kv heads",
       false,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.qkStatistic = ::norm::Statistic::MeanVar;
         s.hasWeight = true;
         s.eps = 1e-5;
         s.numQHeads = 2;
         s.numKvHeads = 2;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_layer_hw",
       "QK-Norm prologue, LayerNorm per head with a weight row per head "
       "(Command R+), 6 q / 2 kv heads",
       false,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.qkStatistic = ::norm::Statistic::MeanVar;
         s.hasWeight = s.qkWeightPerHead = true;
         s.eps = 1e-5;
         s.numQHeads = 6;
         s.numKvHeads = 2;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_l2", "QK-Norm prologue, L2 without weights, 3 q / 1 kv heads", false,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.qkStatistic = ::norm::Statistic::L2;
         s.eps = 1e-12;
         s.numQHeads = 3;
         s.numKvHeads = 1;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_rms_rope",
       "QK-Norm prologue, then NeoX RoPE (Qwen 3): RMS with weights, theta "
       "1e6 at explicit positions, 4 q / 2 kv heads",
       true,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.hasWeight = s.ropePositions = true;
         s.numQHeads = 4;
         s.numKvHeads = 2;
         s.rope = ::norm::RopeStyle::NeoX;
         s.rotaryDim = s.hidden / 2 * 2;
         s.ropeTheta = 1e6;
         return s.hidden <= kMaxHeadDim && s.rotaryDim >= 2;
       }},
      {"qk_l2_rope_first",
       "QK-Norm prologue of rotated rows (Llama 4): GPT-J RoPE from a "
       "cos/sin table at explicit positions, then L2 without weights, 4 q / "
       "1 kv heads",
       true,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.qkStatistic = ::norm::Statistic::L2;
         s.eps = 1e-6;
         s.numQHeads = 4;
         s.numKvHeads = 1;
         s.rope = ::norm::RopeStyle::GptJ;
         s.rotaryDim = s.hidden;
         s.ropeTable = s.ropePositions = s.ropeFirst = true;
         // GPT-J pairs need an even vector, so an even head dim.
         return s.hidden <= kMaxHeadDim && s.hidden % 2 == 0;
       }},
      {"kprep_rms_rope",
       "K-prepare (Qwen 3's keys): RMS with weights, then NeoX RoPE theta 1e6 "
       "by index within each sequence of a varlen batch, v copied beside, 2 "
       "kv heads",
       true,
       [](OpSpec &s) {
         s.kind = Kind::KeyPrepare;
         s.hasWeight = s.copyValues = true;
         s.numKvHeads = 2;
         s.rope = ::norm::RopeStyle::NeoX;
         s.rotaryDim = s.hidden / 2 * 2;
         s.ropeTheta = 1e6;
         return s.hidden <= kMaxHeadDim && s.rotaryDim >= 2;
       }},
      {"kprep_l2_rope_first",
       "K-prepare of rotated rows (Llama 4's keys): GPT-J RoPE from a cos/sin "
       "table at explicit positions, then L2 without weights, 1 kv head",
       false,
       [](OpSpec &s) {
         s.kind = Kind::KeyPrepare;
         s.qkStatistic = ::norm::Statistic::L2;
         s.numKvHeads = 1;
         s.rope = ::norm::RopeStyle::GptJ;
         s.rotaryDim = s.hidden;
         s.ropeTable = s.ropePositions = s.ropeFirst = true;
         return s.hidden <= kMaxHeadDim && s.hidden % 2 == 0;
       }},
      {"kprep_rope_partial",
       "K-prepare without a QK-Norm: partial NeoX RoPE (a quarter of the "
       "head) by index within each sequence, v copied beside, 4 kv heads",
       false,
       [](OpSpec &s) {
         s.kind = Kind::KeyPrepare;
         s.qkStatistic = ::norm::Statistic::None;
         s.copyValues = true;
         s.numKvHeads = 4;
         s.rope = ::norm::RopeStyle::NeoX;
         s.rotaryDim = s.hidden / 4 / 2 * 2;
         s.ropeTheta = 1e4;
         return s.hidden <= kMaxHeadDim && s.rotaryDim >= 2;
       }},
      {"kprep_layer_stats",
       "K-prepare, LayerNorm per head with a weight row per head and its "
       "saved statistics (no rope), 3 kv heads",
       false,
       [](OpSpec &s) {
         s.kind = Kind::KeyPrepare;
         s.qkStatistic = ::norm::Statistic::MeanVar;
         s.hasWeight = s.qkWeightPerHead = s.saveStats = true;
         s.eps = 1e-5;
         s.numKvHeads = 3;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_layer_rope_partial",
       "QK-Norm prologue, then partial NeoX RoPE (StableLM: a quarter of "
       "the head, rows at their index): LayerNorm with weights, 2 q / 2 kv "
       "heads",
       false,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.qkStatistic = ::norm::Statistic::MeanVar;
         s.hasWeight = true;
         s.eps = 1e-5;
         s.numQHeads = 2;
         s.numKvHeads = 2;
         s.rope = ::norm::RopeStyle::NeoX;
         s.rotaryDim = s.hidden / 4 / 2 * 2;
         s.ropeTheta = 1e4;
         return s.hidden <= kMaxHeadDim && s.rotaryDim >= 2;
       }},
      {"column_stats", "per-column mean and variance (BatchNorm training)",
       true,
       [](OpSpec &s) {
         s.kind = Kind::BatchNormStats;
         return true;
       }},
      // Training: forward kernels that save their statistics, backward row
      // kernels and the column sum of their partials.
      {"rms_add_save",
       "residual add + RMSNorm, residual out, saved rstd (training forward)",
       true,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = s.saveStats = true;
         return true;
       }},
      {"group_save", "GroupNorm with weight and bias, saved mean and rstd",
       false,
       [](OpSpec &s) {
         s.kind = Kind::GroupNorm;
         s.hasWeight = s.hasBias = s.saveStats = true;
         s.eps = 1e-5;
         return pickGroups(s);
       }},
      {"rms_bwd", "RMSNorm backward: dx and weight gradient partials", true,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = s.backward = true;
         return fitsBackward(s);
       }},
      {"rms_add_bwd",
       "residual add + RMSNorm backward, residual stream gradient added",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = s.backward = true;
         return fitsBackward(s);
       }},
      {"rms_deepnorm_bwd",
       "DeepNorm alpha * x + f(x) + RMSNorm backward: grad_input and "
       "addend_grad differ, Gemma (1 + w) weight",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasAddend = s.hasWeight = s.writeResidual = s.backward = true;
         s.alpha = 1.8612097182041991;
         s.weightOffset = 1.0;
         return fitsBackward(s);
       }},
      {"rms_noweight_bwd", "RMSNorm without weight backward, output cast",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.backward = true;
         s.output = getCastType(s.input);
         return fitsBackward(s);
       }},
      {"layer_bwd", "LayerNorm backward: dx, weight and bias partials", true,
       [](OpSpec &s) {
         s.kind = Kind::LayerNorm;
         s.hasWeight = s.hasBias = s.backward = true;
         s.param = ElementType::f32;
         return fitsBackward(s);
       }},
      {"l2_bwd", "L2 norm backward", false,
       [](OpSpec &s) {
         s.kind = Kind::L2Norm;
         s.backward = true;
         return fitsBackward(s);
       }},
      {"group_bwd",
       "GroupNorm backward: dx, weight and bias partials of each group's "
       "channels",
       true,
       [](OpSpec &s) {
         s.kind = Kind::GroupNorm;
         s.hasWeight = s.hasBias = s.backward = true;
         return pickGroups(s) && fitsBackward(s);
       }},
      {"group_rms_bwd",
       "RMSNorm over groups backward, (1 + w) weight, f32 parameters",
       false,
       [](OpSpec &s) {
         s.kind = Kind::RMSNorm;
         s.hasWeight = s.backward = true;
         s.param = ElementType::f32;
         s.weightOffset = 1.0;
         return pickGroups(s) && fitsBackward(s);
       }},
      {"qk_layer_save",
       "QK-Norm prologue, LayerNorm per head, saved mean and rstd per head, "
       "4 q / 1 kv heads",
       false,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.qkStatistic = ::norm::Statistic::MeanVar;
         s.hasWeight = s.saveStats = true;
         s.eps = 1e-5;
         s.numQHeads = 4;
         s.numKvHeads = 1;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_rms_save",
       "QK-Norm prologue, RMS with weights, saved rstd per head (training), "
       "8 q / 2 kv heads",
       true,
       [](OpSpec &s) {
         s.kind = Kind::QKNormPrologue;
         s.hasWeight = s.saveStats = true;
         s.numQHeads = 8;
         s.numKvHeads = 2;
         return s.hidden <= kMaxHeadDim;
       }},
      {"qk_rms_bwd",
       "per-head QK-Norm backward: RMS over 4 heads sharing a weight",
       true,
       [](OpSpec &s) {
         return configureHeadsBackward(s, ::norm::OpKind::RMSNorm, 4);
       }},
      {"qk_gemma_layer_bwd",
       "per-head QK-Norm backward: LayerNorm over 2 heads, (1 + w) weight",
       false,
       [](OpSpec &s) {
         if (!configureHeadsBackward(s, ::norm::OpKind::LayerNorm, 2))
           return false;
         s.weightOffset = 1.0;
         return true;
       }},
      {"column_sum", "column sums of f32 partials (weight gradients)", true,
       [](OpSpec &s) {
         s.kind = Kind::ColumnSum;
         s.input = ElementType::f32;
         return true;
       }},
  };
  for (const AttentionVariant &attention : kAttentionVariants)
    all.push_back({attention.name, attention.description, false,
                   [&attention](OpSpec &spec) {
                     spec = getAttentionSpec(attention, spec.input,
                                             spec.hidden);
                     return true;
                   },
                   &attention});
  return all;
  }();
  return variants;
}

/// Launch configurations beside the default one, so that every collective
/// path runs: vector 1 with the fewest threads per row and a loop over
/// several rows per CTA (narrow groups for short rows), and rows spread over
/// several warps (or, for short rows, the most threads below a warp), all
/// with rows in registers; and for rows longer than 32 threads hold in
/// registers, 32 threads per row at every vector width up to the default
/// one, four rows at a time and two row groups per CTA, staged in shared
/// memory or streamed (staged vectors narrower than 16 bytes included).
static std::vector<LaunchConfig> getAlternateLaunches(const OpSpec &spec,
                                                      int64_t vector) {
  std::vector<LaunchConfig> launches;
  auto add = [&](LaunchConfig launch) {
    if (!verifyLaunchFor(spec, launch) || !fitsInRegisters(spec, launch))
      return false;
    launches.push_back(launch);
    return true;
  };
  for (int64_t v = vector; v >= 1; v /= 2) {
    LaunchConfig staged{v, 32, 4, 8};
    if (isFusedRow(spec) && verifyLaunchFor(spec, staged) &&
        !fitsInRegisters(spec, staged))
      launches.push_back(staged);
  }
  for (int64_t tpr = 1; tpr <= 1024; tpr *= 2) {
    int64_t warps = std::max<int64_t>(1, tpr / 32);
    LaunchConfig launch{1, tpr, warps, 0};
    launch.rowsPerCta = 2 * launch.getConcurrentRows();
    if (add(launch))
      break;
  }
  bool wide = false;
  for (int64_t tpr : {256, 128, 64})
    if ((wide = add({1, tpr, 2 * tpr / 32, 2})))
      break;
  if (!wide)
    for (int64_t tpr : {16, 8, 4, 2})
      if (add({1, tpr, 2, 64 / tpr}))
        break;
  return launches;
}

namespace {
struct Task {
  const Variant *variant;
  OpSpec spec;
  LaunchConfig launch;
  /// Attention (not on the ptxas engine): the lengths of its one batch.
  std::vector<int64_t> rowCounts;
  std::string label;
};

/// Results of the sweep, merged from all workers.
struct Summary {
  std::mutex mutex;
  int64_t passed = 0, failed = 0, compiled = 0;
  /// --engine=ptxas: the most registers a kernel took, and which.
  int64_t mostRegisters = 0;
  std::string mostRegistersLabel;
  /// Cases of kernels the compiler refuses as documented (Unsupported:
  /// in-place LayerNorm over streamed rows, per-token FP8 rows too long to
  /// stage): not failures, and a sweep over them can pass.
  int64_t refused = 0;
  std::map<ElementType, double> worstRatio;

  void report(const std::string &line) {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::outs() << line << "\n";
    llvm::outs().flush();
  }
};

/// Everything one run checks; failures are collected as messages.
class CaseCheck {
public:
  explicit CaseCheck(std::string label) : label(std::move(label)) {}

  void fail(const std::string &message) { failures.push_back(message); }
  bool ok() const { return failures.empty(); }

  void compareRows(const GuardedBuffer &buffer, const ExpectedRows &expected,
                   const std::string &name) {
    int64_t wrong = 0;
    for (int64_t row = 0; row < expected.rows; ++row)
      for (int64_t col = 0; col < expected.cols; ++col) {
        double actual = buffer.load(row, col);
        const Expected &e = expected.at(row, col);
        if (!std::isnan(actual) && e.tolerance > 0.0) {
          double &worst = worstRatio[buffer.getType()];
          worst = std::max(worst, std::fabs(actual - e.value) / e.tolerance);
        }
        if (e.accepts(actual))
          continue;
        if (wrong++ < 3) {
          char text[256];
          std::snprintf(text, sizeof(text),
                        "%s[%lld][%lld] = %.9g, expected %.9g +- %.3g",
                        name.c_str(), static_cast<long long>(row),
                        static_cast<long long>(col), actual, e.value,
                        e.tolerance);
          fail(text);
        }
      }
    if (wrong > 3)
      fail(name + ": " + std::to_string(wrong) + " wrong elements in all");
  }

  std::string label;
  std::vector<std::string> failures;
  std::map<ElementType, double> worstRatio;
};
} // namespace

/// The columns of a kernel buffer, as the kernel model gives them.
static int64_t getBufferCols(const OpSpec &spec, const KernelParam &param) {
  for (const BufferSpec &buffer : getBuffers(spec))
    if (getBufferSlotName(buffer.slot) == param.name)
      return buffer.cols;
  return spec.hidden;
}

/// How the values of input buffer `name` are drawn: rows of inputs vary in
/// magnitude (powers of two), LayerNorm-like inputs get an offset so that
/// the mean matters; --inputs makes the rows adversarial.
static std::function<double(int64_t row, int64_t col)>
getInputDraw(const OpSpec &spec, const std::string &name, Random &random) {
  static const double kRowScales[] = {1.0, 0.25, 4.0, 1.0 / 16, 16.0};
  auto uniform = [&random](double low, double high) {
    return [&random, low, high](int64_t, int64_t) {
      return random.uniform(low, high);
    };
  };
  if (name == "input" || name == "qkv" || name == "k" || name == "v") {
    bool centered = spec.kind == OpSpec::Kind::LayerNorm ||
                    spec.kind == OpSpec::Kind::GroupNorm ||
                    spec.kind == OpSpec::Kind::BatchNormStats ||
                    spec.kind == OpSpec::Kind::BatchNormInference;
    double offset = centered ? 0.5 : 0.0;
    auto noise = [&random, offset](int64_t row) {
      return kRowScales[row % 5] * (random.uniform(-1, 1) + offset);
    };
    // Backward kernels draw their saved statistics apart from their rows,
    // so adversarial rows would only overflow f16 gradients: they (and the
    // column sums of f32 partials) keep the uniform rows.
    bool forward = !spec.backward && spec.kind != OpSpec::Kind::ColumnSum;
    std::string mode = forward ? inputsOption.getValue() : "uniform";
    // f16 has 5 exponent bits; bf16 and f32 have f32's range, and the
    // squares of huge rows must stay finite in f32 (as in any f32 norm).
    bool half = spec.input == ElementType::f16;
    if (mode == "outlier")
      return [=, &random](int64_t row, int64_t col) {
        return col == 0 ? 512.0 * kRowScales[row % 5] : noise(row);
      };
    if (mode == "spikes")
      return [=, &random](int64_t row, int64_t) {
        if (random.next() % 500 != 0)
          return noise(row);
        double spike = random.uniform(64, 512) * kRowScales[row % 5];
        return random.next() % 2 ? spike : -spike;
      };
    if (mode == "constant")
      return [=](int64_t row, int64_t) { return 0.75 * kRowScales[row % 5]; };
    if (mode == "offset")
      return [=](int64_t row, int64_t) {
        return 1000.0 * kRowScales[row % 5] + noise(row);
      };
    if (mode == "tiny" || mode == "huge") {
      double scale = mode == "tiny" ? (half ? 0x1p-12 : 0x1p-100)
                                    : (half ? 0x1p6 : 0x1p40);
      return [=](int64_t row, int64_t) { return scale * noise(row); };
    }
    return [=](int64_t row, int64_t) { return noise(row); };
  }
  if (name == "weight" || name == "q_weight" || name == "k_weight")
    return spec.weightOffset != 0.0 ? uniform(-0.5, 0.5) : uniform(0.5, 1.5);
  // Rotary positions: inside the table, or any up to 2^20 (long contexts,
  // where the angles' reduction matters), with position 0 in the mix. The
  // simulator's fma.rn.f32 rounds its product (GPGPU-Sim computes a * b + c
  // in float), which the angles' reduction must not: that costs u |angle|,
  // within the 2^-20 the tolerance allows sin.approx (which the simulator
  // computes exactly) for angles below 16, so there positions stay below 16.
  if (name == "positions")
    return [&random, table = spec.ropeTable](int64_t, int64_t) -> double {
      uint64_t bits = random.next();
      if (bits % 8 == 0)
        return 0;
      int64_t most = engineOption == "ptxsim" ? 16 : 1 << 20;
      return table ? bits % kRopeTableRows : (bits >> 8) % most;
    };
  // The cos_sin_cache of theta 1e4 with YaRN's attention factor 1.1, so
  // that the table's cos and sin exceed 1 as such tables do.
  if (name == "rope_table")
    return [dim = spec.rotaryDim](int64_t row, int64_t col) {
      int64_t half = dim / 2, pair = col % half;
      double angle = static_cast<double>(row) *
                     ::norm::getRopeFrequency(1e4, dim, pair);
      return 1.1 * (col < half ? std::cos(angle) : std::sin(angle));
    };
  if (name == "bias" || name == "mean")
    return uniform(-0.5, 0.5);
  // Saved statistics of rows of about kRowScales' magnitudes.
  if (name == "saved_rstd")
    return [&random](int64_t row, int64_t) {
      return random.uniform(0.5, 2.0) / kRowScales[row % 5];
    };
  if (name == "saved_mean")
    return [&random](int64_t row, int64_t) {
      return kRowScales[row % 5] * random.uniform(-0.5, 0.5);
    };
  if (name == "variance")
    return uniform(0.25, 2.0);
  // FP8: a static scale that saturates e4m3 for the largest outputs (|y|
  // up to about 3 over 1/150 and more), and a bound on per-token amaxes
  // that clamps some rows and not others.
  if (name == "output_scale")
    return uniform(1.0 / 300, 1.0 / 100);
  if (name == "scale_ub")
    return uniform(1.0, 3.0);
  return uniform(-1, 1); // addend, skip
}

static uint64_t hashLabel(const std::string &text) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : text)
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

/// saved_rstd, and saved_mean where the kernel has it.
static void compareSavedStats(
    std::map<std::string, std::unique_ptr<GuardedBuffer>> &buffers,
    const ExpectedRows &mean, const ExpectedRows &rstd, CaseCheck &check) {
  check.compareRows(*buffers["saved_rstd"], rstd, "saved_rstd");
  if (buffers.count("saved_mean"))
    check.compareRows(*buffers["saved_mean"], mean, "saved_mean");
}

/// The gradients of a backward row kernel against the float64 reference;
/// the weight and bias partials are checked by their column sums.
static void
checkBackward(const OpSpec &spec,
              std::map<std::string, std::unique_ptr<GuardedBuffer>> &buffers,
              CaseCheck &check) {
  FusedRowGradOperands operands;
  operands.input = buffers["input"]->view();
  operands.gradOutput = buffers["grad_output"]->view();
  if (buffers.count("residual_grad"))
    operands.residualGrad = buffers["residual_grad"]->view();
  if (buffers.count("saved_mean"))
    operands.savedMean = buffers["saved_mean"]->view();
  operands.savedRstd = buffers["saved_rstd"]->view();
  if (buffers.count("weight"))
    operands.weight = buffers["weight"]->paramView();
  FusedRowGradExpected expected = referenceFusedRowGrad(spec, operands);
  check.compareRows(*buffers["grad_input"], expected.gradInput, "grad_input");
  if (buffers.count("addend_grad"))
    check.compareRows(*buffers["addend_grad"], expected.addendGrad,
                      "addend_grad");
  for (auto [name, sums] :
       {std::pair{"weight_grad_partials", &expected.weightGrad},
        std::pair{"bias_grad_partials", &expected.biasGrad}}) {
    if (!buffers.count(name))
      continue;
    const GuardedBuffer &partials = *buffers[name];
    for (int64_t col = 0; col < partials.getCols(); ++col) {
      double total = 0.0;
      bool nan = false;
      for (int64_t row = 0; row < partials.getRows(); ++row) {
        double value = partials.load(row, col);
        nan |= std::isnan(value);
        total += value;
      }
      const Expected &e = (*sums)[col];
      if (!nan && e.accepts(total))
        continue;
      char text[256];
      std::snprintf(text, sizeof(text),
                    "column sum of %s[%lld] = %.9g, expected %.9g +- %.3g",
                    name, static_cast<long long>(col), total, e.value,
                    e.tolerance);
      check.fail(text);
      break;
    }
  }
}

/// Where a case's kernel runs: JIT-compiled kernel IR on the host, or its
/// PTX on the simulator.
struct Engine {
  const HostKernels *host = nullptr;
  const std::string *ptx = nullptr;
};

/// The simulator engine (empty root: the host), and the target of the
/// generated kernels.
static PtxsimOptions ptxsimOptions;
static TargetOptions checkTarget;

/// Runs `kernel` for `rows` rows and checks everything.
static void runCase(const Task &task, const KernelSignature &signature,
                    const Engine &engine, int64_t rows, CaseCheck &check) {
  const OpSpec &spec = task.spec;
  std::map<std::string, std::unique_ptr<GuardedBuffer>> buffers;
  std::map<std::string, std::vector<uint8_t>> inputBytes;
  std::vector<void *> pointers;
  std::vector<SimBuffer> simBuffers;
  std::map<std::string, int> bufferIndex;
  std::vector<int64_t> strides;
  Random random(hashLabel(check.label));
  // In place: an output that the launch writes over one of the inputs (the
  // same pointer and stride), found in that input's buffer.
  std::map<std::string, std::string> over;
  auto at = [&](const std::string &name) -> GuardedBuffer & {
    auto it = over.find(name);
    return *buffers[it == over.end() ? name : it->second];
  };
  for (const KernelParam &param : signature.params) {
    if (param.kind != KernelParam::Kind::Buffer)
      continue;
    if (!param.over.empty()) {
      GuardedBuffer &input = *buffers[param.over];
      over[param.name] = param.over;
      inputBytes.erase(param.over);
      strides.push_back(input.getStride());
      pointers.push_back(input.data());
      simBuffers.push_back({input.data(), input.getBytesFromData(),
                            bufferIndex.at(param.over)});
      bufferIndex[param.name] = static_cast<int>(simBuffers.size()) - 1;
      continue;
    }
    int64_t cols = getBufferCols(spec, param);
    // One rotary position per row (token); batch + 1 sequence offsets.
    if (param.name == "positions")
      cols = rows;
    if (param.name == "cu_seqlens")
      cols = static_cast<int64_t>(getSequenceOffsets(rows).size());
    // At least one element of gap after each row; outputs get another stride
    // than inputs so that a kernel using the wrong stride fails. Vector
    // kernels get 16-byte aligned buffers and rows; scalar kernels, which
    // serve misaligned buffers, get misaligned ones.
    bool scalar = signature.launch.vector == 1;
    int64_t align = scalar ? 1 : 16 / getElementBytes(param.elementType);
    int64_t stride = (cols + align) / align * align;
    if (!param.readOnly)
      stride += scalar ? 2 : align;
    // Gradient partials have rows of their own: one per thread group and CTA.
    int64_t bufferRows = rows;
    if (param.name == "weight_grad_partials" ||
        param.name == "bias_grad_partials")
      bufferRows = getGradPartialRows(spec, signature.launch, rows);
    if (param.name == "rope_table")
      bufferRows = kRopeTableRows;
    auto buffer = std::make_unique<GuardedBuffer>(
        param.elementType, param.rowMajor2D ? bufferRows : 1, cols,
        param.rowMajor2D ? stride : cols, /*misaligned=*/scalar);
    // The kernel's alignment needs are part of its ABI.
    int64_t bytes = getElementBytes(param.elementType);
    if (reinterpret_cast<uintptr_t>(buffer->data()) % param.alignment != 0 ||
        (param.rowMajor2D && stride * bytes % param.alignment != 0)) {
      check.fail("buffer '" + param.name + "' misses the kernel's alignment " +
                 std::to_string(param.alignment));
      return;
    }
    if (param.name == "cu_seqlens") {
      buffer->fill(getInputGuard(param.elementType));
      std::vector<int64_t> offsets = getSequenceOffsets(rows);
      for (size_t i = 0; i < offsets.size(); ++i)
        buffer->store(0, static_cast<int64_t>(i),
                      static_cast<double>(offsets[i]));
      inputBytes[param.name] = buffer->snapshot();
    } else if (param.readOnly) {
      buffer->fill(getInputGuard(param.elementType));
      buffer->fillRows(getInputDraw(spec, param.name, random));
      inputBytes[param.name] = buffer->snapshot();
    } else {
      buffer->fill(getOutputPoison(param.elementType));
    }
    if (param.rowMajor2D)
      strides.push_back(buffer->getStride());
    pointers.push_back(buffer->data());
    simBuffers.push_back({buffer->data(), buffer->getBytesFromData()});
    bufferIndex[param.name] = static_cast<int>(simBuffers.size()) - 1;
    buffers[param.name] = std::move(buffer);
  }
  std::vector<int64_t> integers = {rows};
  if (buffers.count("cu_seqlens"))
    integers.push_back(static_cast<int64_t>(getSequenceOffsets(rows).size()) -
                       1);
  if (buffers.count("rope_table"))
    integers.push_back(kRopeTableRows);
  integers.insert(integers.end(), strides.begin(), strides.end());

  auto view = [&](const std::string &name) { return buffers[name]->view(); };
  auto paramView = [&](const std::string &name) {
    auto it = buffers.find(name);
    return it == buffers.end() ? ParamView() : it->second->paramView();
  };
  // A forward row's reference, from the inputs before an in-place launch
  // overwrites them.
  std::optional<FusedRowExpected> rowExpected;
  if (isFusedRow(spec) && !spec.backward) {
    FusedRowOperands operands;
    operands.input = view("input");
    if (buffers.count("addend"))
      operands.addend = view("addend");
    if (buffers.count("skip"))
      operands.skip = view("skip");
    operands.weight = paramView("weight");
    operands.bias = paramView("bias");
    operands.mean = paramView("mean");
    operands.variance = paramView("variance");
    operands.outputScale = paramView("output_scale");
    operands.scaleUpperBound = paramView("scale_ub");
    rowExpected = referenceFusedRow(spec, operands);
  }

  Status launched =
      engine.ptx ? runOnPtxsim(ptxsimOptions, *engine.ptx, signature,
                               simBuffers, integers,
                               signature.getGridX(rows))
                 : engine.host->launch(signature.name, pointers, integers,
                                       signature.getGridX(rows));
  if (Status status = launched; !status) {
    check.fail("launch failed: " + status.message());
    return;
  }

  // Fault injection: each of these must make the case fail.
  GuardedBuffer *firstOutput = nullptr;
  for (const KernelParam &param : signature.params)
    if (param.kind == KernelParam::Kind::Buffer && !param.readOnly) {
      firstOutput = &at(param.name);
      break;
    }
  if (!injectOption.empty() && firstOutput) {
    bool hasRows = firstOutput->getRows() > 0 &&
                   (spec.kind == OpSpec::Kind::BatchNormStats || rows > 0);
    if (injectOption == "guard")
      firstOutput->corruptGuard();
    else if (injectOption == "gap" && hasRows)
      firstOutput->storeBits(0, firstOutput->getCols(), 0);
    else if (injectOption == "nan" && hasRows)
      firstOutput->storeBits(0, 0, getOutputPoison(firstOutput->getType()));
    else if (injectOption == "value" && hasRows) {
      double value = firstOutput->load(0, 0);
      firstOutput->store(0, 0, value * 1.25 + std::copysign(0.5, value));
    } else if (injectOption == "input")
      buffers[signature.params.front().name]->fill(0);
  }

  for (auto &[name, bytes] : inputBytes)
    if (!buffers[name]->matches(bytes))
      check.fail("input '" + name + "' was modified");
  for (const KernelParam &param : signature.params)
    if (param.kind == KernelParam::Kind::Buffer && !param.readOnly)
      if (auto stray = at(param.name).findStrayWrite(
              param.over.empty() ? getOutputPoison(param.elementType)
                                 : getInputGuard(param.elementType)))
        check.fail("stray write to '" + param.name + "': " + *stray);

  switch (spec.kind) {
  case OpSpec::Kind::QKNormPrologue:
  case OpSpec::Kind::KeyPrepare: {
    bool keys = spec.kind == OpSpec::Kind::KeyPrepare;
    QKNormRotary rotary;
    if (buffers.count("positions"))
      for (int64_t token = 0; token < rows; ++token)
        rotary.positions.push_back(
            static_cast<int64_t>(buffers["positions"]->load(0, token)));
    // K-prepare turns a key by its index within its sequence.
    if (buffers.count("cu_seqlens")) {
      std::vector<int64_t> offsets = getSequenceOffsets(rows);
      for (size_t b = 0; b + 1 < offsets.size(); ++b)
        for (int64_t token = offsets[b]; token < offsets[b + 1]; ++token)
          rotary.positions.push_back(token - offsets[b]);
    }
    if (buffers.count("rope_table")) {
      const GuardedBuffer &table = *buffers["rope_table"];
      for (int64_t row = 0; row < table.getRows(); ++row)
        for (int64_t col = 0; col < table.getCols(); ++col)
          rotary.table.push_back(static_cast<float>(table.load(row, col)));
    }
    QKNormExpected expected =
        referenceQKNorm(spec, view(keys ? "k" : "qkv"), paramView("q_weight"),
                        paramView("k_weight"), rotary);
    if (!keys)
      check.compareRows(*buffers["q"], expected.q, "q");
    check.compareRows(*buffers[keys ? "k_out" : "k"], expected.k,
                      keys ? "k_out" : "k");
    // v_out: v's bits, exactly.
    if (spec.copyValues) {
      ExpectedRows values(rows, spec.numKvHeads * spec.hidden);
      const GuardedBuffer &v = *buffers["v"];
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t col = 0; col < values.cols; ++col)
          values.at(row, col) = {v.load(row, col), 0.0};
      check.compareRows(*buffers["v_out"], values, "v_out");
    }
    if (spec.saveStats)
      compareSavedStats(buffers, expected.savedMean, expected.savedRstd, check);
    break;
  }
  case OpSpec::Kind::ColumnSum: {
    ExpectedRows sums(1, spec.hidden);
    sums.values = referenceColumnSum(view("input"), spec.output);
    check.compareRows(*buffers["output"], sums, "output");
    break;
  }
  case OpSpec::Kind::BatchNormStats: {
    // The statistics of no rows are undefined: only the guards count.
    if (rows == 0)
      break;
    ColumnStatsExpected expected = referenceColumnStats(view("input"));
    ExpectedRows mean(1, spec.hidden), variance(1, spec.hidden);
    mean.values = expected.mean;
    variance.values = expected.variance;
    check.compareRows(*buffers["mean"], mean, "mean");
    check.compareRows(*buffers["variance"], variance, "variance");
    break;
  }
  default: {
    if (spec.backward) {
      checkBackward(spec, buffers, check);
      break;
    }
    const FusedRowExpected &expected = *rowExpected;
    check.compareRows(at("output"), expected.output, "output");
    if (spec.writeResidual)
      check.compareRows(at("residual_out"), expected.residual,
                        "residual_out");
    if (spec.outputScale == ::norm::OutputScale::PerToken)
      check.compareRows(at("output_scales"), expected.outputScales,
                        "output_scales");
    if (spec.saveStats)
      compareSavedStats(buffers, expected.savedMean, expected.savedRstd, check);
    break;
  }
  }
}

/// Whether the kernel's parameters are the ones of the ABI.
static Status checkParams(const KernelSignature &signature,
                          const std::vector<HostKernelParam> &params) {
  std::string expected, actual;
  for (const KernelParam &param : signature.params)
    expected += param.kind == KernelParam::Kind::Buffer
                    ? std::string(getElementTypeName(param.elementType)) + "* "
                    : std::string("i64 ");
  for (const HostKernelParam &param : params)
    actual += param.isBuffer ? param.elementType + "* " : std::string("i64 ");
  if (expected == actual)
    return Status::success();
  return Status::error(ErrorCode::Internal, "kernel parameters (" + actual +
                                                ") differ from the ABI (" +
                                                expected + ")");
}

static void runCases(const Task &task, const KernelSignature &signature,
                     const Engine &engine, Summary &summary);
static void runAttentionTask(const Task &task, Summary &summary);

/// --engine=ptxas: the task's kernel assembled with `ptxas -v`; one case,
/// failed where ptxas spills (the register rule let through a
/// configuration that does not fit).
static void auditRegisters(const Task &task, Summary &summary) {
  auto fail = [&](const std::string &message) {
    summary.report("FAIL " + task.label + ": " + message);
    std::lock_guard<std::mutex> lock(summary.mutex);
    ++summary.failed;
  };
  CompiledKernel compiled;
  if (Status status =
          compileKernel(task.spec, task.launch, checkTarget, compiled);
      !status)
    return fail("no PTX: " + status.message());
  // Fault injection: a register limit that no kernel here fits.
  if (injectOption == "spill") {
    size_t entry = compiled.ptx.find(".entry");
    size_t body = compiled.ptx.find("\n{", entry);
    if (entry == std::string::npos || body == std::string::npos)
      return fail("no kernel body in the PTX");
    compiled.ptx.insert(body + 1, ".maxnreg 24\n");
  }
  std::vector<KernelResources> kernels;
  if (Status status = getKernelResources(compiled.ptx, checkTarget.chip,
                                         /*ptxasPath=*/"", kernels);
      !status)
    return fail(status.message());
  for (const KernelResources &kernel : kernels) {
    std::string usage = std::to_string(kernel.registers) + " registers, " +
                        std::to_string(kernel.spillStoreBytes) +
                        " bytes spill stores, " +
                        std::to_string(kernel.spillLoadBytes) +
                        " bytes spill loads (" + kernel.name + ")";
    if (kernel.spills())
      return fail("ptxas -arch=" + checkTarget.chip + " spills: " + usage);
    if (verboseOption)
      summary.report("PASS " + task.label + ": " + usage);
    std::lock_guard<std::mutex> lock(summary.mutex);
    if (kernel.registers > summary.mostRegisters) {
      summary.mostRegisters = kernel.registers;
      summary.mostRegistersLabel = task.label;
    }
  }
  std::lock_guard<std::mutex> lock(summary.mutex);
  ++summary.compiled;
  ++summary.passed;
}

static void runTask(const Task &task, const KernelProvider &provider,
                    Summary &summary) {
  if (task.variant->attention && !ptxasAudit)
    return runAttentionTask(task, summary);
  auto failAll = [&](const std::string &message) {
    summary.report("FAIL " + task.label + ": " + message);
    std::lock_guard<std::mutex> lock(summary.mutex);
    summary.failed += task.rowCounts.size();
  };
  KernelSource source;
  if (Status status = provider.build(task.spec, task.launch, source);
      !status) {
    if (status.code() != ::norm::ErrorCode::Unsupported)
      return failAll("no kernel: " + status.message());
    summary.report("REFUSED " + task.label + ": " + status.message());
    std::lock_guard<std::mutex> lock(summary.mutex);
    summary.refused += task.rowCounts.size();
    return;
  }
  if (printKernel)
    summary.report("// " + task.label + "\n" + source.mlir);
  if (ptxasAudit)
    return auditRegisters(task, summary);
  // The simulator runs the PTX the GPU would.
  if (!ptxsimOptions.root.empty()) {
    CompiledKernel compiled;
    if (Status status =
            compileKernel(task.spec, task.launch, checkTarget, compiled);
        !status)
      return failAll("no PTX: " + status.message());
    if (!compiled.signature.describesSameKernel(source.signature))
      return failAll("the PTX's signature is not the kernel's");
    return runCases(task, compiled.signature, Engine{nullptr, &compiled.ptx},
                    summary);
  }
  HostCompileOptions options;
  options.kernelPipeline = source.pipeline;
  options.optLevel = optLevelOption;
  options.cpu = hostCpuOption;
  options.reverseThreads = reverseThreadsOption;
  std::unique_ptr<HostKernels> kernels;
  if (Status status = HostKernels::compile(source.mlir, options, kernels);
      !status)
    return failAll("CPU compilation failed: " + status.message());
  if (Status status = checkParams(source.signature,
                                  kernels->getParams(source.signature.name));
      !status)
    return failAll(status.message());
  runCases(task, source.signature, Engine{kernels.get(), nullptr}, summary);
}

/// Reports case `label` (failed with `failures`, if any) and counts it.
static void recordCase(const std::string &label,
                       const std::vector<std::string> &failures,
                       const std::map<ElementType, double> &worstRatio,
                       Summary &summary) {
  std::string report;
  if (!failures.empty()) {
    report = "FAIL " + label;
    for (const std::string &failure : failures)
      report += "\n  " + failure;
  } else if (verboseOption) {
    report = "PASS " + label;
  }
  if (!report.empty())
    summary.report(report);
  std::lock_guard<std::mutex> lock(summary.mutex);
  ++(failures.empty() ? summary.passed : summary.failed);
  for (auto [type, ratio] : worstRatio)
    summary.worstRatio[type] = std::max(summary.worstRatio[type], ratio);
}

/// Every row count of `task` on `engine`.
static void runCases(const Task &task, const KernelSignature &signature,
                     const Engine &engine, Summary &summary) {
  {
    std::lock_guard<std::mutex> lock(summary.mutex);
    ++summary.compiled;
  }
  for (int64_t rows : task.rowCounts) {
    CaseCheck check(task.label + " rows=" + std::to_string(rows));
    runCase(task, signature, engine, rows, check);
    recordCase(check.label, check.failures, check.worstRatio, summary);
  }
}

/// An attention task: its variant's case at the task's head dim and type
/// over the batch of its row counts, on the engine of the sweep (the host's
/// kernels compiled as compileForHost does, whatever --host-cpu and
/// --opt-level say).
static void runAttentionTask(const Task &task, Summary &summary) {
  const AttentionVariant &variant = *task.variant->attention;
  static const std::map<std::string, AttentionFault> kFaults = {
      {"value", AttentionFault::Value}, {"nan", AttentionFault::Nan},
      {"guard", AttentionFault::Guard}, {"gap", AttentionFault::Gap},
      {"input", AttentionFault::Input}};
  auto found = kFaults.find(injectOption);
  AttentionFault fault =
      found == kFaults.end() ? AttentionFault::None : found->second;
  AttentionEngine engine{ptxsimOptions, checkTarget};
  ElementType type = task.spec.input;
  int64_t headDim = task.spec.hidden;
  AttentionResult result =
      variant.prefill
          ? runAttentionCase(
                makePrefillCase(variant, type, headDim, task.rowCounts),
                engine, fault)
          : runDecodeCase(
                makeDecodeCase(variant, type, headDim, task.rowCounts),
                engine, fault);
  if (!result.ok() && !result.kernel.empty())
    result.failures.push_back("kernel " + result.kernel);
  {
    std::lock_guard<std::mutex> lock(summary.mutex);
    summary.compiled += result.kernelsCompiled;
  }
  recordCase(task.label, result.failures, result.worstRatio, summary);
}

static std::string getLaunchKey(const LaunchConfig &launch) {
  return launch.getMangledSuffix();
}

namespace {
/// The shapes of the attention variants.
struct AttentionPlan {
  std::vector<int64_t> headDims;
  std::vector<ElementType> types;
  /// Of the one batch.
  std::vector<int64_t> lengths;
};
} // namespace

/// Every (variant, size, type, configuration) with the row counts it runs;
/// the attention variants' as `attention` says.
static std::vector<Task> planTasks(const KernelProvider &provider,
                                   const std::vector<const Variant *> &variants,
                                   const std::vector<int64_t> &sizes,
                                   const std::vector<int64_t> &rowCounts,
                                   const std::vector<ElementType> &types,
                                   const AttentionPlan &attention) {
  std::vector<Task> tasks;
  for (const Variant *variant : variants)
    for (int64_t hidden : variant->attention ? attention.headDims : sizes)
      for (ElementType type : variant->attention ? attention.types : types) {
        if (!variant->main && !variant->attention && !everySizeOption &&
            hiddenOption.empty() &&
            llvm::find(kSubsetSizes, hidden) == std::end(kSubsetSizes))
          continue;
        OpSpec spec;
        spec.hidden = hidden;
        spec.input = spec.output = spec.param = spec.statsType = spec.addendType =
            spec.skipType = type;
        if (!variant->configure(spec) || !provider.supports(spec))
          continue;
        if (variant->attention && !ptxasAudit) {
          std::string label = std::string(variant->name) + " " +
                              std::string(getElementTypeName(type)) +
                              " head_dim=" + std::to_string(hidden) +
                              " seqlens=";
          const std::vector<int64_t> &lengths = attention.lengths;
          for (size_t i = 0; i < lengths.size(); ++i)
            label += (i ? "," : "") + std::to_string(lengths[i]);
          if (spec.cacheBlockSize)
            label += " pages=" + std::to_string(spec.cacheBlockSize) +
                     (spec.pageIndptr ? " ragged" : "");
          if (spec.fp8Cache)
            label += spec.cacheScalePerHead ? " fp8=head" : " fp8=tensor";
          tasks.push_back({variant, spec, {}, lengths, label});
          continue;
        }
        std::map<std::string, Task> byLaunch;
        auto add = [&](const LaunchConfig &launch, int64_t rows,
                       const char *role) {
          Task &task = byLaunch[getLaunchKey(launch)];
          if (task.rowCounts.empty()) {
            task = {variant, spec, launch, {}, ""};
            task.label = std::string(variant->name) + " " +
                         std::string(getElementTypeName(type)) +
                         " hidden=" + std::to_string(hidden) + " " +
                         getLaunchKey(launch) + " (" + role + ")";
          }
          if (llvm::find(task.rowCounts, rows) == task.rowCounts.end())
            task.rowCounts.push_back(rows);
        };
        for (int64_t rows : rowCounts)
          add(provider.getDefaultLaunch(spec, rows), rows, "default");
        // What the runtime would launch: the heuristic's launch for each
        // row bucket's tuning rows and what the tuner times beside it (not
        // the CPU sweep's own alternates).
        if (ptxasAudit) {
          for (jit::RowBucket bucket : jit::kAllRowBuckets) {
            LaunchConfig heuristic = provider.getDefaultLaunch(
                spec, jit::getTuningRows(spec, bucket));
            add(heuristic, 1, "heuristic");
            if (!defaultLaunchOnly)
              for (const LaunchConfig &launch : jit::getTuningCandidates(
                       spec, bucket, heuristic,
                       checkTarget.getMaxSharedBytes()))
                add(launch, 1, "candidate");
          }
          for (auto &[key, task] : byLaunch)
            tasks.push_back(std::move(task));
          continue;
        }
        int64_t vector = provider.getDefaultLaunch(spec, -1).vector;
        if (!defaultLaunchOnly)
          for (const LaunchConfig &launch : getAlternateLaunches(spec, vector))
            for (int64_t rows : rowCounts)
              add(launch, rows, "alternate");
        // Backward grids are persistent: more than kBackwardCtas blocks of
        // rows make each CTA loop over several (short rows only, for the
        // host's time; not on the simulator, which runs a few thousand
        // threads a second).
        if (spec.backward && spec.hidden <= 1024 && ptxsimOptions.root.empty())
          for (auto &[key, task] : byLaunch) {
            int64_t perToken = getRowsPerToken(spec);
            task.rowCounts.push_back(
                ((kBackwardCtas + 7) * task.launch.rowsPerCta + perToken - 1) /
                perToken);
          }
        for (auto &[key, task] : byLaunch)
          tasks.push_back(std::move(task));
      }
  return tasks;
}

/// The kLongRows cases of `variants` and `types`, default launches only.
static std::vector<Task>
planLongRowTasks(const KernelProvider &provider,
                 const std::vector<const Variant *> &variants,
                 const std::vector<int64_t> &rowCounts,
                 const std::vector<ElementType> &types) {
  std::vector<Task> tasks;
  for (const LongRowCase &longRow : kLongRows) {
    auto variant = llvm::find_if(variants, [&](const Variant *v) {
      return llvm::StringRef(v->name) == longRow.variant;
    });
    if (variant == variants.end() || !llvm::is_contained(types, longRow.type))
      continue;
    OpSpec spec;
    spec.hidden = longRow.hidden;
    spec.input = spec.output = spec.param = spec.statsType = spec.addendType = spec.skipType =
        longRow.type;
    if (!(*variant)->configure(spec))
      continue;
    LaunchConfig launch = longRow.launch.vector
                              ? longRow.launch
                              : provider.getDefaultLaunch(spec, -1);
    Task task{*variant, spec, launch, rowCounts, ""};
    task.label = std::string(longRow.variant) + " " +
                 std::string(getElementTypeName(longRow.type)) +
                 " hidden=" + std::to_string(longRow.hidden) + " " +
                 getLaunchKey(launch) + " (long row)";
    tasks.push_back(std::move(task));
  }
  return tasks;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(checkCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "norm-cpu-check: runs the generated kernels on the CPU and checks them "
      "against float64 references\n");

  if (listVariants) {
    for (const Variant &variant : getVariants())
      llvm::outs() << variant.name << ": " << variant.description << "\n";
    return 0;
  }

  std::unique_ptr<KernelProvider> provider;
  TargetOptions &target = checkTarget;
  target.pdl = pdlOption;
  target.chip = chipOption;
  if (engineOption == "ptxas") {
    ptxasAudit = true;
    if (kernelsOption != "generated") {
      llvm::errs() << "norm-cpu-check: --engine=ptxas needs the generated "
                      "kernels\n";
      return 2;
    }
  } else if (engineOption == "ptxsim") {
    ptxsimOptions.root = findPtxsim(NORM_SOURCE_DIR);
    ptxsimOptions.warpShuffle = warpShuffleOption;
    ptxsimOptions.cpAsyncDefer = cpAsyncDeferOption;
    if (ptxsimOptions.root.empty() || kernelsOption != "generated") {
      llvm::errs() << "norm-cpu-check: --engine=ptxsim needs the generated "
                      "kernels and the simulator ($NORM_PTXSIM, or "
                      "../shared/tools/ptxsim beside the source tree)\n";
      return 2;
    }
    // The simulator's configuration holds 164 KiB of shared memory: rows
    // staged beyond it would not launch there.
    target.maxSharedBytes =
        std::min<int64_t>(target.getMaxSharedBytes(), 160 * 1024);
  } else if (engineOption != "host") {
    llvm::errs() << "norm-cpu-check: unknown --engine '" << engineOption
                 << "'\n";
    return 2;
  }
  if (Status status = target.verify(); !status) {
    llvm::errs() << "norm-cpu-check: --chip: " << status.message() << "\n";
    return 2;
  }
  if (kernelsOption == "generated")
    provider = createGeneratedKernels(target);
  else if (kernelsOption == "hand-written")
    provider = createHandWrittenKernels();
  if (!provider) {
    llvm::errs() << "norm-cpu-check: unknown kernel source '" << kernelsOption
                 << "'\n";
    return 2;
  }
  static const char *kInjections[] = {"",    "value", "nan",  "guard",
                                      "gap", "input", "spill"};
  if (llvm::find(kInjections, injectOption) == std::end(kInjections)) {
    llvm::errs() << "norm-cpu-check: unknown --inject kind '" << injectOption
                 << "'\n";
    return 2;
  }

  static const char *kInputModes[] = {"uniform",  "outlier", "spikes", "constant",
                                      "offset",   "tiny",    "huge"};
  if (llvm::find(kInputModes, inputsOption) == std::end(kInputModes)) {
    llvm::errs() << "norm-cpu-check: unknown --inputs mode '" << inputsOption
                 << "'\n";
    return 2;
  }

  std::vector<const Variant *> variants;
  // Attention only where named: its shapes are not the rows'.
  for (const Variant &variant : getVariants())
    if (variantsOption.empty() ? !variant.attention
                               : llvm::is_contained(variantsOption,
                                                    variant.name))
      variants.push_back(&variant);
  if (variants.size() < std::max<size_t>(1, variantsOption.size())) {
    llvm::errs() << "norm-cpu-check: unknown variant in --variants (see "
                    "--list-variants)\n";
    return 2;
  }
  std::vector<int64_t> sizes(hiddenOption.begin(), hiddenOption.end());
  if (sizes.empty())
    sizes.assign(std::begin(kHiddenSizes), std::end(kHiddenSizes));
  std::vector<int64_t> rowCounts(rowsOption.begin(), rowsOption.end());
  if (rowCounts.empty())
    rowCounts.assign(std::begin(kRowCounts), std::end(kRowCounts));
  std::vector<ElementType> types;
  for (const std::string &name : typesOption) {
    std::optional<ElementType> type = parseElementType(name);
    if (!type) {
      llvm::errs() << "norm-cpu-check: unknown element type '" << name << "'\n";
      return 2;
    }
    types.push_back(*type);
  }
  if (types.empty())
    types.assign(std::begin(kTypes), std::end(kTypes));
  for (int64_t value : sizes)
    if (value < 1) {
      llvm::errs() << "norm-cpu-check: hidden sizes must be positive\n";
      return 2;
    }
  for (int64_t value : rowCounts)
    if (value < 0) {
      llvm::errs() << "norm-cpu-check: row counts must not be negative\n";
      return 2;
    }

  // Attention: its head dims, types and batch, each one it has.
  AttentionPlan attention;
  std::vector<int64_t> &headDims = attention.headDims;
  headDims.assign(hiddenOption.begin(), hiddenOption.end());
  if (headDims.empty() && everySizeOption)
    headDims.assign(std::begin(kEveryAttentionHeadDim),
                    std::end(kEveryAttentionHeadDim));
  else if (headDims.empty())
    headDims.assign(std::begin(kAttentionHeadDims),
                    std::end(kAttentionHeadDims));
  attention.types = typesOption.empty() ? std::vector{ElementType::bf16} : types;
  std::vector<int64_t> &lengths = attention.lengths;
  lengths.assign(seqlensOption.begin(), seqlensOption.end());
  if (lengths.empty())
    lengths.assign(std::begin(kSequenceLengths), std::end(kSequenceLengths));
  if (llvm::any_of(lengths, [](int64_t length) { return length < 0; })) {
    llvm::errs() << "norm-cpu-check: sequence lengths must not be negative\n";
    return 2;
  }
  if (!fp8CacheOption.empty() && fp8CacheOption != "tensor" &&
      fp8CacheOption != "head") {
    llvm::errs() << "norm-cpu-check: --fp8-cache takes 'tensor' or 'head', "
                    "got '"
                 << fp8CacheOption << "'\n";
    return 2;
  }
  if (pageIndptrOption && !cacheBlockSizeOption) {
    llvm::errs() << "norm-cpu-check: --page-indptr pages a cache: give "
                    "--cache-block-size too\n";
    return 2;
  }
  if (cacheBlockSizeOption)
    if (Status status = verifyCacheBlockSize(cacheBlockSizeOption); !status) {
      llvm::errs() << "norm-cpu-check: --cache-block-size: " << status.message()
                   << "\n";
      return 2;
    }
  if (llvm::any_of(variants, [](const Variant *v) { return v->attention; })) {
    if (kernelsOption != "generated") {
      llvm::errs() << "norm-cpu-check: the attention variants need the "
                      "generated kernels\n";
      return 2;
    }
    for (int64_t headDim : headDims)
      if (Status status = ::norm::verifyAttentionHeadDim(headDim); !status) {
        llvm::errs() << "norm-cpu-check: --hidden: " << status.message()
                     << "\n";
        return 2;
      }
    for (ElementType type : attention.types)
      if (type != ElementType::f16 && type != ElementType::bf16) {
        llvm::errs() << "norm-cpu-check: --types: attention runs in f16 and "
                        "bf16, not "
                     << getElementTypeName(type) << "\n";
        return 2;
      }
  }

  std::vector<Task> tasks =
      planTasks(*provider, variants, sizes, rowCounts, types, attention);
  if (hiddenOption.empty()) {
    std::vector<int64_t> longRowCounts(rowsOption.begin(), rowsOption.end());
    if (longRowCounts.empty())
      longRowCounts.assign(std::begin(kLongRowCounts),
                           std::end(kLongRowCounts));
    // Long rows first: the workers take the largest tasks while the others
    // still wait.
    std::vector<Task> longRows =
        planLongRowTasks(*provider, variants, longRowCounts, types);
    tasks.insert(tasks.begin(), longRows.begin(), longRows.end());
  }
  Summary summary;
  auto start = std::chrono::steady_clock::now();
  unsigned jobs = jobsOption
                      ? jobsOption.getValue()
                      : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned i = 0; i < jobs; ++i)
    workers.emplace_back([&] {
      for (size_t index; (index = next++) < tasks.size();)
        runTask(tasks[index], *provider, summary);
    });
  for (std::thread &worker : workers)
    worker.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  llvm::outs() << "norm-cpu-check: " << provider->getName()
               << " kernels: " << summary.passed << " cases passed, "
               << summary.failed << " failed";
  if (summary.refused)
    llvm::outs() << ", " << summary.refused << " refused as unsupported";
  if (ptxasAudit)
    llvm::outs() << ", no spill in those passed; most registers "
                 << summary.mostRegisters << " ("
                 << summary.mostRegistersLabel << ")";
  llvm::outs() << " (" << summary.compiled
               << " kernels compiled, " << llvm::format("%.1f", seconds)
               << " s)\n";
  if (!ptxasAudit) {
    llvm::outs() << "worst error / tolerance:";
    for (auto [type, ratio] : summary.worstRatio)
      llvm::outs() << " " << getElementTypeName(type) << " "
                   << llvm::format("%.3f", ratio);
    llvm::outs() << "\n";
  }
  return summary.failed == 0 && summary.passed + summary.refused > 0 ? 0 : 1;
}
