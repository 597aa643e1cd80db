//===- ExternDynamicSharedMemory.cpp - dynamic shared memory as .extern ---===//

#include "passes/LoweringPasses.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMEXTERNDYNAMICSHAREDMEMORY
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

struct ExternDynamicSharedMemory
    : public mlir::norm::impl::NormExternDynamicSharedMemoryBase<
          ExternDynamicSharedMemory> {
  void runOnOperation() override {
    auto shared = static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);
    // Swizzled wgmma operands and TMA boxes need their atoms aligned in the
    // address.
    bool swizzles = getOperation()
                        .walk([](LLVM::InlineAsmOp op) {
                          StringRef ptx = op.getAsmString();
                          return ptx.contains("wgmma.mma_async") ||
                                         ptx.contains("cp.async.bulk.tensor")
                                     ? WalkResult::interrupt()
                                     : WalkResult::advance();
                        })
                        .wasInterrupted();
    getOperation().walk([&](LLVM::GlobalOp global) {
      // An uninitialized zero-sized array in shared memory can only stand
      // for the memory sized at launch.
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() == shared && array &&
          array.getNumElements() == 0 && !global.getValueOrNull() &&
          global.getInitializerRegion().empty()) {
        global.setLinkage(LLVM::Linkage::External);
        if (swizzles)
          global.setAlignment(1024);
      }
    });
  }
};

} // namespace
