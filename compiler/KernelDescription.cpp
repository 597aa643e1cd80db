//===- KernelDescription.cpp - what a kernel op becomes -------------------===//

#include "compiler/KernelDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::norm;
using ::norm::ElementType;
using ::norm::KernelBuffer;
using ::norm::KernelParam;
using ::norm::KernelSignature;
using ::norm::OpSpec;

namespace norm {

static ElementType toElementType(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return ElementType::f32;
  if (element.isF16())
    return ElementType::f16;
  return ElementType::bf16; // the verifiers admit nothing else
}

bool isKernelOp(Operation *op) {
  return isa<FusedRowOp, QKNormPrologueOp, ColumnStatsOp>(op);
}

LaunchAttr getLaunch(Operation *kernelOp) {
  return llvm::TypeSwitch<Operation *, LaunchAttr>(kernelOp)
      .Case<FusedRowOp, QKNormPrologueOp, ColumnStatsOp>(
          [](auto op) { return op.getLaunchAttr(); })
      .Default([](Operation *) { return LaunchAttr(); });
}

SmallVector<KernelBuffer> getKernelBuffers(Operation *kernelOp) {
  SmallVector<KernelBuffer> buffers;
  auto add = [&](StringRef name, Value value, bool isResult) {
    if (value)
      buffers.push_back({name, value, isResult});
  };
  llvm::TypeSwitch<Operation *>(kernelOp)
      .Case([&](FusedRowOp op) {
        add("input", op.getInput(), false);
        add("addend", op.getAddend(), false);
        add("skip", op.getSkip(), false);
        add("weight", op.getWeight(), false);
        add("bias", op.getBias(), false);
        add("mean", op.getMean(), false);
        add("variance", op.getVariance(), false);
        add("output", op.getOutput(), true);
        add("residual_out", op.getResidualOut(), true);
      })
      .Case([&](QKNormPrologueOp op) {
        add("qkv", op.getQkv(), false);
        add("q_weight", op.getQWeight(), false);
        add("k_weight", op.getKWeight(), false);
        add("q", op.getQ(), true);
        add("k", op.getK(), true);
      })
      .Case([&](ColumnStatsOp op) {
        add("input", op.getInput(), false);
        add("mean", op.getMean(), true);
        add("variance", op.getVariance(), true);
      });
  return buffers;
}

static int64_t getHiddenOf(Value rowTensor) {
  return cast<RankedTensorType>(rowTensor.getType()).getDimSize(1);
}

int64_t getKernelRowLength(Operation *kernelOp) {
  return llvm::TypeSwitch<Operation *, int64_t>(kernelOp)
      .Case([](FusedRowOp op) { return op.getHidden() / op.getGroups(); })
      .Case([](QKNormPrologueOp op) { return op.getHeadDim(); })
      .Case([](ColumnStatsOp op) { return getHiddenOf(op.getInput()); })
      .Default([](Operation *) { return 0; });
}

int64_t getStagedRowBytes(FusedRowOp op, int64_t vector) {
  int64_t bytes = op.getStreamElementType().getIntOrFloatBitWidth() / 8;
  int64_t vectors = llvm::divideCeil(op.getHidden() / op.getGroups(), vector);
  return llvm::alignTo(vectors * vector * bytes, 16);
}

/// Whether the threads of `kernelOp` keep their shares of a row in
/// registers: always but for norm.fused_row shares beyond
/// kMaxElementsPerThread (the verifiers of the other kernel ops enforce it).
static bool keepsRowsInRegisters(Operation *kernelOp,
                                 const LaunchConfig &launch) {
  if (!isa<FusedRowOp>(kernelOp))
    return true;
  return fitsInRegisters(getKernelRowLength(kernelOp), launch.threadsPerRow,
                         launch.vector);
}

RowStorage getRowStorage(Operation *kernelOp, const LaunchConfig &launch,
                         int64_t maxSharedBytes) {
  if (keepsRowsInRegisters(kernelOp, launch))
    return RowStorage::Registers;
  auto op = cast<FusedRowOp>(kernelOp);
  // Without a statistic, one pass over the row is all there is.
  if (op.getStatistic() == Statistic::none)
    return RowStorage::Streamed;
  if (launch.getConcurrentRows() * getStagedRowBytes(op, launch.vector) <=
      maxSharedBytes - kReservedSharedBytes)
    return RowStorage::Shared;
  return RowStorage::Streamed;
}

RowStorage getRowStorage(Operation *kernelOp,
                         const KernelSignature &signature) {
  if (keepsRowsInRegisters(kernelOp, signature.launch))
    return RowStorage::Registers;
  return signature.sharedBytes > 0 ? RowStorage::Shared : RowStorage::Streamed;
}

int64_t getStaticRows(Operation *kernelOp) {
  Value rows = kernelOp->getOperand(0); // input, qkv: the first operand
  int64_t count = cast<RankedTensorType>(rows.getType()).getDimSize(0);
  return ShapedType::isDynamic(count) ? -1 : count;
}

FailureOr<OpSpec> getOpSpec(Operation *kernelOp) {
  OpSpec spec;
  auto paramType = [](std::initializer_list<Value> params) {
    for (Value v : params)
      if (v)
        return toElementType(v.getType());
    return ElementType::bf16;
  };
  if (auto op = dyn_cast<FusedRowOp>(kernelOp)) {
    switch (op.getStatistic()) {
    case Statistic::rms:
      spec.kind = OpSpec::Kind::RMSNorm;
      break;
    case Statistic::mean_var:
      spec.kind = op.getGroups() > 1 ? OpSpec::Kind::GroupNorm
                                     : OpSpec::Kind::LayerNorm;
      break;
    case Statistic::l2:
      spec.kind = OpSpec::Kind::L2Norm;
      break;
    case Statistic::none:
      spec.kind = op.getMean() ? OpSpec::Kind::BatchNormInference
                               : OpSpec::Kind::Elementwise;
      break;
    }
    spec.hidden = op.getHidden();
    spec.input = toElementType(op.getInput().getType());
    spec.output = toElementType(op.getOutput().getType());
    spec.param = paramType(
        {op.getWeight(), op.getBias(), op.getMean(), op.getVariance()});
    spec.hasWeight = static_cast<bool>(op.getWeight());
    spec.hasBias = static_cast<bool>(op.getBias());
    spec.hasAddend = static_cast<bool>(op.getAddend());
    if (spec.hasAddend)
      spec.addendType = toElementType(op.getAddend().getType());
    spec.writeResidual = static_cast<bool>(op.getResidualOut());
    spec.f32Residual = op.getF32Residual();
    spec.hasSkip = static_cast<bool>(op.getSkip());
    if (spec.hasSkip)
      spec.skipType = toElementType(op.getSkip().getType());
    spec.eps = op.getEps().convertToDouble();
    spec.alpha = op.getAlpha().convertToDouble();
    spec.weightOffset = op.getWeightOffset().convertToDouble();
    spec.groups = op.getGroups();
    return spec;
  }
  if (auto op = dyn_cast<QKNormPrologueOp>(kernelOp)) {
    spec.kind = OpSpec::Kind::QKNormPrologue;
    spec.hidden = op.getHeadDim();
    spec.input = toElementType(op.getQkv().getType());
    spec.output = toElementType(op.getQ().getType());
    spec.param = paramType({op.getQWeight(), op.getKWeight()});
    spec.hasWeight = op.getQWeight() || op.getKWeight();
    spec.eps = op.getEps().convertToDouble();
    spec.numQHeads = op.getNumQHeads();
    spec.numKvHeads = op.getNumKvHeads();
    spec.qkL2 = op.getKind() == QKNormKind::l2;
    return spec;
  }
  if (auto op = dyn_cast<ColumnStatsOp>(kernelOp)) {
    spec.kind = OpSpec::Kind::BatchNormStats;
    spec.hidden = getHiddenOf(op.getInput());
    spec.input = toElementType(op.getInput().getType());
    spec.output = ElementType::f32;
    spec.param = ElementType::f32;
    return spec;
  }
  return failure();
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

/// Every attribute and type the generated code depends on, in a canonical
/// text form (doubles in hex, so that nothing rounds).
static std::string getSemanticKey(Operation *kernelOp) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << kernelOp->getName().getStringRef();
  for (const KernelBuffer &buffer : getKernelBuffers(kernelOp)) {
    auto type = cast<RankedTensorType>(buffer.value.getType());
    os << ';' << buffer.name << ':' << type.getElementType() << 'x'
       << type.getDimSize(type.getRank() - 1);
  }
  auto real = [&](StringRef name, APFloat value) {
    os << ';' << name << '=' << llvm::format("%a", value.convertToDouble());
  };
  llvm::TypeSwitch<Operation *>(kernelOp)
      .Case([&](FusedRowOp op) {
        os << ";statistic=" << stringifyStatistic(op.getStatistic())
           << ";groups=" << op.getGroups()
           << ";f32_residual=" << op.getF32Residual();
        real("eps", op.getEps());
        real("alpha", op.getAlpha());
        real("weight_offset", op.getWeightOffset());
      })
      .Case([&](QKNormPrologueOp op) {
        os << ";kind=" << stringifyQKNormKind(op.getKind())
           << ";heads=" << op.getNumQHeads() << ',' << op.getNumKvHeads()
           << ";head_dim=" << op.getHeadDim();
        real("eps", op.getEps());
      });
  return key;
}

/// 32-bit FNV-1a: stable across runs, platforms and compilers.
static uint32_t hashKey(StringRef key) {
  uint32_t hash = 2166136261u;
  for (char c : key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

static std::string getKernelPrefix(Operation *kernelOp) {
  auto typeName = [](Value v) {
    return std::string(::norm::getElementTypeName(toElementType(v.getType())));
  };
  return llvm::TypeSwitch<Operation *, std::string>(kernelOp)
      .Case([&](FusedRowOp op) {
        std::string what;
        switch (op.getStatistic()) {
        case Statistic::rms:
          what = "rms";
          break;
        case Statistic::mean_var:
          what = op.getGroups() > 1 ? "group" : "layer";
          break;
        case Statistic::l2:
          what = "l2";
          break;
        case Statistic::none:
          what = op.getMean() ? "bn" : "ew";
          break;
        }
        if (op.getAddend())
          what += "_add";
        if (op.getSkip())
          what += "_skip";
        return llvm::formatv("norm_{0}_h{1}_{2}_{3}", what, op.getHidden(),
                             typeName(op.getInput()), typeName(op.getOutput()))
            .str();
      })
      .Case([&](QKNormPrologueOp op) {
        return llvm::formatv("norm_qk_{0}_d{1}_{2}_{3}",
                             stringifyQKNormKind(op.getKind()), op.getHeadDim(),
                             typeName(op.getQkv()), typeName(op.getQ()))
            .str();
      })
      .Case([&](ColumnStatsOp op) {
        return llvm::formatv("norm_colstats_h{0}_{1}_f32",
                             getHiddenOf(op.getInput()),
                             typeName(op.getInput()))
            .str();
      })
      .Default([](Operation *) { return std::string("norm_unknown"); });
}

static LaunchConfig toLaunchConfig(LaunchAttr launch) {
  return {launch.getVector(), launch.getThreadsPerRow(), launch.getWarps(),
          launch.getRowsPerCta()};
}

static StringRef getRowStorageSuffix(RowStorage storage) {
  switch (storage) {
  case RowStorage::Registers:
    return "";
  case RowStorage::Shared:
    return "_smem";
  case RowStorage::Streamed:
    return "_stream";
  }
  llvm_unreachable("unknown row storage");
}

std::string getKernelName(Operation *kernelOp, LaunchAttr launch,
                          int64_t maxSharedBytes) {
  RowStorage storage =
      getRowStorage(kernelOp, toLaunchConfig(launch), maxSharedBytes);
  return llvm::formatv(
             "{0}_{1}_{2}{3}", getKernelPrefix(kernelOp),
             llvm::format_hex_no_prefix(hashKey(getSemanticKey(kernelOp)), 8),
             launch.getMangledSuffix(), getRowStorageSuffix(storage))
      .str();
}

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

int64_t getBufferAlignment(ElementType elementType, int64_t vector) {
  return std::min<int64_t>(vector * getElementBytes(elementType), 16);
}

LaunchAttr getScalarFallback(LaunchAttr launch) {
  if (!launch || launch.getVector() == 1)
    return {};
  return LaunchAttr::get(launch.getContext(), 1, launch.getThreadsPerRow(),
                         launch.getWarps(), launch.getRowsPerCta());
}

FailureOr<KernelSignature>
describeKernel(Operation *kernelOp, LaunchAttr launch, int64_t maxSharedBytes) {
  if (!isKernelOp(kernelOp))
    return kernelOp->emitOpError("is not a kernel op");
  if (!launch)
    launch = getLaunch(kernelOp);
  if (!launch)
    return kernelOp->emitOpError(
        "has no launch configuration (run norm-assign-launch-config)");

  KernelSignature sig;
  sig.name = getKernelName(kernelOp, launch, maxSharedBytes);
  sig.kind = kernelOp->getName().stripDialect().str();
  sig.launch = toLaunchConfig(launch);
  sig.blockThreads = launch.getThreadsPerCta();
  sig.hidden = getHiddenOf(kernelOp->getOperand(0));
  if (auto op = dyn_cast<FusedRowOp>(kernelOp)) {
    sig.rowMultiplier = op.getGroups();
    if (getRowStorage(op, sig.launch, maxSharedBytes) == RowStorage::Shared)
      sig.sharedBytes = sig.launch.getConcurrentRows() *
                        getStagedRowBytes(op, sig.launch.vector);
  } else if (auto op = dyn_cast<QKNormPrologueOp>(kernelOp)) {
    sig.hidden = op.getHeadDim();
    sig.rowMultiplier = op.getNumQHeads() + op.getNumKvHeads();
  } else {
    // Column statistics: one "row" of work per `vector` columns.
    int64_t tiles = llvm::divideCeil(sig.hidden, launch.getVector());
    sig.fixedGridX = llvm::divideCeil(tiles, launch.getRowsPerCta());
  }

  SmallVector<KernelBuffer> buffers = getKernelBuffers(kernelOp);
  for (const KernelBuffer &buffer : buffers) {
    KernelParam param;
    param.kind = KernelParam::Kind::Buffer;
    param.name = buffer.name.str();
    param.elementType = toElementType(buffer.value.getType());
    param.rowMajor2D =
        cast<RankedTensorType>(buffer.value.getType()).getRank() == 2;
    param.readOnly = !buffer.isResult;
    param.alignment = getBufferAlignment(param.elementType, launch.getVector());
    sig.params.push_back(std::move(param));
  }
  KernelParam rows;
  rows.kind = KernelParam::Kind::Rows;
  rows.name = "rows";
  sig.params.push_back(rows);
  for (const KernelBuffer &buffer : buffers) {
    if (cast<RankedTensorType>(buffer.value.getType()).getRank() != 2)
      continue;
    KernelParam stride;
    stride.kind = KernelParam::Kind::RowStride;
    stride.name = (buffer.name + "_stride").str();
    sig.params.push_back(std::move(stride));
  }
  return sig;
}

FailureOr<std::vector<KernelSignature>>
describeReferencedKernels(Operation *root, bool withFallbacks,
                          int64_t maxSharedBytes) {
  std::vector<KernelSignature> signatures;
  llvm::StringSet<> seen;
  WalkResult walk = root->walk([&](Operation *op) {
    auto kernel = op->getAttrOfType<SymbolRefAttr>("kernel");
    if (!isKernelOp(op) || !kernel)
      return WalkResult::advance();
    LaunchAttr launch = getLaunch(op);
    SmallVector<LaunchAttr, 2> launches = {launch};
    if (LaunchAttr fallback = getScalarFallback(launch);
        fallback && withFallbacks)
      launches.push_back(fallback);
    for (LaunchAttr each : launches) {
      FailureOr<KernelSignature> sig = describeKernel(op, each, maxSharedBytes);
      if (failed(sig))
        return WalkResult::interrupt();
      // The generator chose the row storage for its target; another target
      // may choose differently.
      if (each == launch && kernel.getLeafReference() != sig->name) {
        op->emitOpError() << "references kernel '"
                          << kernel.getLeafReference().getValue()
                          << "', but with " << maxSharedBytes
                          << " bytes of shared memory per CTA its kernel is '"
                          << sig->name
                          << "': kernels were generated for another target";
        return WalkResult::interrupt();
      }
      if (each == launch && launches.size() > 1)
        sig->fallback = getKernelName(op, launches.back(), maxSharedBytes);
      if (seen.insert(sig->name).second)
        signatures.push_back(std::move(*sig));
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return signatures;
}

} // namespace norm
