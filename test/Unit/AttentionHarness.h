//===- AttentionHarness.h - attention kernels on the host path --*- C++ -*-===//
//
// What the prefill and decode kernel tests share: the operation of a case
// (makeAttentionSpec, shared with norm-cpu-check), its launch with forced
// fields, and the kernel generated and run on the host execution path or,
// as the environment selects, its PTX run on GPGPU-Sim
// (test/Host/ptxsim-attention.test).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_UNIT_ATTENTIONHARNESS_H
#define NORM_TEST_UNIT_ATTENTIONHARNESS_H

#include "compiler/Compiler.h"
#include "compiler/HostExecution.h"
#include "compiler/model/KernelModel.h"
#include "tools/norm-cpu-check/AttentionSpec.h"
#include "tools/norm-cpu-check/KernelSource.h"
#include "tools/norm-cpu-check/Ptxsim.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace norm::check {

/// The heuristic's launch with `warps`, `blockN`, `stages` and the row
/// tiles of a warp (16 query rows each) forced where they are not 0; the
/// heuristic's rows a warp where the rest leaves room (fitAttentionRows).
inline LaunchConfig getForcedLaunch(const OpSpec &spec, int64_t warps,
                                    int64_t blockN, int64_t stages,
                                    int64_t rowTiles = 0) {
  LaunchConfig launch = getHeuristicLaunch(spec, -1);
  int64_t heuristicTiles = launch.getRowTiles();
  if (warps)
    launch.warps = warps;
  if (blockN)
    launch.blockN = blockN;
  if (stages)
    launch.stages = stages;
  if (rowTiles) {
    launch.rowsPerCta = 16 * rowTiles * launch.warps;
    return launch;
  }
  return fitAttentionRows(spec, launch, heuristicTiles, /*maxSharedBytes=*/0);
}

/// The generated kernel of `spec` and `launch`, compiled for the baseline
/// x86-64 CPU (results must not depend on this machine's) at -O0: compiling
/// the unrolled fragment code at -O2 takes ten times longer than running
/// it.
inline Status compileForHost(const OpSpec &spec, const LaunchConfig &launch,
                             KernelSource &source,
                             std::unique_ptr<HostKernels> &kernels) {
  std::unique_ptr<KernelProvider> provider = createGeneratedKernels();
  if (Status built = provider->build(spec, launch, source); !built)
    return built;
  HostCompileOptions options;
  options.cpu = "x86-64";
  options.optLevel = 0;
  return HostKernels::compile(source.mlir, options, kernels);
}

/// A case's kernel where the environment runs it: by default the kernel IR
/// on the host execution path (compileForHost); with
/// NORM_TEST_ENGINE=ptxsim the PTX for NORM_TEST_CHIP (sm_80 unless set)
/// on the simulator in $NORM_PTXSIM, which steps its warps in a random
/// order with NORM_TEST_WARP_SHUFFLE=SEED and lands cp.async bytes at
/// their wait with NORM_TEST_CP_ASYNC_DEFER=1. The simulator copies each
/// buffer in and out: read-only inputs may share an allocation (a packed
/// projection's column slices), outputs may not.
class AttentionRunner {
public:
  Status compile(const OpSpec &spec, const LaunchConfig &launch) {
    const char *engine = std::getenv("NORM_TEST_ENGINE");
    if (!engine || std::string(engine) == "host")
      return compileForHost(spec, launch, source, host);
    if (std::string(engine) != "ptxsim")
      return Status::invalid("NORM_TEST_ENGINE: unknown engine '" +
                             std::string(engine) + "'");
    // Only $NORM_PTXSIM, which lit sets where it found the simulator.
    const char *root = std::getenv("NORM_PTXSIM");
    simulator.root = root && *root ? findPtxsim(/*sourceDir=*/"") : "";
    if (simulator.root.empty())
      return Status::invalid("NORM_TEST_ENGINE=ptxsim: $NORM_PTXSIM does "
                             "not hold bin/ptxsim-run");
    if (const char *seed = std::getenv("NORM_TEST_WARP_SHUFFLE"))
      simulator.warpShuffle = std::strtoul(seed, nullptr, 10);
    if (const char *defer = std::getenv("NORM_TEST_CP_ASYNC_DEFER"))
      simulator.cpAsyncDefer = std::string(defer) == "1";
    TargetOptions target;
    const char *chip = std::getenv("NORM_TEST_CHIP");
    target.chip = chip ? chip : "sm_80";
    // The simulator's configuration holds 164 KiB of shared memory.
    target.maxSharedBytes =
        std::min<int64_t>(target.getMaxSharedBytes(), 160 * 1024);
    if (Status valid = target.verify(); !valid)
      return valid;
    CompiledKernel compiled;
    if (Status built = compileKernel(spec, launch, target, compiled); !built)
      return built;
    source.signature = compiled.signature;
    ptx = std::move(compiled.ptx);
    return Status::success();
  }

  const KernelSignature &getSignature() const { return source.signature; }

  /// Launches `gridX` CTAs of the kernel with its buffers (in parameter
  /// order) and integer parameters.
  Status launch(const std::vector<SimBuffer> &buffers,
                const std::vector<int64_t> &integers, int64_t gridX) {
    if (!host)
      return runOnPtxsim(simulator, ptx, source.signature, buffers, integers,
                         gridX);
    std::vector<void *> pointers;
    for (const SimBuffer &buffer : buffers)
      pointers.push_back(buffer.data);
    return host->launch(source.signature.name, pointers, integers, gridX);
  }

private:
  KernelSource source;
  std::unique_ptr<HostKernels> host;
  std::string ptx;
  PtxsimOptions simulator;
};

/// Llama 3's scaled rotary frequency of pair `pair` (factor 8, low and high
/// frequency factors 1 and 4, an original context of 8192: the rope_scaling
/// of Llama 3.1's config), which only a table can give the kernel.
inline double getLlama3Frequency(double theta, int64_t rotaryDim,
                                 int64_t pair) {
  constexpr double kFactor = 8, kLow = 1, kHigh = 4, kContext = 8192;
  constexpr double kPi = 3.141592653589793;
  double frequency = getRopeFrequency(theta, rotaryDim, pair);
  double wavelength = 2 * kPi / frequency;
  if (wavelength < kContext / kHigh)
    return frequency;
  if (wavelength > kContext / kLow)
    return frequency / kFactor;
  double smooth = (kContext / wavelength - kLow) / (kHigh - kLow);
  return (1 - smooth) * frequency / kFactor + smooth * frequency;
}

/// A rope table of `rows` positions (FlashInfer's cos_sin_cache layout:
/// row p holds cos(p f_i), then sin(p f_i), rounded to f32), row-major with
/// `stride` floats from row to row.
inline std::vector<float> makeRopeTable(double theta, int64_t rotaryDim,
                                        int64_t rows, int64_t stride) {
  int64_t half = rotaryDim / 2;
  std::vector<float> table(rows * stride, 0.0f);
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double angle =
          static_cast<double>(p) * getLlama3Frequency(theta, rotaryDim, i);
      table[p * stride + i] = static_cast<float>(std::cos(angle));
      table[p * stride + half + i] = static_cast<float>(std::sin(angle));
    }
  return table;
}

} // namespace norm::check

#endif // NORM_TEST_UNIT_ATTENTIONHARNESS_H
