//===- Context.cpp - libnormjit contexts and kernels ----------------------===//
//
// getKernel(spec) for a new operation:
//   1. plan: the launch configuration per row bucket, from a bundle, the
//      tuning cache, a tuning run or the heuristic;
//   2. load: every configuration the plan uses, and its scalar variant for
//      misaligned buffers, from bundles, the disk cache or the compiler
//      (several at once on compileThreads threads);
//   3. a Kernel: the loaded variants plus what launch() checks buffers
//      against.
// Each step is memoized in a OnceMap, so concurrent requests share work.
//
//===----------------------------------------------------------------------===//

#include "runtime/Runtime.h"

#include "runtime/Device.h"
#include "runtime/OnceMap.h"
#include "runtime/Tuner.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

using namespace norm::jit;

std::string DeviceInfo::getTuningIdentity() const {
  return name + " cc " + std::to_string(computeMajor) + "." +
         std::to_string(computeMinor) + " " + std::to_string(multiprocessors) +
         " SMs";
}

std::string_view BucketReport::getSourceName(Source source) {
  switch (source) {
  case Source::Tuned:
    return "tuned";
  case Source::TuningCache:
    return "tuning cache";
  case Source::Bundle:
    return "bundle";
  case Source::Heuristic:
    return "heuristic";
  case Source::Fixed:
    return "fixed";
  }
  return "?";
}

/// The PTX target for a compute capability: PTX for sm_90 also runs on newer
/// chips (the driver compiles it for them).
static std::string getChipFor(int major, int minor) {
  if (major >= 9)
    return "sm_90";
  if (major == 8 && minor >= 9)
    return "sm_89";
  return "sm_80";
}

static std::string formatMicroseconds(double us) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f us", us);
  return buffer;
}

namespace norm::jit {

class ContextImpl {
public:
  ContextImpl(const ContextOptions &options,
              std::shared_ptr<DeviceState> device, LogLevel level);

  Status init();
  Status getKernel(const OpSpec &spec, const KernelOptions &options,
                   std::shared_ptr<const Kernel> &kernel);
  Status writeBundle(const std::vector<OpSpec> &specs, const std::string &path);

  ContextOptions options;
  Logger log;
  std::shared_ptr<DeviceState> device;
  std::unique_ptr<KernelStore> store;
  bool tuning = false;

private:
  using Reports = std::array<BucketReport, kNumRowBuckets>;

  Status getVariant(const OpSpec &spec, const LaunchConfig &launch,
                    std::shared_ptr<const LoadedKernel> &kernel);
  Status loadVariant(const OpSpec &spec, const LaunchConfig &launch,
                     std::shared_ptr<const LoadedKernel> &kernel);
  /// Loads `launches` concurrently; one status per launch.
  std::vector<Status>
  getVariants(const OpSpec &spec, const std::vector<LaunchConfig> &launches,
              std::vector<std::shared_ptr<const LoadedKernel>> &kernels);
  Status plan(const OpSpec &spec, bool tune, Reports &reports);
  Status tune(const OpSpec &spec, Reports &reports);
  Status buildKernel(const OpSpec &spec, const KernelOptions &options,
                     std::shared_ptr<const Kernel> &kernel);

  OnceMap<std::shared_ptr<const LoadedKernel>> variants;
  OnceMap<std::shared_ptr<const Reports>> tunings;
  OnceMap<std::shared_ptr<const Kernel>> kernels;
  /// Tuning runs time one at a time, or they would disturb each other.
  std::mutex timingMutex;
};

} // namespace norm::jit

ContextImpl::ContextImpl(const ContextOptions &options,
                         std::shared_ptr<DeviceState> device, LogLevel level)
    : options(options), log(level, options.logSink), device(std::move(device)) {
}

Status ContextImpl::init() {
  KernelStoreOptions storeOptions;
  storeOptions.compiler =
      options.compiler ? options.compiler : createDefaultCompiler();
  storeOptions.target.chip =
      options.chip.empty() ? device->info.chip : options.chip;
  storeOptions.target.ptxVersion = options.ptxVersion;
  // Long rows are staged in the shared memory this device lets a CTA have
  // (an sm_86 device runs sm_80 PTX with 99 KiB, not 163), and in no more
  // than the chip's, so that kernels for an older chip, as in bundles, stay
  // the same on a newer device.
  int64_t chipShared = getMaxSharedBytesPerCta(storeOptions.target.chip);
  int64_t deviceShared = device->info.maxSharedBytesOptin;
  storeOptions.target.maxSharedBytes =
      deviceShared > 0 && chipShared > 0 ? std::min(deviceShared, chipShared)
                                         : deviceShared;
  if (options.diskCache) {
    storeOptions.cacheDirectory = options.cacheDirectory.empty()
                                      ? getDefaultCacheDirectory()
                                      : options.cacheDirectory;
    if (storeOptions.cacheDirectory.empty())
      log.log(LogLevel::Warning, "no cache directory (set NORMJIT_CACHE_DIR "
                                 "or HOME): the disk cache is off");
  }
  for (const std::string &path : options.bundles) {
    std::shared_ptr<const Bundle> bundle;
    if (Status status = Bundle::read(path, bundle); !status)
      return status;
    if (bundle->getInfo().chip != storeOptions.target.chip)
      log.log(LogLevel::Warning,
              "kernel bundle '" + path + "' holds kernels for " +
                  bundle->getInfo().chip + ", this device uses " +
                  storeOptions.target.chip + ": it will not be used");
    storeOptions.bundles.push_back(std::move(bundle));
  }
  const char *tuneEnv = std::getenv("NORMJIT_TUNE");
  bool tuneAllowed = !(tuneEnv && std::string_view(tuneEnv) == "0");
  tuning = options.tuning && tuneAllowed && storeOptions.compiler;
  store = std::make_unique<KernelStore>(std::move(storeOptions), log);
  if (options.compileThreads <= 0) {
    unsigned hardware = std::thread::hardware_concurrency();
    options.compileThreads =
        static_cast<int>(std::clamp<unsigned>(hardware, 1, 8));
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Variants
//===----------------------------------------------------------------------===//

Status ContextImpl::loadVariant(const OpSpec &spec, const LaunchConfig &launch,
                                std::shared_ptr<const LoadedKernel> &kernel) {
  for (int attempt = 0;; ++attempt) {
    KernelBinary binary;
    if (Status status =
            store->getKernel(spec, launch, device->cubinTag, binary);
        !status)
      return status;
    KernelBinary::Origin origin = binary.origin;
    bool linked = false;
    Status status =
        loadKernel(device, spec, std::move(binary), kernel, linked, log);
    if (status.ok()) {
      if (linked)
        store->storeCubin(spec, launch, kernel->binary, device->cubinTag);
      return status;
    }
    // PTX from the disk cache that the driver rejects is stale: compile it
    // again, once.
    if (origin != KernelBinary::Origin::DiskCache || attempt > 0)
      return status;
    log.log(LogLevel::Warning,
            "discarding a cached kernel the driver rejected: " +
                status.message());
    store->discardKernel(spec, launch);
  }
}

Status ContextImpl::getVariant(const OpSpec &spec, const LaunchConfig &launch,
                               std::shared_ptr<const LoadedKernel> &kernel) {
  std::string key = getCanonicalSpec(spec) + " " + launch.getMangledSuffix();
  return variants.getOrBuild(
      key,
      [&](std::shared_ptr<const LoadedKernel> &built) {
        return loadVariant(spec, launch, built);
      },
      kernel);
}

std::vector<Status> ContextImpl::getVariants(
    const OpSpec &spec, const std::vector<LaunchConfig> &launches,
    std::vector<std::shared_ptr<const LoadedKernel>> &kernels) {
  std::vector<Status> statuses(launches.size());
  kernels.assign(launches.size(), nullptr);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < launches.size();)
      statuses[i] = getVariant(spec, launches[i], kernels[i]);
  };
  size_t threads = std::min<size_t>(options.compileThreads, launches.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  return statuses;
}

//===----------------------------------------------------------------------===//
// Planning and tuning
//===----------------------------------------------------------------------===//

Status ContextImpl::plan(const OpSpec &spec, bool tune, Reports &reports) {
  for (RowBucket bucket : kAllRowBuckets)
    reports[static_cast<int>(bucket)].bucket = bucket;
  if (std::optional<LaunchPlan> planned = store->findPlan(spec)) {
    for (RowBucket bucket : kAllRowBuckets) {
      BucketReport &report = reports[static_cast<int>(bucket)];
      report.source = BucketReport::Source::Bundle;
      report.launch = (*planned)[static_cast<int>(bucket)];
    }
    return Status::success();
  }
  KernelCompiler *compiler = store->getCompiler();
  if (!compiler)
    return Status::error(
        ErrorCode::NotFound,
        describeOpSpec(spec) + " is in no kernel bundle for " +
            store->getTarget().chip +
            ", and this libnormjit has no compiler (a runtime-only build): "
            "add it to a bundle with norm-tune");
  if (tune) {
    std::shared_ptr<const Reports> tuned;
    if (Status status = tunings.getOrBuild(
            getCanonicalSpec(spec),
            [&](std::shared_ptr<const Reports> &built) {
              auto result = std::make_shared<Reports>();
              Status s = this->tune(spec, *result);
              built = std::move(result);
              return s;
            },
            tuned);
        !status)
      return status;
    reports = *tuned;
    return Status::success();
  }
  for (RowBucket bucket : kAllRowBuckets) {
    BucketReport &report = reports[static_cast<int>(bucket)];
    report.source = BucketReport::Source::Heuristic;
    report.launch =
        compiler->getHeuristicLaunch(spec, getTuningRows(spec, bucket));
  }
  return Status::success();
}

Status ContextImpl::tune(const OpSpec &spec, Reports &reports) {
  KernelCompiler &compiler = *store->getCompiler();
  const DeviceInfo &info = device->info;
  std::string deviceId = info.getTuningIdentity();
  std::string what = describeOpSpec(spec);

  // Buckets the tuning cache already knows.
  std::vector<RowBucket> pending;
  for (RowBucket bucket : kAllRowBuckets) {
    BucketReport &report = reports[static_cast<int>(bucket)];
    report.bucket = bucket;
    report.tunedRows = getTuningRows(spec, bucket);
    if (std::optional<KernelStore::TuningRecord> record =
            store->loadTuning(spec, bucket, deviceId, info.driverVersion)) {
      report.source = BucketReport::Source::TuningCache;
      report.launch = record->winner;
      report.tuningReport = record->report;
      log.log(LogLevel::Debug, "tuning of " + what + " rows " +
                                   std::string(getRowBucketName(bucket)) +
                                   ": cached, " +
                                   record->winner.getMangledSuffix());
      continue;
    }
    pending.push_back(bucket);
  }
  if (pending.empty())
    return Status::success();

  // Compile every candidate of every pending bucket at once.
  std::vector<LaunchConfig> all;
  std::array<std::vector<LaunchConfig>, kNumRowBuckets> candidates;
  std::array<LaunchConfig, kNumRowBuckets> heuristics;
  int64_t maxRows = 1;
  for (RowBucket bucket : pending) {
    int b = static_cast<int>(bucket);
    heuristics[b] = compiler.getHeuristicLaunch(spec, reports[b].tunedRows);
    candidates[b] = getTuningCandidates(spec, bucket, heuristics[b]);
    for (const LaunchConfig &launch : candidates[b])
      if (std::find(all.begin(), all.end(), launch) == all.end())
        all.push_back(launch);
    maxRows = std::max(maxRows, reports[b].tunedRows);
  }
  std::vector<std::shared_ptr<const LoadedKernel>> loaded;
  std::vector<Status> loadStatus = getVariants(spec, all, loaded);
  auto indexOf = [&](const LaunchConfig &launch) {
    return std::find(all.begin(), all.end(), launch) - all.begin();
  };

  std::lock_guard<std::mutex> lock(timingMutex);
  std::unique_ptr<Tuner> tuner;
  if (Status status = Tuner::create(device, spec, maxRows, tuner); !status)
    return status.withContext("tuning " + what);
  for (RowBucket bucket : pending) {
    int b = static_cast<int>(bucket);
    BucketReport &report = reports[b];
    report.source = BucketReport::Source::Tuned;
    std::ostringstream table;
    table << "tuning " << what << " at " << report.tunedRows << " rows (bucket "
          << getRowBucketName(bucket) << ") on " << deviceId << ":";
    const BucketReport::Candidate *best = nullptr;
    std::string firstFailure;
    for (const LaunchConfig &launch : candidates[b]) {
      BucketReport::Candidate candidate{launch, -1, {}};
      size_t i = indexOf(launch);
      Status status = loadStatus[i];
      if (status.ok())
        status =
            tuner->time(*loaded[i], report.tunedRows, candidate.microseconds);
      if (!status.ok()) {
        candidate.microseconds = -1;
        candidate.failure = status.message();
        if (firstFailure.empty())
          firstFailure = status.message();
      }
      table << "\n  " << launch.getMangledSuffix() << "  "
            << (status.ok() ? formatMicroseconds(candidate.microseconds)
                            : "failed: " + candidate.failure)
            << (launch == heuristics[b] ? "  (heuristic)" : "");
      log.log(LogLevel::Debug,
              "candidate " + launch.getMangledSuffix() + " for " + what + ": " +
                  (status.ok() ? formatMicroseconds(candidate.microseconds)
                               : candidate.failure));
      report.candidates.push_back(std::move(candidate));
    }
    for (const BucketReport::Candidate &candidate : report.candidates)
      if (candidate.microseconds >= 0 &&
          (!best || candidate.microseconds < best->microseconds))
        best = &candidate;
    if (!best)
      return Status::error(ErrorCode::CompileError,
                           "no tuning candidate of " + what + " for rows " +
                               std::string(getRowBucketName(bucket)) +
                               " ran: " + firstFailure);
    report.launch = best->launch;
    table << "\n  winner " << best->launch.getMangledSuffix() << " "
          << formatMicroseconds(best->microseconds);
    report.tuningReport = table.str();
    log.log(LogLevel::Info, report.tuningReport);
    store->storeTuning(spec, bucket, deviceId, info.driverVersion,
                       {report.launch, report.tuningReport});
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

Kernel::~Kernel() = default;

Status ContextImpl::buildKernel(const OpSpec &spec,
                                const KernelOptions &kernelOptions,
                                std::shared_ptr<const Kernel> &result) {
  Reports reports;
  if (kernelOptions.launch) {
    const LaunchConfig &fixed = *kernelOptions.launch;
    if (!isValidLaunch(fixed) || !fitsRow(fixed, spec))
      return Status::error(ErrorCode::InvalidArgument,
                           "launch configuration " + fixed.getMangledSuffix() +
                               " does not fit the rows of " +
                               describeOpSpec(spec) + " (" +
                               std::to_string(getRowLength(spec)) +
                               " elements)");
    for (RowBucket bucket : kAllRowBuckets) {
      BucketReport &report = reports[static_cast<int>(bucket)];
      report.bucket = bucket;
      report.source = BucketReport::Source::Fixed;
      report.launch = fixed;
    }
  } else if (Status status =
                 plan(spec, kernelOptions.tune && tuning, reports);
             !status) {
    return status;
  }

  // Each bucket's configuration and its scalar variant, loaded together.
  std::vector<LaunchConfig> launches;
  auto add = [&](const LaunchConfig &launch) {
    if (std::find(launches.begin(), launches.end(), launch) == launches.end())
      launches.push_back(launch);
  };
  for (BucketReport &report : reports) {
    add(report.launch);
    // A kernel that refuses misaligned buffers never runs the scalar variant.
    if (kernelOptions.refuseMisaligned)
      continue;
    report.scalarLaunch = report.launch.vector == 1
                              ? std::optional<LaunchConfig>(report.launch)
                              : getScalarVariant(report.launch, spec);
    if (report.scalarLaunch)
      add(*report.scalarLaunch);
  }
  std::vector<std::shared_ptr<const LoadedKernel>> loaded;
  std::vector<Status> statuses = getVariants(spec, launches, loaded);
  auto find = [&](const LaunchConfig &launch) {
    return std::find(launches.begin(), launches.end(), launch) -
           launches.begin();
  };

  std::shared_ptr<Kernel> kernel(new Kernel());
  kernel->spec = spec;
  kernel->refuseMisaligned = kernelOptions.refuseMisaligned;
  for (const BufferSpec &buffer : getBuffers(spec))
    kernel->expected[static_cast<int>(buffer.slot)] = {
        true, buffer.rows2D, buffer.written, buffer.type, buffer.cols};
  for (BucketReport &report : reports) {
    Kernel::Plan &plan = kernel->plans[static_cast<int>(report.bucket)];
    size_t fast = find(report.launch);
    if (!statuses[fast].ok())
      return statuses[fast];
    plan.fast = loaded[fast];
    if (report.scalarLaunch) {
      size_t scalar = find(*report.scalarLaunch);
      if (statuses[scalar].ok()) {
        plan.scalar = loaded[scalar];
      } else {
        log.log(LogLevel::Warning,
                "no scalar variant for misaligned buffers: " +
                    statuses[scalar].message());
        report.scalarLaunch.reset();
      }
    }
    plan.report = std::move(report);
  }
  if (log.isEnabled(LogLevel::Info)) {
    std::string line = "kernel " + describeOpSpec(spec) + ":";
    for (const Kernel::Plan &plan : kernel->plans)
      line += " [" + std::string(getRowBucketName(plan.report.bucket)) + "] " +
              plan.report.launch.getMangledSuffix() + " (" +
              std::string(BucketReport::getSourceName(plan.report.source)) +
              ")";
    log.log(LogLevel::Info, line);
  }
  result = std::move(kernel);
  return Status::success();
}

Status ContextImpl::getKernel(const OpSpec &spec, const KernelOptions &options,
                              std::shared_ptr<const Kernel> &kernel) {
  if (Status status = validateOpSpec(spec); !status)
    return status;
  OpSpec normalized = normalizeOpSpec(spec);
  std::string key = getCanonicalSpec(normalized) +
                    (options.launch ? " fixed " +
                                          options.launch->getMangledSuffix()
                     : options.tune ? " tune"
                                    : " heuristic") +
                    (options.refuseMisaligned ? " aligned-only" : "");
  return kernels.getOrBuild(
      key,
      [&](std::shared_ptr<const Kernel> &built) {
        return buildKernel(normalized, options, built);
      },
      kernel);
}

Status ContextImpl::writeBundle(const std::vector<OpSpec> &specs,
                                const std::string &path) {
  if (!store->getCompiler())
    return Status::error(ErrorCode::Unsupported,
                         "writing kernel bundles needs the compiler, and this "
                         "libnormjit is a runtime-only build");
  const std::string &chip = store->getTarget().chip;
  BundleWriter writer({store->getCompilerVersion(), chip,
                       device->info.getTuningIdentity() + " driver " +
                           std::to_string(device->info.driverVersion)});
  for (const OpSpec &spec : specs) {
    std::shared_ptr<const Kernel> kernel;
    if (Status status = getKernel(spec, {}, kernel); !status)
      return status;
    const OpSpec &normalized = kernel->getSpec();
    LaunchPlan plan;
    for (RowBucket bucket : kAllRowBuckets) {
      const BucketReport &report = kernel->getReport(bucket);
      plan[static_cast<int>(bucket)] = report.launch;
      std::shared_ptr<const LoadedKernel> variant;
      for (const std::optional<LaunchConfig> &launch :
           {std::optional<LaunchConfig>(report.launch), report.scalarLaunch}) {
        if (!launch)
          continue;
        if (Status status = getVariant(normalized, *launch, variant); !status)
          return status;
        writer.add(getKernelKey(normalized, *launch, store->getTarget(),
                                store->getCompilerVersion()),
                   makeKernelEntry(variant->binary, device->cubinTag));
      }
    }
    writer.add(getPlanKey(normalized, chip), makePlanEntry(normalized, plan));
  }
  return writer.write(path);
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

static Status invalidLaunch(const OpSpec &spec, const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument,
                       "launch of " + describeOpSpec(spec) + ": " + message);
}

namespace {
/// The bytes a buffer of a launch covers: `rows` runs of `width` bytes,
/// `stride` bytes apart (one run for 1-D buffers).
struct Footprint {
  uintptr_t start = 0;
  int64_t width = 0;
  int64_t stride = 0;
  int64_t rows = 1;

  uintptr_t end() const { return start + (rows - 1) * stride + width; }
};
} // namespace

static int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && a < 0);
}

/// Whether two footprints share a byte: exactly for rows of the same stride
/// (so that buffers interleaved in one allocation, such as the halves of a
/// packed tensor, pass), else by their address ranges.
static bool overlap(const Footprint &a, const Footprint &b) {
  if (a.start >= b.end() || b.start >= a.end())
    return false;
  if (a.rows == 1 || a.rows != b.rows || a.stride != b.stride)
    return true;
  // Row i of `a` and row i + k of `b` share a byte iff
  // -b.width < d + k * stride < a.width, with d = b.start - a.start (|d| is
  // below the spans here, so nothing overflows). Try the smallest such k.
  int64_t d = static_cast<int64_t>(b.start - a.start);
  int64_t k = std::max(floorDiv(-b.width - d, a.stride) + 1, 1 - a.rows);
  return k <= a.rows - 1 && d + k * a.stride < a.width;
}

Status Kernel::check(const LaunchArgs &args, int64_t rows,
                     const LoadedKernel *&variant) const {
  for (int slot = 0; slot < kNumBufferSlots; ++slot) {
    const TensorArg &tensor = args.tensors[slot];
    const ExpectedBuffer &want = expected[slot];
    std::string_view name = getBufferSlotName(static_cast<BufferSlot>(slot));
    if (!want.present) {
      if (tensor.data)
        return invalidLaunch(spec, "the operation has no '" +
                                       std::string(name) + "' buffer");
      continue;
    }
    if (!tensor.data)
      return invalidLaunch(spec, "buffer '" + std::string(name) + "' is null");
    if (tensor.type != want.type)
      return invalidLaunch(spec,
                           "buffer '" + std::string(name) + "' is " +
                               std::string(getElementTypeName(tensor.type)) +
                               ", the operation expects " +
                               std::string(getElementTypeName(want.type)));
    if (tensor.cols != want.cols)
      return invalidLaunch(spec, "buffer '" + std::string(name) + "' has " +
                                     std::to_string(tensor.cols) +
                                     " elements per row, the operation "
                                     "expects " +
                                     std::to_string(want.cols));
    if (!want.rows2D) {
      if (tensor.rowStride != 0)
        return invalidLaunch(spec, "1-D buffer '" + std::string(name) +
                                       "' takes no row stride");
      continue;
    }
    int64_t stride = tensor.rowStride ? tensor.rowStride : tensor.cols;
    if (stride < tensor.cols)
      return invalidLaunch(spec, "row stride of '" + std::string(name) + "' (" +
                                     std::to_string(tensor.rowStride) +
                                     ") is shorter than its rows");
    // The last element must be addressable: (rows - 1) * stride + cols.
    if ((rows - 1) > (INT64_MAX / 8 - tensor.cols) / stride)
      return invalidLaunch(spec, "buffer '" + std::string(name) +
                                     "' would span more than 2^60 bytes");
  }
  const Plan &plan = plans[static_cast<int>(getRowBucket(rows))];
  const LoadedKernel *chosen = nullptr;
  if (plan.fast->isAligned(args, rows))
    chosen = plan.fast.get();
  else if (!refuseMisaligned && plan.scalar &&
           plan.scalar->isAligned(args, rows))
    chosen = plan.scalar.get();
  if (chosen) {
    if (Status status = chosen->checkRows(rows); !status)
      return status;
    if (Status status = checkOverlap(args, rows); !status)
      return status;
    variant = chosen;
    return Status::success();
  }
  std::string message = "launch of " + describeOpSpec(spec) + ": " +
                        plan.fast->describeMisalignment(args, rows);
  if (refuseMisaligned)
    message += " (the kernel refuses misaligned buffers)";
  else if (!plan.scalar)
    message += ", and there is no scalar variant";
  else
    message += "; the scalar variant needs: " +
               plan.scalar->describeMisalignment(args, rows);
  return Status::error(ErrorCode::Misaligned, message);
}

Status Kernel::checkOverlap(const LaunchArgs &args, int64_t rows) const {
  // On the stack: launches allocate nothing.
  std::array<Footprint, kNumBufferSlots> footprints;
  for (int slot = 0; slot < kNumBufferSlots; ++slot) {
    const TensorArg &tensor = args.tensors[slot];
    const ExpectedBuffer &want = expected[slot];
    if (!want.present)
      continue;
    int64_t bytes = getElementBytes(want.type);
    Footprint &footprint = footprints[slot];
    footprint.start = reinterpret_cast<uintptr_t>(tensor.data);
    footprint.width = tensor.cols * bytes;
    if (want.rows2D) {
      footprint.rows = rows;
      footprint.stride = (tensor.rowStride ? tensor.rowStride : tensor.cols) *
                         bytes;
    }
  }
  for (int a = 0; a < kNumBufferSlots; ++a) {
    if (!expected[a].present)
      continue;
    for (int b = a + 1; b < kNumBufferSlots; ++b) {
      if (!expected[b].present ||
          !(expected[a].written || expected[b].written) ||
          !overlap(footprints[a], footprints[b]))
        continue;
      // Name the output first.
      int written = expected[a].written ? a : b, other = a + b - written;
      return invalidLaunch(
          spec,
          "output '" +
              std::string(getBufferSlotName(static_cast<BufferSlot>(written))) +
              "' overlaps buffer '" +
              std::string(getBufferSlotName(static_cast<BufferSlot>(other))) +
              "': kernels assume buffers do not alias, so an in-place "
              "update needs a separate output buffer");
    }
  }
  return Status::success();
}

Status Kernel::launch(const LaunchArgs &args, int64_t rows,
                      void *stream) const {
  if (rows < 0)
    return invalidLaunch(spec, "negative row count " + std::to_string(rows));
  // Empty tensors often have null data: zero rows launch nothing, checked
  // or not.
  if (rows == 0)
    return Status::success();
  const LoadedKernel *variant = nullptr;
  if (Status status = check(args, rows, variant); !status)
    return status;
  return variant->launch(args, rows, static_cast<cu::Stream>(stream));
}

Status Kernel::getLaunchFor(const LaunchArgs &args, int64_t rows,
                            LaunchConfig &launch) const {
  if (rows <= 0)
    return invalidLaunch(spec, "the row count must be positive, got " +
                                   std::to_string(rows));
  const LoadedKernel *variant = nullptr;
  if (Status status = check(args, rows, variant); !status)
    return status;
  launch = variant->getSignature().launch;
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

Context::Context(std::shared_ptr<ContextImpl> impl) : impl(std::move(impl)) {}
Context::~Context() = default;

Status Context::create(const ContextOptions &options,
                       std::unique_ptr<Context> &context) {
  LogLevel level = options.logLevel >= 0
                       ? static_cast<LogLevel>(std::min(options.logLevel, 3))
                       : Logger::getLevelFromEnvironment(LogLevel::Warning);
  auto device = std::make_shared<DeviceState>();
  if (Status status = CudaDriver::load(options.driverLibrary, device->driver);
      !status)
    return status;
  const CudaDriver &driver = *device->driver;
  int count = 0;
  if (Status status =
          driver.check(driver.deviceGetCount(&count), "cuDeviceGetCount");
      !status)
    return status;
  if (count == 0)
    return Status::error(ErrorCode::NoDevice,
                         "no CUDA device: the driver sees none");
  if (options.device < 0 || options.device >= count)
    return Status::error(ErrorCode::NoDevice,
                         "no CUDA device " + std::to_string(options.device) +
                             ": the driver sees " + std::to_string(count));
  DeviceInfo &info = device->info;
  info.ordinal = options.device;
  info.driverVersion = driver.version;
  char name[256] = {0};
  int optin = 0;
  Status status = driver.check(
      driver.deviceGet(&device->device, options.device), "cuDeviceGet");
  auto attribute = [&](int which, int &value) {
    if (status.ok())
      status =
          driver.check(driver.deviceGetAttribute(&value, which, device->device),
                       "cuDeviceGetAttribute");
  };
  attribute(cu::kDeviceComputeCapabilityMajor, info.computeMajor);
  attribute(cu::kDeviceComputeCapabilityMinor, info.computeMinor);
  attribute(cu::kDeviceMultiprocessorCount, info.multiprocessors);
  attribute(cu::kDeviceMaxSharedMemoryPerBlockOptin, optin);
  if (status.ok())
    status = driver.check(
        driver.deviceGetName(name, sizeof(name) - 1, device->device),
        "cuDeviceGetName");
  if (!status)
    return status;
  info.name = name;
  info.maxSharedBytesOptin = optin;
  if (info.computeMajor < 8)
    return Status::error(ErrorCode::Unsupported,
                         "device " + info.name + " has compute capability " +
                             std::to_string(info.computeMajor) + "." +
                             std::to_string(info.computeMinor) +
                             "; libnormjit needs 8.0 or newer");
  info.chip = getChipFor(info.computeMajor, info.computeMinor);
  device->cubinTag = "driver=" + std::to_string(info.driverVersion) +
                     " cc=" + std::to_string(info.computeMajor) + "." +
                     std::to_string(info.computeMinor);
  if (Status status = driver.check(
          driver.devicePrimaryCtxRetain(&device->context, device->device),
          "cuDevicePrimaryCtxRetain");
      !status) {
    device->context = nullptr;
    return status;
  }

  auto impl = std::make_shared<ContextImpl>(options, std::move(device), level);
  if (Status status = impl->init(); !status)
    return status;
  context.reset(new Context(std::move(impl)));
  return Status::success();
}

Status Context::getKernel(const OpSpec &spec, const KernelOptions &options,
                          std::shared_ptr<const Kernel> &kernel) {
  return impl->getKernel(spec, options, kernel);
}

Status Context::writeBundle(const std::vector<OpSpec> &specs,
                            const std::string &path) {
  return impl->writeBundle(specs, path);
}

const DeviceInfo &Context::getDeviceInfo() const { return impl->device->info; }

bool Context::isTuning() const { return impl->tuning; }

/// Runs one driver call with the context's device current.
template <typename Call>
static Status callOnDevice(const DeviceState &device, const char *name,
                           Call &&call) {
  ScopedContext scope(*device.driver, device.context);
  if (!scope.status().ok())
    return scope.status();
  return device.driver->check(call(*device.driver), name);
}

Status Context::allocate(size_t bytes, void *&pointer) {
  cu::DevicePtr address = 0;
  Status status =
      callOnDevice(*impl->device, "cuMemAlloc", [&](const CudaDriver &d) {
        return d.memAlloc(&address, std::max<size_t>(bytes, 1));
      });
  if (status.ok())
    pointer = reinterpret_cast<void *>(address);
  return status;
}

Status Context::release(void *pointer) {
  return callOnDevice(*impl->device, "cuMemFree", [&](const CudaDriver &d) {
    return d.memFree(reinterpret_cast<cu::DevicePtr>(pointer));
  });
}

Status Context::copyToDevice(void *destination, const void *source,
                             size_t bytes) {
  return callOnDevice(*impl->device, "cuMemcpyHtoD", [&](const CudaDriver &d) {
    return d.memcpyHtoD(reinterpret_cast<cu::DevicePtr>(destination), source,
                        bytes);
  });
}

Status Context::copyToHost(void *destination, const void *source,
                           size_t bytes) {
  return callOnDevice(*impl->device, "cuMemcpyDtoH", [&](const CudaDriver &d) {
    return d.memcpyDtoH(destination, reinterpret_cast<cu::DevicePtr>(source),
                        bytes);
  });
}

Status Context::synchronize(void *stream) {
  return callOnDevice(
      *impl->device, "cuStreamSynchronize", [&](const CudaDriver &d) {
        return d.streamSynchronize(static_cast<cu::Stream>(stream));
      });
}
