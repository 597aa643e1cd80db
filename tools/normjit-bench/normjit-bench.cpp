//===- normjit-bench.cpp - libnormjit against its speed targets -----------===//
//
// Measures what it can on this machine and says what it could not:
//
//   compile of one kernel variant, median after the first   <= 30 ms  (CPU)
//   warm disk-cache hit of one kernel (read, verify, parse)  <= 1 ms   (CPU)
//   full autotune of one hidden size, all row buckets        <= 0.5 s  (GPU)
//   kernel from a warm cache in a new context, per variant   <= 1 ms   (GPU)
//   host-side launch overhead                                <= 2 us   (GPU)
//
// `--driver LIB` loads another CUDA driver library: with the test suite's
// fake driver the device lines measure the host side only (compiles,
// caches, checks; kernels and events do nothing), and say so.
//
// A table for people, not a test: nothing here passes or fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelStore.h"
#include "runtime/Runtime.h"
#include "tools/norm-tune/OpOptions.h"

#include <algorithm>
#include <ctime>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace norm;
using namespace norm::jit;

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

/// CPU time of this thread: on a busy machine, closer than wall time to
/// what the same work takes on an idle one.
double threadCpuMilliseconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// A fresh directory removed at the end of its scope.
struct ScratchDirectory {
  std::filesystem::path path;
  ScratchDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "normjit-bench-XXXXXX")
            .string();
    if (::mkdtemp(pattern.data()))
      path = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    if (!path.empty())
      std::filesystem::remove_all(path, ignored);
  }
};

void notMeasured(const char *what, const std::string &why) {
  std::printf("%-22s not measured: %s\n", what, why.c_str());
}

/// The distinct configurations the tuner would compile for `spec`.
std::vector<LaunchConfig> getVariants(const OpSpec &spec,
                                      KernelCompiler &compiler, size_t limit) {
  std::vector<LaunchConfig> variants;
  for (RowBucket bucket : kAllRowBuckets)
    for (const LaunchConfig &launch : getTuningCandidates(
             spec, bucket,
             compiler.getHeuristicLaunch(spec, getTuningRows(spec, bucket))))
      if (variants.size() < limit &&
          std::find(variants.begin(), variants.end(), launch) == variants.end())
        variants.push_back(launch);
  return variants;
}

/// Compile time and disk-cache hit time: no device needed.
void measureCompiler(const OpSpec &spec, size_t limit) {
  std::shared_ptr<KernelCompiler> compiler = createDefaultCompiler();
  if (!compiler) {
    notMeasured("compile:", "this build has no kernel compiler");
    notMeasured("disk cache hit:", "this build has no kernel compiler");
    return;
  }
  ScratchDirectory cache;
  Logger quiet(LogLevel::Quiet);
  KernelStoreOptions options;
  options.compiler = compiler;
  options.cacheDirectory = cache.path.string();
  std::vector<LaunchConfig> variants = getVariants(spec, *compiler, limit);

  std::vector<double> compiles, cpu;
  {
    KernelStore store(options, quiet);
    for (const LaunchConfig &launch : variants) {
      KernelBinary binary;
      auto start = Clock::now();
      double cpuStart = threadCpuMilliseconds();
      Status status = store.getKernel(spec, launch, {}, binary);
      compiles.push_back(millisecondsSince(start));
      cpu.push_back(threadCpuMilliseconds() - cpuStart);
      if (!status) {
        notMeasured("compile:", status.message());
        return;
      }
    }
  }
  // The first compile of a process pays for one-time initialization.
  std::vector<double> rest(compiles.begin() + 1, compiles.end());
  std::vector<double> restCpu(cpu.begin() + 1, cpu.end());
  std::printf("%-22s first %.1f ms, median %.1f ms over %zu more variants, "
              "%.1f ms CPU (target <= 30 ms)\n",
              "compile:", compiles.front(),
              median(rest.empty() ? compiles : rest), rest.size(),
              median(restCpu.empty() ? cpu : restCpu));

  // A new store: nothing in memory, everything on disk.
  KernelStore store(options, quiet);
  std::vector<double> hits;
  for (const LaunchConfig &launch : variants) {
    KernelBinary binary;
    auto start = Clock::now();
    Status status = store.getKernel(spec, launch, {}, binary);
    hits.push_back(millisecondsSince(start));
    if (!status || binary.origin != KernelBinary::Origin::DiskCache) {
      notMeasured("disk cache hit:",
                  status.ok() ? "the cache missed" : status.message());
      return;
    }
  }
  std::printf("%-22s median %.3f ms over %zu kernels (target <= 1 ms; read, "
              "checksum, parse; no module load)\n",
              "disk cache hit:", median(hits), hits.size());
}

/// Tuning, a new context on a warm cache, launch overhead: a device needed.
void measureDevice(const OpSpec &spec, int device, int launches,
                   const std::string &driver) {
  ScratchDirectory cache;
  ContextOptions options;
  options.device = device;
  options.driverLibrary = driver;
  options.cacheDirectory = cache.path.string();
  options.logLevel = 0;
  std::unique_ptr<Context> context;
  if (Status status = Context::create(options, context); !status) {
    std::printf("device: none: %s\n", status.message().c_str());
    bool noDevice = status.code() == ErrorCode::NoDriver ||
                    status.code() == ErrorCode::NoDevice;
    std::string why = noDevice ? "no CUDA device" : "no context";
    notMeasured("autotune:", why);
    notMeasured("context cache hit:", why);
    notMeasured("launch overhead:", why);
    return;
  }
  std::printf("device: %s%s\n",
              context->getDeviceInfo().getTuningIdentity().c_str(),
              driver.empty() ? ""
                             : (" (driver " + driver +
                                ": if it runs no kernels, the times below are "
                                "the host side only)")
                                   .c_str());
  std::shared_ptr<const Kernel> kernel;
  auto start = Clock::now();
  if (Status status = context->getKernel(spec, {}, kernel); !status) {
    notMeasured("autotune:", status.message());
    return;
  }
  double tuneMs = millisecondsSince(start);
  if (context->isTuning())
    std::printf("%-22s %.3f s for 4 row buckets, compiles included (target "
                "<= 0.5 s)\n",
                "autotune:", tuneMs / 1000);
  else
    notMeasured("autotune:", "tuning is off (NORMJIT_TUNE=0 or no compiler)");

  // A second context on the same cache: what the next process sees.
  std::unique_ptr<Context> second;
  std::shared_ptr<const Kernel> cached;
  if (Status created = Context::create(options, second); !created) {
    notMeasured("context cache hit:", created.message());
  } else {
    start = Clock::now();
    Status status = second->getKernel(spec, {}, cached);
    double ms = millisecondsSince(start);
    if (!status) {
      notMeasured("context cache hit:", status.message());
    } else {
      std::vector<LaunchConfig> loaded;
      for (RowBucket bucket : kAllRowBuckets)
        for (const std::optional<LaunchConfig> &launch :
             {std::optional<LaunchConfig>(cached->getReport(bucket).launch),
              cached->getReport(bucket).scalarLaunch})
          if (launch &&
              std::find(loaded.begin(), loaded.end(), *launch) == loaded.end())
            loaded.push_back(*launch);
      std::printf("%-22s %.3f ms for %zu variants, %.3f ms each (target <= "
                  "1 ms; tuning cache, cubin, module load)\n",
                  "context cache hit:", ms, loaded.size(), ms / loaded.size());
    }
  }

  // Launch overhead: one row, enqueued in batches the queue can hold.
  std::vector<void *> buffers;
  LaunchArgs args;
  bool allocated = true;
  for (const BufferSpec &buffer : getBuffers(spec)) {
    void *pointer = nullptr;
    allocated &=
        context
            ->allocate(buffer.cols * getElementBytes(buffer.type) * 8, pointer)
            .ok();
    buffers.push_back(pointer);
    args.set(buffer.slot, pointer, buffer.type, buffer.cols);
  }
  std::vector<double> perLaunchUs;
  constexpr int kBatch = 256;
  for (int done = 0; allocated && done < launches; done += kBatch) {
    if (!kernel->launch(args, 1, nullptr).ok() ||
        !context->synchronize(nullptr).ok()) {
      allocated = false;
      break;
    }
    start = Clock::now();
    for (int i = 0; i < kBatch; ++i)
      (void)kernel->launch(args, 1, nullptr);
    perLaunchUs.push_back(millisecondsSince(start) * 1000 / kBatch);
    (void)context->synchronize(nullptr);
  }
  if (allocated)
    std::printf("%-22s median %.2f us per launch over %zu batches of %d "
                "(target <= 2 us; checks + cuLaunchKernel)\n",
                "launch overhead:", median(perLaunchUs), perLaunchUs.size(),
                kBatch);
  else
    notMeasured("launch overhead:", "cannot run the kernel");
  for (void *pointer : buffers)
    if (pointer)
      (void)context->release(pointer);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  OpOptions op;
  op.hidden = {4096};
  int device = 0, launches = 10000;
  size_t variants = 12;
  std::string driver;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string error;
    switch (op.parse(args, i, error)) {
    case OpOptions::Parse::Done:
      continue;
    case OpOptions::Parse::Error:
      std::fprintf(stderr, "normjit-bench: %s\n", error.c_str());
      return 1;
    case OpOptions::Parse::NotMine:
      break;
    }
    const std::string &arg = args[i];
    if (arg == "--driver" && i + 1 < args.size()) {
      driver = args[++i];
      continue;
    }
    if ((arg == "--device" || arg == "--variants" || arg == "--launches") &&
        i + 1 < args.size()) {
      long value = std::atol(args[++i].c_str());
      if (arg == "--device")
        device = static_cast<int>(value);
      else if (arg == "--launches")
        launches = static_cast<int>(std::max(value, 1L));
      else
        variants = static_cast<size_t>(std::max(value, 2L));
      continue;
    }
    std::printf("usage: normjit-bench [--device N] [--variants N] "
                "[--launches N] [--driver LIB] [operation]\n\n%s",
                OpOptions::getHelp());
    return arg == "-h" || arg == "--help" ? 0 : 1;
  }
  std::vector<OpSpec> specs;
  if (Status status = op.getSpecs(specs); !status) {
    std::fprintf(stderr, "normjit-bench: %s\n", status.message().c_str());
    return 1;
  }
  for (const OpSpec &spec : specs) {
    std::printf("%s\n", describeOpSpec(spec).c_str());
    measureCompiler(spec, variants);
    measureDevice(spec, device, launches, driver);
  }
  return 0;
}
