//===- KernelOps.cpp - kernel ops and the kernel model --------------------===//
//
// The seam between the dialect and the plain-C++ kernel model: element
// types, launch configurations and targets both ways, a kernel op's buffers
// in ABI order, its signature, and kernel ops built from an OpSpec.
//
//===----------------------------------------------------------------------===//

#include "dialects/NormOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::norm;
using ::norm::BufferSlot;
using ::norm::OpKind;

::norm::ElementType mlir::norm::getElementType(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return ::norm::ElementType::f32;
  if (element.isF16())
    return ::norm::ElementType::f16;
  if (element.isInteger(32))
    return ::norm::ElementType::i32;
  if (isa<Float8E4M3FNType>(element))
    return ::norm::ElementType::f8E4M3FN;
  if (isa<Float8E5M2Type>(element))
    return ::norm::ElementType::f8E5M2;
  assert(element.isBF16() &&
         "the dialect admits f32, f16, bf16, FP8 and i32 only");
  return ::norm::ElementType::bf16;
}

Type mlir::norm::getMlirType(MLIRContext *context, ::norm::ElementType type) {
  switch (type) {
  case ::norm::ElementType::f32:
    return Float32Type::get(context);
  case ::norm::ElementType::f16:
    return Float16Type::get(context);
  case ::norm::ElementType::bf16:
    return BFloat16Type::get(context);
  case ::norm::ElementType::i32:
    return IntegerType::get(context, 32);
  case ::norm::ElementType::f8E4M3FN:
    return Float8E4M3FNType::get(context);
  case ::norm::ElementType::f8E5M2:
    return Float8E5M2Type::get(context);
  }
  llvm_unreachable("unknown element type");
}

::norm::LaunchConfig mlir::norm::getLaunchConfig(LaunchAttr launch) {
  return {launch.getVector(),     launch.getThreadsPerRow(), launch.getWarps(),
          launch.getRowsPerCta(), launch.getBlockN(),        launch.getStages(),
          launch.getWarpgroups(), launch.getOverlap()};
}

LaunchAttr mlir::norm::getLaunchAttr(MLIRContext *context,
                                     const ::norm::LaunchConfig &launch) {
  return LaunchAttr::get(context, launch.vector, launch.threadsPerRow,
                         launch.warps, launch.rowsPerCta, launch.blockN,
                         launch.stages, launch.warpgroups, launch.overlap);
}

SmallVector<KernelBuffer> mlir::norm::getKernelBuffers(KernelOpInterface op) {
  SmallVector<KernelBuffer> buffers;
  for (const ::norm::BufferSpec &buffer : ::norm::getBuffers(op.getOpSpec()))
    buffers.push_back({buffer.slot, op.getBuffer(buffer.slot)});
  return buffers;
}

FailureOr<::norm::KernelSignature>
mlir::norm::describeKernel(KernelOpInterface op,
                           const ::norm::LaunchConfig &launch,
                           const ::norm::TargetOptions &target) {
  ::norm::KernelSignature signature;
  if (::norm::Status status =
          ::norm::describeKernel(op.getOpSpec(), launch, target, signature);
      !status)
    return op->emitOpError() << status.message();
  return signature;
}

RankedTensorType mlir::norm::getBufferType(MLIRContext *context,
                                           const ::norm::BufferSpec &buffer,
                                           int64_t rows) {
  Type element = getMlirType(context, buffer.type);
  if (buffer.ownRows)
    rows = -1;
  if (!buffer.rows2D)
    return RankedTensorType::get(
        {buffer.cols > 0 ? buffer.cols : ShapedType::kDynamic}, element);
  return RankedTensorType::get(
      {rows < 0 ? ShapedType::kDynamic : rows, buffer.cols}, element);
}

static QKNormKind getQKNormKind(::norm::Statistic statistic) {
  switch (statistic) {
  case ::norm::Statistic::L2:
    return QKNormKind::l2;
  case ::norm::Statistic::MeanVar:
    return QKNormKind::mean_var;
  default:
    return QKNormKind::rms;
  }
}

/// The dialect's attribute of an in-place operand (null for none).
static RowOperandAttr getRowOperandAttr(MLIRContext *context,
                                        ::norm::RowOperand operand) {
  switch (operand) {
  case ::norm::RowOperand::None:
    return {};
  case ::norm::RowOperand::Input:
    return RowOperandAttr::get(context, RowOperand::input);
  case ::norm::RowOperand::Addend:
    return RowOperandAttr::get(context, RowOperand::addend);
  }
  llvm_unreachable("unknown row operand");
}

static Statistic getDialectStatistic(::norm::Statistic statistic) {
  switch (statistic) {
  case ::norm::Statistic::RMS:
    return Statistic::rms;
  case ::norm::Statistic::MeanVar:
    return Statistic::mean_var;
  case ::norm::Statistic::L2:
    return Statistic::l2;
  case ::norm::Statistic::None:
    return Statistic::none;
  }
  llvm_unreachable("unknown statistic");
}

FailureOr<KernelOpInterface>
mlir::norm::createKernelOp(OpBuilder &builder, Location loc,
                           const ::norm::OpSpec &spec, int64_t rows,
                           function_ref<Value(BufferSlot)> getInput) {
  if (::norm::Status status = ::norm::verifyOpSpec(spec); !status)
    return emitError(loc) << status.message();
  MLIRContext *context = builder.getContext();
  // Inputs from the caller, result types from the model.
  llvm::SmallDenseMap<int, Value> inputs;
  llvm::SmallDenseMap<int, Type> results;
  for (const ::norm::BufferSpec &buffer : ::norm::getBuffers(spec)) {
    int slot = static_cast<int>(buffer.slot);
    // Scratch is the kernel's alone; an updated buffer is both.
    if (buffer.scratch)
      continue;
    if (buffer.written)
      results[slot] = getBufferType(context, buffer, rows);
    if (!buffer.written || buffer.updated)
      inputs[slot] = getInput(buffer.slot);
  }
  auto input = [&](BufferSlot slot) { return inputs.lookup(int(slot)); };
  auto result = [&](BufferSlot slot) { return results.lookup(int(slot)); };
  auto real = [&](double value) { return builder.getF64FloatAttr(value); };

  if (spec.backward) {
    Statistic statistic = getDialectStatistic(::norm::getStatistic(spec));
    return KernelOpInterface(
        FusedRowGradOp::create(
            builder, loc, result(BufferSlot::GradInput),
            result(BufferSlot::AddendGrad),
            result(BufferSlot::WeightGradPartials),
            result(BufferSlot::BiasGradPartials), input(BufferSlot::Input),
            input(BufferSlot::GradOutput), input(BufferSlot::ResidualGrad),
            input(BufferSlot::Weight), input(BufferSlot::SavedMean),
            input(BufferSlot::SavedRstd),
            StatisticAttr::get(context, statistic), real(spec.alpha),
            real(spec.weightOffset), builder.getI64IntegerAttr(spec.groups),
            spec.perHeadWeight ? builder.getUnitAttr() : UnitAttr(),
            /*launch=*/nullptr, /*kernel=*/nullptr)
            .getOperation());
  }
  // The rotary attributes of the QK-Norm prologue and attention.
  bool rope = spec.rope != ::norm::RopeStyle::None;
  RopeStyleAttr style =
      rope ? RopeStyleAttr::get(context, spec.rope == ::norm::RopeStyle::NeoX
                                             ? RopeStyle::neox
                                             : RopeStyle::gptj)
           : RopeStyleAttr();
  IntegerAttr rotaryDim =
      rope ? builder.getI64IntegerAttr(spec.rotaryDim) : IntegerAttr();
  FloatAttr theta = rope && !spec.ropeTable ? real(spec.ropeTheta) : FloatAttr();
  UnitAttr ropeFirst = spec.ropeFirst ? builder.getUnitAttr() : UnitAttr();
  IntegerAttr blockSize = spec.cacheBlockSize
                              ? builder.getI64IntegerAttr(spec.cacheBlockSize)
                              : IntegerAttr();
  switch (spec.kind) {
  case OpKind::ColumnSum:
    return KernelOpInterface(
        ColumnSumOp::create(builder, loc, result(BufferSlot::Output),
                            input(BufferSlot::Input), /*launch=*/nullptr,
                            /*kernel=*/nullptr)
            .getOperation());
  case OpKind::BatchNormStats:
    return KernelOpInterface(ColumnStatsOp::create(
        builder, loc, result(BufferSlot::Mean), result(BufferSlot::Variance),
        input(BufferSlot::Input), /*launch=*/nullptr, /*kernel=*/nullptr)
                                 .getOperation());
  case OpKind::QKNormPrologue:
    return KernelOpInterface(
        QKNormPrologueOp::create(
            builder, loc, result(BufferSlot::Q), result(BufferSlot::K),
            result(BufferSlot::SavedMean), result(BufferSlot::SavedRstd),
            input(BufferSlot::Qkv), input(BufferSlot::QWeight),
            input(BufferSlot::KWeight), input(BufferSlot::Positions),
            input(BufferSlot::RopeTable),
            QKNormKindAttr::get(context, getQKNormKind(spec.qkStatistic)),
            builder.getI64IntegerAttr(spec.numQHeads),
            builder.getI64IntegerAttr(spec.numKvHeads),
            builder.getI64IntegerAttr(spec.hidden), real(spec.eps),
            real(spec.weightOffset), style, rotaryDim, theta, ropeFirst,
            /*launch=*/nullptr, /*kernel=*/nullptr)
            .getOperation());
  case OpKind::KeyPrepare:
    return KernelOpInterface(
        KPrepareOp::create(
            builder, loc,
            spec.writeCache ? result(BufferSlot::KCache)
                            : result(BufferSlot::KOut),
            spec.writeCache ? result(BufferSlot::VCache)
                            : result(BufferSlot::VOut),
            result(BufferSlot::SavedMean), result(BufferSlot::SavedRstd),
            input(BufferSlot::K), input(BufferSlot::V),
            input(BufferSlot::CuSeqlens), input(BufferSlot::KCache),
            input(BufferSlot::VCache), input(BufferSlot::CacheSeqlens),
            input(BufferSlot::BlockTables), input(BufferSlot::PageIndptr),
            input(BufferSlot::KScale), input(BufferSlot::VScale),
            input(BufferSlot::KWeight), input(BufferSlot::Positions),
            input(BufferSlot::RopeTable),
            spec.qkStatistic == ::norm::Statistic::None
                ? QKNormKindAttr()
                : QKNormKindAttr::get(context, getQKNormKind(spec.qkStatistic)),
            builder.getI64IntegerAttr(spec.numKvHeads),
            builder.getI64IntegerAttr(spec.hidden),
            ::norm::usesEps(spec) ? real(spec.eps) : FloatAttr(),
            real(spec.weightOffset), style, rotaryDim, theta, ropeFirst,
            blockSize, /*launch=*/nullptr, /*kernel=*/nullptr)
            .getOperation());
  case OpKind::Attention:
  case OpKind::AttentionDecode: {
    QKNormKindAttr qkNorm =
        spec.qkStatistic == ::norm::Statistic::None
            ? QKNormKindAttr()
            : QKNormKindAttr::get(context, getQKNormKind(spec.qkStatistic));
    FloatAttr eps = ::norm::usesEps(spec) ? real(spec.eps) : FloatAttr();
    IntegerAttr heads = builder.getI64IntegerAttr(spec.numQHeads);
    IntegerAttr kvHeads = builder.getI64IntegerAttr(spec.numKvHeads);
    IntegerAttr headDim = builder.getI64IntegerAttr(spec.hidden);
    if (spec.kind == OpKind::AttentionDecode)
      return KernelOpInterface(
          AttentionDecodeKernelOp::create(
              builder, loc, result(BufferSlot::Output),
              result(BufferSlot::KCache), result(BufferSlot::VCache),
              input(BufferSlot::Q), input(BufferSlot::K), input(BufferSlot::V),
              input(BufferSlot::CuSeqlens), input(BufferSlot::KCache),
              input(BufferSlot::VCache), input(BufferSlot::CacheSeqlens),
              input(BufferSlot::BlockTables), input(BufferSlot::PageIndptr),
              input(BufferSlot::KScale), input(BufferSlot::VScale),
              input(BufferSlot::QWeight), input(BufferSlot::KWeight),
              input(BufferSlot::Positions), input(BufferSlot::RopeTable), heads,
              kvHeads, headDim, real(spec.scale), qkNorm, eps,
              real(spec.weightOffset), style, rotaryDim, theta, ropeFirst,
              blockSize, /*launch=*/nullptr,
              /*kernel=*/nullptr)
              .getOperation());
    return KernelOpInterface(
        AttentionKernelOp::create(
            builder, loc, result(BufferSlot::Output), result(BufferSlot::Lse),
            input(BufferSlot::Q), input(BufferSlot::K), input(BufferSlot::V),
            input(BufferSlot::CuSeqlens), input(BufferSlot::QWeight),
            input(BufferSlot::KWeight), input(BufferSlot::Positions),
            input(BufferSlot::RopeTable), heads, kvHeads, headDim,
            spec.causal ? builder.getUnitAttr() : UnitAttr(), real(spec.scale),
            qkNorm, eps, real(spec.weightOffset), style, rotaryDim, theta,
            ropeFirst,
            spec.keysPrepared ? builder.getUnitAttr() : UnitAttr(),
            /*launch=*/nullptr, /*kernel=*/nullptr)
            .getOperation());
  }
  default:
    break;
  }
  auto op = FusedRowOp::create(
      builder, loc, result(BufferSlot::Output), result(BufferSlot::ResidualOut),
      result(BufferSlot::OutputScales), result(BufferSlot::SavedMean),
      result(BufferSlot::SavedRstd), input(BufferSlot::Input),
      input(BufferSlot::Addend), input(BufferSlot::Skip),
      input(BufferSlot::Weight), input(BufferSlot::Bias),
      input(BufferSlot::Mean), input(BufferSlot::Variance),
      input(BufferSlot::OutputScale), input(BufferSlot::ScaleUpperBound),
      StatisticAttr::get(context,
                         getDialectStatistic(::norm::getStatistic(spec))),
      ::norm::usesEps(spec) ? real(spec.eps) : FloatAttr(), real(spec.alpha),
      real(spec.weightOffset), builder.getI64IntegerAttr(spec.groups),
      spec.f32Residual ? builder.getUnitAttr() : UnitAttr(),
      getRowOperandAttr(context, spec.outputOver),
      getRowOperandAttr(context, spec.residualOver),
      /*launch=*/nullptr, /*kernel=*/nullptr);
  return KernelOpInterface(op.getOperation());
}

::norm::TargetOptions mlir::norm::getTargetOptions(Operation *op) {
  for (Operation *scope = op; scope; scope = scope->getParentOp())
    if (auto target =
            scope->getAttrOfType<TargetAttr>(NormDialect::kTargetAttrName))
      return target.getOptions();
  return ::norm::TargetOptions();
}

void mlir::norm::setTargetOptions(ModuleOp module,
                                  const ::norm::TargetOptions &target) {
  module->setAttr(NormDialect::kTargetAttrName,
                  TargetAttr::get(module.getContext(), target));
}
