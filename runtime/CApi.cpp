//===- CApi.cpp - libnormjit, the C API -----------------------------------===//
//
// A thin layer over Runtime.h: checks what C callers can get wrong (null
// pointers, struct sizes, enum values), converts, and keeps the message of
// the last failure per thread.
//
//===----------------------------------------------------------------------===//

#include "runtime/normjit.h"

#include "runtime/Exceptions.h"
#include "runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

using namespace norm;
using namespace norm::jit;

struct normjit_context {
  std::unique_ptr<Context> context;
};

struct normjit_kernel {
  std::shared_ptr<const Kernel> kernel;
};

static_assert(NORMJIT_ERROR_INTERNAL == static_cast<int>(ErrorCode::Internal));
static_assert(NORMJIT_ERROR_OUT_OF_MEMORY ==
              static_cast<int>(ErrorCode::OutOfMemory));
static_assert(NORMJIT_ERROR_INVALID_ARGUMENT ==
              static_cast<int>(ErrorCode::InvalidArgument));
static_assert(NORMJIT_ERROR_NOT_FOUND == static_cast<int>(ErrorCode::NotFound));
static_assert(NORMJIT_NUM_BUFFERS == kNumBufferSlots);
static_assert(NORMJIT_GRAD_OUTPUT == static_cast<int>(BufferSlot::GradOutput));
static_assert(NORMJIT_SAVED_RSTD == static_cast<int>(BufferSlot::SavedRstd));
static_assert(NORMJIT_WEIGHT_GRAD_PARTIALS ==
              static_cast<int>(BufferSlot::WeightGradPartials));
static_assert(NORMJIT_WEIGHT_GRAD == static_cast<int>(BufferSlot::WeightGrad));
static_assert(NORMJIT_BIAS_GRAD == static_cast<int>(BufferSlot::BiasGrad));
static_assert(NORMJIT_OP_GROUP_NORM ==
              static_cast<int>(OpSpec::Kind::GroupNorm));
static_assert(NORMJIT_K == static_cast<int>(BufferSlot::K));
static_assert(NORMJIT_RESIDUAL_OUT ==
              static_cast<int>(BufferSlot::ResidualOut));
static_assert(NORMJIT_V == static_cast<int>(BufferSlot::V));
static_assert(NORMJIT_CU_SEQLENS == static_cast<int>(BufferSlot::CuSeqlens));
static_assert(NORMJIT_LSE == static_cast<int>(BufferSlot::Lse));
static_assert(NORMJIT_BF16 == static_cast<int>(ElementType::bf16));
static_assert(NORMJIT_F32 == static_cast<int>(ElementType::f32));
static_assert(NORMJIT_I32 == static_cast<int>(ElementType::i32));
static_assert(NORMJIT_OP_QK_NORM ==
              static_cast<int>(OpSpec::Kind::QKNormPrologue));
static_assert(NORMJIT_OP_ATTENTION ==
              static_cast<int>(OpSpec::Kind::Attention));
static_assert(NORMJIT_OP_ATTENTION_DECODE ==
              static_cast<int>(OpSpec::Kind::AttentionDecode));
static_assert(NORMJIT_OP_K_PREPARE ==
              static_cast<int>(OpSpec::Kind::KeyPrepare));
static_assert(NORMJIT_K_OUT == static_cast<int>(BufferSlot::KOut));
static_assert(NORMJIT_V_OUT == static_cast<int>(BufferSlot::VOut));
static_assert(NORMJIT_K_CACHE == static_cast<int>(BufferSlot::KCache));
static_assert(NORMJIT_V_CACHE == static_cast<int>(BufferSlot::VCache));
static_assert(NORMJIT_CACHE_SEQLENS ==
              static_cast<int>(BufferSlot::CacheSeqlens));
static_assert(NORMJIT_WORKSPACE == static_cast<int>(BufferSlot::Workspace));
static_assert(NORMJIT_SEMAPHORES == static_cast<int>(BufferSlot::Semaphores));
static_assert(NORMJIT_POSITIONS == static_cast<int>(BufferSlot::Positions));
static_assert(NORMJIT_ROPE_TABLE == static_cast<int>(BufferSlot::RopeTable));
static_assert(NORMJIT_OP_BATCH_NORM_STATS ==
              static_cast<int>(OpSpec::Kind::BatchNormStats));
static_assert(NORMJIT_ROPE_NONE == static_cast<int>(RopeStyle::None));
static_assert(NORMJIT_ROPE_NEOX == static_cast<int>(RopeStyle::NeoX));
static_assert(NORMJIT_ROPE_GPTJ == static_cast<int>(RopeStyle::GptJ));
static_assert(NORMJIT_PLAN_TUNED ==
              static_cast<int>(BucketReport::Source::Tuned));
static_assert(NORMJIT_PLAN_TUNING_CACHE ==
              static_cast<int>(BucketReport::Source::TuningCache));
static_assert(NORMJIT_PLAN_BUNDLE ==
              static_cast<int>(BucketReport::Source::Bundle));
static_assert(NORMJIT_PLAN_HEURISTIC ==
              static_cast<int>(BucketReport::Source::Heuristic));
static_assert(NORMJIT_PLAN_FIXED ==
              static_cast<int>(BucketReport::Source::Fixed));

// The published layouts (normjit.h): API 2 added one trailing field to the
// context options, API 3 trailing fields to the op desc, the launch
// arguments (three tensors) and the tuning info, API 4 the launch arguments
// (five tensors and cache_rows), API 5 two tensors before cache_rows (read
// at its API 4 place from API 4's layout) and rope_table_rows, API 6 ten
// tensors before both (read at their API 5 places from API 5's layout),
// API 8 three more (read at their API 6 places from API 6 and 7's layout),
// API 10 two, API 12 three.
static_assert(sizeof(void *) == 8, "the C ABI is defined for 64-bit hosts");
static_assert(offsetof(normjit_op_desc, scale) == NORMJIT_OP_DESC_SIZE_V1);
// The rotary embedding fields follow scale, where API 3's first layout
// ended: its callers get no rotary embeddings.
static_assert(offsetof(normjit_op_desc, rope) ==
              offsetof(normjit_op_desc, scale) + sizeof(double));
static_assert(sizeof(normjit_op_desc) == NORMJIT_OP_DESC_SIZE_V3);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_V * sizeof(normjit_tensor) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V1);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_K_CACHE * sizeof(normjit_tensor) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V3);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_POSITIONS * sizeof(normjit_tensor) +
                  sizeof(int64_t) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V4);
static_assert(offsetof(normjit_launch_args, cache_rows) ==
              offsetof(normjit_launch_args, tensors) +
                  NORMJIT_NUM_BUFFERS * sizeof(normjit_tensor));
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_GRAD_OUTPUT * sizeof(normjit_tensor) +
                  2 * sizeof(int64_t) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V5);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_OUTPUT_SCALE * sizeof(normjit_tensor) +
                  2 * sizeof(int64_t) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V6);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_K_OUT * sizeof(normjit_tensor) +
                  2 * sizeof(int64_t) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V8);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_BLOCK_TABLES * sizeof(normjit_tensor) +
                  2 * sizeof(int64_t) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V10);
static_assert(offsetof(normjit_launch_args, tensors) +
                  NORMJIT_PAGE_INDPTR * sizeof(normjit_tensor) +
                  2 * sizeof(int64_t) ==
              NORMJIT_LAUNCH_ARGS_SIZE_V12);
static_assert(sizeof(normjit_launch_args) == NORMJIT_LAUNCH_ARGS_SIZE_V13);
static_assert(NORMJIT_PAGE_INDPTR == static_cast<int>(BufferSlot::PageIndptr));
static_assert(NORMJIT_BLOCK_TABLES ==
              static_cast<int>(BufferSlot::BlockTables));
static_assert(NORMJIT_K_SCALE == static_cast<int>(BufferSlot::KScale));
static_assert(NORMJIT_V_SCALE == static_cast<int>(BufferSlot::VScale));
// API 12's cache_block_size took the place of API 3's reserved field.
static_assert(offsetof(normjit_op_desc, cache_block_size) ==
              offsetof(normjit_op_desc, rope) + sizeof(int32_t));
static_assert(NORMJIT_F8E4M3FN == static_cast<int>(ElementType::f8E4M3FN));
static_assert(NORMJIT_F8E5M2 == static_cast<int>(ElementType::f8E5M2));
static_assert(NORMJIT_OUTPUT_SCALE ==
              static_cast<int>(BufferSlot::OutputScale));
static_assert(NORMJIT_SCALE_UB ==
              static_cast<int>(BufferSlot::ScaleUpperBound));
static_assert(NORMJIT_OUTPUT_SCALES ==
              static_cast<int>(BufferSlot::OutputScales));
static_assert(offsetof(normjit_tuning_info, block_n) ==
              NORMJIT_TUNING_INFO_SIZE_V1);
static_assert(sizeof(normjit_tuning_info) == NORMJIT_TUNING_INFO_SIZE_V3);
static_assert(offsetof(normjit_context_options, tuning_scratch_bytes) ==
              NORMJIT_CONTEXT_OPTIONS_SIZE_V1);
static_assert(offsetof(normjit_launch_config2, block_n) ==
              sizeof(normjit_launch_config));

static thread_local std::string lastError;
/// Set instead of lastError when storing the message failed.
static thread_local const char *lastErrorFallback = nullptr;

static normjit_status fail(const Status &status) noexcept {
  lastErrorFallback = nullptr;
  try {
    lastError = status.message();
  } catch (...) {
    lastError.clear();
  }
  if (lastError.empty())
    lastErrorFallback = getErrorCodeName(status.code()).data();
  return static_cast<normjit_status>(status.code());
}

/// Runs the body of a C entry point: no exception crosses into C
/// (Exceptions.h).
template <typename Body>
static normjit_status guard(const char *entry, Body &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return fail(statusFromCurrentException(entry));
  }
}

static normjit_status report(const Status &status) {
  return status.ok() ? NORMJIT_SUCCESS : fail(status);
}

static normjit_status invalid(const std::string &message) {
  return fail(Status::error(ErrorCode::InvalidArgument, message));
}

/// A normjit_dtype value: f32, f16, bf16, i32 or FP8.
static bool isDtype(int32_t dtype) {
  return dtype >= NORMJIT_F32 && dtype <= NORMJIT_F8E5M2;
}


/// Unknown flag bits and non-zero reserved fields are refused, not
/// ignored, so that later versions can give them a meaning.
static std::string describeUnknownBits(const char *field, uint32_t value,
                                       uint32_t known) {
  char bits[16];
  std::snprintf(bits, sizeof(bits), "0x%x", value & ~known);
  return std::string(field) + ": unknown bits " + bits;
}

/// The struct_size rule of normjit.h: any size from the struct's first
/// published layout (`oldest`) up to this library's sizeof; "" or why not.
static std::string checkStructSize(const char *type, uint32_t size,
                                   size_t oldest, size_t newest,
                                   const char *init) {
  if (size >= oldest && size <= newest)
    return {};
  std::string expected = std::to_string(oldest);
  if (newest != oldest)
    expected += " to " + std::to_string(newest);
  std::string message = std::string(type) + ".struct_size is " +
                        std::to_string(size) + ", expected " + expected;
  if (size > newest)
    message += " (a newer header than this libnormjit)";
  else if (init)
    message += std::string(" (call ") + init + ")";
  return message;
}

/// Whether `field` lies within the caller's struct_size: fields past it
/// (a caller built against an older header) keep their defaults.
#define NORMJIT_HAS_FIELD(object, field)                                       \
  ((object)->struct_size >=                                                    \
   offsetof(std::remove_reference_t<decltype(*(object))>, field) +             \
       sizeof((object)->field))
/// `field`, or its default 0 when it lies past the caller's struct_size.
#define NORMJIT_FIELD_OR_ZERO(object, field)                                   \
  (NORMJIT_HAS_FIELD(object, field) ? (object)->field                          \
                                    : decltype((object)->field){})

constexpr uint32_t kKnownOpFlags = (NORMJIT_OP_PAGE_INDPTR << 1) - 1;
constexpr uint32_t kAttentionOpFlags =
    NORMJIT_OP_CAUSAL | NORMJIT_OP_WRITE_LSE | NORMJIT_OP_ROPE_POSITIONS |
    NORMJIT_OP_ROPE_TABLE | NORMJIT_OP_ROPE_FIRST;
constexpr uint32_t kRopeOpFlags = NORMJIT_OP_ROPE_POSITIONS |
                                 NORMJIT_OP_ROPE_TABLE | NORMJIT_OP_ROPE_FIRST;
constexpr uint32_t kQKStatisticFlags =
    NORMJIT_OP_QK_RMS | NORMJIT_OP_QK_L2 | NORMJIT_OP_QK_MEAN_VAR;
constexpr uint32_t kKnownContextFlags =
    NORMJIT_CONTEXT_NO_TUNING | NORMJIT_CONTEXT_NO_DISK_CACHE |
    NORMJIT_CONTEXT_PDL;
constexpr uint32_t kKnownKernelFlags =
    NORMJIT_KERNEL_NO_TUNING | NORMJIT_KERNEL_REFUSE_MISALIGNED;

/// Converts a C description; false (with the status set) when malformed.
static bool convertDesc(const normjit_op_desc *desc, OpSpec &spec,
                        normjit_status &status) {
  if (!desc) {
    status = invalid("operation description is null");
    return false;
  }
  if (std::string why = checkStructSize(
          "normjit_op_desc", desc->struct_size, NORMJIT_OP_DESC_SIZE_V1,
          sizeof(normjit_op_desc), "normjit_op_desc_init");
      !why.empty()) {
    status = invalid(why);
    return false;
  }
  if (desc->kind < NORMJIT_OP_RMS_NORM ||
      desc->kind > NORMJIT_OP_K_PREPARE) {
    status = invalid("unknown operation kind " + std::to_string(desc->kind));
    return false;
  }
  // FP8 passes here: the model says which operations take it (outputs of
  // forward row kernels only).
  for (int32_t dtype : {desc->input_type, desc->output_type, desc->param_type,
                        desc->addend_type, desc->skip_type}) {
    if (!isDtype(dtype)) {
      status = invalid("unknown dtype " + std::to_string(dtype));
      return false;
    }
    if (dtype == NORMJIT_I32) {
      status = invalid("normjit_op_desc: NORMJIT_I32 is only the dtype of "
                       "the cu_seqlens buffer; tensors and parameters are "
                       "f32, f16 or bf16");
      return false;
    }
  }
  if ((desc->flags & NORMJIT_OP_OUTPUT_SCALE_STATIC) &&
      (desc->flags & NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN)) {
    status = invalid("NORMJIT_OP_OUTPUT_SCALE_STATIC and "
                     "NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN exclude each other");
    return false;
  }
  if (desc->flags & ~kKnownOpFlags) {
    status = invalid(describeUnknownBits("normjit_op_desc.flags", desc->flags,
                                         kKnownOpFlags));
    return false;
  }
  for (auto [input, addend, name] :
       {std::tuple{NORMJIT_OP_OUTPUT_OVER_INPUT, NORMJIT_OP_OUTPUT_OVER_ADDEND,
                   "OUTPUT"},
        std::tuple{NORMJIT_OP_RESIDUAL_OVER_INPUT,
                   NORMJIT_OP_RESIDUAL_OVER_ADDEND, "RESIDUAL"}}) {
    if ((desc->flags & input) && (desc->flags & addend)) {
      status = invalid(std::string("NORMJIT_OP_") + name +
                       "_OVER_INPUT and NORMJIT_OP_" + name +
                       "_OVER_ADDEND exclude each other");
      return false;
    }
  }
  uint32_t statisticFlags = desc->flags & kQKStatisticFlags;
  if (statisticFlags & (statisticFlags - 1)) {
    status = invalid("NORMJIT_OP_QK_RMS, NORMJIT_OP_QK_L2 and "
                     "NORMJIT_OP_QK_MEAN_VAR exclude each other");
    return false;
  }
  // Prefill or decode: the same fields (decode refuses causal and lse in
  // verifyOpSpec).
  bool attention = desc->kind == NORMJIT_OP_ATTENTION ||
                   desc->kind == NORMJIT_OP_ATTENTION_DECODE;
  // Fields past the caller's struct_size keep their defaults (API 2
  // callers: scale 0; API 3's first 96-byte layout: no rotary embeddings).
  double scale = NORMJIT_FIELD_OR_ZERO(desc, scale);
  int32_t rope = NORMJIT_FIELD_OR_ZERO(desc, rope);
  int32_t blockSize = NORMJIT_FIELD_OR_ZERO(desc, cache_block_size);
  int64_t rotaryDim = NORMJIT_FIELD_OR_ZERO(desc, rotary_dim);
  double ropeTheta = NORMJIT_FIELD_OR_ZERO(desc, rope_theta);
  // Checked here before the conversion, which reads these fields only for
  // attention (scale 0 is the C default, 1 / sqrt(head dim)): a message in
  // the C API's names. verifyOpSpec states the same rule for OpSpecs.
  // The QK-Norm prologue rotates too (API 9).
  bool rotary = attention || desc->kind == NORMJIT_OP_QK_NORM ||
                desc->kind == NORMJIT_OP_K_PREPARE;
  if ((!attention && (scale != 0.0 || (desc->flags & kAttentionOpFlags &
                                       ~kRopeOpFlags))) ||
      (!rotary &&
       (rope != NORMJIT_ROPE_NONE || (desc->flags & kRopeOpFlags)))) {
    // (Decode takes scale and rope too, and refuses causal and lse in
    // verifyOpSpec.)
    status = invalid("normjit_op_desc: scale, NORMJIT_OP_CAUSAL and "
                     "NORMJIT_OP_WRITE_LSE apply to NORMJIT_OP_ATTENTION "
                     "only, rope and NORMJIT_OP_ROPE_* to attention, "
                     "NORMJIT_OP_QK_NORM and NORMJIT_OP_K_PREPARE");
    return false;
  }
  if (rope < NORMJIT_ROPE_NONE || rope > NORMJIT_ROPE_GPTJ) {
    status = invalid("normjit_op_desc.rope is " + std::to_string(rope) +
                     ", not a normjit_rope (NORMJIT_ROPE_NONE, _NEOX or "
                     "_GPTJ)");
    return false;
  }
  // (Its rules are the model's: verifyOpSpec.)
  if (blockSize < 0) {
    status = invalid("normjit_op_desc.cache_block_size is " +
                     std::to_string(blockSize) + ", must not be negative");
    return false;
  }
  // A rotary dim or base without a style would be dropped silently.
  if (rope == NORMJIT_ROPE_NONE &&
      (rotaryDim != 0 || ropeTheta != 0.0 || (desc->flags & kRopeOpFlags))) {
    status = invalid("normjit_op_desc: rotary_dim, rope_theta, "
                     "NORMJIT_OP_ROPE_POSITIONS, NORMJIT_OP_ROPE_TABLE and "
                     "NORMJIT_OP_ROPE_FIRST need rope (NORMJIT_ROPE_NEOX or "
                     "NORMJIT_ROPE_GPTJ)");
    return false;
  }
  if ((desc->flags & NORMJIT_OP_ROPE_TABLE) && ropeTheta != 0.0) {
    status = invalid("normjit_op_desc: with NORMJIT_OP_ROPE_TABLE the table "
                     "gives the angles; rope_theta must be 0");
    return false;
  }
  spec.kind = static_cast<OpSpec::Kind>(desc->kind);
  spec.hidden = desc->hidden;
  spec.input = static_cast<ElementType>(desc->input_type);
  spec.output = static_cast<ElementType>(desc->output_type);
  spec.param = static_cast<ElementType>(desc->param_type);
  spec.statsType = spec.param; // one parameter type in the C API
  spec.addendType = static_cast<ElementType>(desc->addend_type);
  spec.skipType = static_cast<ElementType>(desc->skip_type);
  spec.hasWeight = desc->flags & NORMJIT_OP_WEIGHT;
  spec.hasBias = desc->flags & NORMJIT_OP_BIAS;
  spec.hasAddend = desc->flags & NORMJIT_OP_ADDEND;
  spec.writeResidual = desc->flags & NORMJIT_OP_RESIDUAL_OUT;
  spec.f32Residual = desc->flags & NORMJIT_OP_F32_RESIDUAL;
  spec.hasSkip = desc->flags & NORMJIT_OP_SKIP;
  spec.saveStats = desc->flags & NORMJIT_OP_SAVE_STATS;
  spec.backward = desc->flags & NORMJIT_OP_BACKWARD;
  spec.perHeadWeight = desc->flags & NORMJIT_OP_PER_HEAD_WEIGHT;
  auto over = [&](uint32_t input, uint32_t addend) {
    return desc->flags & input    ? RowOperand::Input
           : desc->flags & addend ? RowOperand::Addend
                                  : RowOperand::None;
  };
  spec.outputOver =
      over(NORMJIT_OP_OUTPUT_OVER_INPUT, NORMJIT_OP_OUTPUT_OVER_ADDEND);
  spec.residualOver =
      over(NORMJIT_OP_RESIDUAL_OVER_INPUT, NORMJIT_OP_RESIDUAL_OVER_ADDEND);
  spec.outputScale = desc->flags & NORMJIT_OP_OUTPUT_SCALE_STATIC
                         ? OutputScale::Static
                     : desc->flags & NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN
                         ? OutputScale::PerToken
                         : OutputScale::None;
  spec.scaleUpperBound = desc->flags & NORMJIT_OP_SCALE_UB;
  // Without a statistic flag the QK-Norm prologue normalizes with RMS (API
  // 1), attention not at all.
  if (attention || desc->kind == NORMJIT_OP_K_PREPARE)
    spec.qkStatistic = Statistic::None;
  if (desc->flags & NORMJIT_OP_QK_RMS)
    spec.qkStatistic = Statistic::RMS;
  if (desc->flags & NORMJIT_OP_QK_L2)
    spec.qkStatistic = Statistic::L2;
  if (desc->flags & NORMJIT_OP_QK_MEAN_VAR)
    spec.qkStatistic = Statistic::MeanVar;
  if (attention) {
    spec.causal = desc->flags & NORMJIT_OP_CAUSAL;
    spec.writeLse = desc->flags & NORMJIT_OP_WRITE_LSE;
    // 0: the usual 1 / sqrt(head dim); a non-positive head dim is refused
    // by the operation's rules.
    spec.scale = scale != 0.0 || desc->hidden <= 0
                     ? scale
                     : 1.0 / std::sqrt(static_cast<double>(desc->hidden));
  }
  if (rotary) {
    // 0: the whole head, the model's base; verifyRope judges the rest.
    spec.rope = static_cast<RopeStyle>(rope);
    if (spec.rope != RopeStyle::None) {
      spec.rotaryDim = rotaryDim != 0 ? rotaryDim : desc->hidden;
      spec.ropeTheta = ropeTheta != 0.0 ? ropeTheta : OpSpec().ropeTheta;
      spec.ropePositions = desc->flags & NORMJIT_OP_ROPE_POSITIONS;
      spec.ropeTable = desc->flags & NORMJIT_OP_ROPE_TABLE;
      spec.ropeFirst = desc->flags & NORMJIT_OP_ROPE_FIRST;
    }
  }
  // The operation's rules refuse it outside attention.
  spec.qkWeightPerHead = desc->flags & NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  spec.keysPrepared = desc->flags & NORMJIT_OP_PREPARED_K;
  spec.copyValues = desc->flags & NORMJIT_OP_COPY_V;
  spec.writeCache = desc->flags & NORMJIT_OP_WRITE_CACHE;
  spec.cacheBlockSize = blockSize;
  spec.pageIndptr = desc->flags & NORMJIT_OP_PAGE_INDPTR;
  spec.fp8Cache = desc->flags & NORMJIT_OP_FP8_CACHE;
  spec.cacheScalePerHead = desc->flags & NORMJIT_OP_CACHE_SCALE_PER_HEAD;
  spec.eps = desc->eps;
  spec.alpha = desc->alpha;
  spec.weightOffset = desc->weight_offset;
  spec.groups = desc->groups;
  spec.numQHeads = desc->num_q_heads;
  spec.numKvHeads = desc->num_kv_heads;
  return true;
}

/// Writes `defaults` into the first `size` bytes of `object` (zeros past
/// the library's layout) and sets struct_size = size: the _init_sized
/// functions.
template <typename Struct>
static void initSized(Struct *object, size_t size, const Struct &defaults) {
  if (!object || size < sizeof(object->struct_size))
    return;
  // The caller's size, even a larger one (a newer header): the library
  // then refuses it with a message, rather than ignoring fields it was
  // given.
  std::memset(static_cast<void *>(object), 0, size);
  std::memcpy(static_cast<void *>(object), &defaults,
              std::min(size, sizeof(defaults)));
  object->struct_size =
      static_cast<uint32_t>(std::min<size_t>(size, UINT32_MAX));
}

static normjit_launch_config convertLaunch(const LaunchConfig &launch) {
  return {launch.vector, launch.threadsPerRow, launch.warps,
          launch.rowsPerCta};
}

static normjit_launch_config2 convertLaunch2(const LaunchConfig &launch) {
  return {launch.vector,     launch.threadsPerRow, launch.warps,
          launch.rowsPerCta, launch.blockN,        launch.stages};
}

/// normjit_kernel_get_tuning(2): `write(i, candidate)` stores candidate i.
template <typename Write>
static normjit_status getTuning(const char *entry,
                                const normjit_kernel *kernel, int64_t rows,
                                normjit_tuning_info *info,
                                const void *candidates, size_t capacity,
                                Write write) {
  return guard(entry, [&] {
    if (!kernel || !info)
      return invalid("kernel or tuning info output is null");
    if (std::string why = checkStructSize(
            "normjit_tuning_info", info->struct_size,
            NORMJIT_TUNING_INFO_SIZE_V1, sizeof(normjit_tuning_info), nullptr);
        !why.empty())
      return invalid(why);
    if (capacity && !candidates)
      return invalid("capacity is " + std::to_string(capacity) +
                     " but candidates is null");
    if (rows <= 0)
      return invalid("the row count must be positive, got " +
                     std::to_string(rows));
    const BucketReport &report = kernel->kernel->getReport(getRowBucket(rows));
    info->source = static_cast<int32_t>(report.source);
    info->tuned_rows = report.tunedRows;
    info->num_candidates = report.candidates.size();
    info->config = convertLaunch(report.launch);
    // API 1 and 2 callers' structs end before these.
    if (NORMJIT_HAS_FIELD(info, stages)) {
      info->block_n = report.launch.blockN;
      info->stages = report.launch.stages;
    }
    for (size_t i = 0; i < report.candidates.size() && i < capacity; ++i)
      write(i, report.candidates[i]);
    return NORMJIT_SUCCESS;
  });
}

/// The report of the bucket of `rows`; null (status set) for bad input.
static const BucketReport *findReport(const normjit_kernel *kernel,
                                      int64_t rows, const void *output,
                                      normjit_status &status) {
  if (!kernel || !output) {
    status = invalid("kernel or config output is null");
    return nullptr;
  }
  if (rows <= 0) {
    status = invalid("the row count must be positive, got " +
                     std::to_string(rows));
    return nullptr;
  }
  return &kernel->kernel->getReport(getRowBucket(rows));
}

/// normjit_kernel_get_config(2): `convert` makes the C configuration.
template <typename Config, typename Convert>
static normjit_status getConfig(const char *entry,
                                const normjit_kernel *kernel, int64_t rows,
                                Config *config, Convert convert) {
  return guard(entry, [&] {
    normjit_status status = NORMJIT_SUCCESS;
    if (const BucketReport *report = findReport(kernel, rows, config, status))
      *config = convert(report->launch);
    return status;
  });
}

extern "C" {

const char *normjit_status_name(normjit_status status) {
  if (status < NORMJIT_SUCCESS || status > NORMJIT_ERROR_OUT_OF_MEMORY)
    return "unknown status";
  return getErrorCodeName(static_cast<ErrorCode>(status)).data();
}

const char *normjit_last_error(void) {
  return lastErrorFallback ? lastErrorFallback : lastError.c_str();
}

void normjit_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch,
                         uint32_t *api_version) {
  if (major)
    *major = NORMJIT_VERSION_MAJOR;
  if (minor)
    *minor = NORMJIT_VERSION_MINOR;
  if (patch)
    *patch = NORMJIT_VERSION_PATCH;
  if (api_version)
    *api_version = NORMJIT_API_VERSION;
}

void normjit_context_options_init_sized(normjit_context_options *options,
                                        size_t size) {
  normjit_context_options defaults{};
  defaults.log_level = -1;
  initSized(options, size, defaults);
}

// The API 1 entry point (normjit.h maps the name to the sized one).
void(normjit_context_options_init)(normjit_context_options *options) {
  normjit_context_options_init_sized(options, NORMJIT_CONTEXT_OPTIONS_SIZE_V1);
}

normjit_status normjit_context_create(const normjit_context_options *options,
                                      normjit_context **context) {
  return guard("normjit_context_create", [&] {
    if (!context)
      return invalid("context output pointer is null");
    *context = nullptr;
    if (!options)
      return invalid("context options are null");
    if (std::string why = checkStructSize(
            "normjit_context_options", options->struct_size,
            NORMJIT_CONTEXT_OPTIONS_SIZE_V1, sizeof(normjit_context_options),
            "normjit_context_options_init");
        !why.empty())
      return invalid(why);
    if (options->flags & ~kKnownContextFlags)
      return invalid(describeUnknownBits("normjit_context_options.flags",
                                         options->flags, kKnownContextFlags));
    if (options->num_bundles && !options->bundles)
      return invalid("num_bundles is " + std::to_string(options->num_bundles) +
                     " but bundles is null");
    ContextOptions opts;
    opts.device = options->device;
    if (options->driver_library)
      opts.driverLibrary = options->driver_library;
    if (options->cache_dir)
      opts.cacheDirectory = options->cache_dir;
    for (size_t i = 0; i < options->num_bundles; ++i) {
      if (!options->bundles[i])
        return invalid("bundle path " + std::to_string(i) + " is null");
      opts.bundles.push_back(options->bundles[i]);
    }
    opts.tuning = !(options->flags & NORMJIT_CONTEXT_NO_TUNING);
    opts.diskCache = !(options->flags & NORMJIT_CONTEXT_NO_DISK_CACHE);
    opts.pdl = options->flags & NORMJIT_CONTEXT_PDL;
    opts.logLevel = options->log_level;
    if (NORMJIT_HAS_FIELD(options, tuning_scratch_bytes) &&
        options->tuning_scratch_bytes) {
      if (options->tuning_scratch_bytes > uint64_t(INT64_MAX))
        return invalid("normjit_context_options.tuning_scratch_bytes is " +
                       std::to_string(options->tuning_scratch_bytes) +
                       ", more than INT64_MAX");
      opts.tuningScratchBytes =
          static_cast<int64_t>(options->tuning_scratch_bytes);
    }
    std::unique_ptr<Context> created;
    if (Status status = Context::create(opts, created); !status)
      return fail(status);
    *context = new normjit_context{std::move(created)};
    return NORMJIT_SUCCESS;
  });
}

void normjit_context_destroy(normjit_context *context) { delete context; }

void normjit_op_desc_init_sized(normjit_op_desc *desc, size_t size) {
  normjit_op_desc defaults{};
  defaults.kind = NORMJIT_OP_RMS_NORM;
  defaults.input_type = defaults.output_type = defaults.param_type =
      defaults.addend_type = defaults.skip_type = NORMJIT_BF16;
  defaults.eps = 1e-6;
  defaults.alpha = 1.0;
  defaults.groups = 1;
  initSized(desc, size, defaults);
}

// The API 1 entry point (normjit.h maps the name to the sized one).
void(normjit_op_desc_init)(normjit_op_desc *desc) {
  normjit_op_desc_init_sized(desc, NORMJIT_OP_DESC_SIZE_V1);
}

/// The desc of a backward row kernel, in `forward`'s layout (its other
/// fields kept): the inverse of convertDesc for the fields a backward row
/// kernel has.
static void convertBackwardSpec(const OpSpec &spec,
                                const normjit_op_desc &forward,
                                normjit_op_desc &desc) {
  std::memcpy(static_cast<void *>(&desc), &forward, forward.struct_size);
  desc.kind = static_cast<int32_t>(spec.kind);
  desc.hidden = spec.hidden;
  desc.input_type = static_cast<int32_t>(spec.input);
  desc.output_type = static_cast<int32_t>(spec.output);
  desc.param_type = static_cast<int32_t>(spec.param);
  desc.addend_type = static_cast<int32_t>(spec.addendType);
  desc.skip_type = static_cast<int32_t>(spec.skipType);
  desc.flags = NORMJIT_OP_BACKWARD;
  for (auto [has, flag] :
       {std::pair{spec.hasWeight, NORMJIT_OP_WEIGHT},
        std::pair{spec.hasBias, NORMJIT_OP_BIAS},
        std::pair{spec.hasAddend, NORMJIT_OP_ADDEND},
        std::pair{spec.writeResidual, NORMJIT_OP_RESIDUAL_OUT},
        std::pair{spec.perHeadWeight, NORMJIT_OP_PER_HEAD_WEIGHT}})
    if (has)
      desc.flags |= flag;
  desc.alpha = spec.alpha;
  desc.weight_offset = spec.weightOffset;
  desc.groups = spec.groups;
  desc.num_q_heads = desc.num_kv_heads = 0;
}

normjit_status normjit_op_desc_get_backward(const normjit_op_desc *forward,
                                            normjit_op_desc *backward,
                                            size_t capacity, size_t *count) {
  return guard("normjit_op_desc_get_backward", [&] {
    if (!count)
      return invalid("count is null");
    *count = 0;
    if (capacity && !backward)
      return invalid("capacity is " + std::to_string(capacity) +
                     " but backward is null");
    OpSpec spec;
    normjit_status status;
    if (!convertDesc(forward, spec, status))
      return status;
    BackwardKernels kernels;
    if (Status derived = getBackwardKernels(spec, kernels); !derived)
      return report(derived);
    // The caller's array steps by its header's sizeof.
    for (size_t i = 0; i < kernels.rows.size() && i < capacity; ++i)
      convertBackwardSpec(kernels.rows[i], *forward,
                          *reinterpret_cast<normjit_op_desc *>(
                              reinterpret_cast<char *>(backward) +
                              i * forward->struct_size));
    *count = kernels.rows.size();
    return NORMJIT_SUCCESS;
  });
}

/// normjit_kernel_create with an optional fixed configuration.
static normjit_status createKernel(const char *entry, normjit_context *context,
                                   const normjit_op_desc *desc,
                                   const std::optional<LaunchConfig> &config,
                                   uint32_t flags, normjit_kernel **kernel) {
  return guard(entry, [&] {
    if (!kernel)
      return invalid("kernel output pointer is null");
    *kernel = nullptr;
    if (!context)
      return invalid("context is null");
    if (flags & ~kKnownKernelFlags)
      return invalid(describeUnknownBits(
          (std::string(entry) + " flags").c_str(), flags, kKnownKernelFlags));
    OpSpec spec;
    normjit_status status;
    if (!convertDesc(desc, spec, status))
      return status;
    KernelOptions options;
    options.tune = !(flags & NORMJIT_KERNEL_NO_TUNING);
    options.refuseMisaligned = flags & NORMJIT_KERNEL_REFUSE_MISALIGNED;
    options.launch = config;
    std::shared_ptr<const Kernel> created;
    if (Status s = context->context->getKernel(spec, options, created); !s)
      return fail(s);
    *kernel = new normjit_kernel{std::move(created)};
    return NORMJIT_SUCCESS;
  });
}

/// A fixed configuration entry point's null check, then createKernel.
static normjit_status createWithConfig(const char *entry,
                                       normjit_context *context,
                                       const normjit_op_desc *desc,
                                       const void *config,
                                       const LaunchConfig &launch,
                                       uint32_t flags,
                                       normjit_kernel **kernel) {
  if (!config) {
    if (kernel)
      *kernel = nullptr;
    return guard(entry,
                 [&] { return invalid("launch configuration is null"); });
  }
  return createKernel(entry, context, desc, launch, flags, kernel);
}

normjit_status normjit_kernel_create(normjit_context *context,
                                     const normjit_op_desc *desc,
                                     uint32_t flags, normjit_kernel **kernel) {
  return createKernel("normjit_kernel_create", context, desc, std::nullopt,
                      flags, kernel);
}

normjit_status normjit_kernel_create_with_config(
    normjit_context *context, const normjit_op_desc *desc,
    const normjit_launch_config *config, uint32_t flags,
    normjit_kernel **kernel) {
  LaunchConfig launch;
  if (config)
    launch = {config->vector, config->threads_per_row, config->warps,
              config->rows_per_cta};
  return createWithConfig("normjit_kernel_create_with_config", context, desc,
                          config, launch, flags, kernel);
}

normjit_status normjit_kernel_create_with_config2(
    normjit_context *context, const normjit_op_desc *desc,
    const normjit_launch_config2 *config, uint32_t flags,
    normjit_kernel **kernel) {
  LaunchConfig launch;
  if (config)
    launch = {config->vector,       config->threads_per_row, config->warps,
              config->rows_per_cta, config->block_n,         config->stages};
  return createWithConfig("normjit_kernel_create_with_config2", context, desc,
                          config, launch, flags, kernel);
}

void normjit_kernel_destroy(normjit_kernel *kernel) { delete kernel; }

void normjit_launch_args_init_sized(normjit_launch_args *args, size_t size) {
  initSized(args, size, normjit_launch_args{});
}

// The API 1 entry point (normjit.h maps the name to the sized one).
void(normjit_launch_args_init)(normjit_launch_args *args) {
  normjit_launch_args_init_sized(args, NORMJIT_LAUNCH_ARGS_SIZE_V1);
}

namespace {
/// Where the caller's normjit_launch_args keeps what: API 1 to 3 layouts
/// grow tensor by tensor; from API 4 on, cache_rows and rope_table_rows
/// follow the tensors, so only the published sizes are layouts.
struct ArgsLayout {
  int tensors = 0;
  size_t cacheRows = 0, tableRows = 0; // offsets; 0: not in the layout
};
} // namespace

/// The layout of `args` by its struct_size; false for a size between two
/// layouts from API 4 on.
static bool getArgsLayout(const normjit_launch_args &args,
                          ArgsLayout &layout) {
  constexpr size_t tensors = offsetof(normjit_launch_args, tensors);
  constexpr size_t tensor = sizeof(normjit_tensor), row = sizeof(int64_t);
  layout = ArgsLayout();
  switch (args.struct_size) {
  case NORMJIT_LAUNCH_ARGS_SIZE_V4:
    layout = {NORMJIT_POSITIONS, NORMJIT_LAUNCH_ARGS_SIZE_V4 - row, 0};
    return true;
  case NORMJIT_LAUNCH_ARGS_SIZE_V5:
    layout = {NORMJIT_GRAD_OUTPUT, NORMJIT_LAUNCH_ARGS_SIZE_V5 - 2 * row,
              NORMJIT_LAUNCH_ARGS_SIZE_V5 - row};
    return true;
  case NORMJIT_LAUNCH_ARGS_SIZE_V6:
    layout = {NORMJIT_OUTPUT_SCALE, NORMJIT_LAUNCH_ARGS_SIZE_V6 - 2 * row,
              NORMJIT_LAUNCH_ARGS_SIZE_V6 - row};
    return true;
  case NORMJIT_LAUNCH_ARGS_SIZE_V8:
    layout = {NORMJIT_K_OUT, NORMJIT_LAUNCH_ARGS_SIZE_V8 - 2 * row,
              NORMJIT_LAUNCH_ARGS_SIZE_V8 - row};
    return true;
  case NORMJIT_LAUNCH_ARGS_SIZE_V10:
    layout = {NORMJIT_BLOCK_TABLES, NORMJIT_LAUNCH_ARGS_SIZE_V10 - 2 * row,
              NORMJIT_LAUNCH_ARGS_SIZE_V10 - row};
    return true;
  case NORMJIT_LAUNCH_ARGS_SIZE_V12:
    layout = {NORMJIT_PAGE_INDPTR, NORMJIT_LAUNCH_ARGS_SIZE_V12 - 2 * row,
              NORMJIT_LAUNCH_ARGS_SIZE_V12 - row};
    return true;
  case NORMJIT_LAUNCH_ARGS_SIZE_V13:
    layout = {NORMJIT_NUM_BUFFERS, offsetof(normjit_launch_args, cache_rows),
              offsetof(normjit_launch_args, rope_table_rows)};
    return true;
  default:
    if (args.struct_size > NORMJIT_LAUNCH_ARGS_SIZE_V4)
      return false;
    layout.tensors = static_cast<int>(
        args.struct_size > tensors ? (args.struct_size - tensors) / tensor : 0);
    return true;
  }
}

/// The int64_t at `offset` of `args` (0 where the layout has none).
static int64_t readCount(const normjit_launch_args &args, size_t offset) {
  int64_t value = 0;
  if (offset)
    std::memcpy(&value, reinterpret_cast<const char *>(&args) + offset,
                sizeof(value));
  return value;
}

static std::string getSlotName(int slot) {
  return std::string(getBufferSlotName(static_cast<BufferSlot>(slot)));
}

normjit_status normjit_launch_args_set(normjit_launch_args *args,
                                       int32_t buffer, const void *data,
                                       int32_t dtype, int64_t cols,
                                       int64_t row_stride) {
  return guard("normjit_launch_args_set", [&] {
    if (!args)
      return invalid("launch arguments are null");
    if (buffer < 0 || buffer >= NORMJIT_NUM_BUFFERS)
      return invalid("unknown buffer " + std::to_string(buffer));
    ArgsLayout layout;
    if (!getArgsLayout(*args, layout) || buffer >= layout.tensors)
      return invalid("buffer " + std::to_string(buffer) + " ('" +
                     getSlotName(buffer) +
                     "') lies past normjit_launch_args.struct_size " +
                     std::to_string(args->struct_size) +
                     " (an older layout: call normjit_launch_args_init)");
    if (!isDtype(dtype))
      return invalid("unknown dtype " + std::to_string(dtype));
    args->tensors[buffer] = {data, dtype, 0, cols, row_stride};
    return NORMJIT_SUCCESS;
  });
}

normjit_status normjit_kernel_launch(const normjit_kernel *kernel,
                                     const normjit_launch_args *args,
                                     int64_t rows, void *stream) {
  return guard("normjit_kernel_launch", [&] {
    if (!kernel)
      return invalid("kernel is null");
    if (!args)
      return invalid("launch arguments are null");
    if (std::string why = checkStructSize(
            "normjit_launch_args", args->struct_size,
            NORMJIT_LAUNCH_ARGS_SIZE_V1, sizeof(normjit_launch_args),
            "normjit_launch_args_init");
        !why.empty())
      return invalid(why);
    // Between two layouts from API 4 on, cache_rows has no place.
    ArgsLayout layout;
    if (!getArgsLayout(*args, layout))
      return invalid(
          "normjit_launch_args.struct_size is " +
          std::to_string(args->struct_size) +
          ", between the layouts of API 4 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V4) + "), API 5 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V5) + "), API 6 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V6) + "), API 8 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V8) + "), API 10 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V10) + "), API 12 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V12) + ") and API 13 (" +
          std::to_string(NORMJIT_LAUNCH_ARGS_SIZE_V13) +
          ") (call normjit_launch_args_init_sized)");
    LaunchArgs converted;
    if (args->reserved != 0)
      return invalid("normjit_launch_args.reserved is " +
                     std::to_string(args->reserved) + ", must be 0");
    // Tensors past the caller's struct_size stay absent.
    for (int i = 0; i < layout.tensors; ++i) {
      const normjit_tensor &t = args->tensors[i];
      if (t.reserved != 0)
        return invalid("normjit_launch_args.tensors[" + std::to_string(i) +
                       "].reserved (buffer '" + getSlotName(i) + "') is " +
                       std::to_string(t.reserved) + ", must be 0");
      if (!isDtype(t.dtype))
        return invalid("buffer " + std::to_string(i) + " has unknown dtype " +
                       std::to_string(t.dtype));
      converted.tensors[i] = {t.data, static_cast<ElementType>(t.dtype), t.cols,
                              t.row_stride};
    }
    // API 4: the caches' rows (0 past the caller's struct_size, and for
    // every operation but decode; the launch checks judge them).
    int64_t cacheRows = readCount(*args, layout.cacheRows);
    if (cacheRows < 0)
      return invalid("normjit_launch_args.cache_rows is " +
                     std::to_string(cacheRows) + ", must not be negative");
    if (cacheRows != 0 && !hasKvCache(kernel->kernel->getSpec()))
      return invalid("normjit_launch_args.cache_rows is " +
                     std::to_string(cacheRows) +
                     ": only NORMJIT_OP_ATTENTION_DECODE and "
                     "NORMJIT_OP_K_PREPARE with NORMJIT_OP_WRITE_CACHE have a "
                     "KV cache; "
                     "leave it 0");
    for (BufferSlot cache : {BufferSlot::KCache, BufferSlot::VCache})
      converted.tensors[static_cast<int>(cache)].rows = cacheRows;
    // API 5: the rope table's rows.
    int64_t tableRows = readCount(*args, layout.tableRows);
    if (tableRows < 0)
      return invalid("normjit_launch_args.rope_table_rows is " +
                     std::to_string(tableRows) + ", must not be negative");
    if (tableRows != 0 && !kernel->kernel->getSpec().ropeTable)
      return invalid("normjit_launch_args.rope_table_rows is " +
                     std::to_string(tableRows) +
                     ": only attention with NORMJIT_OP_ROPE_TABLE has a "
                     "rope table; leave it 0");
    converted.tensors[static_cast<int>(BufferSlot::RopeTable)].rows = tableRows;
    return report(kernel->kernel->launch(converted, rows, stream));
  });
}

normjit_status normjit_kernel_get_config(const normjit_kernel *kernel,
                                         int64_t rows,
                                         normjit_launch_config *config) {
  return getConfig("normjit_kernel_get_config", kernel, rows, config,
                   convertLaunch);
}

normjit_status normjit_kernel_get_config2(const normjit_kernel *kernel,
                                          int64_t rows,
                                          normjit_launch_config2 *config) {
  return getConfig("normjit_kernel_get_config2", kernel, rows, config,
                   convertLaunch2);
}

normjit_status normjit_kernel_get_tuning(const normjit_kernel *kernel,
                                         int64_t rows,
                                         normjit_tuning_info *info,
                                         normjit_candidate *candidates,
                                         size_t capacity) {
  return getTuning("normjit_kernel_get_tuning", kernel, rows, info, candidates,
                   capacity,
                   [&](size_t i, const BucketReport::Candidate &candidate) {
                     candidates[i] = {convertLaunch(candidate.launch),
                                      candidate.microseconds};
                   });
}

normjit_status normjit_kernel_get_tuning2(const normjit_kernel *kernel,
                                          int64_t rows,
                                          normjit_tuning_info *info,
                                          normjit_candidate2 *candidates,
                                          size_t capacity) {
  return getTuning("normjit_kernel_get_tuning2", kernel, rows, info,
                   candidates, capacity,
                   [&](size_t i, const BucketReport::Candidate &candidate) {
                     candidates[i] = {convertLaunch2(candidate.launch),
                                      candidate.microseconds};
                   });
}

normjit_status normjit_context_write_bundle(normjit_context *context,
                                            const normjit_op_desc *descs,
                                            size_t count, const char *path) {
  return guard("normjit_context_write_bundle", [&] {
    if (!context || !path)
      return invalid("context or path is null");
    if (count && !descs)
      return invalid("descs is null");
    // The caller's array steps by its header's sizeof: descs[0].struct_size
    // (checked by convertDesc before it is used as a stride).
    std::vector<OpSpec> specs(count);
    size_t stride = count ? descs->struct_size : 0;
    for (size_t i = 0; i < count; ++i) {
      auto *desc = reinterpret_cast<const normjit_op_desc *>(
          reinterpret_cast<const char *>(descs) + i * stride);
      normjit_status status;
      if (!convertDesc(desc, specs[i], status))
        return status;
      if (desc->struct_size != stride)
        return invalid("descs[" + std::to_string(i) + "].struct_size is " +
                       std::to_string(desc->struct_size) + ", descs[0]'s " +
                       std::to_string(stride) +
                       ": the array has one layout");
    }
    return report(context->context->writeBundle(specs, path));
  });
}

} // extern "C"
