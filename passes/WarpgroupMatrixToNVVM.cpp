//===- WarpgroupMatrixToNVVM.cpp - wgmma ops to inline PTX ----------------===//
//
// The NVVM lowering of the warpgroup matrix ops of sm_90a, beside the warp
// ones of WarpMatrixToNVVM.cpp. `norm.wgmma` becomes an inline
// `wgmma.mma_async` (NVVM's op has no register-A form, and one form for
// both keeps them alike) whose accumulators are outputs tied to their
// inputs; shared operands become matrix descriptors: the start address
// (bits 0-13, the shared address >> 4) or'ed with the layout's
// #norm.shared_matrix bits. `norm.wgmma_fence` and `norm.wgmma_wait` tie
// the registers they pass through the same way, as CUTLASS's
// warpgroup_fence_operand does, so that LLVM moves no access to them
// across the asynchronous multiply.
//
//===----------------------------------------------------------------------===//

#include "passes/NVVMLowering.h"

#include "dialects/NormOps.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The 32-bit registers of vectors that an asm reads and writes in place.
class TiedRegisters {
public:
  TiedRegisters(OpBuilder &b, Location loc, ValueRange values) {
    Type i32 = b.getI32Type();
    for (Value value : values) {
      auto type = cast<VectorType>(value.getType());
      bool isF32 = type.getElementType().isF32();
      int64_t count =
          type.getNumElements() * type.getElementTypeBitWidth() / 32;
      SmallVector<Value> parts =
          isF32 ? getRegisters(b, loc, value, count, b.getF32Type())
                : getRegisters(b, loc, value, count, i32);
      for (Value part : parts) {
        registers.push_back(part);
        kinds.push_back(isF32 ? 'f' : 'r');
      }
      vectors.push_back({type, count, isF32});
    }
  }

  int64_t size() const { return registers.size(); }
  /// "$first, $first+1, ..." for the registers' operand numbers.
  std::string list(int64_t first = 0) const {
    SmallVector<std::string> names;
    for (int64_t i = 0; i < size(); ++i)
      names.push_back("$" + std::to_string(first + i));
    return llvm::join(names, ", ");
  }

  /// Runs `ptx` with the registers as outputs $0.. and tied inputs, then
  /// `inputs` with `inputConstraints` (numbered from 2 * size()); returns
  /// the vectors rebuilt from the outputs.
  SmallVector<Value> emit(OpBuilder &b, Location loc, StringRef ptx,
                          ValueRange inputs,
                          ArrayRef<StringRef> inputConstraints) const {
    SmallVector<std::string> constraints;
    SmallVector<Type> types;
    for (auto [reg, kind] : llvm::zip(registers, kinds)) {
      constraints.push_back(std::string("=") + kind);
      types.push_back(reg.getType());
    }
    for (int64_t i = 0; i < size(); ++i)
      constraints.push_back(std::to_string(i));
    for (StringRef constraint : inputConstraints)
      constraints.push_back(constraint.str());
    SmallVector<Value> operands(registers);
    llvm::append_range(operands, inputs);
    Value outputs =
        createAsm(b, loc, types, operands, ptx, llvm::join(constraints, ","));
    SmallVector<Value> results;
    int64_t next = 0;
    for (const Vector &vector : vectors) {
      Type member = vector.isF32 ? Type(b.getF32Type()) : b.getI32Type();
      results.push_back(getVector(b, loc, outputs, vector.registers, member,
                                  vector.type, next));
      next += vector.registers;
    }
    return results;
  }

private:
  struct Vector {
    VectorType type;
    int64_t registers;
    bool isF32;
  };
  SmallVector<Value> registers;
  SmallVector<char> kinds;
  SmallVector<Vector> vectors;
};

/// wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T with D tied to C, the
/// descriptors as 64-bit operands and the accumulate flag through a
/// predicate (scale-d), as CUTLASS writes it.
struct WgmmaLowering : ConvertOpToLLVMPattern<WgmmaOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  /// The descriptor of the operand at `memref[index]` laid out as `layout`.
  Value getDescriptor(ConversionPatternRewriter &rewriter, Location loc,
                      Value memref, Value descriptor, Value index,
                      SharedMatrixAttr layout) const {
    Type i64 = rewriter.getI64Type();
    Value pointer =
        getStridedElementPtr(rewriter, loc, cast<MemRefType>(memref.getType()),
                             descriptor, ValueRange{index});
    Value address = LLVM::PtrToIntOp::create(rewriter, loc, i64, pointer);
    auto constant = [&](uint64_t value) {
      return LLVM::ConstantOp::create(rewriter, loc, i64,
                                      static_cast<int64_t>(value));
    };
    Value start = LLVM::AndOp::create(
        rewriter, loc,
        LLVM::LShrOp::create(rewriter, loc, address, constant(4)),
        constant(0x3fff));
    return LLVM::OrOp::create(rewriter, loc, start,
                              constant(layout.getDescriptorBits()));
  }

  LogicalResult
  matchAndRewrite(WgmmaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = cast<MemRefType>(op.getB().getType()).getElementType();
    StringRef type = isa<BFloat16Type>(element) ? "bf16" : "f16";
    TiedRegisters accumulators(rewriter, loc, adaptor.getC());
    int64_t first = 2 * accumulators.size();

    SmallVector<Value> inputs;
    SmallVector<StringRef> constraints;
    std::string a;
    if (SharedMatrixAttr layout = op.getALayoutAttr()) {
      inputs.push_back(getDescriptor(rewriter, loc, op.getA(), adaptor.getA(),
                                     adaptor.getAIndex(), layout));
      constraints.push_back("l");
      a = "$" + std::to_string(first);
    } else {
      for (Value reg : getRegisters(rewriter, loc, adaptor.getA(), 4,
                                    rewriter.getI32Type())) {
        inputs.push_back(reg);
        constraints.push_back("r");
      }
      a = "{$" + std::to_string(first) + ", $" + std::to_string(first + 1) +
          ", $" + std::to_string(first + 2) + ", $" +
          std::to_string(first + 3) + "}";
    }
    int64_t b = first + inputs.size();
    inputs.push_back(getDescriptor(rewriter, loc, op.getB(), adaptor.getB(),
                                   adaptor.getBIndex(), op.getBLayoutAttr()));
    constraints.push_back("l");
    inputs.push_back(LLVM::ConstantOp::create(
        rewriter, loc, rewriter.getI32Type(), op.getAccumulate() ? 1 : 0));
    constraints.push_back("r");

    // Immediates: scale-a and scale-b 1, then transpose-a (shared A only)
    // and transpose-b: 1 for MN-major operands.
    std::string immediates = "1, 1";
    if (SharedMatrixAttr layout = op.getALayoutAttr())
      immediates += layout.getMnMajor() ? ", 1" : ", 0";
    immediates += op.getBLayoutAttr().getMnMajor() ? ", 1" : ", 0";
    std::string ptx =
        "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(b + 1) +
        ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(op.getN()) +
        "k16.f32." + type.str() + "." + type.str() + " {" +
        accumulators.list() + "}, " + a + ", $" + std::to_string(b) + ", p, " +
        immediates + ";\n}";
    rewriter.replaceOp(
        op, accumulators.emit(rewriter, loc, ptx, inputs, constraints));
    return success();
  }
};

/// An op that runs `ptx` on the registers it passes through.
template <typename Op> struct TiedAsmLowering : ConvertOpToLLVMPattern<Op> {
  TiedAsmLowering(const LLVMTypeConverter &converter,
                  std::function<std::string(Op)> getPtx)
      : ConvertOpToLLVMPattern<Op>(converter), getPtx(std::move(getPtx)) {}

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    TiedRegisters registers(rewriter, op.getLoc(), adaptor.getValues());
    rewriter.replaceOp(op, registers.emit(rewriter, op.getLoc(), getPtx(op),
                                          ValueRange(), {}));
    return success();
  }

  std::function<std::string(Op)> getPtx;
};

/// norm.set_max_registers: NVVM's op (the setmaxnreg intrinsics).
struct SetMaxRegistersLowering : ConvertOpToLLVMPattern<SetMaxRegistersOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(SetMaxRegistersOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::SetMaxRegisterOp>(
        op, static_cast<int32_t>(op.getCount()),
        op.getIncrease() ? NVVM::SetMaxRegisterAction::increase
                         : NVVM::SetMaxRegisterAction::decrease);
    return success();
  }
};

} // namespace

void mlir::norm::populateWarpgroupToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<WgmmaLowering, SetMaxRegistersLowering>(converter);
  patterns.add<InstructionLowering<WgmmaCommitOp>>(
      converter, "wgmma.commit_group.sync.aligned;");
  patterns.add<InstructionLowering<AsyncProxyFenceOp>>(
      converter, "fence.proxy.async.shared::cta;");
  patterns.add<InstructionLowering<NamedBarrierOp>>(
      converter, [](NamedBarrierOp op) {
        return "bar.sync " + std::to_string(op.getId()) + ", " +
               std::to_string(op.getThreads()) + ";";
      });
  patterns.add<TiedAsmLowering<WgmmaFenceOp>>(converter, [](WgmmaFenceOp) {
    return std::string("wgmma.fence.sync.aligned;");
  });
  patterns.add<TiedAsmLowering<WgmmaWaitOp>>(converter, [](WgmmaWaitOp op) {
    return "wgmma.wait_group.sync.aligned " + std::to_string(op.getPending()) +
           ";";
  });
}
