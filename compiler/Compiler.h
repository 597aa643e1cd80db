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

#include "compiler/KernelSignature.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

/// Success, or a message saying what went wrong.
struct Status {
  bool ok = true;
  std::string message;
  static Status success() { return {}; }
  static Status error(std::string message) { return {false, std::move(message)}; }
  explicit operator bool() const { return ok; }
};

/// Shared memory one CTA may use on `chip`: the opt-in maximum of its
/// compute capability, 163 KiB on sm_80, 99 KiB on sm_89, 227 KiB on sm_90
/// and sm_90a; 0 for another chip.
inline int64_t getMaxSharedBytesPerCta(std::string_view chip) {
  if (chip == "sm_80")
    return 163 * 1024;
  if (chip == "sm_89")
    return 99 * 1024;
  if (chip == "sm_90" || chip == "sm_90a")
    return 227 * 1024;
  return 0;
}

struct TargetOptions {
  std::string chip = "sm_90";   // sm_80, sm_89, sm_90 (sm_90a accepted)
  int ptxVersion = 80;          // PTX ISA version x 10: 80 is PTX 8.0
  bool emitCubin = false;       // also run ptxas (needs the CUDA toolkit)
  std::string ptxasPath;        // empty: see assembleCubin
  /// Shared memory one CTA may use, in bytes: rows too long for registers
  /// are staged in it where they fit, else streamed. 0: the chip's
  /// (getMaxSharedBytesPerCta). A device may allow less than its PTX chip
  /// (sm_86 and sm_120 devices run sm_80 and sm_90 PTX with 99 KiB);
  /// libnormjit passes its device's limit.
  int64_t maxSharedBytes = 0;

  int64_t getMaxSharedBytes() const {
    return maxSharedBytes > 0 ? maxSharedBytes : getMaxSharedBytesPerCta(chip);
  }
};

/// One operation, as the runtime describes it.
struct OpSpec {
  enum class Kind {
    RMSNorm,           // norm.fused_row <rms>
    LayerNorm,         // norm.fused_row <mean_var>
    L2Norm,            // norm.fused_row <l2>
    GroupNorm,         // norm.fused_row <mean_var>, groups > 1
    BatchNormInference,// norm.fused_row <none> with mean/variance
    Elementwise,       // norm.fused_row <none>: residual add and/or cast
    BatchNormStats,    // norm.column_stats
    QKNormPrologue,    // norm.qk_norm_prologue
  };
  Kind kind = Kind::RMSNorm;
  int64_t hidden = 0;               // row length (head_dim for QK-Norm)
  ElementType input = ElementType::bf16;
  ElementType output = ElementType::bf16;
  ElementType param = ElementType::bf16;     // weight/bias/mean/variance
  ElementType addendType = ElementType::bf16;
  bool hasWeight = false;
  bool hasBias = false;
  bool hasAddend = false;          // v = alpha * input + addend
  bool writeResidual = false;      // store v (residual_out)
  bool f32Residual = false;        // normalize the unrounded f32 sum
  bool hasSkip = false;            // y = skip + norm(v) (Sandwich)
  ElementType skipType = ElementType::bf16;
  double eps = 1e-6;
  double alpha = 1.0;
  double weightOffset = 0.0;       // 1.0: Gemma's (1 + w)
  int64_t groups = 1;
  // QK-Norm prologue only (statistic from `qkL2`):
  int64_t numQHeads = 0, numKvHeads = 0;
  bool qkL2 = false;
};

struct CompiledKernel {
  KernelSignature signature;
  std::string ptx;
  std::vector<uint8_t> cubin;     // when TargetOptions::emitCubin
  std::string kernelIR;           // the gpu.func before NVVM lowering
};

struct CompiledModule {
  std::string ptx;                            // all kernels of the program
  std::vector<uint8_t> cubin;
  std::vector<KernelSignature> kernels;
};

/// Compiles one operation for one launch configuration. Fails with a message
/// for unsupported combinations and invalid configurations.
Status compileKernel(const OpSpec &spec, const LaunchConfig &launch,
                     const TargetOptions &target, CompiledKernel &result);

/// The norm IR (a module with one function holding the kernel op) that
/// compileKernel compiles: the input of the CPU execution path and of tests.
Status buildKernelSource(const OpSpec &spec, const LaunchConfig &launch,
                         std::string &mlir);

/// Compiles a whole norm program (MLIR text): fusion, launch configuration
/// (the heuristic unless the program fixes one), kernels, PTX.
Status compileProgram(std::string_view mlir, const TargetOptions &target,
                      CompiledModule &result);

/// The launch configuration the heuristic picks for an operation and a row
/// count (the threads-per-row ladder; see LaunchHeuristic.cpp). `rows` is the
/// operation's row count (tokens for the QK-Norm prologue), or -1 when it is
/// not known; it sizes the work of a CTA (rows a CTA loops over, threads per
/// column tile for column statistics).
LaunchConfig getHeuristicLaunch(const OpSpec &spec, int64_t rows);

/// A version string that changes whenever generated code may change; part of
/// every cache key.
std::string_view getCompilerVersion();

/// Assembles PTX into a cubin for `target.chip` with ptxas
/// (`target.ptxasPath`, else $CUDA_HOME/bin/ptxas, else PATH, else
/// /usr/local/cuda/bin/ptxas).
Status assembleCubin(std::string_view ptx, const TargetOptions &target,
                     std::vector<uint8_t> &cubin);

} // namespace norm

#endif // NORM_COMPILER_COMPILER_H
