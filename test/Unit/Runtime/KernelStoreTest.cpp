//===- KernelStoreTest.cpp - cache keys and the device-free kernel store --===//

#include "runtime/KernelStore.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <gtest/gtest.h>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

LaunchConfig makeLaunch(int64_t vector, int64_t threads) {
  LaunchConfig launch;
  launch.vector = vector;
  launch.threadsPerRow = threads;
  launch.warps = threads / 32;
  launch.rowsPerCta = 1;
  return launch;
}

TEST(CacheKeys, KernelKeysNameEverythingTheKernelDependsOn) {
  OpSpec spec = makeRmsNorm();
  LaunchConfig launch = makeLaunch(8, 128);
  TargetOptions target;
  std::string key = getKernelKey(spec, launch, target, "v1");
  EXPECT_EQ(key, getKernelKey(spec, launch, target, "v1")); // stable

  // Each ingredient changes the key.
  OpSpec eps = spec;
  eps.eps = 1e-5;
  TargetOptions chip = target;
  chip.chip = "sm_80";
  TargetOptions ptx = target;
  ptx.ptxVersion = 83;
  for (const std::string &other :
       {getKernelKey(eps, launch, target, "v1"),
        getKernelKey(spec, makeLaunch(4, 128), target, "v1"),
        getKernelKey(spec, launch, chip, "v1"),
        getKernelKey(spec, launch, ptx, "v1"),
        getKernelKey(spec, launch, target, "v2")})
    EXPECT_NE(other, key);

  // Fields the operation does not use do not.
  OpSpec unused = spec;
  unused.addendType = ElementType::f16;
  EXPECT_EQ(getKernelKey(unused, launch, target, "v1"), key);
  EXPECT_NE(key.find("op=rms_norm hidden=4096"), std::string::npos) << key;
}

TEST(CacheKeys, OnlyRowsOutOfRegistersDependOnSharedMemory) {
  TargetOptions target; // sm_90: 227 KiB
  TargetOptions explicitly = target;
  explicitly.maxSharedBytes = 227 * 1024;
  TargetOptions smaller = target;
  smaller.maxSharedBytes = 99 * 1024;
  // A row in registers is the same kernel whatever the shared memory.
  OpSpec rms = makeRmsNorm(4096);
  LaunchConfig inRegisters = makeLaunch(8, 128);
  EXPECT_EQ(getKernelKey(rms, inRegisters, smaller, "v1"),
            getKernelKey(rms, inRegisters, target, "v1"));
  // A long row is staged or streamed, as the shared memory allows.
  OpSpec longRow = makeRmsNorm(100000);
  LaunchConfig staged = makeLaunch(8, 1024);
  std::string key = getKernelKey(longRow, staged, target, "v1");
  EXPECT_NE(key.find("\nshared: 232448\n"), std::string::npos) << key;
  EXPECT_EQ(getKernelKey(longRow, staged, explicitly, "v1"), key);
  EXPECT_NE(getKernelKey(longRow, staged, smaller, "v1"), key);
  // So is a short row forced onto few threads.
  EXPECT_NE(getKernelKey(rms, makeLaunch(8, 32), smaller, "v1"),
            getKernelKey(rms, makeLaunch(8, 32), target, "v1"));
}

TEST(CacheKeys, TuningKeysNameTheDeviceAndDriver) {
  OpSpec spec = makeRmsNorm();
  std::string key =
      getTuningKey(spec, RowBucket::UpTo64, "H200 cc 9.0 132 SMs", 13000, "v1");
  for (const std::string &other :
       {getTuningKey(spec, RowBucket::One, "H200 cc 9.0 132 SMs", 13000, "v1"),
        getTuningKey(spec, RowBucket::UpTo64, "H100 cc 9.0 132 SMs", 13000,
                     "v1"),
        getTuningKey(spec, RowBucket::UpTo64, "H200 cc 9.0 132 SMs", 13010,
                     "v1"),
        getTuningKey(spec, RowBucket::UpTo64, "H200 cc 9.0 132 SMs", 13000,
                     "v2"),
        getTuningKey(makeRmsNorm(2048), RowBucket::UpTo64,
                     "H200 cc 9.0 132 SMs", 13000, "v1")})
    EXPECT_NE(other, key);
  EXPECT_NE(key.find("tuner: " + std::to_string(kTunerVersion)),
            std::string::npos);
}

TEST(KernelEntries, CubinsServeOnlyTheirDriver) {
  KernelBinary binary;
  binary.signature.name = "k";
  binary.signature.launch = makeLaunch(8, 128);
  binary.signature.blockThreads = 128;
  binary.ptx = ".version 8.0";
  binary.cubin = "CUBIN";
  CacheEntry entry = makeKernelEntry(binary, "driver=13000 cc=9.0");
  KernelBinary back;
  std::string why;
  ASSERT_TRUE(readKernelEntry(entry, "driver=13000 cc=9.0", back, why)) << why;
  EXPECT_EQ(back.cubin, "CUBIN");
  EXPECT_EQ(back.ptx, ".version 8.0");
  ASSERT_TRUE(readKernelEntry(entry, "driver=13010 cc=9.0", back, why));
  EXPECT_EQ(back.cubin, "") << "a cubin of another driver is not used";
  ASSERT_TRUE(readKernelEntry(entry, "", back, why));
  EXPECT_EQ(back.cubin, "");

  CacheEntry broken;
  broken.add("signature", "{\"name\": 1}");
  broken.add("ptx", "x");
  EXPECT_FALSE(readKernelEntry(broken, "", back, why));
  EXPECT_NE(why.find("name"), std::string::npos) << why;
  EXPECT_FALSE(readKernelEntry(CacheEntry(), "", back, why));
}

TEST(KernelEntries, PlansRoundTrip) {
  LaunchPlan plan = {makeLaunch(8, 512), makeLaunch(8, 256), makeLaunch(4, 256),
                     makeLaunch(4, 128)};
  std::optional<LaunchPlan> back =
      readPlanEntry(makePlanEntry(makeRmsNorm(), plan));
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back == plan);
  CacheEntry partial;
  partial.add("1", "v8_t512_w16_r1");
  EXPECT_FALSE(readPlanEntry(partial));
}

class KernelStoreTest : public ::testing::Test {
protected:
  KernelStore makeStore(std::shared_ptr<KernelCompiler> compiler,
                        const std::string &cache) {
    KernelStoreOptions options;
    options.compiler = std::move(compiler);
    options.cacheDirectory = cache;
    return KernelStore(options, log);
  }
  Logger log{LogLevel::Quiet};
};

TEST_F(KernelStoreTest, CompilesOnceThenServesTheDisk) {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  LaunchConfig launch = compiler->getHeuristicLaunch(makeRmsNorm(), 1);
  KernelBinary binary;
  {
    KernelStore store = makeStore(compiler, dir.get());
    ASSERT_TRUE(store.getKernel(makeRmsNorm(), launch, {}, binary).ok());
    EXPECT_EQ(binary.origin, KernelBinary::Origin::Compiled);
  }
  KernelStore store = makeStore(compiler, dir.get());
  KernelBinary again;
  ASSERT_TRUE(store.getKernel(makeRmsNorm(), launch, {}, again).ok());
  EXPECT_EQ(again.origin, KernelBinary::Origin::DiskCache);
  EXPECT_EQ(again.ptx, binary.ptx);
  EXPECT_EQ(again.signature.toJson(), binary.signature.toJson());
  EXPECT_EQ(compiler->compiles, 1);
}

TEST_F(KernelStoreTest, ErrorsWithoutACompilerOrFromIt) {
  KernelStore none = makeStore(nullptr, {});
  KernelBinary binary;
  Status status = none.getKernel(makeRmsNorm(), makeLaunch(8, 128), {}, binary);
  EXPECT_EQ(status.code(), ErrorCode::NotFound);
  EXPECT_NE(status.message().find("rms_norm h4096 bf16 v8_t128_w4_r1"),
            std::string::npos)
      << status.message();
  EXPECT_FALSE(none.hasDiskCache()) << "no compiler version to key by";

  auto compiler = std::make_shared<FakeCompiler>();
  compiler->rejects = [](const LaunchConfig &) { return true; };
  KernelStore store = makeStore(compiler, {});
  status = store.getKernel(makeRmsNorm(), makeLaunch(8, 128), {}, binary);
  EXPECT_EQ(status.code(), ErrorCode::CompileError);
}

/// A compiler that returns a kernel for another configuration.
class WrongCompiler : public FakeCompiler {
public:
  norm::Status compile(const OpSpec &spec, const LaunchConfig &launch,
                       const TargetOptions &target,
                       CompiledKernel &result) override {
    LaunchConfig other = launch;
    other.rowsPerCta *= 2;
    return FakeCompiler::compile(spec, other, target, result);
  }
};

TEST_F(KernelStoreTest, CompilerResultsAreChecked) {
  KernelStore store = makeStore(std::make_shared<WrongCompiler>(), {});
  KernelBinary binary;
  Status status =
      store.getKernel(makeRmsNorm(), makeLaunch(8, 128), {}, binary);
  EXPECT_EQ(status.code(), ErrorCode::Internal);
  EXPECT_NE(status.message().find("the compiler returned another kernel than "
                                  "asked for: "),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("launch v8_t128_w4_r2, expected "
                                  "v8_t128_w4_r1"),
            std::string::npos)
      << status.message();
}

} // namespace
