//===- CompilerAdapter.cpp - libnormjit on norm::compileKernel ------------===//
//
// The full build's kernel source: the in-process MLIR pipeline of
// compiler/Compiler.h. Only this file links the compiler (and so MLIR and
// LLVM); a runtime-only build links NoCompiler.cpp instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelCompiler.h"

namespace norm::jit {
namespace {

class NormCompiler final : public KernelCompiler {
public:
  norm::Status compile(const OpSpec &spec, const LaunchConfig &launch,
                       const TargetOptions &target,
                       CompiledKernel &result) override {
    return norm::compileKernel(spec, launch, target, result);
  }

  LaunchConfig getHeuristicLaunch(const OpSpec &spec, int64_t rows) override {
    return norm::getHeuristicLaunch(spec, rows);
  }

  std::string getVersion() override {
    return std::string(norm::getCompilerVersion());
  }
};

} // namespace

std::shared_ptr<KernelCompiler> createDefaultCompiler() {
  return std::make_shared<NormCompiler>();
}

} // namespace norm::jit
