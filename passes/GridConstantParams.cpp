//===- GridConstantParams.cpp - kernel parameters by value ----------------===//

#include "passes/KernelBuilder.h"
#include "passes/LoweringPasses.h"

#include "dialects/NormDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMGRIDCONSTANTPARAMS
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The alignment of a CUtensorMap (CUDA's alignas(64)).
constexpr int64_t kGridConstantAlignment = 64;

struct GridConstantParams
    : public mlir::norm::impl::NormGridConstantParamsBase<GridConstantParams> {
  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto bytes = func->getAttrOfType<DenseI64ArrayAttr>(
          NormDialect::kGridConstantAttrName);
      if (!bytes)
        return;
      func->removeAttr(NormDialect::kGridConstantAttrName);
      if (static_cast<int64_t>(func.getNumArguments()) != bytes.size()) {
        func.emitError() << NormDialect::kGridConstantAttrName << " holds "
                         << bytes.size() << " parameters, the kernel has "
                         << func.getNumArguments();
        return signalPassFailure();
      }
      Builder builder(func.getContext());
      for (auto [i, size] : llvm::enumerate(bytes.asArrayRef())) {
        if (!size)
          continue;
        func.setArgAttr(
            i, LLVM::LLVMDialect::getByValAttrName(),
            TypeAttr::get(LLVM::LLVMArrayType::get(builder.getI8Type(), size)));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        builder.getI64IntegerAttr(kGridConstantAlignment));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        builder.getUnitAttr());
      }
    });
  }
};

} // namespace
