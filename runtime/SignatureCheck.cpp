//===- SignatureCheck.cpp - is a stored kernel the one asked for? ---------===//
//
// One equality against the kernel model (norm::describeKernel), which the
// kernel generator builds every kernel from; the rest says which field
// differs.
//
//===----------------------------------------------------------------------===//

#include "runtime/SignatureCheck.h"

#include <algorithm>

using namespace norm;
using namespace norm::jit;

static std::string describeParam(const KernelParam &p) {
  switch (p.kind) {
  case KernelParam::Kind::Rows:
    return "row count '" + p.name + "'";
  case KernelParam::Kind::Batch:
    return "batch '" + p.name + "'";
  case KernelParam::Kind::RowStride:
    return "row stride '" + p.name + "'";
  case KernelParam::Kind::KvSplits:
    return "kv split count '" + p.name + "'";
  case KernelParam::Kind::CacheCapacity:
    return "cache capacity '" + p.name + "'";
  case KernelParam::Kind::RopeTableRows:
    return "rope table row count '" + p.name + "'";
  case KernelParam::Kind::CacheBlocks:
    return "cache page count '" + p.name + "'";
  case KernelParam::Kind::TensorMap:
    return "tensor map '" + p.name + "'";
  case KernelParam::Kind::Buffer:
    break;
  }
  return "buffer '" + p.name + "' " +
         std::string(getElementTypeName(p.elementType)) +
         (p.rowMajor2D ? " 2-D" : " 1-D") +
         (p.readOnly ? " read-only" : " written") + " aligned to " +
         std::to_string(p.alignment) +
         (p.over.empty() ? "" : " over '" + p.over + "'");
}

Status norm::jit::checkSignatureFor(const KernelSignature &sig,
                                    const OpSpec &spec,
                                    const LaunchConfig &launch,
                                    const TargetOptions &target) {
  KernelSignature want;
  if (Status status = describeKernel(spec, launch, target, want); !status)
    return Status::error(ErrorCode::Internal,
                         "no kernel of " + describeOpSpec(spec) + " " +
                             launch.getMangledSuffix() + ": " +
                             status.message());
  auto mismatch = [&](const std::string &what, const std::string &got,
                      const std::string &expected) {
    return Status::error(ErrorCode::Internal,
                         "the signature of kernel '" + sig.name + "' is not " +
                             "that of " + describeOpSpec(spec) + " " +
                             launch.getMangledSuffix() + ": " + what + " " +
                             got + ", expected " + expected);
  };
  auto number = [](int64_t value) { return std::to_string(value); };
  if (!sig.fallback.empty())
    return mismatch("fallback", "'" + sig.fallback + "'",
                    "none (the runtime picks scalar variants)");
  if (sig.describesSameKernel(want))
    return Status::success();
  if (sig.kind != want.kind)
    return mismatch("kind", "'" + sig.kind + "'", "'" + want.kind + "'");
  if (sig.hidden != want.hidden)
    return mismatch("hidden", number(sig.hidden), number(want.hidden));
  if (sig.launch != want.launch)
    return mismatch("launch", sig.launch.getMangledSuffix(),
                    want.launch.getMangledSuffix());
  if (sig.blockThreads != want.blockThreads)
    return mismatch("block threads", number(sig.blockThreads),
                    number(want.blockThreads));
  if (sig.rowMultiplier != want.rowMultiplier ||
      sig.fixedGridX != want.fixedGridX || sig.maxGridX != want.maxGridX ||
      sig.gridMultiple != want.gridMultiple)
    return mismatch("grid", sig.getGridFormula(), want.getGridFormula());
  if (sig.sharedBytes != want.sharedBytes)
    return mismatch("shared bytes", number(sig.sharedBytes),
                    number(want.sharedBytes));
  if (sig.pdl != want.pdl)
    return mismatch("pdl", sig.pdl ? "true" : "false",
                    want.pdl ? "true" : "false");
  for (size_t i = 0; i < std::max(sig.params.size(), want.params.size());
       ++i) {
    bool have = i < sig.params.size(), expected = i < want.params.size();
    if (have && expected && sig.params[i] == want.params[i])
      continue;
    return mismatch("parameter " + number(i),
                    have ? describeParam(sig.params[i]) : "missing",
                    expected ? describeParam(want.params[i]) : "none");
  }
  return mismatch("name", "'" + sig.name + "'", "'" + want.name + "'");
}
