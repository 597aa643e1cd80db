//===- OpSpecs.h - operations the unit tests share --------------*- C++ -*-===//

#ifndef NORM_TEST_UNIT_OPSPECS_H
#define NORM_TEST_UNIT_OPSPECS_H

#include "compiler/model/KernelModel.h"

namespace norm::examples {

/// bf16 RMSNorm with a weight.
inline OpSpec makeRmsNorm(int64_t hidden = 4096) {
  OpSpec spec;
  spec.kind = OpSpec::Kind::RMSNorm;
  spec.hidden = hidden;
  spec.hasWeight = true;
  return spec;
}

/// QK-Norm of 32 query and 8 key/value heads of 128, with weights.
inline OpSpec makeQKNorm() {
  OpSpec spec;
  spec.kind = OpSpec::Kind::QKNormPrologue;
  spec.hidden = 128;
  spec.numQHeads = 32;
  spec.numKvHeads = 8;
  spec.hasWeight = true;
  return spec;
}

/// Qwen3-like attention: 32 query and 8 key/value heads of 128, RMS
/// QK-Norm with weights, causal.
inline OpSpec makeAttention() {
  OpSpec spec;
  spec.kind = OpSpec::Kind::Attention;
  spec.hidden = 128;
  spec.numQHeads = 32;
  spec.numKvHeads = 8;
  spec.hasWeight = true;
  spec.causal = true;
  spec.scale = 0.08838834764831845;
  return spec;
}

} // namespace norm::examples

#endif // NORM_TEST_UNIT_OPSPECS_H
