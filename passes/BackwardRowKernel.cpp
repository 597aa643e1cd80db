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
// GroupNorm (groups with their own channels of the weight): the persistent
// grid's thread groups are a multiple of the groups
// (norm::getBackwardGridMultiple), so thread group p only ever takes rows
// of group p mod groups; it loads that group's weight and its column sums
// are that group's channels of partial row p / groups.
//
// Rows beyond the registers (norm::getRowStorage) stage v and dy in dynamic
// shared memory as step 1 reads them, 16 elements a thread at a time, and
// step 3 reads them back; the weight is read again from the cache where
// it is used. Only the column sums stay in registers, still one pass over
// global memory. Each thread reads back what it staged itself: no barrier.
//
//===----------------------------------------------------------------------===//

#include "passes/FusedRowKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::norm;

/// Elements of its share a thread of a staged backward kernel loads, stages
/// and accumulates at a time.
static constexpr int64_t kStagedGroupElements = 16;

void FusedRowEmitter::emitBackwardRows() {
  const RowLayout &row = fused.row;
  Value input = arg("input"), gradOutput = arg("grad_output");
  Value savedMean = arg("saved_mean"), savedRstd = arg("saved_rstd");
  Value weight = arg("weight"), residualGrad = arg("residual_grad");
  Value weightPartials = arg("weight_grad_partials");
  Value biasPartials = arg("bias_grad_partials");
  bool meanVar = fused.statistic == ::norm::Statistic::MeanVar;
  bool l2 = fused.statistic == ::norm::Statistic::L2;
  // Groups and heads (per_head_weight) are rows of their own, (token,
  // group) pairs.
  int64_t groups = fused.groups;
  Value kernelRows = mul(indexArg("rows"), index(groups));
  // The thread group's partial row: bid * (rows at once) + slot; with
  // grouped weights, its group's first channel.
  Value partialRow =
      add(mul(bid, index(sig.launch.getConcurrentRows())), slot);
  bool groupedWeights = ::norm::hasGroupedWeightGradients(fused.spec);
  Value paramBase =
      groupedWeights
          ? mul(arith::RemUIOp::create(b, partialRow, index(groups)),
                index(row.length))
          : index(0);
  // Staged rows: regions for v and dy (the signature sized them).
  bool staged = sig.sharedBytes > 0;
  SmallVector<StagedRow> regions;
  if (staged)
    regions = createStagedRows();
  // Rows in registers load the weight once, before the first row's
  // reduction (the heads share it; a thread group's rows are one group).
  ParamChunks params;
  if (!staged)
    params = loadParams(paramBase);
  waitForPredecessor();
  VectorType f32Vector = VectorType::get({vector}, f32);
  auto weightOf = [&](int64_t c) -> Value {
    if (!weight)
      return {};
    Value w = toF32(staged ? loadChunk(row, weight, paramBase, c)
                           : params.weight[c]);
    if (fused.offset != 0.0)
      w = addf(w, splatF32(fused.offset));
    return w;
  };
  // The chunks in the order step 1 and step 3 visit them: all at once in
  // registers; staged, 16 elements at a time (four 16-byte accesses of f32
  // rows per buffer, two of bf16: their f32 values, with the weight's, are
  // what the column sums leave of the registers).
  int64_t perGroup =
      staged ? std::max<int64_t>(kStagedGroupElements / vector, 1) : row.chunks;
  auto forEachGroup = [&](function_ref<void(int64_t, int64_t)> body) {
    for (int64_t first = 0; first < row.chunks; first += perGroup)
      body(first, std::min(first + perGroup, row.chunks));
  };

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
        auto loadStats = [&] {
          Value rstd = memref::LoadOp::create(b, savedRstd, base("saved_rstd"));
          Value mean =
              meanVar
                  ? memref::LoadOp::create(b, savedMean, base("saved_mean"))
                        .getResult()
                  : constantF32(0.0);
          return std::pair(rstd, mean);
        };

        // 2. Per element t = dy (v - mean): the row's sum(g xhat) = rstd
        // sum(t w) and the column sums dy xhat = t rstd and dy. Lanes
        // outside the row hold dy = 0 and add nothing. What stays live
        // across the exchange (in registers: v and dy in f32, the weight,
        // the column sums; staged: the column sums) is what the register
        // rule counts (norm::getRegisterBytesPerVector).
        Value dot = zero(f32Vector), total = zero(f32Vector);
        SmallVector<Value> next(carried);
        // `mean` and `rstd` splat.
        auto accumulate = [&](int64_t c, Value vc, Value dyc, Value mean,
                              Value rstd) {
          Value t = mulf(dyc, subf(vc, mean));
          Value w = weightOf(c);
          dot = addf(dot, w ? mulf(t, w) : t);
          if (meanVar)
            total = addf(total, w ? mulf(w, dyc) : dyc);
          if (weightPartials)
            next[c] = addf(next[c], mulf(t, rstd));
          if (biasPartials)
            next[biasAt + c] = addf(next[biasAt + c], dyc);
        };
        auto rowPartials = [&](Value rstd) {
          SmallVector<Value> partials = {mulf(reduce(dot), rstd)};
          if (meanVar)
            partials.push_back(reduce(total));
          return partials;
        };
        int64_t numPartials = meanVar ? 2 : 1;

        // 1. v, dy and the row's statistics; zeros (the column sums as they
        // were) for a row past the last.
        SmallVector<Value> v, dy, partials;
        Value rstd, mean;
        if (!staged) {
          SmallVector<Value> loaded = ifElseZeros(valid, [&] {
            SmallVector<Value> values = loadRow(row, input, base("input"));
            llvm::append_range(values,
                               loadRow(row, gradOutput, base("grad_output")));
            auto [rstd, mean] = loadStats();
            values.push_back(rstd);
            values.push_back(mean);
            return values;
          });
          v.assign(loaded.begin(), loaded.begin() + row.chunks);
          dy.assign(loaded.begin() + row.chunks,
                    loaded.begin() + 2 * row.chunks);
          rstd = loaded[2 * row.chunks];
          mean = loaded[2 * row.chunks + 1];
          Value splatMean = splat(mean), splatRstd = splat(rstd);
          for (int64_t c = 0; c < row.chunks; ++c)
            accumulate(c, toF32(v[c]), toF32(dy[c]), splatMean, splatRstd);
          partials = rowPartials(rstd);
        } else {
          SmallVector<Value> otherwise(carried);
          otherwise.append(numPartials + 2, constantF32(0.0));
          SmallVector<Value> results = ifElse(
              valid,
              [&] {
                auto [rstd, mean] = loadStats();
                Value splatMean = splat(mean), splatRstd = splat(rstd);
                forEachGroup([&](int64_t first, int64_t last) {
                  SmallVector<Value> vs, dys;
                  for (int64_t c = first; c < last; ++c) {
                    vs.push_back(loadChunk(row, input, base("input"), c));
                    dys.push_back(
                        loadChunk(row, gradOutput, base("grad_output"), c));
                  }
                  for (int64_t c = first; c < last; ++c) {
                    Chunk chunk{chunkStart(c), row.isFull(c)};
                    stage(regions[0], chunk, vs[c - first]);
                    stage(regions[1], chunk, dys[c - first]);
                    accumulate(c, toF32(vs[c - first]), toF32(dys[c - first]),
                               splatMean, splatRstd);
                  }
                });
                SmallVector<Value> values = next;
                llvm::append_range(values, rowPartials(rstd));
                values.push_back(rstd);
                values.push_back(mean);
                return values;
              },
              otherwise);
          ArrayRef<Value> out = results;
          next.assign(out.begin(), out.begin() + sumChunks);
          partials.assign(out.begin() + sumChunks,
                          out.begin() + sumChunks + numPartials);
          rstd = out[sumChunks + numPartials];
          mean = out[sumChunks + numPartials + 1];
        }
        SmallVector<Value> sums = allReduce(partials);

        // 3. dv, stored where the row exists: xhat = v rstd - mean rstd (an
        // fma).
        ifThen(valid, [&] {
          double invLength = 1.0 / static_cast<double>(row.length);
          Value c1 = l2 ? sums[0] : mulf(sums[0], constantF32(invLength));
          Value c0 = meanVar ? mulf(sums[1], constantF32(invLength)) : Value();
          Value splatRstd = splat(rstd);
          Value shift = splat(arith::NegFOp::create(b, mulf(mean, rstd)));
          Value addendGrad = arg("addend_grad");
          forEachGroup([&](int64_t first, int64_t last) {
            SmallVector<Value> vs, dys, residuals;
            for (int64_t c = first; c < last; ++c) {
              Chunk chunk{chunkStart(c), row.isFull(c)};
              vs.push_back(staged ? unstage(regions[0], chunk) : v[c]);
              dys.push_back(staged ? unstage(regions[1], chunk) : dy[c]);
              if (residualGrad)
                residuals.push_back(
                    loadChunk(row, residualGrad, base("residual_grad"), c));
            }
            for (int64_t c = first; c < last; ++c) {
              Value xhat = math::FmaOp::create(b, toF32(vs[c - first]),
                                               splatRstd, shift);
              Value dyc = toF32(dys[c - first]);
              Value w = weightOf(c);
              Value g = w ? mulf(w, dyc) : dyc;
              Value d = subf(g, mulf(xhat, splat(c1)));
              if (c0)
                d = subf(d, splat(c0));
              d = mulf(d, splatRstd);
              if (residualGrad)
                d = addf(d, toF32(residuals[c - first]));
              storeChunk(row,
                         fused.alpha == 1.0 ? d
                                            : mulf(d, splatF32(fused.alpha)),
                         arg("grad_input"), base("grad_input"), c);
              if (addendGrad)
                storeChunk(row, d, addendGrad, base("addend_grad"), c);
            }
          });
        });
        return next;
      });

  auto partialBase = [&](StringRef name) {
    if (!groupedWeights)
      return mul(partialRow, stride(name));
    Value at = arith::DivUIOp::create(b, partialRow, index(groups));
    return add(mul(at, stride(name)), paramBase);
  };
  ArrayRef<Value> sums = columnSums;
  if (weightPartials)
    storeRow(row, sums.take_front(row.chunks), weightPartials,
             partialBase("weight_grad_partials"));
  if (biasPartials)
    storeRow(row, sums.drop_front(biasAt), biasPartials,
             partialBase("bias_grad_partials"));
}
