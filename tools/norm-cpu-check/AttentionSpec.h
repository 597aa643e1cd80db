//===- AttentionSpec.h - attention operations of the checks ------*- C++ -*-===//
//
// The attention operation of a check case, as norm-cpu-check's attention
// variants and the unit tests' attention harness build it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMCPUCHECK_ATTENTIONSPEC_H
#define NORM_TOOLS_NORMCPUCHECK_ATTENTIONSPEC_H

#include "compiler/model/Operation.h"

#include <cmath>

namespace norm::check {

/// Attention of `kind` over `heads` query and `kvHeads` key/value heads of
/// `headDim` elements of `type`, with scale 1 / sqrt(headDim), eps 1e-6
/// with a QK-Norm (`norm`; `weights` shifted by `offset`), and rotary
/// embeddings over `rotaryDim` elements (0: the head dim) of base `theta`
/// when `rope` is set.
inline OpSpec makeAttentionSpec(OpKind kind, ElementType type, int64_t headDim,
                                int64_t heads, int64_t kvHeads, Statistic norm,
                                bool weights, double offset, RopeStyle rope,
                                int64_t rotaryDim, double theta) {
  OpSpec spec;
  spec.kind = kind;
  spec.hidden = headDim;
  spec.input = spec.output = spec.param = type;
  spec.numQHeads = heads;
  spec.numKvHeads = kvHeads;
  spec.qkStatistic = norm;
  spec.hasWeight = weights;
  spec.weightOffset = offset;
  spec.eps = norm == Statistic::None ? 0.0 : 1e-6;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  spec.rope = rope;
  if (rope != RopeStyle::None) {
    spec.rotaryDim = rotaryDim ? rotaryDim : headDim;
    spec.ropeTheta = theta;
  }
  return spec;
}

} // namespace norm::check

#endif // NORM_TOOLS_NORMCPUCHECK_ATTENTIONSPEC_H
