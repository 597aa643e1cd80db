//===- QKNormPrologueKernel.cpp - the kernel of norm.qk_norm_prologue -----===//
//
// Kernel rows are heads: row r of the launch is head r % (Hq + Hkv) of token
// r / (Hq + Hkv), read from the packed qkv row of the token (q heads, then
// k heads) and written to q or k. The threads of a head keep it in
// registers; both weights stay in registers for the CTA's lifetime and each
// head picks its own, or, with a weight row per head (Command R+), each head
// loads its own row with the head.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelBuilder.h"
#include "passes/KernelIR.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class QKNormPrologueEmitter : public KernelBuilder {
public:
  QKNormPrologueEmitter(ImplicitLocOpBuilder &b, gpu::GPUFuncOp func,
                        const ::norm::KernelSignature &sig,
                        const ::norm::OpSpec &spec)
      : KernelBuilder(b, func, sig), spec(spec) {}

  void emit();

private:
  /// The chunks of a weight every head shares (empty without weights or
  /// with a row per head).
  SmallVector<Value> loadWeight(const RowLayout &row, StringRef name);
  /// The chunks of the weight row of q head `head` (or k head `head` -
  /// num_q_heads) of a weight per head.
  SmallVector<Value> loadHeadWeight(const RowLayout &row, Value isQ,
                                    Value head);

  const ::norm::OpSpec &spec;
};

} // namespace

SmallVector<Value> QKNormPrologueEmitter::loadWeight(const RowLayout &row,
                                                     StringRef name) {
  Value buffer = arg(name);
  if (!buffer || spec.qkWeightPerHead)
    return {};
  // Register-lean: the weights stay in their storage type until used.
  return loadRow(row, buffer, index(0));
}

SmallVector<Value> QKNormPrologueEmitter::loadHeadWeight(const RowLayout &row,
                                                         Value isQ,
                                                         Value head) {
  int64_t headDim = spec.hidden;
  return ifElse(
      isQ,
      [&]() -> SmallVector<Value> {
        return loadRow(row, arg("q_weight"), mul(head, index(headDim)));
      },
      [&]() -> SmallVector<Value> {
        Value kHead = arith::SubIOp::create(b, head, index(spec.numQHeads));
        return loadRow(row, arg("k_weight"), mul(kHead, index(headDim)));
      });
}

void QKNormPrologueEmitter::emit() {
  int64_t headDim = spec.hidden, qHeads = spec.numQHeads;
  int64_t heads = qHeads + spec.numKvHeads;
  RowLayout row(headDim, vector, threads);
  ::norm::Statistic statistic = spec.qkStatistic;
  SmallVector<Value> qWeight = loadWeight(row, "q_weight");
  SmallVector<Value> kWeight = loadWeight(row, "k_weight");
  // Only the heads may be the grid before's outputs.
  waitForPredecessor();

  Value qkv = arg("qkv");
  Value kernelRows = mul(indexArg("rows"), index(heads));
  forEachCtaRow([&](Value rowIndex) {
    Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowIndex,
                                        kernelRows);
    Value token = arith::DivUIOp::create(b, rowIndex, index(heads));
    Value head = arith::RemUIOp::create(b, rowIndex, index(heads));
    Value isQ = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, head,
                                      index(qHeads));

    // 1. The head into registers and its partial sum: of x^2, or for
    // mean_var of x (then the squared deviations from the mean).
    bool meanVar = statistic == ::norm::Statistic::MeanVar;
    SmallVector<Value> loaded = ifElseZeros(valid, [&] {
      Value base = add(mul(token, stride("qkv")), mul(head, index(headDim)));
      SmallVector<Value> out = loadRow(row, qkv, base);
      Value sum = zero(VectorType::get({vector}, f32));
      for (int64_t c = 0; c < row.chunks; ++c) {
        Value x = toF32(out[c]);
        sum = addf(sum, meanVar ? x : mulf(x, x));
      }
      out.push_back(reduce(sum));
      return out;
    });
    ArrayRef<Value> values = ArrayRef<Value>(loaded).take_front(row.chunks);
    Value partial = loaded.back();
    Value total, mean;
    if (meanVar)
      std::tie(mean, total) = allReduceDeviations(row, values, partial);
    else
      total = allReduce({partial}).front();

    // 2. Normalize, scale, store to q or k.
    ifThen(valid, [&] {
      double invLength = 1.0 / static_cast<double>(headDim);
      Value eps = constantF32(spec.eps);
      // rms and mean_var: the mean of x^2 or (x - mean)^2; l2: the sum.
      Value scale = statistic == ::norm::Statistic::L2
                        ? rsqrt(addf(total, eps))
                        : rsqrt(addf(mulf(total, constantF32(invLength)), eps));
      // save_stats: the head's statistic, for the backward.
      saveStatistics(token, head, scale, mean);
      SmallVector<Value> headWeight;
      if (spec.qkWeightPerHead)
        headWeight = loadHeadWeight(row, isQ, head);
      SmallVector<Value> outputs;
      for (int64_t c = 0; c < row.chunks; ++c) {
        Value y = toF32(values[c]);
        if (mean)
          y = subf(y, splat(mean));
        y = mulf(y, splat(scale));
        if (spec.hasWeight) {
          Value w;
          if (!headWeight.empty()) {
            w = toF32(headWeight[c]);
          } else {
            Value wq = toF32(qWeight[c]);
            Value wk = toF32(kWeight[c]);
            w = arith::SelectOp::create(b, isQ, wq, wk);
          }
          if (spec.weightOffset != 0.0)
            w = addf(w, splatF32(spec.weightOffset));
          y = mulf(y, w);
        }
        outputs.push_back(y);
      }
      ifThen(
          isQ,
          [&] {
            Value base = add(mul(token, stride("q")), mul(head, index(headDim)));
            storeRow(row, outputs, arg("q"), base);
          },
          [&] {
            Value kHead = arith::SubIOp::create(b, head, index(qHeads));
            Value base = add(mul(token, stride("k")), mul(kHead, index(headDim)));
            storeRow(row, outputs, arg("k"), base);
          });
    });
  });
}

void mlir::norm::emitQKNormPrologueKernel(ImplicitLocOpBuilder &b,
                                          gpu::GPUFuncOp func,
                                          const ::norm::KernelSignature &sig,
                                          const ::norm::OpSpec &spec) {
  QKNormPrologueEmitter(b, func, sig, spec).emit();
}
