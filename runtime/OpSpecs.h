//===- OpSpecs.h - operation descriptions: checks, identity, buffers -*- C++
//-*-===//
//
// The runtime describes an operation with norm::OpSpec (compiler/Compiler.h,
// plain C++). This file is what the runtime knows about one without a
// compiler: whether it is valid, its canonical text (the identity in every
// cache key and bundle), and the buffers its kernel takes, so that launches
// can be checked before anything reaches the device.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_OPSPECS_H
#define NORM_RUNTIME_OPSPECS_H

#include "compiler/Compiler.h"
#include "runtime/Status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace norm::jit {

// The compiler's plain C++ vocabulary, used throughout the runtime.
using norm::CompiledKernel;
using norm::ElementType;
using norm::getElementBytes;
using norm::getElementTypeName;
using norm::KernelParam;
using norm::KernelSignature;
using norm::LaunchConfig;
using norm::OpSpec;
using norm::parseElementType;
using norm::TargetOptions;

/// The buffers a kernel may take, named as in kernel signatures
/// (compiler/KernelSignature.h).
enum class BufferSlot : int {
  Input,
  Addend,
  Skip,
  Weight,
  Bias,
  Mean,
  Variance,
  Output,
  ResidualOut,
  Qkv,
  QWeight,
  KWeight,
  Q,
  K,
};
constexpr int kNumBufferSlots = 14;

/// "input", "residual_out", "q_weight", ...
std::string_view getBufferSlotName(BufferSlot slot);
std::optional<BufferSlot> parseBufferSlot(std::string_view name);

/// One buffer of an operation.
struct BufferSpec {
  BufferSlot slot;
  ElementType type;
  int64_t cols; // row length (2-D) or element count (1-D)
  bool rows2D;  // rows x cols, with a row stride
  bool written; // an output
};

/// "rms_norm", "qk_norm", ...
std::string_view getOpKindName(OpSpec::Kind kind);

/// InvalidArgument or Unsupported with a message naming the field, for
/// operations no kernel can implement.
Status validateOpSpec(const OpSpec &spec);

/// The same operation with the fields it does not use reset to defaults, so
/// that equal operations have equal identities.
OpSpec normalizeOpSpec(const OpSpec &spec);

/// Every field of the normalized operation on one line (doubles exact, in
/// hexadecimal): the identity of the operation in cache keys and bundles.
std::string getCanonicalSpec(const OpSpec &spec);
/// Inverse of getCanonicalSpec (bundles list their operations this way).
std::optional<OpSpec> parseCanonicalSpec(std::string_view text,
                                         std::string &error);

/// A short form for logs: "rms_norm h4096 bf16 +addend +residual_out".
std::string describeOpSpec(const OpSpec &spec);

/// The buffers of the operation's kernel, in kernel parameter order.
std::vector<BufferSpec> getBuffers(const OpSpec &spec);

/// The length of the rows that threads are mapped onto: the hidden size, a
/// group (GroupNorm) or a head (QK-Norm).
int64_t getRowLength(const OpSpec &spec);

/// Bytes all 2-D buffers move per logical row (per token for QK-Norm).
int64_t getBytesPerRow(const OpSpec &spec);

} // namespace norm::jit

#endif // NORM_RUNTIME_OPSPECS_H
