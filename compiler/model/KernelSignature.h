//===- KernelSignature.h - the ABI of a generated kernel --------*- C++ -*-===//
//
// What a host needs to launch one generated kernel: its name, its parameter
// list, the grid and block formula and its shared memory, all derived from
// the operation and launch configuration by describeKernel. Plain C++ (no
// MLIR, no LLVM) so that a runtime-only build can read kernel bundles and
// check every signature it loads.
//
// Parameter order of every kernel (only the buffers an op has are present):
//   1. one pointer per buffer, in the order of the kernel op's operands, then
//      its results (norm.fused_row: input, addend, skip, weight, bias, mean,
//      variance, output, residual_out; norm.qk_norm_prologue: qkv, q_weight,
//      k_weight, q, k; norm.column_stats: input, mean, variance);
//   2. `rows` (i64): the logical row count (tokens for the QK-Norm prologue
//      and attention); attention then takes `batch` (i64), the sequences
//      that `cu_seqlens` (batch + 1 offsets) delimits; decode then
//      `kv_splits` and `cache_capacity` (i64), a paged cache's pages
//      `cache_blocks` (i64); a rope table's rows
//      `rope_table_rows` (i64);
//   3. one row stride (i64, in elements) per 2-D buffer, in buffer order;
//   4. the sm_90a attention family: a CUtensorMap (128 bytes, by value, a
//      grid constant) of `k`, then of `v` (`k_tensor_map`, `v_tensor_map`):
//      boxes of block_n rows x 64 columns, 128-byte swizzle
//      (getTensorMapBox).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_KERNELSIGNATURE_H
#define NORM_COMPILER_MODEL_KERNELSIGNATURE_H

#include "compiler/model/Launch.h"
#include "compiler/model/Target.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace norm {

struct KernelParam {
  enum class Kind {
    Buffer,
    Rows,
    Batch,
    RowStride,
    KvSplits,
    CacheCapacity,
    RopeTableRows,
    /// A paged cache's pages (the caches' rows / block size).
    CacheBlocks,
    /// A TMA tensor map of the buffer named by getTensorMapSource, which
    /// the host encodes before each launch (128 bytes by value).
    TensorMap,
  };
  Kind kind = Kind::Buffer;
  /// The operand or result name: "input", "addend", "weight", "output", ...
  /// Strides are named after their buffer with "_stride".
  std::string name;
  // Buffers only:
  ElementType elementType = ElementType::f32;
  bool rowMajor2D = false;   // rows x hidden (has a stride parameter)
  bool readOnly = false;     // an input (loaded with ld.global.nc unless
                             // an output may alias it)
  int64_t alignment = 1;     // bytes the vector kernel needs of the pointer
                             // and of (stride * element bytes)
  /// An in-place output: the input buffer a launch may pass for it
  /// (BufferSpec::over); empty for none.
  std::string over;

  bool operator==(const KernelParam &other) const {
    return kind == other.kind && name == other.name &&
           elementType == other.elementType && rowMajor2D == other.rowMajor2D &&
           readOnly == other.readOnly && alignment == other.alignment &&
           over == other.over;
  }
};

/// The box a tensor map parameter's TMA loads bring: rows x columns
/// elements, rows of `swizzle` bytes swizzled (TMA's 128-byte mode).
struct TensorMapBox {
  int64_t rows, columns, swizzle;
};

/// The buffer a TensorMap parameter maps ("k" for "k_tensor_map").
std::string getTensorMapSource(const KernelParam &param);

struct KernelSignature {
  std::string name;          // the gpu.func / PTX .entry symbol
  std::string kind;          // "fused_row", "qk_norm_prologue", "column_stats"
  int64_t hidden = 0;        // row length of the logical rows
  LaunchConfig launch;
  std::vector<KernelParam> params;
  /// grid.x = ceil(rows * rowMultiplier / rowsPerCta), or fixedGridX if set;
  /// attention: rowMultiplier (query heads) * (ceil(rows / rowsPerCta) +
  /// batch), the query tiles of every sequence (each sequence's last may
  /// be partial) of every head.
  int64_t rowMultiplier = 1;
  int64_t fixedGridX = 0;
  /// A persistent grid (backward kernels): at most this many CTAs, each
  /// taking the groups of rows it holds at once grid.x apart (the kernel
  /// reads grid.x; 0: rowsPerCta rows per CTA).
  int64_t maxGridX = 0;
  /// A persistent grid's CTAs come in multiples of this
  /// (getBackwardGridMultiple).
  int64_t gridMultiple = 1;
  /// Programmatic dependent launch (TargetOptions::pdl): the kernel waits
  /// for the grid before it after its prologue and lets the next start.
  bool pdl = false;
  int64_t blockThreads = 0;  // = launch.getThreadsPerCta()
  int64_t sharedBytes = 0;   // dynamic shared memory per CTA
  /// The scalar (vector = 1) kernel of the same op, to launch instead when a
  /// buffer pointer or row stride misses the `alignment` this one needs;
  /// empty when there is none in the same bundle.
  std::string fallback;

  /// Decode attention: query heads per kv head, the rows of a query tile
  /// per token (1 otherwise); rowMultiplier is the kv heads.
  int64_t queryGroup = 1;

  /// decode: rowMultiplier (kv heads) x splits x getQueryTiles(rows,
  /// queryGroup, rowsPerCta, batch).
  int64_t getGridX(int64_t rows, int64_t batch = 0, int64_t splits = 1) const;
  bool isAttention() const { return launch.isAttention(); }
  bool isDecode() const { return kind == "attention_decode_kernel"; }
  /// The box of its tensor maps (the sm_90a attention family).
  TensorMapBox getTensorMapBox() const { return {launch.blockN, 64, 128}; }
  /// A one-line formula for people, e.g. "ceil(rows * 40 / 4)".
  std::string getGridFormula() const;

  /// Every field but `fallback` (which names another kernel of a bundle).
  bool describesSameKernel(const KernelSignature &other) const {
    return name == other.name && kind == other.kind && hidden == other.hidden &&
           launch == other.launch && params == other.params &&
           rowMultiplier == other.rowMultiplier &&
           fixedGridX == other.fixedGridX && maxGridX == other.maxGridX &&
           gridMultiple == other.gridMultiple && queryGroup == other.queryGroup &&
           pdl == other.pdl &&
           blockThreads == other.blockThreads &&
           sharedBytes == other.sharedBytes;
  }

  /// Whether a launch may pass the buffer of `param` for another one too
  /// (an in-place output, or the input it overwrites): the kernel claims no
  /// noalias for it.
  bool mayAlias(const KernelParam &param) const;

  /// A JSON object (stable field names; see KernelSignature.cpp).
  std::string toJson() const;
  /// Parses what toJson wrote; nullopt and `error` set on malformed input.
  static std::optional<KernelSignature> fromJson(std::string_view json,
                                                 std::string &error);
};

/// The kernel's symbol: a readable prefix, a hash of the operation's
/// canonical text (every field the generated code depends on), the launch
/// suffix and, for rows not kept in registers, `_smem` or `_stream`
/// (getRowStorage on `target`), e.g.
/// `norm_rms_add_h4096_bf16_bf16_1f2e3d4c_v8_t128_w4_r1`.
std::string getKernelName(const OpSpec &spec, const LaunchConfig &launch,
                          const TargetOptions &target);

/// The launch ABI of the kernel of `spec` with `launch` on `target`: what
/// the kernel generator builds and the runtime launches, and what a kernel
/// loaded from a cache or bundle must equal. InvalidArgument when `spec` or
/// `launch` breaks a rule (verifyOpSpec, verifyLaunchFor). The scalar
/// fallback's name is left empty: whether one exists is the bundle's
/// business.
Status describeKernel(const OpSpec &spec, const LaunchConfig &launch,
                      const TargetOptions &target, KernelSignature &signature);

/// A JSON array of signatures, and its inverse.
std::string signaturesToJson(const std::vector<KernelSignature> &signatures);
std::optional<std::vector<KernelSignature>>
signaturesFromJson(std::string_view json, std::string &error);

} // namespace norm

#endif // NORM_COMPILER_MODEL_KERNELSIGNATURE_H
