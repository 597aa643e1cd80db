//===- Ptxsim.h - the generated PTX run on GPGPU-Sim ------------*- C++ -*-===//
//
// norm-cpu-check's second engine: instead of the kernel IR JIT-compiled for
// the host, the PTX that the NVVM lowering writes for the GPU runs on
// ptxsim (GPGPU-Sim, patched for the project's instructions; see
// ../shared/tools/ptxsim/README.md) with the same guarded, poisoned buffers
// and the same float64 checks. What the simulator cannot show: approximate
// functions (rsqrt.approx, ex2.approx) are computed exactly, griddepcontrol
// is a no-op, and one launch runs at a time.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMCPUCHECK_PTXSIM_H
#define NORM_TOOLS_NORMCPUCHECK_PTXSIM_H

#include "compiler/model/KernelModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace norm::check {

/// One buffer argument of a simulated launch: `bytes` bytes at `data`,
/// copied in before and back after the launch, or the same device pointer
/// as buffer argument `aliasOf` (in place).
struct SimBuffer {
  void *data = nullptr;
  int64_t bytes = 0;
  int aliasOf = -1;
};

struct PtxsimOptions {
  /// The ptxsim folder (bin/ptxsim-run inside).
  std::string root;
  /// Seeded random warp order (0: in order), cp.async landing at its wait.
  unsigned warpShuffle = 0;
  bool cpAsyncDefer = false;
};

/// `ptx` with the instructions GPGPU-Sim gets wrong replaced by sequences
/// it gets right and that compute the same bits: cvt.rn.f16x2.f32 (halves
/// swapped, upper zeroed), {add,sub,mul}.rn.f16x2 (upper zeroed) and
/// cvt.rn.f32.{u64,s64} (0; replaced exactly up to 2^53). Each found with
/// a one-instruction kernel. `trap`, which GPGPU-Sim cannot even analyse
/// (a kernel that holds one fails to launch), becomes a misaligned
/// ldmatrix: an error GPGPU-Sim reports when, and only when, it runs.
std::string rewriteForPtxsim(const std::string &ptx);

/// The ptxsim folder: $NORM_PTXSIM, else ../shared/tools/ptxsim beside the
/// source tree; empty when neither holds bin/ptxsim-run.
std::string findPtxsim(const std::string &sourceDir);

/// Launches kernel `signature` of `ptx` on `gridX` CTAs on the simulator:
/// its buffers (in parameter order) from `buffers`, its integer parameters
/// from `integers`; the buffers' bytes are the kernel's results after.
Status runOnPtxsim(const PtxsimOptions &options, const std::string &ptx,
                   const KernelSignature &signature,
                   const std::vector<SimBuffer> &buffers,
                   const std::vector<int64_t> &integers, int64_t gridX);

} // namespace norm::check

#endif // NORM_TOOLS_NORMCPUCHECK_PTXSIM_H
