//===- KernelStore.cpp - kernels from bundles, disk or the compiler -------===//

#include "runtime/KernelStore.h"

#include "runtime/Candidates.h"

#include "compiler/model/KernelModel.h"
#include "runtime/SignatureCheck.h"

#include <chrono>
#include <cstdio>
#include <sstream>

using namespace norm;
using namespace norm::jit;

static constexpr const char *kKernelKind = "kernel";
static constexpr const char *kTuningKind = "tuning";

std::string norm::jit::getKernelKey(const OpSpec &spec,
                                    const LaunchConfig &launch,
                                    const TargetOptions &target,
                                    std::string_view compilerVersion) {
  std::ostringstream os;
  os << "normjit kernel\nop: " << getCanonicalSpec(spec)
     << "\nlaunch: " << launch.getMangledSuffix() << "\nchip: " << target.chip;
  // Rows kept out of registers are staged in shared memory where it holds
  // them: only those kernels depend on it, so that the others stay the same
  // on every device of a chip (bundles).
  if (!isFusedRow(spec) || !fitsInRegisters(spec, launch))
    os << "\nshared: " << target.getMaxSharedBytes();
  os << "\nptx: " << target.ptxVersion << "\ncompiler: " << compilerVersion;
  // Only where set: the other kernels keep their keys.
  if (target.pdl)
    os << "\npdl: 1";
  return os.str();
}

std::string norm::jit::getTuningKey(const OpSpec &spec, RowBucket bucket,
                                    std::string_view device, int driverVersion,
                                    std::string_view compilerVersion) {
  std::ostringstream os;
  os << "normjit tuning\nop: " << getCanonicalSpec(spec)
     << "\nbucket: " << getRowBucketName(bucket) << "\ndevice: " << device
     << "\ndriver: " << driverVersion << "\ncompiler: " << compilerVersion
     << "\ntuner: " << kTunerVersion;
  return os.str();
}

std::string norm::jit::getPlanKey(const OpSpec &spec, std::string_view chip) {
  return "normjit plan\nop: " + getCanonicalSpec(spec) +
         "\nchip: " + std::string(chip);
}

CacheEntry norm::jit::makeKernelEntry(const KernelBinary &binary,
                                      std::string_view cubinTag) {
  CacheEntry entry;
  entry.add("signature", binary.signature.toJson());
  entry.add("ptx", binary.ptx);
  if (!binary.cubin.empty() && !cubinTag.empty()) {
    entry.add("cubin", binary.cubin);
    entry.add("cubin_tag", std::string(cubinTag));
  }
  return entry;
}

bool norm::jit::readKernelEntry(const CacheEntry &entry,
                                std::string_view cubinTag, KernelBinary &binary,
                                std::string &why) {
  const std::string *signature = entry.find("signature");
  const std::string *ptx = entry.find("ptx");
  if (!signature || !ptx || ptx->empty()) {
    why = "kernel entry lacks its signature or PTX";
    return false;
  }
  std::optional<KernelSignature> parsed =
      KernelSignature::fromJson(*signature, why);
  if (!parsed)
    return false;
  binary.signature = std::move(*parsed);
  binary.ptx = *ptx;
  binary.cubin.clear();
  const std::string *cubin = entry.find("cubin");
  const std::string *tag = entry.find("cubin_tag");
  if (cubin && tag && !cubinTag.empty() && *tag == cubinTag)
    binary.cubin = *cubin;
  return true;
}

CacheEntry norm::jit::makePlanEntry(const OpSpec &spec,
                                    const LaunchPlan &plan) {
  CacheEntry entry;
  entry.add("op", getCanonicalSpec(spec));
  for (RowBucket bucket : kAllRowBuckets)
    entry.add(std::string(getRowBucketName(bucket)),
              plan[static_cast<int>(bucket)].getMangledSuffix());
  return entry;
}

std::optional<LaunchPlan> norm::jit::readPlanEntry(const CacheEntry &entry) {
  LaunchPlan plan;
  for (RowBucket bucket : kAllRowBuckets) {
    const std::string *text = entry.find(getRowBucketName(bucket));
    std::optional<LaunchConfig> launch =
        text ? parseLaunchSuffix(*text) : std::nullopt;
    if (!launch)
      return std::nullopt;
    plan[static_cast<int>(bucket)] = *launch;
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// KernelStore
//===----------------------------------------------------------------------===//

KernelStore::KernelStore(KernelStoreOptions options, const Logger &log)
    : compiler(std::move(options.compiler)),
      bundles(std::move(options.bundles)), target(std::move(options.target)),
      log(log) {
  if (compiler)
    compilerVersion = compiler->getVersion();
  // Disk entries are keyed by the compiler version: without a compiler there
  // is nothing to key them by, and nothing to write.
  if (compiler && !options.cacheDirectory.empty())
    disk.emplace(std::move(options.cacheDirectory));
}

Status KernelStore::getKernel(const OpSpec &spec, const LaunchConfig &launch,
                              std::string_view cubinTag,
                              KernelBinary &binary) const {
  std::string what = describeOpSpec(spec) + " " + launch.getMangledSuffix();
  for (const auto &bundle : bundles) {
    std::string key =
        getKernelKey(spec, launch, target, bundle->getInfo().compilerVersion);
    const CacheEntry *entry = bundle->find(key);
    if (!entry)
      continue;
    std::string why;
    if (!readKernelEntry(*entry, cubinTag, binary, why))
      return Status::error(ErrorCode::IoError, "kernel bundle '" +
                                                   bundle->getPath() +
                                                   "': " + what + ": " + why);
    if (Status status =
            checkSignatureFor(binary.signature, spec, launch, target);
        !status)
      return Status::error(ErrorCode::IoError,
                           "kernel bundle '" + bundle->getPath() +
                               "' is refused: " + status.message());
    binary.origin = KernelBinary::Origin::Bundle;
    log.log(LogLevel::Debug,
            "kernel " + what + ": from bundle " + bundle->getPath());
    return Status::success();
  }

  if (!compiler)
    return Status::error(
        ErrorCode::NotFound,
        "kernel " + what +
            " is in no kernel bundle, and this libnormjit has no compiler "
            "(a runtime-only build): add it to a bundle with norm-tune");

  std::string key = getKernelKey(spec, launch, target, compilerVersion);
  if (disk) {
    CacheEntry entry;
    std::string why;
    switch (disk->load(kKernelKind, key, entry, why)) {
    case DiskCache::Lookup::Hit:
      if (readKernelEntry(entry, cubinTag, binary, why)) {
        Status status =
            checkSignatureFor(binary.signature, spec, launch, target);
        if (status.ok()) {
          binary.origin = KernelBinary::Origin::DiskCache;
          log.log(LogLevel::Debug, "kernel " + what + ": disk cache hit" +
                                       (binary.cubin.empty() ? " (PTX)" : ""));
          return Status::success();
        }
        why = status.message();
      }
      disk->remove(kKernelKind, key);
      log.log(LogLevel::Warning,
              "discarded a bad disk cache entry for " + what + ": " + why);
      break;
    case DiskCache::Lookup::Rejected:
      log.log(LogLevel::Warning,
              "discarded a bad disk cache entry for " + what + ": " + why);
      break;
    case DiskCache::Lookup::Miss:
      log.log(LogLevel::Debug, "kernel " + what + ": disk cache miss");
      break;
    }
  }

  auto start = std::chrono::steady_clock::now();
  CompiledKernel compiled;
  if (Status compiledStatus = compiler->compile(spec, launch, target, compiled);
      !compiledStatus)
    return compiledStatus.withContext("cannot compile " + what);
  if (compiled.ptx.empty())
    return Status::error(ErrorCode::Internal,
                         "the compiler returned no PTX for " + what);
  if (Status status =
          checkSignatureFor(compiled.signature, spec, launch, target);
      !status)
    return status.withContext("the compiler returned another kernel than "
                              "asked for");
  if (log.isEnabled(LogLevel::Info)) {
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.1f ms",
                  std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count());
    log.log(LogLevel::Info, "compiled " + what + " in " + ms);
  }
  binary.signature = std::move(compiled.signature);
  binary.ptx = std::move(compiled.ptx);
  binary.cubin.clear();
  binary.origin = KernelBinary::Origin::Compiled;
  if (disk)
    if (Status status =
            disk->store(kKernelKind, key, makeKernelEntry(binary, {}));
        !status)
      log.log(LogLevel::Warning,
              "cannot write the disk cache: " + status.message());
  return Status::success();
}

void KernelStore::storeCubin(const OpSpec &spec, const LaunchConfig &launch,
                             const KernelBinary &binary,
                             std::string_view cubinTag) const {
  if (!disk || binary.origin == KernelBinary::Origin::Bundle)
    return;
  std::string key = getKernelKey(spec, launch, target, compilerVersion);
  if (Status status =
          disk->store(kKernelKind, key, makeKernelEntry(binary, cubinTag));
      !status)
    log.log(LogLevel::Warning,
            "cannot write the disk cache: " + status.message());
}

void KernelStore::discardKernel(const OpSpec &spec,
                                const LaunchConfig &launch) const {
  if (disk)
    disk->remove(kKernelKind,
                 getKernelKey(spec, launch, target, compilerVersion));
}

Status KernelStore::findPlan(const OpSpec &spec,
                             std::optional<LaunchPlan> &plan) const {
  plan.reset();
  std::string key = getPlanKey(spec, target.chip);
  for (const auto &bundle : bundles) {
    const CacheEntry *entry = bundle->find(key);
    if (!entry)
      continue;
    auto refuse = [&](const std::string &why) {
      return Status::error(ErrorCode::IoError,
                           "kernel bundle '" + bundle->getPath() +
                               "' is refused: its plan for " +
                               describeOpSpec(spec) + " " + why);
    };
    std::optional<LaunchPlan> read = readPlanEntry(*entry);
    if (!read)
      return refuse("is malformed");
    for (RowBucket bucket : kAllRowBuckets) {
      const LaunchConfig &launch = (*read)[static_cast<int>(bucket)];
      if (!verifyLaunchFor(spec, launch))
        return refuse("runs " + launch.getMangledSuffix() + " for rows " +
                      std::string(getRowBucketName(bucket)) +
                      ", which does not fit its rows");
    }
    plan = read;
    return Status::success();
  }
  return Status::success();
}

std::optional<KernelStore::TuningRecord>
KernelStore::loadTuning(const OpSpec &spec, RowBucket bucket,
                        std::string_view device, int driverVersion) const {
  if (!disk)
    return std::nullopt;
  std::string key =
      getTuningKey(spec, bucket, device, driverVersion, compilerVersion);
  CacheEntry entry;
  std::string why;
  DiskCache::Lookup lookup = disk->load(kTuningKind, key, entry, why);
  if (lookup == DiskCache::Lookup::Rejected)
    log.log(LogLevel::Warning, "discarded a bad tuning cache entry: " + why);
  if (lookup != DiskCache::Lookup::Hit)
    return std::nullopt;
  const std::string *winner = entry.find("winner");
  const std::string *report = entry.find("report");
  std::optional<LaunchConfig> launch =
      winner ? parseLaunchSuffix(*winner) : std::nullopt;
  if (!launch || !report) {
    disk->remove(kTuningKind, key);
    log.log(LogLevel::Warning, "discarded a malformed tuning cache entry");
    return std::nullopt;
  }
  // A winner that cannot run these rows would fail every later process.
  if (!verifyLaunchFor(spec, *launch)) {
    disk->remove(kTuningKind, key);
    log.log(LogLevel::Warning,
            "discarded a tuning cache entry for " + describeOpSpec(spec) +
                " whose winner " + launch->getMangledSuffix() +
                " does not fit its rows");
    return std::nullopt;
  }
  return TuningRecord{*launch, *report};
}

void KernelStore::storeTuning(const OpSpec &spec, RowBucket bucket,
                              std::string_view device, int driverVersion,
                              const TuningRecord &record) const {
  if (!disk)
    return;
  CacheEntry entry;
  entry.add("winner", record.winner.getMangledSuffix());
  entry.add("report", record.report);
  std::string key =
      getTuningKey(spec, bucket, device, driverVersion, compilerVersion);
  if (Status status = disk->store(kTuningKind, key, entry); !status)
    log.log(LogLevel::Warning,
            "cannot write the tuning cache: " + status.message());
}

std::vector<OpSpec>
norm::jit::withGradientSums(const std::vector<OpSpec> &specs) {
  std::vector<OpSpec> all;
  for (const OpSpec &spec : specs) {
    all.push_back(spec);
    if (spec.backward)
      for (const GradientSum &sum : getGradientSums(spec))
        all.push_back(sum.columnSum);
  }
  return all;
}

Status norm::jit::writeHeuristicBundle(const KernelStore &store,
                                       const std::vector<OpSpec> &specs,
                                       const std::string &path) {
  KernelCompiler *compiler = store.getCompiler();
  if (!compiler)
    return Status::error(ErrorCode::Unsupported,
                         "writing kernel bundles needs the compiler");
  const TargetOptions &target = store.getTarget();
  BundleWriter writer({store.getCompilerVersion(), target.chip, ""});
  for (const OpSpec &original : withGradientSums(specs)) {
    if (Status status =
            verifyOpSpec(original).withContext(getOpKindName(original.kind));
        !status)
      return status;
    OpSpec spec = normalizeOpSpec(original);
    LaunchPlan plan;
    std::vector<LaunchConfig> launches;
    for (RowBucket bucket : kAllRowBuckets) {
      LaunchConfig launch = getPlannedHeuristic(
          *compiler, spec, getTuningRows(spec, bucket), target);
      plan[static_cast<int>(bucket)] = launch;
      launches.push_back(launch);
      if (std::optional<LaunchConfig> scalar = getScalarFallback(spec, launch))
        launches.push_back(*scalar);
    }
    for (const LaunchConfig &launch : launches) {
      KernelBinary binary;
      if (Status status = store.getKernel(spec, launch, {}, binary); !status)
        return status;
      writer.add(getKernelKey(spec, launch, target, store.getCompilerVersion()),
                 makeKernelEntry(binary, {}));
    }
    writer.add(getPlanKey(spec, target.chip), makePlanEntry(spec, plan));
  }
  return writer.write(path);
}
