//===- TuningTest.cpp - autotuning on the fake driver's clock -------------===//
//
// The fake compiler states a cost per configuration and the fake driver's
// events measure it, so the tuner's choice can be checked exactly.
//
//===----------------------------------------------------------------------===//

#include "runtime/Runtime.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

/// Latency falls with threads per row; each CTA costs more the more threads
/// share a row. One row wants about 100 threads, many rows as few as fit.
std::pair<double, double> costModel(const LaunchConfig &launch) {
  return {100000.0 / launch.threadsPerRow, 10.0 * launch.threadsPerRow};
}

double modelMicroseconds(const LaunchConfig &launch, int64_t rows) {
  auto [fixed, perCta] = costModel(launch);
  int64_t ctas = (rows + launch.rowsPerCta - 1) / launch.rowsPerCta;
  return (fixed + perCta * ctas) / 1000.0;
}

class TuningTest : public FakeDriverTest {
protected:
  std::shared_ptr<FakeCompiler> makeCompiler() {
    auto compiler = std::make_shared<FakeCompiler>();
    compiler->cost = costModel;
    return compiler;
  }
  Status tuned(std::shared_ptr<FakeCompiler> compiler, const std::string &cache,
               std::shared_ptr<const Kernel> &kernel,
               const OpSpec &spec = makeRmsNorm()) {
    std::unique_ptr<Context> context;
    if (Status status = Context::create(
            makeFakeOptions(std::move(compiler), cache, /*tuning=*/true),
            context);
        !status)
      return status;
    EXPECT_TRUE(context->isTuning());
    return context->getKernel(spec, {}, kernel);
  }
  /// The launch that wins one row with every candidate running.
  LaunchConfig getOneRowWinner() {
    std::shared_ptr<const Kernel> reference;
    EXPECT_TRUE(tuned(makeCompiler(), {}, reference).ok());
    return reference ? reference->getReport(RowBucket::One).launch
                     : LaunchConfig();
  }
  /// Tunes with `compiler` and expects `loser` to have lost one row: not
  /// chosen, not timed, with a failure that says `why`.
  void expectNotTimed(std::shared_ptr<FakeCompiler> compiler,
                      const LaunchConfig &loser, const std::string &why) {
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(tuned(std::move(compiler), {}, kernel).ok());
    const BucketReport &report = kernel->getReport(RowBucket::One);
    EXPECT_NE(report.launch, loser);
    bool seen = false;
    for (const BucketReport::Candidate &c : report.candidates)
      if (c.launch == loser) {
        seen = true;
        EXPECT_LT(c.microseconds, 0);
        EXPECT_NE(c.failure.find(why), std::string::npos) << c.failure;
      }
    EXPECT_TRUE(seen);
    EXPECT_NE(report.tuningReport.find("failed: "), std::string::npos);
  }
};

TEST_F(TuningTest, PicksTheFastestCandidatePerBucket) {
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(tuned(makeCompiler(), {}, kernel).ok());
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Tuned);
    EXPECT_EQ(report.tunedRows, getTuningRows(kernel->getSpec(), bucket));
    ASSERT_GE(report.candidates.size(), 3u);
    double best = INFINITY;
    for (const BucketReport::Candidate &c : report.candidates) {
      ASSERT_GE(c.microseconds, 0) << c.failure;
      double model = modelMicroseconds(c.launch, report.tunedRows);
      EXPECT_NEAR(c.microseconds, model, model * 1e-4)
          << c.launch.getMangledSuffix();
      best = std::min(best, model);
    }
    EXPECT_NEAR(modelMicroseconds(report.launch, report.tunedRows), best,
                best * 1e-4)
        << "bucket " << getRowBucketName(bucket) << " chose "
        << report.launch.getMangledSuffix();
  }
}

TEST_F(TuningTest, BucketsMayChooseDifferently) {
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(tuned(makeCompiler(), {}, kernel).ok());
  const LaunchConfig &one = kernel->getReport(RowBucket::One).launch;
  const LaunchConfig &many = kernel->getReport(RowBucket::More).launch;
  EXPECT_NE(one, many);
  EXPECT_EQ(one.threadsPerRow, 128);
  EXPECT_EQ(many.threadsPerRow, 64);
}

TEST_F(TuningTest, ReportsWhatItDid) {
  std::vector<std::string> lines;
  std::mutex mutex;
  ContextOptions options = makeFakeOptions(makeCompiler(), {}, true);
  options.logLevel = static_cast<int>(LogLevel::Info);
  options.logSink = [&](LogLevel, std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.emplace_back(line);
  };
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(options, context).ok());
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  const BucketReport &report = kernel->getReport(RowBucket::One);
  std::string summary;
  for (const std::string &line : lines)
    if (line.find("tuning rms_norm h4096 bf16 at 1 rows (bucket 1) on Fake "
                  "GPU cc 9.0 132 SMs:") == 0)
      summary = line;
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, report.tuningReport);
  for (const BucketReport::Candidate &c : report.candidates)
    EXPECT_NE(summary.find("\n  " + c.launch.getMangledSuffix() + "  "),
              std::string::npos)
        << summary;
  EXPECT_NE(summary.find("(heuristic)"), std::string::npos);
  EXPECT_NE(summary.find("\n  winner " + report.launch.getMangledSuffix()),
            std::string::npos)
      << summary;
  bool compiled = false;
  for (const std::string &line : lines)
    compiled |= line.find("compiled rms_norm h4096") == 0;
  EXPECT_TRUE(compiled);
}

// Benchmarks time every candidate the tuner tried at their own row counts
// through kernels that run one configuration everywhere.
TEST_F(TuningTest, FixedConfigurationsRunAtEveryRowCount) {
  std::unique_ptr<Context> context;
  ASSERT_TRUE(
      Context::create(makeFakeOptions(makeCompiler(), {}, true), context).ok());
  std::shared_ptr<const Kernel> planned, fixed;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, planned).ok());
  const BucketReport &many = planned->getReport(RowBucket::More);
  std::optional<LaunchConfig> loser;
  for (const BucketReport::Candidate &c : many.candidates)
    if (c.launch != many.launch)
      loser = c.launch;
  ASSERT_TRUE(loser);

  KernelOptions options;
  options.launch = loser;
  options.refuseMisaligned = true;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), options, fixed).ok());
  EXPECT_NE(fixed, planned);
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = fixed->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Fixed);
    EXPECT_EQ(report.launch, *loser);
    EXPECT_TRUE(report.candidates.empty());
    EXPECT_FALSE(report.scalarLaunch); // refused: never loaded
  }
  // The planned kernel is unchanged and still served from memory.
  std::shared_ptr<const Kernel> again;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, again).ok());
  EXPECT_EQ(again, planned);

  options.launch = LaunchConfig{8, 1024, 32, 1}; // 1023 idle threads
  Status status = context->getKernel(makeRmsNorm(), options, fixed);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("launch configuration v8_t1024_w32_r1 for "
                                  "rms_norm h4096 bf16: launch configuration "
                                  "leaves threads without work"),
            std::string::npos)
      << status.message();
}

TEST_F(TuningTest, FailedCandidatesAreSkipped) {
  // Reject the configuration that would win one row.
  LaunchConfig winner = getOneRowWinner();
  auto compiler = makeCompiler();
  compiler->rejects = [=](const LaunchConfig &c) { return c == winner; };
  expectNotTimed(compiler, winner, "fake compiler rejects");
}

// A candidate whose kernel the driver reports with local memory (its
// registers spilled) is never timed, and so never wins.
TEST_F(TuningTest, SpillingCandidatesAreNotTimed) {
  LaunchConfig winner = getOneRowWinner();
  std::string suffix = "_" + winner.getMangledSuffix();
  fakecuda_set_local_bytes(suffix.c_str(), 24);
  expectNotTimed(makeCompiler(), winner,
                 "spills (24 bytes of local memory a thread): not timed");
}

TEST_F(TuningTest, NoCandidateCompilingIsAnError) {
  auto compiler = makeCompiler();
  // Every configuration fails.
  compiler->rejects = [](const LaunchConfig &) { return true; };
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(compiler, {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::CompileError);
  EXPECT_NE(status.message().find("no tuning candidate of rms_norm h4096 bf16 "
                                  "for rows 1 ran"),
            std::string::npos)
      << status.message();
}

TEST_F(TuningTest, TuningOffUsesTheHeuristic) {
  auto check = [](const std::shared_ptr<const Kernel> &kernel) {
    for (RowBucket bucket : kAllRowBuckets)
      EXPECT_EQ(kernel->getReport(bucket).source,
                BucketReport::Source::Heuristic);
    EXPECT_EQ(fakecuda_launch_count(), 0);
  };
  {
    std::unique_ptr<Context> context;
    ASSERT_TRUE(
        Context::create(makeFakeOptions(makeCompiler(), {}, false), context)
            .ok());
    EXPECT_FALSE(context->isTuning());
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
    check(kernel);
  }
  {
    std::unique_ptr<Context> context;
    ASSERT_TRUE(
        Context::create(makeFakeOptions(makeCompiler(), {}, true), context)
            .ok());
    KernelOptions options;
    options.tune = false;
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), options, kernel).ok());
    check(kernel);
  }
  {
    ::setenv("NORMJIT_TUNE", "0", 1);
    std::unique_ptr<Context> context;
    Status status =
        Context::create(makeFakeOptions(makeCompiler(), {}, true), context);
    ::unsetenv("NORMJIT_TUNE");
    ASSERT_TRUE(status.ok());
    EXPECT_FALSE(context->isTuning());
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
    check(kernel);
  }
}

TEST_F(TuningTest, ScratchMemoryAndStreamsAreReleased) {
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(tuned(makeCompiler(), {}, kernel).ok());
  EXPECT_GT(fakecuda_call_count("cuMemAlloc"), 0);
  EXPECT_EQ(fakecuda_live_allocations(), 0);
  EXPECT_EQ(fakecuda_live_streams(), 0);
}

TEST_F(TuningTest, TuningResultsAreCached) {
  TempDir cache;
  std::shared_ptr<const Kernel> first, second;
  ASSERT_TRUE(tuned(makeCompiler(), cache.get(), first).ok());
  int launches = fakecuda_launch_count();
  ASSERT_GT(launches, 0);
  auto compiler = makeCompiler();
  ASSERT_TRUE(tuned(compiler, cache.get(), second).ok());
  EXPECT_EQ(fakecuda_launch_count(), launches) << "tuned again";
  EXPECT_EQ(compiler->compiles, 0);
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = second->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::TuningCache);
    EXPECT_EQ(report.launch, first->getReport(bucket).launch);
    EXPECT_EQ(report.tuningReport, first->getReport(bucket).tuningReport);
  }
  // Another driver times again.
  fakecuda_set_driver_version(13010);
  ASSERT_TRUE(tuned(makeCompiler(), cache.get(), second).ok());
  EXPECT_GT(fakecuda_launch_count(), launches);
  EXPECT_EQ(second->getReport(RowBucket::One).source,
            BucketReport::Source::Tuned);
}

// A cached winner that cannot run the operation's rows (1023 of 1024 threads
// idle on 4096 values) would fail every later process: it is discarded and
// the bucket tuned again.
TEST_F(TuningTest, CachedWinnersThatDoNotFitAreDiscarded) {
  TempDir cache;
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(tuned(makeCompiler(), cache.get(), kernel).ok());
  EXPECT_EQ(rewriteCacheEntries(cache, "tuning",
                                [](CacheEntry &entry) {
                                  setSection(entry, "winner",
                                             "v8_t1024_w32_r1");
                                }),
            kNumRowBuckets);
  int launches = fakecuda_launch_count();
  Status status = tuned(makeCompiler(), cache.get(), kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_GT(fakecuda_launch_count(), launches) << "not tuned again";
  for (RowBucket bucket : kAllRowBuckets) {
    EXPECT_EQ(kernel->getReport(bucket).source, BucketReport::Source::Tuned);
    EXPECT_NE(kernel->getReport(bucket).launch,
              (LaunchConfig{8, 1024, 32, 1}));
  }
  ASSERT_TRUE(tuned(makeCompiler(), cache.get(), kernel).ok());
  EXPECT_EQ(kernel->getReport(RowBucket::One).source,
            BucketReport::Source::TuningCache)
      << "the new result is cached";
}

TEST_F(TuningTest, ConcurrentRequestsTuneOnce) {
  std::shared_ptr<const Kernel> reference;
  ASSERT_TRUE(tuned(makeCompiler(), {}, reference).ok());
  int launches = fakecuda_launch_count();
  fakecuda_reset();

  auto compiler = makeCompiler();
  compiler->delayMs = 5;
  std::unique_ptr<Context> context;
  ASSERT_TRUE(
      Context::create(makeFakeOptions(compiler, {}, true), context).ok());
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const Kernel>> kernels(8);
  KernelOptions strict;
  strict.refuseMisaligned = true;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      // Two kernel variants of one operation share its tuning.
      EXPECT_TRUE(context
                      ->getKernel(makeRmsNorm(),
                                  t % 2 ? strict : KernelOptions(), kernels[t])
                      .ok());
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(fakecuda_launch_count(), launches);
  for (int t = 2; t < 8; ++t)
    EXPECT_EQ(kernels[t], kernels[t % 2]);
  for (RowBucket bucket : kAllRowBuckets)
    EXPECT_EQ(kernels[0]->getReport(bucket).launch,
              kernels[1]->getReport(bucket).launch);
}

//===----------------------------------------------------------------------===//
// Scratch memory: bounded, and fewer rows rather than failures
//===----------------------------------------------------------------------===//

constexpr int64_t kMiB = int64_t(1) << 20;

TEST_F(TuningTest, ScratchStaysWithinTheBudget) {
  ContextOptions options = makeFakeOptions(makeCompiler(), {}, true);
  options.tuningScratchBytes = 4 * kMiB;
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(options, context).ok());
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(makeRmsNorm(), {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_LE(fakecuda_peak_allocated_bytes(), size_t(4 * kMiB));
  // 16 KiB rows: 64 rows fit, 1024 do not (128 do), 1025 neither.
  EXPECT_EQ(kernel->getReport(RowBucket::One).tunedRows, 1);
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo64).tunedRows, 64);
  const BucketReport &medium = kernel->getReport(RowBucket::UpTo1K);
  EXPECT_EQ(medium.source, BucketReport::Source::Tuned);
  EXPECT_EQ(medium.tunedRows, 128);
  EXPECT_NE(medium.tuningReport.find(" at 128 rows (bucket <=1K)"),
            std::string::npos)
      << medium.tuningReport;
  const BucketReport &many = kernel->getReport(RowBucket::More);
  EXPECT_EQ(many.source, BucketReport::Source::Heuristic);
  EXPECT_EQ(many.tunedRows, 0);
  EXPECT_TRUE(many.candidates.empty());
  EXPECT_EQ(many.launch,
            makeCompiler()->getHeuristicLaunch(
                kernel->getSpec(), getTuningRows(kernel->getSpec(),
                                                 RowBucket::More)));
}

TEST_F(TuningTest, LongRowsTuneWithinTheDefaultBudget) {
  // 1M bf16 elements: 4 MiB of rows, 2 MiB of weight. The largest bucket
  // would take 8 GiB at its 2048 rows, 4 GiB at 1025.
  OpSpec spec = makeRmsNorm(int64_t(1) << 20);
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(makeCompiler(), {}, kernel, spec);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_LE(fakecuda_peak_allocated_bytes(),
            size_t(kDefaultTuningScratchBytes));
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo64).tunedRows, 64);
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo1K).tunedRows, 65);
  EXPECT_EQ(kernel->getReport(RowBucket::More).source,
            BucketReport::Source::Heuristic);
}

TEST_F(TuningTest, ADeviceShortOfMemoryTunesAtFewerRows) {
  // 24 MiB: 16384, 8192, 4096 and 2048 rows of 16 KiB fail, 1025 fit.
  fakecuda_set_device_memory(24 * kMiB);
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(makeCompiler(), {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(fakecuda_live_allocations(), 0);
  const BucketReport &many = kernel->getReport(RowBucket::More);
  EXPECT_EQ(many.source, BucketReport::Source::Tuned);
  EXPECT_EQ(many.tunedRows, 1025);
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo1K).tunedRows, 1024);
  EXPECT_EQ(kernel->getReport(RowBucket::One).tunedRows, 1);
}

TEST_F(TuningTest, NoMemoryForScratchMeansTheHeuristic) {
  TempDir cache;
  fakecuda_set_device_memory(1);
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(makeCompiler(), cache.get(), kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(fakecuda_launch_count(), 0);
  for (RowBucket bucket : kAllRowBuckets) {
    EXPECT_EQ(kernel->getReport(bucket).source,
              BucketReport::Source::Heuristic);
    EXPECT_EQ(kernel->getReport(bucket).tunedRows, 0);
  }
  // Not a tuning result: a device with memory tunes.
  for (const std::string &name : cache.list())
    EXPECT_NE(name.rfind("tuning-", 0), 0u) << name;
  fakecuda_set_device_memory(0);
  ASSERT_TRUE(tuned(makeCompiler(), cache.get(), kernel).ok());
  EXPECT_EQ(kernel->getReport(RowBucket::More).source,
            BucketReport::Source::Tuned);
}

} // namespace

// Attention tunes warps x block_n x stages on scratch whose sequence
// offsets are valid: one sequence of the bucket's tokens, written with
// cuMemcpyHtoD before the kernels that read them run.
TEST_F(TuningTest, AttentionTunesOnValidSequenceOffsets) {
  OpSpec spec = examples::makeAttention();
  auto compiler = makeCompiler();
  // Fewer CTAs per launch the more query rows a CTA takes; deeper pipelines
  // and wider key tiles cost a little each: 8 warps, block_n 32, 1 stage.
  compiler->cost = [](const LaunchConfig &launch) {
    return std::pair<double, double>(
        1000.0 + launch.blockN + 100.0 * launch.stages,
        1000.0 / launch.warps);
  };
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(tuned(compiler, {}, kernel, spec).ok());
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Tuned);
    // 18 shapes less those over the copies a thread may issue (2 warps
    // with block_n 64 or 128, 4 and 8 with 128) and sm_90's 227 KiB.
    EXPECT_GE(report.candidates.size(), 10u);
    for (const BucketReport::Candidate &candidate : report.candidates) {
      EXPECT_GE(candidate.microseconds, 0) << candidate.failure;
      EXPECT_TRUE(verifyLaunchFor(spec, candidate.launch, 232448));
    }
    EXPECT_EQ(report.launch.warps, 8) << report.launch.getMangledSuffix();
    EXPECT_EQ(report.launch.blockN, 32);
    EXPECT_EQ(report.launch.stages, 1);
  }
  // Every tuning launch ran one sequence of its rows, on offsets copied to
  // the scratch before.
  std::vector<fakecuda_copy> copies(fakecuda_copy_count());
  for (size_t i = 0; i < copies.size(); ++i)
    ASSERT_TRUE(fakecuda_get_copy(static_cast<int>(i), &copies[i]));
  int launches = fakecuda_launch_count();
  ASSERT_GT(launches, 0);
  std::set<int64_t> rowsSeen;
  for (int i = 0; i < launches; ++i) {
    fakecuda_launch launch;
    ASSERT_TRUE(fakecuda_get_launch(i, &launch));
    // q, k, v, q_weight, k_weight, cu_seqlens, output, rows, batch, ...
    uint64_t offsets = launch.params[5];
    int64_t rows = static_cast<int64_t>(launch.params[7]);
    EXPECT_EQ(launch.params[8], 1u) << "batch";
    rowsSeen.insert(rows);
    bool copied = false;
    for (const fakecuda_copy &copy : copies) {
      int32_t values[2];
      std::memcpy(values, copy.data, sizeof(values));
      copied |= copy.destination == offsets && copy.bytes == sizeof(values) &&
                values[0] == 0 && values[1] == rows;
    }
    EXPECT_TRUE(copied) << "launch " << i << " of " << rows
                        << " rows: no offsets {0, rows} were copied there";
    int64_t tiles = (rows + 16 * (int64_t)launch.block[0] / 32 - 1) /
                    (16 * (int64_t)launch.block[0] / 32);
    EXPECT_EQ(launch.grid[0], static_cast<unsigned>(32 * (tiles + 1)));
  }
  std::set<int64_t> tunedRows;
  for (RowBucket bucket : kAllRowBuckets)
    tunedRows.insert(kernel->getReport(bucket).tunedRows);
  EXPECT_EQ(rowsSeen, tunedRows);
}

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

namespace {

/// Decode of `qHeads` query and `kvHeads` key/value heads of 128, no
/// QK-Norm.
OpSpec makeDecode(int64_t qHeads = 8, int64_t kvHeads = 2) {
  OpSpec spec;
  spec.kind = OpKind::AttentionDecode;
  spec.hidden = 128;
  spec.numQHeads = qHeads;
  spec.numKvHeads = kvHeads;
  spec.qkStatistic = Statistic::None;
  spec.scale = 0.08838834764831845;
  return spec;
}

/// A fixed cost per configuration: the fewest warps (2, whose 16 copies a
/// thread allow block_n 32), then block_n near 64 and one stage win (not
/// the heuristic's 4 warps and 2 stages). Over 50 us, so that each
/// candidate runs few launches and the fake driver keeps all of them.
std::pair<double, double> decodeCost(const LaunchConfig &launch) {
  return {50000.0 + 1000.0 * launch.warps + 300.0 * launch.stages +
              10.0 * std::abs(static_cast<double>(launch.blockN - 64)),
          0.0};
}

/// The candidate whose kernel `launch` ran.
std::optional<LaunchConfig> findLaunch(const BucketReport &report,
                                       const fakecuda_launch &launch) {
  std::string name = launch.kernel;
  for (const BucketReport::Candidate &c : report.candidates) {
    std::string suffix = "_" + c.launch.getMangledSuffix();
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return c.launch;
  }
  return std::nullopt;
}

/// The bytes of the newest allocation at `pointer` made before launch
/// `index`; 0 when there is none.
size_t allocatedBefore(uint64_t pointer, int index) {
  size_t bytes = 0;
  for (int i = 0; i < fakecuda_alloc_count(); ++i) {
    fakecuda_alloc alloc;
    if (fakecuda_get_alloc(i, &alloc) && alloc.pointer == pointer &&
        alloc.launches_before <= index)
      bytes = alloc.bytes;
  }
  return bytes;
}

/// The newest cuMemsetD32Async before launch `index`.
std::optional<fakecuda_memset> memsetBefore(int index) {
  std::optional<fakecuda_memset> last;
  for (int i = 0; i < fakecuda_memset_d32_count(); ++i) {
    fakecuda_memset memset;
    if (fakecuda_get_memset_d32(i, &memset) && memset.launches_before <= index)
      last = memset;
  }
  return last;
}

/// The int32 values of the newest copy to `pointer` before launch `index`
/// (the first 16).
std::optional<std::vector<int32_t>> copiedTo(uint64_t pointer, int index,
                                             size_t &bytes) {
  std::optional<std::vector<int32_t>> values;
  for (int i = 0; i < fakecuda_copy_count(); ++i) {
    fakecuda_copy copy;
    if (!fakecuda_get_copy(i, &copy) || copy.destination != pointer ||
        copy.launches_before > index)
      continue;
    bytes = copy.bytes;
    values.emplace(std::min<size_t>(copy.bytes, sizeof(copy.data)) / 4);
    std::memcpy(values->data(), copy.data, values->size() * 4);
  }
  return values;
}

} // namespace

// Decode tunes its own candidates on scratch of the kernel model's sizes:
// one token per sequence, caches of getCacheTuningShape, cache lengths
// that leave each token its row, the workspace and semaphores the largest
// candidate needs, the semaphores zeroed before each candidate's launches.
// The winner is cached: a second context times nothing.
// A rope table of the tuning rows, positions inside it: every candidate
// runs (none is refused for a table without rows), its table as long as
// its rows and its positions written before.
TEST_F(TuningTest, AttentionWithARopeTableTunesInsideTheTable) {
  OpSpec spec = examples::makeAttention();
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = spec.hidden;
  spec.ropeTable = spec.ropePositions = true;
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(tuned(makeCompiler(), {}, kernel, spec).ok());
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Tuned);
    ASSERT_FALSE(report.candidates.empty());
    for (const BucketReport::Candidate &candidate : report.candidates)
      EXPECT_GE(candidate.microseconds, 0) << candidate.failure;
  }
  std::vector<fakecuda_copy> copies(fakecuda_copy_count());
  for (size_t i = 0; i < copies.size(); ++i)
    ASSERT_TRUE(fakecuda_get_copy(static_cast<int>(i), &copies[i]));
  int launches = fakecuda_launch_count();
  ASSERT_GT(launches, 0);
  for (int i = 0; i < launches; ++i) {
    fakecuda_launch launch;
    ASSERT_TRUE(fakecuda_get_launch(i, &launch));
    // q, k, v, q_weight, k_weight, cu_seqlens, positions, rope_table,
    // output, rows, batch, rope_table_rows, ...
    uint64_t positions = launch.params[6];
    int64_t rows = static_cast<int64_t>(launch.params[9]);
    EXPECT_EQ(static_cast<int64_t>(launch.params[11]), rows)
        << "launch " << i << ": rope_table_rows";
    bool copied = false;
    for (const fakecuda_copy &copy : copies) {
      int32_t first[2];
      std::memcpy(first, copy.data, sizeof(first));
      copied |= copy.destination == positions &&
                copy.bytes == static_cast<size_t>(rows) * 4 &&
                first[0] == 0 && (rows < 2 || first[1] == 1);
    }
    EXPECT_TRUE(copied) << "launch " << i << ": no positions 0, 1, ... copied";
  }
}

TEST_F(TuningTest, DecodeTunesOnCachesAndZeroedSemaphores) {
  TempDir cache;
  OpSpec spec = makeDecode();
  auto compiler = makeCompiler();
  compiler->cost = decodeCost;
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(compiler, cache.get(), kernel, spec);
  ASSERT_TRUE(status.ok()) << status.message();
  const int64_t sms = 132;
  std::array<TuningRun, kNumRowBuckets> runs;
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Tuned);
    EXPECT_EQ(report.tunedRows, getTuningRows(spec, bucket));
    LaunchConfig heuristic =
        getHeuristicLaunch(spec, getTuningRows(spec, bucket));
    std::vector<LaunchConfig> candidates =
        getTuningCandidates(spec, bucket, heuristic, 232448);
    runs[static_cast<int>(bucket)] = {candidates, sms};
    ASSERT_EQ(report.candidates.size(), candidates.size());
    EXPECT_EQ(report.candidates.size(), 14u); // 4 with key-split warps
    for (size_t i = 0; i < candidates.size(); ++i) {
      EXPECT_EQ(report.candidates[i].launch, candidates[i]);
      EXPECT_GE(report.candidates[i].microseconds, 0)
          << report.candidates[i].failure;
    }
    EXPECT_EQ(report.launch, (LaunchConfig{8, 16, 2, 32, 32, 1}))
        << report.launch.getMangledSuffix();
  }

  int launches = fakecuda_launch_count();
  ASSERT_GT(launches, 0);
  std::set<int64_t> rowsSeen;
  for (int i = 0; i < launches; ++i) {
    fakecuda_launch launch;
    ASSERT_TRUE(fakecuda_get_launch(i, &launch));
    // q, k, v, cu_seqlens, cache_seqlens, output, k_cache, v_cache,
    // workspace, semaphores, rows, batch, kv_splits, cache_capacity, ...
    ASSERT_EQ(launch.num_params, 20);
    int64_t rows = static_cast<int64_t>(launch.params[10]);
    RowBucket bucket = getRowBucket(rows);
    const BucketReport &report = kernel->getReport(bucket);
    ASSERT_EQ(rows, report.tunedRows);
    rowsSeen.insert(rows);
    std::optional<LaunchConfig> config = findLaunch(report, launch);
    ASSERT_TRUE(config) << launch.kernel;
    DecodeShape shape = getDecodeTuningLaunch(spec, rows, *config, sms);
    EXPECT_EQ(launch.params[11], uint64_t(rows)) << "one token a sequence";
    EXPECT_EQ(launch.params[12], uint64_t(shape.splits));
    EXPECT_EQ(launch.params[13], uint64_t(shape.cacheCapacity));
    EXPECT_EQ(launch.grid[0],
              unsigned(2 * shape.splits *
                       getDecodeTiles(spec, config->rowsPerCta, shape)));

    // Each buffer as large as the model states for the bucket's run.
    const TuningRun &run = runs[static_cast<int>(bucket)];
    std::vector<BufferSpec> buffers = getBuffers(spec);
    ASSERT_EQ(buffers.size(), 10u);
    for (size_t b = 0; b < buffers.size(); ++b)
      EXPECT_EQ(allocatedBefore(launch.params[b], i),
                size_t(getTuningBufferElements(spec, buffers[b], rows, run) *
                       getElementBytes(buffers[b].type)))
          << getBufferSlotName(buffers[b].slot) << " of launch " << i;
    EXPECT_EQ(allocatedBefore(launch.params[6], i),
              size_t(rows * shape.cacheCapacity * 2 * 128 * 2));
    EXPECT_GE(allocatedBefore(launch.params[8], i),
              size_t(4 * getLaunchLength(spec, BufferSlot::Workspace,
                                         config->rowsPerCta, shape)));

    // One sequence of each token, each with capacity - 1 cached keys.
    size_t bytes = 0;
    std::optional<std::vector<int32_t>> offsets =
        copiedTo(launch.params[3], i, bytes);
    ASSERT_TRUE(offsets) << "no cu_seqlens copied for launch " << i;
    EXPECT_EQ(bytes, size_t(4 * (rows + 1)));
    for (size_t k = 0; k < offsets->size(); ++k)
      EXPECT_EQ((*offsets)[k], int32_t(k));
    std::optional<std::vector<int32_t>> lengths =
        copiedTo(launch.params[4], i, bytes);
    ASSERT_TRUE(lengths) << "no cache_seqlens copied for launch " << i;
    EXPECT_EQ(bytes, size_t(4 * rows));
    for (int32_t length : *lengths)
      EXPECT_EQ(length, shape.cacheCapacity - 1);

    // Semaphores zeroed on the tuner's stream, all of them, after the
    // launches of any other candidate.
    std::optional<fakecuda_memset> zeroed = memsetBefore(i);
    ASSERT_TRUE(zeroed) << "semaphores of launch " << i << " never zeroed";
    EXPECT_EQ(zeroed->pointer, launch.params[9]);
    EXPECT_EQ(zeroed->value, 0u);
    EXPECT_EQ(zeroed->stream, launch.stream);
    EXPECT_GE(zeroed->count,
              size_t(getLaunchLength(spec, BufferSlot::Semaphores,
                                     config->rowsPerCta, shape)));
    for (int j = zeroed->launches_before; j < i; ++j) {
      fakecuda_launch earlier;
      ASSERT_TRUE(fakecuda_get_launch(j, &earlier));
      EXPECT_STREQ(earlier.kernel, launch.kernel)
          << "launch " << i << " runs on semaphores launch " << j
          << " of another candidate used";
    }
  }
  std::set<int64_t> tunedRows;
  for (RowBucket bucket : kAllRowBuckets)
    tunedRows.insert(kernel->getReport(bucket).tunedRows);
  EXPECT_EQ(rowsSeen, tunedRows);
  EXPECT_EQ(fakecuda_live_allocations(), 0) << "scratch left behind";

  // The tuning cache serves a second context: nothing compiled or timed.
  auto again = makeCompiler();
  std::shared_ptr<const Kernel> cached;
  ASSERT_TRUE(tuned(again, cache.get(), cached, spec).ok());
  EXPECT_EQ(fakecuda_launch_count(), launches) << "tuned again";
  EXPECT_EQ(again->compiles, 0);
  for (RowBucket bucket : kAllRowBuckets) {
    EXPECT_EQ(cached->getReport(bucket).source,
              BucketReport::Source::TuningCache);
    EXPECT_EQ(cached->getReport(bucket).launch,
              kernel->getReport(bucket).launch);
  }
}

// K-prepare into a cache tunes on kTuningSequences sequences of the rows,
// each written into an empty cache that holds it: every launch passes that
// capacity and the caches' own rows.
TEST_F(TuningTest, KeyPrepareCacheTunesIntoEmptyCaches) {
  OpSpec spec;
  spec.kind = OpKind::KeyPrepare;
  spec.hidden = 128;
  spec.numKvHeads = 8;
  spec.qkStatistic = Statistic::RMS;
  spec.writeCache = true;
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(makeCompiler(), {}, kernel, spec);
  ASSERT_TRUE(status.ok()) << status.message();
  int launches = fakecuda_launch_count();
  ASSERT_GT(launches, 0);
  for (int i = 0; i < launches; ++i) {
    fakecuda_launch launch;
    ASSERT_TRUE(fakecuda_get_launch(i, &launch));
    // k, v, cu_seqlens, cache_seqlens, k_cache, v_cache, rows, batch,
    // cache_capacity, then the strides of k, v, k_cache, v_cache.
    ASSERT_EQ(launch.num_params, 13);
    int64_t rows = static_cast<int64_t>(launch.params[6]);
    EXPECT_EQ(launch.params[7], uint64_t(kTuningSequences));
    EXPECT_EQ(launch.params[8],
              uint64_t(getCacheTuningShape(spec, rows).cacheCapacity));
    EXPECT_GE(launch.params[8] * kTuningSequences, uint64_t(rows));
  }
}

// The budget counts decode's caches and workspace, so the scratch the
// tuner allocates stays within it: the largest bucket of 32 query and 8
// kv heads takes 512 MiB of caches at 2048 sequences and tunes at 1025.
TEST_F(TuningTest, DecodeScratchStaysWithinTheBudget) {
  OpSpec spec = makeDecode(32, 8);
  auto compiler = makeCompiler();
  compiler->cost = decodeCost;
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(compiler, {}, kernel, spec);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(kernel->getReport(RowBucket::More).tunedRows, 1025);
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo1K).tunedRows, 1024);
  EXPECT_LE(fakecuda_peak_allocated_bytes(),
            size_t(kDefaultTuningScratchBytes));
  // What was allocated is what the budget judged: the largest bucket's.
  TuningRun run{getTuningCandidates(spec, RowBucket::More,
                                    getHeuristicLaunch(spec, 2048), 232448),
                132};
  EXPECT_EQ(fakecuda_peak_allocated_bytes(),
            size_t(getTuningScratchBytes(spec, 1025, run)));

  // A budget a byte short of 64 sequences' scratch, workspace and
  // semaphores included: 32 of them.
  OpSpec small = makeDecode();
  TuningRun run64{getTuningCandidates(small, RowBucket::UpTo64,
                                      getHeuristicLaunch(small, 64), 232448),
                  132};
  int64_t budget = getTuningScratchBytes(small, 64, run64) - 1;
  fakecuda_reset();
  ContextOptions options = makeFakeOptions(makeCompiler(), {}, true);
  options.tuningScratchBytes = budget;
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(options, context).ok());
  ASSERT_TRUE(context->getKernel(small, {}, kernel).ok());
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo64).tunedRows, 32);
  EXPECT_LE(fakecuda_peak_allocated_bytes(), size_t(budget));

  // A budget below one sequence's 4096 keys (16 MiB): the heuristic.
  fakecuda_reset();
  options.tuningScratchBytes = 8 << 20;
  ASSERT_TRUE(Context::create(options, context).ok());
  ASSERT_TRUE(context->getKernel(spec, {}, kernel).ok());
  const BucketReport &one = kernel->getReport(RowBucket::One);
  EXPECT_EQ(one.source, BucketReport::Source::Heuristic);
  EXPECT_EQ(one.launch, getHeuristicLaunch(spec, 1));
  EXPECT_LE(fakecuda_peak_allocated_bytes(), size_t(8 << 20));
}

// Driver failures are statuses: a candidate whose semaphores cannot be
// zeroed fails with the driver's message and loses; when none can, the
// tuning fails with it.
TEST_F(TuningTest, DecodeReportsFailuresAsStatuses) {
  OpSpec spec = makeDecode();
  auto compiler = makeCompiler();
  compiler->cost = decodeCost;
  fakecuda_fail_next("cuMemsetD32Async", 1, 1); // CUDA_ERROR_INVALID_VALUE
  std::shared_ptr<const Kernel> kernel;
  Status status = tuned(compiler, {}, kernel, spec);
  ASSERT_TRUE(status.ok()) << status.message();
  const BucketReport &report = kernel->getReport(RowBucket::One);
  ASSERT_FALSE(report.candidates.empty());
  const BucketReport::Candidate &first = report.candidates.front();
  EXPECT_LT(first.microseconds, 0);
  EXPECT_NE(first.failure.find("zeroing the decode semaphores: "
                               "cuMemsetD32Async"),
            std::string::npos)
      << first.failure;
  EXPECT_EQ(report.source, BucketReport::Source::Tuned);
  EXPECT_NE(report.launch, first.launch);

  fakecuda_reset();
  fakecuda_fail_next("cuMemsetD32Async", 1, 1 << 20);
  status = tuned(makeCompiler(), {}, kernel, spec);
  EXPECT_EQ(status.code(), ErrorCode::DriverError);
  EXPECT_NE(status.message().find("no tuning candidate of attention_decode"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("zeroing the decode semaphores"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(fakecuda_launch_count(), 0);
  EXPECT_EQ(fakecuda_live_allocations(), 0);
}

// A bundle keeps decode's tuned plans; a context without a compiler serves
// them.
TEST_F(TuningTest, DecodeBundlesCarryTheTunedPlans) {
  TempDir dir;
  OpSpec spec = makeDecode();
  auto compiler = makeCompiler();
  compiler->cost = decodeCost;
  std::unique_ptr<Context> context;
  ASSERT_TRUE(
      Context::create(makeFakeOptions(compiler, {}, true), context).ok());
  ASSERT_TRUE(context->writeBundle({spec}, dir / "decode.njb").ok());
  std::shared_ptr<const Kernel> tunedKernel;
  ASSERT_TRUE(context->getKernel(spec, {}, tunedKernel).ok());

  ContextOptions options = makeFakeOptions(nullptr);
  options.bundles = {dir / "decode.njb"};
  ASSERT_TRUE(Context::create(options, context).ok());
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(spec, {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  for (RowBucket bucket : kAllRowBuckets) {
    EXPECT_EQ(tunedKernel->getReport(bucket).source,
              BucketReport::Source::Tuned);
    EXPECT_EQ(kernel->getReport(bucket).source, BucketReport::Source::Bundle);
    EXPECT_EQ(kernel->getReport(bucket).launch,
              tunedKernel->getReport(bucket).launch);
  }
}
