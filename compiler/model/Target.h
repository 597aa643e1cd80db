//===- Target.h - the GPUs kernels are generated for ------------*- C++ -*-===//
//
// One table of the chips norm-opt generates kernels for and one struct for a
// target: the dialect's #norm.target attribute, the pipelines' options,
// libnormjit's contexts and the tools all describe a target with it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_TARGET_H
#define NORM_COMPILER_MODEL_TARGET_H

#include "compiler/model/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace norm {

/// What kernels depend on of a chip.
struct ChipInfo {
  std::string_view name;
  /// The opt-in maximum of shared memory per CTA of its compute capability.
  int64_t maxSharedBytesPerCta;
  /// Programmatic dependent launch (griddepcontrol, sm_90 on).
  bool hasGridDependencyControl;
  /// The first PTX version with cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 on
  /// the chip (7.8 on sm_90, 8.1 on sm_89), 0 for none (sm_80).
  int minFp8PtxVersion;
};

/// sm_80 (163 KiB per CTA), sm_89 (99 KiB), sm_90 and sm_90a (227 KiB);
/// null for another chip.
const ChipInfo *findChip(std::string_view chip);
/// "sm_80, sm_89, sm_90 or sm_90a", for messages.
std::string_view getKnownChips();

/// Every chip norm-opt knows has 64K 32-bit registers per SM, of which one
/// CTA may use all, and at most 255 per thread.
constexpr int64_t kRegistersPerCta = 65536;
constexpr int64_t kMaxRegistersPerThread = 255;

/// PTX ISA versions (x 10) the lowering emits: 7.8 is the first with sm_89
/// and sm_90, 9.0 the last CUDA 13's ptxas reads.
constexpr int kMinPtxVersion = 78;
constexpr int kMaxPtxVersion = 90;

/// The target of kernel generation.
struct TargetOptions {
  std::string chip = "sm_90";
  int ptxVersion = 80; // PTX ISA version x 10: 80 is PTX 8.0
  /// Shared memory one CTA may use, in bytes: rows too long for registers
  /// are staged in it where they fit, else streamed. 0: the chip's. A device
  /// may allow less than its PTX chip (sm_86 and sm_120 devices run sm_80
  /// and sm_90 PTX with 99 KiB); libnormjit passes its device's limit.
  int64_t maxSharedBytes = 0;
  /// Programmatic dependent launch (sm_90 on): each kernel loads what no
  /// kernel before it in the stream writes (its weights and parameters),
  /// then waits for the grid before it (`griddepcontrol.wait`, which
  /// returns at once for a launch without programmatic stream
  /// serialization) and lets the grid after it start
  /// (`griddepcontrol.launch_dependents`), whose own prologue then overlaps
  /// this grid's tail. Only the parameters (isParameterBuffer) load through
  /// the non-coherent cache then: the grid before may still write the other
  /// buffers while this one starts. Kernel names end in `_pdl`.
  bool pdl = false;

  /// Whether FP8 outputs round in hardware (ChipInfo::minFp8PtxVersion);
  /// elsewhere in integer code of the same result.
  bool hasFp8Conversions() const;
  /// maxSharedBytes, or the chip's when 0 (0 for an unknown chip).
  int64_t getMaxSharedBytes() const;
  /// A known chip, a PTX version in range, a shared-memory limit between 0
  /// and the chip's, and pdl only where the chip has griddepcontrol.
  Status verify() const;

  bool operator==(const TargetOptions &other) const {
    return chip == other.chip && ptxVersion == other.ptxVersion &&
           maxSharedBytes == other.maxSharedBytes && pdl == other.pdl;
  }
};

} // namespace norm

#endif // NORM_COMPILER_MODEL_TARGET_H
