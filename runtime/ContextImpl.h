//===- ContextImpl.h - the state behind a Context ---------------*- C++ -*-===//
//
// Internal to libnormjit. getKernel(spec) for a new operation:
//   1. plan: the launch configuration per row bucket, from a bundle, the
//      tuning cache, a tuning run or the heuristic (Planning.cpp);
//   2. load: every configuration the plan uses, and its scalar variant for
//      misaligned buffers, from bundles, the disk cache or the compiler
//      (several at once on compileThreads threads) (KernelBuilder.cpp);
//   3. a Kernel: the loaded variants plus what launch() checks buffers
//      against (KernelBuilder.cpp; the checks are LaunchChecks.cpp).
// Each step is memoized in a OnceMap, so concurrent requests share work.
// Context.cpp creates contexts and owns their device memory calls.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_CONTEXTIMPL_H
#define NORM_RUNTIME_CONTEXTIMPL_H

#include "runtime/Runtime.h"

#include "runtime/Device.h"
#include "runtime/OnceMap.h"

#include <array>
#include <memory>
#include <mutex>
#include <vector>

namespace norm::jit {

class Tuner;

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
  /// Decode attention's workspace and semaphores and backward launches'
  /// gradient partials, per stream; freed with the context (its kernels
  /// hold it weakly).
  std::shared_ptr<StreamScratch> streamScratch;

private:
  using Reports = std::array<BucketReport, kNumRowBuckets>;
  using Runs = std::array<TuningRun, kNumRowBuckets>;

  Status getVariant(const OpSpec &spec, const LaunchConfig &launch,
                    std::shared_ptr<const LoadedKernel> &kernel);
  Status loadVariant(const OpSpec &spec, const LaunchConfig &launch,
                     std::shared_ptr<const LoadedKernel> &kernel);
  /// Loads `launches` concurrently; one status per launch.
  std::vector<Status>
  getVariants(const OpSpec &spec, const std::vector<LaunchConfig> &launches,
              std::vector<std::shared_ptr<const LoadedKernel>> &kernels);
  using GradientSums = std::vector<Kernel::GradientSumKernel>;
  /// `sums`: a backward kernel's column sums, which its tuning times with
  /// it.
  Status plan(const OpSpec &spec, bool tune, const GradientSums &sums,
              Reports &reports);
  Status tune(const OpSpec &spec, const GradientSums &sums, Reports &reports);
  /// Fills the buckets the tuning cache knows; the others, to tune.
  std::vector<RowBucket> loadCachedTunings(const OpSpec &spec,
                                           Reports &reports);
  /// Plans `report`'s bucket with the heuristic, logging why.
  void useHeuristic(const OpSpec &spec, BucketReport &report,
                    const std::string &why);
  /// Tunes `pending` at rows whose scratch (for the launches of their
  /// runs) fits options.tuningScratchBytes: fewer rows, or the heuristic
  /// for buckets not even the smallest fits.
  void fitScratchBudget(const OpSpec &spec, std::vector<RowBucket> &pending,
                        const Runs &runs, Reports &reports);
  /// Allocates the tuner's scratch for `report`'s bucket, halving its rows
  /// while the device refuses; false, the heuristic planned, when not even
  /// the bucket's smallest row count fits.
  bool allocateScratch(const OpSpec &spec, Tuner &tuner, const TuningRun &run,
                       BucketReport &report);
  Status buildKernel(const OpSpec &spec, const KernelOptions &options,
                     std::shared_ptr<const Kernel> &kernel);

  OnceMap<std::shared_ptr<const LoadedKernel>> variants;
  OnceMap<std::shared_ptr<const Reports>> tunings;
  OnceMap<std::shared_ptr<const Kernel>> kernels;
  /// Tuning runs time one at a time, or they would disturb each other.
  std::mutex timingMutex;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_CONTEXTIMPL_H
