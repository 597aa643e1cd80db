//===- HostExecution.h - run generated kernels on the CPU -------*- C++ -*-===//
//
// The CPU execution path: the gpu.func kernels of a module become host
// functions that run the whole grid (norm-kernels-to-host), are lowered to
// LLVM (norm-host-to-llvm) and JIT-compiled for this machine. Tests run the
// same kernel programs as the GPU this way, on machines without one. Plain
// C++ interface, like Compiler.h.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_HOSTEXECUTION_H
#define NORM_COMPILER_HOSTEXECUTION_H

#include "compiler/Compiler.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

struct HostCompileOptions {
  /// A textual pass pipeline on the module (`builtin.module(...)` or a plain
  /// pass list) that turns the input into gpu.module kernels first: the
  /// kernel generator's passes for norm IR. The process must have registered
  /// those passes. Empty when the input holds the kernels already.
  std::string kernelPipeline;
  /// CTA size of kernels that lack `known_block_size` (0: none).
  int64_t blockSize = 0;
  /// LLVM optimization level of the JIT, 0 to 3.
  int optLevel = 2;
  /// The CPU the JIT compiles for, with that CPU's features only (`x86-64`:
  /// the baseline every x86-64 machine has); empty: this machine's CPU and
  /// features. Tests use the baseline to show that results do not depend
  /// on the CPU.
  std::string cpu;
  /// Run the threads of each stretch between meeting points from the last
  /// to the first (see norm-kernels-to-host's reverse-threads): races that
  /// index order hides show.
  bool reverseThreads = false;
};

/// A parameter of a kernel as the host sees it.
struct HostKernelParam {
  bool isBuffer = false;   // a pointer; otherwise an i64
  std::string elementType; // buffers: "f32", "bf16", ... (MLIR spelling)
};

/// The kernels of one module, JIT-compiled for the CPU.
class HostKernels {
public:
  ~HostKernels();

  /// Parses `mlir`, runs `options.kernelPipeline`, turns every gpu.func
  /// kernel into a host function and JIT-compiles them. On failure, the
  /// message holds the diagnostics.
  static Status compile(std::string_view mlir,
                        const HostCompileOptions &options,
                        std::unique_ptr<HostKernels> &result);

  /// The kernels (gpu.func names), in module order.
  std::vector<std::string> getKernelNames() const;
  /// The parameters of `kernel` (empty if there is no such kernel).
  std::vector<HostKernelParam> getParams(std::string_view kernel) const;

  /// Runs `kernel` over `gridX` CTAs, one after the other. `buffers` are its
  /// pointer parameters and `integers` its i64 parameters (rows, then row
  /// strides), each in parameter order.
  Status launch(std::string_view kernel, const std::vector<void *> &buffers,
                const std::vector<int64_t> &integers, int64_t gridX) const;

private:
  struct Impl;
  explicit HostKernels(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace norm

#endif // NORM_COMPILER_HOSTEXECUTION_H
