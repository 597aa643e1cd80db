//===- normjit.hpp - libnormjit, a header-only C++ wrapper ------*- C++ -*-===//
//
// Owners and exceptions over the C API (normjit.h), compiled into the caller:
// libnormjit's ABI stays the C API, so this header works with any
// libnormjit.so of the same major version. C++17.
//
//   normjit::Context context;                    // libcuda.so.1, device 0
//   normjit_op_desc desc = normjit::opDesc();    // RMSNorm, bf16, eps 1e-6
//   desc.hidden = 4096;
//   desc.flags = NORMJIT_OP_WEIGHT;
//   normjit::Kernel kernel = context.kernel(desc);
//   normjit::LaunchArgs args;
//   args.set(NORMJIT_INPUT, x, NORMJIT_BF16, 4096)
//       .set(NORMJIT_WEIGHT, w, NORMJIT_BF16, 4096)
//       .set(NORMJIT_OUTPUT, y, NORMJIT_BF16, 4096);
//   kernel.launch(args, rows, stream);
//
// Attention (API 3) over variable-length sequences, token-major, with
// NeoX-style rotary embeddings of the whole head:
//   normjit::Kernel attention = context.kernel(normjit::attentionDesc(
//       128, 32, 8, NORMJIT_OP_CAUSAL, NORMJIT_ROPE_NEOX));
//   normjit::LaunchArgs a;
//   a.set(NORMJIT_Q, q, NORMJIT_BF16, 32 * 128, qkvStride)
//       .set(NORMJIT_K, k, NORMJIT_BF16, 8 * 128, qkvStride)
//       .set(NORMJIT_V, v, NORMJIT_BF16, 8 * 128, qkvStride)
//       .set(NORMJIT_CU_SEQLENS, cuSeqlens, NORMJIT_I32, batch + 1)
//       .set(NORMJIT_OUTPUT, out, NORMJIT_BF16, 32 * 128);
//   attention.launch(a, tokens, stream);
//
// A failing call throws normjit::Error: its status and normjit_last_error().
// Context and Kernel own their handle (move-only); a kernel stays valid after
// its context is gone. get() gives the C handle for the rest of the C API.
//
//===----------------------------------------------------------------------===//

#ifndef NORMJIT_HPP
#define NORMJIT_HPP

#include "normjit.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace normjit {

/// A failed libnormjit call. what() is "<status name>: <message>".
class Error : public std::runtime_error {
public:
  Error(normjit_status status, const std::string &message)
      : std::runtime_error(std::string(normjit_status_name(status)) + ": " +
                           message),
        status_(status), message_(message) {}

  normjit_status status() const noexcept { return status_; }
  /// normjit_last_error() at the failure.
  const std::string &message() const noexcept { return message_; }

private:
  normjit_status status_;
  std::string message_;
};

/// Throws Error for anything but NORMJIT_SUCCESS.
inline void check(normjit_status status) {
  if (status != NORMJIT_SUCCESS)
    throw Error(status, normjit_last_error());
}

/// Default context options (normjit_context_options_init).
inline normjit_context_options contextOptions() {
  normjit_context_options options;
  normjit_context_options_init(&options);
  return options;
}

/// RMSNorm, bf16 everywhere, eps 1e-6 (normjit_op_desc_init).
inline normjit_op_desc opDesc() {
  normjit_op_desc desc;
  normjit_op_desc_init(&desc);
  return desc;
}

/// Attention (NORMJIT_OP_ATTENTION) of `numQHeads` query and `numKvHeads`
/// key/value heads of `headDim`, bf16, scale 1/sqrt(headDim), no QK-Norm
/// unless `flags` has NORMJIT_OP_QK_RMS, _QK_L2 or _QK_MEAN_VAR
/// (NORMJIT_OP_CAUSAL, NORMJIT_OP_WRITE_LSE, NORMJIT_OP_WEIGHT: normjit.h),
/// rotary embeddings of style `rope` (normjit_rope) over `rotaryDim`
/// elements of each head (0: all) with base `ropeTheta` (0: 10000; 0 with
/// NORMJIT_OP_ROPE_TABLE, whose table gives the angles).
inline normjit_op_desc attentionDesc(int64_t headDim, int64_t numQHeads,
                                     int64_t numKvHeads, uint32_t flags = 0,
                                     int32_t rope = NORMJIT_ROPE_NONE,
                                     int64_t rotaryDim = 0,
                                     double ropeTheta = 0.0) {
  normjit_op_desc desc = opDesc();
  desc.kind = NORMJIT_OP_ATTENTION;
  desc.hidden = headDim;
  desc.num_q_heads = numQHeads;
  desc.num_kv_heads = numKvHeads;
  desc.flags = flags;
  desc.rope = rope;
  desc.rotary_dim = rotaryDim;
  desc.rope_theta = ropeTheta;
  return desc;
}

/// Decode attention (NORMJIT_OP_ATTENTION_DECODE, API 4): attentionDesc's
/// fields and flags (QK-Norm, NORMJIT_OP_WEIGHT, rotary embeddings); it is
/// causal by position, so NORMJIT_OP_CAUSAL and NORMJIT_OP_WRITE_LSE are
/// refused. Launch with the caches (LaunchArgs::setCache) and
/// NORMJIT_CACHE_SEQLENS.
inline normjit_op_desc attentionDecodeDesc(int64_t headDim, int64_t numQHeads,
                                           int64_t numKvHeads,
                                           uint32_t flags = 0,
                                           int32_t rope = NORMJIT_ROPE_NONE,
                                           int64_t rotaryDim = 0,
                                           double ropeTheta = 0.0) {
  normjit_op_desc desc = attentionDesc(headDim, numQHeads, numKvHeads, flags,
                                       rope, rotaryDim, ropeTheta);
  desc.kind = NORMJIT_OP_ATTENTION_DECODE;
  return desc;
}

/// The backward descs of the forward operation `forward` in launch order
/// (normjit_op_desc_get_backward, API 6): one for a row norm, the q heads'
/// and the k heads' for QK-Norm. `forward` has this header's layout.
inline std::vector<normjit_op_desc>
backwardDescs(const normjit_op_desc &forward) {
  size_t count = 0;
  check(normjit_op_desc_get_backward(&forward, nullptr, 0, &count));
  std::vector<normjit_op_desc> descs(count);
  check(normjit_op_desc_get_backward(&forward, descs.data(), count, &count));
  return descs;
}

/// The buffers of one launch.
class LaunchArgs {
public:
  LaunchArgs() noexcept { normjit_launch_args_init(&args_); }

  /// Sets one buffer (normjit_buffer, normjit_dtype; row_stride 0: cols).
  LaunchArgs &set(int32_t buffer, const void *data, int32_t dtype,
                  int64_t cols, int64_t rowStride = 0) {
    check(normjit_launch_args_set(&args_, buffer, data, dtype, cols,
                                  rowStride));
    return *this;
  }

  /// Decode's KV cache: k_cache and v_cache of `cacheRows` rows (batch x
  /// capacity) of `cols` elements, `rowStride` apart (0: cols).
  LaunchArgs &setCache(const void *kCache, const void *vCache, int32_t dtype,
                       int64_t cacheRows, int64_t cols,
                       int64_t rowStride = 0) {
    set(NORMJIT_K_CACHE, kCache, dtype, cols, rowStride);
    set(NORMJIT_V_CACHE, vCache, dtype, cols, rowStride);
    args_.cache_rows = cacheRows;
    return *this;
  }

  /// The rotary angles of NORMJIT_OP_ROPE_TABLE (API 5): `tableRows`
  /// positions of `cols` (rotary_dim) f32, `rowStride` floats apart (0:
  /// cols).
  LaunchArgs &setRopeTable(const void *table, int64_t tableRows, int64_t cols,
                           int64_t rowStride = 0) {
    set(NORMJIT_ROPE_TABLE, table, NORMJIT_F32, cols, rowStride);
    args_.rope_table_rows = tableRows;
    return *this;
  }

  const normjit_launch_args *get() const noexcept { return &args_; }

private:
  normjit_launch_args args_;
};

/// A kernel for one operation: launch it on a stream.
class Kernel {
public:
  Kernel() noexcept = default;
  /// Takes ownership of a kernel from the C API.
  explicit Kernel(normjit_kernel *kernel) noexcept : kernel_(kernel) {}
  Kernel(Kernel &&other) noexcept
      : kernel_(std::exchange(other.kernel_, nullptr)) {}
  Kernel &operator=(Kernel &&other) noexcept {
    if (this != &other) {
      normjit_kernel_destroy(kernel_);
      kernel_ = std::exchange(other.kernel_, nullptr);
    }
    return *this;
  }
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;
  ~Kernel() { normjit_kernel_destroy(kernel_); }

  /// Enqueues the kernel for `rows` rows on `stream` (a CUstream; nullptr:
  /// the legacy default stream). Asynchronous; see normjit_kernel_launch.
  void launch(const LaunchArgs &args, int64_t rows,
              void *stream = nullptr) const {
    check(normjit_kernel_launch(kernel_, args.get(), rows, stream));
  }

  /// The configuration launches of `rows` rows run.
  normjit_launch_config config(int64_t rows) const {
    normjit_launch_config config{};
    check(normjit_kernel_get_config(kernel_, rows, &config));
    return config;
  }

  /// The whole configuration, attention's block_n and stages included.
  normjit_launch_config2 config2(int64_t rows) const {
    normjit_launch_config2 config{};
    check(normjit_kernel_get_config2(kernel_, rows, &config));
    return config;
  }

  /// How launches of `rows` rows were planned; with `candidates`, also the
  /// tuning candidates of their bucket timed in this process.
  normjit_tuning_info
  tuning(int64_t rows, std::vector<normjit_candidate> *candidates = nullptr)
      const {
    return getTuning(normjit_kernel_get_tuning, rows, candidates);
  }

  /// tuning() with whole configurations (attention's candidates).
  normjit_tuning_info
  tuning2(int64_t rows, std::vector<normjit_candidate2> *candidates) const {
    return getTuning(normjit_kernel_get_tuning2, rows, candidates);
  }

  const normjit_kernel *get() const noexcept { return kernel_; }
  explicit operator bool() const noexcept { return kernel_ != nullptr; }

private:
  template <typename Candidate, typename Get>
  normjit_tuning_info getTuning(Get get, int64_t rows,
                                std::vector<Candidate> *candidates) const {
    normjit_tuning_info info{};
    info.struct_size = sizeof(info);
    check(get(kernel_, rows, &info, nullptr, 0));
    if (candidates) {
      candidates->resize(info.num_candidates);
      check(get(kernel_, rows, &info, candidates->data(), candidates->size()));
      candidates->resize(std::min(candidates->size(), info.num_candidates));
    }
    return info;
  }

  normjit_kernel *kernel_ = nullptr;
};

/// A driver, a device and the caches of kernels built for it.
class Context {
public:
  /// Default options: libcuda.so.1, device 0, tuning and disk cache on.
  Context() : Context(contextOptions()) {}
  explicit Context(const normjit_context_options &options) {
    check(normjit_context_create(&options, &context_));
  }
  Context(Context &&other) noexcept
      : context_(std::exchange(other.context_, nullptr)) {}
  Context &operator=(Context &&other) noexcept {
    if (this != &other) {
      normjit_context_destroy(context_);
      context_ = std::exchange(other.context_, nullptr);
    }
    return *this;
  }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ~Context() { normjit_context_destroy(context_); }

  /// Builds, tunes and loads the kernel of `desc` (NORMJIT_KERNEL_* flags).
  Kernel kernel(const normjit_op_desc &desc, uint32_t flags = 0) const {
    normjit_kernel *kernel = nullptr;
    check(normjit_kernel_create(context_, &desc, flags, &kernel));
    return Kernel(kernel);
  }

  /// A kernel that runs `config` at every row count (benchmarks).
  Kernel kernel(const normjit_op_desc &desc,
                const normjit_launch_config &config,
                uint32_t flags = 0) const {
    normjit_kernel *kernel = nullptr;
    check(normjit_kernel_create_with_config(context_, &desc, &config, flags,
                                            &kernel));
    return Kernel(kernel);
  }

  /// A kernel that runs the whole `config` (attention: block_n, stages) at
  /// every row count.
  Kernel kernel(const normjit_op_desc &desc,
                const normjit_launch_config2 &config,
                uint32_t flags = 0) const {
    normjit_kernel *kernel = nullptr;
    check(normjit_kernel_create_with_config2(context_, &desc, &config, flags,
                                             &kernel));
    return Kernel(kernel);
  }

  /// Writes a kernel bundle for the operations (tuning them first).
  void writeBundle(const std::vector<normjit_op_desc> &descs,
                   const std::string &path) const {
    check(normjit_context_write_bundle(context_, descs.data(), descs.size(),
                                       path.c_str()));
  }

  normjit_context *get() const noexcept { return context_; }

private:
  normjit_context *context_ = nullptr;
};

} // namespace normjit

#endif // NORMJIT_HPP
