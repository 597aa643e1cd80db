//===- AttentionHarness.h - attention kernels on the host path --*- C++ -*-===//
//
// What the prefill and decode kernel tests share beyond the case runners
// (tools/norm-cpu-check/AttentionCheck.h, shared with norm-cpu-check): the
// engine the environment selects, the host execution path or the PTX on
// GPGPU-Sim (test/Host/ptxsim-attention-*.test).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_UNIT_ATTENTIONHARNESS_H
#define NORM_TEST_UNIT_ATTENTIONHARNESS_H

#include "tools/norm-cpu-check/AttentionCheck.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace norm::check {

/// By default the kernel IR on the host execution path (compileForHost);
/// with NORM_TEST_ENGINE=ptxsim the PTX for NORM_TEST_CHIP (sm_80 unless
/// set) on the simulator in $NORM_PTXSIM, which steps its warps in a random
/// order with NORM_TEST_WARP_SHUFFLE=SEED and lands cp.async bytes at
/// their wait with NORM_TEST_CP_ASYNC_DEFER=1.
inline Status getEngineFromEnvironment(AttentionEngine &engine) {
  engine = AttentionEngine();
  const char *name = std::getenv("NORM_TEST_ENGINE");
  if (!name || std::string(name) == "host")
    return Status::success();
  if (std::string(name) != "ptxsim")
    return Status::invalid("NORM_TEST_ENGINE: unknown engine '" +
                           std::string(name) + "'");
  // Only $NORM_PTXSIM, which lit sets where it found the simulator.
  const char *root = std::getenv("NORM_PTXSIM");
  engine.simulator.root = root && *root ? findPtxsim(/*sourceDir=*/"") : "";
  if (engine.simulator.root.empty())
    return Status::invalid("NORM_TEST_ENGINE=ptxsim: $NORM_PTXSIM does not "
                           "hold bin/ptxsim-run");
  if (const char *seed = std::getenv("NORM_TEST_WARP_SHUFFLE"))
    engine.simulator.warpShuffle = std::strtoul(seed, nullptr, 10);
  if (const char *defer = std::getenv("NORM_TEST_CP_ASYNC_DEFER"))
    engine.simulator.cpAsyncDefer = std::string(defer) == "1";
  const char *chip = std::getenv("NORM_TEST_CHIP");
  engine.target.chip = chip ? chip : "sm_80";
  // The simulator's configuration holds 164 KiB of shared memory.
  engine.target.maxSharedBytes =
      std::min<int64_t>(engine.target.getMaxSharedBytes(), 160 * 1024);
  return engine.target.verify();
}

} // namespace norm::check

#endif // NORM_TEST_UNIT_ATTENTIONHARNESS_H
