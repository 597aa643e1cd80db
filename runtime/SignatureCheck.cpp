//===- SignatureCheck.cpp - is a stored kernel the one asked for? ---------===//
//
// The runtime's model of describeKernel (compiler/KernelDescription.h),
// which needs MLIR. When the compiler offers it in plain C++
// (describeKernel(spec, launch, target)), checkSignatureFor becomes one
// equality against it; until then the kernel's name hash and the choice
// between staging and streaming long rows are checked for consistency
// only.
//
//===----------------------------------------------------------------------===//

#include "runtime/SignatureCheck.h"

#include "runtime/Candidates.h"

#include <algorithm>

using namespace norm::jit;

using Kind = OpSpec::Kind;

static std::string_view getKernelKind(const OpSpec &spec) {
  switch (spec.kind) {
  case Kind::QKNormPrologue:
    return "qk_norm_prologue";
  case Kind::BatchNormStats:
    return "column_stats";
  default:
    return "fused_row";
  }
}

/// Row kernels with a statistic stage long rows in shared memory where they
/// fit; the others stream them (getRowStorage).
static bool mayStageRows(const OpSpec &spec) {
  return spec.kind == Kind::RMSNorm || spec.kind == Kind::LayerNorm ||
         spec.kind == Kind::L2Norm || spec.kind == Kind::GroupNorm;
}

/// Shared memory of a CTA that stages its rows (getStagedRowBytes): whole
/// vectors of the summed element type, 16-byte aligned, per concurrent row.
static int64_t getStagedBytes(const OpSpec &spec, const LaunchConfig &launch) {
  int64_t bytes = spec.f32Residual ? 4 : getElementBytes(spec.input);
  int64_t vectors =
      (getRowLength(spec) + launch.vector - 1) / launch.vector;
  int64_t rowBytes = (vectors * launch.vector * bytes + 15) / 16 * 16;
  return launch.getConcurrentRows() * rowBytes;
}

/// Everything of the expected signature but the name and shared memory.
static KernelSignature describeExpectedKernel(const OpSpec &spec,
                                              const LaunchConfig &launch) {
  KernelSignature sig;
  sig.kind = std::string(getKernelKind(spec));
  sig.hidden = spec.hidden;
  sig.launch = launch;
  sig.blockThreads = launch.getThreadsPerCta();
  if (spec.kind == Kind::QKNormPrologue) {
    sig.rowMultiplier = spec.numQHeads + spec.numKvHeads;
  } else if (spec.kind == Kind::BatchNormStats) {
    int64_t tiles = (spec.hidden + launch.vector - 1) / launch.vector;
    sig.fixedGridX = (tiles + launch.rowsPerCta - 1) / launch.rowsPerCta;
  } else {
    sig.rowMultiplier = spec.groups;
  }
  std::vector<BufferSpec> buffers = getBuffers(spec);
  for (const BufferSpec &buffer : buffers) {
    KernelParam param;
    param.kind = KernelParam::Kind::Buffer;
    param.name = std::string(getBufferSlotName(buffer.slot));
    param.elementType = buffer.type;
    param.rowMajor2D = buffer.rows2D;
    param.readOnly = !buffer.written;
    param.alignment =
        std::min<int64_t>(launch.vector * getElementBytes(buffer.type), 16);
    sig.params.push_back(param);
  }
  KernelParam rows;
  rows.kind = KernelParam::Kind::Rows;
  rows.name = "rows";
  sig.params.push_back(rows);
  for (const BufferSpec &buffer : buffers)
    if (buffer.rows2D) {
      KernelParam stride;
      stride.kind = KernelParam::Kind::RowStride;
      stride.name = std::string(getBufferSlotName(buffer.slot)) + "_stride";
      sig.params.push_back(stride);
    }
  return sig;
}

static std::string describeParam(const KernelParam &p) {
  switch (p.kind) {
  case KernelParam::Kind::Rows:
    return "row count '" + p.name + "'";
  case KernelParam::Kind::RowStride:
    return "row stride '" + p.name + "'";
  case KernelParam::Kind::Buffer:
    break;
  }
  return "buffer '" + p.name + "' " +
         std::string(getElementTypeName(p.elementType)) +
         (p.rowMajor2D ? " 2-D" : " 1-D") +
         (p.readOnly ? " read-only" : " written") + " aligned to " +
         std::to_string(p.alignment);
}

static bool operator==(const KernelParam &a, const KernelParam &b) {
  return a.kind == b.kind && a.name == b.name &&
         a.elementType == b.elementType && a.rowMajor2D == b.rowMajor2D &&
         a.readOnly == b.readOnly && a.alignment == b.alignment;
}

static bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

static bool isIdentifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
  });
}

Status norm::jit::checkSignatureFor(const KernelSignature &sig,
                                    const OpSpec &spec,
                                    const LaunchConfig &launch,
                                    const TargetOptions &target) {
  auto mismatch = [&](const std::string &what, const std::string &got,
                      const std::string &expected) {
    return Status::error(ErrorCode::Internal,
                         "the signature of kernel '" + sig.name + "' is not " +
                             "that of " + describeOpSpec(spec) + " " +
                             launch.getMangledSuffix() + ": " + what + " " +
                             got + ", expected " + expected);
  };
  auto number = [](int64_t value) { return std::to_string(value); };
  KernelSignature want = describeExpectedKernel(spec, launch);
  if (sig.kind != want.kind)
    return mismatch("kind", "'" + sig.kind + "'", "'" + want.kind + "'");
  if (sig.hidden != want.hidden)
    return mismatch("hidden", number(sig.hidden), number(want.hidden));
  if (!(sig.launch == want.launch))
    return mismatch("launch", sig.launch.getMangledSuffix(),
                    want.launch.getMangledSuffix());
  if (sig.blockThreads != want.blockThreads)
    return mismatch("block threads", number(sig.blockThreads),
                    number(want.blockThreads));
  if (sig.rowMultiplier != want.rowMultiplier ||
      sig.fixedGridX != want.fixedGridX)
    return mismatch("grid", sig.getGridFormula(), want.getGridFormula());
  for (size_t i = 0; i < std::max(sig.params.size(), want.params.size());
       ++i) {
    if (i < sig.params.size() && i < want.params.size() &&
        sig.params[i] == want.params[i])
      continue;
    return mismatch("parameter " + number(i),
                    i < sig.params.size() ? describeParam(sig.params[i])
                                          : "missing",
                    i < want.params.size() ? describeParam(want.params[i])
                                           : "none");
  }
  if (!sig.fallback.empty())
    return mismatch("fallback", "'" + sig.fallback + "'",
                    "none (the runtime picks scalar variants)");

  // Rows in registers take no shared memory; longer rows are staged (their
  // exact bytes, where the target has them) or streamed (none).
  bool inRegisters = keepsRowInRegisters(launch, spec);
  int64_t staged = getStagedBytes(spec, launch);
  bool mayStage = !inRegisters && mayStageRows(spec) &&
                  staged <= target.getMaxSharedBytes();
  if (sig.sharedBytes != 0 && !(mayStage && sig.sharedBytes == staged))
    return mismatch("shared bytes", number(sig.sharedBytes),
                    mayStage ? "0 or " + number(staged) : "0");
  std::string suffix = "_" + launch.getMangledSuffix() +
                       (inRegisters            ? ""
                        : sig.sharedBytes > 0 ? "_smem"
                                              : "_stream");
  if (!isIdentifier(sig.name) || !endsWith(sig.name, suffix) ||
      sig.name.size() == suffix.size())
    return mismatch("name", "'" + sig.name + "'",
                    "an identifier ending in '" + suffix + "'");
  return Status::success();
}
