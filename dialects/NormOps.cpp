//===- NormOps.cpp - norm dialect operations ------------------------------===//

#include "dialects/NormOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
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
  double value = attr.getValueAsDouble();
  // The shortest %g form that parses back to the same double.
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  // MLIR's float literals need a '.' before any exponent: 1e-06 -> 1.0e-06.
  std::string text(buffer);
  if (text.find_first_of(".ni") == std::string::npos)
    text.insert(std::min(text.find('e'), text.size()), ".0");
  printer << text;
}

//===----------------------------------------------------------------------===//
// Shared verification
//===----------------------------------------------------------------------===//

namespace {

/// Checks the operands and results of one op against a common hidden size:
/// the first row tensor named sets it; later ones must agree.
class ShapeChecker {
public:
  explicit ShapeChecker(Operation *op) : op(op) {}

  /// A rows x hidden tensor; the hidden size must be static.
  LogicalResult row(Type type, StringRef name) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.isDynamicDim(1))
      return op->emitOpError() << "'" << name
                               << "' must have a static hidden size, got "
                               << type;
    int64_t width = tensor.getDimSize(1);
    if (!hidden) {
      hidden = width;
      hiddenFrom = name.str();
      rows = tensor.getDimSize(0);
      return success();
    }
    if (width != *hidden)
      return op->emitOpError()
             << "hidden size of '" << name << "' (" << width
             << ") does not match hidden size of '" << hiddenFrom << "' ("
             << *hidden << ")";
    int64_t r = tensor.getDimSize(0);
    if (!ShapedType::isDynamic(r) && !ShapedType::isDynamic(rows) && r != rows)
      return op->emitOpError() << "row count of '" << name << "' (" << r
                               << ") does not match row count of '"
                               << hiddenFrom << "' (" << rows << ")";
    return success();
  }
  LogicalResult row(Value v, StringRef name) {
    return v ? row(v.getType(), name) : success();
  }

  /// A 1-D parameter of `length` elements (the hidden size by default).
  LogicalResult param(Value v, StringRef name,
                      std::optional<int64_t> length = std::nullopt) {
    if (!v)
      return success();
    int64_t expected = length ? *length : *hidden;
    auto tensor = cast<RankedTensorType>(v.getType());
    if (tensor.getDimSize(0) != expected)
      return op->emitOpError()
             << "'" << name << "' must have " << expected << " elements ("
             << (length ? "the head dim" : "the hidden size") << "), got "
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

LogicalResult verifyEps(Operation *op, APFloat eps, StringRef name = "eps") {
  double value = eps.convertToDouble();
  if (!(value > 0.0) || std::isinf(value))
    return op->emitOpError() << name
                             << " must be a positive finite number, got "
                             << value;
  return success();
}

/// Layer ops keep the input's type.
LogicalResult verifySameResultType(Operation *op, Type input, Type result) {
  if (input != result)
    return op->emitOpError() << "result type " << result
                             << " does not match input type " << input;
  return success();
}

LogicalResult verifyPositive(Operation *op, int64_t value, StringRef name) {
  if (value <= 0)
    return op->emitOpError() << name << " must be positive, got " << value;
  return success();
}

bool isSplatOf(Value v, double expected) {
  DenseFPElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  return attr.getSplatValue<APFloat>().convertToDouble() == expected;
}

} // namespace

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())))
    return failure();
  if (getWeightOffset().convertToDouble() != 0.0 && !getWeight())
    return emitOpError("weight_offset needs a weight");
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult LayerNormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult L2NormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult GroupNormOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())) ||
      failed(verifyPositive(*this, getGroups(), "groups")))
    return failure();
  if (shapes.getHidden() % getGroups() != 0)
    return emitOpError() << "groups (" << getGroups()
                         << ") must divide the hidden size ("
                         << shapes.getHidden() << ")";
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult BatchNormInferenceOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getMean(), "mean")) ||
      failed(shapes.param(getVariance(), "variance")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())))
    return failure();
  return verifySameResultType(*this, getInput().getType(), getType());
}

LogicalResult BatchNormTrainingOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(shapes.param(getBatchMean(), "batch_mean")) ||
      failed(shapes.param(getBatchVariance(), "batch_variance")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())))
    return failure();
  for (Value stat : {getBatchMean(), getBatchVariance()})
    if (!cast<RankedTensorType>(stat.getType()).getElementType().isF32())
      return emitOpError() << "batch statistics are f32, got "
                           << stat.getType();
  return verifySameResultType(*this, getInput().getType(),
                              getResult().getType());
}

LogicalResult ResidualAddOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getResidual(), "residual")) ||
      failed(shapes.row(getSublayer(), "sublayer")))
    return failure();
  double alpha = getAlpha().convertToDouble();
  if (!(alpha > 0.0) || std::isinf(alpha))
    return emitOpError() << "alpha must be a positive finite number, got "
                         << alpha;
  return verifySameResultType(*this, getResidual().getType(), getType());
}

namespace {
/// `alpha * x + 0` is `x` when alpha is 1.
struct DropZeroSublayer : OpRewritePattern<ResidualAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ResidualAddOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getAlpha().convertToDouble() != 1.0 ||
        !isSplatOf(op.getSublayer(), 0.0))
      return failure();
    rewriter.replaceOp(op, op.getResidual());
    return success();
  }
};
} // namespace

void ResidualAddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                MLIRContext *context) {
  results.add<DropZeroSublayer>(context);
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (failed(verifyCompatibleShape(in, out)))
    return emitOpError() << "cannot change the shape: " << in << " to " << out;
  return success();
}

bool CastOp::areCastCompatible(TypeRange inputs, TypeRange outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inputs.front());
  auto out = dyn_cast<RankedTensorType>(outputs.front());
  return in && out && succeeded(verifyCompatibleShape(in, out));
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

namespace {
/// Whether every value of `narrow` is exactly representable in `wide`.
bool widensExactly(Type narrow, Type wide) {
  return narrow == wide || (wide.isF32() && (narrow.isF16() || narrow.isBF16()));
}

/// cast(cast(x : A -> B) : B -> C) is cast(x : A -> C) when B holds A exactly.
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

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<FoldExactCastChain>(context);
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(verifyPositive(*this, heads, "num_heads")) ||
      failed(verifyPositive(*this, kvHeads, "num_kv_heads")) ||
      failed(verifyPositive(*this, headDim, "head_dim")))
    return failure();
  if (heads % kvHeads != 0)
    return emitOpError() << "num_kv_heads (" << kvHeads
                         << ") must divide num_heads (" << heads << ")";
  auto checkWidth = [&](Value v, StringRef name,
                        int64_t numHeads, StringRef headsName) -> LogicalResult {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.isDynamicDim(1) || type.getDimSize(1) != numHeads * headDim)
      return emitOpError() << headsName << " (" << numHeads
                           << ") x head_dim (" << headDim
                           << ") = " << numHeads * headDim
                           << " does not match the width of '" << name
                           << "' (" << type << ")";
    return success();
  };
  if (failed(checkWidth(getQ(), "q", heads, "num_heads")) ||
      failed(checkWidth(getK(), "k", kvHeads, "num_kv_heads")) ||
      failed(checkWidth(getV(), "v", kvHeads, "num_kv_heads")))
    return failure();
  if (failed(verifyCompatibleShape(cast<ShapedType>(getK().getType()),
                                   cast<ShapedType>(getV().getType()))))
    return emitOpError("'k' and 'v' must have the same shape");
  double scale = getScale().convertToDouble();
  if (!(scale > 0.0) || std::isinf(scale))
    return emitOpError() << "scale must be a positive finite number, got "
                         << scale;
  if (!getQkNorm()) {
    if (getQNormWeight() || getKNormWeight() || getQkNormEpsAttr())
      return emitOpError("QK-Norm weights and eps need a 'qk_norm' kind");
  } else {
    if (!getQkNormEpsAttr())
      return emitOpError("'qk_norm' needs 'qk_norm_eps'");
    if (failed(verifyEps(*this, getQkNormEpsAttr().getValue(), "qk_norm_eps")))
      return failure();
    ShapeChecker shapes(*this);
    if (failed(shapes.param(getQNormWeight(), "q_norm_weight", headDim)) ||
        failed(shapes.param(getKNormWeight(), "k_norm_weight", headDim)))
      return failure();
  }
  return verifySameResultType(*this, getQ().getType(), getType());
}

//===----------------------------------------------------------------------===//
// Kernel ops
//===----------------------------------------------------------------------===//

/// A launch configuration must fit the rows it serves. `segments`: the rows
/// are consecutive pieces of wider rows (groups, heads), so that a piece
/// starts aligned for vector accesses only if the vector divides its length.
static LogicalResult verifyLaunchForRow(Operation *op, LaunchAttr launch,
                                        int64_t rowLength, bool segments) {
  if (!launch)
    return success();
  int64_t perAccess = launch.getVector();
  int64_t threads = launch.getThreadsPerRow();
  if (segments && rowLength % perAccess != 0)
    return op->emitOpError()
           << "launch configuration's vector (" << perAccess
           << ") must divide the " << rowLength
           << " elements of a group or head, which start one after another";
  if ((threads - 1) * perAccess >= rowLength)
    return op->emitOpError()
           << "launch configuration leaves threads without work: "
           << threads << " threads x vector " << perAccess
           << " for rows of " << rowLength << " elements";
  int64_t chunks = llvm::divideCeil(rowLength, threads * perAccess);
  if (chunks * perAccess > kMaxElementsPerThread)
    return op->emitOpError()
           << "launch configuration keeps " << chunks * perAccess
           << " elements per thread in registers (at most "
           << kMaxElementsPerThread << "); use more threads per row";
  return success();
}

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
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.row(getAddend(), "addend")) ||
      failed(shapes.row(getSkip(), "skip")) ||
      failed(shapes.row(getOutput(), "output")) ||
      failed(shapes.row(getResidualOut(), "residual_out")) ||
      failed(shapes.param(getWeight(), "weight")) ||
      failed(shapes.param(getBias(), "bias")) ||
      failed(shapes.param(getMean(), "mean")) ||
      failed(shapes.param(getVariance(), "variance")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())) ||
      failed(verifyPositive(*this, getGroups(), "groups")))
    return failure();
  double alpha = getAlpha().convertToDouble();
  if (!(alpha > 0.0) || std::isinf(alpha))
    return emitOpError() << "alpha must be a positive finite number, got "
                         << alpha;
  if (!getAddend()) {
    if (alpha != 1.0)
      return emitOpError("alpha needs an addend");
    if (getResidualOut())
      return emitOpError("residual_out needs an addend");
    if (getF32Residual())
      return emitOpError("f32_residual needs an addend");
  }
  if (getResidualOut() &&
      getElementTypeOrSelf(getResidualOut().getType()) !=
          getElementTypeOrSelf(getInput().getType()))
    return emitOpError() << "residual_out must keep the element type of "
                            "'input' ("
                         << getElementTypeOrSelf(getInput().getType())
                         << "), got " << getResidualOut().getType();
  int64_t hidden = shapes.getHidden();
  if (hidden % getGroups() != 0)
    return emitOpError() << "groups (" << getGroups()
                         << ") must divide the hidden size (" << hidden << ")";
  bool perChannelStats = getMean() || getVariance();
  if (perChannelStats && !(getMean() && getVariance()))
    return emitOpError("'mean' and 'variance' go together");
  if (perChannelStats && getStatistic() != Statistic::none)
    return emitOpError("per-channel 'mean'/'variance' need statistic 'none'");
  if (getWeightOffset().convertToDouble() != 0.0 && !getWeight())
    return emitOpError("weight_offset needs a weight");
  return verifyLaunchForRow(*this, getLaunchAttr(), hidden / getGroups(),
                            /*segments=*/getGroups() > 1);
}

LogicalResult QKNormPrologueOp::verify() {
  int64_t qHeads = getNumQHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(verifyPositive(*this, qHeads, "num_q_heads")) ||
      failed(verifyPositive(*this, kvHeads, "num_kv_heads")) ||
      failed(verifyPositive(*this, headDim, "head_dim")) ||
      failed(verifyEps(*this, getEpsAttr().getValue())))
    return failure();
  auto width = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getDimSize(1);
  };
  int64_t packed = (qHeads + 2 * kvHeads) * headDim;
  if (width(getQkv()) != packed)
    return emitOpError() << "'qkv' must have (num_q_heads + 2 * num_kv_heads)"
                            " x head_dim = "
                         << packed << " columns, got " << getQkv().getType();
  if (width(getQ()) != qHeads * headDim)
    return emitOpError() << "'q' must have num_q_heads x head_dim = "
                         << qHeads * headDim << " columns, got "
                         << getQ().getType();
  if (width(getK()) != kvHeads * headDim)
    return emitOpError() << "'k' must have num_kv_heads x head_dim = "
                         << kvHeads * headDim << " columns, got "
                         << getK().getType();
  for (Value v : {getQ(), getK()})
    if (failed(verifyCompatibleShape(
            ArrayRef<int64_t>{cast<ShapedType>(v.getType()).getDimSize(0)},
            ArrayRef<int64_t>{
                cast<ShapedType>(getQkv().getType()).getDimSize(0)})))
      return emitOpError("'q' and 'k' must have the row count of 'qkv'");
  ShapeChecker shapes(*this);
  if (failed(shapes.param(getQWeight(), "q_weight", headDim)) ||
      failed(shapes.param(getKWeight(), "k_weight", headDim)))
    return failure();
  return verifyLaunchForRow(*this, getLaunchAttr(), headDim,
                            /*segments=*/true);
}

LogicalResult ColumnStatsOp::verify() {
  ShapeChecker shapes(*this);
  if (failed(shapes.row(getInput(), "input")) ||
      failed(shapes.param(getMean(), "mean")) ||
      failed(shapes.param(getVariance(), "variance")))
    return failure();
  for (Value stat : {getMean(), getVariance()})
    if (!cast<RankedTensorType>(stat.getType()).getElementType().isF32())
      return emitOpError() << "column statistics are f32, got "
                           << stat.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// RowAllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult RowAllReduceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  for (Value v : operands)
    inferredReturnTypes.push_back(v.getType());
  return success();
}

LogicalResult RowAllReduceOp::verify() {
  int64_t group = getGroupSize();
  if (group < 1 || group > 1024 || (group < 32 && !llvm::isPowerOf2_64(group)) ||
      (group >= 32 && group % 32 != 0))
    return emitOpError() << "group_size must be a power of two up to 32 or a "
                            "multiple of 32 up to 1024, got "
                         << group;
  if (getValues().empty())
    return emitOpError("needs at least one value");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NormOps.cpp.inc"
