//===- NormOps.cpp - norm dialect operations ------------------------------===//

#include "dialects/NormOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

using namespace mlir;
using namespace mlir::norm;

//===----------------------------------------------------------------------===//
// custom<Real>: reals in their shortest round-tripping form
//===----------------------------------------------------------------------===//

static ParseResult parseReal(OpAsmParser &parser, FloatAttr &attr) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  attr = parser.getBuilder().getF64FloatAttr(value);
  return success();
}

static void printReal(OpAsmPrinter &printer, Operation *, FloatAttr attr) {
  printer << ::norm::formatReal(attr.getValueAsDouble());
}

//===----------------------------------------------------------------------===//
// Shared verification
//===----------------------------------------------------------------------===//

namespace {

/// Checks the operands and results of one op against a common hidden size:
/// the first row tensor named sets it (and the row count); later ones must
/// agree.
class ShapeChecker {
public:
  explicit ShapeChecker(Operation *op) : op(op) {}

  /// A rows x hidden tensor; the hidden size must be static and positive.
  LogicalResult row(Type type, StringRef name) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.isDynamicDim(1))
      return op->emitOpError()
             << "'" << name << "' must have a static hidden size, got " << type;
    int64_t width = tensor.getDimSize(1);
    if (width == 0)
      return op->emitOpError()
             << "'" << name << "' must have a non-empty hidden size, got "
             << type;
    // The kernels' limit, stated on the op the user wrote.
    if (width > ::norm::kMaxRowLength)
      return op->emitOpError()
             << "'" << name << "': hidden size must be in [1, "
             << ::norm::kMaxRowLength << "], got " << width
             << " (the kernels' limit)";
    int64_t r = tensor.getDimSize(0);
    if (!hidden) {
      hidden = width;
      hiddenFrom = name.str();
      rows = r;
      return success();
    }
    if (width != *hidden)
      return op->emitOpError() << "hidden size of '" << name << "' (" << width
                               << ") does not match hidden size of '"
                               << hiddenFrom << "' (" << *hidden << ")";
    if (!ShapedType::isDynamic(r) && !ShapedType::isDynamic(rows) && r != rows)
      return op->emitOpError() << "row count of '" << name << "' (" << r
                               << ") does not match row count of '"
                               << hiddenFrom << "' (" << rows << ")";
    return success();
  }
  LogicalResult row(Value v, StringRef name) {
    return v ? row(v.getType(), name) : success();
  }

  /// A scalar in device memory: one element.
  LogicalResult scalar(Value v, StringRef name) {
    if (v && cast<RankedTensorType>(v.getType()).getDimSize(0) != 1)
      return op->emitOpError() << "'" << name
                               << "' is a scalar: one element, got "
                               << v.getType();
    return success();
  }

  /// A 1-D parameter of the hidden size (or of `length`, `what`).
  LogicalResult param(Value v, StringRef name,
                      std::optional<int64_t> length = std::nullopt,
                      StringRef what = "the head dim") {
    if (!v)
      return success();
    assert((length || hidden) && "no row tensor set the hidden size");
    int64_t expected = length ? *length : *hidden;
    if (cast<RankedTensorType>(v.getType()).getDimSize(0) != expected)
      return op->emitOpError()
             << "'" << name << "' must have " << expected << " elements ("
             << (length ? what : "the hidden size") << "), got "
             << v.getType();
    return success();
  }

  int64_t getHidden() const { return *hidden; }

private:
  Operation *op;
  std::optional<int64_t> hidden;
  std::string hiddenFrom;
  int64_t rows = ShapedType::kDynamic;
};

} // namespace

/// A rule of the kernel model, checked at `op`.
static LogicalResult check(Operation *op, const ::norm::Status &status) {
  if (status)
    return success();
  return op->emitOpError() << status.message();
}

/// eps, alpha and scale: NaN, infinities, zero and negatives are all
/// rejected.
static LogicalResult verifyPositiveFinite(Operation *op, double value,
                                          StringRef name) {
  return check(op, ::norm::verifyPositiveFinite(value, name));
}

static LogicalResult verifyEps(Operation *op, FloatAttr eps,
                               StringRef name = "eps") {
  return check(op, ::norm::verifyEps(eps.getValueAsDouble(), name));
}

/// `weight_offset` shifts the weight (Gemma's `1 + w`): a weight must exist.
static LogicalResult verifyWeightOffset(Operation *op, double offset,
                                        Value weight) {
  return check(op, ::norm::verifyWeightOffset(offset, bool(weight)));
}

/// Layer ops keep the input's type.
static LogicalResult verifySameResultType(Operation *op, Type input,
                                          Type result) {
  if (input != result)
    return op->emitOpError() << "result type " << result
                             << " does not match input type " << input;
  return success();
}

static LogicalResult verifyPositive(Operation *op, int64_t value,
                                    StringRef name) {
  if (value <= 0)
    return op->emitOpError() << name << " must be positive, got " << value;
  return success();
}

/// `heads` x `headDim` must be the static width of `type`; compared by
/// division so that huge attribute values cannot overflow.
static LogicalResult verifyHeadsWidth(Operation *op, Type type, StringRef name,
                                      int64_t heads, StringRef headsName,
                                      int64_t headDim) {
  int64_t width = cast<RankedTensorType>(type).getDimSize(1);
  if (ShapedType::isDynamic(width) || width % headDim != 0 ||
      width / headDim != heads)
    return op->emitOpError()
           << "'" << name << "' must have " << headsName << " (" << heads
           << ") x head_dim (" << headDim << ") columns, got " << type;
  return success();
}

/// ODS checks the types in each operand segment of an op with
/// AttrSizedOperandSegments, but not that the segment of a required operand
/// holds exactly one value. Generic IR that breaks this must be rejected
/// before any accessor assumes it.
template <typename OpTy>
static LogicalResult
verifyRequiredSegments(OpTy op, ArrayRef<unsigned> requiredSegments) {
  for (unsigned segment : requiredSegments) {
    auto [start, length] = op.getODSOperandIndexAndLength(segment);
    if (length != 1)
      return op.emitOpError() << "operand group starting at #" << start
                              << " requires 1 element, but found " << length;
  }
  return success();
}

/// The element type all of `params` share (the model has one type for
/// weight and bias and one for per-channel statistics); bf16 when there are
/// none.
static FailureOr<::norm::ElementType>
getSharedParamType(Operation *op, ArrayRef<std::pair<Value, StringRef>> params) {
  std::optional<std::pair<Type, StringRef>> first;
  for (auto [value, name] : params) {
    if (!value)
      continue;
    Type element = getElementTypeOrSelf(value.getType());
    if (!first) {
      first = {element, name};
      continue;
    }
    if (element != first->first)
      return op->emitOpError()
             << "parameters of one kernel share an element type: '" << name
             << "' is " << element << ", '" << first->second << "' is "
             << first->first;
  }
  return first ? getElementType(first->first) : ::norm::ElementType::bf16;
}

/// Weight and bias, and per-channel mean and variance, each share one
/// element type (the kernel model's rule, checked at the layer op).
static LogicalResult verifyParamTypes(Operation *op, Value weight, Value bias,
                                      Value mean = {}, Value variance = {}) {
  if (failed(getSharedParamType(op, {{weight, "weight"}, {bias, "bias"}})))
    return failure();
  return getSharedParamType(op, {{mean, "mean"}, {variance, "variance"}});
}

//===----------------------------------------------------------------------===//
// Kernel ops
//===----------------------------------------------------------------------===//

/// The rules of the kernel model for a kernel op: the operation
/// (norm::verifyOpSpec) and, once it has one, its launch configuration
/// (norm::verifyLaunchFor).
static LogicalResult verifyKernelModel(KernelOpInterface op) {
  ::norm::OpSpec spec = op.getOpSpec();
  if (failed(check(op, ::norm::verifyOpSpec(spec))))
    return failure();
  if (LaunchAttr launch = op.getLaunchAttr())
    return check(op, ::norm::verifyLaunchFor(
                         spec, getLaunchConfig(launch),
                         getTargetOptions(op).getMaxSharedBytes()));
  return success();
}


//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(verifyEps(*this, getEpsAttr())) ||
      failed(verifyWeightOffset(*this, getWeightOffset().convertToDouble(),
                                getWeight())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult LayerNormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(verifyEps(*this, getEpsAttr())))
    return failure();
  if (failed(verifyParamTypes(*this, getWeight(), getBias())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult L2NormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(verifyEps(*this, getEpsAttr())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult GroupNormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(verifyEps(*this, getEpsAttr())) ||
      failed(verifyPositive(*this, getGroups(), "groups")))
    return failure();
  if (shapes.getHidden() % getGroups() != 0)
    return emitOpError() << "groups (" << getGroups()
                         << ") must divide the hidden size ("
                         << shapes.getHidden() << ")";
  if (failed(verifyParamTypes(*this, getWeight(), getBias())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult BatchNormInferenceOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(verifyRequiredSegments(*this, {0, 1, 2})) ||
      failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getMean(), "mean")) ||
      failed(shapes.param(getVariance(), "variance")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(verifyEps(*this, getEpsAttr())))
    return failure();
  if (failed(verifyParamTypes(*this, getWeight(), getBias(), getMean(),
                              getVariance())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

/// Batch and column statistics are f32 vectors whatever the storage type.
static LogicalResult verifyF32Statistics(Operation *op, ValueRange stats,
                                         StringRef what) {
  for (Value stat : stats)
    if (!getElementTypeOrSelf(stat.getType()).isF32())
      return op->emitOpError()
             << what << " statistics are f32, got " << stat.getType();
  return success();
}

/// Saved statistics (`rows x groups` f32) or gradient partials (f32 rows of
/// `cols`, rows of their own when `rows` is null): absent is fine.
static LogicalResult verifyF32Rows(Operation *op, Value value, StringRef name,
                                   int64_t cols, std::optional<int64_t> rows) {
  if (!value)
    return success();
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getDimSize(1) != cols)
    return op->emitOpError() << "'" << name << "' must have " << cols
                             << " columns, got " << type;
  if (rows && !ShapedType::isDynamic(*rows) && !type.isDynamicDim(0) &&
      type.getDimSize(0) != *rows)
    return op->emitOpError() << "row count of '" << name << "' ("
                             << type.getDimSize(0)
                             << ") does not match the rows (" << *rows << ")";
  return success();
}

LogicalResult BatchNormTrainingOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(shapes.param(getBatchMean(), "batch_mean")) ||
      failed(shapes.param(getBatchVariance(), "batch_variance")) ||
      failed(verifyEps(*this, getEpsAttr())) ||
      failed(verifyF32Statistics(*this, {getBatchMean(), getBatchVariance()},
                                 "batch")))
    return failure();
  if (failed(verifyParamTypes(*this, getWeight(), getBias())))
    return failure();
  return verifySameResultType(*this, getInput().getType(),
                              getResult().getType());
}

LogicalResult ResidualAddOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getResidual(), "residual")) ||
      failed(shapes.row(getSublayer(), "sublayer")) ||
      failed(
          verifyPositiveFinite(*this, getAlpha().convertToDouble(), "alpha")))
    return failure();
  return verifySameResultType(*this, getResidual().getType(), getType());
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  // The shape is unchanged (CastOpInterface checks areCastCompatible first).
  return ShapeChecker(*this).row(getInput(), "input");
}

bool CastOp::areCastCompatible(TypeRange inputs, TypeRange outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inputs.front());
  auto out = dyn_cast<RankedTensorType>(outputs.front());
  return in && out && in.getShape() == out.getShape();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// RotaryOp and AttentionOp
//===----------------------------------------------------------------------===//

/// The model's rope style of an optional `rope` attribute.
static ::norm::RopeStyle getModelRopeStyle(std::optional<RopeStyle> style) {
  if (!style)
    return ::norm::RopeStyle::None;
  return *style == RopeStyle::neox ? ::norm::RopeStyle::NeoX
                                   : ::norm::RopeStyle::GptJ;
}

/// `rotary_dim`, the head dim by default.
template <typename OpTy> static int64_t getRotaryDimOrHeadDim(OpTy op) {
  if (std::optional<uint64_t> dim = op.getRotaryDim())
    return static_cast<int64_t>(*dim);
  return static_cast<int64_t>(op.getHeadDim());
}

/// The rope fields of `spec` from a kernel op's (attention, the QK-Norm
/// prologue).
template <typename OpTy>
static void setModelRope(OpTy op, ::norm::OpSpec &spec) {
  spec.rope = getModelRopeStyle(op.getRope());
  if (spec.rope == ::norm::RopeStyle::None)
    return;
  spec.rotaryDim = getRotaryDimOrHeadDim(op);
  if (FloatAttr theta = op.getRopeThetaAttr())
    spec.ropeTheta = theta.getValueAsDouble();
  spec.ropePositions = bool(op.getPositions());
  spec.ropeTable = bool(op.getRopeTable());
  spec.ropeFirst = op.getRopeFirst();
}

/// The rules of a rotary embedding, wherever one is (norm.rotary, the
/// attention ops): `rope` set for rotary_dim, rope_theta, positions and a
/// table; rope_theta exactly when no table gives the angles; the model's
/// rule of the style and rotary dim; one position per token of `rows`; a
/// table of rotary_dim columns.
template <typename OpTy>
static LogicalResult verifyRopeOperands(OpTy op, std::optional<RopeStyle> style,
                                        Type rows, int64_t headDim) {
  Value positions = op.getPositions(), table = op.getRopeTable();
  if (!style) {
    if (op.getRotaryDimAttr() || op.getRopeThetaAttr() || positions || table)
      return op.emitOpError("'rotary_dim', 'rope_theta', 'positions' and "
                            "'rope_table' need a 'rope' style");
    return success();
  }
  FloatAttr theta = op.getRopeThetaAttr();
  if (table && theta)
    return op.emitOpError("the angles come from 'rope_table' or from "
                          "'rope_theta', not both");
  if (!table && !theta)
    return op.emitOpError("'rope' needs 'rope_theta' or a 'rope_table'");
  int64_t rotaryDim = getRotaryDimOrHeadDim(op);
  ::norm::Status status = ::norm::verifyRope(
      getModelRopeStyle(style), rotaryDim,
      theta ? theta.getValueAsDouble() : 0.0, headDim, /*fromTable=*/bool(table));
  if (!status)
    return op->emitOpError(status.message());
  if (positions &&
      failed(verifyCompatibleShape(
          cast<ShapedType>(positions.getType()).getDimSize(0),
          cast<ShapedType>(rows).getDimSize(0))))
    return op.emitOpError() << "'positions' must hold one position per token ("
                            << rows << "), got " << positions.getType();
  if (table) {
    int64_t cols = cast<ShapedType>(table.getType()).getDimSize(1);
    if (cols != rotaryDim)
      return op.emitOpError() << "'rope_table' must have rotary_dim ("
                              << rotaryDim << ") columns, got "
                              << table.getType();
  }
  return success();
}

LogicalResult RotaryOp::verify() {
  int64_t heads = getNumHeads(), headDim = getHeadDim();
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(verifyPositive(*this, heads, "num_heads")) ||
      failed(verifyPositive(*this, headDim, "head_dim")) ||
      failed(verifyHeadsWidth(*this, getInput().getType(), "input", heads,
                              "num_heads", headDim)))
    return failure();
  return verifyRopeOperands(*this, getStyle(), getInput().getType(), headDim);
}

int64_t mlir::norm::getQKWeightRows(Value weight, int64_t headDim) {
  return weight && headDim > 0
             ? cast<RankedTensorType>(weight.getType()).getDimSize(0) / headDim
             : 1;
}

bool mlir::norm::isPerHeadQKWeightPair(Value qWeight, Value kWeight,
                                       int64_t headDim) {
  return getQKWeightRows(qWeight, headDim) > 1 ||
         getQKWeightRows(kWeight, headDim) > 1;
}

template <typename OpTy> static bool hasPerHeadQKWeights(OpTy op) {
  return isPerHeadQKWeightPair(op.getQNormWeight(), op.getKNormWeight(),
                               op.getHeadDim());
}

/// The QK-Norm weights of an op with `qHeads` and `kvHeads` heads of
/// `headDim` (named after the op's operands): one head_dim row every head
/// shares, or a row per head for both (Command R+), of one type.
static LogicalResult verifyQKWeightRows(Operation *op, Value qWeight,
                                        Value kWeight,
                                        std::array<StringRef, 3> names,
                                        int64_t qHeads, int64_t kvHeads,
                                        int64_t headDim) {
  auto [qName, kName, qHeadsName] = names;
  ShapeChecker shapes(op);
  bool perHead = isPerHeadQKWeightPair(qWeight, kWeight, headDim);
  std::string qRows = (qHeadsName + " x head_dim: a row per head").str();
  if (failed(shapes.param(qWeight, qName, perHead ? qHeads * headDim : headDim,
                          perHead ? StringRef(qRows) : "the head dim")) ||
      failed(shapes.param(kWeight, kName, perHead ? kvHeads * headDim : headDim,
                          perHead ? "num_kv_heads x head_dim: a row per head"
                                  : "the head dim")))
    return failure();
  return getSharedParamType(op, {{qWeight, qName}, {kWeight, kName}});
}

/// Whether `op`'s keys were normalized and rotated before it
/// (norm.attention_kernel's prepared_k): its QK-Norm and rope are q's.
template <typename OpTy> static bool hasPreparedKeys(OpTy op) {
  if constexpr (std::is_same_v<OpTy, AttentionKernelOp>)
    return op.getPreparedK();
  return false;
}

/// The rules norm.attention and norm.attention_kernel share: head counts
/// and widths, k and v alike, the scale, and the QK-Norm's fields.
template <typename OpTy> static LogicalResult verifyAttentionFields(OpTy op) {
  int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
          headDim = op.getHeadDim();
  if (failed(verifyPositive(op, heads, "num_heads")) ||
      failed(verifyPositive(op, kvHeads, "num_kv_heads")) ||
      failed(verifyPositive(op, headDim, "head_dim")))
    return failure();
  if (heads % kvHeads != 0)
    return op.emitOpError() << "num_kv_heads (" << kvHeads
                            << ") must divide num_heads (" << heads << ")";
  if (failed(verifyHeadsWidth(op, op.getQ().getType(), "q", heads,
                              "num_heads", headDim)) ||
      failed(verifyHeadsWidth(op, op.getK().getType(), "k", kvHeads,
                              "num_kv_heads", headDim)) ||
      failed(verifyHeadsWidth(op, op.getV().getType(), "v", kvHeads,
                              "num_kv_heads", headDim)))
    return failure();
  if (failed(verifyCompatibleShape(op.getK().getType(), op.getV().getType())))
    return op.emitOpError() << "'k' and 'v' must have the same shape, got "
                            << op.getK().getType() << " and "
                            << op.getV().getType();
  if (failed(verifyPositiveFinite(op, op.getScale().convertToDouble(),
                                  "scale")))
    return failure();
  if (failed(verifyRopeOperands(op, op.getRope(), op.getQ().getType(),
                                headDim)))
    return failure();
  if (op.getRopeFirst() && (!op.getRope() || !op.getQkNorm()))
    return op.emitOpError("'rope_first' needs a 'rope' style and a 'qk_norm' "
                          "kind");
  if (!op.getQkNorm()) {
    if (op.getQNormWeight() || op.getKNormWeight() || op.getQkNormEpsAttr() ||
        op.getQkNormOffset().convertToDouble() != 0.0)
      return op.emitOpError(
          "QK-Norm weights, eps and offset need a 'qk_norm' kind");
    return success();
  }
  if (!op.getQkNormEpsAttr())
    return op.emitOpError("'qk_norm' needs 'qk_norm_eps'");
  if (failed(verifyEps(op, op.getQkNormEpsAttr(), "qk_norm_eps")) ||
      failed(verifyQKWeightRows(
          op, op.getQNormWeight(), op.getKNormWeight(),
          {"q_norm_weight", "k_norm_weight", "num_heads"}, heads, kvHeads,
          headDim)))
    return failure();
  double offset = op.getQkNormOffset().convertToDouble();
  if (!std::isfinite(offset))
    return op.emitOpError() << "qk_norm_offset must be a finite number, got "
                            << ::norm::describeReal(offset);
  if (hasPreparedKeys(op)) {
    if (offset != 0.0 && !op.getQNormWeight())
      return op.emitOpError("qk_norm_offset needs 'q_norm_weight'");
    return success();
  }
  if (offset != 0.0 && !(op.getQNormWeight() && op.getKNormWeight()))
    return op.emitOpError("qk_norm_offset needs both QK-Norm weights");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyRequiredSegments(*this, {0, 1, 2})) ||
      failed(verifyAttentionFields(*this)))
    return failure();
  return verifySameResultType(*this, getQ().getType(), getType());
}

//===----------------------------------------------------------------------===//
// Kernel ops
//===----------------------------------------------------------------------===//

int64_t FusedRowOp::getHidden() {
  return cast<RankedTensorType>(getInput().getType()).getDimSize(1);
}

Type FusedRowOp::getStreamElementType() {
  if (getF32Residual())
    return Float32Type::get(getContext());
  return getElementTypeOrSelf(getInput().getType());
}

LogicalResult FusedRowOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(shapes.row(getInput(), "input")) ||
      failed(shapes.row(getAddend(), "addend")) ||
      failed(shapes.row(getSkip(), "skip")) ||
      failed(shapes.row(getOutput(), "output")) ||
      failed(shapes.row(getResidualOut(), "residual_out")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(shapes.param(getMean(), "mean")) ||
      failed(shapes.param(getVariance(), "variance")) ||
      failed(shapes.scalar(getOutputScale(), "output_scale")) ||
      failed(shapes.scalar(getScaleUb(), "scale_ub")))
    return failure();
  if (getOutputScale() && getOutputScales())
    return emitOpError("quantizes with a static 'output_scale' or writes "
                       "per-token 'output_scales', not both");
  Type inputElement = getElementTypeOrSelf(getInput().getType());
  if (getResidualOut() &&
      getElementTypeOrSelf(getResidualOut().getType()) != inputElement)
    return emitOpError() << "residual_out must keep the element type of "
                            "'input' ("
                         << inputElement << "), got "
                         << getResidualOut().getType();
  bool perChannelStats = getMean() || getVariance();
  if (perChannelStats && !(getMean() && getVariance()))
    return emitOpError("'mean' and 'variance' go together");
  if (perChannelStats && getStatistic() != Statistic::none)
    return emitOpError("per-channel 'mean'/'variance' need statistic 'none'");
  if (failed(verifyParamTypes(*this, getWeight(), getBias(), getMean(),
                              getVariance())))
    return failure();
  // eps is there exactly when something reads it.
  bool readsEps = ::norm::usesEps(getOpSpec());
  if (readsEps && !getEpsAttr())
    return emitOpError() << "needs an eps: statistic '"
                         << stringifyStatistic(getStatistic()) << "'"
                         << (perChannelStats ? " with per-channel variance"
                                             : "")
                         << " reads it";
  if (!readsEps && getEpsAttr())
    return emitOpError("takes no eps: without a statistic or per-channel "
                       "variance nothing reads it");
  int64_t rows = cast<RankedTensorType>(getInput().getType()).getDimSize(0);
  if (failed(verifyF32Rows(*this, getOutputScales(), "output_scales", 1,
                           rows)) ||
      failed(verifyF32Rows(*this, getSavedMean(), "saved_mean", getGroups(),
                           rows)) ||
      failed(verifyF32Rows(*this, getSavedRstd(), "saved_rstd", getGroups(),
                           rows)))
    return failure();
  bool meanVar = getStatistic() == Statistic::mean_var;
  if (getSavedMean() && !(meanVar && getSavedRstd()))
    return emitOpError("'saved_mean' needs statistic 'mean_var' and "
                       "'saved_rstd'");
  if (meanVar && getSavedRstd() && !getSavedMean())
    return emitOpError("statistic 'mean_var' saves 'saved_mean' with "
                       "'saved_rstd' (its backward reads both)");
  return verifyKernelModel(*this);
}

LogicalResult FusedRowGradOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(verifyRequiredSegments(*this, {0, 1, 5})) ||
      failed(shapes.row(getInput(), "input")) ||
      failed(shapes.row(getGradOutput(), "grad_output")) ||
      failed(shapes.row(getResidualGrad(), "residual_grad")) ||
      failed(shapes.row(getGradInput(), "grad_input")) ||
      failed(shapes.row(getAddendGrad(), "addend_grad")))
    return failure();
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t hidden = input.getDimSize(1), rows = input.getDimSize(0);
  int64_t groups = getGroups();
  if (groups < 1 || hidden % groups != 0)
    return emitOpError() << "groups (" << groups
                         << ") must be positive and divide the hidden size ("
                         << hidden << ")";
  // Heads share one head's weight and its gradient.
  int64_t paramCols = getPerHeadWeight() ? hidden / groups : hidden;
  if (failed(shapes.param(getWeight(), "weight",
                          getPerHeadWeight() ? std::optional(paramCols)
                                             : std::nullopt)) ||
      failed(verifyF32Rows(*this, getSavedMean(), "saved_mean", groups,
                           rows)) ||
      failed(verifyF32Rows(*this, getSavedRstd(), "saved_rstd", groups,
                           rows)) ||
      failed(verifyF32Rows(*this, getWeightGradPartials(),
                           "weight_grad_partials", paramCols, std::nullopt)) ||
      failed(verifyF32Rows(*this, getBiasGradPartials(), "bias_grad_partials",
                           paramCols, std::nullopt)))
    return failure();
  Type inputElement = getElementTypeOrSelf(input);
  for (auto [value, name] : {std::pair{getResidualGrad(), "residual_grad"},
                             std::pair{getGradInput(), "grad_input"}})
    if (value && getElementTypeOrSelf(value.getType()) != inputElement)
      return emitOpError() << "'" << name
                           << "' must have the element type of 'input' ("
                           << inputElement << "), got " << value.getType();
  if (bool(getSavedMean()) != (getStatistic() == Statistic::mean_var))
    return emitOpError("'saved_mean' is there exactly for statistic "
                       "'mean_var'");
  if (getWeightGradPartials() && !getWeight())
    return emitOpError("'weight_grad_partials' needs the 'weight'");
  if (bool(getAddendGrad()) != (getAlpha().convertToDouble() != 1.0))
    return emitOpError("'addend_grad' is there exactly when alpha is not 1 "
                       "(else 'grad_input' is the addend's gradient too)");
  return verifyKernelModel(*this);
}

LogicalResult ColumnSumOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getOutput(), "output")))
    return failure();
  return verifyKernelModel(*this);
}

LogicalResult QKNormPrologueOp::verify() {
  int64_t qHeads = getNumQHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(verifyPositive(*this, qHeads, "num_q_heads")) ||
      failed(verifyPositive(*this, kvHeads, "num_kv_heads")) ||
      failed(verifyPositive(*this, headDim, "head_dim")))
    return failure();
  if (failed(verifyHeadsWidth(*this, getQ().getType(), "q", qHeads,
                              "num_q_heads", headDim)) ||
      failed(verifyHeadsWidth(*this, getK().getType(), "k", kvHeads,
                              "num_kv_heads", headDim)))
    return failure();
  // The widths of q and k are (num_q_heads | num_kv_heads) x head_dim now,
  // but the packed width may still overflow.
  auto qkv = cast<RankedTensorType>(getQkv().getType());
  std::optional<int64_t> packed = llvm::checkedMul<int64_t>(kvHeads, 2);
  if (packed)
    packed = llvm::checkedAdd(*packed, qHeads);
  if (packed)
    packed = llvm::checkedMul(*packed, headDim);
  if (!packed || qkv.getDimSize(1) != *packed) {
    InFlightDiagnostic diag = emitOpError()
                              << "'qkv' must have (num_q_heads + 2 * "
                                 "num_kv_heads) x head_dim";
    if (packed)
      diag << " = " << *packed;
    return diag << " columns, got " << qkv;
  }
  for (auto [v, name] : {std::pair{getQ(), "q"}, std::pair{getK(), "k"}}) {
    int64_t rows = cast<RankedTensorType>(v.getType()).getDimSize(0);
    if (!ShapedType::isDynamic(rows) && !qkv.isDynamicDim(0) &&
        rows != qkv.getDimSize(0))
      return emitOpError() << "row count of '" << name << "' (" << rows
                           << ") does not match row count of 'qkv' ("
                           << qkv.getDimSize(0) << ")";
  }
  if (getElementTypeOrSelf(getQ().getType()) !=
      getElementTypeOrSelf(getK().getType()))
    return emitOpError() << "'q' and 'k' share an element type, got "
                         << getQ().getType() << " and " << getK().getType();
  if (failed(verifyQKWeightRows(*this, getQWeight(), getKWeight(),
                                {"q_weight", "k_weight", "num_q_heads"},
                                qHeads, kvHeads, headDim)))
    return failure();
  if (bool(getQWeight()) != bool(getKWeight()))
    return emitOpError("'q_weight' and 'k_weight' go together");
  // One statistic per head, q heads first.
  if (failed(verifyF32Rows(*this, getSavedMean(), "saved_mean",
                           qHeads + kvHeads, qkv.getDimSize(0))) ||
      failed(verifyF32Rows(*this, getSavedRstd(), "saved_rstd",
                           qHeads + kvHeads, qkv.getDimSize(0))))
    return failure();
  bool meanVar = getKind() == QKNormKind::mean_var;
  if (getSavedMean() && !(meanVar && getSavedRstd()))
    return emitOpError("'saved_mean' needs kind 'mean_var' and 'saved_rstd'");
  if (meanVar && getSavedRstd() && !getSavedMean())
    return emitOpError("kind 'mean_var' saves 'saved_mean' with "
                       "'saved_rstd' (its backward reads both)");
  if (failed(verifyRopeOperands(*this, getRope(), qkv, headDim)))
    return failure();
  if (getRopeFirst() && !getRope())
    return emitOpError("'rope_first' needs a 'rope' style");
  return verifyKernelModel(*this);
}

/// An FP8 cache: e4m3 caches with f32 scales, one or one per kv head.
static LogicalResult verifyCacheScales(Operation *op, Value cache, Value kScale,
                                       Value vScale, int64_t kvHeads) {
  if (bool(kScale) != bool(vScale))
    return op->emitOpError("'k_scale' and 'v_scale' go together");
  bool fp8 = cache && isa<Float8E4M3FNType>(getElementTypeOrSelf(cache));
  if (fp8 != bool(kScale))
    return op->emitOpError(
        "an f8E4M3FN cache takes 'scales' (k_scale, v_scale), and only it");
  for (Value scale : {kScale, vScale}) {
    if (!scale)
      continue;
    int64_t count = cast<RankedTensorType>(scale.getType()).getDimSize(0);
    if (count != 1 && count != kvHeads)
      return op->emitOpError()
             << "a cache scale holds one element or one per kv head ("
             << kvHeads << "), got " << scale.getType();
  }
  return success();
}

/// A paged cache: a block table with its block size, a power of two that
/// divides the caches' static rows, and a ragged table's offsets only with
/// a table.
static LogicalResult verifyCachePages(Operation *op, Value cache,
                                      Value blockTables, Value pageIndptr,
                                      std::optional<uint64_t> blockSize) {
  if (bool(blockTables) != blockSize.has_value())
    return op->emitOpError("'pages' (the block table) and 'cache_block_size' "
                           "go together");
  if (pageIndptr && !blockTables)
    return op->emitOpError("'page_indptr' (a ragged table's offsets) needs "
                           "'pages'");
  if (!blockSize)
    return success();
  if (!cache)
    return op->emitOpError("'pages' page a KV cache: give 'cache' too");
  int64_t size = static_cast<int64_t>(*blockSize);
  if (failed(check(op, ::norm::verifyCacheBlockSize(size))))
    return failure();
  int64_t rows = cast<RankedTensorType>(cache.getType()).getDimSize(0);
  if (!ShapedType::isDynamic(rows) && rows % size != 0)
    return op->emitOpError()
           << "the caches' " << rows << " rows are not whole pages of " << size
           << " rows (cache_block_size)";
  return success();
}

LogicalResult KPrepareOp::verify() {
  int64_t kvHeads = getNumKvHeads(), headDim = getHeadDim();
  if (failed(verifyRequiredSegments(*this, {0})) ||
      failed(verifyPositive(*this, kvHeads, "num_kv_heads")) ||
      failed(verifyPositive(*this, headDim, "head_dim")) ||
      failed(verifyHeadsWidth(*this, getK().getType(), "k", kvHeads,
                              "num_kv_heads", headDim)))
    return failure();
  auto k = cast<RankedTensorType>(getK().getType());
  Value kCache = getKCache(), vCache = getVCache();
  if (bool(kCache) != bool(vCache) || bool(kCache) != bool(getCacheSeqlens()))
    return emitOpError("'k_cache', 'v_cache' and 'cache_seqlens' go "
                       "together");
  if (failed(verifyCachePages(*this, kCache, getBlockTables(), getPageIndptr(),
                              getCacheBlockSize())) ||
      failed(
          verifyCacheScales(*this, kCache, getKScale(), getVScale(), kvHeads)))
    return failure();
  if (kCache) {
    // The caches' rows are their own (batch x capacity); the columns k's.
    if (!getV() || !getCuSeqlens())
      return emitOpError("a cache takes the values ('v') and the sequences "
                         "('cu_seqlens') of the new tokens");
    if (getSavedRstd())
      return emitOpError("a cache write saves no statistics");
    for (auto [cache, name] :
         {std::pair{kCache, "k_cache"}, std::pair{vCache, "v_cache"}})
      if (cast<RankedTensorType>(cache.getType()).getDimSize(1) !=
          k.getDimSize(1))
        return emitOpError()
               << "'" << name << "' must have the columns of "
               << "'k' (" << k.getDimSize(1) << "), got " << cache.getType();
    if (failed(verifyCompatibleShape(kCache.getType(), vCache.getType())))
      return emitOpError() << "'k_cache' and 'v_cache' must have the same "
                              "shape, got "
                           << kCache.getType() << " and " << vCache.getType();
    if (getKOut().getType() != kCache.getType() || !getVOut() ||
        getVOut().getType() != vCache.getType())
      return emitOpError("'k_out' and 'v_out' are the updated caches, of "
                         "their types");
    // An FP8 cache holds e4m3 over scales (verifyCacheScales).
    if (!getKScale() &&
        getElementTypeOrSelf(vCache.getType()) != getElementTypeOrSelf(k))
      return emitOpError() << "'v_cache' holds the values as they are (the "
                              "element type of 'v'), got "
                           << vCache.getType();
    if (getElementTypeOrSelf(kCache.getType()) !=
        getElementTypeOrSelf(vCache.getType()))
      return emitOpError("'k_cache' and 'v_cache' hold one type");
  } else if (failed(verifyCompatibleShape(
                 k.getShape(),
                 cast<ShapedType>(getKOut().getType()).getShape()))) {
    return emitOpError() << "'k_out' must have the shape of 'k', got "
                         << getKOut().getType();
  }
  if (bool(getV()) != bool(getVOut()))
    return emitOpError("'v' and 'v_out' go together");
  if (Value v = getV()) {
    if (!kCache && v.getType() != getVOut().getType())
      return emitOpError() << "'v_out' must have the type of 'v', got "
                           << getVOut().getType();
    if (failed(verifyCompatibleShape(v.getType(), getK().getType())) ||
        getElementTypeOrSelf(v.getType()) != getElementTypeOrSelf(k))
      return emitOpError() << "'v' must have the shape and element type of "
                              "'k', got "
                           << v.getType();
  }
  if (!getQkNorm()) {
    if (getKWeight() || getEpsAttr() ||
        getWeightOffset().convertToDouble() != 0.0 || getSavedRstd() ||
        getSavedMean())
      return emitOpError("'k_weight', eps, offset and saved statistics need "
                         "a 'qk_norm' kind");
    if (!getRope() && !kCache)
      return emitOpError("needs a 'qk_norm' kind, a 'rope' style, or both "
                         "(or a cache to write)");
  } else if (!getEpsAttr()) {
    return emitOpError("'qk_norm' needs eps");
  }
  if (getEpsAttr() && failed(verifyEps(*this, getEpsAttr())))
    return failure();
  ShapeChecker shapes(*this);
  bool perHead = getQKWeightRows(getKWeight(), headDim) > 1;
  if (failed(shapes.param(getKWeight(), "k_weight",
                          perHead ? kvHeads * headDim : headDim,
                          perHead ? "num_kv_heads x head_dim: a row per head"
                                  : "the head dim")))
    return failure();
  if (failed(verifyF32Rows(*this, getSavedMean(), "saved_mean", kvHeads,
                           k.getDimSize(0))) ||
      failed(verifyF32Rows(*this, getSavedRstd(), "saved_rstd", kvHeads,
                           k.getDimSize(0))))
    return failure();
  bool meanVar = getQkNorm() == QKNormKind::mean_var;
  if (getSavedMean() && !(meanVar && getSavedRstd()))
    return emitOpError("'saved_mean' needs kind 'mean_var' and 'saved_rstd'");
  if (meanVar && getSavedRstd() && !getSavedMean())
    return emitOpError("kind 'mean_var' saves 'saved_mean' with "
                       "'saved_rstd' (its backward reads both)");
  if (failed(verifyRopeOperands(*this, getRope(), k, headDim)))
    return failure();
  bool byIndex = getRope() && !getPositions();
  if (bool(getCuSeqlens()) != (byIndex || kCache))
    return emitOpError("'cu_seqlens' is there exactly when keys turn by "
                       "their index within their sequence ('rope' without "
                       "'positions') or go into a cache");
  if (getRopeFirst() && !(getRope() && getQkNorm()))
    return emitOpError("'rope_first' needs a 'rope' style and a 'qk_norm' "
                       "kind");
  return verifyKernelModel(*this);
}

LogicalResult ColumnStatsOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getMean(), "mean")) ||
      failed(shapes.param(getVariance(), "variance")) ||
      failed(verifyF32Statistics(*this, {getMean(), getVariance()}, "column")))
    return failure();
  return verifyKernelModel(*this);
}

/// What both attention kernel ops check besides verifyAttentionFields: the
/// output has q's type, the `others` have q's element type, and the QK-Norm
/// weights come together.
template <typename OpTy>
static LogicalResult
verifyAttentionKernelOperands(OpTy op,
                              ArrayRef<std::pair<Value, StringRef>> others) {
  if (failed(verifyAttentionFields(op)) ||
      failed(verifySameResultType(op, op.getQ().getType(),
                                  op.getOutput().getType())))
    return failure();
  Type element = getElementTypeOrSelf(op.getQ().getType());
  for (auto [v, name] : others)
    if (getElementTypeOrSelf(v.getType()) != element)
      return op.emitOpError() << "'" << name
                              << "' must have the element type of 'q' ("
                              << element << "), got " << v.getType();
  if (hasPreparedKeys(op)) {
    if (op.getKNormWeight())
      return op.emitOpError("prepared keys were normalized before: no "
                            "'k_norm_weight'");
    if (!op.getQkNorm() && !op.getRope())
      return op.emitOpError("'prepared_k' needs a 'qk_norm' kind or a 'rope' "
                            "style for q");
    return success();
  }
  if (bool(op.getQNormWeight()) != bool(op.getKNormWeight()))
    return op.emitOpError("'q_norm_weight' and 'k_norm_weight' go together");
  return success();
}

LogicalResult AttentionKernelOp::verify() {
  if (failed(verifyRequiredSegments(*this, {0, 1, 2, 3})) ||
      failed(verifyAttentionKernelOperands(*this, {{getK(), "k"},
                                                   {getV(), "v"}})))
    return failure();
  if (Value lse = getLse()) {
    auto type = cast<RankedTensorType>(lse.getType());
    auto q = cast<RankedTensorType>(getQ().getType());
    if (type.getDimSize(1) != static_cast<int64_t>(getNumHeads()) ||
        failed(verifyCompatibleShape(type.getDimSize(0), q.getDimSize(0))))
      return emitOpError() << "'lse' must be tokens x num_heads ("
                           << getNumHeads() << "), got " << type;
  }
  return verifyKernelModel(*this);
}

/// What both decode ops check: the attention's operands, and caches that
/// hold the rows of k and v (the same columns, their own rows), alike, and
/// updated in their own types.
template <typename OpTy> static LogicalResult verifyDecodeOperands(OpTy op) {
  // An FP8 cache holds e4m3; otherwise the caches hold q's type.
  SmallVector<std::pair<Value, StringRef>> others = {{op.getK(), "k"},
                                                     {op.getV(), "v"}};
  if (!op.getKScale())
    others.append({{op.getKCache(), "k_cache"}, {op.getVCache(), "v_cache"}});
  if (failed(verifyRequiredSegments(op, {0, 1, 2, 3, 4, 5, 6})) ||
      failed(verifyAttentionKernelOperands(op, others)) ||
      failed(verifyCacheScales(op, op.getKCache(), op.getKScale(),
                               op.getVScale(), op.getNumKvHeads())))
    return failure();
  if (getElementTypeOrSelf(op.getKCache().getType()) !=
      getElementTypeOrSelf(op.getVCache().getType()))
    return op.emitOpError("'k_cache' and 'v_cache' hold one type");
  // batch + 1 offsets: a static count below 2 is a batch of no sequence.
  auto offsets = cast<RankedTensorType>(op.getCuSeqlens().getType());
  if (!offsets.isDynamicDim(0) && offsets.getDimSize(0) < 2)
    return op.emitOpError()
           << "'cu_seqlens' holds batch + 1 offsets, so at least 2 (a batch "
              "of one sequence), got "
           << offsets;
  for (auto [cache, name] : {std::pair{op.getKCache(), "k_cache"},
                             std::pair{op.getVCache(), "v_cache"}}) {
    int64_t cols = cast<RankedTensorType>(cache.getType()).getDimSize(1);
    int64_t want = cast<RankedTensorType>(op.getK().getType()).getDimSize(1);
    if (cols != want)
      return op.emitOpError() << "'" << name
                              << "' must have the columns of 'k' (" << want
                              << "), got " << cache.getType();
  }
  if (failed(verifyCompatibleShape(op.getKCache().getType(),
                                   op.getVCache().getType())))
    return op.emitOpError() << "'k_cache' and 'v_cache' must have the same "
                               "shape, got "
                            << op.getKCache().getType() << " and "
                            << op.getVCache().getType();
  if (op.getKCacheOut().getType() != op.getKCache().getType() ||
      op.getVCacheOut().getType() != op.getVCache().getType())
    return op.emitOpError("the updated caches have the types of the caches");
  return verifyCachePages(op, op.getKCache(), op.getBlockTables(),
                          op.getPageIndptr(), op.getCacheBlockSize());
}

LogicalResult AttentionDecodeKernelOp::verify() {
  if (failed(verifyDecodeOperands(*this)))
    return failure();
  return verifyKernelModel(*this);
}

//===----------------------------------------------------------------------===//
// Kernel ops as the kernel model describes them
//===----------------------------------------------------------------------===//

using ::norm::BufferSlot;
using ::norm::OpKind;

static ::norm::ElementType getElementTypeOf(Value value) {
  return getElementType(getElementTypeOrSelf(value.getType()));
}

/// The first of `values` present, as the model's parameter type.
static ::norm::ElementType getParamType(std::initializer_list<Value> values) {
  for (Value value : values)
    if (value)
      return getElementTypeOf(value);
  return ::norm::ElementType::bf16;
}

/// The model's kind of a row kernel op with `statistic` over `groups`
/// (per-channel statistics: BatchNorm inference). The dialect spells the
/// statistics as the model does.
static OpKind getRowOpKind(Statistic statistic, int64_t groups,
                           bool perChannelStats) {
  return ::norm::getRowKind(
      *::norm::parseStatisticName(stringifyStatistic(statistic).str()), groups,
      perChannelStats);
}

/// The model's in-place operand of an optional RowOperand attribute.
static ::norm::RowOperand
getModelRowOperand(std::optional<RowOperand> operand) {
  if (!operand)
    return ::norm::RowOperand::None;
  return *::norm::parseRowOperandName(stringifyRowOperand(*operand).str());
}

::norm::OpSpec FusedRowOp::getOpSpec() {
  ::norm::OpSpec spec;
  spec.kind = getRowOpKind(getStatistic(), getGroups(), bool(getMean()));
  spec.hidden = getHidden();
  spec.input = getElementTypeOf(getInput());
  spec.output = getElementTypeOf(getOutput());
  spec.param = getParamType({getWeight(), getBias()});
  spec.statsType = getParamType({getMean(), getVariance()});
  spec.hasWeight = bool(getWeight());
  spec.hasBias = bool(getBias());
  spec.hasAddend = bool(getAddend());
  if (spec.hasAddend)
    spec.addendType = getElementTypeOf(getAddend());
  spec.writeResidual = bool(getResidualOut());
  spec.f32Residual = getF32Residual();
  spec.hasSkip = bool(getSkip());
  if (spec.hasSkip)
    spec.skipType = getElementTypeOf(getSkip());
  spec.eps = getEpsAttr() ? getEpsAttr().getValueAsDouble() : 0.0;
  spec.alpha = getAlpha().convertToDouble();
  spec.weightOffset = getWeightOffset().convertToDouble();
  spec.groups = getGroups();
  spec.saveStats = bool(getSavedRstd());
  spec.outputOver = getModelRowOperand(getOutputOver());
  spec.residualOver = getModelRowOperand(getResidualOver());
  spec.outputScale = getOutputScale()    ? ::norm::OutputScale::Static
                     : getOutputScales() ? ::norm::OutputScale::PerToken
                                         : ::norm::OutputScale::None;
  spec.scaleUpperBound = bool(getScaleUb());
  return spec;
}

::norm::OpSpec FusedRowGradOp::getOpSpec() {
  ::norm::OpSpec spec;
  spec.kind = getRowOpKind(getStatistic(), getGroups(),
                           /*perChannelStats=*/false);
  spec.backward = true;
  spec.groups = getGroups();
  spec.perHeadWeight = getPerHeadWeight();
  spec.hidden = cast<RankedTensorType>(getInput().getType()).getDimSize(1);
  spec.input = getElementTypeOf(getInput());
  spec.output = getElementTypeOf(getGradOutput());
  spec.param = getParamType({getWeight()});
  spec.hasWeight = bool(getWeight());
  spec.hasBias = bool(getBiasGradPartials());
  spec.writeResidual = bool(getResidualGrad());
  spec.alpha = getAlpha().convertToDouble();
  // A forward addend shows as a residual stream gradient or a gradient of
  // its own; alone (alpha 1, no residual_out) it changes nothing here.
  spec.hasAddend = spec.writeResidual || getAddendGrad();
  if (getAddendGrad())
    spec.addendType = getElementTypeOf(getAddendGrad());
  spec.weightOffset = getWeightOffset().convertToDouble();
  return spec;
}

Value FusedRowGradOp::getBuffer(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Input:
    return getInput();
  case BufferSlot::GradOutput:
    return getGradOutput();
  case BufferSlot::ResidualGrad:
    return getResidualGrad();
  case BufferSlot::Weight:
    return getWeight();
  case BufferSlot::SavedMean:
    return getSavedMean();
  case BufferSlot::SavedRstd:
    return getSavedRstd();
  case BufferSlot::GradInput:
    return getGradInput();
  case BufferSlot::AddendGrad:
    return getAddendGrad();
  case BufferSlot::WeightGradPartials:
    return getWeightGradPartials();
  case BufferSlot::BiasGradPartials:
    return getBiasGradPartials();
  default:
    return {};
  }
}

::norm::OpSpec ColumnSumOp::getOpSpec() {
  ::norm::OpSpec spec;
  spec.kind = OpKind::ColumnSum;
  spec.hidden = cast<RankedTensorType>(getInput().getType()).getDimSize(1);
  spec.input = ::norm::ElementType::f32;
  spec.output = getElementTypeOf(getOutput());
  return spec;
}

Value ColumnSumOp::getBuffer(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Input:
    return getInput();
  case BufferSlot::Output:
    return getOutput();
  default:
    return {};
  }
}

Value FusedRowOp::getBuffer(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Input:
    return getInput();
  case BufferSlot::Addend:
    return getAddend();
  case BufferSlot::Skip:
    return getSkip();
  case BufferSlot::Weight:
    return getWeight();
  case BufferSlot::Bias:
    return getBias();
  case BufferSlot::Mean:
    return getMean();
  case BufferSlot::Variance:
    return getVariance();
  case BufferSlot::Output:
    return getOutput();
  case BufferSlot::ResidualOut:
    return getResidualOut();
  case BufferSlot::OutputScale:
    return getOutputScale();
  case BufferSlot::ScaleUpperBound:
    return getScaleUb();
  case BufferSlot::OutputScales:
    return getOutputScales();
  case BufferSlot::SavedMean:
    return getSavedMean();
  case BufferSlot::SavedRstd:
    return getSavedRstd();
  default:
    return {};
  }
}

static ::norm::Statistic getModelStatistic(QKNormKind kind) {
  switch (kind) {
  case QKNormKind::rms:
    return ::norm::Statistic::RMS;
  case QKNormKind::l2:
    return ::norm::Statistic::L2;
  case QKNormKind::mean_var:
    return ::norm::Statistic::MeanVar;
  }
  llvm_unreachable("unknown QK-Norm kind");
}

::norm::OpSpec QKNormPrologueOp::getOpSpec() {
  ::norm::OpSpec spec;
  spec.kind = OpKind::QKNormPrologue;
  spec.hidden = getHeadDim();
  spec.input = getElementTypeOf(getQkv());
  spec.output = getElementTypeOf(getQ());
  spec.param = getParamType({getQWeight(), getKWeight()});
  spec.hasWeight = bool(getQWeight());
  spec.qkWeightPerHead =
      isPerHeadQKWeightPair(getQWeight(), getKWeight(), getHeadDim());
  spec.eps = getEps().convertToDouble();
  spec.weightOffset = getWeightOffset().convertToDouble();
  spec.numQHeads = getNumQHeads();
  spec.numKvHeads = getNumKvHeads();
  spec.qkStatistic = getModelStatistic(getKind());
  spec.saveStats = bool(getSavedRstd());
  setModelRope(*this, spec);
  return spec;
}

Value QKNormPrologueOp::getBuffer(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Qkv:
    return getQkv();
  case BufferSlot::QWeight:
    return getQWeight();
  case BufferSlot::KWeight:
    return getKWeight();
  case BufferSlot::Q:
    return getQ();
  case BufferSlot::K:
    return getK();
  case BufferSlot::SavedMean:
    return getSavedMean();
  case BufferSlot::SavedRstd:
    return getSavedRstd();
  case BufferSlot::Positions:
    return getPositions();
  case BufferSlot::RopeTable:
    return getRopeTable();
  default:
    return {};
  }
}

/// An FP8 cache (scales given): one scale, or one per kv head.
template <typename OpTy>
static void setCacheScales(OpTy op, ::norm::OpSpec &spec) {
  if (!op.getKScale())
    return;
  spec.fp8Cache = true;
  spec.cacheScalePerHead =
      cast<RankedTensorType>(op.getKScale().getType()).getDimSize(0) > 1;
}

::norm::OpSpec KPrepareOp::getOpSpec() {
  ::norm::OpSpec spec;
  spec.kind = OpKind::KeyPrepare;
  spec.hidden = getHeadDim();
  spec.input = getElementTypeOf(getK());
  spec.output = getElementTypeOf(getKOut());
  spec.param = getParamType({getKWeight()});
  spec.hasWeight = bool(getKWeight());
  spec.qkWeightPerHead = getQKWeightRows(getKWeight(), getHeadDim()) > 1;
  spec.eps = getEpsAttr() ? getEpsAttr().getValueAsDouble() : 0.0;
  spec.weightOffset = getWeightOffset().convertToDouble();
  spec.numKvHeads = getNumKvHeads();
  spec.qkStatistic = getQkNorm() ? getModelStatistic(*getQkNorm())
                                 : ::norm::Statistic::None;
  spec.writeCache = bool(getKCache());
  spec.cacheBlockSize = getCacheBlockSize().value_or(0);
  spec.pageIndptr = bool(getPageIndptr());
  setCacheScales(*this, spec);
  // An FP8 cache's keys are rounded to k's type before the scale.
  if (spec.fp8Cache)
    spec.output = spec.input;
  spec.copyValues = bool(getV()) && !spec.writeCache;
  spec.saveStats = bool(getSavedRstd());
  setModelRope(*this, spec);
  return spec;
}

/// The buffers that place and scale a KV cache, both cache ops': the
/// lengths, a paged cache's block table, an FP8 cache's scales.
template <typename OpTy>
static Value getCacheIndexBuffer(OpTy op, BufferSlot slot) {
  switch (slot) {
  case BufferSlot::CacheSeqlens:
    return op.getCacheSeqlens();
  case BufferSlot::BlockTables:
    return op.getBlockTables();
  case BufferSlot::PageIndptr:
    return op.getPageIndptr();
  case BufferSlot::KScale:
    return op.getKScale();
  case BufferSlot::VScale:
    return op.getVScale();
  default:
    return {};
  }
}

Value KPrepareOp::getBuffer(BufferSlot slot) {
  if (Value index = getCacheIndexBuffer(*this, slot))
    return index;
  switch (slot) {
  case BufferSlot::K:
    return getK();
  case BufferSlot::V:
    return getV();
  case BufferSlot::CuSeqlens:
    return getCuSeqlens();
  case BufferSlot::KWeight:
    return getKWeight();
  case BufferSlot::Positions:
    return getPositions();
  case BufferSlot::RopeTable:
    return getRopeTable();
  // The updated caches: the kernel's values are the results.
  case BufferSlot::KCache:
    return getKCache() ? getKOut() : Value();
  case BufferSlot::VCache:
    return getKCache() ? getVOut() : Value();
  case BufferSlot::KOut:
    return getKCache() ? Value() : getKOut();
  case BufferSlot::VOut:
    return getKCache() ? Value() : getVOut();
  case BufferSlot::SavedMean:
    return getSavedMean();
  case BufferSlot::SavedRstd:
    return getSavedRstd();
  default:
    return {};
  }
}

::norm::OpSpec ColumnStatsOp::getOpSpec() {
  ::norm::OpSpec spec;
  spec.kind = OpKind::BatchNormStats;
  spec.hidden = cast<RankedTensorType>(getInput().getType()).getDimSize(1);
  spec.input = getElementTypeOf(getInput());
  spec.output = ::norm::ElementType::f32;
  spec.param = ::norm::ElementType::f32;
  return spec;
}

Value ColumnStatsOp::getBuffer(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Input:
    return getInput();
  case BufferSlot::Mean:
    return getMean();
  case BufferSlot::Variance:
    return getVariance();
  default:
    return {};
  }
}

/// The operation of either attention kernel op (`kind`): heads, types,
/// the QK-Norm and the rotary embeddings they share.
template <typename OpTy>
static ::norm::OpSpec getAttentionOpSpec(OpTy op, OpKind kind) {
  ::norm::OpSpec spec;
  spec.kind = kind;
  spec.hidden = op.getHeadDim();
  spec.input = spec.output = getElementTypeOf(op.getQ());
  spec.param = getParamType({op.getQNormWeight(), op.getKNormWeight()});
  spec.hasWeight = bool(op.getQNormWeight());
  spec.qkWeightPerHead = spec.hasWeight && hasPerHeadQKWeights(op);
  spec.numQHeads = op.getNumHeads();
  spec.numKvHeads = op.getNumKvHeads();
  spec.qkStatistic = op.getQkNorm() ? getModelStatistic(*op.getQkNorm())
                                    : ::norm::Statistic::None;
  spec.eps =
      op.getQkNormEpsAttr() ? op.getQkNormEpsAttr().getValueAsDouble() : 0.0;
  spec.weightOffset = op.getQkNormOffset().convertToDouble();
  spec.scale = op.getScale().convertToDouble();
  setModelRope(op, spec);
  return spec;
}

/// The buffers both attention kernel ops have.
template <typename OpTy>
static Value getAttentionBuffer(OpTy op, BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Q:
    return op.getQ();
  case BufferSlot::K:
    return op.getK();
  case BufferSlot::V:
    return op.getV();
  case BufferSlot::QWeight:
    return op.getQNormWeight();
  case BufferSlot::KWeight:
    return op.getKNormWeight();
  case BufferSlot::CuSeqlens:
    return op.getCuSeqlens();
  case BufferSlot::Positions:
    return op.getPositions();
  case BufferSlot::RopeTable:
    return op.getRopeTable();
  case BufferSlot::Output:
    return op.getOutput();
  default:
    return {};
  }
}

::norm::OpSpec AttentionKernelOp::getOpSpec() {
  ::norm::OpSpec spec = getAttentionOpSpec(*this, OpKind::Attention);
  spec.causal = getCausal();
  spec.writeLse = bool(getLse());
  spec.keysPrepared = getPreparedK();
  return spec;
}

Value AttentionKernelOp::getBuffer(BufferSlot slot) {
  if (slot == BufferSlot::Lse)
    return getLse();
  return getAttentionBuffer(*this, slot);
}

/// Decode's spec, either op: attention's with a paged cache's block size
/// and an FP8 cache's scales.
template <typename OpTy> static ::norm::OpSpec getDecodeOpSpec(OpTy op) {
  ::norm::OpSpec spec = getAttentionOpSpec(op, OpKind::AttentionDecode);
  spec.cacheBlockSize = op.getCacheBlockSize().value_or(0);
  spec.pageIndptr = bool(op.getPageIndptr());
  setCacheScales(op, spec);
  return spec;
}

::norm::OpSpec AttentionDecodeKernelOp::getOpSpec() {
  return getDecodeOpSpec(*this);
}

Value AttentionDecodeKernelOp::getBuffer(BufferSlot slot) {
  if (Value index = getCacheIndexBuffer(*this, slot))
    return index;
  switch (slot) {
  // The updated caches: the kernel's values are the results.
  case BufferSlot::KCache:
    return getKCacheOut();
  case BufferSlot::VCache:
    return getVCacheOut();
  default:
    return getAttentionBuffer(*this, slot);
  }
}

// After getAttentionOpSpec: the layer op states the kernel model's rules.
LogicalResult AttentionDecodeOp::verify() {
  if (failed(verifyDecodeOperands(*this)))
    return failure();
  // The kernel model's rules, as the kernel op would state them.
  return check(*this, ::norm::verifyOpSpec(getDecodeOpSpec(*this)));
}

//===----------------------------------------------------------------------===//
// Canonicalization
//===----------------------------------------------------------------------===//
//
// The patterns below only remove work whose result is bit-identical to the
// original, with one exception the whole dialect makes: the sign of a zero
// result is not preserved (`-0 + 0` is `+0`).

/// Whether `v` is a constant splat of `expected`.
static bool isSplatOf(Value v, double expected) {
  DenseFPElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  return attr.getSplatValue<APFloat>().convertToDouble() == expected;
}

/// Whether `weight + offset` is 1 everywhere, so that scaling is the
/// identity: a ones weight, or Gemma's `1 + w` form with a zeros weight.
static bool isUnitScale(Value weight, double offset) {
  return (offset == 0.0 && isSplatOf(weight, 1.0)) ||
         (offset == 1.0 && isSplatOf(weight, 0.0));
}

bool mlir::norm::widensExactly(Type narrow, Type wide) {
  return narrow == wide ||
         (wide.isF32() && (narrow.isF16() || narrow.isBF16()));
}

/// `1 * x + 0` is `x`; `alpha * 0 + y` is `y` when `y` already has the
/// result type (otherwise it is a cast).
OpFoldResult ResidualAddOp::fold(FoldAdaptor) {
  if (getAlpha().convertToDouble() == 1.0 && isSplatOf(getSublayer(), 0.0) &&
      getResidual().getType() == getType())
    return getResidual();
  if (isSplatOf(getResidual(), 0.0) && getSublayer().getType() == getType())
    return getSublayer();
  return {};
}

namespace {

template <typename OpTy>
using WeightOffsetGetter = decltype(std::declval<OpTy &>().getWeightOffset());
template <typename OpTy>
using BiasGetter = decltype(std::declval<OpTy &>().getBias());

/// Drops a weight that scales by exactly 1 and a bias of zeros from the
/// norms that take them (`x * 1` and `x + 0` are exact).
template <typename OpTy> struct DropIdentityParams : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  static constexpr bool hasWeightOffset =
      llvm::is_detected<WeightOffsetGetter, OpTy>::value;
  static constexpr bool hasBias = llvm::is_detected<BiasGetter, OpTy>::value;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    double offset = 0.0;
    if constexpr (hasWeightOffset)
      offset = op.getWeightOffset().convertToDouble();
    bool dropWeight = isUnitScale(op.getWeight(), offset);
    bool dropBias = false;
    if constexpr (hasBias)
      dropBias = isSplatOf(op.getBias(), 0.0);
    if (!dropWeight && !dropBias)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (dropWeight) {
        op.getWeightMutable().clear();
        if constexpr (hasWeightOffset)
          op.setWeightOffsetAttr(rewriter.getF64FloatAttr(0.0));
      }
      if constexpr (hasBias)
        if (dropBias)
          op.getBiasMutable().clear();
    });
    return success();
  }
};

/// cast(cast(x : A -> B) : B -> C) is cast(x : A -> C) when B holds every
/// value of A exactly: rounding to C then sees the same values. (f32 -> bf16
/// -> f32 rounds, so it stays.) A -> A then folds away.
struct FoldExactCastChain : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<CastOp>();
    if (!inner)
      return failure();
    Type a = getElementTypeOrSelf(inner.getInput().getType());
    Type b = getElementTypeOrSelf(inner.getType());
    if (!widensExactly(a, b))
      return failure();
    rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), inner.getInput());
    return success();
  }
};

} // namespace

void RMSNormOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<DropIdentityParams<RMSNormOp>>(context);
}

void LayerNormOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropIdentityParams<LayerNormOp>>(context);
}

void GroupNormOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropIdentityParams<GroupNormOp>>(context);
}

void BatchNormInferenceOp::getCanonicalizationPatterns(
    RewritePatternSet &results, MLIRContext *context) {
  results.add<DropIdentityParams<BatchNormInferenceOp>>(context);
}

void BatchNormTrainingOp::getCanonicalizationPatterns(
    RewritePatternSet &results, MLIRContext *context) {
  results.add<DropIdentityParams<BatchNormTrainingOp>>(context);
}

void FusedRowOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<DropIdentityParams<FusedRowOp>>(context);
}

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<FoldExactCastChain>(context);
}

//===----------------------------------------------------------------------===//
// RowAllReduceOp
//===----------------------------------------------------------------------===//

/// The result types of ops whose results are their operands' types.
static LogicalResult inferPassThroughTypes(ValueRange operands,
                                           SmallVectorImpl<Type> &types) {
  llvm::append_range(types, operands.getTypes());
  return success();
}

LogicalResult RowAllReduceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferredReturnTypes) {
  return inferPassThroughTypes(operands, inferredReturnTypes);
}

LogicalResult RowAllReduceOp::verify() {
  int64_t group = getGroupSize();
  if (group < 1 || group > 1024 ||
      (group < 32 && !llvm::isPowerOf2_64(group)) ||
      (group >= 32 && group % 32 != 0))
    return emitOpError() << "group_size must be a power of two up to 32 or a "
                            "multiple of 32 up to 1024, got "
                         << group;
  if (getValues().empty())
    return emitOpError("needs at least one value");
  return success();
}

//===----------------------------------------------------------------------===//
// Warp-level matrix ops and asynchronous copies
//===----------------------------------------------------------------------===//

/// Whether `type` is a 1-D vector of `length` elements of `element`.
static bool isVectorOf(Type type, int64_t length, Type element) {
  auto vector = dyn_cast<VectorType>(type);
  return vector && vector.getRank() == 1 && !vector.isScalable() &&
         vector.getNumElements() == length &&
         vector.getElementType() == element;
}

/// The element type of a 16-bit matrix (bf16 or f16), or null.
static Type getMatrixElementType(Type type) {
  Type element = getElementTypeOrSelf(type);
  return isa<BFloat16Type, Float16Type>(element) ? element : Type();
}

/// Checks that `indices` address an element of `memref` and that its
/// innermost dimension is contiguous, where the ops' rows and copies lie.
static LogicalResult verifyAddress(Operation *op, StringRef name,
                                   MemRefType memref, ValueRange indices) {
  if (static_cast<int64_t>(indices.size()) != memref.getRank())
    return op->emitOpError()
           << "needs " << memref.getRank() << " indices for " << name
           << " of rank " << memref.getRank() << ", got " << indices.size();
  if (memref.getRank() == 0 || !memref.isLastDimUnitStride())
    return op->emitOpError() << name << " must have a contiguous innermost "
                                        "dimension (stride 1), got "
                             << memref;
  return success();
}

LogicalResult MmaSyncOp::verify() {
  Type element = getMatrixElementType(getA().getType());
  if (!element || !isVectorOf(getA().getType(), 8, element))
    return emitOpError() << "A must be vector<8xbf16> or vector<8xf16> (8 "
                            "elements of the 16x16 matrix a lane holds), got "
                         << getA().getType();
  if (!isVectorOf(getB().getType(), 4, element))
    return emitOpError() << "B must be " << VectorType::get({4}, element)
                         << " (4 elements of the 16x8 matrix, of A's type), "
                            "got "
                         << getB().getType();
  Type f32 = Float32Type::get(getContext());
  if (!isVectorOf(getC().getType(), 4, f32))
    return emitOpError() << "C must be vector<4xf32> (f32 accumulation), got "
                         << getC().getType();
  if (getD().getType() != getC().getType())
    return emitOpError() << "result must be vector<4xf32> like C, got "
                         << getD().getType();
  return success();
}

LogicalResult LdMatrixOp::verify() {
  MemRefType memref = getMemref().getType();
  Type element = getMatrixElementType(memref);
  if (!element &&
      isa<Float8E4M3FNType, Float8E5M2Type>(memref.getElementType()))
    element = memref.getElementType();
  if (!element)
    return emitOpError() << "loads 16-bit matrices: the memref's element type "
                            "must be bf16 or f16 (or an FP8 type, two bytes "
                            "an element), got "
                         << memref.getElementType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(memref))
    return emitOpError() << "reads workgroup memory: the memref must be in "
                            "#gpu.address_space<workgroup>, got "
                         << memref;
  if (failed(verifyAddress(*this, "the memref", memref, getIndices())))
    return failure();
  int64_t count = getCountAttr().getInt();
  if (count != 1 && count != 2 && count != 4)
    return emitOpError() << "count must be 1, 2 or 4 (matrices), got "
                         << count;
  int64_t perMatrix = 32 / element.getIntOrFloatBitWidth();
  if (!isVectorOf(getResult().getType(), perMatrix * count, element))
    return emitOpError() << "result must be "
                         << VectorType::get({perMatrix * count}, element)
                         << " (" << perMatrix << " elements of each of "
                         << count << " matrices), got "
                         << getResult().getType();
  return success();
}

int64_t WgmmaOp::getN() {
  return cast<VectorType>(getC().getType()).getNumElements() * 2;
}

/// A wgmma operand in workgroup memory: a one-dimensional memref of
/// `element` (bf16 or f16) with an index and a layout.
static LogicalResult verifyWgmmaOperand(WgmmaOp op, StringRef name,
                                        MemRefType memref, Type element) {
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(memref) ||
      memref.getRank() != 1 || !memref.isLastDimUnitStride() ||
      memref.getElementType() != element)
    return op.emitOpError()
           << name << " must be a one-dimensional, contiguous memref of "
           << element << " in #gpu.address_space<workgroup>, got " << memref;
  return success();
}

LogicalResult WgmmaOp::verify() {
  auto b = cast<MemRefType>(getB().getType());
  Type element = getMatrixElementType(b);
  if (!element)
    return emitOpError() << "multiplies bf16 or f16 matrices: B's element "
                            "type must be bf16 or f16, got "
                         << b.getElementType();
  if (failed(verifyWgmmaOperand(*this, "B", b, element)))
    return failure();
  if (auto a = dyn_cast<MemRefType>(getA().getType())) {
    if (failed(verifyWgmmaOperand(*this, "A", a, element)))
      return failure();
    if (!getAIndex() || !getALayout())
      return emitOpError()
             << "A in workgroup memory needs an index and an a_layout";
  } else {
    if (!isVectorOf(getA().getType(), 8, element))
      return emitOpError() << "A must be a memref or, in registers, "
                           << VectorType::get({8}, element)
                           << " (a warp's 16x16 fragment, of B's type), got "
                           << getA().getType();
    if (getAIndex() || getALayout())
      return emitOpError() << "A in registers takes no index and no a_layout";
  }
  auto c = dyn_cast<VectorType>(getC().getType());
  int64_t n = c && c.getRank() == 1 ? 2 * c.getNumElements() : 0;
  if (!c || !c.getElementType().isF32() || n % 8 != 0 || n < 8 || n > 256)
    return emitOpError() << "C must be vector<(N/2)xf32> with N a multiple of "
                            "8 from 8 to 256 (f32 accumulation), got "
                         << getC().getType();
  if (getD().getType() != getC().getType())
    return emitOpError() << "result must be " << getC().getType()
                         << " like C, got " << getD().getType();
  return success();
}

/// Barrier objects: a one-dimensional memref of i64 in workgroup memory.
static LogicalResult verifyBarriers(Operation *op, MemRefType bars) {
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(bars) ||
      bars.getRank() != 1 || !bars.isLastDimUnitStride() ||
      !bars.getElementType().isInteger(64))
    return op->emitOpError() << "takes barrier objects: a one-dimensional, "
                                "contiguous memref of i64 in "
                                "#gpu.address_space<workgroup>, got "
                             << bars;
  return success();
}

LogicalResult NamedBarrierOp::verify() {
  if (getId() < 1 || getId() > 15)
    return emitOpError() << "id must be 1 to 15 (0 is the CTA's barrier), got "
                         << getId();
  if (getThreads() < 32 || getThreads() > 1024 || getThreads() % 32 != 0)
    return emitOpError() << "threads must be whole warps, 32 to 1024, got "
                         << getThreads();
  return success();
}

LogicalResult SetMaxRegistersOp::verify() {
  int64_t count = getCount();
  if (count < 24 || count > 256 || count % 8 != 0)
    return emitOpError()
           << "count must be a multiple of 8 in [24, 256] (setmaxnreg), got "
           << count;
  return success();
}

LogicalResult MbarrierInitOp::verify() {
  if (getCount() < 1 || getCount() >= (int64_t(1) << 20))
    return emitOpError() << "count must be 1 to 2^20 - 1 (arrivals), got "
                         << getCount();
  return verifyBarriers(*this, getBars().getType());
}

LogicalResult MbarrierArriveOp::verify() {
  return verifyBarriers(*this, getBars().getType());
}

LogicalResult MbarrierWaitOp::verify() {
  if (getMaxTries() < 1 || getMaxTries() > std::numeric_limits<int32_t>::max())
    return emitOpError() << "max_tries must be 1 to 2^31 - 1, got "
                         << getMaxTries();
  return verifyBarriers(*this, getBars().getType());
}

LogicalResult BulkCopyOp::verify() {
  MemRefType src = getSrc().getType(), dst = getDst().getType();
  if (src.getMemorySpace() || src.getRank() != 1 || !src.isLastDimUnitStride())
    return emitOpError() << "reads global memory: src must be a "
                            "one-dimensional, contiguous memref in the "
                            "default address space, got "
                         << src;
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(dst) ||
      dst.getRank() != 1 || !dst.isLastDimUnitStride())
    return emitOpError() << "writes workgroup memory: dst must be a "
                            "one-dimensional, contiguous memref in "
                            "#gpu.address_space<workgroup>, got "
                         << dst;
  Type element = src.getElementType();
  if (dst.getElementType() != element || !element.isIntOrFloat() ||
      element.getIntOrFloatBitWidth() % 8 != 0)
    return emitOpError() << "copies whole-byte elements of one type: src and "
                            "dst must have the same element type, got "
                         << element << " and " << dst.getElementType();
  int64_t bytes = getBytes();
  if (bytes <= 0 || bytes % 16 != 0 || bytes >= (int64_t(1) << 31))
    return emitOpError() << "bytes must be a positive multiple of 16 below "
                            "2^31, got "
                         << bytes;
  return verifyBarriers(*this, getBars().getType());
}

LogicalResult TmaLoadOp::verify() {
  MemRefType map = getMap().getType(), src = getSrc().getType(),
             dst = getDst().getType();
  if (map.getMemorySpace() || !map.hasStaticShape() ||
      map.getNumElements() * map.getElementTypeBitWidth() != 1024)
    return emitOpError() << "map must be the 128 bytes of a CUtensorMap in "
                            "the default address space, got "
                         << map;
  if (src.getMemorySpace() || src.getRank() != 1 || !src.isLastDimUnitStride())
    return emitOpError() << "src must be a one-dimensional, contiguous "
                            "memref in the default address space, got "
                         << src;
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(dst) ||
      dst.getRank() != 1 || !dst.isLastDimUnitStride() ||
      dst.getElementType() != src.getElementType())
    return emitOpError() << "dst must be a one-dimensional, contiguous "
                            "memref of src's elements in "
                            "#gpu.address_space<workgroup>, got "
                         << dst;
  Type element = src.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return emitOpError() << "copies whole-byte elements, got " << element;
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  int64_t swizzle = getSwizzle();
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitOpError() << "swizzle must be 0, 32, 64 or 128 (bytes), got "
                         << swizzle;
  int64_t boxRows = getBoxRows(), boxColumns = getBoxColumns();
  if (boxRows < 1 || boxRows > 256 || boxColumns < 1 || boxColumns > 256 ||
      (boxColumns * bytes) % 16 != 0 ||
      (swizzle && boxColumns * bytes > swizzle))
    return emitOpError()
           << "boxes have 1 to 256 rows and columns, rows a multiple of 16 "
              "bytes and at most the swizzle's width; got "
           << boxRows << " x " << boxColumns << " of " << bytes
           << " bytes, swizzle " << swizzle;
  return verifyBarriers(*this, getBars().getType());
}

/// Values that a warpgroup multiply reads or writes: accumulators (f32)
/// and register A fragments (bf16, f16).
static LogicalResult verifyWgmmaRegisters(Operation *op, ValueRange values) {
  for (Value value : values) {
    Type element = cast<VectorType>(value.getType()).getElementType();
    if (!element.isF32() && !isa<BFloat16Type, Float16Type>(element))
      return op->emitOpError()
             << "passes wgmma registers: vectors of f32, bf16 or f16, got "
             << value.getType();
  }
  return success();
}

LogicalResult WgmmaFenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferredReturnTypes) {
  return inferPassThroughTypes(operands, inferredReturnTypes);
}

LogicalResult WgmmaFenceOp::verify() {
  return verifyWgmmaRegisters(*this, getValues());
}

LogicalResult WgmmaWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferredReturnTypes) {
  return inferPassThroughTypes(operands, inferredReturnTypes);
}

LogicalResult WgmmaWaitOp::verify() {
  if (getPending() < 0 || getPending() > 7)
    return emitOpError() << "pending must be 0 to 7 (groups), got "
                         << getPending();
  return verifyWgmmaRegisters(*this, getValues());
}

/// The rules of a cp.async: global to workgroup memory, one element type of
/// whole bytes, 4, 8 or 16 bytes a copy.
static LogicalResult verifyAsyncCopy(Operation *op, MemRefType src,
                                     MemRefType dst, int64_t elements) {
  Attribute srcSpace = src.getMemorySpace();
  auto gpuSpace = dyn_cast_or_null<gpu::AddressSpaceAttr>(srcSpace);
  if (srcSpace &&
      !(gpuSpace && gpuSpace.getValue() == gpu::AddressSpace::Global))
    return op->emitOpError()
           << "reads global memory: src must be in the default address "
              "space, got "
           << src;
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(dst))
    return op->emitOpError() << "writes workgroup memory: dst must be in "
                                "#gpu.address_space<workgroup>, got "
                             << dst;
  Type element = src.getElementType();
  if (element != dst.getElementType())
    return op->emitOpError()
           << "copies between memrefs of one element type, got " << element
           << " and " << dst.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return op->emitOpError()
           << "copies integers or floats of whole bytes, got " << element;
  // Clamped first: no overflow for absurd counts.
  int64_t bytes = std::clamp<int64_t>(elements, 0, 17) *
                  (element.getIntOrFloatBitWidth() / 8);
  if (elements < 1 || elements > 16 ||
      (bytes != 4 && bytes != 8 && bytes != 16))
    return op->emitOpError() << "copies 4, 8 or 16 bytes, got " << elements
                             << " elements of " << element;
  return success();
}

LogicalResult AsyncCopyOp::verify() {
  if (failed(verifyAsyncCopy(*this, getSrc().getType(), getDst().getType(),
                             getElementsAttr().getInt())))
    return failure();
  return success(succeeded(verifyAddress(*this, "src", getSrc().getType(),
                                         getSrcIndices())) &&
                 succeeded(verifyAddress(*this, "dst", getDst().getType(),
                                         getDstIndices())));
}

LogicalResult AsyncCopyRowsOp::verify() {
  if (failed(verifyAsyncCopy(*this, getSrc().getType(), getDst().getType(),
                             getElementsAttr().getInt())))
    return failure();
  for (auto [name, type] : {std::pair{"src", getSrc().getType()},
                            std::pair{"dst", getDst().getType()}})
    if (type.getRank() != 1 || !type.isLastDimUnitStride())
      return emitOpError() << name
                           << " must be a one-dimensional memref of stride "
                              "1, got "
                           << type;
  int64_t rows = getRowsAttr().getInt();
  if (rows < 1)
    return emitOpError() << "copies at least one row, got " << rows;
  // A destination row must not overlap the one before.
  int64_t dstStride = getDstStrideAttr().getInt();
  if (dstStride < getElementsAttr().getInt())
    return emitOpError() << "dst_stride must be at least elements ("
                         << getElementsAttr().getInt() << "), got "
                         << dstStride;
  // Destination offsets are 32-bit immediates on NVVM.
  if (rows > 4096 || dstStride > std::numeric_limits<int32_t>::max() / rows)
    return emitOpError() << rows << " rows of dst_stride " << dstStride
                         << " reach past 32-bit offsets";
  return success();
}

LogicalResult AsyncWaitOp::verify() {
  int64_t pending = getPendingAttr().getInt();
  if (pending < 0 || pending > std::numeric_limits<int32_t>::max())
    return emitOpError() << "pending must be a non-negative 32-bit count of "
                            "groups, got "
                         << pending;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NormOps.cpp.inc"

#include "dialects/NormInterfaces.cpp.inc"
