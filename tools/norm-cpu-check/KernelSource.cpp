//===- KernelSource.cpp - the kernel ABI of an operation ------------------===//

#include "tools/norm-cpu-check/KernelSource.h"

#include "dialects/NormDialect.h"

using namespace norm;
using namespace norm::check;

static KernelParam makeBuffer(std::string name, ElementType type, bool rows,
                              bool readOnly) {
  KernelParam param;
  param.kind = KernelParam::Kind::Buffer;
  param.name = std::move(name);
  param.elementType = type;
  param.rowMajor2D = rows;
  param.readOnly = readOnly;
  return param;
}

std::vector<KernelParam> check::getAbiParams(const OpSpec &spec) {
  std::vector<KernelParam> params;
  auto rows = [&](std::string name, ElementType type, bool readOnly) {
    params.push_back(makeBuffer(std::move(name), type, true, readOnly));
  };
  auto param = [&](std::string name, ElementType type, bool readOnly) {
    params.push_back(makeBuffer(std::move(name), type, false, readOnly));
  };
  switch (spec.kind) {
  case OpSpec::Kind::QKNormPrologue:
    rows("qkv", spec.input, true);
    if (spec.hasWeight) {
      param("q_weight", spec.param, true);
      param("k_weight", spec.param, true);
    }
    rows("q", spec.output, false);
    rows("k", spec.output, false);
    break;
  case OpSpec::Kind::BatchNormStats:
    rows("input", spec.input, true);
    param("mean", ElementType::f32, false);
    param("variance", ElementType::f32, false);
    break;
  default:
    rows("input", spec.input, true);
    if (spec.hasAddend)
      rows("addend", spec.addendType, true);
    if (spec.hasSkip)
      rows("skip", spec.skipType, true);
    if (spec.hasWeight)
      param("weight", spec.param, true);
    if (spec.hasBias)
      param("bias", spec.param, true);
    if (spec.kind == OpSpec::Kind::BatchNormInference) {
      param("mean", spec.param, true);
      param("variance", spec.param, true);
    }
    rows("output", spec.output, false);
    if (spec.writeResidual)
      rows("residual_out", spec.input, false);
    break;
  }
  std::vector<KernelParam> strides;
  for (const KernelParam &buffer : params)
    if (buffer.rowMajor2D) {
      KernelParam stride;
      stride.kind = KernelParam::Kind::RowStride;
      stride.name = buffer.name + "_stride";
      strides.push_back(stride);
    }
  KernelParam rowCount;
  rowCount.kind = KernelParam::Kind::Rows;
  rowCount.name = "rows";
  params.push_back(rowCount);
  params.insert(params.end(), strides.begin(), strides.end());
  return params;
}

int64_t check::getRowLength(const OpSpec &spec) {
  return spec.groups > 1 ? spec.hidden / spec.groups : spec.hidden;
}

bool check::isValidLaunch(const OpSpec &spec, const LaunchConfig &launch) {
  int64_t v = launch.vector, tpr = launch.threadsPerRow;
  if ((v != 1 && v != 2 && v != 4 && v != 8) ||
      v * getElementBytes(spec.input) > 16)
    return false;
  bool narrow = tpr == 1 || tpr == 2 || tpr == 4 || tpr == 8 || tpr == 16;
  if (!narrow && (tpr % 32 != 0 || tpr > 1024))
    return false;
  if (launch.warps < 1 || launch.warps > 32 ||
      launch.getThreadsPerCta() % tpr != 0 || launch.rowsPerCta < 1 ||
      launch.rowsPerCta % launch.getConcurrentRows() != 0)
    return false;
  if (spec.kind == OpSpec::Kind::BatchNormStats)
    return true;
  // The kernel op verifiers: every thread has work; QK-Norm heads fit in
  // registers, fused rows are at most kMaxFusedRowLength long.
  int64_t length = getRowLength(spec);
  if ((tpr - 1) * v >= length)
    return false;
  if (spec.kind == OpSpec::Kind::QKNormPrologue)
    return sharesFitRegisters(spec, launch);
  return length <= mlir::norm::kMaxFusedRowLength;
}

bool check::sharesFitRegisters(const OpSpec &spec,
                               const LaunchConfig &launch) {
  return mlir::norm::fitsInRegisters(getRowLength(spec), launch.threadsPerRow,
                                     launch.vector);
}
