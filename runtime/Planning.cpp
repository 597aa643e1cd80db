//===- Planning.cpp - the launch configuration of each row bucket ---------===//
//
// A plan comes from a kernel bundle, else the tuning cache, else a tuning
// run on the device (every candidate of every pending bucket compiled at
// once, then timed one bucket after another), else the heuristic.
//
//===----------------------------------------------------------------------===//

#include "runtime/Candidates.h"
#include "runtime/ContextImpl.h"

#include "runtime/Tuner.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

using namespace norm;
using namespace norm::jit;

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

static std::string formatMicroseconds(double us) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f us", us);
  return buffer;
}

Status ContextImpl::plan(const OpSpec &spec, bool tune,
                         const GradientSums &sums, Reports &reports) {
  for (RowBucket bucket : kAllRowBuckets)
    reports[static_cast<int>(bucket)].bucket = bucket;
  std::optional<LaunchPlan> planned;
  if (Status status = store->findPlan(spec, planned); !status)
    return status;
  if (planned) {
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
              Status s = this->tune(spec, sums, *result);
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
    report.launch = getPlannedHeuristic(
        *compiler, spec, getTuningRows(spec, bucket), store->getTarget());
  }
  return Status::success();
}

std::vector<RowBucket> ContextImpl::loadCachedTunings(const OpSpec &spec,
                                                      Reports &reports) {
  const DeviceInfo &info = device->info;
  std::vector<RowBucket> pending;
  for (RowBucket bucket : kAllRowBuckets) {
    BucketReport &report = reports[static_cast<int>(bucket)];
    report.bucket = bucket;
    report.tunedRows = getTuningRows(spec, bucket);
    std::optional<KernelStore::TuningRecord> record = store->loadTuning(
        spec, bucket, info.getTuningIdentity(), info.driverVersion);
    if (!record) {
      pending.push_back(bucket);
      continue;
    }
    report.source = BucketReport::Source::TuningCache;
    report.launch = record->winner;
    report.tuningReport = record->report;
    log.log(LogLevel::Debug, "tuning of " + describeOpSpec(spec) + " rows " +
                                 std::string(getRowBucketName(bucket)) +
                                 ": cached, " +
                                 record->winner.getMangledSuffix());
  }
  return pending;
}

void ContextImpl::useHeuristic(const OpSpec &spec, BucketReport &report,
                               const std::string &why) {
  report.source = BucketReport::Source::Heuristic;
  report.launch = getPlannedHeuristic(*store->getCompiler(), spec,
                                      getTuningRows(spec, report.bucket),
                                      store->getTarget());
  report.tunedRows = 0;
  report.candidates.clear();
  report.tuningReport.clear();
  log.log(LogLevel::Warning,
          "not tuning " + describeOpSpec(spec) + " for rows " +
              std::string(getRowBucketName(report.bucket)) + ": " + why +
              "; it runs the heuristic's " + report.launch.getMangledSuffix());
}

void ContextImpl::fitScratchBudget(const OpSpec &spec,
                                   std::vector<RowBucket> &pending,
                                   const Runs &runs, Reports &reports) {
  int64_t budget = options.tuningScratchBytes > 0
                       ? options.tuningScratchBytes
                       : kDefaultTuningScratchBytes;
  std::vector<RowBucket> fitting;
  for (RowBucket bucket : pending) {
    BucketReport &report = reports[static_cast<int>(bucket)];
    const TuningRun &run = runs[static_cast<int>(bucket)];
    int64_t rows = fitTuningRows(spec, bucket, report.tunedRows, budget, run);
    if (rows == 0) {
      int64_t smallest = getRowBucketMinRows(bucket);
      useHeuristic(
          spec, report,
          "its scratch for " + std::to_string(smallest) + " rows takes " +
              std::to_string(getTuningScratchBytes(spec, smallest, run)) +
              " bytes, more than the budget of " + std::to_string(budget));
      continue;
    }
    if (rows < report.tunedRows)
      log.log(LogLevel::Info,
              "tuning " + describeOpSpec(spec) + " for rows " +
                  std::string(getRowBucketName(bucket)) + " at " +
                  std::to_string(rows) + " rows, not " +
                  std::to_string(report.tunedRows) +
                  ": the scratch budget is " + std::to_string(budget) +
                  " bytes");
    report.tunedRows = rows;
    fitting.push_back(bucket);
  }
  pending = std::move(fitting);
}

bool ContextImpl::allocateScratch(const OpSpec &spec, Tuner &tuner,
                                  const TuningRun &run, BucketReport &report) {
  int64_t smallest = getRowBucketMinRows(report.bucket);
  while (true) {
    Status status = tuner.allocateScratch(report.tunedRows, run);
    if (status.ok())
      return true;
    // The device has less memory than the budget: fewer rows, or none.
    if (report.tunedRows <= smallest) {
      useHeuristic(spec, report, status.message());
      return false;
    }
    report.tunedRows = std::max(report.tunedRows / 2, smallest);
    log.log(LogLevel::Info, "tuning " + describeOpSpec(spec) + " for rows " +
                                std::string(getRowBucketName(report.bucket)) +
                                " at " + std::to_string(report.tunedRows) +
                                " rows: " + status.message());
  }
}

Status ContextImpl::tune(const OpSpec &spec, const GradientSums &sums,
                         Reports &reports) {
  KernelCompiler &compiler = *store->getCompiler();
  const DeviceInfo &info = device->info;
  std::string deviceId = info.getTuningIdentity();
  std::string what = describeOpSpec(spec);

  std::vector<RowBucket> pending = loadCachedTunings(spec, reports);
  // The candidates first: decode's scratch follows them.
  Runs runs;
  std::array<LaunchConfig, kNumRowBuckets> heuristics;
  for (RowBucket bucket : pending) {
    int b = static_cast<int>(bucket);
    heuristics[b] = getPlannedHeuristic(
        compiler, spec, getTuningRows(spec, bucket), store->getTarget());
    runs[b] = {getTuningCandidates(spec, bucket, heuristics[b],
                                   store->getTarget().getMaxSharedBytes()),
               device->getSmCount()};
  }
  fitScratchBudget(spec, pending, runs, reports);
  if (pending.empty())
    return Status::success();

  // Compile every candidate of every pending bucket at once.
  std::vector<LaunchConfig> all;
  for (RowBucket bucket : pending)
    for (const LaunchConfig &launch : runs[static_cast<int>(bucket)].launches)
      if (std::find(all.begin(), all.end(), launch) == all.end())
        all.push_back(launch);
  std::vector<std::shared_ptr<const LoadedKernel>> loaded;
  std::vector<Status> loadStatus = getVariants(spec, all, loaded);
  auto indexOf = [&](const LaunchConfig &launch) {
    return std::find(all.begin(), all.end(), launch) - all.begin();
  };

  std::lock_guard<std::mutex> lock(timingMutex);
  std::unique_ptr<Tuner> tuner;
  if (Status status = Tuner::create(device, spec, tuner); !status)
    return status.withContext("tuning " + what);
  tuner->setGradientSums(sums);
  for (RowBucket bucket : pending) {
    int b = static_cast<int>(bucket);
    BucketReport &report = reports[b];
    // Each bucket's scratch is its own: decode's caches are not monotone in
    // the rows, and the budget judged each bucket alone.
    if (!allocateScratch(spec, *tuner, runs[b], report))
      continue;
    report.source = BucketReport::Source::Tuned;
    std::ostringstream table;
    table << "tuning " << what << " at " << report.tunedRows << " rows (bucket "
          << getRowBucketName(bucket) << ") on " << deviceId << ":";
    const BucketReport::Candidate *best = nullptr;
    Status firstFailure;
    for (const LaunchConfig &launch : runs[b].launches) {
      BucketReport::Candidate candidate{launch, -1, {}};
      size_t i = indexOf(launch);
      Status status = loadStatus[i];
      // The register rule keeps spilling configurations out (checked with
      // ptxas at its boundaries); this driver's compiler may still spill.
      if (status.ok() && loaded[i]->localBytes > 0)
        status = Status::error(
            ErrorCode::Unsupported,
            "spills (" + std::to_string(loaded[i]->localBytes) +
                " bytes of local memory a thread): not timed");
      if (status.ok())
        status = tuner->time(*loaded[i], candidate.microseconds);
      if (!status.ok()) {
        candidate.microseconds = -1;
        candidate.failure = status.message();
        if (firstFailure.ok())
          firstFailure = status;
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
    // With the code of the first failure: the compiler's, the driver's or
    // memory's.
    if (!best) {
      std::string context = "no tuning candidate of " + what + " for rows " +
                            std::string(getRowBucketName(bucket)) + " ran";
      if (firstFailure.ok())
        return Status::error(ErrorCode::Internal, context + ": none to run");
      return firstFailure.withContext(context);
    }
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
