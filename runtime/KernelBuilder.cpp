//===- KernelBuilder.cpp - kernel variants and Kernels --------------------===//
//
// Loads the kernel variants a plan uses (concurrently, each once per
// context) and assembles the immutable Kernel: one fast and one scalar
// variant per row bucket and the buffers launches are checked against.
//
//===----------------------------------------------------------------------===//

#include "runtime/ContextImpl.h"

#include "runtime/Exceptions.h"
#include "runtime/Threads.h"

#include <algorithm>
#include <atomic>
#include <thread>

using namespace norm;
using namespace norm::jit;

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
  // An exception must not leave a thread (std::terminate).
  auto work = [&]() noexcept {
    for (size_t i; (i = next++) < launches.size();)
      statuses[i] = catchExceptions("loading a kernel variant", [&] {
        return getVariant(spec, launches[i], kernels[i]);
      });
  };
  size_t threads = std::min<size_t>(options.compileThreads, launches.size());
  // Nothing may throw while threads run: they use this frame.
  std::vector<std::thread> pool;
  pool.reserve(threads);
  bool refused = false;
  for (size_t t = 1; t < threads && !refused; ++t)
    refused = !tryStartThread(pool, work);
  // The calling thread works too: fewer threads only take longer.
  work();
  for (std::thread &thread : pool)
    thread.join();
  if (refused)
    log.log(LogLevel::Warning, "the system refused a compile thread: "
                               "compiled on " +
                                   std::to_string(pool.size() + 1) + " of " +
                                   std::to_string(threads) + " threads");
  return statuses;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

Kernel::~Kernel() = default;

Status ContextImpl::buildKernel(const OpSpec &spec,
                                const KernelOptions &kernelOptions,
                                std::shared_ptr<const Kernel> &result) {
  // A backward launch sums its partials (the context's scratch) into the
  // caller's gradients; the tuner times the sums too.
  std::vector<Kernel::GradientSumKernel> gradientSums;
  for (const GradientSum &sum :
       spec.backward ? getGradientSums(spec) : std::vector<GradientSum>()) {
    std::shared_ptr<const Kernel> sumKernel;
    KernelOptions sumOptions;
    sumOptions.tune = kernelOptions.tune;
    // The caller's gradients are the sums' outputs.
    sumOptions.refuseMisaligned = kernelOptions.refuseMisaligned;
    if (Status status = getKernel(sum.columnSum, sumOptions, sumKernel);
        !status)
      return status.withContext("the gradient sum of " + describeOpSpec(spec));
    gradientSums.push_back({sum.partials, sum.gradient, sumKernel});
  }

  Reports reports;
  if (kernelOptions.launch) {
    const LaunchConfig &fixed = *kernelOptions.launch;
    if (Status fits = verifyLaunchFor(spec, fixed,
                                      store->getTarget().getMaxSharedBytes());
        !fits)
      return fits.withContext("launch configuration " +
                              fixed.getMangledSuffix() + " for " +
                              describeOpSpec(spec));
    for (RowBucket bucket : kAllRowBuckets) {
      BucketReport &report = reports[static_cast<int>(bucket)];
      report.bucket = bucket;
      report.source = BucketReport::Source::Fixed;
      report.launch = fixed;
    }
  } else if (Status status =
                 plan(spec, kernelOptions.tune && tuning, gradientSums,
                      reports);
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
                              : getScalarFallback(spec, report.launch);
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
        true,        buffer.rows2D,  buffer.written, buffer.type,
        buffer.cols, buffer.ownRows, buffer.scratch, buffer.over};
  for (const Kernel::GradientSumKernel &sum : gradientSums) {
    const OpSpec &columnSum = sum.kernel->getSpec();
    kernel->expected[static_cast<int>(sum.partials)].scratch = true;
    kernel->expected[static_cast<int>(sum.gradient)] = {
        true, false, true, columnSum.output, columnSum.hidden};
  }
  kernel->gradientSums = std::move(gradientSums);
  kernel->streamScratch = streamScratch;
  kernel->smCount = device->getSmCount();
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
  if (Status status = verifyOpSpec(spec).withContext(getOpKindName(spec.kind));
      !status)
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
  for (const OpSpec &spec : withGradientSums(specs)) {
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
