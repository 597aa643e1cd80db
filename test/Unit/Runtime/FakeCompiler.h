//===- FakeCompiler.h - a counting kernel compiler for tests ----*- C++ -*-===//
//
// Produces kernels that the fake driver (FakeCuda.h) loads and "runs": a PTX
// text with one .entry whose parameters follow the signature of the
// operation, and a cost the driver's clock charges per launch. Counts its
// compiles, so tests can see caching and single flight.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_FAKECOMPILER_H
#define NORM_TEST_FAKECOMPILER_H

#include "runtime/KernelCompiler.h"

#include <atomic>
#include <functional>
#include <mutex>

namespace norm::jit::test {

class FakeCompiler : public KernelCompiler {
public:
  norm::Status compile(const OpSpec &spec, const LaunchConfig &launch,
                       const TargetOptions &target,
                       CompiledKernel &result) override;
  /// The threads-per-row ladder of ANCHORS.md, widened until the row fits.
  LaunchConfig getHeuristicLaunch(const OpSpec &spec, int64_t rows) override;
  std::string getVersion() override { return version; }

  /// The kernel's simulated time in ns: fixed + perCta * CTAs.
  std::function<std::pair<double, double>(const LaunchConfig &)> cost =
      [](const LaunchConfig &) { return std::pair<double, double>(1000, 10); };
  /// Configurations whose compile fails.
  std::function<bool(const LaunchConfig &)> rejects = [](const LaunchConfig &) {
    return false;
  };
  /// Called first by every compile, on the compiling thread (it may throw).
  std::function<void(const LaunchConfig &)> onCompile;
  std::string version = "fake-compiler-1";
  int delayMs = 0;
  std::atomic<int> compiles{0};
  std::atomic<int> heuristicCalls{0};
};

/// The kernel name FakeCompiler gives a configuration.
std::string getFakeKernelName(const OpSpec &spec, const LaunchConfig &launch,
                              const TargetOptions &target = TargetOptions());

} // namespace norm::jit::test

#endif // NORM_TEST_FAKECOMPILER_H
