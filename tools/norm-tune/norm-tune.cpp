//===- norm-tune.cpp - tune libnormjit kernels ahead of time --------------===//
//
// Tunes the kernels of a list of operations on this machine's GPU (every row
// bucket), leaving compiled kernels and tuning results in libnormjit's disk
// cache, and optionally a kernel bundle that a runtime-only libnormjit (no
// MLIR, no LLVM) serves from. Without a GPU, --heuristic bundles the
// heuristic's configurations as PTX.
//
//   norm-tune --hidden 2048,4096,7168,8192 --addend --residual-out \
//             --bundle decoder.njb
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelStore.h"
#include "runtime/Runtime.h"
#include "tools/norm-tune/OpOptions.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace norm;
using namespace norm::jit;

static void printUsage() {
  std::printf(
      "usage: norm-tune [options] --hidden N[,N...]\n\n"
      "Tunes libnormjit's kernels for each hidden size on this GPU and keeps\n"
      "them in the disk cache; --bundle also writes a kernel bundle.\n\n"
      "options:\n"
      "  --bundle FILE     write a kernel bundle (plans, PTX, cubins)\n"
      "  --cache-dir DIR   cache directory (default: $NORMJIT_CACHE_DIR,\n"
      "                    $XDG_CACHE_HOME/norm-opt, ~/.cache/norm-opt)\n"
      "  --device N        CUDA device (default 0)\n"
      "  --heuristic       no GPU: bundle the heuristic configurations as PTX\n"
      "                    (needs --bundle)\n"
      "  --chip sm_XX      PTX target of --heuristic (default sm_90)\n"
      "  -v                print every candidate's time\n\n%s",
      OpOptions::getHelp());
}

static int fail(const std::string &message) {
  std::fprintf(stderr, "norm-tune: %s\n", message.c_str());
  return 1;
}

static void printKernel(const Kernel &kernel, bool verbose) {
  std::printf("%s\n", describeOpSpec(kernel.getSpec()).c_str());
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel.getReport(bucket);
    std::string time;
    for (const BucketReport::Candidate &candidate : report.candidates)
      if (candidate.launch == report.launch && candidate.microseconds >= 0) {
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "  %.2f us of %zu candidates",
                      candidate.microseconds, report.candidates.size());
        time = buffer;
      }
    std::printf("  rows %-5s %-16s %s%s\n",
                std::string(getRowBucketName(bucket)).c_str(),
                report.launch.getMangledSuffix().c_str(),
                std::string(BucketReport::getSourceName(report.source)).c_str(),
                time.c_str());
    if (verbose && !report.tuningReport.empty())
      std::printf("%s\n", report.tuningReport.c_str());
  }
}

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  OpOptions op;
  std::string bundle, cacheDir, chip = "sm_90";
  int device = 0;
  bool heuristic = false, verbose = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string error;
    switch (op.parse(args, i, error)) {
    case OpOptions::Parse::Done:
      continue;
    case OpOptions::Parse::Error:
      return fail(error);
    case OpOptions::Parse::NotMine:
      break;
    }
    const std::string &arg = args[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= args.size())
        return false;
      out = args[++i];
      return true;
    };
    std::string number;
    if (arg == "-h" || arg == "--help") {
      printUsage();
      return 0;
    }
    if (arg == "--version") {
      std::shared_ptr<KernelCompiler> compiler = createDefaultCompiler();
      std::printf("norm-tune: libnormjit with %s\n",
                  compiler ? ("compiler " + compiler->getVersion()).c_str()
                           : "no compiler");
      return 0;
    }
    if (arg == "-v") {
      verbose = true;
    } else if (arg == "--heuristic") {
      heuristic = true;
    } else if (arg == "--bundle" || arg == "--cache-dir" || arg == "--chip") {
      std::string &out = arg == "--bundle"      ? bundle
                         : arg == "--cache-dir" ? cacheDir
                                                : chip;
      if (!value(out))
        return fail(arg + " needs a value");
    } else if (arg == "--device") {
      if (!value(number))
        return fail("--device needs a value");
      device = std::atoi(number.c_str());
    } else {
      return fail("unknown option '" + arg + "' (see --help)");
    }
  }
  std::vector<OpSpec> specs;
  if (Status status = op.getSpecs(specs); !status)
    return fail(status.message());

  if (heuristic && bundle.empty())
    return fail("--heuristic writes a bundle: give --bundle FILE");
  std::shared_ptr<KernelCompiler> compiler = createDefaultCompiler();
  if (!compiler)
    return fail("this build of libnormjit has no kernel compiler: tune with "
                "a full build");

  if (heuristic) {
    Logger log(Logger::getLevelFromEnvironment(LogLevel::Warning));
    KernelStoreOptions storeOptions;
    storeOptions.compiler = compiler;
    storeOptions.target.chip = chip;
    KernelStore store(storeOptions, log);
    if (Status status = writeHeuristicBundle(store, specs, bundle); !status)
      return fail(status.message());
    std::printf("wrote %s: heuristic plans of %zu operations for %s\n",
                bundle.c_str(), specs.size(), chip.c_str());
    return 0;
  }

  ContextOptions options;
  options.device = device;
  options.compiler = compiler;
  options.cacheDirectory = cacheDir;
  options.logLevel = static_cast<int>(Logger::getLevelFromEnvironment(
      verbose ? LogLevel::Info : LogLevel::Warning));
  std::unique_ptr<Context> context;
  if (Status status = Context::create(options, context); !status)
    return fail(status.message() + " (without a GPU, --heuristic --bundle "
                                   "FILE writes an untuned bundle)");
  if (!context->isTuning())
    std::printf("note: tuning is off (NORMJIT_TUNE=0): heuristic plans\n");
  const DeviceInfo &info = context->getDeviceInfo();
  std::printf("device %d: %s, driver %d\n", info.ordinal,
              info.getTuningIdentity().c_str(), info.driverVersion);
  for (const OpSpec &spec : specs) {
    std::shared_ptr<const Kernel> kernel;
    if (Status status = context->getKernel(spec, {}, kernel); !status)
      return fail(status.message());
    printKernel(*kernel, verbose);
  }
  if (!bundle.empty()) {
    if (Status status = context->writeBundle(specs, bundle); !status)
      return fail(status.message());
    std::printf("wrote %s\n", bundle.c_str());
  }
  return 0;
}
