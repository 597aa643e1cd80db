//===- CompilerAdapterTest.cpp - libnormjit on the real compiler ----------===//
//
// Built where libnormjit has the compiler (compiler/): the kernels
// norm::compileKernel produces must fit what the runtime expects of them
// (signatures, PTX entry points), every tuning candidate must compile,
// compiles may run concurrently, and a context on the fake driver runs the
// real kernels' launch path. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"
#include "runtime/KernelCompiler.h"
#include "runtime/SignatureCheck.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <thread>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

std::vector<OpSpec> getOperations() {
  using Kind = OpSpec::Kind;
  std::vector<OpSpec> specs;
  auto add = [&](Kind kind, int64_t hidden,
                 const std::function<void(OpSpec &)> &edit = nullptr) {
    OpSpec spec = makeRmsNorm(hidden);
    spec.kind = kind;
    if (edit)
      edit(spec);
    specs.push_back(spec);
  };
  add(Kind::RMSNorm, 4096);
  add(Kind::RMSNorm, 769);
  add(Kind::RMSNorm, 7168, [](OpSpec &s) {
    s.hasAddend = s.writeResidual = true;
  });
  add(Kind::RMSNorm, 2048, [](OpSpec &s) {
    s.hasAddend = s.writeResidual = s.f32Residual = true;
    s.alpha = 2.0;
  });
  add(Kind::RMSNorm, 2048, [](OpSpec &s) { s.weightOffset = 1.0; });
  add(Kind::RMSNorm, 3072, [](OpSpec &s) { s.hasWeight = false; });
  add(Kind::RMSNorm, 4096, [](OpSpec &s) { s.output = ElementType::f32; });
  add(Kind::RMSNorm, 4096, [](OpSpec &s) {
    s.hasAddend = s.hasSkip = true;
  });
  add(Kind::LayerNorm, 2048, [](OpSpec &s) {
    s.hasBias = true;
    s.input = s.output = ElementType::f16;
    s.param = ElementType::f32;
  });
  add(Kind::L2Norm, 256, [](OpSpec &s) {
    s.input = s.output = s.param = ElementType::f32;
  });
  add(Kind::GroupNorm, 512, [](OpSpec &s) {
    s.groups = 32;
    s.hasBias = true;
  });
  add(Kind::BatchNormInference, 256, [](OpSpec &s) { s.hasBias = true; });
  add(Kind::Elementwise, 4096, [](OpSpec &s) {
    s.hasWeight = false;
    s.hasAddend = s.writeResidual = true;
  });
  add(Kind::BatchNormStats, 256, [](OpSpec &s) { s.hasWeight = false; });
  specs.push_back(makeQKNorm());
  OpSpec qk = makeQKNorm();
  qk.hasWeight = false;
  qk.qkStatistic = Statistic::L2;
  specs.push_back(qk);
  // Gemma 3 (one key/value head, 1 + w) and a per-head LayerNorm.
  OpSpec gemma = makeQKNorm();
  gemma.hidden = 256;
  gemma.numKvHeads = 1;
  gemma.weightOffset = 1.0;
  specs.push_back(gemma);
  OpSpec layer = makeQKNorm();
  layer.qkStatistic = Statistic::MeanVar;
  specs.push_back(layer);
  return specs;
}

class CompilerAdapterTest : public ::testing::Test {
protected:
  void SetUp() override {
    compiler = createDefaultCompiler();
    ASSERT_NE(compiler, nullptr) << "built without the compiler";
  }

  /// Compiles and checks one kernel against the runtime's expectations;
  /// returns its name.
  std::string expectFits(const OpSpec &spec, const LaunchConfig &launch) {
    std::string what =
        describeOpSpec(spec) + " " + launch.getMangledSuffix();
    CompiledKernel kernel;
    Status status = compiler->compile(spec, launch, target, kernel);
    EXPECT_TRUE(status.ok()) << what << ": " << status.message();
    if (!status.ok())
      return {};
    EXPECT_EQ(kernel.signature.launch, launch) << what;
    EXPECT_NE(kernel.ptx.find(".entry " + kernel.signature.name + "("),
              std::string::npos)
        << what;
    EXPECT_LE(kernel.signature.sharedBytes + 1024, target.getMaxSharedBytes())
        << what;
    LaunchLayout layout;
    Status fits = computeLaunchLayout(spec, kernel.signature, layout);
    EXPECT_TRUE(fits.ok()) << what << ": " << fits.message();
    // What the runtime checks of every stored signature.
    Status matches = checkSignatureFor(kernel.signature, spec, launch, target);
    EXPECT_TRUE(matches.ok()) << what << ": " << matches.message();
    return kernel.signature.name;
  }

  std::shared_ptr<KernelCompiler> compiler;
  TargetOptions target;
};

TEST_F(CompilerAdapterTest, SignaturesFitTheRuntime) {
  for (const OpSpec &spec : getOperations()) {
    ASSERT_TRUE(verifyOpSpec(spec).ok()) << describeOpSpec(spec);
    for (int64_t rows : {1, 100000}) {
      LaunchConfig launch = compiler->getHeuristicLaunch(spec, rows);
      EXPECT_TRUE(verifyLaunchFor(spec, launch).ok())
          << describeOpSpec(spec) << " " << launch.getMangledSuffix();
      expectFits(spec, launch);
      if (launch.vector == 1)
        continue;
      std::optional<LaunchConfig> scalar = getScalarFallback(spec, launch);
      ASSERT_TRUE(scalar) << describeOpSpec(spec);
      expectFits(spec, *scalar);
    }
  }
}

// The runtime compiles operations as it identifies them: normalized, the
// fields they do not use reset (an elementwise kernel's eps is 0). Every
// kind must compile that way too (NORMJIT_OP_ELEMENTWISE once failed here:
// its kernel op refused eps 0).
TEST_F(CompilerAdapterTest, NormalizedOperationsCompile) {
  for (const OpSpec &spec : getOperations()) {
    OpSpec normal = normalizeOpSpec(spec);
    expectFits(normal, compiler->getHeuristicLaunch(normal, 4096));
  }
  OpSpec add = makeRmsNorm(4096);
  add.kind = OpKind::Elementwise;
  add.hasWeight = false;
  add.hasAddend = add.writeResidual = true;
  add.output = ElementType::f32;
  OpSpec normal = normalizeOpSpec(add);
  EXPECT_EQ(normal.eps, 0.0);
  expectFits(normal, compiler->getHeuristicLaunch(normal, 1));
}

// The backward kernels derived from every forward row norm with a bias but
// no weight (f16/f32 parameters once compiled to a kernel of another
// signature: "the compiler returned another kernel than asked for").
TEST_F(CompilerAdapterTest, BackwardOfBiasWithoutWeightCompiles) {
  for (OpKind kind : {OpKind::LayerNorm, OpKind::RMSNorm, OpKind::L2Norm,
                      OpKind::GroupNorm})
    for (ElementType param :
         {ElementType::bf16, ElementType::f16, ElementType::f32}) {
      OpSpec forward = makeRmsNorm(kind == OpKind::GroupNorm ? 1280 : 4096);
      forward.kind = kind;
      forward.groups = kind == OpKind::GroupNorm ? 32 : 1;
      forward.hasWeight = false;
      forward.hasBias = true;
      forward.param = param;
      if (!verifyOpSpec(forward).ok())
        continue;
      BackwardKernels backward;
      Status status = getBackwardKernels(forward, backward);
      ASSERT_TRUE(status.ok()) << describeOpSpec(forward) << ": "
                               << status.message();
      for (const OpSpec &row : backward.rows)
        expectFits(row, compiler->getHeuristicLaunch(row, 4096));
      for (const OpSpec &sum : backward.columnSums)
        expectFits(sum, compiler->getHeuristicLaunch(sum, 264));
    }
}

TEST_F(CompilerAdapterTest, EveryTuningCandidateCompiles) {
  for (int64_t hidden : {128, 769, 1152, 4096, 7168, 16384}) {
    OpSpec spec = makeRmsNorm(hidden);
    spec.hasAddend = spec.writeResidual = true;
    for (RowBucket bucket : kAllRowBuckets)
      for (const LaunchConfig &launch : getTuningCandidates(
               spec, bucket,
               compiler->getHeuristicLaunch(spec,
                                            getTuningRows(spec, bucket))))
        expectFits(spec, launch);
  }
  OpSpec qk = makeQKNorm();
  for (const LaunchConfig &launch : getTuningCandidates(
           qk, RowBucket::More, compiler->getHeuristicLaunch(qk, 4096)))
    expectFits(qk, launch);
}

/// Whether `name` ends with `suffix`.
bool endsWith(const std::string &name, const std::string &suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST_F(CompilerAdapterTest, EveryLongRowCandidateCompiles) {
  // Rows beyond what 1024 threads hold in registers, with their scalar variants for
  // misaligned buffers: a bf16 row staged in shared memory on sm_90, an f32
  // row too long for it and a bf16 row summed in f32, streamed.
  OpSpec bf16 = makeRmsNorm(100000);
  bf16.hasAddend = bf16.writeResidual = true;
  OpSpec f32 = makeRmsNorm(262144);
  f32.input = f32.output = f32.param = f32.addendType = ElementType::f32;
  f32.hasAddend = f32.writeResidual = true;
  OpSpec f32Residual = bf16;
  f32Residual.f32Residual = true;
  for (auto [spec, storage] :
       {std::pair(bf16, "_smem"), std::pair(f32, "_stream"),
        std::pair(f32Residual, "_stream")}) {
    std::vector<LaunchConfig> launches;
    for (RowBucket bucket : kAllRowBuckets)
      for (const LaunchConfig &launch : getTuningCandidates(
               spec, bucket,
               compiler->getHeuristicLaunch(spec,
                                            getTuningRows(spec, bucket)))) {
        std::optional<LaunchConfig> scalar = getScalarFallback(spec, launch);
        ASSERT_TRUE(scalar || launch.vector == 1) << launch.getMangledSuffix();
        for (const LaunchConfig &each : {launch, scalar.value_or(launch)})
          if (std::find(launches.begin(), launches.end(), each) ==
              launches.end())
            launches.push_back(each);
      }
    // 1024 and 512 threads, with two vectors and scalar.
    EXPECT_EQ(launches.size(), 6u) << describeOpSpec(spec);
    for (const LaunchConfig &launch : launches) {
      std::string name = expectFits(spec, launch);
      EXPECT_TRUE(endsWith(name, storage)) << name;
    }
  }
}

TEST_F(CompilerAdapterTest, LongRowsStreamWhereSharedMemoryIsScarce) {
  // The heuristic's kernel for a 100000-value bf16 row: staged where a CTA
  // may use 227 KiB (sm_90), streamed with 163 KiB (sm_80), 99 KiB (sm_89)
  // or a device's smaller limit.
  OpSpec spec = makeRmsNorm(100000);
  LaunchConfig launch = compiler->getHeuristicLaunch(spec, 1);
  struct Case {
    const char *chip;
    int64_t maxSharedBytes;
    const char *storage;
  };
  for (Case c : {Case{"sm_90", 0, "_smem"}, Case{"sm_80", 0, "_stream"},
                 Case{"sm_89", 0, "_stream"},
                 Case{"sm_90", 99 * 1024, "_stream"}}) {
    target.chip = c.chip;
    target.maxSharedBytes = c.maxSharedBytes;
    std::string name = expectFits(spec, launch);
    EXPECT_TRUE(endsWith(name, c.storage))
        << c.chip << " " << c.maxSharedBytes << ": " << name;
  }
  // More than the chip has is no target (contexts cap the device's limit at
  // the chip's).
  target.chip = "sm_80";
  target.maxSharedBytes = 227 * 1024;
  CompiledKernel kernel;
  Status status = compiler->compile(spec, launch, target, kernel);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("exceeds what a CTA may use on sm_80"),
            std::string::npos)
      << status.message();
}

TEST_F(CompilerAdapterTest, ConcurrentCompilesAgreeWithSerialOnes) {
  OpSpec spec = makeRmsNorm(4096);
  std::vector<LaunchConfig> launches = getTuningCandidates(
      spec, RowBucket::More, compiler->getHeuristicLaunch(spec, 16384));
  std::vector<std::string> serial, parallel(launches.size());
  for (const LaunchConfig &launch : launches) {
    CompiledKernel kernel;
    ASSERT_TRUE(compiler->compile(spec, launch, target, kernel).ok());
    serial.push_back(kernel.ptx);
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < launches.size(); ++i)
    threads.emplace_back([&, i] {
      CompiledKernel kernel;
      if (compiler->compile(spec, launches[i], target, kernel).ok())
        parallel[i] = kernel.ptx;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(parallel, serial);
}

/// Launch arguments of `spec` in fresh 1 MiB allocations of `context`: every
/// buffer but the library's own gradient partials, and the gradients of a
/// backward kernel's column sums.
static void allocateArgs(Context &context, const OpSpec &spec,
                         LaunchArgs &args) {
  auto allocate = [&](BufferSlot slot, ElementType type, int64_t cols) {
    void *pointer = nullptr;
    ASSERT_TRUE(context.allocate(1 << 20, pointer).ok());
    args.set(slot, pointer, type, cols);
  };
  for (const BufferSpec &buffer : getBuffers(spec))
    if (!isGradPartials(buffer.slot))
      allocate(buffer.slot, buffer.type, buffer.cols);
  if (spec.backward)
    for (const GradientSum &sum : getGradientSums(spec))
      allocate(sum.gradient, sum.columnSum.output, sum.columnSum.hidden);
}

/// The real compiler on the fake driver: `context` tunes, with a disk
/// cache of its own.
class RealKernelsOnFakeDriver : public FakeDriverTest {
protected:
  TempDir cache;
  ContextOptions options =
      makeFakeOptions(createDefaultCompiler(), cache.get(), /*tuning=*/true);
  std::unique_ptr<Context> context;

  /// The kernel of `spec`, tuned by `context`, and arguments to launch it.
  void getTunedKernel(const OpSpec &spec,
                      std::shared_ptr<const Kernel> &kernel,
                      LaunchArgs &args) {
    Status status = context->getKernel(spec, {}, kernel);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(kernel->getReport(RowBucket::UpTo64).source,
              BucketReport::Source::Tuned);
    allocateArgs(*context, spec, args);
  }
};

// The training kernels, generated by the real compiler, tuned and launched:
// a forward that saves its statistics, and a backward (a residual stream
// gradient, Gemma's weight) whose launch is its row kernel and the weight
// gradient's column sum.
TEST_F(RealKernelsOnFakeDriver, TrainingKernelsTuneAndLaunch) {
  ASSERT_TRUE(Context::create(options, context).ok());
  OpSpec forward = makeRmsNorm(4096);
  forward.hasAddend = forward.writeResidual = forward.saveStats = true;
  forward.weightOffset = 1.0;
  BackwardKernels derived;
  ASSERT_TRUE(getBackwardKernels(forward, derived));
  ASSERT_EQ(derived.rows.size(), 1u);
  const int64_t rows = 64;
  int launches = 0;
  for (const OpSpec &spec : {forward, derived.rows[0]}) {
    std::shared_ptr<const Kernel> kernel;
    LaunchArgs args;
    getTunedKernel(spec, kernel, args);
    int before = fakecuda_launch_count();
    Status status = kernel->launch(args, rows, nullptr);
    ASSERT_TRUE(status.ok()) << status.message();
    launches += fakecuda_launch_count() - before;
  }
  // The forward, then the backward's row kernel and column sum.
  EXPECT_EQ(launches, 3);
  fakecuda_launch sum{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &sum));
  EXPECT_NE(std::string(sum.kernel).find("norm_colsum_h4096"),
            std::string::npos)
      << sum.kernel;
}

TEST_F(RealKernelsOnFakeDriver, StagedBackwardLaunchesWithItsSharedMemory) {
  // Llama 3 405B's width: the backward stages v and dy, 32 KiB each, in
  // CTAs of 512 threads (the tuned candidates are all staged).
  ASSERT_TRUE(Context::create(options, context).ok());
  OpSpec spec = makeRmsNorm(16384);
  spec.backward = true;
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(spec, {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  LaunchArgs args;
  allocateArgs(*context, spec, args);
  int before = fakecuda_launch_count();
  ASSERT_TRUE(kernel->launch(args, 8, nullptr).ok());
  ASSERT_EQ(fakecuda_launch_count() - before, 2);
  fakecuda_launch rows{};
  ASSERT_TRUE(fakecuda_get_launch(before, &rows));
  EXPECT_NE(std::string(rows.kernel).find("_t512_w16_r1_smem"),
            std::string::npos)
      << rows.kernel;
  EXPECT_EQ(rows.block[0], 512u);
  EXPECT_EQ(rows.shared_bytes, 2u * 32768u);
  EXPECT_EQ(rows.grid[0], 8u);

  // A device whose CTAs hold less than the two rows: refused, with the
  // reason, before anything launches.
  fakecuda_set_max_shared_bytes_optin(48 * 1024);
  std::unique_ptr<Context> small;
  ASSERT_TRUE(Context::create(options, small).ok());
  status = small->getKernel(spec, {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);
  EXPECT_NE(status.message().find("65536 bytes of shared memory"),
            std::string::npos)
      << status.message();
}

TEST_F(RealKernelsOnFakeDriver, TuneAndLaunch) {
  ASSERT_TRUE(Context::create(options, context).ok());
  OpSpec spec = makeRmsNorm(4096);
  spec.hasAddend = spec.writeResidual = true;
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(spec, {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();

  std::vector<void *> buffers;
  LaunchArgs args;
  for (const BufferSpec &buffer : getBuffers(spec)) {
    void *pointer = nullptr;
    ASSERT_TRUE(context->allocate(1 << 20, pointer).ok());
    buffers.push_back(pointer);
    args.set(buffer.slot, pointer, buffer.type, buffer.cols);
  }
  ASSERT_TRUE(kernel->launch(args, 64, nullptr).ok());
  fakecuda_launch recorded{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  EXPECT_EQ(recorded.num_params, 10);
  EXPECT_EQ(recorded.params[5], 64u);
  for (void *pointer : buffers)
    EXPECT_TRUE(context->release(pointer).ok());

  // The next context is served by the disk cache.
  int compiles = fakecuda_call_count("cuLinkComplete");
  ASSERT_TRUE(Context::create(options, context).ok());
  ASSERT_TRUE(context->getKernel(spec, {}, kernel).ok());
  EXPECT_EQ(fakecuda_call_count("cuLinkComplete"), compiles);
  EXPECT_EQ(kernel->getReport(RowBucket::More).source,
            BucketReport::Source::TuningCache);
}

// FP8 outputs, generated by the real compiler, tuned and launched: the
// scale buffers take their parameter places, the output its FP8 type.
TEST_F(RealKernelsOnFakeDriver, Fp8KernelsTuneAndLaunch) {
  ASSERT_TRUE(Context::create(options, context).ok());
  OpSpec spec = makeRmsNorm(5120);
  spec.hasAddend = spec.writeResidual = spec.scaleUpperBound = true;
  spec.output = ElementType::f8E4M3FN;
  spec.outputScale = OutputScale::PerToken;
  std::shared_ptr<const Kernel> kernel;
  LaunchArgs args;
  getTunedKernel(spec, kernel, args);
  ASSERT_TRUE(kernel && kernel->launch(args, 64, nullptr).ok());
  fakecuda_launch recorded{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  // input, addend, weight, scale_ub, output, residual_out, output_scales,
  // rows, then the row strides of the five row buffers.
  EXPECT_EQ(recorded.num_params, 13);
  EXPECT_EQ(recorded.params[7], 64u);
  EXPECT_NE(std::string(recorded.kernel).find("_bf16_f8E4M3FN_"),
            std::string::npos)
      << recorded.kernel;

  // A bf16 output where the kernel writes e4m3: refused before launching.
  LaunchArgs wrong = args;
  void *pointer = nullptr;
  ASSERT_TRUE(context->allocate(1 << 20, pointer).ok());
  wrong.set(BufferSlot::Output, pointer, ElementType::bf16, 5120);
  int before = fakecuda_launch_count();
  Status status = kernel->launch(wrong, 64, nullptr);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument) << status.message();
  EXPECT_EQ(fakecuda_launch_count(), before);

  // Rows an sm_86 device (99 KiB a CTA) cannot stage: per-token scales are
  // refused there, a static scale streams.
  fakecuda_reset();
  fakecuda_set_compute_capability(8, 6);
  fakecuda_set_max_shared_bytes_optin(99 * 1024);
  ASSERT_TRUE(Context::create(makeFakeOptions(createDefaultCompiler()), context)
                  .ok());
  OpSpec wide = makeRmsNorm(100000);
  wide.output = ElementType::f8E4M3FN;
  wide.outputScale = OutputScale::PerToken;
  status = context->getKernel(wide, {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported) << status.message();
  EXPECT_NE(status.message().find("per-token FP8 scales need rows held whole"),
            std::string::npos)
      << status.message();
  wide.outputScale = OutputScale::Static;
  status = context->getKernel(wide, {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();
}

/// Launches the heuristic's kernel of a 100000-value bf16 RMSNorm on the
/// fake driver's device, with the input `inputOffset` bytes into its buffer.
fakecuda_launch launchLongRow(int64_t inputOffset) {
  fakecuda_launch recorded{};
  std::unique_ptr<Context> context;
  EXPECT_TRUE(Context::create(makeFakeOptions(createDefaultCompiler()), context)
                  .ok());
  if (!context)
    return recorded;
  OpSpec spec = makeRmsNorm(100000);
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(spec, {}, kernel);
  EXPECT_TRUE(status.ok()) << status.message();
  if (!kernel)
    return recorded;
  std::vector<void *> buffers;
  LaunchArgs args;
  for (const BufferSpec &buffer : getBuffers(spec)) {
    void *pointer = nullptr;
    EXPECT_TRUE(context->allocate(2 * 100000 * 2 + 64, pointer).ok());
    buffers.push_back(pointer);
    char *data = static_cast<char *>(pointer);
    if (buffer.slot == BufferSlot::Input)
      data += inputOffset;
    args.set(buffer.slot, data, buffer.type, buffer.cols);
  }
  status = kernel->launch(args, 2, nullptr);
  EXPECT_TRUE(status.ok()) << status.message();
  if (status.ok()) {
    EXPECT_TRUE(
        fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  }
  for (void *pointer : buffers)
    EXPECT_TRUE(context->release(pointer).ok());
  return recorded;
}

TEST_F(RealKernelsOnFakeDriver, LongRowsUseTheDevicesSharedMemory) {
  // 227 KiB on a CTA (the fake default, an sm_90 device): staged.
  fakecuda_launch staged = launchLongRow(0);
  EXPECT_TRUE(endsWith(staged.kernel, "_v8_t1024_w32_r1_smem")) << staged.kernel;
  EXPECT_EQ(staged.shared_bytes, 200000u);
  // An sm_86 device runs sm_80 PTX but lets a CTA have 99 KiB: streamed.
  fakecuda_reset();
  fakecuda_set_compute_capability(8, 6);
  fakecuda_set_max_shared_bytes_optin(99 * 1024);
  fakecuda_launch streamed = launchLongRow(0);
  EXPECT_TRUE(endsWith(streamed.kernel, "_v8_t1024_w32_r1_stream"))
      << streamed.kernel;
  EXPECT_EQ(streamed.shared_bytes, 0u);
}

TEST_F(RealKernelsOnFakeDriver, MisalignedLongRowsRunTheScalarKernel) {
  // One element off: the scalar (vector = 1) kernel, staged as well.
  fakecuda_launch scalar = launchLongRow(2);
  EXPECT_TRUE(endsWith(scalar.kernel, "_v1_t1024_w32_r1_smem")) << scalar.kernel;
  EXPECT_EQ(scalar.shared_bytes, 200000u);
}

} // namespace
