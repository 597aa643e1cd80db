//===- TrainingTest.cpp - libnormjit's training launches ------------------===//
//
// On the fake driver: forward kernels that save their statistics, backward
// launches (the row kernel into the context's per-stream gradient partials,
// then one column sum per weight and bias gradient on the same stream), the
// tuner's backward candidates, and the C API's training descs and buffers.
//
//===----------------------------------------------------------------------===//

#include "runtime/normjit.hpp"

#include "runtime/Candidates.h"
#include "test/Unit/Runtime/CApiBundle.h"

#include <cstdlib>
#include <cstring>
#include <memory>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

uint64_t address(const void *pointer) {
  return reinterpret_cast<uint64_t>(pointer);
}

/// LayerNorm's backward with weight and bias (two gradient sums), an odd
/// hidden size whose rows are not whole 16-byte quads of f32.
OpSpec makeLayerNormBackward(int64_t hidden = 1002) {
  OpSpec spec;
  spec.kind = OpKind::LayerNorm;
  spec.hidden = hidden;
  spec.hasWeight = spec.hasBias = true;
  spec.param = ElementType::f32;
  spec.backward = true;
  return spec;
}

fakecuda_launch getLaunch(int index) {
  fakecuda_launch launch{};
  EXPECT_TRUE(fakecuda_get_launch(index, &launch)) << index;
  return launch;
}

/// The parameter of `slot` among a kernel's buffers (getBuffers order).
int getParamIndex(const OpSpec &spec, BufferSlot slot) {
  std::vector<BufferSpec> buffers = getBuffers(spec);
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].slot == slot)
      return static_cast<int>(i);
  ADD_FAILURE() << "no buffer " << getBufferSlotName(slot);
  return 0;
}

class TrainingTest : public FakeDriverTest {
protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    ASSERT_TRUE(Context::create(
                    makeFakeOptions(std::make_shared<FakeCompiler>()), context)
                    .ok());
  }

  std::shared_ptr<const Kernel> getKernel(const OpSpec &spec) {
    std::shared_ptr<const Kernel> kernel;
    Status status = context->getKernel(spec, {}, kernel);
    EXPECT_TRUE(status.ok()) << status.message();
    return kernel;
  }

  /// Every buffer of a backward launch of `rows` rows but the partials.
  LaunchArgs backwardArgs(const OpSpec &spec, int64_t rows) {
    LaunchArgs args;
    for (const BufferSpec &buffer : getBuffers(spec)) {
      if (isGradPartials(buffer.slot))
        continue;
      size_t bytes = (buffer.rows2D ? rows : 1) * buffer.cols *
                     getElementBytes(buffer.type);
      args.set(buffer.slot, memory.get(bytes), buffer.type, buffer.cols);
    }
    for (const GradientSum &sum : getGradientSums(spec))
      args.set(sum.gradient, memory.get(sum.columnSum.hidden * 4),
               sum.columnSum.output, sum.columnSum.hidden);
    return args;
  }

  std::unique_ptr<Context> context;
  HostBuffers memory;
};

TEST_F(TrainingTest, BackwardRunsTheRowKernelThenItsColumnSums) {
  OpSpec spec = makeLayerNormBackward();
  std::shared_ptr<const Kernel> kernel = getKernel(spec);
  ASSERT_TRUE(kernel);
  const int64_t rows = 4096;
  LaunchArgs args = backwardArgs(spec, rows);
  void *stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), 0);
  Status status = kernel->launch(args, rows, stream);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(fakecuda_launch_count(), 3);

  LaunchConfig launch;
  ASSERT_TRUE(kernel->getLaunchFor(args, rows, launch).ok());
  int64_t partialRows = getGradPartialRows(spec, launch, rows);
  // A persistent grid of kBackwardCtas CTAs (4096 rows are more blocks),
  // each writing its thread groups' partials.
  ASSERT_GT(rows / launch.rowsPerCta, kBackwardCtas);
  const int64_t ctas = kBackwardCtas;
  EXPECT_EQ(partialRows, ctas * launch.getConcurrentRows());

  fakecuda_launch row = getLaunch(0);
  EXPECT_NE(std::string(row.kernel).find("_bwd"), std::string::npos)
      << row.kernel;
  EXPECT_EQ(row.grid[0], static_cast<unsigned>(ctas));
  std::vector<BufferSpec> buffers = getBuffers(spec);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!isGradPartials(buffers[i].slot)) {
      EXPECT_EQ(row.params[i], address(args[buffers[i].slot].data))
          << getBufferSlotName(buffers[i].slot);
    }
  }
  uint64_t weightPartials =
      row.params[getParamIndex(spec, BufferSlot::WeightGradPartials)];
  uint64_t biasPartials =
      row.params[getParamIndex(spec, BufferSlot::BiasGradPartials)];
  // One workspace: the weight's partials, then the bias's, rows of whole
  // 16-byte quads (1002 -> 1004 floats).
  const int64_t stride = 1004;
  EXPECT_EQ(weightPartials % 16, 0u);
  EXPECT_EQ(biasPartials, weightPartials + partialRows * stride * 4);
  // After the buffers: rows, then the row strides (the partials' last).
  EXPECT_EQ(row.params[buffers.size()], uint64_t(rows));
  EXPECT_EQ(row.params[row.num_params - 1], uint64_t(stride));

  // Each column sum reads its partials (partialRows rows of `stride`) and
  // writes the caller's gradient, on the same stream, after the row kernel.
  std::pair<uint64_t, BufferSlot> sums[] = {
      {weightPartials, BufferSlot::WeightGrad},
      {biasPartials, BufferSlot::BiasGrad}};
  for (int i = 0; i < 2; ++i) {
    fakecuda_launch sum = getLaunch(1 + i);
    EXPECT_NE(std::string(sum.kernel).find("colsum"), std::string::npos)
        << sum.kernel;
    EXPECT_EQ(sum.stream, stream);
    ASSERT_EQ(sum.num_params, 4); // input, output, rows, input stride
    EXPECT_EQ(sum.params[0], sums[i].first);
    EXPECT_EQ(sum.params[1], address(args[sums[i].second].data));
    EXPECT_EQ(sum.params[2], uint64_t(partialRows));
    EXPECT_EQ(sum.params[3], uint64_t(stride));
  }
  EXPECT_EQ(row.stream, stream);

  // Again: the stream's partials serve it, nothing is allocated.
  int allocations = fakecuda_call_count("cuMemAlloc");
  ASSERT_TRUE(kernel->launch(args, rows, stream).ok());
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), allocations);
  EXPECT_EQ(getLaunch(3).params[getParamIndex(
                spec, BufferSlot::WeightGradPartials)],
            weightPartials);
  // No semaphores for backward launches, so nothing zeroed.
  EXPECT_EQ(fakecuda_call_count("cuMemsetD32Async"), 0);

  // Another stream has partials of its own.
  ASSERT_TRUE(kernel->launch(args, rows, nullptr).ok());
  EXPECT_NE(getLaunch(6).params[getParamIndex(
                spec, BufferSlot::WeightGradPartials)],
            weightPartials);
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), allocations + 1);

  // Four times the rows run on the same persistent grid: no more partials.
  LaunchArgs large = backwardArgs(spec, 4 * rows);
  ASSERT_TRUE(kernel->launch(large, 4 * rows, stream).ok());
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), allocations + 1);
  // A stream whose first launch had few rows grows its partials for more,
  // after synchronizing it (its kernels may still use the old ones).
  void *other = nullptr;
  ASSERT_EQ(cuStreamCreate(&other, 0), 0);
  ASSERT_TRUE(kernel->launch(args, 16, other).ok());
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), allocations + 2);
  EXPECT_EQ(fakecuda_call_count("cuStreamSynchronize"), 0);
  ASSERT_TRUE(kernel->launch(args, rows, other).ok());
  EXPECT_EQ(fakecuda_call_count("cuStreamSynchronize"), 1);
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), allocations + 3);
  EXPECT_EQ(cuStreamDestroy_v2(other), 0);

  // Freed with the context; its kernels then refuse to launch.
  context.reset();
  status = kernel->launch(args, rows, stream);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("context of this backward kernel is gone"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(cuStreamDestroy_v2(stream), 0);
}

TEST_F(TrainingTest, BackwardRefusesPartialsAndBadGradients) {
  OpSpec spec = makeLayerNormBackward(4096);
  std::shared_ptr<const Kernel> kernel = getKernel(spec);
  ASSERT_TRUE(kernel);
  const int64_t rows = 64;
  auto expectRefused = [&](const LaunchArgs &args, const std::string &words) {
    Status status = kernel->launch(args, rows, nullptr);
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(status.message().find(words), std::string::npos)
        << status.message();
  };
  LaunchArgs args = backwardArgs(spec, rows);
  LaunchArgs partials = args;
  partials.set(BufferSlot::WeightGradPartials, memory.get(1 << 20),
               ElementType::f32, 4096);
  expectRefused(partials, "'weight_grad_partials' is the library's own");
  LaunchArgs missing = args;
  missing.set(BufferSlot::BiasGrad, nullptr, ElementType::f32, 4096);
  expectRefused(missing, "'bias_grad' is null");
  LaunchArgs type = args;
  type.set(BufferSlot::WeightGrad, args[BufferSlot::WeightGrad].data,
           ElementType::bf16, 4096);
  expectRefused(type, "'weight_grad' is bf16, the operation expects f32");
  LaunchArgs overlap = args;
  overlap.set(BufferSlot::WeightGrad, args[BufferSlot::GradInput].data,
              ElementType::f32, 4096);
  expectRefused(overlap, "'grad_input' overlaps buffer 'weight_grad'");
  EXPECT_EQ(fakecuda_launch_count(), 0);

  // A forward kernel has no gradients.
  OpSpec forward = spec;
  forward.backward = false;
  std::shared_ptr<const Kernel> forwardKernel = getKernel(forward);
  ASSERT_TRUE(forwardKernel);
  LaunchArgs forwardArgs;
  for (const BufferSpec &buffer : getBuffers(forward))
    forwardArgs.set(buffer.slot, memory.get(rows * buffer.cols * 4),
                    buffer.type, buffer.cols);
  forwardArgs.set(BufferSlot::WeightGrad, memory.get(4096 * 4),
                  ElementType::f32, 4096);
  Status status = forwardKernel->launch(forwardArgs, rows, nullptr);
  EXPECT_NE(status.message().find("has no 'weight_grad' buffer"),
            std::string::npos)
      << status.message();
}

TEST_F(TrainingTest, BackwardOfNoRowsZeroesTheGradients) {
  OpSpec spec = makeLayerNormBackward(4096);
  std::shared_ptr<const Kernel> kernel = getKernel(spec);
  ASSERT_TRUE(kernel);
  // Only the gradients: the row buffers of no rows may be null.
  LaunchArgs args;
  char *weightGrad = memory.get(4096 * 4), *biasGrad = memory.get(4096 * 4);
  args.set(BufferSlot::WeightGrad, weightGrad, ElementType::f32, 4096)
      .set(BufferSlot::BiasGrad, biasGrad, ElementType::f32, 4096);
  Status status = kernel->launch(args, 0, nullptr);
  ASSERT_TRUE(status.ok()) << status.message();
  // One column sum of no rows per gradient, each writing its output.
  ASSERT_EQ(fakecuda_launch_count(), 2);
  for (int i = 0; i < 2; ++i) {
    fakecuda_launch sum = getLaunch(i);
    EXPECT_NE(std::string(sum.kernel).find("colsum"), std::string::npos);
    EXPECT_EQ(sum.params[1], address(i == 0 ? weightGrad : biasGrad));
    EXPECT_EQ(sum.params[2], 0u); // rows
  }
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), 0);
  args.set(BufferSlot::BiasGrad, nullptr, ElementType::f32, 4096);
  status = kernel->launch(args, 0, nullptr);
  EXPECT_NE(status.message().find("'bias_grad' is null"), std::string::npos)
      << status.message();
  args.set(BufferSlot::BiasGrad, biasGrad, ElementType::bf16, 4096);
  status = kernel->launch(args, 0, nullptr);
  EXPECT_NE(status.message().find("'bias_grad' is not 4096 f32 elements"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(fakecuda_launch_count(), 2);
}

// Everything a backward launch needs is checked before its first kernel is
// enqueued, zero rows included: the gradients' alignment for their sums (as
// NORMJIT_KERNEL_REFUSE_MISALIGNED asks, for the sums too), gradients
// sharing bytes, the caller's own partials.
TEST_F(TrainingTest, BackwardChecksEverythingBeforeEnqueuing) {
  OpSpec spec = makeLayerNormBackward(4096);
  KernelOptions refusing;
  refusing.refuseMisaligned = true;
  std::shared_ptr<const Kernel> kernel;
  ASSERT_TRUE(context->getKernel(spec, refusing, kernel).ok());
  for (int64_t rows : {0, 64}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    LaunchArgs args = backwardArgs(spec, std::max<int64_t>(rows, 1));
    // 4-byte aligned f32, not 16: only a scalar column sum could take it.
    LaunchArgs odd = args;
    odd.set(BufferSlot::BiasGrad, memory.get(4097 * 4) + 4, ElementType::f32,
            4096);
    Status status = kernel->launch(odd, rows, nullptr);
    EXPECT_EQ(status.code(), ErrorCode::Misaligned) << status.message();
    EXPECT_NE(status.message().find("'bias_grad'"), std::string::npos)
        << status.message();
    LaunchArgs same = args;
    same.set(BufferSlot::BiasGrad, args[BufferSlot::WeightGrad].data,
             ElementType::f32, 4096);
    status = kernel->launch(same, rows, nullptr);
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(status.message().find("overlaps"), std::string::npos)
        << status.message();
    LaunchArgs partials = args;
    partials.set(BufferSlot::BiasGradPartials, memory.get(1 << 16),
                 ElementType::f32, 4096);
    status = kernel->launch(partials, rows, nullptr);
    EXPECT_NE(status.message().find("'bias_grad_partials' is the library's"),
              std::string::npos)
        << status.message();
    EXPECT_EQ(fakecuda_launch_count(), 0);
  }
  // A kernel that takes misaligned buffers sums into that gradient with
  // its scalar column sum: row kernel and two sums.
  std::shared_ptr<const Kernel> lenient = getKernel(spec);
  ASSERT_TRUE(lenient);
  LaunchArgs odd = backwardArgs(spec, 64);
  odd.set(BufferSlot::BiasGrad, memory.get(4097 * 4) + 4, ElementType::f32,
          4096);
  Status status = lenient->launch(odd, 64, nullptr);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(fakecuda_launch_count(), 3);
}

TEST_F(TrainingTest, WeightlessBackwardRunsOneKernel) {
  OpSpec spec;
  spec.hidden = 5120;
  spec.backward = true;
  std::shared_ptr<const Kernel> kernel = getKernel(spec);
  ASSERT_TRUE(kernel);
  LaunchArgs args = backwardArgs(spec, 7);
  ASSERT_TRUE(kernel->launch(args, 7, nullptr).ok());
  EXPECT_EQ(fakecuda_launch_count(), 1);
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), 0);
}

TEST_F(TrainingTest, ForwardSavesStatisticsAtAnyRowStride) {
  OpSpec spec = makeLayerNormBackward(4096);
  spec.backward = false;
  spec.saveStats = true;
  std::shared_ptr<const Kernel> kernel = getKernel(spec);
  ASSERT_TRUE(kernel);
  const int64_t rows = 5;
  LaunchArgs args;
  for (const BufferSpec &buffer : getBuffers(spec))
    args.set(buffer.slot, memory.get(rows * buffer.cols * 4), buffer.type,
             buffer.cols);
  // The statistics interleaved in one [rows, 2] f32 tensor, as a caller
  // that keeps (mean, rstd) pairs would.
  char *stats = memory.get(rows * 2 * 4);
  args.set(BufferSlot::SavedMean, stats, ElementType::f32, 1, 2);
  args.set(BufferSlot::SavedRstd, stats + 4, ElementType::f32, 1, 2);
  Status status = kernel->launch(args, rows, nullptr);
  ASSERT_TRUE(status.ok()) << status.message();
  fakecuda_launch recorded = getLaunch(0);
  EXPECT_EQ(recorded.params[getParamIndex(spec, BufferSlot::SavedMean)],
            address(stats));
  EXPECT_EQ(recorded.params[getParamIndex(spec, BufferSlot::SavedRstd)],
            address(stats + 4));
  // Statistics are f32.
  args.set(BufferSlot::SavedRstd, stats + 4, ElementType::bf16, 1, 2);
  status = kernel->launch(args, rows, nullptr);
  EXPECT_NE(status.message().find("'saved_rstd' is bf16"), std::string::npos)
      << status.message();
}

TEST_F(TrainingTest, GroupNormBackwardGridsHoldWholeGroups) {
  // 32 groups of 40 channels: each thread group sums one group's channels,
  // 32 of them a partial row of 1280 that the column sums read.
  OpSpec spec = makeLayerNormBackward(1280);
  spec.kind = OpKind::GroupNorm;
  spec.groups = 32;
  std::shared_ptr<const Kernel> kernel = getKernel(spec);
  ASSERT_TRUE(kernel);
  for (int64_t rows : {int64_t(1), int64_t(7), int64_t(4096)}) {
    int first = fakecuda_launch_count();
    LaunchArgs args = backwardArgs(spec, rows);
    ASSERT_TRUE(kernel->launch(args, rows, nullptr).ok()) << rows;
    ASSERT_EQ(fakecuda_launch_count(), first + 3) << rows;
    LaunchConfig launch;
    ASSERT_TRUE(kernel->getLaunchFor(args, rows, launch).ok());
    int64_t concurrent = launch.getConcurrentRows();
    int64_t grid = getLaunch(first).grid[0];
    EXPECT_EQ(grid * concurrent % 32, 0) << rows;
    EXPECT_LE(grid, kBackwardCtas) << rows;
    // Enough CTAs for every row group, rounded up to whole groups.
    EXPECT_EQ(grid, getPersistentGridX(rows * 32, launch.rowsPerCta,
                                       kBackwardCtas,
                                       getBackwardGridMultiple(spec, launch)))
        << rows;
    int64_t partialRows = grid * concurrent / 32;
    EXPECT_EQ(getGradPartialRows(spec, launch, rows), partialRows);
    for (int i = 1; i <= 2; ++i) {
      fakecuda_launch sum = getLaunch(first + i);
      EXPECT_EQ(sum.params[2], uint64_t(partialRows)) << rows;
      EXPECT_EQ(sum.params[3], uint64_t(1280)) << rows;
    }
  }
}

TEST_F(TrainingTest, TunesBackwardCandidatesOnTheirPartials) {
  std::unique_ptr<Context> tuning;
  ASSERT_TRUE(Context::create(makeFakeOptions(std::make_shared<FakeCompiler>(),
                                              "", /*tuning=*/true),
                              tuning)
                  .ok());
  std::shared_ptr<const Kernel> kernel;
  int first = fakecuda_launch_count();
  Status status =
      tuning->getKernel(makeLayerNormBackward(4096), {}, kernel);
  ASSERT_TRUE(status.ok()) << status.message();
  // Each timed launch of a candidate runs its column sums after it (weight,
  // then bias), as every launch does: more partial rows cost their sums.
  int rowLaunches = 0;
  for (int i = first; i < fakecuda_launch_count(); ++i) {
    std::string name = getLaunch(i).kernel;
    if (name.find("_bwd") == std::string::npos)
      continue;
    ++rowLaunches;
    ASSERT_LT(i + 2, fakecuda_launch_count());
    EXPECT_NE(std::string(getLaunch(i + 1).kernel).find("colsum"),
              std::string::npos) << name;
    EXPECT_NE(std::string(getLaunch(i + 2).kernel).find("colsum"),
              std::string::npos) << name;
  }
  EXPECT_GT(rowLaunches, 0);
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel->getReport(bucket);
    EXPECT_EQ(report.source, BucketReport::Source::Tuned);
    EXPECT_GT(report.candidates.size(), bucket == RowBucket::More ? 1u : 0u)
        << getRowBucketName(bucket);
    // Every candidate ran: its partials fit the tuner's scratch.
    for (const BucketReport::Candidate &candidate : report.candidates)
      EXPECT_GE(candidate.microseconds, 0)
          << candidate.launch.getMangledSuffix() << ": " << candidate.failure;
  }
}

TEST(TrainingCandidates, BackwardGridsArePersistent) {
  for (OpSpec spec : {makeLayerNormBackward(4096), makeLayerNormBackward(768)}) {
    for (RowBucket bucket : kAllRowBuckets) {
      LaunchConfig heuristic =
          getHeuristicLaunch(spec, getTuningRows(spec, bucket));
      std::vector<LaunchConfig> candidates =
          getTuningCandidates(spec, bucket, heuristic);
      ASSERT_FALSE(candidates.empty());
      int64_t rows = getTuningRows(spec, bucket);
      TuningRun run{candidates, 132};
      for (const LaunchConfig &launch : candidates) {
        // At most kBackwardCtas CTAs, one partial row per thread group.
        int64_t blocks = (rows + launch.rowsPerCta - 1) / launch.rowsPerCta;
        EXPECT_EQ(getGradPartialRows(spec, launch, rows),
                  std::min(blocks, kBackwardCtas) * launch.getConcurrentRows())
            << launch.getMangledSuffix();
        // The tuner's partials hold the rows of every candidate's launch.
        for (BufferSlot slot : {BufferSlot::WeightGradPartials,
                                BufferSlot::BiasGradPartials}) {
          BufferSpec partials{slot, ElementType::f32, spec.hidden, true, true};
          EXPECT_GE(getTuningBufferElements(spec, partials, rows, run),
                    getGradPartialRows(spec, launch, rows) * spec.hidden);
        }
      }
    }
  }
  // GroupNorm: whole groups of thread groups, `groups` a partial row of the
  // hidden size, for every candidate and row count.
  OpSpec group = makeLayerNormBackward(1536);
  group.kind = OpKind::GroupNorm;
  group.groups = 24;
  for (RowBucket bucket : kAllRowBuckets) {
    int64_t rows = getTuningRows(group, bucket);
    for (const LaunchConfig &launch : getTuningCandidates(
             group, bucket, getHeuristicLaunch(group, rows))) {
      int64_t multiple = getBackwardGridMultiple(group, launch);
      int64_t concurrent = launch.getConcurrentRows();
      EXPECT_EQ(multiple * concurrent % 24, 0) << launch.getMangledSuffix();
      int64_t grid = getPersistentGridX(rows * 24, launch.rowsPerCta,
                                        kBackwardCtas, multiple);
      EXPECT_EQ(grid % multiple, 0);
      EXPECT_LE(grid, std::max(kBackwardCtas, multiple));
      EXPECT_EQ(getGradPartialRows(group, launch, rows) * 24,
                grid * concurrent)
          << launch.getMangledSuffix();
    }
  }

  // Column sums map threads onto columns: the heuristic alone.
  OpSpec sum = getGradientSums(makeLayerNormBackward(4096))[0].columnSum;
  EXPECT_EQ(getTuningCandidates(sum, RowBucket::More,
                                getHeuristicLaunch(sum, 4096))
                .size(),
            1u);
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

/// The C API's QK-Norm: 8 q heads, 2 kv heads of 128, weights, RMS.
normjit_op_desc qkForwardDesc() {
  normjit_op_desc desc = normjit::opDesc();
  desc.kind = NORMJIT_OP_QK_NORM;
  desc.hidden = 128;
  desc.num_q_heads = 8;
  desc.num_kv_heads = 2;
  desc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_QK_RMS | NORMJIT_OP_SAVE_STATS;
  return desc;
}

class TrainingCApiTest : public CApiBundleTest {};

TEST_F(TrainingCApiTest, BackwardDescsOfQKNormAreOnePerKindOfHead) {
  normjit_op_desc forward = qkForwardDesc();
  normjit_op_desc backward[3];
  size_t count = 0;
  ASSERT_EQ(normjit_op_desc_get_backward(&forward, backward, 3, &count),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  ASSERT_EQ(count, 2u);
  for (int i = 0; i < 2; ++i) {
    int64_t heads = i == 0 ? 8 : 2;
    const normjit_op_desc &desc = backward[i];
    EXPECT_EQ(desc.struct_size, sizeof(normjit_op_desc));
    EXPECT_EQ(desc.kind, NORMJIT_OP_RMS_NORM);
    EXPECT_EQ(desc.hidden, heads * 128);
    EXPECT_EQ(desc.groups, heads);
    EXPECT_EQ(desc.flags, NORMJIT_OP_BACKWARD | NORMJIT_OP_WEIGHT |
                              NORMJIT_OP_PER_HEAD_WEIGHT);
    EXPECT_EQ(desc.num_q_heads, 0);
  }
  // capacity 0 counts.
  ASSERT_EQ(normjit_op_desc_get_backward(&forward, nullptr, 0, &count),
            NORMJIT_SUCCESS);
  EXPECT_EQ(count, 2u);
  // The C++ wrapper: the same descs, or an exception with the message.
  std::vector<normjit_op_desc> descs = normjit::backwardDescs(forward);
  ASSERT_EQ(descs.size(), 2u);
  EXPECT_EQ(std::memcmp(&descs[1], &backward[1], sizeof(normjit_op_desc)), 0);

  // A row norm has one: the same fields, backward instead of save_stats
  // and without the Sandwich skip.
  normjit_op_desc rms = normjit::opDesc();
  rms.hidden = 4096;
  rms.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_ADDEND | NORMJIT_OP_RESIDUAL_OUT |
              NORMJIT_OP_SKIP | NORMJIT_OP_SAVE_STATS;
  rms.alpha = 2.0;
  rms.weight_offset = 1.0;
  ASSERT_EQ(normjit_op_desc_get_backward(&rms, backward, 3, &count),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(backward[0].flags, NORMJIT_OP_BACKWARD | NORMJIT_OP_WEIGHT |
                                   NORMJIT_OP_ADDEND |
                                   NORMJIT_OP_RESIDUAL_OUT);
  EXPECT_EQ(backward[0].alpha, 2.0);
  EXPECT_EQ(backward[0].weight_offset, 1.0);

  // GroupNorm: one, over the same groups.
  normjit_op_desc group = normjit::opDesc();
  group.kind = NORMJIT_OP_GROUP_NORM;
  group.hidden = 4096;
  group.groups = 32;
  group.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_BIAS | NORMJIT_OP_SAVE_STATS;
  ASSERT_EQ(normjit_op_desc_get_backward(&group, backward, 3, &count),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(backward[0].kind, NORMJIT_OP_GROUP_NORM);
  EXPECT_EQ(backward[0].groups, 32);
  EXPECT_EQ(backward[0].flags,
            NORMJIT_OP_BACKWARD | NORMJIT_OP_WEIGHT | NORMJIT_OP_BIAS);

  // Without a backward: the reason.
  normjit_op_desc batch = normjit::opDesc();
  batch.kind = NORMJIT_OP_BATCH_NORM_INFERENCE;
  batch.hidden = 4096;
  batch.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_BIAS;
  EXPECT_EQ(normjit_op_desc_get_backward(&batch, backward, 3, &count),
            NORMJIT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(normjit_last_error())
                .find("batch_norm_inference has none"),
            std::string::npos)
      << normjit_last_error();
  EXPECT_EQ(count, 0u);
  EXPECT_THROW(normjit::backwardDescs(batch), normjit::Error);
  EXPECT_EQ(normjit_op_desc_get_backward(&rms, backward, 3, nullptr),
            NORMJIT_ERROR_INVALID_ARGUMENT);
}

TEST_F(TrainingCApiTest, QKNormBackwardLaunchesThroughTheCApi) {
  normjit_op_desc forward = qkForwardDesc();
  normjit_op_desc backward[2];
  size_t count = 0;
  ASSERT_EQ(normjit_op_desc_get_backward(&forward, backward, 2, &count),
            NORMJIT_SUCCESS);
  // The bundle holds the q heads' backward (and its column sum).
  OpSpec qHeads;
  qHeads.hidden = 8 * 128;
  qHeads.groups = 8;
  qHeads.hasWeight = true;
  qHeads.perHeadWeight = true;
  qHeads.backward = true;
  openBundleOf({qHeads});
  normjit_kernel *kernel = nullptr;
  ASSERT_EQ(normjit_kernel_create(context->get(), &backward[0], 0, &kernel),
            NORMJIT_SUCCESS)
      << normjit_last_error();

  // q's columns of a packed qkv [rows, 12 heads x 128], its saved rstd the
  // first 8 of each row's 10 heads.
  const int64_t rows = 3, qkvCols = 12 * 128;
  HostBuffers memory;
  char *qkv = memory.get(rows * qkvCols * 2);
  char *dq = memory.get(rows * 1024 * 2);
  char *weight = memory.get(128 * 2);
  char *rstd = memory.get(rows * 10 * 4);
  char *dqkv = memory.get(rows * qkvCols * 2);
  char *dweight = memory.get(128 * 2);
  normjit::LaunchArgs args;
  EXPECT_EQ(args.get()->struct_size, NORMJIT_LAUNCH_ARGS_SIZE_V13);
  args.set(NORMJIT_INPUT, qkv, NORMJIT_BF16, 1024, qkvCols)
      .set(NORMJIT_GRAD_OUTPUT, dq, NORMJIT_BF16, 1024)
      .set(NORMJIT_WEIGHT, weight, NORMJIT_BF16, 128)
      .set(NORMJIT_SAVED_RSTD, rstd, NORMJIT_F32, 8, 10)
      .set(NORMJIT_GRAD_INPUT, dqkv, NORMJIT_BF16, 1024, qkvCols)
      .set(NORMJIT_WEIGHT_GRAD, dweight, NORMJIT_BF16, 128);
  ASSERT_EQ(normjit_kernel_launch(kernel, args.get(), rows, nullptr),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  EXPECT_EQ(fakecuda_launch_count(), 2);
  fakecuda_launch sum = getLaunch(1);
  EXPECT_EQ(sum.params[1], address(dweight));

  // API 5's layout stops before the training buffers.
  normjit_launch_args old;
  normjit_launch_args_init_sized(&old, NORMJIT_LAUNCH_ARGS_SIZE_V5);
  EXPECT_EQ(normjit_launch_args_set(&old, NORMJIT_GRAD_OUTPUT, dq,
                                    NORMJIT_BF16, 1024, 0),
            NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(normjit_last_error()).find("lies past"),
            std::string::npos)
      << normjit_last_error();
  normjit_kernel_destroy(kernel);
}

} // namespace
