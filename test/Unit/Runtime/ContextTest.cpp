//===- ContextTest.cpp - contexts, kernel caches, bundles -----------------===//
//
// On the fake driver (FakeCuda.h) with a counting fake compiler.
//
//===----------------------------------------------------------------------===//

#include "runtime/Runtime.h"

#include "runtime/Bundle.h"
#include "runtime/DiskCache.h"
#include "runtime/KernelStore.h"
#include "test/Unit/Runtime/TestSupport.h"

#include <atomic>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

extern char **environ;

namespace {

using ContextTest = FakeDriverTest;

Status createContext(const ContextOptions &options,
                     std::unique_ptr<Context> &context) {
  return Context::create(options, context);
}

//===----------------------------------------------------------------------===//
// Driver and device errors
//===----------------------------------------------------------------------===//

TEST_F(ContextTest, NoDriverLibrary) {
  ContextOptions options;
  options.driverLibrary = "/nonexistent/libcuda.so.1";
  std::unique_ptr<Context> context;
  Status status = createContext(options, context);
  EXPECT_EQ(status.code(), ErrorCode::NoDriver);
  EXPECT_NE(status.message().find("/nonexistent/libcuda.so.1"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(context, nullptr);
}

TEST_F(ContextTest, DriverPathsMustBeRegularFiles) {
  // dlopen of a FIFO would block forever.
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "libcuda.so.1").c_str(), 0644), 0);
  for (const std::string &path : {dir / "libcuda.so.1", dir.get()}) {
    ContextOptions options;
    options.driverLibrary = path;
    std::unique_ptr<Context> context;
    Status status;
    runWithWatchdog(60, [&] { status = createContext(options, context); });
    EXPECT_EQ(status.code(), ErrorCode::NoDriver);
    EXPECT_NE(status.message().find("'" + path + "': not a regular file"),
              std::string::npos)
        << status.message();
  }
}

TEST_F(ContextTest, DefaultDriverIsLoadedOrReportedMissing) {
  // libcuda.so.1 itself: missing on machines without a GPU (NoDriver), a
  // device elsewhere. Either way a status, never a crash.
  ContextOptions options;
  options.logLevel = 0;
  std::unique_ptr<Context> context;
  Status status = createContext(options, context);
  if (!status.ok()) {
    EXPECT_TRUE(status.code() == ErrorCode::NoDriver ||
                status.code() == ErrorCode::NoDevice)
        << status.message();
    EXPECT_NE(status.message().find("libcuda.so.1"), std::string::npos)
        << status.message();
  }
}

TEST_F(ContextTest, StubLibraryIsNotADriver) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub).good())
    GTEST_SKIP() << "no CUDA toolkit stub library here";
  ContextOptions options;
  options.driverLibrary = stub;
  std::unique_ptr<Context> context;
  Status status = createContext(options, context);
  EXPECT_EQ(status.code(), ErrorCode::NoDriver) << status.message();
  EXPECT_NE(status.message().find("stub"), std::string::npos)
      << status.message();
}

TEST_F(ContextTest, NoDevice) {
  fakecuda_set_device_count(0);
  std::unique_ptr<Context> context;
  Status status = createContext(makeFakeOptions(nullptr), context);
  EXPECT_EQ(status.code(), ErrorCode::NoDevice);
  EXPECT_NE(status.message().find("no device"), std::string::npos)
      << status.message();

  fakecuda_set_device_count(1);
  ContextOptions options = makeFakeOptions(nullptr);
  options.device = 1;
  status = createContext(options, context);
  EXPECT_EQ(status.code(), ErrorCode::NoDevice);
  EXPECT_NE(status.message().find("no CUDA device 1: the driver sees 1"),
            std::string::npos)
      << status.message();
}

TEST_F(ContextTest, OldDriverAndDevice) {
  fakecuda_set_driver_version(11080);
  std::unique_ptr<Context> context;
  Status status = createContext(makeFakeOptions(nullptr), context);
  EXPECT_EQ(status.code(), ErrorCode::NoDriver);
  EXPECT_NE(status.message().find("CUDA 11.8; libnormjit needs 12.0"),
            std::string::npos)
      << status.message();

  fakecuda_reset();
  fakecuda_set_compute_capability(7, 5);
  status = createContext(makeFakeOptions(nullptr), context);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);
  EXPECT_NE(status.message().find("compute capability 7.5"), std::string::npos)
      << status.message();
  EXPECT_EQ(fakecuda_primary_context_retains(), 0);
}

TEST_F(ContextTest, DriverFailuresAreReported) {
  fakecuda_fail_next("cuInit", 1, 1);
  std::unique_ptr<Context> context;
  Status status = createContext(makeFakeOptions(nullptr), context);
  EXPECT_EQ(status.code(), ErrorCode::DriverError);
  EXPECT_NE(status.message().find("cuInit failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << status.message();
  fakecuda_fail_next("cuDevicePrimaryCtxRetain", 2, 1);
  status = createContext(makeFakeOptions(nullptr), context);
  EXPECT_EQ(status.code(), ErrorCode::DriverError);
  EXPECT_NE(status.message().find("CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << status.message();
}

TEST_F(ContextTest, DeviceInfoAndChip) {
  for (auto [major, minor, chip] :
       {std::tuple{8, 0, "sm_80"}, std::tuple{8, 6, "sm_80"},
        std::tuple{8, 9, "sm_89"}, std::tuple{9, 0, "sm_90"},
        std::tuple{10, 0, "sm_90"}}) {
    fakecuda_set_compute_capability(major, minor);
    std::unique_ptr<Context> context;
    ASSERT_TRUE(createContext(makeFakeOptions(nullptr), context).ok());
    const DeviceInfo &info = context->getDeviceInfo();
    EXPECT_EQ(info.chip, chip);
    EXPECT_EQ(info.name, "Fake GPU");
    EXPECT_EQ(info.multiprocessors, 132);
    EXPECT_EQ(info.driverVersion, 13000);
  }
  EXPECT_EQ(fakecuda_primary_context_retains(), 0);
}

//===----------------------------------------------------------------------===//
// Kernels and the in-memory cache
//===----------------------------------------------------------------------===//

TEST_F(ContextTest, KernelsAreBuiltOnce) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
  std::shared_ptr<const Kernel> a, b;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, a).ok());
  int compiles = compiler->compiles;
  EXPECT_GE(compiles, 2); // the heuristic configuration and its scalar variant
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = a->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Heuristic);
    ASSERT_TRUE(report.scalarLaunch);
    EXPECT_EQ(report.scalarLaunch->vector, 1);
  }
  // The same operation, and one differing only in fields it does not use.
  OpSpec same = makeRmsNorm();
  same.addendType = ElementType::f32;
  ASSERT_TRUE(context->getKernel(same, {}, b).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(compiler->compiles, compiles);
  // Another hidden size is another kernel.
  ASSERT_TRUE(context->getKernel(makeRmsNorm(2048), {}, b).ok());
  EXPECT_NE(a, b);
  EXPECT_GT(compiler->compiles, compiles);
}

TEST_F(ContextTest, InvalidOperationsCompileNothing) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
  OpSpec bad = makeRmsNorm(0);
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(bad, {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("hidden size"), std::string::npos);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_EQ(compiler->compiles, 0);
}

TEST_F(ContextTest, CompileErrorsAreReportedAndNotCached) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
  OpSpec spec = makeRmsNorm();
  LaunchConfig heuristic = compiler->getHeuristicLaunch(spec, 1);
  compiler->rejects = [=](const LaunchConfig &c) { return c == heuristic; };
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(spec, {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::CompileError);
  EXPECT_NE(status.message().find("fake compiler rejects " +
                                  heuristic.getMangledSuffix()),
            std::string::npos)
      << status.message();
  // A later request tries again.
  compiler->rejects = [](const LaunchConfig &) { return false; };
  EXPECT_TRUE(context->getKernel(spec, {}, kernel).ok());
}

TEST_F(ContextTest, KernelsTooLargeForTheDevice) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
  fakecuda_set_max_threads_per_block(64);
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(makeRmsNorm(), {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);
  EXPECT_NE(status.message().find("at most 64 threads per block"),
            std::string::npos)
      << status.message();
}

TEST_F(ContextTest, ConcurrentFirstRequestsShareOneBuild) {
  // How many compiles one request needs.
  auto reference = std::make_shared<FakeCompiler>();
  {
    std::unique_ptr<Context> context;
    ASSERT_TRUE(createContext(makeFakeOptions(reference), context).ok());
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  }
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->delayMs = 20; // keep the race window open
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
  constexpr int kThreads = 16;
  std::vector<std::shared_ptr<const Kernel>> kernels(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      if (!context->getKernel(makeRmsNorm(), {}, kernels[t]).ok())
        ++failures;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures, 0);
  for (const auto &kernel : kernels)
    EXPECT_EQ(kernel, kernels[0]);
  EXPECT_EQ(compiler->compiles, reference->compiles);
}

TEST_F(ContextTest, KernelsOutliveTheirContext) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::shared_ptr<const Kernel> kernel;
  {
    std::unique_ptr<Context> context;
    ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  }
  EXPECT_GT(fakecuda_live_modules(), 0);
  EXPECT_EQ(fakecuda_primary_context_retains(), 1);
  kernel.reset();
  EXPECT_EQ(fakecuda_live_modules(), 0);
  EXPECT_EQ(fakecuda_primary_context_retains(), 0);
  EXPECT_EQ(fakecuda_live_allocations(), 0);
}

//===----------------------------------------------------------------------===//
// The disk cache
//===----------------------------------------------------------------------===//

TEST_F(ContextTest, DiskCacheServesTheNextContext) {
  TempDir cache;
  auto first = std::make_shared<FakeCompiler>();
  {
    std::unique_ptr<Context> context;
    ASSERT_TRUE(
        createContext(makeFakeOptions(first, cache.get()), context).ok());
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  }
  ASSERT_GT(first->compiles, 0);
  EXPECT_EQ(cache.list().size(), static_cast<size_t>(first->compiles.load()));

  int links = fakecuda_call_count("cuLinkComplete");
  auto second = std::make_shared<FakeCompiler>();
  std::unique_ptr<Context> context;
  ASSERT_TRUE(
      createContext(makeFakeOptions(second, cache.get()), context).ok());
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  EXPECT_EQ(second->compiles, 0);
  // The cubin linked the first time is loaded as is.
  EXPECT_EQ(fakecuda_call_count("cuLinkComplete"), links);
}

/// Builds makeRmsNorm() in a context on `cache`; the compiles it took.
int buildOnce(const std::string &cache, int driverVersion = 13000,
              const std::string &version = "fake-compiler-1") {
  fakecuda_set_driver_version(driverVersion);
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->version = version;
  std::unique_ptr<Context> context;
  EXPECT_TRUE(createContext(makeFakeOptions(compiler, cache), context).ok());
  std::shared_ptr<const Kernel> kernel;
  EXPECT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  return compiler->compiles;
}

TEST_F(ContextTest, CorruptDiskEntriesAreRebuilt) {
  TempDir cache;
  int compiles = buildOnce(cache.get());
  ASSERT_GT(compiles, 0);
  for (const std::string &name : cache.list()) {
    std::string bytes;
    ASSERT_TRUE(readFile(cache / name, kMaxCacheEntryBytes, bytes).ok());
    bytes[bytes.size() / 2] ^= 0x55;
    std::ofstream(cache / name, std::ios::binary | std::ios::trunc) << bytes;
  }
  EXPECT_EQ(buildOnce(cache.get()), compiles);
  EXPECT_EQ(buildOnce(cache.get()), 0) << "the rebuilt entries are good";

  // Truncated to nothing.
  for (const std::string &name : cache.list())
    std::ofstream(cache / name, std::ios::trunc);
  EXPECT_EQ(buildOnce(cache.get()), compiles);
}

// Hostile cache directories: FIFOs and links to /dev/zero under the names of
// entries are refused without blocking, deleted and rebuilt.
TEST_F(ContextTest, SpecialFilesInTheCacheAreRebuilt) {
  TempDir cache;
  int compiles = buildOnce(cache.get());
  ASSERT_GT(compiles, 0);
  std::vector<std::string> names = cache.list();
  for (size_t i = 0; i < names.size(); ++i) {
    std::string path = cache / names[i];
    ASSERT_EQ(::unlink(path.c_str()), 0);
    if (i % 2)
      ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
    else
      ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
  }
  int rebuilt = -1;
  runWithWatchdog(60, [&] { rebuilt = buildOnce(cache.get()); });
  EXPECT_EQ(rebuilt, compiles);
  EXPECT_EQ(buildOnce(cache.get()), 0) << "the rebuilt entries are good";
}

TEST_F(ContextTest, BundlePathsMustBeRegularFiles) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo.njb").c_str(), 0644), 0);
  for (const std::string &path : {dir / "fifo.njb", std::string("/dev/zero")}) {
    ContextOptions options = makeFakeOptions(nullptr);
    options.bundles = {path};
    std::unique_ptr<Context> context;
    Status status;
    runWithWatchdog(60, [&] { status = createContext(options, context); });
    EXPECT_EQ(status.code(), ErrorCode::IoError);
    EXPECT_NE(status.message().find("kernel bundle: '" + path +
                                    "' is not a regular file"),
              std::string::npos)
        << status.message();
  }
}

// A valid checksum proves an entry intact, not right: a signature that is not
// the kernel of its key (here rows_per_cta doubled, which would skip every
// other row) is deleted and compiled again.
TEST_F(ContextTest, EntriesWhoseSignatureIsNotTheirKernelAreRebuilt) {
  TempDir cache;
  int compiles = buildOnce(cache.get());
  ASSERT_GT(compiles, 0);
  EXPECT_EQ(rewriteCacheEntries(cache, "kernel",
                                [](CacheEntry &entry) {
                                  editSignature(entry, [](KernelSignature &s) {
                                    s.launch.rowsPerCta *= 2;
                                  });
                                }),
            compiles);
  EXPECT_EQ(buildOnce(cache.get()), compiles);
  EXPECT_EQ(buildOnce(cache.get()), 0) << "the rebuilt entries are good";
}

TEST_F(ContextTest, BundleEntriesWhoseSignatureIsNotTheirKernelAreRefused) {
  TempDir dir;
  {
    std::unique_ptr<Context> context;
    ASSERT_TRUE(createContext(makeFakeOptions(std::make_shared<FakeCompiler>()),
                              context)
                    .ok());
    ASSERT_TRUE(context->writeBundle({makeRmsNorm()}, dir / "b.njb").ok());
  }
  std::shared_ptr<const Bundle> bundle;
  ASSERT_TRUE(Bundle::read(dir / "b.njb", bundle).ok());
  // Rewrites the bundle with `edit` applied to its entries.
  auto rewrite = [&](const std::function<void(const std::string &,
                                              CacheEntry &)> &edit) {
    BundleWriter writer(bundle->getInfo());
    for (const auto &[key, entry] : bundle->getEntries()) {
      CacheEntry copy = entry;
      edit(key, copy);
      writer.add(key, copy);
    }
    ASSERT_TRUE(writer.write(dir / "forged.njb").ok());
  };
  auto serve = [&]() {
    ContextOptions options = makeFakeOptions(nullptr);
    options.bundles = {dir / "forged.njb"};
    std::unique_ptr<Context> context;
    EXPECT_TRUE(createContext(options, context).ok());
    std::shared_ptr<const Kernel> kernel;
    return context ? context->getKernel(makeRmsNorm(), {}, kernel)
                   : Status::error(ErrorCode::Internal, "no context");
  };
  rewrite([](const std::string &key, CacheEntry &entry) {
    if (key.rfind("normjit kernel", 0) == 0)
      editSignature(entry,
                    [](KernelSignature &s) { s.launch.rowsPerCta *= 2; });
  });
  Status status = serve();
  EXPECT_EQ(status.code(), ErrorCode::IoError);
  EXPECT_NE(status.message().find("kernel bundle '" + dir / "forged.njb" +
                                  "' is refused: the signature of kernel"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find(": launch v8_t64_w4_r4, expected v8_t64_w4_r2"), std::string::npos)
      << status.message();

  // A plan whose configuration does not fit the rows.
  rewrite([](const std::string &key, CacheEntry &entry) {
    if (key.rfind("normjit plan", 0) == 0)
      setSection(entry, ">1K", "v8_t1024_w32_r1");
  });
  status = serve();
  EXPECT_EQ(status.code(), ErrorCode::IoError);
  EXPECT_NE(status.message().find("is refused: its plan for rms_norm h4096 "
                                  "bf16 runs v8_t1024_w32_r1 for rows >1K, "
                                  "which does not fit its rows"),
            std::string::npos)
      << status.message();
  rewrite([](const std::string &, CacheEntry &) {});
  EXPECT_TRUE(serve().ok()) << "the unedited bundle serves";
}

TEST_F(ContextTest, StaleCubinsAreLinkedAgain) {
  TempDir cache;
  ASSERT_GT(buildOnce(cache.get(), 13000), 0);
  // A driver update: the PTX stays valid, the cubins are linked again.
  int links = fakecuda_call_count("cuLinkComplete");
  EXPECT_EQ(buildOnce(cache.get(), 13010), 0);
  int relinks = fakecuda_call_count("cuLinkComplete") - links;
  EXPECT_GT(relinks, 0);
  // ... and written back for the new driver.
  links = fakecuda_call_count("cuLinkComplete");
  EXPECT_EQ(buildOnce(cache.get(), 13010), 0);
  EXPECT_EQ(fakecuda_call_count("cuLinkComplete"), links);

  // A cubin the driver rejects is linked again from its PTX.
  fakecuda_fail_next("cuModuleLoadDataEx", 200, 1);
  EXPECT_EQ(buildOnce(cache.get(), 13010), 0);
  EXPECT_GT(fakecuda_call_count("cuLinkComplete"), links);
}

TEST_F(ContextTest, CompilerVersionIsPartOfTheKey) {
  TempDir cache;
  int compiles = buildOnce(cache.get(), 13000, "v1");
  EXPECT_EQ(buildOnce(cache.get(), 13000, "v1"), 0);
  EXPECT_EQ(buildOnce(cache.get(), 13000, "v2"), compiles);
}

TEST_F(ContextTest, PtxTheDriverRejectsIsCompiledAgain) {
  TempDir cache;
  int compiles = buildOnce(cache.get());
  // Replace every cached PTX with text the driver cannot link, keeping the
  // entries well formed: the cache cannot see it, the driver can.
  for (const std::string &name : cache.list()) {
    std::string bytes, key, why;
    ASSERT_TRUE(readFile(cache / name, kMaxCacheEntryBytes, bytes).ok());
    CacheEntry entry, rewritten;
    ASSERT_TRUE(parseCacheEntry(bytes, key, entry, why)) << why;
    rewritten.add("signature", *entry.find("signature"));
    rewritten.add("ptx", "garbage");
    std::ofstream(cache / name, std::ios::binary | std::ios::trunc)
        << serializeCacheEntry(key, rewritten);
  }
  EXPECT_EQ(buildOnce(cache.get()), compiles);
  EXPECT_EQ(buildOnce(cache.get()), 0);
}

/// The second half of SecondProcessReusesTheCache, run in a child process.
TEST_F(ContextTest, SecondProcessChild) {
  const char *cache = std::getenv("NORMJIT_TEST_CHILD_CACHE");
  if (!cache)
    GTEST_SKIP() << "runs as the child of SecondProcessReusesTheCache";
  auto compiler = std::make_shared<FakeCompiler>();
  std::unique_ptr<Context> context;
  ASSERT_TRUE(
      createContext(makeFakeOptions(compiler, cache, /*tuning=*/true), context)
          .ok());
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  EXPECT_EQ(compiler->compiles, 0);
  EXPECT_EQ(fakecuda_call_count("cuLinkComplete"), 0);
  EXPECT_EQ(fakecuda_launch_count(), 0) << "tuned again";
  for (RowBucket bucket : kAllRowBuckets)
    EXPECT_EQ(kernel->getReport(bucket).source,
              BucketReport::Source::TuningCache);
  // Tells the parent that this test ran and passed.
  if (!HasFailure())
    std::ofstream(std::string(cache) + "/../child-passed") << "yes";
}

TEST_F(ContextTest, SecondProcessReusesTheCache) {
  TempDir dir;
  std::string cache = dir / "cache";
  {
    auto compiler = std::make_shared<FakeCompiler>();
    std::unique_ptr<Context> context;
    ASSERT_TRUE(createContext(makeFakeOptions(compiler, cache, /*tuning=*/true),
                              context)
                    .ok());
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
    ASSERT_GT(compiler->compiles, 0);
  }
  std::string variable = "NORMJIT_TEST_CHILD_CACHE=" + cache;
  std::vector<char *> env;
  for (char **e = environ; *e; ++e)
    if (std::string_view(*e).substr(0, 6) != "GTEST_") // no sharding, no JSON
      env.push_back(*e);
  env.push_back(variable.data());
  env.push_back(nullptr);
  std::string filter = "--gtest_filter=ContextTest.SecondProcessChild";
  std::string self = "/proc/self/exe";
  char *argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid;
  ASSERT_EQ(
      ::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data()), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the second process recompiled";
  EXPECT_TRUE(std::ifstream(dir / "child-passed").good())
      << "the second process did not run its test";
}

//===----------------------------------------------------------------------===//
// Runtime-only: bundles and no compiler
//===----------------------------------------------------------------------===//

TEST_F(ContextTest, WithoutCompilerKernelsComeFromBundles) {
  TempDir dir;
  OpSpec fused = makeRmsNorm(7168);
  fused.hasAddend = fused.writeResidual = true;
  std::vector<OpSpec> specs = {makeRmsNorm(4096), fused};
  std::array<std::array<LaunchConfig, kNumRowBuckets>, 2> planned;
  {
    auto compiler = std::make_shared<FakeCompiler>();
    std::unique_ptr<Context> context;
    ASSERT_TRUE(
        createContext(makeFakeOptions(compiler, {}, true), context).ok());
    ASSERT_TRUE(context->writeBundle(specs, dir / "kernels.njb").ok());
    for (size_t i = 0; i < specs.size(); ++i) {
      std::shared_ptr<const Kernel> kernel;
      ASSERT_TRUE(context->getKernel(specs[i], {}, kernel).ok());
      for (RowBucket bucket : kAllRowBuckets)
        planned[i][static_cast<int>(bucket)] = kernel->getReport(bucket).launch;
    }
  }

  // No compiler (what NoCompiler.cpp gives a runtime-only build).
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(makeFakeOptions(nullptr), context).ok());
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(specs[0], {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::NotFound);
  EXPECT_NE(status.message().find("norm-tune"), std::string::npos)
      << status.message();

  ContextOptions options = makeFakeOptions(nullptr);
  options.bundles = {dir / "kernels.njb"};
  ASSERT_TRUE(createContext(options, context).ok());
  EXPECT_FALSE(context->isTuning());
  int links = fakecuda_call_count("cuLinkComplete");
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(context->getKernel(specs[i], {}, kernel).ok());
    for (RowBucket bucket : kAllRowBuckets) {
      const BucketReport &report = kernel->getReport(bucket);
      EXPECT_EQ(report.source, BucketReport::Source::Bundle);
      EXPECT_EQ(report.launch, planned[i][static_cast<int>(bucket)]);
    }
  }
  // Same driver and device: the bundle's cubins load without linking.
  EXPECT_EQ(fakecuda_call_count("cuLinkComplete"), links);
  status = context->getKernel(makeRmsNorm(2048), {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::NotFound);
  status = context->writeBundle(specs, dir / "again.njb");
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);

  // A bundle for another chip serves nothing.
  fakecuda_set_compute_capability(8, 0);
  ASSERT_TRUE(createContext(options, context).ok());
  EXPECT_EQ(context->getKernel(specs[0], {}, kernel).code(),
            ErrorCode::NotFound);

  // A damaged bundle fails the context.
  std::ofstream(dir / "kernels.njb", std::ios::binary | std::ios::app) << "x";
  EXPECT_EQ(createContext(options, context).code(), ErrorCode::IoError);
}

TEST_F(ContextTest, HeuristicBundlesNeedNoDevice) {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  Logger quiet(LogLevel::Quiet);
  KernelStoreOptions storeOptions;
  storeOptions.compiler = compiler;
  storeOptions.target.chip = "sm_90";
  KernelStore store(storeOptions, quiet);
  OpSpec qk = makeQKNorm();
  ASSERT_TRUE(
      writeHeuristicBundle(store, {makeRmsNorm(), qk}, dir / "h.njb").ok());
  EXPECT_EQ(fakecuda_call_count("cuInit"), 0);
  EXPECT_EQ(
      writeHeuristicBundle(store, {makeRmsNorm(0)}, dir / "bad.njb").code(),
      ErrorCode::InvalidArgument);

  ContextOptions options = makeFakeOptions(nullptr);
  options.bundles = {dir / "h.njb"};
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(options, context).ok());
  for (const OpSpec &spec : {makeRmsNorm(), qk}) {
    std::shared_ptr<const Kernel> kernel;
    ASSERT_TRUE(context->getKernel(spec, {}, kernel).ok());
    for (RowBucket bucket : kAllRowBuckets) {
      EXPECT_EQ(kernel->getReport(bucket).source, BucketReport::Source::Bundle);
      EXPECT_EQ(kernel->getReport(bucket).launch,
                compiler->getHeuristicLaunch(spec, 1));
    }
  }
  // PTX only: the driver links it where the bundle is used.
  EXPECT_GT(fakecuda_call_count("cuLinkComplete"), 0);
}

TEST_F(ContextTest, BundlesTakePrecedenceOverTheCompiler) {
  TempDir dir;
  {
    auto compiler = std::make_shared<FakeCompiler>();
    std::unique_ptr<Context> context;
    ASSERT_TRUE(createContext(makeFakeOptions(compiler), context).ok());
    ASSERT_TRUE(context->writeBundle({makeRmsNorm()}, dir / "b.njb").ok());
  }
  auto compiler = std::make_shared<FakeCompiler>();
  ContextOptions options = makeFakeOptions(compiler, {}, /*tuning=*/true);
  options.bundles = {dir / "b.njb"};
  std::unique_ptr<Context> context;
  ASSERT_TRUE(createContext(options, context).ok());
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  EXPECT_EQ(compiler->compiles, 0);
  EXPECT_EQ(fakecuda_launch_count(), 0) << "a bundled plan is not retuned";
}

} // namespace
