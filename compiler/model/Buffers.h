//===- Buffers.h - the buffers of a kernel, in ABI order --------*- C++ -*-===//
//
// One list of the buffers an operation's kernel takes: the kernel signature
// (its parameters), the dialect's kernel ops (their operands and results),
// the runtime's launch checks and the checkers all read it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_BUFFERS_H
#define NORM_COMPILER_MODEL_BUFFERS_H

#include "compiler/model/Operation.h"

#include <optional>
#include <string_view>
#include <vector>

namespace norm {

/// Every buffer a kernel may take. The values are those of the C API's
/// normjit_buffer.
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
  V,
  CuSeqlens,
  Lse,
};
constexpr int kNumBufferSlots = 17;

/// "input", "residual_out", "q_weight", ...: the names of the kernel ops'
/// operands and results and of kernel parameters.
std::string_view getBufferSlotName(BufferSlot slot);
std::optional<BufferSlot> parseBufferSlot(std::string_view name);

/// One buffer of an operation's kernel.
struct BufferSpec {
  BufferSlot slot;
  ElementType type;
  /// Row length (2-D) or element count (1-D); 0 for a 1-D buffer whose
  /// length comes with the launch (attention's batch + 1 sequence offsets).
  int64_t cols;
  bool rows2D;  // rows x cols, with a row stride
  bool written; // an output
};

/// The buffers of the kernel of `spec` in parameter order: the inputs
/// (norm.fused_row: input, addend, skip, weight, bias, mean, variance;
/// norm.qk_norm_prologue: qkv, q_weight, k_weight; norm.column_stats:
/// input; norm.attention_kernel: q, k, v, q_weight, k_weight, cu_seqlens),
/// then the outputs (output, residual_out; q, k; mean, variance; output,
/// lse).
std::vector<BufferSpec> getBuffers(const OpSpec &spec);

/// Bytes all 2-D buffers move per logical row (per token for QK-Norm).
int64_t getBytesPerRow(const OpSpec &spec);

/// The most sequence offsets a launch's `cu_seqlens` may hold: they are i32,
/// and the grid (query heads x (query tiles + batch) CTAs) must stay
/// countable.
constexpr int64_t kMaxSequenceOffsets = int64_t(1) << 31;

/// The rule of the 1-D buffers whose length comes with the launch
/// (BufferSpec::cols 0: attention's `cu_seqlens`): batch + 1 offsets, at
/// least 2 (one sequence) and at most kMaxSequenceOffsets. InvalidArgument
/// naming `count` otherwise.
Status verifySequenceOffsetCount(int64_t count);

/// The sequences that `count` offsets delimit (the kernel's `batch`).
inline int64_t getBatchOfOffsets(int64_t count) { return count - 1; }

} // namespace norm

#endif // NORM_COMPILER_MODEL_BUFFERS_H
