//===- KernelCompiler.h - where libnormjit's kernels come from --*- C++ -*-===//
//
// The runtime asks an injectable compiler for kernels: the full build wraps
// norm::compileKernel (CompilerAdapter.cpp), a runtime-only build has none
// and serves kernel bundles only (NoCompiler.cpp), and tests count compiles
// with fakes. Compilation always happens in process.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_KERNELCOMPILER_H
#define NORM_RUNTIME_KERNELCOMPILER_H

#include "compiler/Compiler.h"

#include <memory>
#include <string>

namespace norm::jit {

class KernelCompiler {
public:
  virtual ~KernelCompiler() = default;

  /// Compiles one operation for one launch configuration to PTX and the
  /// kernel's signature. Called from several threads at once.
  virtual norm::Status compile(const OpSpec &spec, const LaunchConfig &launch,
                               const TargetOptions &target,
                               CompiledKernel &result) = 0;

  /// The configuration to use without tuning (the threads-per-row ladder).
  virtual LaunchConfig getHeuristicLaunch(const OpSpec &spec, int64_t rows) = 0;

  /// Changes whenever generated code may change: part of every cache key.
  virtual std::string getVersion() = 0;
};

/// The compiler built into this library: norm::compileKernel in the full
/// build, null in a runtime-only build (NORM_RUNTIME_ONLY).
std::shared_ptr<KernelCompiler> createDefaultCompiler();

} // namespace norm::jit

#endif // NORM_RUNTIME_KERNELCOMPILER_H
