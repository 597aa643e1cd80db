//===- AttentionCheck.h - attention kernels run and checked -----*- C++ -*-===//
//
// One prefill or decode attention case from start to verdict, as the unit
// tests (AttentionKernelTests, AttentionDecodeTests) and norm-cpu-check's
// attention variants run it: the generated kernel compiled for the host
// execution path or its PTX for the simulator, guarded and poisoned
// buffers (prefill: separate or packed q/k/v, keys prepared first by the
// K-prepare kernel when asked; decode: KV caches appended to), a launch,
// and the float64 reference of the unfused graph at its propagated bound.
// Stray writes, changed inputs (and cache rows outside the appended ones)
// and NaN left in outputs fail a case.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMCPUCHECK_ATTENTIONCHECK_H
#define NORM_TOOLS_NORMCPUCHECK_ATTENTIONCHECK_H

#include "compiler/HostExecution.h"
#include "compiler/model/KernelModel.h"
#include "tools/norm-cpu-check/AttentionSpec.h"
#include "tools/norm-cpu-check/KernelSource.h"
#include "tools/norm-cpu-check/Ptxsim.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace norm::check {

/// Where attention kernels run: their kernel IR on the host execution path
/// (compileForHost), or, where `simulator.root` is set, their PTX for
/// `target` on the simulator.
struct AttentionEngine {
  PtxsimOptions simulator;
  TargetOptions target;
};

/// The heuristic's launch with `warps`, `blockN`, `stages` and the row
/// tiles of a warp (16 query rows each) forced where they are not 0; the
/// heuristic's rows where the rest leaves room (fitAttentionRows).
LaunchConfig getForcedLaunch(const OpSpec &spec, int64_t warps, int64_t blockN,
                             int64_t stages, int64_t rowTiles = 0);

/// The generated kernel of `spec` and `launch`, compiled for the baseline
/// x86-64 CPU (results must not depend on this machine's) at -O0: compiling
/// the unrolled fragment code at -O2 takes ten times longer than running
/// it.
/// The sm_90a family's launch of `warpgroups` consumer warpgroups.
LaunchConfig getWarpgroupLaunch(const OpSpec &spec, int64_t warpgroups,
                                int64_t blockN, int64_t stages, bool overlap);

Status compileForHost(const OpSpec &spec, const LaunchConfig &launch,
                      KernelSource &source,
                      std::unique_ptr<HostKernels> &kernels,
                      const TargetOptions &target = TargetOptions());

/// A kernel compiled for an engine and launched there. The simulator
/// copies each buffer in and out: read-only inputs may share an allocation
/// (a packed projection's column slices), outputs may not.
class AttentionRunner {
public:
  explicit AttentionRunner(AttentionEngine engine)
      : engine(std::move(engine)) {}

  Status compile(const OpSpec &spec, const LaunchConfig &launch);
  const KernelSignature &getSignature() const { return source.signature; }
  /// Launches `gridX` CTAs of the kernel with its buffers (in parameter
  /// order) and integer parameters.
  Status launch(const std::vector<SimBuffer> &buffers,
                const std::vector<int64_t> &integers, int64_t gridX);

private:
  AttentionEngine engine;
  KernelSource source;
  std::unique_ptr<HostKernels> host;
  std::string ptx;
};

/// Llama 3's scaled rotary frequency of pair `pair` (factor 8, low and high
/// frequency factors 1 and 4, an original context of 8192: the rope_scaling
/// of Llama 3.1's config), which only a table can give the kernel.
double getLlama3Frequency(double theta, int64_t rotaryDim, int64_t pair);

/// A rope table of `rows` positions (FlashInfer's cos_sin_cache layout:
/// row p holds cos(p f_i), then sin(p f_i), rounded to f32), row-major with
/// `stride` floats from row to row.
std::vector<float> makeRopeTable(double theta, int64_t rotaryDim, int64_t rows,
                                 int64_t stride);

/// A prefill case: a varlen batch of `lengths` (empty sequences allowed).
struct AttentionCase {
  const char *name;
  ElementType type;
  int64_t headDim, heads, kvHeads;
  bool causal;
  Statistic norm; // None: no QK-Norm
  bool weights;
  double offset;
  std::vector<int64_t> lengths;
  bool packed = false; // q, k, v are column slices of one qkv buffer
  bool lse = false;
  // 0: the heuristic's.
  int64_t warps = 0, blockN = 0, stages = 0;
  RopeStyle rope = RopeStyle::None;
  int64_t rotaryDim = 0; // 0: the head dim
  double ropeTheta = 1e4;
  // The angles from a (Llama 3 scaled) table of theta's frequencies; the
  // positions from a buffer (a start per sequence, the second and later
  // sequences' in reverse); the last token of each sequence outside the
  // table (causal cases: only its own output may turn NaN).
  bool table = false, positions = false, badPositions = false;
  // Rotate, then normalize (Llama 4).
  bool ropeFirst = false;
  // A QK-Norm weight row per head (Command R+).
  bool weightPerHead = false;
  // The keys normalized and rotated once by the K-prepare kernel
  // (getKeyPrepareSpec), then read as they are (OpSpec::keysPrepared).
  bool preparedKeys = false;
  // Query rows a warp in tiles of 16 (0: the heuristic's).
  int64_t rowTiles = 0;
  // The sm_90a family (LaunchConfig::warpgroups; 0: mma.sync), compiled
  // for sm_90a, with `blockN`/`stages` (0: 128 and 2) and the softmax
  // overlapped with the next tile's Q K^T where asked.
  int64_t warpgroups = 0;
  bool overlap = false;
  // Adversarial inputs (separate q, k, v only): an outlier channel in q
  // and k, tiny query rows, spikes of 500 and constant rows in v.
  bool adversarial = false;
};

/// A decode step: `newTokens[b]` tokens of sequence b appended to its
/// caches of `cacheLengths[b]` rows (of `capacity`), the keys in `splits`
/// ranges.
struct DecodeCase {
  const char *name;
  ElementType type;
  int64_t headDim, heads, kvHeads;
  Statistic norm; // None: no QK-Norm
  bool weights;
  double offset;
  RopeStyle rope;
  int64_t rotaryDim; // 0: the head dim
  double ropeTheta;
  std::vector<int64_t> cacheLengths, newTokens;
  int64_t capacity, splits;
  // 0: the heuristic's.
  int64_t warps = 0, blockN = 0, stages = 0;
  // The angles from a (Llama 3 scaled) table of theta's frequencies; the
  // positions from a buffer (each new token 5 past its cache position).
  bool table = false, positions = false;
  // Rotate, then normalize (Llama 4).
  bool ropeFirst = false;
  // A QK-Norm weight row per head (Command R+).
  bool weightPerHead = false;
  // The K-prepare kernel into the caches (OpSpec::writeCache) in place of
  // decode attention: the same appended rows, no attention.
  bool keysOnly = false;
  // A paged cache of pages of this many rows (OpSpec::cacheBlockSize; 0:
  // contiguous): the capacity rounded up to whole pages, every sequence's
  // pages shuffled among spare ones that no table holds, and some pages
  // that only the append would reach unset (-1) or past the cache, whose
  // rows must then stay as they are.
  int64_t blockSize = 0;
  // The paged table in FlashInfer's ragged form (OpSpec::pageIndptr): each
  // sequence's leading entries of the table above, every other one with
  // only the pages its cache fills (so that the append past them is
  // dropped), unused pages before the first and after the last.
  bool pageIndptr = false;
  // An FP8 (e4m3) cache with one scale, or one per kv head (OpSpec::
  // fp8Cache, cacheScalePerHead): a second kv head's scale is small
  // enough that new keys saturate.
  bool fp8Cache = false, scalePerHead = false;
};

OpSpec getSpec(const AttentionCase &c);
/// Decode attention, or K-prepare into the caches (keysOnly).
OpSpec getSpec(const DecodeCase &c);

/// A fault written after the kernel ran and before the checks, each of
/// which must fail the case (norm-cpu-check --inject): an output value
/// changed or left as the NaN poison, a byte in the guard after the output
/// or in the gap after its first row, the first input zeroed.
enum class AttentionFault { None, Value, Nan, Guard, Gap, Input };

/// What a case found.
struct AttentionResult {
  /// Empty: passed.
  std::vector<std::string> failures;
  /// Per element type, the largest |actual - expected| / tolerance.
  std::map<ElementType, double> worstRatio;
  /// The attention kernel's name, and how many kernels were compiled.
  std::string kernel;
  int64_t kernelsCompiled = 0;

  bool ok() const { return failures.empty(); }
  /// The failures, a line each.
  std::string getMessage() const;
};

AttentionResult runAttentionCase(const AttentionCase &c,
                                 const AttentionEngine &engine,
                                 AttentionFault fault = AttentionFault::None);
/// Also launches the kernel twice: the second launch must give the same
/// bits (the split combine is deterministic) and leave the semaphores zero.
/// With keysOnly the K-prepare kernel must append what decode appends and
/// write nothing else.
AttentionResult runDecodeCase(const DecodeCase &c,
                              const AttentionEngine &engine,
                              AttentionFault fault = AttentionFault::None);

} // namespace norm::check

#endif // NORM_TOOLS_NORMCPUCHECK_ATTENTIONCHECK_H
