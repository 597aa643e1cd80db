//===- WarpgroupAttentionKernel.cpp - the sm_90a attention kernel ---------===//
//
// The sm_90a family of norm.attention_kernel (prefill over keys that
// norm.k_prepare normalized and rotated once, or that need neither):
// FlashAttention-3's roles (passes/WarpgroupAttention.h) behind the
// prologue the mma.sync family has. A CTA of 128 x (warpgroups + 1) threads
// finds its tile of 64 x warpgroups query rows as that family does, and all
// its threads normalize and rotate the rows into TMA's boxes in shared
// memory (rows past the sequence are zeros); a fence.proxy.async hands
// them to the async proxy in which wgmma reads them. Then the key/value
// loop: the producer warpgroup's TMA loads of K and V through the tensor
// maps the host encoded, the consumer warpgroups' wgmma and online
// softmax. The consumers stage O in their own query rows (which only their
// own wgmma read, all complete by then), meet at their named barrier and
// store whole 16-byte chunks of the rows inside the sequence.
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionEmitter.h"
#include "passes/WarpgroupAttention.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

constexpr int64_t kWarpgroupThreads = 128;
/// The consumers' named barrier (the loop's own: its uses and these follow
/// one another in every consumer thread).
constexpr int64_t kConsumerBarrier = 1;

} // namespace

void AttentionEmitter::emitWarpgroupKernel() {
  int64_t consumers = kWarpgroupThreads * sig.launch.warpgroups;
  ::norm::WarpgroupAttentionMemory memory =
      ::norm::getWarpgroupAttentionMemory(spec, sig.launch);
  Value bytes = createSharedViews(memory.queryElements + memory.keyElements +
                                  memory.valueElements);
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  WarpgroupAttentionLoop loop;
  loop.headDim = headDim;
  loop.blockN = blockN;
  loop.stages = stages;
  loop.warpgroups = sig.launch.warpgroups;
  loop.shared = shared;
  loop.sharedChunks = sharedChunks;
  loop.queryBase = 0;
  loop.keyBase = memory.queryElements;
  loop.valueBase = loop.keyBase + memory.keyElements;
  loop.barriers = memref::ViewOp::create(
      b, MemRefType::get({2 * stages}, b.getI64Type(), nullptr, workgroup),
      bytes, index(memory.getBarrierOffset()), ValueRange{});

  Value tileIndex;
  Value tileRows = locateQueryTile(tileIndex);
  Value chunkValid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                           index(chunksPerRow));
  loadQkWeights(chunkValid);
  emitQueryPrologue(tileRows, chunkValid);
  // The generic proxy's stores, before the loop's barrier, for wgmma.
  AsyncProxyFenceOp::create(b);

  loop.keyMap = arg("k_tensor_map");
  loop.valueMap = arg("v_tensor_map");
  loop.key = arg("k");
  loop.value = arg("v");
  loop.rows = indexArg("rows");
  loop.columns = index(spec.numKvHeads * headDim);
  loop.rowStride = stride("k");
  loop.valueRowStride = stride("v");
  loop.firstKey = seqStart;
  loop.firstColumn = mul(kvHead, index(headDim));
  loop.keys = arith::SelectOp::create(b, found, seqLength, index(0));
  loop.causal = spec.causal;
  loop.queryPosition = qTileStart;
  loop.scaleLog2 = spec.scale * 1.4426950408889634;
  loop.overlapSoftmax = sig.launch.overlap != 0;

  // wgmma's C layout: a consumer thread's pair p holds row 16 w + g +
  // 8 (p % 2) of its warpgroup's 64 (warp w of the warpgroup, lane 4 g + t),
  // columns 8 (p / 2) + 2 t and the next.
  auto epilogue = [&](const WarpgroupAttentionResult &result) {
    Value g = arith::DivUIOp::create(b, laneInWarp, index(4));
    Value t = arith::RemUIOp::create(b, laneInWarp, index(4));
    Value firstRow = add(mul(warp, index(16)), g);
    for (int64_t h = 0; h < 2; ++h) {
      Value row = add(firstRow, index(8 * h));
      for (int64_t block = 0; block < headDim / 8; ++block) {
        int64_t i = 4 * block + 2 * h;
        Value pair = vector::FromElementsOp::create(
            b, VectorType::get({2}, f32),
            ValueRange{vector::ExtractOp::create(b, result.output, i),
                       vector::ExtractOp::create(b, result.output, i + 1)});
        Value at =
            add(tileOffset(index(0), row, index(block)), mul(t, index(2)));
        memref::StoreOp::create(
            b, convert(pair, element), sharedPairs,
            ValueRange{arith::DivUIOp::create(b, at, index(2))});
      }
      if (!spec.writeLse)
        continue;
      // The log-sum-exp in natural-log units, by the row's first lane.
      Value stores = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, index(0)),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, tileRows));
      ifThen(stores, [&] {
        Value token = add(seqStart, rowToken(row));
        memref::StoreOp::create(
            b, mulf(result.rowLse[h], constantF32(1.0 / 1.4426950408889634)),
            arg("lse"), ValueRange{add(mul(token, stride("lse")), head)});
      });
    }
    NamedBarrierOp::create(b, kConsumerBarrier, consumers);
    int64_t chunks = blockM * chunksPerRow;
    for (int64_t round = 0; round * consumers < chunks; ++round)
      storeStagedOutput(add(tid, index(round * consumers)), tileRows);
  };
  emitWarpgroupAttentionLoop(b, loop, epilogue);
}
