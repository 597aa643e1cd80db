//===- LowerRowAllReduce.cpp - row sums with shuffles and shared memory ---===//
//
// A group of G threads (one row) combines each value (sum or maximum):
//
//   1. XOR butterfly within the warp: offsets min(G, 32) / 2, ..., 1. Every
//      lane combines the same two numbers at every step (addition and
//      maximumf commute exactly), so all lanes of a group end with the same
//      bits.
//   2. G > 32 only: lane 0 of every warp writes its warp's partials to a
//      workgroup buffer (one slot per warp and value), a barrier, then every
//      thread combines the G / 32 partials of its row in warp order.
//
// All values of one op travel together: one barrier per op, not per value.
//
//===----------------------------------------------------------------------===//

#include "passes/LoweringPasses.h"

#include "dialects/NormOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMLOWERROWALLREDUCE
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

constexpr int64_t kWarpSize = 32;

struct LowerRowAllReduce
    : public mlir::norm::impl::NormLowerRowAllReduceBase<LowerRowAllReduce> {
  void runOnOperation() override;
};

/// `x` combined with `y` by `kind`.
Value combine(ImplicitLocOpBuilder &b, ReductionKind kind, Value x, Value y) {
  if (kind == ReductionKind::max)
    return arith::MaximumFOp::create(b, x, y);
  return arith::AddFOp::create(b, x, y);
}

/// `values` combined over lanes that differ in the bits below `width`.
SmallVector<Value> butterfly(ImplicitLocOpBuilder &b, ReductionKind kind,
                             ValueRange values, int64_t width) {
  SmallVector<Value> sums(values);
  Value warp = arith::ConstantIntOp::create(b, kWarpSize, 32);
  for (int64_t offset = width / 2; offset >= 1; offset /= 2) {
    Value distance = arith::ConstantIntOp::create(b, offset, 32);
    for (Value &sum : sums) {
      Value other = gpu::ShuffleOp::create(b, sum, distance, warp,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      sum = combine(b, kind, sum, other);
    }
  }
  return sums;
}

LogicalResult lower(RowAllReduceOp op, gpu::GPUFuncOp func) {
  int64_t group = op.getGroupSize();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  SmallVector<Value> sums =
      butterfly(b, op.getKind(), op.getValues(), std::min(group, kWarpSize));
  if (group <= kWarpSize) {
    op.replaceAllUsesWith(sums);
    op.erase();
    return success();
  }

  std::optional<ArrayRef<int32_t>> block = func.getKnownBlockSize();
  if (!block || (*block)[0] % kWarpSize != 0 || (*block)[0] % group != 0)
    return op.emitOpError(
        "needs a kernel with a known block size that is a multiple of the "
        "group size");
  int64_t warps = (*block)[0] / kWarpSize;
  int64_t count = sums.size();
  auto bufferType = MemRefType::get(
      {warps * count}, b.getF32Type(), MemRefLayoutAttrInterface{},
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::GPUDialect::getWorkgroupAddressSpace()));
  Value buffer = func.addWorkgroupAttribution(bufferType, op.getLoc());

  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, tid, index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, tid, index(kWarpSize));
  Value slots = arith::MulIOp::create(b, warp, index(count));
  Value isFirst =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
  auto write = scf::IfOp::create(b, isFirst, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(write.thenBlock()->getTerminator());
    for (auto [k, sum] : llvm::enumerate(sums))
      memref::StoreOp::create(
          b, sum, buffer, ValueRange{b.createOrFold<arith::AddIOp>(slots, index(k))});
  }
  gpu::BarrierOp::create(b);

  // The first warp of this thread's row, then its warps in order.
  int64_t warpsPerRow = group / kWarpSize;
  Value rowWarp = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, tid, index(group)), index(warpsPerRow));
  Value rowSlots = arith::MulIOp::create(b, rowWarp, index(count));
  SmallVector<Value> totals;
  for (int64_t k = 0; k < count; ++k) {
    Value total;
    for (int64_t w = 0; w < warpsPerRow; ++w) {
      Value at = b.createOrFold<arith::AddIOp>(rowSlots, index(w * count + k));
      Value part = memref::LoadOp::create(b, buffer, ValueRange{at});
      total = total ? combine(b, op.getKind(), total, part) : part;
    }
    totals.push_back(total);
  }
  // In a loop, the next iteration's writes must wait until every thread has
  // read this one's partials.
  if (op->getParentOfType<LoopLikeOpInterface>())
    gpu::BarrierOp::create(b);
  op.replaceAllUsesWith(totals);
  op.erase();
  return success();
}

void LowerRowAllReduce::runOnOperation() {
  SmallVector<RowAllReduceOp> ops;
  getOperation().walk([&](RowAllReduceOp op) { ops.push_back(op); });
  for (RowAllReduceOp op : ops) {
    auto func = op->getParentOfType<gpu::GPUFuncOp>();
    if (!func) {
      op.emitOpError("must be inside a gpu.func");
      return signalPassFailure();
    }
    if (failed(lower(op, func)))
      return signalPassFailure();
  }
}

} // namespace
