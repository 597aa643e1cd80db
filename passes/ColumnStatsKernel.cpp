//===- ColumnStatsKernel.cpp - the kernel of norm.column_stats ------------===//
//
// A tile of `vector` adjacent columns is the kernel's "row": the T threads
// of a tile take every T-th input row, accumulate shifted sums (pivot: the
// first input row) in f32 registers, and reduce them with one
// norm.row_allreduce. No atomics: the result does not depend on scheduling.
// norm.column_sum (the second step of a backward kernel's weight and bias
// gradients) is the same kernel with one plain sum, stored in the output's
// type.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelBuilder.h"
#include "passes/KernelIR.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class ColumnStatsEmitter : public KernelBuilder {
public:
  ColumnStatsEmitter(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                     const ::norm::KernelSignature &sig,
                     const ::norm::OpSpec &spec)
      : KernelBuilder(b, func, sig), hidden(spec.hidden),
        sumOnly(spec.kind == ::norm::OpKind::ColumnSum) {}

  void emit();

private:
  int64_t hidden;
  bool sumOnly;
};

} // namespace

void ColumnStatsEmitter::emit() {
  waitForPredecessor();
  int64_t tiles = (hidden + vector - 1) / vector;
  bool ragged = hidden % vector != 0;
  Value input = arg("input");
  Value rows = indexArg("rows");
  Value inputStride = stride("input");
  VectorType f32Vector = VectorType::get({vector}, f32);

  forEachCtaRow([&](Value tile) {
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tile, index(tiles));
    Value column = mul(tile, index(vector));
    auto loadTile = [&](Value rowBase) {
      return toF32(loadVector(input, rowBase, column, hidden, !ragged));
    };

    if (sumOnly) {
      SmallVector<Value> partial = ifElseZeros(valid, [&] {
        auto loop = scf::ForOp::create(
            b, lane, rows, index(threads), ValueRange{zero(f32Vector)},
            [&](OpBuilder &nested, Location, Value r, ValueRange sums) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(nested.getInsertionBlock(),
                                  nested.getInsertionPoint());
              scf::YieldOp::create(
                  b, ValueRange{addf(sums[0], loadTile(mul(r, inputStride)))});
            });
        return SmallVector<Value>{loop.getResult(0)};
      });
      SmallVector<Value> lanes;
      for (int64_t i = 0; i < vector; ++i)
        lanes.push_back(vector::ExtractOp::create(b, partial[0], i));
      SmallVector<Value> sums = allReduce(lanes);
      Value first =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
      ifThen(arith::AndIOp::create(b, valid, first), [&] {
        Value output = arg("output");
        Value sum = vector::FromElementsOp::create(b, f32Vector, sums);
        storeVector(convert(sum, elementOf(output)), output, index(0), column,
                    hidden, !ragged);
      });
      return;
    }

    SmallVector<Value> partial = ifElseZeros(valid, [&] {
      Value hasRows =
          arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, rows, index(0));
      Value pivot = ifElseZeros(hasRows, [&] {
                      return SmallVector<Value>{loadTile(index(0))};
                    }).front();
      Value init = zero(f32Vector);
      auto loop = scf::ForOp::create(
          b, lane, rows, index(threads), ValueRange{init, init},
          [&](OpBuilder &nested, Location, Value r, ValueRange sums) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            Value d = subf(loadTile(mul(r, inputStride)), pivot);
            if (ragged)
              d = arith::SelectOp::create(b, tailMask(column, hidden), d,
                                          zero(f32Vector));
            scf::YieldOp::create(
                b, ValueRange{addf(sums[0], d), addf(sums[1], mulf(d, d))});
          });
      return SmallVector<Value>{pivot, loop.getResult(0), loop.getResult(1)};
    });

    SmallVector<Value> lanes;
    for (Value sum : ArrayRef<Value>(partial).drop_front())
      for (int64_t i = 0; i < vector; ++i)
        lanes.push_back(vector::ExtractOp::create(b, sum, i));
    SmallVector<Value> sums = allReduce(lanes);

    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
    ifThen(arith::AndIOp::create(b, valid, first), [&] {
      // n = 0 gives NaN statistics: an empty batch has none.
      Value count = arith::UIToFPOp::create(
          b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), rows));
      Value invCount = splat(arith::DivFOp::create(b, constantF32(1.0), count));
      auto gather = [&](ArrayRef<Value> scalars) {
        return vector::FromElementsOp::create(b, f32Vector, scalars).getResult();
      };
      Value centre = mulf(gather(ArrayRef(sums).take_front(vector)), invCount);
      Value meanSquare =
          mulf(gather(ArrayRef(sums).drop_front(vector)), invCount);
      Value variance = arith::MaximumFOp::create(
          b, subf(meanSquare, mulf(centre, centre)), zero(f32Vector));
      storeVector(addf(partial[0], centre), arg("mean"), index(0), column,
                  hidden, !ragged);
      storeVector(variance, arg("variance"), index(0), column, hidden, !ragged);
    });
  });
}

void mlir::norm::emitColumnStatsKernel(ImplicitLocOpBuilder &b,
                                       gpu::GPUFuncOp func,
                                       const ::norm::KernelSignature &sig,
                                       const ::norm::OpSpec &spec) {
  ColumnStatsEmitter(b, func, sig, spec).emit();
}
