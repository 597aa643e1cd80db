//===- NoCompiler.cpp - the runtime-only build has no compiler ------------===//
//
// Linked instead of CompilerAdapter.cpp when libnormjit is built without MLIR
// and LLVM (NORM_RUNTIME_ONLY): kernels come from bundles that norm-tune
// wrote, and anything else is a NotFound error naming the operation.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelCompiler.h"

std::shared_ptr<norm::jit::KernelCompiler> norm::jit::createDefaultCompiler() {
  return nullptr;
}
