//===- ColumnStatsKernel.cpp - the kernel of norm.column_stats ------------===//
//
// A tile of `vector` adjacent columns is the kernel's "row": the T threads
// of a tile take every T-th input row, keep Welford's running means and
// squared deviations in f32 registers, and combine them with two
// norm.row_allreduce (the mean, then the deviations about it). No atomics: the result does not depend on scheduling.
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

    // Welford's update per input row: the thread's count, and per column
    // its mean and sum of squared deviations (a pivot row's differences
    // cancel when that row is an outlier).
    SmallVector<Value> partial = ifElseZeros(valid, [&] {
      Value init = zero(f32Vector);
      auto loop = scf::ForOp::create(
          b, lane, rows, index(threads),
          ValueRange{constantF32(0.0), init, init},
          [&](OpBuilder &nested, Location, Value r, ValueRange carried) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            Value x = loadTile(mul(r, inputStride));
            Value count = addf(carried[0], constantF32(1.0));
            Value delta = subf(x, carried[1]);
            Value mean = addf(
                carried[1],
                mulf(delta, splat(divideApprox(constantF32(1.0), count))));
            Value m2 = addf(carried[2], mulf(delta, subf(x, mean)));
            scf::YieldOp::create(b, ValueRange{count, mean, m2});
          });
      return SmallVector<Value>(loop.getResults());
    });

    // Per column, the moments of every thread: the mean, then the squared
    // deviations about it.
    Value count = partial[0];
    SmallVector<Value> sums, means, m2s;
    for (int64_t i = 0; i < vector; ++i)
      sums.push_back(
          mulf(count, vector::ExtractOp::create(b, partial[1], i)));
    sums = allReduce(sums);
    // n = 0 gives NaN statistics: an empty batch has none.
    Value rowsF32 = arith::UIToFPOp::create(
        b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), rows));
    Value invCount = arith::DivFOp::create(b, constantF32(1.0), rowsF32);
    for (int64_t i = 0; i < vector; ++i) {
      means.push_back(mulf(sums[i], invCount));
      Value d = subf(vector::ExtractOp::create(b, partial[1], i), means[i]);
      m2s.push_back(addf(vector::ExtractOp::create(b, partial[2], i),
                         mulf(count, mulf(d, d))));
    }
    m2s = allReduce(m2s);

    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
    ifThen(arith::AndIOp::create(b, valid, first), [&] {
      auto gather = [&](ArrayRef<Value> scalars) {
        return vector::FromElementsOp::create(b, f32Vector, scalars).getResult();
      };
      storeVector(gather(means), arg("mean"), index(0), column, hidden,
                  !ragged);
      storeVector(mulf(gather(m2s), splat(invCount)), arg("variance"),
                  index(0), column, hidden, !ragged);
    });
  });
}

void mlir::norm::emitColumnStatsKernel(ImplicitLocOpBuilder &b,
                                       gpu::GPUFuncOp func,
                                       const ::norm::KernelSignature &sig,
                                       const ::norm::OpSpec &spec) {
  ColumnStatsEmitter(b, func, sig, spec).emit();
}
