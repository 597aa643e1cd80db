//===- Operation.cpp - one kernel's operation, and its rules --------------===//

#include "compiler/model/Operation.h"

#include "compiler/model/Buffers.h"
#include "compiler/model/RealFormat.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

using namespace norm;

static constexpr OpKind kAllKinds[] = {
    OpKind::RMSNorm,        OpKind::LayerNorm,          OpKind::L2Norm,
    OpKind::GroupNorm,      OpKind::BatchNormInference, OpKind::Elementwise,
    OpKind::BatchNormStats, OpKind::QKNormPrologue,     OpKind::KeyPrepare,
    OpKind::Attention,      OpKind::AttentionDecode,    OpKind::ColumnSum};

static constexpr Statistic kAllStatistics[] = {
    Statistic::RMS, Statistic::MeanVar, Statistic::L2, Statistic::None};

std::string_view norm::getStatisticName(Statistic statistic) {
  switch (statistic) {
  case Statistic::RMS:
    return "rms";
  case Statistic::MeanVar:
    return "mean_var";
  case Statistic::L2:
    return "l2";
  case Statistic::None:
    return "none";
  }
  return "?";
}

std::optional<Statistic> norm::parseStatisticName(std::string_view name) {
  for (Statistic statistic : kAllStatistics)
    if (getStatisticName(statistic) == name)
      return statistic;
  return std::nullopt;
}

static constexpr RopeStyle kAllRopeStyles[] = {RopeStyle::None,
                                               RopeStyle::NeoX, RopeStyle::GptJ};

std::string_view norm::getRopeStyleName(RopeStyle style) {
  switch (style) {
  case RopeStyle::None:
    return "none";
  case RopeStyle::NeoX:
    return "neox";
  case RopeStyle::GptJ:
    return "gptj";
  }
  return "?";
}

std::optional<RopeStyle> norm::parseRopeStyleName(std::string_view name) {
  for (RopeStyle style : kAllRopeStyles)
    if (getRopeStyleName(style) == name)
      return style;
  return std::nullopt;
}

std::string_view norm::getRowOperandName(RowOperand operand) {
  switch (operand) {
  case RowOperand::None:
    return "none";
  case RowOperand::Input:
    return "input";
  case RowOperand::Addend:
    return "addend";
  }
  return "?";
}

std::optional<RowOperand> norm::parseRowOperandName(std::string_view name) {
  for (RowOperand operand :
       {RowOperand::None, RowOperand::Input, RowOperand::Addend})
    if (getRowOperandName(operand) == name)
      return operand;
  return std::nullopt;
}

std::string_view norm::getOutputScaleName(OutputScale scale) {
  switch (scale) {
  case OutputScale::None:
    return "none";
  case OutputScale::Static:
    return "static";
  case OutputScale::PerToken:
    return "per_token";
  }
  return "?";
}

std::optional<OutputScale>
norm::parseOutputScaleName(std::string_view name) {
  for (OutputScale scale :
       {OutputScale::None, OutputScale::Static, OutputScale::PerToken})
    if (getOutputScaleName(scale) == name)
      return scale;
  return std::nullopt;
}

double norm::getPerTokenScale(ElementType output, double amax,
                              std::optional<double> upperBound) {
  double max = getFp8MaxFinite(output);
  if (std::isnan(amax)) // as the kernels' maximumf: NaN propagates
    return amax;
  if (upperBound)
    amax = std::fmin(amax, *upperBound);
  return std::fmax(amax / max, 1.0 / (max * kMinScaleFactor));
}

std::string_view norm::getOpKindName(OpKind kind) {
  switch (kind) {
  case OpKind::RMSNorm:
    return "rms_norm";
  case OpKind::LayerNorm:
    return "layer_norm";
  case OpKind::L2Norm:
    return "l2_norm";
  case OpKind::GroupNorm:
    return "group_norm";
  case OpKind::BatchNormInference:
    return "batch_norm_inference";
  case OpKind::Elementwise:
    return "elementwise";
  case OpKind::BatchNormStats:
    return "batch_norm_stats";
  case OpKind::QKNormPrologue:
    return "qk_norm";
  case OpKind::KeyPrepare:
    return "k_prepare";
  case OpKind::Attention:
    return "attention";
  case OpKind::AttentionDecode:
    return "attention_decode";
  case OpKind::ColumnSum:
    return "column_sum";
  }
  return "?";
}

std::optional<OpKind> norm::parseOpKindName(std::string_view name) {
  for (OpKind kind : kAllKinds)
    if (getOpKindName(kind) == name)
      return kind;
  return std::nullopt;
}

std::string_view norm::getKernelOpName(OpKind kind) {
  switch (kind) {
  case OpKind::BatchNormStats:
    return "column_stats";
  case OpKind::QKNormPrologue:
    return "qk_norm_prologue";
  case OpKind::KeyPrepare:
    return "k_prepare";
  case OpKind::Attention:
    return "attention_kernel";
  case OpKind::AttentionDecode:
    return "attention_decode_kernel";
  case OpKind::ColumnSum:
    return "column_sum";
  default:
    return "fused_row";
  }
}

std::string_view norm::getKernelOpName(const OpSpec &spec) {
  return spec.backward ? "fused_row_grad" : getKernelOpName(spec.kind);
}

OpKind norm::getRowKind(Statistic statistic, int64_t groups,
                        bool perChannelStats) {
  switch (statistic) {
  case Statistic::RMS:
    return OpKind::RMSNorm;
  case Statistic::MeanVar:
    return groups > 1 ? OpKind::GroupNorm : OpKind::LayerNorm;
  case Statistic::L2:
    return OpKind::L2Norm;
  case Statistic::None:
    break;
  }
  return perChannelStats ? OpKind::BatchNormInference : OpKind::Elementwise;
}

Statistic norm::getStatistic(const OpSpec &spec) {
  switch (spec.kind) {
  case OpKind::RMSNorm:
    return Statistic::RMS;
  case OpKind::LayerNorm:
  case OpKind::GroupNorm:
    return Statistic::MeanVar;
  case OpKind::L2Norm:
    return Statistic::L2;
  case OpKind::QKNormPrologue:
  case OpKind::KeyPrepare:
  case OpKind::Attention:
  case OpKind::AttentionDecode:
    return spec.qkStatistic;
  default:
    return Statistic::None;
  }
}

bool norm::usesEps(const OpSpec &spec) {
  // A backward kernel reads the saved statistics, not eps.
  if (spec.backward)
    return false;
  return getStatistic(spec) != Statistic::None ||
         spec.kind == OpKind::BatchNormInference;
}

bool norm::isFusedRow(const OpSpec &spec) {
  return spec.kind != OpKind::BatchNormStats && !isHeadNorm(spec.kind) &&
         !isAttention(spec.kind) && spec.kind != OpKind::ColumnSum;
}

int64_t norm::getRowLength(const OpSpec &spec) {
  if (isFusedRow(spec) && spec.groups > 0)
    return spec.hidden / spec.groups;
  return spec.hidden;
}

int64_t norm::getRowsPerToken(const OpSpec &spec) {
  if (isHeadNorm(spec.kind))
    return spec.numQHeads + spec.numKvHeads;
  if (isAttention(spec.kind))
    return spec.numQHeads;
  if (isFusedRow(spec))
    return spec.groups;
  return 1;
}

bool norm::hasGroupedWeightGradients(const OpSpec &spec) {
  return spec.backward && isFusedRow(spec) && spec.groups > 1 &&
         !spec.perHeadWeight;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

Status norm::verifyPositiveFinite(double value, std::string_view name) {
  // `!(value > 0)` is true for NaN too.
  if (!(value > 0.0) || std::isinf(value))
    return Status::invalid(std::string(name) +
                           " must be a positive finite number, got " +
                           describeReal(value));
  return Status::success();
}

Status norm::verifyEps(double eps, std::string_view name) {
  return verifyPositiveFinite(eps, name);
}

Status norm::verifyWeightOffset(double offset, bool hasWeight) {
  if (!std::isfinite(offset))
    return Status::invalid("weight_offset must be a finite number, got " +
                           describeReal(offset));
  if (offset != 0.0 && !hasWeight)
    return Status::invalid("weight_offset needs a weight");
  return Status::success();
}

Status norm::verifyGroups(int64_t groups, int64_t hidden) {
  if (groups <= 0)
    return Status::invalid("groups must be positive, got " +
                           std::to_string(groups));
  if (hidden % groups != 0)
    return Status::invalid("groups (" + std::to_string(groups) +
                           ") must divide the hidden size (" +
                           std::to_string(hidden) + ")");
  return Status::success();
}

Status norm::verifyCacheBlockSize(int64_t blockSize) {
  if (blockSize >= 1 && blockSize <= kMaxCacheBlockSize &&
      (blockSize & (blockSize - 1)) == 0)
    return Status::success();
  return Status::invalid(
      "a paged KV cache's block size must be a power of two in [1, " +
      std::to_string(kMaxCacheBlockSize) + "] (vLLM's 16, SGLang's 1), got " +
      std::to_string(blockSize));
}

Status norm::verifyAttentionHeadDim(int64_t headDim) {
  if (headDim < 16 || headDim > kMaxAttentionHeadDim || headDim % 16 != 0)
    return Status::invalid("attention needs a head dim that is a multiple of "
                           "16 from 16 to " +
                           std::to_string(kMaxAttentionHeadDim) + ", got " +
                           std::to_string(headDim));
  return Status::success();
}

Status norm::verifyHeadCounts(int64_t numQHeads, int64_t numKvHeads) {
  if (numQHeads <= 0 || numKvHeads <= 0 || numQHeads > kMaxRowLength ||
      numKvHeads > kMaxRowLength)
    return Status::invalid("positive head counts are needed, got " +
                           std::to_string(numQHeads) + " query and " +
                           std::to_string(numKvHeads) + " key/value heads");
  if (numQHeads % numKvHeads != 0)
    return Status::invalid("the " + std::to_string(numKvHeads) +
                           " key/value heads must divide the " +
                           std::to_string(numQHeads) + " query heads");
  return Status::success();
}

Status norm::verifyRope(RopeStyle style, int64_t rotaryDim, double theta,
                        int64_t headDim, bool fromTable) {
  if (style == RopeStyle::None)
    return Status::success();
  if (rotaryDim <= 0 || rotaryDim > headDim || rotaryDim % 2 != 0)
    return Status::invalid(
        std::string(getRopeStyleName(style)) +
        " rotary embeddings need an even rotary dim from 2 to the head dim (" +
        std::to_string(headDim) + "), got " + std::to_string(rotaryDim));
  if (fromTable)
    return Status::success();
  if (Status status = verifyPositiveFinite(theta, "rope_theta"); !status)
    return status;
  if (theta == 1.0)
    return Status::invalid("rope_theta must not be 1 (every pair would turn "
                           "at the same rate)");
  return Status::success();
}

double norm::getRopeFrequency(double theta, int64_t rotaryDim, int64_t pair) {
  return std::pow(theta, -2.0 * static_cast<double>(pair) /
                             static_cast<double>(rotaryDim));
}

static bool isKnownKind(OpKind kind) {
  for (OpKind known : kAllKinds)
    if (known == kind)
      return true;
  return false;
}

/// The rotary fields of attention, the QK-Norm prologue and K-prepare.
static Status verifyRopeFields(const OpSpec &spec) {
  if (Status status = verifyRope(spec.rope, spec.rotaryDim, spec.ropeTheta,
                                 spec.hidden, spec.ropeTable);
      !status)
    return status;
  if (spec.rope == RopeStyle::None && (spec.ropePositions || spec.ropeTable))
    return Status::invalid("rotary positions and tables need a rotary "
                           "embedding style (rope)");
  if (spec.ropeFirst &&
      (spec.rope == RopeStyle::None || spec.qkStatistic == Statistic::None))
    return Status::invalid("rotating before the QK-Norm needs both a rotary "
                           "embedding style (rope) and a QK-Norm");
  return Status::success();
}

/// What the QK-Norm prologue and K-prepare (`kernel`, which reads only
/// `inputs`) share: no row kernel's fields, weights per head only with
/// weights, the rotary fields, and statistics saved for the norm's backward
/// alone (one per head, without rope).
static Status verifyHeadNormFields(const OpSpec &spec, const char *kernel,
                                   const char *inputs) {
  if (spec.hasBias || spec.hasAddend || spec.hasSkip || spec.writeResidual ||
      spec.f32Residual || spec.groups != 1)
    return Status::invalid(std::string(kernel) + " takes only " + inputs);
  if (spec.qkWeightPerHead && !spec.hasWeight)
    return Status::invalid("per-head QK-Norm weights need QK-Norm weights");
  if (Status status = verifyRopeFields(spec); !status)
    return status;
  if (spec.saveStats && spec.rope != RopeStyle::None)
    return Status::invalid("save_stats keeps the statistics for the QK-Norm's "
                           "backward, which has no rotary embeddings: save "
                           "them from " + std::string(kernel) +
                           " without rope");
  return verifyWeightOffset(spec.weightOffset, spec.hasWeight);
}

/// The QK-Norm prologue: heads of q and k in one packed row.
static Status verifyQKNorm(const OpSpec &spec) {
  if (spec.numQHeads <= 0 || spec.numKvHeads <= 0 ||
      spec.numQHeads > kMaxRowLength || spec.numKvHeads > kMaxRowLength)
    return Status::invalid("QK-Norm needs positive head counts, got " +
                           std::to_string(spec.numQHeads) + " query and " +
                           std::to_string(spec.numKvHeads) +
                           " key/value heads");
  if ((spec.numQHeads + 2 * spec.numKvHeads) * spec.hidden > kMaxRowLength)
    return Status::invalid("the packed qkv row of (" +
                           std::to_string(spec.numQHeads) + " + 2 * " +
                           std::to_string(spec.numKvHeads) + ") heads of " +
                           std::to_string(spec.hidden) +
                           " is longer than a kernel supports (at most " +
                           std::to_string(kMaxRowLength) + " elements)");
  if (spec.qkStatistic == Statistic::None)
    return Status::invalid("QK-Norm needs a statistic (rms, mean_var or l2)");
  return verifyHeadNormFields(spec, "the QK-Norm prologue",
                              "qkv and optional q/k weights");
}

/// K-prepare: the k heads of token rows normalized and/or rotated once,
/// for attention kernels that read them as they are (prefill's prepared
/// keys, a KV cache).
static Status verifyKeyPrepare(const OpSpec &spec) {
  if (spec.numQHeads != 0 || spec.numKvHeads <= 0 ||
      spec.numKvHeads > kMaxRowLength)
    return Status::invalid("K-prepare needs a positive number of key/value "
                           "heads and no query heads, got " +
                           std::to_string(spec.numQHeads) + " query and " +
                           std::to_string(spec.numKvHeads) +
                           " key/value heads");
  if (spec.numKvHeads * spec.hidden > kMaxRowLength)
    return Status::invalid("k rows of " + std::to_string(spec.numKvHeads) +
                           " heads of " + std::to_string(spec.hidden) +
                           " are longer than a kernel supports (at most " +
                           std::to_string(kMaxRowLength) + " elements)");
  // Into a cache, neither is vLLM's reshape_and_cache: the rows as they are.
  if (spec.qkStatistic == Statistic::None && spec.rope == RopeStyle::None &&
      !spec.writeCache)
    return Status::invalid("K-prepare needs a QK-Norm statistic (rms, "
                           "mean_var or l2), rotary embeddings (rope), or "
                           "both, unless it writes a KV cache");
  if (spec.qkStatistic == Statistic::None && (spec.hasWeight || spec.saveStats))
    return Status::invalid("QK-Norm weights and save_stats need a QK-Norm "
                           "statistic");
  if (spec.writeCache && spec.saveStats)
    return Status::invalid("K-prepare into a KV cache (write_cache) saves no "
                           "statistics: save_stats is for training, which "
                           "has no cache");
  return verifyHeadNormFields(spec, "K-prepare",
                              "k, an optional k weight and v to copy");
}

/// Attention: bf16 or f16 throughout, an optional QK-Norm.
static Status verifyAttention(const OpSpec &spec) {
  if (Status status = verifyAttentionHeadDim(spec.hidden); !status)
    return status;
  if (Status status = verifyHeadCounts(spec.numQHeads, spec.numKvHeads);
      !status)
    return status;
  if (spec.numQHeads * spec.hidden > kMaxRowLength)
    return Status::invalid("attention rows of " +
                           std::to_string(spec.numQHeads) + " heads of " +
                           std::to_string(spec.hidden) +
                           " are longer than a kernel supports");
  if (spec.input == ElementType::f32 || spec.output != spec.input)
    return Status::invalid("attention reads and writes bf16 or f16 (the "
                           "tensor cores' inputs), one type for q, k, v and "
                           "the output");
  if (Status status = verifyPositiveFinite(spec.scale, "scale"); !status)
    return status;
  if (spec.hasBias || spec.hasAddend || spec.hasSkip || spec.writeResidual ||
      spec.f32Residual || spec.groups != 1)
    return Status::invalid("attention takes only q, k, v, the sequence "
                           "offsets and optional QK-Norm weights");
  if (spec.qkStatistic == Statistic::None && spec.hasWeight)
    return Status::invalid("QK-Norm weights need a QK-Norm statistic");
  if (spec.qkWeightPerHead && !spec.hasWeight)
    return Status::invalid("per-head QK-Norm weights need QK-Norm weights");
  if (Status status = verifyRopeFields(spec); !status)
    return status;
  if (spec.keysPrepared && spec.qkStatistic == Statistic::None &&
      spec.rope == RopeStyle::None)
    return Status::invalid("prepared keys need a QK-Norm or rotary "
                           "embeddings that q takes in the prologue");
  if (spec.kind == OpKind::AttentionDecode && (spec.causal || spec.writeLse))
    return Status::invalid("decode attention is causal by position (a new "
                           "token sees the cache and the new tokens before "
                           "it) and writes no lse: 'causal' and 'lse' apply "
                           "to prefill attention");
  return verifyWeightOffset(spec.weightOffset, spec.hasWeight);
}

/// norm.fused_row_grad: the gradients of a row norm from its saved
/// statistics.
static Status verifyBackward(const OpSpec &spec) {
  if (spec.kind != OpKind::RMSNorm && spec.kind != OpKind::LayerNorm &&
      spec.kind != OpKind::L2Norm && spec.kind != OpKind::GroupNorm)
    return Status::error(
        ErrorCode::Unsupported,
        "backward kernels differentiate rms_norm, layer_norm, group_norm "
        "and l2_norm rows (and heads); " +
            std::string(getOpKindName(spec.kind)) + " has none yet");
  if (spec.f32Residual)
    return Status::invalid(
        "a backward kernel recomputes x-hat from the stored residual stream, "
        "which f32_residual does not store: differentiate without it");
  if (spec.hasSkip)
    return Status::invalid(
        "the gradient of a Sandwich skip is grad_output itself: "
        "differentiate the norm without its skip");
  if (spec.saveStats)
    return Status::invalid("save_stats applies to forward kernels");
  return Status::success();
}

Status norm::verifyInPlace(const OpSpec &spec) {
  if (spec.outputOver == RowOperand::None &&
      spec.residualOver == RowOperand::None)
    return Status::success();
  for (RowOperand operand : {spec.outputOver, spec.residualOver})
    if (!parseRowOperandName(getRowOperandName(operand)))
      return Status::invalid("unknown in-place operand " +
                             std::to_string(static_cast<int>(operand)));
  if (!isFusedRow(spec) || spec.backward)
    return Status::invalid("in-place outputs (output_over, residual_over) "
                           "apply to forward row kernels");
  if (spec.residualOver != RowOperand::None && !spec.writeResidual)
    return Status::invalid("residual_over needs residual_out, the output it "
                           "writes in place");
  if (spec.outputOver == spec.residualOver)
    return Status::invalid(
        "output and residual_out cannot both overwrite '" +
        std::string(getRowOperandName(spec.outputOver)) + "'");
  auto check = [&](RowOperand operand, ElementType type,
                   const char *output) -> Status {
    if (operand == RowOperand::None)
      return Status::success();
    if (operand == RowOperand::Addend && !spec.hasAddend)
      return Status::invalid(std::string(output) +
                             " cannot overwrite an addend the operation does "
                             "not have");
    ElementType over =
        operand == RowOperand::Input ? spec.input : spec.addendType;
    if (type != over)
      return Status::invalid(
          std::string(output) + " (" + std::string(getElementTypeName(type)) +
          ") cannot overwrite '" + std::string(getRowOperandName(operand)) +
          "' (" + std::string(getElementTypeName(over)) +
          "): an in-place output keeps the element type of the rows it "
          "overwrites");
    return Status::success();
  };
  if (Status status = check(spec.outputOver, spec.output, "output"); !status)
    return status;
  // residual_out has the input's element type.
  return check(spec.residualOver, spec.input, "residual_out");
}

/// FP8 outputs of forward row kernels and their scales.
static Status verifyQuantizedOutput(const OpSpec &spec) {
  bool fp8 = isFp8ElementType(spec.output);
  std::string output(getElementTypeName(spec.output));
  if (!fp8) {
    if (spec.outputScale != OutputScale::None || spec.scaleUpperBound)
      return Status::invalid("output scales quantize FP8 outputs (f8E4M3FN, "
                             "f8E5M2), not " + output);
    return Status::success();
  }
  if (!isFusedRow(spec) || spec.backward)
    return Status::invalid("FP8 outputs (" + output +
                           ") are written by forward row kernels only");
  if (spec.outputScale == OutputScale::None)
    return Status::invalid("an FP8 output (" + output +
                           ") needs a scale: static (output_scale) or "
                           "per_token (output_scales)");
  if (spec.hasSkip)
    return Status::invalid("an FP8 output quantizes the normalized row; a "
                           "skip (Sandwich-Norm) add before it is not "
                           "supported");
  if (spec.outputScale == OutputScale::PerToken && spec.groups != 1)
    return Status::invalid("per-token FP8 scales take the amax of a whole "
                           "token row: groups must be 1, got " +
                           std::to_string(spec.groups));
  if (spec.scaleUpperBound && spec.outputScale != OutputScale::PerToken)
    return Status::invalid("scale_ub bounds per-token FP8 scales only");
  return Status::success();
}

/// norm.fused_row: prologue, statistic, epilogue.
static Status verifyFusedRow(const OpSpec &spec) {
  if (Status status = verifyPositiveFinite(spec.alpha, "alpha"); !status)
    return status;
  if (!spec.hasAddend) {
    if (spec.alpha != 1.0)
      return Status::invalid("alpha needs an addend");
    if (spec.writeResidual)
      return Status::invalid("residual_out needs an addend");
    if (spec.f32Residual)
      return Status::invalid("f32_residual needs an addend");
  }
  if (Status status = verifyWeightOffset(spec.weightOffset, spec.hasWeight);
      !status)
    return status;
  if (Status status = verifyGroups(spec.groups, spec.hidden); !status)
    return status;
  if (spec.groups > 1 && getStatistic(spec) == Statistic::None)
    return Status::invalid("groups > 1 needs a statistic to group (rms, "
                           "mean_var or l2)");
  if (spec.numQHeads != 0 || spec.numKvHeads != 0)
    return Status::invalid("head counts apply to qk_norm only");
  if (spec.perHeadWeight && !spec.backward)
    return Status::invalid("per_head_weight applies to backward kernels");
  if (spec.saveStats && getStatistic(spec) == Statistic::None)
    return Status::invalid("save_stats needs a statistic to save (rms, "
                           "mean_var or l2)");
  if (spec.backward)
    return verifyBackward(spec);
  return Status::success();
}

Status norm::verifyOpSpec(const OpSpec &spec) {
  if (!isKnownKind(spec.kind))
    return Status::invalid("unknown operation kind " +
                           std::to_string(static_cast<int>(spec.kind)));
  // FP8 is an output type only (verifyQuantizedOutput says of which).
  if (!isFloatElementType(spec.output) && !isFp8ElementType(spec.output))
    return Status::invalid("unknown element type " +
                           std::to_string(static_cast<int>(spec.output)));
  for (ElementType type : {spec.input, spec.param, spec.statsType,
                           spec.addendType, spec.skipType})
    if (!isFloatElementType(type))
      return Status::invalid(
          isFp8ElementType(type)
              ? "FP8 (" + std::string(getElementTypeName(type)) +
                    ") is the type of quantized outputs only; inputs and "
                    "parameters are f32, f16 or bf16"
              : "unknown element type " +
                    std::to_string(static_cast<int>(type)));
  if (!parseOutputScaleName(getOutputScaleName(spec.outputScale)))
    return Status::invalid("unknown output scale " +
                           std::to_string(static_cast<int>(spec.outputScale)));
  if (!parseStatisticName(getStatisticName(spec.qkStatistic)))
    return Status::invalid("unknown QK-Norm statistic " +
                           std::to_string(static_cast<int>(spec.qkStatistic)));
  const char *size =
      isHeadNorm(spec.kind) || isAttention(spec.kind)
          ? "head dim"
          : "hidden size";
  if (spec.hidden <= 0 || spec.hidden > kMaxRowLength)
    return Status::invalid(std::string(size) + " must be in [1, " +
                           std::to_string(kMaxRowLength) + "], got " +
                           std::to_string(spec.hidden));
  if (usesEps(spec))
    if (Status status = verifyEps(spec.eps); !status)
      return status;

  if (!isAttention(spec.kind) &&
      (spec.causal || spec.writeLse || spec.scale != 1.0))
    return Status::invalid("causal, scale and lse apply to attention only");
  if (!isAttention(spec.kind) && !isHeadNorm(spec.kind) &&
      (spec.rope != RopeStyle::None || spec.ropePositions || spec.ropeTable ||
       spec.ropeFirst))
    return Status::invalid("rotary embeddings (rope) apply to attention, the "
                           "QK-Norm prologue and K-prepare only");
  if (!isAttention(spec.kind) && !isHeadNorm(spec.kind) &&
      spec.qkWeightPerHead)
    return Status::invalid("per-head QK-Norm weights apply to attention, the "
                           "QK-Norm prologue and K-prepare only");
  if (spec.keysPrepared && spec.kind != OpKind::Attention)
    return Status::invalid("prepared keys apply to prefill attention only");
  if (spec.copyValues && spec.kind != OpKind::KeyPrepare)
    return Status::invalid("copying the values applies to K-prepare only");
  if (spec.writeCache && spec.kind != OpKind::KeyPrepare)
    return Status::invalid("write_cache applies to K-prepare only (decode "
                           "attention appends to its cache itself)");
  if (spec.cacheBlockSize != 0) {
    if (!hasKvCache(spec))
      return Status::invalid("a paged cache (cache_block_size) applies to "
                             "decode attention and K-prepare into a KV cache "
                             "(write_cache) only");
    if (Status status = verifyCacheBlockSize(spec.cacheBlockSize); !status)
      return status;
  }
  if (spec.pageIndptr && spec.cacheBlockSize == 0)
    return Status::invalid("a ragged page table (page_indptr) needs a paged "
                           "cache (cache_block_size)");
  if ((spec.fp8Cache || spec.cacheScalePerHead) && !hasKvCache(spec))
    return Status::invalid("an FP8 cache (fp8_cache) applies to decode "
                           "attention and K-prepare into a KV cache "
                           "(write_cache) only");
  if (spec.cacheScalePerHead && !spec.fp8Cache)
    return Status::invalid("cache scales per head need an FP8 cache "
                           "(fp8_cache)");

  if (spec.backward && !isFusedRow(spec))
    return Status::invalid(
        "backward applies to row kernels (norm.fused_row); the QK-Norm "
        "prologue's backward is one per head (per_head_weight)");
  if (spec.saveStats && !isFusedRow(spec) && !isHeadNorm(spec.kind))
    return Status::invalid("save_stats applies to row kernels, the QK-Norm "
                           "prologue and K-prepare");
  if (Status status = verifyInPlace(spec); !status)
    return status;
  if (Status status = verifyQuantizedOutput(spec); !status)
    return status;

  switch (spec.kind) {
  case OpKind::ColumnSum:
    if (spec.hasWeight || spec.hasBias || spec.hasAddend || spec.hasSkip ||
        spec.writeResidual || spec.f32Residual || spec.groups != 1)
      return Status::invalid("a column sum takes only its f32 partial rows");
    if (spec.input != ElementType::f32)
      return Status::invalid("a column sum reduces f32 partial rows, got " +
                             std::string(getElementTypeName(spec.input)));
    return Status::success();
  case OpKind::BatchNormStats:
    if (spec.hasWeight || spec.hasBias || spec.hasAddend || spec.hasSkip ||
        spec.writeResidual || spec.f32Residual || spec.groups != 1)
      return Status::invalid("column statistics take only an input");
    return Status::success();
  case OpKind::QKNormPrologue:
    return verifyQKNorm(spec);
  case OpKind::KeyPrepare:
    return verifyKeyPrepare(spec);
  case OpKind::Attention:
  case OpKind::AttentionDecode:
    return verifyAttention(spec);
  default:
    return verifyFusedRow(spec);
  }
}

OpSpec norm::getKeyPrepareSpec(const OpSpec &attention) {
  OpSpec spec;
  spec.kind = OpKind::KeyPrepare;
  spec.hidden = attention.hidden;
  spec.input = spec.output = attention.input;
  spec.param = attention.param;
  spec.hasWeight = attention.hasWeight;
  spec.qkWeightPerHead = attention.qkWeightPerHead;
  spec.eps = attention.eps;
  spec.weightOffset = attention.weightOffset;
  spec.numKvHeads = attention.numKvHeads;
  spec.qkStatistic = attention.qkStatistic;
  spec.rope = attention.rope;
  spec.rotaryDim = attention.rotaryDim;
  spec.ropeTheta = attention.ropeTheta;
  spec.ropePositions = attention.ropePositions;
  spec.ropeTable = attention.ropeTable;
  spec.ropeFirst = attention.ropeFirst;
  return spec;
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

Status norm::getBackwardKernels(const OpSpec &forward,
                                BackwardKernels &kernels) {
  kernels = BackwardKernels();
  if (Status status = verifyOpSpec(forward); !status)
    return status;
  if (forward.backward)
    return Status::invalid("the operation is a backward kernel already");
  if (isFp8ElementType(forward.output))
    return Status::error(ErrorCode::Unsupported,
                         "an FP8 output (" +
                             std::string(getElementTypeName(forward.output)) +
                             ") is an inference kernel's: quantization has no "
                             "backward kernel; train with an f32, f16 or bf16 "
                             "output");
  auto addRow = [&](OpSpec row) -> Status {
    row.backward = true;
    row.saveStats = false;
    row.outputOver = row.residualOver = RowOperand::None;
    if (Status status = verifyOpSpec(row); !status)
      return status.withContext("backward of " + describeOpSpec(forward));
    kernels.rows.push_back(row);
    for (const GradientSum &sum : getGradientSums(row))
      kernels.columnSums.push_back(sum.columnSum);
    return Status::success();
  };
  if (isHeadNorm(forward.kind) && forward.rope != RopeStyle::None)
    return Status::error(ErrorCode::Unsupported,
                         "the QK-Norm prologue's backward differentiates the "
                         "norm per head; with rope it would also need the "
                         "inverse rotation: train with the prologue without "
                         "rope and rotate apart");
  if (isHeadNorm(forward.kind)) {
    // One launch per kind of head: q heads, then k heads.
    for (int64_t heads : {forward.numQHeads, forward.numKvHeads}) {
      if (heads == 0) // K-prepare
        continue;
      OpSpec row;
      row.kind = getRowKind(getStatistic(forward), heads);
      row.hidden = heads * forward.hidden;
      row.groups = heads;
      // Heads share one weight row, or each has its own (Command R+): then
      // the weight is the row's channels, as GroupNorm's.
      row.perHeadWeight = heads > 1 && !forward.qkWeightPerHead;
      row.input = forward.input;
      row.output = forward.output;
      row.param = forward.param;
      row.hasWeight = forward.hasWeight;
      row.weightOffset = forward.weightOffset;
      if (Status status = addRow(row); !status)
        return status;
    }
    return Status::success();
  }
  OpSpec row = forward;
  row.hasSkip = false; // its gradient is grad_output
  return addRow(row);
}

//===----------------------------------------------------------------------===//
// Identity
//===----------------------------------------------------------------------===//

OpSpec norm::normalizeOpSpec(const OpSpec &spec) {
  OpSpec n = spec;
  OpSpec defaults;
  // GroupNorm is LayerNorm over groups: one name for one kernel.
  if (n.kind == OpKind::LayerNorm && n.groups > 1)
    n.kind = OpKind::GroupNorm;
  if (n.kind == OpKind::GroupNorm && n.groups == 1)
    n.kind = OpKind::LayerNorm;
  // A backward kernel sees a forward addend only through the residual
  // stream's gradient and, where alpha is not 1, the addend's own.
  if (n.groups == 1)
    n.perHeadWeight = false;
  if (n.backward && n.alpha == 1.0) {
    n.hasAddend = n.hasAddend && n.writeResidual;
    n.addendType = defaults.addendType;
  }
  if (!n.hasAddend) {
    n.addendType = defaults.addendType;
    n.alpha = defaults.alpha;
  }
  if (!n.hasSkip)
    n.skipType = defaults.skipType;
  // A backward kernel reads no bias (its gradient partials are f32): the
  // parameter type is the weight's alone, and the column sums' output.
  if (!n.hasWeight && (!n.hasBias || n.backward))
    n.param = defaults.param;
  if (n.kind != OpKind::BatchNormInference)
    n.statsType = defaults.statsType;
  if (!usesEps(n))
    n.eps = 0.0;
  if (!isHeadNorm(n.kind) && !isAttention(n.kind)) {
    n.numQHeads = n.numKvHeads = 0;
    n.qkStatistic = defaults.qkStatistic;
  }
  if (!isAttention(n.kind)) {
    n.causal = defaults.causal;
    n.scale = defaults.scale;
    n.writeLse = defaults.writeLse;
  }
  if (!isAttention(n.kind) && !isHeadNorm(n.kind))
    n.rope = defaults.rope;
  if (n.kind != OpKind::Attention)
    n.keysPrepared = defaults.keysPrepared;
  if (n.kind != OpKind::KeyPrepare)
    n.copyValues = n.writeCache = false;
  // The cache takes the values too.
  if (n.writeCache)
    n.copyValues = false;
  if (!hasKvCache(n)) {
    n.cacheBlockSize = 0;
    n.pageIndptr = false;
    n.fp8Cache = n.cacheScalePerHead = false;
  }
  // One kv head's scale is the tensor's.
  if (n.numKvHeads == 1)
    n.cacheScalePerHead = false;
  if (n.rope == RopeStyle::None) {
    n.rotaryDim = defaults.rotaryDim;
    n.ropePositions = defaults.ropePositions;
    n.ropeTable = defaults.ropeTable;
  }
  if (n.rope == RopeStyle::None || n.qkStatistic == Statistic::None)
    n.ropeFirst = defaults.ropeFirst;
  // K-prepare's weight row per head is the one head's row with one head.
  if ((!isAttention(n.kind) && !isHeadNorm(n.kind)) || !n.hasWeight ||
      (n.kind == OpKind::KeyPrepare && n.numKvHeads == 1))
    n.qkWeightPerHead = defaults.qkWeightPerHead;
  if (n.rope == RopeStyle::None || n.ropeTable)
    n.ropeTheta = defaults.ropeTheta;
  if (n.kind == OpKind::BatchNormStats)
    n.output = ElementType::f32;
  if (n.kind == OpKind::ColumnSum)
    n.input = ElementType::f32;
  return n;
}

static std::string hexDouble(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%a", value);
  return buffer;
}

std::string norm::getCanonicalSpec(const OpSpec &original) {
  OpSpec s = normalizeOpSpec(original);
  auto type = [](ElementType t) { return std::string(getElementTypeName(t)); };
  std::ostringstream os;
  os << "op=" << getOpKindName(s.kind) << " hidden=" << s.hidden
     << " input=" << type(s.input) << " output=" << type(s.output)
     << " param=" << type(s.param) << " stats=" << type(s.statsType)
     << " weight=" << s.hasWeight
     << " bias=" << s.hasBias << " addend=" << s.hasAddend
     << " addend_type=" << type(s.addendType)
     << " residual_out=" << s.writeResidual << " f32_residual=" << s.f32Residual
     << " skip=" << s.hasSkip << " skip_type=" << type(s.skipType)
     << " eps=" << hexDouble(s.eps) << " alpha=" << hexDouble(s.alpha)
     << " offset=" << hexDouble(s.weightOffset) << " groups=" << s.groups
     << " q_heads=" << s.numQHeads << " kv_heads=" << s.numKvHeads
     << " qk_statistic=" << getStatisticName(s.qkStatistic);
  // Only attention has these: the identities (and kernel names) of the
  // other kinds stay what they were.
  if (isAttention(s.kind))
    os << " causal=" << s.causal << " scale=" << hexDouble(s.scale)
       << " lse=" << s.writeLse;
  if (s.rope != RopeStyle::None)
    os << " rope=" << getRopeStyleName(s.rope)
       << " rotary_dim=" << s.rotaryDim
       << " rope_theta=" << hexDouble(s.ropeTheta);
  // Only where set, as above.
  if (s.ropePositions)
    os << " rope_positions=1";
  if (s.ropeTable)
    os << " rope_table=1";
  if (s.ropeFirst)
    os << " rope_first=1";
  if (s.qkWeightPerHead)
    os << " qk_weight_per_head=1";
  if (s.keysPrepared)
    os << " keys_prepared=1";
  if (s.copyValues)
    os << " copy_values=1";
  if (s.writeCache)
    os << " write_cache=1";
  if (s.cacheBlockSize)
    os << " cache_block_size=" << s.cacheBlockSize;
  if (s.pageIndptr)
    os << " page_indptr=1";
  if (s.fp8Cache)
    os << " fp8_cache=1";
  if (s.cacheScalePerHead)
    os << " cache_scale_per_head=1";
  if (s.saveStats)
    os << " save_stats=1";
  if (s.backward)
    os << " backward=1";
  if (s.perHeadWeight)
    os << " per_head_weight=1";
  if (s.outputOver != RowOperand::None)
    os << " output_over=" << getRowOperandName(s.outputOver);
  if (s.residualOver != RowOperand::None)
    os << " residual_over=" << getRowOperandName(s.residualOver);
  if (s.outputScale != OutputScale::None)
    os << " output_scale=" << getOutputScaleName(s.outputScale);
  if (s.scaleUpperBound)
    os << " scale_ub=1";
  return os.str();
}

std::optional<OpSpec> norm::parseCanonicalSpec(std::string_view text,
                                               std::string &error) {
  std::map<std::string, std::string, std::less<>> fields;
  std::istringstream is{std::string(text)};
  std::string token;
  while (is >> token) {
    size_t eq = token.find('=');
    if (eq == std::string::npos ||
        !fields.emplace(token.substr(0, eq), token.substr(eq + 1)).second) {
      error = "malformed operation field '" + token + "'";
      return std::nullopt;
    }
  }
  auto take = [&](const char *key) -> std::optional<std::string> {
    auto it = fields.find(key);
    if (it == fields.end()) {
      if (error.empty())
        error = std::string("operation lacks field '") + key + "'";
      return std::nullopt;
    }
    std::string value = it->second;
    fields.erase(it);
    return value;
  };
  auto integer = [&](const char *key, int64_t &out) {
    std::optional<std::string> v = take(key);
    if (!v)
      return;
    char *end = nullptr;
    out = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end)
      error = std::string("field '") + key + "' is not an integer";
  };
  auto flag = [&](const char *key, bool &out) {
    int64_t value = 0;
    integer(key, value);
    out = value != 0;
  };
  auto real = [&](const char *key, double &out) {
    std::optional<std::string> v = take(key);
    if (!v)
      return;
    char *end = nullptr;
    out = std::strtod(v->c_str(), &end);
    if (v->empty() || *end)
      error = std::string("field '") + key + "' is not a number";
  };
  auto type = [&](const char *key, ElementType &out) {
    std::optional<std::string> v = take(key);
    if (!v)
      return;
    if (std::optional<ElementType> t = parseElementType(*v))
      out = *t;
    else
      error = std::string("field '") + key + "' is not an element type";
  };

  OpSpec spec;
  if (std::optional<std::string> op = take("op")) {
    if (std::optional<OpKind> kind = parseOpKindName(*op))
      spec.kind = *kind;
    else
      error = "unknown operation kind '" + *op + "'";
  }
  integer("hidden", spec.hidden);
  type("input", spec.input);
  type("output", spec.output);
  type("param", spec.param);
  type("stats", spec.statsType);
  flag("weight", spec.hasWeight);
  flag("bias", spec.hasBias);
  flag("addend", spec.hasAddend);
  type("addend_type", spec.addendType);
  flag("residual_out", spec.writeResidual);
  flag("f32_residual", spec.f32Residual);
  flag("skip", spec.hasSkip);
  type("skip_type", spec.skipType);
  real("eps", spec.eps);
  real("alpha", spec.alpha);
  real("offset", spec.weightOffset);
  integer("groups", spec.groups);
  integer("q_heads", spec.numQHeads);
  integer("kv_heads", spec.numKvHeads);
  if (std::optional<std::string> statistic = take("qk_statistic")) {
    if (std::optional<Statistic> parsed = parseStatisticName(*statistic))
      spec.qkStatistic = *parsed;
    else
      error = "field 'qk_statistic' is not a statistic";
  }
  if (isAttention(spec.kind)) {
    flag("causal", spec.causal);
    real("scale", spec.scale);
    flag("lse", spec.writeLse);
  }
  // Kernels without rotary embeddings have no rope fields.
  if (isAttention(spec.kind) || isHeadNorm(spec.kind)) {
    if (std::optional<std::string> rope =
            fields.count("rope") ? take("rope") : std::nullopt) {
      if (std::optional<RopeStyle> style = parseRopeStyleName(*rope))
        spec.rope = *style;
      else
        error = "field 'rope' is not a rotary embedding style";
      integer("rotary_dim", spec.rotaryDim);
      real("rope_theta", spec.ropeTheta);
      if (fields.count("rope_positions"))
        flag("rope_positions", spec.ropePositions);
      if (fields.count("rope_table"))
        flag("rope_table", spec.ropeTable);
      if (fields.count("rope_first"))
        flag("rope_first", spec.ropeFirst);
    }
  }
  if (fields.count("qk_weight_per_head"))
    flag("qk_weight_per_head", spec.qkWeightPerHead);
  if (fields.count("keys_prepared"))
    flag("keys_prepared", spec.keysPrepared);
  if (fields.count("copy_values"))
    flag("copy_values", spec.copyValues);
  if (fields.count("write_cache"))
    flag("write_cache", spec.writeCache);
  if (fields.count("cache_block_size"))
    integer("cache_block_size", spec.cacheBlockSize);
  if (fields.count("page_indptr"))
    flag("page_indptr", spec.pageIndptr);
  if (fields.count("fp8_cache"))
    flag("fp8_cache", spec.fp8Cache);
  if (fields.count("cache_scale_per_head"))
    flag("cache_scale_per_head", spec.cacheScalePerHead);
  if (fields.count("save_stats"))
    flag("save_stats", spec.saveStats);
  if (fields.count("backward"))
    flag("backward", spec.backward);
  if (fields.count("per_head_weight"))
    flag("per_head_weight", spec.perHeadWeight);
  auto operand = [&](const char *key, RowOperand &out) {
    if (!fields.count(key))
      return;
    std::optional<std::string> v = take(key);
    if (std::optional<RowOperand> parsed = parseRowOperandName(*v))
      out = *parsed;
    else
      error = std::string("field '") + key + "' is not a row operand";
  };
  operand("output_over", spec.outputOver);
  operand("residual_over", spec.residualOver);
  if (fields.count("output_scale")) {
    std::optional<std::string> v = take("output_scale");
    if (std::optional<OutputScale> parsed = parseOutputScaleName(*v))
      spec.outputScale = *parsed;
    else
      error = "field 'output_scale' is not an output scale";
  }
  if (fields.count("scale_ub"))
    flag("scale_ub", spec.scaleUpperBound);
  if (error.empty() && !fields.empty())
    error = "unknown operation field '" + fields.begin()->first + "'";
  if (!error.empty())
    return std::nullopt;
  return spec;
}

std::string norm::describeOpSpec(const OpSpec &spec) {
  std::ostringstream os;
  os << getOpKindName(spec.kind) << (spec.backward ? " backward" : "")
     << " h" << spec.hidden << " " << getElementTypeName(spec.input);
  if (spec.output != spec.input && spec.kind != OpKind::BatchNormStats)
    os << "->" << getElementTypeName(spec.output);
  if (isHeadNorm(spec.kind) || isAttention(spec.kind)) {
    os << " heads " << spec.numQHeads << "/" << spec.numKvHeads;
    if (spec.qkStatistic != Statistic::RMS)
      os << " " << getStatisticName(spec.qkStatistic);
    if (spec.qkWeightPerHead)
      os << " weight per head";
    if (spec.causal)
      os << " causal";
    if (spec.writeLse)
      os << " +lse";
    if (spec.rope != RopeStyle::None) {
      os << " rope " << getRopeStyleName(spec.rope) << " " << spec.rotaryDim;
      if (spec.ropeTable)
        os << " table";
      else
        os << " theta " << formatReal(spec.ropeTheta);
      if (spec.ropePositions)
        os << " positions";
      if (spec.ropeFirst)
        os << " before the QK-Norm";
    }
    if (spec.keysPrepared)
      os << " prepared keys";
    if (spec.copyValues)
      os << " +v";
    if (spec.writeCache)
      os << " into the KV cache";
    if (spec.cacheBlockSize)
      os << " paged " << spec.cacheBlockSize
         << (spec.pageIndptr ? " (ragged table)" : "");
    if (spec.fp8Cache)
      os << (spec.cacheScalePerHead ? " fp8 cache, a scale per head"
                                    : " fp8 cache");
  }
  if (spec.groups != 1)
    os << (spec.perHeadWeight ? " heads " : " groups ") << spec.groups;
  if (spec.hasAddend)
    os << " +addend";
  if (spec.writeResidual)
    os << " +residual_out";
  if (spec.f32Residual)
    os << " +f32_residual";
  if (spec.hasSkip)
    os << " +skip";
  if (!spec.hasWeight && spec.kind != OpKind::BatchNormStats &&
      spec.kind != OpKind::ColumnSum)
    os << " no-weight";
  if (spec.hasBias)
    os << " +bias";
  if (spec.weightOffset != 0.0)
    os << " offset " << formatReal(spec.weightOffset);
  if (spec.saveStats)
    os << " +save_stats";
  if (spec.outputOver != RowOperand::None)
    os << " output over " << getRowOperandName(spec.outputOver);
  if (spec.residualOver != RowOperand::None)
    os << " residual_out over " << getRowOperandName(spec.residualOver);
  if (spec.outputScale != OutputScale::None)
    os << " scale " << getOutputScaleName(spec.outputScale);
  if (spec.scaleUpperBound)
    os << " +scale_ub";
  return os.str();
}
