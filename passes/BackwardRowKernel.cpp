//===- BackwardRowKernel.cpp - norm.fused_row_grad, rows in registers -----===//
//
// The gradients of a row norm y = xhat * (w + offset) + b, xhat = (v - mean)
// * rstd, from the saved statistics, in one pass over v and dy:
//
//   g  = dy * (w + offset)                    (dy without a weight)
//   dv = rstd * (g - mean(g) - xhat * mean(g * xhat))     mean_var
//      = rstd * (g - xhat * mean(g * xhat))               rms
//      = rstd * (g - xhat * sum(g * xhat))                l2 (rstd: 1 / |v|)
//   dv += residual_grad;  grad_input = alpha * dv;  addend_grad = dv
//
// The same frame as the forward kernel (FusedRowKernel.h): each thread group
// loads its row's v and dy once, reduces sum(g) and sum(g * xhat) in one
// norm.row_allreduce, and stores dv. Across the rows of the CTA the group
// keeps sum(dy * xhat) and sum(dy) per column in f32 registers and writes
// them last as its row of the weight and bias partials, which a
// norm.column_sum reduces: the order of every sum is fixed by the launch,
// so the gradients are the same bits on every run. Rows past the last give
// dy = 0 and add exact zeros.
//
//===----------------------------------------------------------------------===//

#include "passes/FusedRowKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::norm;

void FusedRowEmitter::emitBackwardRows() {
  const RowLayout &row = fused.row;
  Value input = arg("input"), gradOutput = arg("grad_output");
  Value savedMean = arg("saved_mean"), savedRstd = arg("saved_rstd");
  Value weightPartials = arg("weight_grad_partials");
  Value biasPartials = arg("bias_grad_partials");
  bool meanVar = fused.statistic == ::norm::Statistic::MeanVar;
  // Heads (per_head_weight) are rows of their own, (token, head) pairs.
  int64_t groups = fused.groups;
  Value kernelRows = mul(indexArg("rows"), index(groups));
  // The weight, loaded once before the first row's reduction (the heads
  // share it).
  ParamChunks params = loadParams(index(0));
  VectorType f32Vector = VectorType::get({vector}, f32);

  // Carried: the weight then the bias gradient sums of each chunk.
  int64_t biasAt = weightPartials ? row.chunks : 0;
  int64_t sumChunks = biasAt + (biasPartials ? row.chunks : 0);
  SmallVector<Value> init(sumChunks, zero(f32Vector));
  SmallVector<Value> columnSums = forEachCtaRow(
      init, [&](Value rowIndex, ValueRange carried) -> SmallVector<Value> {
        Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            rowIndex, kernelRows);
        Value token = rowIndex, group = index(0);
        if (groups > 1) {
          token = arith::DivUIOp::create(b, rowIndex, index(groups));
          group = arith::RemUIOp::create(b, rowIndex, index(groups));
        }
        Value colBase = mul(group, index(row.length));
        // Rows of v and the gradients start at the head; the saved
        // statistics hold one value per head.
        auto base = [&](StringRef name) {
          bool stats = name == "saved_rstd" || name == "saved_mean";
          return add(mul(token, stride(name)), stats ? group : colBase);
        };

        // 1. v, dy and the row's statistics; zeros for a row past the last.
        SmallVector<Value> loaded = ifElseZeros(valid, [&] {
          SmallVector<Value> values = loadRow(row, input, base("input"));
          llvm::append_range(values,
                             loadRow(row, gradOutput, base("grad_output")));
          values.push_back(
              memref::LoadOp::create(b, savedRstd, base("saved_rstd")));
          values.push_back(
              meanVar ? memref::LoadOp::create(b, savedMean, base("saved_mean"))
                            .getResult()
                      : constantF32(0.0));
          return values;
        });
        ArrayRef<Value> v = ArrayRef<Value>(loaded).take_front(row.chunks);
        ArrayRef<Value> dy =
            ArrayRef<Value>(loaded).slice(row.chunks, row.chunks);
        Value rstd = loaded[2 * row.chunks], mean = loaded[2 * row.chunks + 1];

        // 2. Before the exchange, per element t = dy (v - mean): the row's
        // sum(g xhat) = rstd sum(t w) and the column sums dy xhat = t rstd
        // and dy. After it x-hat is v rstd - mean rstd (an fma). What stays
        // live across it (v and dy in f32, the weight, the column sums) is
        // what the register rule counts (norm::getRegisterBytesPerVector).
        Value splatMean = splat(mean), splatRstd = splat(rstd);
        auto weightOf = [&](int64_t c) -> Value {
          if (params.weight.empty())
            return {};
          Value w = toF32(params.weight[c]);
          if (fused.offset != 0.0)
            w = addf(w, splatF32(fused.offset));
          return w;
        };
        Value dot = zero(f32Vector), total = zero(f32Vector);
        SmallVector<Value> next(carried);
        for (int64_t c = 0; c < row.chunks; ++c) {
          Value dyc = toF32(dy[c]);
          Value t = mulf(dyc, subf(toF32(v[c]), splatMean));
          Value w = weightOf(c);
          dot = addf(dot, w ? mulf(t, w) : t);
          if (meanVar)
            total = addf(total, w ? mulf(w, dyc) : dyc);
          if (weightPartials)
            next[c] = addf(carried[c], mulf(t, splatRstd));
          if (biasPartials)
            next[biasAt + c] = addf(carried[biasAt + c], dyc);
        }
        // Lanes outside the row hold dy = 0 and add nothing.
        SmallVector<Value> partials = {mulf(reduce(dot), rstd)};
        if (meanVar)
          partials.push_back(reduce(total));
        SmallVector<Value> sums = allReduce(partials);

        // 3. dv, stored where the row exists.
        ifThen(valid, [&] {
          double invLength = 1.0 / static_cast<double>(row.length);
          bool l2 = fused.statistic == ::norm::Statistic::L2;
          Value c1 = l2 ? sums[0] : mulf(sums[0], constantF32(invLength));
          Value c0 = meanVar ? mulf(sums[1], constantF32(invLength)) : Value();
          Value residualGrad = arg("residual_grad");
          SmallVector<Value> residualChunks;
          if (residualGrad)
            residualChunks =
                loadRow(row, residualGrad, base("residual_grad"));
          // xhat = v rstd - mean rstd.
          Value shift = splat(arith::NegFOp::create(b, mulf(mean, rstd)));
          SmallVector<Value> dv, gradInput;
          for (int64_t c = 0; c < row.chunks; ++c) {
            Value xhat = math::FmaOp::create(b, toF32(v[c]), splatRstd, shift);
            Value dyc = toF32(dy[c]);
            Value w = weightOf(c);
            Value g = w ? mulf(w, dyc) : dyc;
            Value d = subf(g, mulf(xhat, splat(c1)));
            if (c0)
              d = subf(d, splat(c0));
            d = mulf(d, splatRstd);
            if (residualGrad)
              d = addf(d, toF32(residualChunks[c]));
            dv.push_back(d);
            gradInput.push_back(fused.alpha == 1.0
                                    ? d
                                    : mulf(d, splatF32(fused.alpha)));
          }
          storeRow(row, gradInput, arg("grad_input"), base("grad_input"));
          if (Value addendGrad = arg("addend_grad"))
            storeRow(row, dv, addendGrad, base("addend_grad"));
        });
        return next;
      });

  // The thread group's partial row: bid * (rows at once) + slot.
  Value partialRow =
      add(mul(bid, index(sig.launch.getConcurrentRows())), slot);
  ArrayRef<Value> sums = columnSums;
  if (weightPartials)
    storeRow(row, sums.take_front(row.chunks), weightPartials,
             mul(partialRow, stride("weight_grad_partials")));
  if (biasPartials)
    storeRow(row, sums.drop_front(biasAt), biasPartials,
             mul(partialRow, stride("bias_grad_partials")));
}
