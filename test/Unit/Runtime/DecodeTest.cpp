//===- DecodeTest.cpp - decode attention in libnormjit --------------------===//
//
// Decode attention (OpKind::AttentionDecode, NORMJIT_OP_ATTENTION_DECODE) on
// the fake driver: its desc through the C API, the checks of its KV cache
// and cache lengths, the workspace and semaphores the library allocates per
// context and stream (zeroed once, grown, freed with the context) and the
// parameters and grid of its launches (kv_splits, cache_capacity); and
// K-prepare into the caches (OpSpec::writeCache, NORMJIT_OP_WRITE_CACHE),
// whose launches take the same capacity and checks.
//
// The caller's buffers are host memory: the fake driver records launch
// parameters without reading them, and the checks look at addresses only.
//
//===----------------------------------------------------------------------===//

#include "runtime/normjit.hpp"

#include "test/Unit/Runtime/CApiBundle.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

// The fake driver's own entry points, for streams of the caller.
namespace {

constexpr int64_t kHeadDim = 128, kQHeads = 8, kKvHeads = 2;
constexpr int64_t kQCols = kQHeads * kHeadDim, kKvCols = kKvHeads * kHeadDim;

/// Decode of 8 query and 2 key/value heads of 128 (4 query heads per kv
/// head), no QK-Norm: what attentionDecodeDesc(128, 8, 2) converts to.
OpSpec makeDecode() {
  OpSpec spec;
  spec.kind = OpKind::AttentionDecode;
  spec.hidden = kHeadDim;
  spec.numQHeads = kQHeads;
  spec.numKvHeads = kKvHeads;
  spec.qkStatistic = Statistic::None;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  return spec;
}

/// The buffers of one decode launch: `rows` new tokens of `batch`
/// sequences, `capacity` cache rows per sequence.
struct DecodeBuffers {
  char *q, *k, *v, *cuSeqlens, *cacheSeqlens, *output, *kCache, *vCache;

  DecodeBuffers(HostBuffers &host, int64_t rows, int64_t batch,
                int64_t capacity) {
    q = host.get(rows * kQCols * 2);
    k = host.get(rows * kKvCols * 2);
    v = host.get(rows * kKvCols * 2);
    cuSeqlens = host.get((batch + 1) * 4);
    cacheSeqlens = host.get(batch * 4);
    output = host.get(rows * kQCols * 2);
    kCache = host.get(batch * capacity * kKvCols * 2);
    vCache = host.get(batch * capacity * kKvCols * 2);
  }

  LaunchArgs args(int64_t batch, int64_t cacheRows) const {
    LaunchArgs a;
    a.set(BufferSlot::Q, q, ElementType::bf16, kQCols)
        .set(BufferSlot::K, k, ElementType::bf16, kKvCols)
        .set(BufferSlot::V, v, ElementType::bf16, kKvCols)
        .set(BufferSlot::CuSeqlens, cuSeqlens, ElementType::i32, batch + 1)
        .set(BufferSlot::CacheSeqlens, cacheSeqlens, ElementType::i32, batch)
        .set(BufferSlot::Output, output, ElementType::bf16, kQCols)
        .setCache(kCache, vCache, ElementType::bf16, cacheRows, kKvCols);
    return a;
  }
};

/// ceil(a / b).
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

class DecodeTest : public FakeDriverTest {
protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    compiler = std::make_shared<FakeCompiler>();
    ASSERT_TRUE(Context::create(makeFakeOptions(compiler), context).ok());
    Status status = context->getKernel(getSpec(), {}, kernel);
    ASSERT_TRUE(status.ok()) << status.message();
  }

  virtual OpSpec getSpec() const { return makeDecode(); }

  fakecuda_launch lastLaunch() {
    fakecuda_launch launch{};
    EXPECT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &launch));
    return launch;
  }

  Status launch(const LaunchArgs &args, int64_t rows, void *stream = nullptr) {
    return kernel->launch(args, rows, stream);
  }

  std::shared_ptr<FakeCompiler> compiler;
  std::unique_ptr<Context> context;
  std::shared_ptr<const Kernel> kernel;
  HostBuffers host;
};

//===----------------------------------------------------------------------===//
// Splits (the kernel model's heuristic)
//===----------------------------------------------------------------------===//

TEST(DecodeSplits, FillTwoWavesWithinTheCache) {
  OpSpec spec = makeDecode();
  // 2 sequences of one token: 2 tiles with rows per kv head (the grid's
  // third, ceil(2 * 4 / 16) + 2, has none), 4 CTAs per split; 2 waves of
  // 100 SMs want 50 splits (34 when the spare tile counted).
  EXPECT_EQ(getDecodeWorkTiles(spec, 16, DecodeShape{2, 2, 4096, 1}), 2);
  EXPECT_EQ(getDecodeTiles(spec, 16, DecodeShape{2, 2, 4096, 1}), 3);
  EXPECT_EQ(getDecodeSplits(spec, 16, DecodeShape{2, 2, 4096, 1}, 100, 64), 50);
  // One sequence of one token: 1 tile with rows of the grid's 2, twice the
  // splits (16 on 16 SMs, were 8).
  EXPECT_EQ(getDecodeSplits(spec, 16, DecodeShape{1, 1, 4096, 1}, 16, 64), 16);
  // A chunk of 40 tokens in one sequence: ceil(40 * 4 / 16) = 10 tiles.
  EXPECT_EQ(getDecodeWorkTiles(spec, 16, DecodeShape{40, 1, 4096, 1}), 10);
  // A short cache caps them at its key tiles: ceil(256 / 64) = 4.
  EXPECT_EQ(getDecodeSplits(spec, 16, DecodeShape{2, 2, 256, 1}, 132, 64), 4);
  // Never more than kMaxDecodeSplits.
  EXPECT_EQ(getDecodeSplits(spec, 16, DecodeShape{1, 1, 1 << 20, 1}, 1000, 64),
            kMaxDecodeSplits);
  // A grid that fills the waves alone: one split.
  EXPECT_EQ(getDecodeSplits(spec, 16, DecodeShape{512, 512, 4096, 1}, 132, 64),
            1);
  // blockN 0: the heuristic's (64 at head dim 128).
  EXPECT_EQ(getDecodeSplits(spec, 16, DecodeShape{2, 2, 256, 1}, 132), 4);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

TEST_F(DecodeTest, ParametersAndGrid) {
  const int64_t rows = 2, batch = 2, capacity = 4096;
  DecodeBuffers buffers(host, rows, batch, capacity);
  Status status = launch(buffers.args(batch, batch * capacity), rows);
  ASSERT_TRUE(status.ok()) << status.message();

  const LaunchConfig &config = kernel->getReport(RowBucket::UpTo64).launch;
  EXPECT_EQ(kernel->getReport(RowBucket::UpTo64).source,
            BucketReport::Source::Heuristic);
  // The grid's tiles per kv head and split, and those with rows (one a
  // sequence here), which the splits count.
  int64_t tiles = ceilDiv(rows * (kQHeads / kKvHeads), config.rowsPerCta) +
                  batch;
  int64_t workTiles = batch;
  int64_t splits =
      std::min<int64_t>({ceilDiv(2 * context->getDeviceInfo().multiprocessors,
                                 kKvHeads * workTiles),
                         kMaxDecodeSplits, ceilDiv(capacity, config.blockN)});
  ASSERT_GT(splits, 1); // the test must see splits that are not the default
  fakecuda_launch recorded = lastLaunch();
  EXPECT_EQ(recorded.grid[0], static_cast<unsigned>(kKvHeads * splits * tiles));
  EXPECT_EQ(recorded.block[0], config.warps * 32);
  // q, k, v, cu_seqlens, cache_seqlens, output, k_cache, v_cache,
  // workspace, semaphores, rows, batch, kv_splits, cache_capacity, then the
  // strides of q, k, v, output, k_cache, v_cache.
  ASSERT_EQ(recorded.num_params, 20);
  auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  std::vector<uint64_t> before = {
      address(buffers.q),           address(buffers.k),
      address(buffers.v),           address(buffers.cuSeqlens),
      address(buffers.cacheSeqlens), address(buffers.output),
      address(buffers.kCache),      address(buffers.vCache)};
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(recorded.params[i], before[i]) << "parameter " << i;
  uint64_t workspace = recorded.params[8], semaphores = recorded.params[9];
  EXPECT_NE(workspace, 0u);
  EXPECT_EQ(workspace % 16, 0u);
  EXPECT_NE(semaphores, 0u);
  std::vector<uint64_t> after = {rows,    batch,   uint64_t(splits),
                                 uint64_t(capacity), kQCols,  kKvCols,
                                 kKvCols, kQCols,  kKvCols, kKvCols};
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_EQ(recorded.params[10 + i], after[i]) << "parameter " << 10 + i;
}

TEST_F(DecodeTest, WorkspaceOnceZeroedOnceGrownAndFreed) {
  const int64_t capacity = 1024;
  DecodeBuffers small(host, 2, 2, capacity);
  ASSERT_EQ(fakecuda_live_allocations(), 0);
  ASSERT_TRUE(launch(small.args(2, 2 * capacity), 2).ok());
  // The workspace and the semaphores.
  EXPECT_EQ(fakecuda_live_allocations(), 2);
  EXPECT_EQ(fakecuda_call_count("cuMemsetD32Async"), 1);
  fakecuda_launch first = lastLaunch();
  fakecuda_memset zeroed{};
  ASSERT_TRUE(fakecuda_last_memset_d32(&zeroed));
  EXPECT_EQ(zeroed.pointer, first.params[9]);
  EXPECT_EQ(zeroed.value, 0u);
  const LaunchConfig &config = kernel->getReport(RowBucket::UpTo64).launch;
  int64_t tiles = ceilDiv(2 * (kQHeads / kKvHeads), config.rowsPerCta) + 2;
  EXPECT_EQ(zeroed.count, static_cast<size_t>(kKvHeads * tiles));
  EXPECT_EQ(zeroed.stream, nullptr);
  // Before the kernel, on its stream.
  EXPECT_EQ(zeroed.launches_before, fakecuda_launch_count() - 1);
  for (size_t i = 0; i < zeroed.count; ++i)
    EXPECT_EQ(reinterpret_cast<const int32_t *>(zeroed.pointer)[i], 0);

  // The same shape again: the same buffers, nothing allocated or zeroed.
  ASSERT_TRUE(launch(small.args(2, 2 * capacity), 2).ok());
  fakecuda_launch second = lastLaunch();
  EXPECT_EQ(second.params[8], first.params[8]);
  EXPECT_EQ(second.params[9], first.params[9]);
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), 2);
  EXPECT_EQ(fakecuda_call_count("cuMemsetD32Async"), 1);
  EXPECT_EQ(fakecuda_call_count("cuStreamSynchronize"), 0);

  // A larger batch needs more of both: the stream is synchronized, the
  // buffers replaced (the old ones freed) and the new semaphores zeroed.
  DecodeBuffers large(host, 64, 64, capacity);
  ASSERT_TRUE(launch(large.args(64, 64 * capacity), 64).ok());
  EXPECT_EQ(fakecuda_call_count("cuStreamSynchronize"), 1);
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), 4);
  EXPECT_EQ(fakecuda_live_allocations(), 2);
  EXPECT_EQ(fakecuda_call_count("cuMemsetD32Async"), 2);
  ASSERT_TRUE(fakecuda_last_memset_d32(&zeroed));
  EXPECT_EQ(zeroed.pointer, lastLaunch().params[9]);
  int64_t largeTiles =
      ceilDiv(64 * (kQHeads / kKvHeads), config.rowsPerCta) + 64;
  EXPECT_EQ(zeroed.count, static_cast<size_t>(kKvHeads * largeTiles));

  // Back to the small shape: the grown buffers serve it.
  ASSERT_TRUE(launch(small.args(2, 2 * capacity), 2).ok());
  EXPECT_EQ(fakecuda_call_count("cuMemAlloc"), 4);

  // Freed with the context; its kernels then refuse to launch.
  context.reset();
  EXPECT_EQ(fakecuda_live_allocations(), 0);
  Status status = launch(small.args(2, 2 * capacity), 2);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("context of this decode kernel is gone"),
            std::string::npos)
      << status.message();
}

TEST_F(DecodeTest, EachStreamHasItsOwnWorkspace) {
  DecodeBuffers buffers(host, 2, 2, 512);
  void *stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), 0);
  ASSERT_TRUE(launch(buffers.args(2, 1024), 2, nullptr).ok());
  uint64_t onDefault = lastLaunch().params[8];
  ASSERT_TRUE(launch(buffers.args(2, 1024), 2, stream).ok());
  EXPECT_NE(lastLaunch().params[8], onDefault);
  EXPECT_EQ(fakecuda_live_allocations(), 4);
  EXPECT_EQ(fakecuda_call_count("cuMemsetD32Async"), 2);
  ASSERT_EQ(cuStreamDestroy_v2(stream), 0);
}

// A tuned kernel launches each bucket's winner, with the splits the kernel
// model gives that configuration for the launch's shape.
TEST_F(DecodeTest, TunedKernelsLaunchTheirWinners) {
  auto tuning = std::make_shared<FakeCompiler>();
  // One stage and the widest key tile (block_n 64: 128 spilled at head dim
  // 128) win; fewer CTAs cost less.
  tuning->cost = [](const LaunchConfig &launch) {
    return std::pair<double, double>(
        50000.0 + 1000.0 * launch.stages + 10.0 * (128 - launch.blockN), 10.0);
  };
  std::unique_ptr<Context> tunedContext;
  ASSERT_TRUE(
      Context::create(makeFakeOptions(tuning, {}, true), tunedContext).ok());
  std::shared_ptr<const Kernel> tuned;
  Status status = tunedContext->getKernel(makeDecode(), {}, tuned);
  ASSERT_TRUE(status.ok()) << status.message();
  const BucketReport &report = tuned->getReport(RowBucket::UpTo64);
  EXPECT_EQ(report.source, BucketReport::Source::Tuned);
  EXPECT_EQ(report.launch.blockN, 64);
  EXPECT_EQ(report.launch.stages, 1);
  EXPECT_NE(report.launch, kernel->getReport(RowBucket::UpTo64).launch)
      << "the heuristic won: the test cannot tell the plans apart";

  const int64_t rows = 2, batch = 2, capacity = 4096;
  DecodeBuffers buffers(host, rows, batch, capacity);
  status = tuned->launch(buffers.args(batch, batch * capacity), rows, nullptr);
  ASSERT_TRUE(status.ok()) << status.message();
  fakecuda_launch recorded = lastLaunch();
  std::string name = recorded.kernel;
  std::string suffix = "_" + report.launch.getMangledSuffix();
  EXPECT_EQ(name.substr(name.size() - suffix.size()), suffix) << name;
  DecodeShape shape{rows, batch, capacity, 1};
  shape.splits = getDecodeSplits(makeDecode(), report.launch.rowsPerCta, shape,
                                 132, report.launch.blockN);
  EXPECT_EQ(recorded.params[12], uint64_t(shape.splits));
  EXPECT_EQ(
      recorded.grid[0],
      unsigned(kKvHeads * shape.splits *
               getDecodeTiles(makeDecode(), report.launch.rowsPerCta, shape)));
}

//===----------------------------------------------------------------------===//
// Launch checks
//===----------------------------------------------------------------------===//

/// The launch's status and message, expecting InvalidArgument.
std::string refused(const Status &status) {
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument) << status.message();
  return status.message();
}

TEST_F(DecodeTest, RefusesCacheSeqlensOfAnotherBatch) {
  DecodeBuffers buffers(host, 3, 3, 64);
  LaunchArgs args = buffers.args(3, 3 * 64);
  args.set(BufferSlot::CacheSeqlens, buffers.cacheSeqlens, ElementType::i32,
           2);
  std::string message = refused(launch(args, 3));
  EXPECT_NE(message.find("'cache_seqlens' has 2 elements, the operation "
                         "expects 3"),
            std::string::npos)
      << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
  EXPECT_EQ(fakecuda_live_allocations(), 0);
}

TEST_F(DecodeTest, RefusesCacheRowsNotDividedByTheBatch) {
  DecodeBuffers buffers(host, 2, 2, 64);
  std::string message = refused(launch(buffers.args(2, 2 * 64 - 1), 2));
  EXPECT_NE(message.find("127 rows are not a multiple of the batch (2 "
                         "sequences"),
            std::string::npos)
      << message;
  // No rows at all.
  message = refused(launch(buffers.args(2, 0), 2));
  EXPECT_NE(message.find("'k_cache' has no rows"), std::string::npos)
      << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
}

//===----------------------------------------------------------------------===//
// Paged caches
//===----------------------------------------------------------------------===//

class PagedDecodeTest : public DecodeTest {
protected:
  OpSpec getSpec() const override {
    OpSpec spec = makeDecode();
    spec.cacheBlockSize = 16;
    return spec;
  }

  /// 2 sequences of one new token over 10 pages of 16 rows, their table
  /// `entries` long.
  LaunchArgs pagedArgs(int64_t entries, int64_t cacheRows = 160) {
    LaunchArgs args = buffers.args(2, cacheRows);
    args.set(BufferSlot::BlockTables, table, ElementType::i32, entries);
    return args;
  }

  DecodeBuffers buffers{host, 2, 2, 80};
  char *table = host.get(64 * 4);
};

// The capacity is a table row's pages (6 entries: 3 pages of 16 a
// sequence), cache_blocks the caches' pages (160 rows of pages of 16).
TEST_F(PagedDecodeTest, ParametersCarryTheTableAndThePages) {
  Status status = launch(pagedArgs(6), 2);
  ASSERT_TRUE(status.ok()) << status.message();
  fakecuda_launch recorded = lastLaunch();
  // q, k, v, cu_seqlens, cache_seqlens, block_tables, output, k_cache,
  // v_cache, workspace, semaphores; rows, batch, kv_splits, cache_capacity,
  // cache_blocks; the strides of q, k, v, output, k_cache, v_cache.
  ASSERT_EQ(recorded.num_params, 22);
  EXPECT_EQ(recorded.params[5], reinterpret_cast<uint64_t>(table));
  EXPECT_EQ(recorded.params[11], 2u);
  EXPECT_EQ(recorded.params[12], 2u);
  EXPECT_EQ(recorded.params[14], 48u);
  EXPECT_EQ(recorded.params[15], 10u);
  EXPECT_NE(std::string(recorded.kernel).find("_p16_"), std::string::npos)
      << recorded.kernel;
}

TEST_F(PagedDecodeTest, RefusesTablesAndCachesThatAreNotWholePages) {
  std::string message = refused(launch(pagedArgs(7), 2));
  EXPECT_NE(message.find("buffer 'block_tables' has 7 entries, the operation "
                         "expects batch x max_blocks (2 sequences"),
            std::string::npos)
      << message;
  message = refused(launch(pagedArgs(6, 150), 2));
  EXPECT_NE(message.find("the paged caches' 150 rows are not whole pages of "
                         "16 rows"),
            std::string::npos)
      << message;
  // Without its table.
  message = refused(launch(buffers.args(2, 160), 2));
  EXPECT_NE(message.find("block_tables"), std::string::npos) << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
  EXPECT_EQ(fakecuda_live_allocations(), 0);
}

/// FlashInfer's ragged table: kv_indices in block_tables, kv_indptr in
/// page_indptr.
class RaggedPagesDecodeTest : public PagedDecodeTest {
protected:
  OpSpec getSpec() const override {
    OpSpec spec = PagedDecodeTest::getSpec();
    spec.pageIndptr = true;
    return spec;
  }

  LaunchArgs raggedArgs(int64_t entries, int64_t offsets) {
    LaunchArgs args = pagedArgs(entries);
    args.set(BufferSlot::PageIndptr, indptr, ElementType::i32, offsets);
    return args;
  }

  char *indptr = host.get(16 * 4);
};

// Any number of entries (here 5: one sequence's 3 pages, the other's 2);
// page_indptr after block_tables; the splits bound by every page (10).
TEST_F(RaggedPagesDecodeTest, ParametersCarryTheOffsets) {
  Status status = launch(raggedArgs(5, 3), 2);
  ASSERT_TRUE(status.ok()) << status.message();
  fakecuda_launch recorded = lastLaunch();
  ASSERT_EQ(recorded.num_params, 23);
  EXPECT_EQ(recorded.params[5], reinterpret_cast<uint64_t>(table));
  EXPECT_EQ(recorded.params[6], reinterpret_cast<uint64_t>(indptr));
  // cache_capacity: every page's rows, the bound of a sequence's.
  EXPECT_EQ(recorded.params[15], 160u);
  EXPECT_EQ(recorded.params[16], 10u);
  EXPECT_NE(std::string(recorded.kernel).find("_p16i_"), std::string::npos)
      << recorded.kernel;
}

TEST_F(RaggedPagesDecodeTest, RefusesOffsetsNotOnePerSequence) {
  std::string message = refused(launch(raggedArgs(5, 2), 2));
  EXPECT_NE(message.find("buffer 'page_indptr' has 2 elements, the operation "
                         "expects 3: one offset per sequence of cu_seqlens "
                         "(2 sequences) and the end (kv_indptr)"),
            std::string::npos)
      << message;
  message = refused(launch(pagedArgs(5), 2));
  EXPECT_NE(message.find("page_indptr"), std::string::npos) << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
}

TEST_F(DecodeTest, RefusesCachesOverlappingOtherBuffers) {
  DecodeBuffers buffers(host, 2, 2, 64);
  // k_cache over k (in an allocation that holds the whole cache).
  char *big = host.get(128 * kKvCols * 2);
  LaunchArgs args = buffers.args(2, 128);
  args.set(BufferSlot::K, big, ElementType::bf16, kKvCols);
  args.setCache(big, buffers.vCache, ElementType::bf16, 128, kKvCols);
  std::string message = refused(launch(args, 2));
  EXPECT_NE(message.find("output 'k_cache' overlaps buffer 'k'"),
            std::string::npos)
      << message;
  // Its last row over the start of another buffer: the cache's rows count,
  // not the launch's.
  char *shared = host.get(2 * 64 * kKvCols * 2 + 64);
  args = buffers.args(2, 128);
  args.setCache(shared, buffers.vCache, ElementType::bf16, 128, kKvCols);
  args.set(BufferSlot::CacheSeqlens, shared + 127 * kKvCols * 2,
           ElementType::i32, 2);
  message = refused(launch(args, 2));
  EXPECT_NE(message.find("output 'k_cache' overlaps buffer 'cache_seqlens'"),
            std::string::npos)
      << message;
  // The two caches over each other.
  args = buffers.args(2, 128);
  args.setCache(buffers.kCache, buffers.kCache + 64, ElementType::bf16, 128,
                kKvCols);
  message = refused(launch(args, 2));
  EXPECT_NE(message.find("overlaps buffer"), std::string::npos) << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
}

TEST_F(DecodeTest, RefusesWorkspaceOfTheCaller) {
  DecodeBuffers buffers(host, 2, 2, 64);
  for (BufferSlot slot : {BufferSlot::Workspace, BufferSlot::Semaphores}) {
    LaunchArgs args = buffers.args(2, 128);
    args.set(slot, host.get(4096), ElementType::f32, 1024);
    std::string message = refused(launch(args, 2));
    EXPECT_NE(message.find("is the library's own"), std::string::npos)
        << message;
  }
  // Rows of their own are the caches' alone.
  LaunchArgs args = buffers.args(2, 128);
  args.tensors[static_cast<int>(BufferSlot::Q)].rows = 2;
  std::string message = refused(launch(args, 2));
  EXPECT_NE(message.find("'q' has rows of its own"), std::string::npos)
      << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
}

//===----------------------------------------------------------------------===//
// K-prepare into the caches
//===----------------------------------------------------------------------===//

/// K-prepare of the 2 kv heads of 128 into the caches: RMS QK-Norm with a
/// weight, NeoX rotary at the cache positions.
OpSpec makeKeyPrepareCache() {
  OpSpec spec;
  spec.kind = OpKind::KeyPrepare;
  spec.hidden = kHeadDim;
  spec.numKvHeads = kKvHeads;
  spec.qkStatistic = Statistic::RMS;
  spec.hasWeight = true;
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = kHeadDim;
  spec.writeCache = true;
  return spec;
}

class KeyPrepareCacheTest : public FakeDriverTest {
protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    compiler = std::make_shared<FakeCompiler>();
    ASSERT_TRUE(Context::create(makeFakeOptions(compiler), context).ok());
    Status status = context->getKernel(makeKeyPrepareCache(), {}, kernel);
    ASSERT_TRUE(status.ok()) << status.message();
  }

  /// The launch arguments of `rows` new tokens of `batch` sequences into
  /// caches of `cacheRows` rows.
  LaunchArgs args(const DecodeBuffers &b, int64_t batch, int64_t cacheRows) {
    LaunchArgs a;
    a.set(BufferSlot::K, b.k, ElementType::bf16, kKvCols)
        .set(BufferSlot::V, b.v, ElementType::bf16, kKvCols)
        .set(BufferSlot::KWeight, weight, ElementType::bf16, kHeadDim)
        .set(BufferSlot::CuSeqlens, b.cuSeqlens, ElementType::i32, batch + 1)
        .set(BufferSlot::CacheSeqlens, b.cacheSeqlens, ElementType::i32, batch)
        .setCache(b.kCache, b.vCache, ElementType::bf16, cacheRows, kKvCols);
    return a;
  }

  std::shared_ptr<FakeCompiler> compiler;
  std::unique_ptr<Context> context;
  std::shared_ptr<const Kernel> kernel;
  HostBuffers host;
  char *weight = host.get(kHeadDim * 2);
};

TEST_F(KeyPrepareCacheTest, ParametersCarryTheCapacity) {
  const int64_t rows = 5, batch = 2, capacity = 48;
  DecodeBuffers buffers(host, rows, batch, capacity);
  Status status =
      kernel->launch(args(buffers, batch, batch * capacity), rows, nullptr);
  ASSERT_TRUE(status.ok()) << status.message();
  fakecuda_launch recorded{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  // k, v, k_weight, cu_seqlens, cache_seqlens, k_cache, v_cache, rows,
  // batch, cache_capacity, then the strides of k, v, k_cache, v_cache.
  ASSERT_EQ(recorded.num_params, 14);
  auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  std::vector<uint64_t> want = {address(buffers.k),
                                address(buffers.v),
                                address(weight),
                                address(buffers.cuSeqlens),
                                address(buffers.cacheSeqlens),
                                address(buffers.kCache),
                                address(buffers.vCache),
                                rows,
                                batch,
                                capacity,
                                kKvCols,
                                kKvCols,
                                kKvCols,
                                kKvCols};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(recorded.params[i], want[i]) << "parameter " << i;
  // One CTA row per token and kv head, no workspace.
  EXPECT_EQ(fakecuda_live_allocations(), 0);
}

TEST_F(KeyPrepareCacheTest, RefusesCachesOfAnotherBatch) {
  DecodeBuffers buffers(host, 3, 2, 64);
  std::string message =
      refused(kernel->launch(args(buffers, 2, 2 * 64 - 1), 3, nullptr));
  EXPECT_NE(message.find("127 rows are not a multiple of the batch (2 "
                         "sequences"),
            std::string::npos)
      << message;
  LaunchArgs shortLengths = args(buffers, 2, 2 * 64);
  shortLengths.set(BufferSlot::CacheSeqlens, buffers.cacheSeqlens,
                   ElementType::i32, 1);
  message = refused(kernel->launch(shortLengths, 3, nullptr));
  EXPECT_NE(message.find("'cache_seqlens' has 1 elements, the operation "
                         "expects 2"),
            std::string::npos)
      << message;
  EXPECT_EQ(fakecuda_launch_count(), 0);
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

class DecodeCApiTest : public CApiBundleTest {
protected:
  void SetUp() override {
    CApiBundleTest::SetUp();
    openBundleOf({makeDecode()});
  }

  std::pair<normjit_status, std::string> create(const normjit_op_desc &desc,
                                                normjit_kernel **out = nullptr) {
    normjit_kernel *kernel = nullptr;
    normjit_status status =
        normjit_kernel_create(context->get(), &desc, 0, &kernel);
    std::string message = status == NORMJIT_SUCCESS ? "" : normjit_last_error();
    if (out)
      *out = kernel;
    else
      normjit_kernel_destroy(kernel);
    return {status, message};
  }

  HostBuffers host;
};

TEST_F(DecodeCApiTest, DescConvertsToTheBundledDecode) {
  normjit_op_desc desc = normjit::attentionDecodeDesc(kHeadDim, kQHeads,
                                                      kKvHeads);
  EXPECT_EQ(desc.kind, NORMJIT_OP_ATTENTION_DECODE);
  auto [status, message] = create(desc);
  EXPECT_EQ(status, NORMJIT_SUCCESS) << message;
  // Prefill attention of the same fields is another operation.
  desc.kind = NORMJIT_OP_ATTENTION;
  std::tie(status, message) = create(desc);
  EXPECT_EQ(status, NORMJIT_ERROR_NOT_FOUND) << message;
  // A kind past K-prepare is unknown.
  desc.kind = NORMJIT_OP_K_PREPARE + 1;
  std::tie(status, message) = create(desc);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("unknown operation kind 11"), std::string::npos)
      << message;
}

TEST_F(DecodeCApiTest, RefusesCausalAndLse) {
  for (uint32_t flag : {NORMJIT_OP_CAUSAL, NORMJIT_OP_WRITE_LSE}) {
    auto [status, message] =
        create(normjit::attentionDecodeDesc(kHeadDim, kQHeads, kKvHeads, flag));
    EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT) << flag;
    // verifyOpSpec's rule.
    EXPECT_NE(message.find("decode attention is causal by position"),
              std::string::npos)
        << message;
  }
}

TEST_F(DecodeCApiTest, LaunchCarriesCacheRowsAndRefusesWorkspace) {
  normjit_kernel *kernel = nullptr;
  ASSERT_EQ(create(normjit::attentionDecodeDesc(kHeadDim, kQHeads, kKvHeads),
                   &kernel)
                .first,
            NORMJIT_SUCCESS);
  const int64_t capacity = 256;
  DecodeBuffers b(host, 2, 2, capacity);
  normjit::LaunchArgs args;
  EXPECT_EQ(args.get()->struct_size, NORMJIT_LAUNCH_ARGS_SIZE_V13);
  args.set(NORMJIT_Q, b.q, NORMJIT_BF16, kQCols)
      .set(NORMJIT_K, b.k, NORMJIT_BF16, kKvCols)
      .set(NORMJIT_V, b.v, NORMJIT_BF16, kKvCols)
      .set(NORMJIT_CU_SEQLENS, b.cuSeqlens, NORMJIT_I32, 3)
      .set(NORMJIT_CACHE_SEQLENS, b.cacheSeqlens, NORMJIT_I32, 2)
      .set(NORMJIT_OUTPUT, b.output, NORMJIT_BF16, kQCols)
      .setCache(b.kCache, b.vCache, NORMJIT_BF16, 2 * capacity, kKvCols);
  ASSERT_EQ(normjit_kernel_launch(kernel, args.get(), 2, nullptr),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  fakecuda_launch recorded{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  EXPECT_EQ(recorded.params[13], uint64_t(capacity)); // cache_capacity

  // A program built against API 4's header: 22 tensors, then cache_rows
  // (where API 5 has tensors[22]).
  struct LaunchArgsV4 {
    uint32_t struct_size, reserved;
    normjit_tensor tensors[22];
    int64_t cache_rows;
  } v4{};
  static_assert(sizeof(v4) == NORMJIT_LAUNCH_ARGS_SIZE_V4);
  v4.struct_size = NORMJIT_LAUNCH_ARGS_SIZE_V4;
  std::memcpy(v4.tensors, args.get()->tensors, sizeof(v4.tensors));
  v4.cache_rows = 2 * capacity;
  normjit_launch_args asV4;
  std::memset(&asV4, 0xA5, sizeof(asV4));
  std::memcpy(&asV4, &v4, sizeof(v4));
  ASSERT_EQ(normjit_kernel_launch(kernel, &asV4, 2, nullptr), NORMJIT_SUCCESS)
      << normjit_last_error();
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  EXPECT_EQ(recorded.params[13], uint64_t(capacity)); // cache_capacity

  // An API 3 caller has no caches: refused as missing, not read past its
  // struct.
  normjit_launch_args old = *args.get();
  old.struct_size = NORMJIT_LAUNCH_ARGS_SIZE_V3;
  EXPECT_EQ(normjit_kernel_launch(kernel, &old, 2, nullptr),
            NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(normjit_last_error()).find("'k_cache' is null"),
            std::string::npos)
      << normjit_last_error();

  normjit_launch_args withWorkspace = *args.get();
  ASSERT_EQ(normjit_launch_args_set(&withWorkspace, NORMJIT_WORKSPACE,
                                    host.get(1024), NORMJIT_F32, 256, 0),
            NORMJIT_SUCCESS);
  EXPECT_EQ(normjit_kernel_launch(kernel, &withWorkspace, 2, nullptr),
            NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(normjit_last_error()).find("is the library's own"),
            std::string::npos)
      << normjit_last_error();

  normjit_launch_args negative = *args.get();
  negative.cache_rows = -1;
  EXPECT_EQ(normjit_kernel_launch(kernel, &negative, 2, nullptr),
            NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_kernel_destroy(kernel);
}

TEST_F(DecodeCApiTest, WriteCacheIsKeyPrepares) {
  normjit_op_desc desc;
  normjit_op_desc_init(&desc);
  desc.kind = NORMJIT_OP_K_PREPARE;
  desc.hidden = kHeadDim;
  desc.num_kv_heads = kKvHeads;
  desc.input_type = desc.output_type = desc.param_type = NORMJIT_BF16;
  desc.flags =
      NORMJIT_OP_QK_RMS | NORMJIT_OP_WRITE_CACHE | NORMJIT_OP_SAVE_STATS;
  desc.eps = 1e-6;
  auto [status, message] = create(desc);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("saves no statistics"), std::string::npos) << message;
  // Not an attention flag.
  normjit_op_desc decode =
      normjit::attentionDecodeDesc(kHeadDim, kQHeads, kKvHeads);
  decode.flags |= NORMJIT_OP_WRITE_CACHE;
  std::tie(status, message) = create(decode);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("write_cache applies to K-prepare only"),
            std::string::npos)
      << message;
}

} // namespace
