//===- Compiler.h - norm programs to PTX, in process ------------*- C++ -*-===//
//
// The driver library shared by norm-opt and libnormjit: it turns a norm
// program, or the description of one operation, into PTX (and cubin through
// ptxas when asked) plus the signature of every kernel, in one call. The
// interface is plain C++ so that its users need no MLIR headers.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_COMPILER_H
#define NORM_COMPILER_COMPILER_H

#include "compiler/model/KernelModel.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

struct CompiledKernel {
  KernelSignature signature;
  std::string ptx;
  std::string kernelIR;           // the gpu.func before NVVM lowering
};

struct CompiledModule {
  std::string ptx;                            // all kernels of the program
  std::vector<KernelSignature> kernels;
};

/// Compiles one operation for one launch configuration: the norm IR of its
/// kernel op (built with the dialect's builders), the kernel, PTX. Fails
/// with a message for operations and configurations that break a rule of
/// the kernel model (InvalidArgument) and for compiler failures
/// (CompileError).
Status compileKernel(const OpSpec &spec, const LaunchConfig &launch,
                     const TargetOptions &target, CompiledKernel &result);

/// The norm IR (a module with one function holding the kernel op, for
/// `target`) that compileKernel compiles: the input of the CPU execution
/// path and of tests.
Status buildKernelSource(const OpSpec &spec, const LaunchConfig &launch,
                         const TargetOptions &target, std::string &mlir);

/// Compiles a whole norm program (MLIR text): fusion, launch configuration
/// (the heuristic unless the program fixes one), kernels, PTX, for `target`
/// (which replaces a norm.target the program has).
Status compileProgram(std::string_view mlir, const TargetOptions &target,
                      CompiledModule &result);

/// Lowers a module whose gpu.module holds kernels already (hand-written
/// gpu.func kernels of norm's warp and warpgroup ops, as tests write them)
/// to PTX for `target`.
Status compileKernelModule(std::string_view mlir, const TargetOptions &target,
                           std::string &ptx);

/// A version string that changes whenever generated code may change; part of
/// every cache key.
std::string_view getCompilerVersion();

/// What `ptxas -v` reports for one kernel.
struct KernelResources {
  std::string name;
  int64_t registers = 0;
  int64_t stackFrameBytes = 0;
  int64_t spillStoreBytes = 0;
  int64_t spillLoadBytes = 0;
  bool spills() const { return spillStoreBytes > 0 || spillLoadBytes > 0; }
};

/// Assembles PTX for `chip` with `ptxas -v` (found as assembleCubin finds
/// it) and reads each kernel's registers, stack frame and spills from its
/// report, in the PTX's order.
Status getKernelResources(std::string_view ptx, std::string_view chip,
                          const std::string &ptxasPath,
                          std::vector<KernelResources> &kernels);

/// Assembles PTX into a cubin for `chip` with ptxas (`ptxasPath`, else
/// $CUDA_HOME/bin/ptxas, else PATH, else /usr/local/cuda/bin/ptxas).
Status assembleCubin(std::string_view ptx, std::string_view chip,
                     const std::string &ptxasPath,
                     std::vector<uint8_t> &cubin);

} // namespace norm

#endif // NORM_COMPILER_COMPILER_H
