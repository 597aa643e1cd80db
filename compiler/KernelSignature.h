//===- KernelSignature.h - the ABI of a generated kernel --------*- C++ -*-===//
//
// What a host needs to launch one generated kernel: its name, its parameter
// list, the grid and block formula and its shared memory. Plain C++ (no MLIR,
// no LLVM) so that a runtime-only build can read kernel bundles.
//
// Parameter order of every kernel (only the buffers an op has are present):
//   1. one pointer per buffer, in the order of the kernel op's operands, then
//      its results (norm.fused_row: input, addend, skip, weight, bias, mean,
//      variance, output, residual_out; norm.qk_norm_prologue: qkv, q_weight,
//      k_weight, q, k; norm.column_stats: input, mean, variance);
//   2. `rows` (i64): the logical row count (tokens for the QK-Norm prologue);
//   3. one row stride (i64, in elements) per 2-D buffer, in buffer order.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_KERNELSIGNATURE_H
#define NORM_COMPILER_KERNELSIGNATURE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

enum class ElementType { f32, f16, bf16 };

/// Bytes per element.
int64_t getElementBytes(ElementType type);
std::string_view getElementTypeName(ElementType type);
std::optional<ElementType> parseElementType(std::string_view name);

/// The launch configuration of a row kernel (see #norm.launch).
struct LaunchConfig {
  int64_t vector = 1;        // elements per access
  int64_t threadsPerRow = 32;
  int64_t warps = 1;         // warps per CTA
  int64_t rowsPerCta = 1;    // rows one CTA handles in all

  int64_t getThreadsPerCta() const { return warps * 32; }
  int64_t getConcurrentRows() const { return warps * 32 / threadsPerRow; }
  /// `v8_t128_w4_r1`: the suffix of kernel names.
  std::string getMangledSuffix() const;
  bool operator==(const LaunchConfig &other) const {
    return vector == other.vector && threadsPerRow == other.threadsPerRow &&
           warps == other.warps && rowsPerCta == other.rowsPerCta;
  }
};

struct KernelParam {
  enum class Kind { Buffer, Rows, RowStride };
  Kind kind = Kind::Buffer;
  /// The operand or result name: "input", "addend", "weight", "output", ...
  /// Strides are named after their buffer with "_stride".
  std::string name;
  // Buffers only:
  ElementType elementType = ElementType::f32;
  bool rowMajor2D = false;   // rows x hidden (has a stride parameter)
  bool readOnly = false;     // an input (loaded with ld.global.nc)
  int64_t alignment = 1;     // bytes the vector kernel needs of the pointer
                             // and of (stride * element bytes)
};

struct KernelSignature {
  std::string name;          // the gpu.func / PTX .entry symbol
  std::string kind;          // "fused_row", "qk_norm_prologue", "column_stats"
  int64_t hidden = 0;        // row length of the logical rows
  LaunchConfig launch;
  std::vector<KernelParam> params;
  /// grid.x = ceil(rows * rowMultiplier / rowsPerCta), or fixedGridX if set.
  int64_t rowMultiplier = 1;
  int64_t fixedGridX = 0;
  int64_t blockThreads = 0;  // = launch.getThreadsPerCta()
  int64_t sharedBytes = 0;   // dynamic shared memory per CTA
  /// The scalar (vector = 1) kernel of the same op, to launch instead when a
  /// buffer pointer or row stride misses the `alignment` this one needs;
  /// empty when there is none in the same bundle.
  std::string fallback;

  int64_t getGridX(int64_t rows) const;
  /// A one-line formula for people, e.g. "ceil(rows * 40 / 4)".
  std::string getGridFormula() const;

  /// A JSON object (stable field names; see KernelSignature.cpp).
  std::string toJson() const;
  /// Parses what toJson wrote; nullopt and `error` set on malformed input.
  static std::optional<KernelSignature> fromJson(std::string_view json,
                                                 std::string &error);
};

/// A JSON array of signatures, and its inverse.
std::string signaturesToJson(const std::vector<KernelSignature> &signatures);
std::optional<std::vector<KernelSignature>>
signaturesFromJson(std::string_view json, std::string &error);

} // namespace norm

#endif // NORM_COMPILER_KERNELSIGNATURE_H
