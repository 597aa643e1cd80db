//===- RowKernelSpec.cpp - a norm.fused_row under construction ------------===//

#include "passes/RowKernelSpec.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::norm;

std::optional<RowKernelSpec> RowKernelSpec::get(Operation *op) {
  RowKernelSpec spec;
  bool known =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case([&](RMSNormOp norm) {
            spec.statistic = Statistic::rms;
            spec.input = norm.getInput();
            spec.weight = norm.getWeight();
            spec.eps = norm.getEps().convertToDouble();
            spec.weightOffset = norm.getWeightOffset().convertToDouble();
            return true;
          })
          .Case<LayerNormOp, GroupNormOp>([&](auto norm) {
            spec.statistic = Statistic::mean_var;
            spec.input = norm.getInput();
            spec.weight = norm.getWeight();
            spec.bias = norm.getBias();
            spec.eps = norm.getEps().convertToDouble();
            if constexpr (std::is_same_v<decltype(norm), GroupNormOp>)
              spec.groups = norm.getGroups();
            return true;
          })
          .Case([&](L2NormOp norm) {
            spec.statistic = Statistic::l2;
            spec.input = norm.getInput();
            spec.eps = norm.getEps().convertToDouble();
            return true;
          })
          .Case([&](BatchNormInferenceOp norm) {
            spec.input = norm.getInput();
            spec.mean = norm.getMean();
            spec.variance = norm.getVariance();
            spec.weight = norm.getWeight();
            spec.bias = norm.getBias();
            spec.eps = norm.getEps().convertToDouble();
            return true;
          })
          .Case([&](ResidualAddOp add) {
            spec.input = add.getResidual();
            spec.addend = add.getSublayer();
            spec.alpha = add.getAlpha().convertToDouble();
            return true;
          })
          .Case([&](CastOp cast) {
            spec.input = cast.getInput();
            return true;
          })
          .Case([&](FusedRowOp row) {
            // A configured kernel is not re-fused, nor one whose saved
            // statistics a backward kernel reads.
            if (row.getLaunchAttr() || row.getKernelAttr() ||
                row.getSavedRstd())
              return false;
            spec.statistic = row.getStatistic();
            spec.input = row.getInput();
            spec.addend = row.getAddend();
            spec.skip = row.getSkip();
            spec.weight = row.getWeight();
            spec.bias = row.getBias();
            spec.mean = row.getMean();
            spec.variance = row.getVariance();
            if (FloatAttr eps = row.getEpsAttr())
              spec.eps = eps.getValueAsDouble();
            spec.alpha = row.getAlpha().convertToDouble();
            spec.weightOffset = row.getWeightOffset().convertToDouble();
            spec.groups = row.getGroups();
            spec.f32Residual = row.getF32Residual();
            if (Value residual = row.getResidualOut())
              spec.residualType = cast<RankedTensorType>(residual.getType());
            spec.outputScale = row.getOutputScale();
            spec.scaleUb = row.getScaleUb();
            if (Value scales = row.getOutputScales())
              spec.scalesType = cast<RankedTensorType>(scales.getType());
            return true;
          })
          .Default([](Operation *) { return false; });
  if (!known)
    return std::nullopt;
  spec.outputType = cast<RankedTensorType>(op->getResult(0).getType());
  return spec;
}

Type RowKernelSpec::getStreamElementType() const {
  if (f32Residual)
    return Float32Type::get(input.getContext());
  return getElementTypeOrSelf(input.getType());
}

bool RowKernelSpec::isElementwiseCopy() const {
  return statistic == Statistic::none && !mean && !variance && !weight &&
         !bias && !skip;
}

SmallVector<Value> RowKernelSpec::getOperands() const {
  SmallVector<Value> operands;
  for (Value v : {input, addend, skip, weight, bias, mean, variance,
                  outputScale, scaleUb})
    if (v)
      operands.push_back(v);
  return operands;
}

FusedRowOp RowKernelSpec::build(OpBuilder &builder, Location loc) const {
  return FusedRowOp::create(
      builder, loc, outputType, residualType, scalesType,
      /*saved_mean=*/Type(), /*saved_rstd=*/Type(), input, addend, skip,
      weight, bias, mean, variance, outputScale, scaleUb,
      StatisticAttr::get(builder.getContext(), statistic),
      readsEps() ? builder.getF64FloatAttr(eps) : FloatAttr(),
      builder.getF64FloatAttr(alpha), builder.getF64FloatAttr(weightOffset),
      builder.getI64IntegerAttr(groups),
      f32Residual ? builder.getUnitAttr() : UnitAttr(),
      /*output_over=*/RowOperandAttr(), /*residual_over=*/RowOperandAttr(),
      /*launch=*/nullptr, /*kernel=*/nullptr);
}

void mlir::norm::replaceRowKernel(RewriterBase &rewriter, Operation *op,
                                  FusedRowOp fused) {
  SmallVector<Value> replacements = {fused.getOutput()};
  auto row = dyn_cast<FusedRowOp>(op);
  if (row ? bool(row.getResidualOut()) : op->getNumResults() == 2)
    replacements.push_back(fused.getResidualOut());
  if (row && row.getOutputScales())
    replacements.push_back(fused.getOutputScales());
  rewriter.replaceOp(op, replacements);
}

Operation *mlir::norm::findInsertionPoint(ArrayRef<Operation *> candidates,
                                          ArrayRef<Value> operands,
                                          ArrayRef<Operation *> users) {
  DominanceInfo dominance;
  for (Operation *point : candidates) {
    if (llvm::all_of(operands,
                     [&](Value v) {
                       return dominance.properlyDominates(v, point);
                     }) &&
        llvm::all_of(users, [&](Operation *user) {
          return dominance.dominates(point, user);
        }))
      return point;
  }
  return nullptr;
}

SmallVector<Operation *>
mlir::norm::getUsersExcept(ValueRange values,
                           ArrayRef<Operation *> excluded) {
  SmallVector<Operation *> users;
  for (Value v : values) {
    if (!v)
      continue;
    for (Operation *user : v.getUsers())
      if (!llvm::is_contained(excluded, user))
        users.push_back(user);
  }
  return users;
}
