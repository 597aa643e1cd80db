//===- KernelStore.h - kernels from bundles, disk or the compiler -*- C++
//-*-===//
//
// Where the bytes of a kernel come from, in order: the kernel bundles the
// context was given, the disk cache, the compiler (whose result then goes to
// the disk cache). Also the persistent part of tuning: plans from bundles and
// tuning results on disk. No device is needed here, so tools measure compile
// and cache times on machines without a GPU.
//
// Cache keys hold the full text of what an entry depends on; file names hash
// it (DiskCache.h):
//   kernel: the canonical operation, the launch configuration, the target
//           (chip, PTX version and, for kernels whose rows leave registers,
//           the shared memory of a CTA) and the compiler version. A cubin
//           inside the entry is tagged with the driver version and compute
//           capability that linked it and used only where both match;
//           elsewhere the PTX is linked again, so a driver update keeps the
//           compiled PTX.
//   tuning: the canonical operation, the row bucket, the device (name,
//           compute capability, SM count), the driver version, the compiler
//           version and kTunerVersion.
//   plan:   (bundles) the canonical operation and the chip.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_KERNELSTORE_H
#define NORM_RUNTIME_KERNELSTORE_H

#include "runtime/Bundle.h"
#include "runtime/Candidates.h"
#include "runtime/DiskCache.h"
#include "runtime/KernelCompiler.h"
#include "runtime/Log.h"

#include <array>
#include <memory>
#include <optional>
#include <vector>

namespace norm::jit {

/// Changes when the candidate set or the timing method changes, so that old
/// tuning results are not reused.
constexpr int kTunerVersion = 1;

std::string getKernelKey(const OpSpec &spec, const LaunchConfig &launch,
                         const TargetOptions &target,
                         std::string_view compilerVersion);
std::string getTuningKey(const OpSpec &spec, RowBucket bucket,
                         std::string_view device, int driverVersion,
                         std::string_view compilerVersion);
std::string getPlanKey(const OpSpec &spec, std::string_view chip);

/// One compiled kernel variant.
struct KernelBinary {
  enum class Origin { Bundle, DiskCache, Compiled };
  KernelSignature signature;
  std::string ptx;
  std::string cubin; // empty unless linked for this driver and device
  Origin origin = Origin::Compiled;
};

/// A kernel variant as a cache entry, and back.
CacheEntry makeKernelEntry(const KernelBinary &binary,
                           std::string_view cubinTag);
/// False with `why` when sections are missing or the signature is malformed.
bool readKernelEntry(const CacheEntry &entry, std::string_view cubinTag,
                     KernelBinary &binary, std::string &why);

/// The launch configuration per row bucket, as bundles store it.
using LaunchPlan = std::array<LaunchConfig, kNumRowBuckets>;
CacheEntry makePlanEntry(const OpSpec &spec, const LaunchPlan &plan);
std::optional<LaunchPlan> readPlanEntry(const CacheEntry &entry);

struct KernelStoreOptions {
  std::shared_ptr<KernelCompiler> compiler; // null: bundles only
  std::string cacheDirectory;               // empty: no disk cache
  std::vector<std::shared_ptr<const Bundle>> bundles;
  TargetOptions target;
};

class KernelStore {
public:
  KernelStore(KernelStoreOptions options, const Logger &log);

  /// The PTX, signature and (where `cubinTag` matches) cubin of one kernel
  /// variant. NotFound when no bundle has it and there is no compiler.
  /// Every signature is checked against `spec` and `launch`
  /// (checkSignatureFor): a bundle's that does not match is refused
  /// (IoError), a disk entry's is deleted and compiled again, the
  /// compiler's is an Internal error.
  Status getKernel(const OpSpec &spec, const LaunchConfig &launch,
                   std::string_view cubinTag, KernelBinary &binary) const;
  /// Adds the cubin the driver linked for this device to the disk entry.
  void storeCubin(const OpSpec &spec, const LaunchConfig &launch,
                  const KernelBinary &binary, std::string_view cubinTag) const;
  /// Forgets a disk entry whose contents the driver rejected.
  void discardKernel(const OpSpec &spec, const LaunchConfig &launch) const;

  /// The plan of the first bundle that has one for the operation (none:
  /// success, `plan` empty). IoError for a plan that is malformed or whose
  /// configurations do not fit the operation's rows.
  Status findPlan(const OpSpec &spec, std::optional<LaunchPlan> &plan) const;

  struct TuningRecord {
    LaunchConfig winner;
    std::string report;
  };
  /// The cached tuning result of a bucket; nullopt (and the entry deleted)
  /// when it is malformed or its winner does not fit the operation's rows.
  std::optional<TuningRecord> loadTuning(const OpSpec &spec, RowBucket bucket,
                                         std::string_view device,
                                         int driverVersion) const;
  void storeTuning(const OpSpec &spec, RowBucket bucket,
                   std::string_view device, int driverVersion,
                   const TuningRecord &record) const;

  KernelCompiler *getCompiler() const { return compiler.get(); }
  const std::string &getCompilerVersion() const { return compilerVersion; }
  const TargetOptions &getTarget() const { return target; }
  const std::vector<std::shared_ptr<const Bundle>> &getBundles() const {
    return bundles;
  }
  bool hasDiskCache() const { return disk.has_value(); }

private:
  std::shared_ptr<KernelCompiler> compiler;
  std::string compilerVersion;
  std::optional<DiskCache> disk;
  std::vector<std::shared_ptr<const Bundle>> bundles;
  TargetOptions target;
  const Logger &log;
};

/// `specs` and, after each backward row kernel, the column sums its
/// launches run (getGradientSums): what a bundle of them must hold.
std::vector<OpSpec> withGradientSums(const std::vector<OpSpec> &specs);

/// Writes a bundle without a device: the heuristic's plan for every
/// operation and the PTX of the kernels it uses (linked by the driver where
/// the bundle is used). For building deployment bundles where there is no
/// GPU; norm-tune on a GPU writes tuned bundles with cubins.
Status writeHeuristicBundle(const KernelStore &store,
                            const std::vector<OpSpec> &specs,
                            const std::string &path);

} // namespace norm::jit

#endif // NORM_RUNTIME_KERNELSTORE_H
