//===- Buffers.cpp - the buffers of a kernel, in ABI order ----------------===//

#include "compiler/model/Buffers.h"

#include <tuple>

using namespace norm;

// clang-format off
static constexpr BufferSlot kAllSlots[] = {
    BufferSlot::Input,    BufferSlot::Addend,  BufferSlot::Skip,
    BufferSlot::Weight,   BufferSlot::Bias,    BufferSlot::Mean,
    BufferSlot::Variance, BufferSlot::Output,  BufferSlot::ResidualOut,
    BufferSlot::Qkv,      BufferSlot::QWeight, BufferSlot::KWeight,
    BufferSlot::Q,        BufferSlot::K,       BufferSlot::V,
    BufferSlot::CuSeqlens, BufferSlot::Lse,   BufferSlot::KCache,
    BufferSlot::VCache,   BufferSlot::CacheSeqlens, BufferSlot::Workspace,
    BufferSlot::Semaphores, BufferSlot::Positions, BufferSlot::RopeTable,
    BufferSlot::GradOutput, BufferSlot::ResidualGrad, BufferSlot::SavedMean,
    BufferSlot::SavedRstd, BufferSlot::GradInput, BufferSlot::AddendGrad,
    BufferSlot::WeightGradPartials, BufferSlot::BiasGradPartials,
    BufferSlot::WeightGrad, BufferSlot::BiasGrad, BufferSlot::OutputScale,
    BufferSlot::ScaleUpperBound, BufferSlot::OutputScales, BufferSlot::KOut,
    BufferSlot::VOut, BufferSlot::BlockTables, BufferSlot::KScale,
    BufferSlot::VScale, BufferSlot::PageIndptr};
// clang-format on
static_assert(sizeof(kAllSlots) / sizeof(kAllSlots[0]) == kNumBufferSlots);

std::string_view norm::getBufferSlotName(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Input:
    return "input";
  case BufferSlot::Addend:
    return "addend";
  case BufferSlot::Skip:
    return "skip";
  case BufferSlot::Weight:
    return "weight";
  case BufferSlot::Bias:
    return "bias";
  case BufferSlot::Mean:
    return "mean";
  case BufferSlot::Variance:
    return "variance";
  case BufferSlot::Output:
    return "output";
  case BufferSlot::ResidualOut:
    return "residual_out";
  case BufferSlot::Qkv:
    return "qkv";
  case BufferSlot::QWeight:
    return "q_weight";
  case BufferSlot::KWeight:
    return "k_weight";
  case BufferSlot::Q:
    return "q";
  case BufferSlot::K:
    return "k";
  case BufferSlot::V:
    return "v";
  case BufferSlot::CuSeqlens:
    return "cu_seqlens";
  case BufferSlot::Lse:
    return "lse";
  case BufferSlot::KCache:
    return "k_cache";
  case BufferSlot::VCache:
    return "v_cache";
  case BufferSlot::CacheSeqlens:
    return "cache_seqlens";
  case BufferSlot::Workspace:
    return "workspace";
  case BufferSlot::Semaphores:
    return "semaphores";
  case BufferSlot::Positions:
    return "positions";
  case BufferSlot::RopeTable:
    return "rope_table";
  case BufferSlot::GradOutput:
    return "grad_output";
  case BufferSlot::ResidualGrad:
    return "residual_grad";
  case BufferSlot::SavedMean:
    return "saved_mean";
  case BufferSlot::SavedRstd:
    return "saved_rstd";
  case BufferSlot::GradInput:
    return "grad_input";
  case BufferSlot::AddendGrad:
    return "addend_grad";
  case BufferSlot::WeightGradPartials:
    return "weight_grad_partials";
  case BufferSlot::BiasGradPartials:
    return "bias_grad_partials";
  case BufferSlot::WeightGrad:
    return "weight_grad";
  case BufferSlot::BiasGrad:
    return "bias_grad";
  case BufferSlot::OutputScale:
    return "output_scale";
  case BufferSlot::ScaleUpperBound:
    return "scale_ub";
  case BufferSlot::OutputScales:
    return "output_scales";
  case BufferSlot::KOut:
    return "k_out";
  case BufferSlot::VOut:
    return "v_out";
  case BufferSlot::BlockTables:
    return "block_tables";
  case BufferSlot::KScale:
    return "k_scale";
  case BufferSlot::VScale:
    return "v_scale";
  case BufferSlot::PageIndptr:
    return "page_indptr";
  }
  return "?";
}

std::optional<BufferSlot> norm::parseBufferSlot(std::string_view name) {
  for (BufferSlot slot : kAllSlots)
    if (getBufferSlotName(slot) == name)
      return slot;
  return std::nullopt;
}

std::vector<BufferSpec> norm::getBuffers(const OpSpec &spec) {
  std::vector<BufferSpec> buffers;
  auto rows = [&](BufferSlot slot, ElementType type, int64_t cols,
                  bool written) {
    buffers.push_back({slot, type, cols, /*rows2D=*/true, written});
  };
  auto vector = [&](BufferSlot slot, ElementType type, int64_t cols,
                    bool written) {
    buffers.push_back({slot, type, cols, /*rows2D=*/false, written});
  };
  int64_t h = spec.hidden;
  bool meanVar = getStatistic(spec) == Statistic::MeanVar;
  auto savedStats = [&](bool written) {
    if (meanVar)
      rows(BufferSlot::SavedMean, ElementType::f32, spec.groups, written);
    rows(BufferSlot::SavedRstd, ElementType::f32, spec.groups, written);
  };
  if (spec.backward) {
    rows(BufferSlot::Input, spec.input, h, false);
    rows(BufferSlot::GradOutput, spec.output, h, false);
    if (spec.writeResidual)
      rows(BufferSlot::ResidualGrad, spec.input, h, false);
    // Heads share one head's weight and its gradient.
    int64_t paramCols = spec.perHeadWeight ? getRowLength(spec) : h;
    if (spec.hasWeight)
      vector(BufferSlot::Weight, spec.param, paramCols, false);
    savedStats(false);
    rows(BufferSlot::GradInput, spec.input, h, true);
    if (spec.hasAddend && spec.alpha != 1.0)
      rows(BufferSlot::AddendGrad, spec.addendType, h, true);
    for (const GradientSum &sum : getGradientSums(spec)) {
      rows(sum.partials, ElementType::f32, sum.columnSum.hidden, true);
      buffers.back().ownRows = true;
    }
    return buffers;
  }
  // Rotary positions (one per token) and the angles' table (rows of its
  // own).
  auto addRopeBuffers = [&] {
    if (spec.ropePositions)
      vector(BufferSlot::Positions, ElementType::i32, 0, false);
    if (spec.ropeTable) {
      rows(BufferSlot::RopeTable, ElementType::f32, spec.rotaryDim, false);
      buffers.back().ownRows = true;
    }
  };
  // A cache's lengths and, paged, its block table (lengths of the launch).
  auto addCacheIndex = [&] {
    vector(BufferSlot::CacheSeqlens, ElementType::i32, 0, false);
    if (spec.cacheBlockSize)
      vector(BufferSlot::BlockTables, ElementType::i32, 0, false);
    if (spec.pageIndptr)
      vector(BufferSlot::PageIndptr, ElementType::i32, 0, false);
    if (spec.fp8Cache)
      for (BufferSlot scale : {BufferSlot::KScale, BufferSlot::VScale})
        vector(scale, ElementType::f32,
               spec.cacheScalePerHead ? spec.numKvHeads : 1, false);
  };
  switch (spec.kind) {
  case OpKind::ColumnSum:
    rows(BufferSlot::Input, ElementType::f32, h, false);
    vector(BufferSlot::Output, spec.output, h, true);
    return buffers;
  case OpKind::BatchNormStats:
    rows(BufferSlot::Input, spec.input, h, false);
    vector(BufferSlot::Mean, ElementType::f32, h, true);
    vector(BufferSlot::Variance, ElementType::f32, h, true);
    return buffers;
  case OpKind::QKNormPrologue: {
    int64_t q = spec.numQHeads, kv = spec.numKvHeads;
    rows(BufferSlot::Qkv, spec.input, (q + 2 * kv) * h, false);
    if (spec.hasWeight) {
      // A row per head (Command R+), or one every head shares.
      bool perHead = spec.qkWeightPerHead;
      vector(BufferSlot::QWeight, spec.param, h * (perHead ? q : 1), false);
      vector(BufferSlot::KWeight, spec.param, h * (perHead ? kv : 1), false);
    }
    addRopeBuffers();
    rows(BufferSlot::Q, spec.output, q * h, true);
    rows(BufferSlot::K, spec.output, kv * h, true);
    if (spec.saveStats) {
      // One per head, q heads then k heads.
      if (spec.qkStatistic == Statistic::MeanVar)
        rows(BufferSlot::SavedMean, ElementType::f32, q + kv, true);
      rows(BufferSlot::SavedRstd, ElementType::f32, q + kv, true);
    }
    return buffers;
  }
  case OpKind::KeyPrepare: {
    int64_t kv = spec.numKvHeads;
    rows(BufferSlot::K, spec.input, kv * h, false);
    if (spec.copyValues || spec.writeCache)
      rows(BufferSlot::V, spec.input, kv * h, false);
    if (spec.hasWeight)
      vector(BufferSlot::KWeight, spec.param,
             h * (spec.qkWeightPerHead ? kv : 1), false);
    // Without positions a key turns by its index within its sequence; a
    // cache's rows are per sequence.
    if (spec.writeCache ||
        (spec.rope != RopeStyle::None && !spec.ropePositions))
      vector(BufferSlot::CuSeqlens, ElementType::i32, /*cols=*/0, false);
    if (spec.writeCache)
      addCacheIndex();
    addRopeBuffers();
    if (spec.writeCache) {
      // Written at their rows only: every other row keeps its value.
      for (BufferSlot cache : {BufferSlot::KCache, BufferSlot::VCache}) {
        rows(cache,
             spec.fp8Cache                 ? ElementType::f8E4M3FN
             : cache == BufferSlot::KCache ? spec.output
                                           : spec.input,
             kv * h, true);
        buffers.back().updated = buffers.back().ownRows = true;
      }
      return buffers;
    }
    rows(BufferSlot::KOut, spec.output, kv * h, true);
    if (spec.copyValues)
      rows(BufferSlot::VOut, spec.input, kv * h, true);
    if (spec.saveStats) {
      if (spec.qkStatistic == Statistic::MeanVar)
        rows(BufferSlot::SavedMean, ElementType::f32, kv, true);
      rows(BufferSlot::SavedRstd, ElementType::f32, kv, true);
    }
    return buffers;
  }
  case OpKind::Attention:
  case OpKind::AttentionDecode: {
    int64_t q = spec.numQHeads, kv = spec.numKvHeads;
    rows(BufferSlot::Q, spec.input, q * h, false);
    rows(BufferSlot::K, spec.input, kv * h, false);
    rows(BufferSlot::V, spec.input, kv * h, false);
    if (spec.hasWeight) {
      // A row per head (Command R+), or one every head shares; prepared
      // keys had theirs.
      bool perHead = spec.qkWeightPerHead;
      vector(BufferSlot::QWeight, spec.param, h * (perHead ? q : 1), false);
      if (!spec.keysPrepared)
        vector(BufferSlot::KWeight, spec.param, h * (perHead ? kv : 1),
               false);
    }
    vector(BufferSlot::CuSeqlens, ElementType::i32, /*cols=*/0, false);
    bool decode = spec.kind == OpKind::AttentionDecode;
    if (decode)
      addCacheIndex();
    addRopeBuffers();
    if (decode) {
      rows(BufferSlot::Output, spec.output, q * h, true);
      for (BufferSlot cache : {BufferSlot::KCache, BufferSlot::VCache}) {
        rows(cache, spec.fp8Cache ? ElementType::f8E4M3FN : spec.input, kv * h,
             true);
        buffers.back().updated = buffers.back().ownRows = true;
      }
      vector(BufferSlot::Workspace, ElementType::f32, 0, true);
      buffers.back().scratch = true;
      vector(BufferSlot::Semaphores, ElementType::i32, 0, true);
      buffers.back().scratch = true;
      return buffers;
    }
    rows(BufferSlot::Output, spec.output, q * h, true);
    // Token-major like every other buffer: row t holds the heads of token t.
    if (spec.writeLse)
      rows(BufferSlot::Lse, ElementType::f32, q, true);
    return buffers;
  }
  default:
    break;
  }
  rows(BufferSlot::Input, spec.input, h, false);
  if (spec.hasAddend)
    rows(BufferSlot::Addend, spec.addendType, h, false);
  if (spec.hasSkip)
    rows(BufferSlot::Skip, spec.skipType, h, false);
  if (spec.hasWeight)
    vector(BufferSlot::Weight, spec.param, h, false);
  if (spec.hasBias)
    vector(BufferSlot::Bias, spec.param, h, false);
  if (spec.kind == OpKind::BatchNormInference) {
    vector(BufferSlot::Mean, spec.statsType, h, false);
    vector(BufferSlot::Variance, spec.statsType, h, false);
  }
  if (spec.outputScale == OutputScale::Static)
    vector(BufferSlot::OutputScale, ElementType::f32, 1, false);
  if (spec.scaleUpperBound)
    vector(BufferSlot::ScaleUpperBound, ElementType::f32, 1, false);
  rows(BufferSlot::Output, spec.output, h, true);
  buffers.back().over = getRowOperandSlot(spec.outputOver);
  if (spec.writeResidual) {
    rows(BufferSlot::ResidualOut, spec.input, h, true);
    buffers.back().over = getRowOperandSlot(spec.residualOver);
  }
  if (spec.outputScale == OutputScale::PerToken)
    rows(BufferSlot::OutputScales, ElementType::f32, 1, true);
  if (spec.saveStats)
    savedStats(true);
  return buffers;
}

bool norm::isParameterBuffer(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Weight:
  case BufferSlot::Bias:
  case BufferSlot::Mean:
  case BufferSlot::Variance:
  case BufferSlot::QWeight:
  case BufferSlot::KWeight:
  case BufferSlot::OutputScale:
  case BufferSlot::ScaleUpperBound:
  case BufferSlot::KScale:
  case BufferSlot::VScale:
    return true;
  default:
    return false;
  }
}

std::optional<BufferSlot> norm::getRowOperandSlot(RowOperand operand) {
  switch (operand) {
  case RowOperand::None:
    return std::nullopt;
  case RowOperand::Input:
    return BufferSlot::Input;
  case RowOperand::Addend:
    return BufferSlot::Addend;
  }
  return std::nullopt;
}

std::vector<GradientSum> norm::getGradientSums(const OpSpec &backward) {
  std::vector<GradientSum> sums;
  // Heads share one head's weight and its gradient.
  int64_t cols = backward.perHeadWeight ? getRowLength(backward)
                                        : backward.hidden;
  for (auto [has, partials, gradient] :
       {std::tuple{backward.hasWeight, BufferSlot::WeightGradPartials,
                   BufferSlot::WeightGrad},
        std::tuple{backward.hasBias, BufferSlot::BiasGradPartials,
                   BufferSlot::BiasGrad}}) {
    if (!has)
      continue;
    OpSpec sum;
    sum.kind = OpKind::ColumnSum;
    sum.hidden = cols;
    sum.input = ElementType::f32;
    sum.output = backward.param;
    sums.push_back({partials, gradient, sum});
  }
  return sums;
}

bool norm::hasVectorRows(const BufferSpec &buffer) {
  switch (buffer.slot) {
  case BufferSlot::SavedMean:
  case BufferSlot::SavedRstd:
  case BufferSlot::OutputScales:
  case BufferSlot::WeightGradPartials:
  case BufferSlot::BiasGradPartials:
  case BufferSlot::RopeTable: // read a pair's angles at a time
    return false;
  default:
    return buffer.rows2D;
  }
}

int64_t norm::getDecodeTiles(const OpSpec &spec, int64_t rowsPerCta,
                             const DecodeShape &shape) {
  return getQueryTiles(shape.rows, spec.numQHeads / spec.numKvHeads,
                       rowsPerCta, shape.batch);
}

int64_t norm::getDecodeWorkTiles(const OpSpec &spec, int64_t rowsPerCta,
                                 const DecodeShape &shape) {
  int64_t group = spec.numQHeads / std::max<int64_t>(spec.numKvHeads, 1);
  return std::max(shape.batch, getQueryTiles(shape.rows, group, rowsPerCta, 0));
}

int64_t norm::getLaunchLength(const OpSpec &spec, BufferSlot slot,
                              int64_t rowsPerCta, const DecodeShape &shape) {
  switch (slot) {
  case BufferSlot::CuSeqlens:
    return shape.batch + 1;
  case BufferSlot::CacheSeqlens:
    return shape.batch;
  case BufferSlot::BlockTables:
    return spec.cacheBlockSize
               ? shape.batch * (shape.cacheCapacity / spec.cacheBlockSize)
               : 0;
  case BufferSlot::PageIndptr:
    return spec.pageIndptr ? shape.batch + 1 : 0;
  case BufferSlot::Positions:
    return shape.rows;
  case BufferSlot::Workspace:
    return shape.splits * shape.rows * spec.numQHeads * (spec.hidden + 1);
  case BufferSlot::Semaphores:
    return spec.numKvHeads * getDecodeTiles(spec, rowsPerCta, shape);
  default:
    return 0;
  }
}

int64_t norm::getBytesPerRow(const OpSpec &spec) {
  int64_t bytes = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    if (buffer.rows2D && !buffer.ownRows)
      bytes += buffer.cols * getElementBytes(buffer.type);
  return bytes;
}

Status norm::verifySequenceOffsetCount(int64_t count) {
  if (count >= 2 && count <= kMaxSequenceOffsets)
    return Status::success();
  return Status::invalid(
      "'cu_seqlens' holds batch + 1 sequence offsets (0, the end of each "
      "sequence): at least 2 and at most " +
      std::to_string(kMaxSequenceOffsets) + ", got " + std::to_string(count));
}
