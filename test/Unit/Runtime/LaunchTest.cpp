//===- LaunchTest.cpp - the launch path: checks, variants, parameters -----===//
//
// Launches on the fake driver, which records grid, block and every kernel
// parameter value.
//
//===----------------------------------------------------------------------===//

#include "runtime/CudaDriver.h"
#include "runtime/Runtime.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <atomic>
#include <cstdlib>
#include <new>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

// Counts every allocation of the test binary (libnormjit is linked in).
// GCC cannot see that these replace the global operators as a pair.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<long> allocationCount{0};

void *operator new(size_t size) {
  ++allocationCount;
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }

namespace {

class LaunchTest : public FakeDriverTest {
protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    compiler = std::make_shared<FakeCompiler>();
    ASSERT_TRUE(Context::create(makeFakeOptions(compiler), context).ok());
  }

  /// A device buffer of `bytes` owned by the fixture.
  char *allocate(size_t bytes) {
    void *pointer = nullptr;
    EXPECT_TRUE(context->allocate(bytes, pointer).ok());
    buffers.push_back(pointer);
    return static_cast<char *>(pointer);
  }
  void TearDown() override {
    for (void *pointer : buffers)
      EXPECT_TRUE(context->release(pointer).ok());
  }

  /// Last launch recorded by the fake driver.
  fakecuda_launch lastLaunch() {
    fakecuda_launch launch{};
    EXPECT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &launch));
    return launch;
  }

  std::shared_ptr<FakeCompiler> compiler;
  std::unique_ptr<Context> context;
  std::vector<void *> buffers;
};

TEST_F(LaunchTest, ParametersFollowTheSignature) {
  OpSpec spec = makeRmsNorm(4096);
  spec.hasAddend = spec.writeResidual = true;
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(spec, {}, kernel).ok());
  const int64_t rows = 100, stride = 8192;
  char *input = allocate(rows * stride * 2);
  char *addend = allocate(rows * 4096 * 2);
  char *weight = allocate(4096 * 2);
  char *output = allocate(rows * 4096 * 2);
  char *residual = allocate(rows * 4096 * 2);
  LaunchArgs args;
  args.set(BufferSlot::Input, input, ElementType::bf16, 4096, stride)
      .set(BufferSlot::Addend, addend, ElementType::bf16, 4096)
      .set(BufferSlot::Weight, weight, ElementType::bf16, 4096)
      .set(BufferSlot::Output, output, ElementType::bf16, 4096)
      .set(BufferSlot::ResidualOut, residual, ElementType::bf16, 4096);
  void *stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), 0);
  ASSERT_TRUE(kernel->launch(args, rows, stream).ok());
  ASSERT_EQ(cuStreamDestroy_v2(stream), 0);

  const LaunchConfig &launch = kernel->getReport(RowBucket::UpTo1K).launch;
  fakecuda_launch recorded = lastLaunch();
  EXPECT_EQ(std::string(recorded.kernel), getFakeKernelName(spec, launch));
  EXPECT_EQ(recorded.grid[0],
            (rows + launch.rowsPerCta - 1) / launch.rowsPerCta);
  EXPECT_EQ(recorded.grid[1], 1u);
  EXPECT_EQ(recorded.block[0], launch.warps * 32);
  EXPECT_EQ(recorded.stream, stream);
  // input, addend, weight, output, residual_out, rows, then the strides of
  // the 2-D buffers in buffer order.
  std::vector<uint64_t> expected = {reinterpret_cast<uint64_t>(input),
                                    reinterpret_cast<uint64_t>(addend),
                                    reinterpret_cast<uint64_t>(weight),
                                    reinterpret_cast<uint64_t>(output),
                                    reinterpret_cast<uint64_t>(residual),
                                    rows,
                                    stride,
                                    4096,
                                    4096,
                                    4096};
  ASSERT_EQ(recorded.num_params, static_cast<int>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(recorded.params[i], expected[i]) << "parameter " << i;
}

class RmsLaunchTest : public LaunchTest {
protected:
  void SetUp() override {
    LaunchTest::SetUp();
    ASSERT_TRUE(context->getKernel(makeRmsNorm(4096), {}, kernel).ok());
    input = allocate(2048 * 4096 * 2);
    weight = allocate(4096 * 2);
    output = allocate(2048 * 4096 * 2);
    args.set(BufferSlot::Input, input, ElementType::bf16, 4096)
        .set(BufferSlot::Weight, weight, ElementType::bf16, 4096)
        .set(BufferSlot::Output, output, ElementType::bf16, 4096);
  }

  /// Expects `status` to be an error of `code` mentioning `text`, and no
  /// launch to have happened.
  void expectRefused(const Status &status, ErrorCode code,
                     const std::string &text) {
    EXPECT_EQ(status.code(), code) << status.message();
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
    EXPECT_EQ(fakecuda_launch_count(), 0);
  }

  std::shared_ptr<const Kernel> kernel;
  char *input, *weight, *output;
  LaunchArgs args;
};

TEST_F(RmsLaunchTest, RowBucketsPickTheirConfiguration) {
  for (int64_t rows : {1, 7, 64, 65, 1000, 2048}) {
    ASSERT_TRUE(kernel->launch(args, rows, nullptr).ok());
    const LaunchConfig &launch = kernel->getReport(getRowBucket(rows)).launch;
    fakecuda_launch recorded = lastLaunch();
    EXPECT_EQ(std::string(recorded.kernel),
              getFakeKernelName(kernel->getSpec(), launch));
    EXPECT_EQ(recorded.params[3], static_cast<uint64_t>(rows));
  }
}

TEST_F(RmsLaunchTest, ZeroRowsIsANoOp) {
  EXPECT_TRUE(kernel->launch(args, 0, nullptr).ok());
  EXPECT_TRUE(kernel->launch(LaunchArgs(), 0, nullptr).ok())
      << "empty tensors may have null data";
  EXPECT_EQ(fakecuda_launch_count(), 0);
}

TEST_F(RmsLaunchTest, BadArgumentsLaunchNothing) {
  expectRefused(kernel->launch(args, -1, nullptr), ErrorCode::InvalidArgument,
                "negative row count -1");
  LaunchArgs missing = args;
  missing.set(BufferSlot::Weight, nullptr, ElementType::bf16, 4096);
  expectRefused(kernel->launch(missing, 8, nullptr), ErrorCode::InvalidArgument,
                "buffer 'weight' is null");
  LaunchArgs extra = args;
  extra.set(BufferSlot::Bias, weight, ElementType::bf16, 4096);
  expectRefused(kernel->launch(extra, 8, nullptr), ErrorCode::InvalidArgument,
                "the operation has no 'bias' buffer");
  LaunchArgs type = args;
  type.set(BufferSlot::Output, output, ElementType::f16, 4096);
  expectRefused(kernel->launch(type, 8, nullptr), ErrorCode::InvalidArgument,
                "buffer 'output' is f16, the operation expects bf16");
  LaunchArgs hidden = args;
  hidden.set(BufferSlot::Input, input, ElementType::bf16, 4095);
  expectRefused(kernel->launch(hidden, 8, nullptr), ErrorCode::InvalidArgument,
                "buffer 'input' has 4095 elements per row, the operation "
                "expects 4096");
  LaunchArgs shortStride = args;
  shortStride.set(BufferSlot::Input, input, ElementType::bf16, 4096, 4000);
  expectRefused(kernel->launch(shortStride, 8, nullptr),
                ErrorCode::InvalidArgument, "shorter than its rows");
  LaunchArgs negativeStride = args;
  negativeStride.set(BufferSlot::Input, input, ElementType::bf16, 4096, -4096);
  expectRefused(kernel->launch(negativeStride, 8, nullptr),
                ErrorCode::InvalidArgument, "shorter than its rows");
  LaunchArgs weightStride = args;
  weightStride.set(BufferSlot::Weight, weight, ElementType::bf16, 4096, 4096);
  expectRefused(kernel->launch(weightStride, 8, nullptr),
                ErrorCode::InvalidArgument, "1-D buffer 'weight'");
  LaunchArgs huge = args;
  huge.set(BufferSlot::Input, input, ElementType::bf16, 4096, int64_t(1) << 50);
  expectRefused(kernel->launch(huge, 1 << 20, nullptr),
                ErrorCode::InvalidArgument, "2^60 bytes");
  expectRefused(kernel->launch(args, int64_t(1) << 40, nullptr),
                ErrorCode::InvalidArgument, "too many rows");
}

TEST_F(RmsLaunchTest, MisalignedBuffersRunTheScalarVariant) {
  const LaunchConfig &fast = kernel->getReport(RowBucket::UpTo64).launch;
  ASSERT_GT(fast.vector, 1);
  const std::optional<LaunchConfig> &scalar =
      kernel->getReport(RowBucket::UpTo64).scalarLaunch;
  ASSERT_TRUE(scalar);
  // A pointer off by one element.
  LaunchArgs shifted = args;
  shifted.set(BufferSlot::Input, input + 2, ElementType::bf16, 4096);
  ASSERT_TRUE(kernel->launch(shifted, 16, nullptr).ok());
  fakecuda_launch recorded = lastLaunch();
  EXPECT_EQ(std::string(recorded.kernel),
            getFakeKernelName(kernel->getSpec(), *scalar));
  EXPECT_EQ(recorded.params[0], reinterpret_cast<uint64_t>(input + 2));
  LaunchConfig chosen;
  ASSERT_TRUE(kernel->getLaunchFor(shifted, 16, chosen).ok());
  EXPECT_EQ(chosen, *scalar);

  // A row stride that breaks 16-byte alignment of every other row.
  LaunchArgs strided = args;
  strided.set(BufferSlot::Output, output, ElementType::bf16, 4096, 4100);
  ASSERT_TRUE(kernel->getLaunchFor(strided, 16, chosen).ok());
  EXPECT_EQ(chosen, *scalar);
  // ... which does not matter for a single row.
  ASSERT_TRUE(kernel->getLaunchFor(strided, 1, chosen).ok());
  EXPECT_EQ(chosen, kernel->getReport(RowBucket::One).launch);
  ASSERT_TRUE(kernel->getLaunchFor(args, 16, chosen).ok());
  EXPECT_EQ(chosen, fast);
}

TEST_F(RmsLaunchTest, BuffersNoVariantCanUseAreRefused) {
  LaunchArgs odd = args;
  odd.set(BufferSlot::Weight, weight + 1, ElementType::bf16, 4096);
  expectRefused(kernel->launch(odd, 16, nullptr), ErrorCode::Misaligned,
                "buffer 'weight'");
}

TEST_F(RmsLaunchTest, KernelsCanRefuseMisalignedBuffers) {
  std::shared_ptr<const Kernel> strict;
  KernelOptions options;
  options.refuseMisaligned = true;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(4096), options, strict).ok());
  EXPECT_NE(strict, kernel);
  LaunchArgs shifted = args;
  shifted.set(BufferSlot::Input, input + 2, ElementType::bf16, 4096);
  expectRefused(strict->launch(shifted, 16, nullptr), ErrorCode::Misaligned,
                "refuses misaligned buffers");
  LaunchArgs strided = args;
  strided.set(BufferSlot::Output, output, ElementType::bf16, 4096, 4100);
  expectRefused(strict->launch(strided, 16, nullptr), ErrorCode::Misaligned,
                "buffer 'output' has a row stride of 4100 elements, not a "
                "multiple of the 16 bytes");
  EXPECT_TRUE(strict->launch(args, 16, nullptr).ok());
}

TEST_F(RmsLaunchTest, LaunchesAllocateNothingAndOnlyLaunch) {
  ASSERT_TRUE(kernel->launch(args, 64, nullptr).ok()); // warm the driver
  // Nothing that synchronizes, allocates on the device or loads code.
  const char *const entries[] = {"cuLaunchKernel",     "cuStreamSynchronize",
                                 "cuEventSynchronize", "cuEventRecord",
                                 "cuMemAlloc",         "cuModuleLoadDataEx",
                                 "cuLinkComplete"};
  std::vector<int> before;
  for (const char *entry : entries)
    before.push_back(fakecuda_call_count(entry));
  long allocations = allocationCount;
  constexpr int kLaunches = 1000;
  for (int i = 0; i < kLaunches; ++i)
    ASSERT_TRUE(kernel->launch(args, 1 + i % 2048, nullptr).ok());
  EXPECT_EQ(allocationCount - allocations, 0);
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(fakecuda_call_count(entries[i]) - before[i],
              i == 0 ? kLaunches : 0)
        << entries[i];
}

TEST_F(RmsLaunchTest, DriverLaunchErrorsAreReported) {
  fakecuda_fail_next("cuLaunchKernel", 1, 1);
  Status status = kernel->launch(args, 8, nullptr);
  EXPECT_EQ(status.code(), ErrorCode::DriverError);
  EXPECT_NE(status.message().find("cuLaunchKernel failed"), std::string::npos)
      << status.message();
  EXPECT_TRUE(kernel->launch(args, 8, nullptr).ok());
}

class ResidualLaunchTest : public LaunchTest {
protected:
  static constexpr int64_t kHidden = 4096, kRows = 3;
  static constexpr int64_t kBlock = (kRows + 1) * 2 * kHidden; // elements

  void SetUp() override {
    LaunchTest::SetUp();
    open(RowOperand::None, RowOperand::None);
  }

  /// The kernel of a fused add + RMSNorm whose output and residual_out
  /// overwrite `outputOver` and `residualOver`, and its buffers: one
  /// allocation for everything, so that buffers can be placed anywhere in
  /// it, blocks of kRows + 1 rows of twice the hidden size for input,
  /// addend, output and residual_out (kRows rows each, two hidden sizes
  /// apart; in place: the block of the input they overwrite), then the
  /// weight.
  void open(RowOperand outputOver, RowOperand residualOver) {
    OpSpec spec = makeRmsNorm(kHidden);
    spec.hasAddend = spec.writeResidual = true;
    spec.outputOver = outputOver;
    spec.residualOver = residualOver;
    ASSERT_TRUE(context->getKernel(spec, {}, kernel).ok());
    base = allocate(4 * kBlock * 2 + kHidden * 2);
    auto block = [](RowOperand over, int64_t own) {
      return over == RowOperand::Input ? 0 : over == RowOperand::Addend ? 1
                                                                        : own;
    };
    args.set(BufferSlot::Input, at(0), ElementType::bf16, kHidden, 2 * kHidden)
        .set(BufferSlot::Addend, at(1), ElementType::bf16, kHidden, 2 * kHidden)
        .set(BufferSlot::Output, at(block(outputOver, 2)), ElementType::bf16,
             kHidden, 2 * kHidden)
        .set(BufferSlot::ResidualOut, at(block(residualOver, 3)),
             ElementType::bf16, kHidden, 2 * kHidden)
        .set(BufferSlot::Weight, at(4), ElementType::bf16, kHidden);
  }

  /// The `index`-th block of the allocation.
  char *at(int64_t index) { return base + index * kBlock * 2; }

  /// `slot` moved to `data` (bf16 rows of kHidden, `stride` elements apart).
  LaunchArgs with(BufferSlot slot, const void *data, int64_t stride) {
    LaunchArgs moved = args;
    moved.set(slot, data, ElementType::bf16, kHidden, stride);
    return moved;
  }

  void expectOverlap(const LaunchArgs &overlapping, const std::string &output,
                     const std::string &other) {
    Status status = kernel->launch(overlapping, kRows, nullptr);
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument) << status.message();
    EXPECT_NE(status.message().find("output '" + output +
                                    "' overlaps buffer '" + other + "'"),
              std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("kernels assume buffers do not alias"),
              std::string::npos)
        << status.message();
    LaunchConfig launch;
    EXPECT_EQ(kernel->getLaunchFor(overlapping, kRows, launch).code(),
              ErrorCode::InvalidArgument);
    EXPECT_EQ(fakecuda_launch_count(), 0);
  }

  std::shared_ptr<const Kernel> kernel;
  char *base = nullptr;
  LaunchArgs args;
};

TEST_F(ResidualLaunchTest, SeparateBuffersLaunch) {
  ASSERT_TRUE(kernel->launch(args, kRows, nullptr).ok());
  EXPECT_EQ(fakecuda_launch_count(), 1);
}

TEST_F(ResidualLaunchTest, InPlaceUpdatesAreRefused) {
  // vLLM's fused_add_rms_norm updates the residual stream in place.
  expectOverlap(with(BufferSlot::ResidualOut, at(0), 2 * kHidden),
                "residual_out", "input");
  expectOverlap(with(BufferSlot::ResidualOut, at(1), 2 * kHidden),
                "residual_out", "addend");
  expectOverlap(with(BufferSlot::Output, at(0), 2 * kHidden), "output",
                "input");
  // Two outputs in one place.
  expectOverlap(with(BufferSlot::Output, at(3), 2 * kHidden), "output",
                "residual_out");
  // Zero rows still launch nothing, successfully.
  EXPECT_TRUE(kernel
                  ->launch(with(BufferSlot::ResidualOut, at(0), 2 * kHidden),
                           0, nullptr)
                  .ok());
}

TEST_F(ResidualLaunchTest, RefusalsNameTheInPlaceKernel) {
  Status status = kernel->launch(with(BufferSlot::ResidualOut, at(0),
                                      2 * kHidden),
                                 kRows, nullptr);
  EXPECT_NE(status.message().find("; a kernel built with "
                                  "NORMJIT_OP_RESIDUAL_OVER_INPUT writes it in "
                                  "place"),
            std::string::npos)
      << status.message();
  status = kernel->launch(with(BufferSlot::Output, at(1), 2 * kHidden), kRows,
                          nullptr);
  EXPECT_NE(status.message().find("NORMJIT_OP_OUTPUT_OVER_ADDEND"),
            std::string::npos)
      << status.message();
  // Two outputs: no kernel writes one over the other.
  status = kernel->launch(with(BufferSlot::Output, at(3), 2 * kHidden), kRows,
                          nullptr);
  EXPECT_NE(status.message().find("so an in-place update needs a separate "
                                  "output buffer"),
            std::string::npos)
      << status.message();
}

/// vLLM's fused_add_rms_norm(input, residual): the residual stream (our
/// input) takes the sum, the sublayer's output (our addend) the norm.
class InPlaceLaunchTest : public ResidualLaunchTest {
protected:
  void SetUp() override {
    LaunchTest::SetUp();
    open(RowOperand::Addend, RowOperand::Input);
  }

  void expectInexact(const LaunchArgs &overlapping, const std::string &output,
                     const std::string &other) {
    Status status = kernel->launch(overlapping, kRows, nullptr);
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument) << status.message();
    EXPECT_NE(status.message().find(
                  "output '" + output + "' overlaps buffer '" + other +
                  "' without being exactly it: an in-place output takes the "
                  "same address and row stride as the input it overwrites"),
              std::string::npos)
        << status.message();
    EXPECT_EQ(fakecuda_launch_count(), 0);
  }
};

TEST_F(InPlaceLaunchTest, ExactlyTheInputsLaunch) {
  ASSERT_TRUE(kernel->launch(args, kRows, nullptr).ok());
  ASSERT_EQ(fakecuda_launch_count(), 1);
  // input, addend, weight, output, residual_out: one pointer for each pair.
  fakecuda_launch recorded = lastLaunch();
  EXPECT_EQ(recorded.params[4], reinterpret_cast<uint64_t>(at(0)));
  EXPECT_EQ(recorded.params[0], recorded.params[4]);
  EXPECT_EQ(recorded.params[3], recorded.params[1]);
  EXPECT_NE(recorded.params[3], recorded.params[0]);
  // Separate outputs too: an in-place kernel need not be launched in place.
  LaunchArgs separate = with(BufferSlot::Output, at(2), 2 * kHidden);
  separate.set(BufferSlot::ResidualOut, at(3), ElementType::bf16, kHidden,
               2 * kHidden);
  ASSERT_TRUE(kernel->launch(separate, kRows, nullptr).ok());
  // One pair in place, the other not.
  ASSERT_TRUE(kernel
                  ->launch(with(BufferSlot::Output, at(2), 2 * kHidden), kRows,
                           nullptr)
                  .ok());
  EXPECT_EQ(fakecuda_launch_count(), 3);
}

TEST_F(InPlaceLaunchTest, AnythingButExactlyTheInputIsRefused) {
  // Another row stride: row 1 of the output is not row 1 of the input.
  expectInexact(with(BufferSlot::ResidualOut, at(0), kHidden), "residual_out",
                "input");
  // One element further.
  expectInexact(with(BufferSlot::Output, at(1) + 2, 2 * kHidden), "output",
                "addend");
  // Over the input it was not built to overwrite, or over the other output.
  expectOverlap(with(BufferSlot::Output, at(0), 2 * kHidden), "output",
                "input");
  expectOverlap(with(BufferSlot::ResidualOut, at(1), 2 * kHidden),
                "residual_out", "addend");
  // The inputs in one buffer: residual_out over input is then over the
  // addend too, which it was not built for.
  LaunchArgs sameInputs = with(BufferSlot::Addend, at(0), 2 * kHidden);
  sameInputs.set(BufferSlot::Output, at(2), ElementType::bf16, kHidden,
                 2 * kHidden);
  expectOverlap(sameInputs, "residual_out", "addend");
  // The weight is never written over.
  LaunchArgs weightInRow = args;
  weightInRow.set(BufferSlot::Weight, at(1) + kHidden, ElementType::bf16,
                  kHidden);
  expectOverlap(weightInRow, "output", "weight");
}

TEST_F(ResidualLaunchTest, PartialOverlapsAreRefused) {
  // The last element of the (contiguous) output is the first of the weight.
  expectOverlap(
      with(BufferSlot::Output, at(4) - (kRows * kHidden - 1) * 2, kHidden),
      "output", "weight");
  // The output's first row starts in the input's last row.
  expectOverlap(
      with(BufferSlot::Output, at(0) + ((kRows - 1) * 2 * kHidden + 10) * 2,
           kHidden),
      "output", "input");
  // A 1-D buffer inside a row.
  LaunchArgs weightInRow = args;
  weightInRow.set(BufferSlot::Weight, at(2) + kHidden, ElementType::bf16,
                  kHidden);
  expectOverlap(weightInRow, "output", "weight");
}

TEST_F(ResidualLaunchTest, DisjointPlacementsLaunch) {
  // The output starts in the input's third row: fine for two rows, not for
  // kRows.
  LaunchArgs third = with(BufferSlot::Output, at(0) + 2 * 2 * kHidden * 2,
                          2 * kHidden);
  expectOverlap(third, "output", "input");
  // Right after the input's last row, up to the addend.
  char *afterInput = at(0) + ((kRows - 1) * 2 * kHidden + kHidden) * 2;
  ASSERT_TRUE(kernel
                  ->launch(with(BufferSlot::Output, afterInput, kHidden),
                           kRows, nullptr)
                  .ok());
  // Interleaved with the input: the other half of each of its rows.
  ASSERT_TRUE(kernel
                  ->launch(with(BufferSlot::Output, at(0) + kHidden * 2,
                                2 * kHidden),
                           kRows, nullptr)
                  .ok());
  // Inputs may share memory: they are only read.
  LaunchArgs sameInputs = with(BufferSlot::Addend, at(0), 2 * kHidden);
  ASSERT_TRUE(kernel->launch(sameInputs, kRows, nullptr).ok());
  ASSERT_TRUE(kernel->launch(third, 2, nullptr).ok());
  EXPECT_EQ(fakecuda_launch_count(), 4);
}

TEST_F(ResidualLaunchTest, InterleavedRowsOverlapByOneElement) {
  // One element short of the other half of the input's rows.
  expectOverlap(
      with(BufferSlot::Output, at(0) + (kHidden - 1) * 2, 2 * kHidden),
      "output", "input");
  // One element past the other half: each row of the residual covers the
  // first element of the input's next row.
  expectOverlap(with(BufferSlot::ResidualOut, at(0) + (kHidden + 1) * 2,
                     2 * kHidden),
                "residual_out", "input");
}

TEST_F(LaunchTest, ProgrammaticDependentLaunch) {
  // A context without pdl: cuLaunchKernel, no _pdl kernels.
  OpSpec spec = makeRmsNorm(4096);
  std::shared_ptr<const Kernel> plain;
  ASSERT_TRUE(context->getKernel(spec, {}, plain).ok());
  char *x = allocate(8 * 4096 * 2), *w = allocate(4096 * 2),
       *y = allocate(8 * 4096 * 2);
  LaunchArgs args;
  args.set(BufferSlot::Input, x, ElementType::bf16, 4096)
      .set(BufferSlot::Weight, w, ElementType::bf16, 4096)
      .set(BufferSlot::Output, y, ElementType::bf16, 4096);
  ASSERT_TRUE(plain->launch(args, 8, nullptr).ok());
  fakecuda_launch recorded = lastLaunch();
  EXPECT_EQ(recorded.programmatic, 0);
  EXPECT_EQ(std::string(recorded.kernel).find("_pdl"), std::string::npos);
  EXPECT_EQ(fakecuda_call_count("cuLaunchKernelEx"), 0);

  // With it: kernels built for it (names ending in _pdl), launched through
  // cuLaunchKernelEx with programmatic stream serialization.
  ContextOptions options = makeFakeOptions(compiler);
  options.pdl = true;
  std::unique_ptr<Context> pdl;
  ASSERT_TRUE(Context::create(options, pdl).ok());
  std::shared_ptr<const Kernel> waiting;
  ASSERT_TRUE(pdl->getKernel(spec, {}, waiting).ok());
  ASSERT_TRUE(waiting->launch(args, 8, nullptr).ok());
  recorded = lastLaunch();
  EXPECT_EQ(recorded.programmatic, 1);
  std::string name = recorded.kernel;
  EXPECT_EQ(name.substr(name.size() - 4), "_pdl") << name;
  EXPECT_EQ(fakecuda_call_count("cuLaunchKernelEx"), 1);
  EXPECT_EQ(recorded.grid[0], lastLaunch().grid[0]);
  EXPECT_EQ(recorded.params[0], reinterpret_cast<uint64_t>(x));
  EXPECT_EQ(recorded.params[2], reinterpret_cast<uint64_t>(y));

  // Driver errors name the entry point.
  fakecuda_fail_next("cuLaunchKernelEx", 1, 1);
  Status status = waiting->launch(args, 8, nullptr);
  EXPECT_EQ(status.code(), ErrorCode::DriverError);
  EXPECT_NE(status.message().find("cuLaunchKernelEx failed"),
            std::string::npos)
      << status.message();

  // Devices before compute capability 9.0 have no griddepcontrol.
  fakecuda_set_compute_capability(8, 0);
  std::unique_ptr<Context> old;
  status = Context::create(options, old);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported) << status.message();
  EXPECT_NE(status.message().find("pdl needs griddepcontrol, which sm_80 "
                                  "lacks"),
            std::string::npos)
      << status.message();
}

TEST_F(LaunchTest, QKNormRowsAreTokens) {
  OpSpec qk = examples::makeQKNorm();
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(qk, {}, kernel).ok());
  const int64_t tokens = 10, packed = 48 * 128;
  char *qkv = allocate(tokens * packed * 2);
  char *qw = allocate(256), *kw = allocate(256);
  char *q = allocate(tokens * 4096 * 2), *k = allocate(tokens * 1024 * 2);
  LaunchArgs args;
  args.set(BufferSlot::Qkv, qkv, ElementType::bf16, packed)
      .set(BufferSlot::QWeight, qw, ElementType::bf16, 128)
      .set(BufferSlot::KWeight, kw, ElementType::bf16, 128)
      .set(BufferSlot::Q, q, ElementType::bf16, 4096)
      .set(BufferSlot::K, k, ElementType::bf16, 1024);
  ASSERT_TRUE(kernel->launch(args, tokens, nullptr).ok());
  fakecuda_launch recorded = lastLaunch();
  const LaunchConfig &launch = kernel->getReport(RowBucket::UpTo64).launch;
  // 40 head rows per token.
  EXPECT_EQ(recorded.grid[0],
            (tokens * 40 + launch.rowsPerCta - 1) / launch.rowsPerCta);
  ASSERT_EQ(recorded.num_params, 9);
  EXPECT_EQ(recorded.params[5], static_cast<uint64_t>(tokens));
  EXPECT_EQ(recorded.params[6], static_cast<uint64_t>(packed));
  EXPECT_EQ(recorded.params[7], 4096u);
  EXPECT_EQ(recorded.params[8], 1024u);
  // Per-head buffers must match the head counts.
  args.set(BufferSlot::K, k, ElementType::bf16, 4096);
  EXPECT_EQ(kernel->launch(args, tokens, nullptr).code(),
            ErrorCode::InvalidArgument);
}

// The sm_90a attention family reads k and v through TMA: each launch
// encodes a tensor map of each (the buffer's rows, columns and row stride,
// boxes of block_n x 64, 128-byte swizzle) and passes its 128 bytes by
// value as the last parameters; an encoding the driver refuses launches
// nothing.
TEST_F(LaunchTest, WarpgroupAttentionPassesTensorMaps) {
  ContextOptions options = makeFakeOptions(compiler);
  options.chip = "sm_90a";
  std::unique_ptr<Context> hopper;
  ASSERT_TRUE(Context::create(options, hopper).ok());
  OpSpec spec = examples::makeAttention();
  spec.keysPrepared = true;
  KernelOptions kernelOptions;
  kernelOptions.tune = false;
  LaunchConfig launch{8, 16, 12, 128, 128, 2, 2, 0};
  kernelOptions.launch = launch;
  std::shared_ptr<const Kernel> kernel;
  Status got = hopper->getKernel(spec, kernelOptions, kernel);
  ASSERT_TRUE(got.ok()) << got.message();
  const int64_t tokens = 300, kStride = 1024 + 64;
  void *q, *k, *v, *qw, *cu, *out;
  for (auto [pointer, bytes] :
       {std::pair{&q, tokens * 4096 * 2}, std::pair{&k, tokens * kStride * 2},
        std::pair{&v, tokens * 1024 * 2}, std::pair{&qw, int64_t(256)},
        std::pair{&cu, int64_t(16)}, std::pair{&out, tokens * 4096 * 2}})
    ASSERT_TRUE(hopper->allocate(bytes, *pointer).ok());
  LaunchArgs args;
  args.set(BufferSlot::Q, q, ElementType::bf16, 4096)
      .set(BufferSlot::K, k, ElementType::bf16, 1024, kStride)
      .set(BufferSlot::V, v, ElementType::bf16, 1024)
      .set(BufferSlot::QWeight, qw, ElementType::bf16, 128)
      .set(BufferSlot::CuSeqlens, cu, ElementType::i32, 3)
      .set(BufferSlot::Output, out, ElementType::bf16, 4096);
  Status ran = kernel->launch(args, tokens, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  ASSERT_EQ(fakecuda_tensor_map_count(), 2);
  for (int i = 0; i < 2; ++i) {
    fakecuda_tensor_map map{};
    ASSERT_TRUE(fakecuda_get_tensor_map(i, &map));
    EXPECT_EQ(map.address, reinterpret_cast<uint64_t>(i ? v : k));
    EXPECT_EQ(map.rank, 2u);
    EXPECT_EQ(map.data_type, cu::kTensorMapDataTypeBfloat16);
    EXPECT_EQ(map.dims[0], 1024u);
    EXPECT_EQ(map.dims[1], static_cast<unsigned long long>(tokens));
    EXPECT_EQ(map.strides[0],
              static_cast<unsigned long long>((i ? 1024 : kStride) * 2));
    EXPECT_EQ(map.box[0], 64u);
    EXPECT_EQ(map.box[1], 128u);
    EXPECT_EQ(map.swizzle, cu::kTensorMapSwizzle128B);
  }
  fakecuda_launch recorded = lastLaunch();
  EXPECT_EQ(recorded.block[0], 384u);
  // The maps' first 8 bytes: the fake's index of each encoding.
  ASSERT_GE(recorded.num_params, 2);
  EXPECT_EQ(recorded.params[recorded.num_params - 2], 0u);
  EXPECT_EQ(recorded.params[recorded.num_params - 1], 1u);

  int launches = fakecuda_launch_count();
  fakecuda_fail_next("cuTensorMapEncodeTiled", 1, 1);
  EXPECT_EQ(kernel->launch(args, tokens, nullptr).code(),
            ErrorCode::DriverError);
  EXPECT_EQ(fakecuda_launch_count(), launches);
  for (void *pointer : {q, k, v, qw, cu, out})
    EXPECT_TRUE(hopper->release(pointer).ok());
}

// NORMJIT_CHIP=sm_90a on a cc 9.0 device: prefill attention over prepared
// keys plans the sm_90a family untuned (FlashAttention-3's tiles) and
// launches it with its tensor maps; the mma.sync kernel where the family
// does not take the op (keys normalized in the loop); refused on a device
// that cannot run sm_90a code.
TEST_F(LaunchTest, Sm90aFromTheEnvironmentPlansTheHopperKernel) {
  ASSERT_EQ(setenv("NORMJIT_CHIP", "sm_90a", 1), 0);
  std::unique_ptr<Context> hopper;
  Status created = Context::create(makeFakeOptions(compiler), hopper);
  ASSERT_TRUE(created.ok()) << created.message();
  OpSpec prepared = examples::makeAttention();
  prepared.keysPrepared = true;
  KernelOptions untuned;
  untuned.tune = false;
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(hopper->getKernel(prepared, untuned, kernel).ok());
  const LaunchConfig &launch = kernel->getReport(RowBucket::More).launch;
  EXPECT_EQ(launch.getMangledSuffix(), "v8_t16_w12_r128_n128_s2_g2o");
  std::shared_ptr<const Kernel> inLoop;
  ASSERT_TRUE(
      hopper->getKernel(examples::makeAttention(), untuned, inLoop).ok());
  EXPECT_FALSE(
      inLoop->getReport(RowBucket::More).launch.isWarpgroupAttention());

  fakecuda_set_compute_capability(8, 9);
  std::unique_ptr<Context> ada;
  Status refused = Context::create(makeFakeOptions(compiler), ada);
  unsetenv("NORMJIT_CHIP");
  EXPECT_EQ(refused.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(refused.message().find("NORMJIT_CHIP=sm_90a does not run on"),
            std::string::npos)
      << refused.message();
}

} // namespace
