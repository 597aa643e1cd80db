//===- Runtime.h - libnormjit, the C++ API ----------------------*- C++ -*-===//
//
// libnormjit builds normalization kernels for one operation at a time,
// specialised for its hidden size and autotuned per row-count bucket on the
// device it runs on, and launches them on the caller's CUDA stream.
//
//   ContextOptions options;                 // device 0, tuning, disk cache
//   std::unique_ptr<Context> context;
//   if (Status s = Context::create(options, context); !s) ...
//   OpSpec rms;                              // compiler/Compiler.h
//   rms.kind = OpSpec::Kind::RMSNorm; rms.hidden = 4096; rms.hasWeight = true;
//   std::shared_ptr<const Kernel> kernel;
//   if (Status s = context->getKernel(rms, {}, kernel); !s) ...
//   LaunchArgs args;
//   args.set(BufferSlot::Input, x, ElementType::bf16, 4096)
//       .set(BufferSlot::Weight, w, ElementType::bf16, 4096)
//       .set(BufferSlot::Output, y, ElementType::bf16, 4096);
//   Status s = kernel->launch(args, rows, stream);
//
// getKernel compiles (in process), tunes and loads at the first request and
// serves later ones, from any thread, from memory; the disk cache makes the
// next process fast too. launch() checks every buffer, then enqueues one
// kernel: no allocation, no synchronisation, safe inside CUDA graph capture.
// Errors are Status values (Status.h); nothing throws: an exception inside
// (std::bad_alloc, or one thrown by an injected compiler or log sink) comes
// back as OutOfMemory or Internal.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_RUNTIME_H
#define NORM_RUNTIME_RUNTIME_H

#include "compiler/model/KernelModel.h"
#include "runtime/Candidates.h"
#include "runtime/KernelCompiler.h"
#include "runtime/Log.h"
#include "compiler/model/KernelModel.h"
#include "runtime/Status.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace norm::jit {

/// One device buffer of a launch: `cols` elements per row and `rowStride`
/// elements from one row to the next (0: `cols`, contiguous rows). 1-D
/// buffers (weights, biases, statistics) have `cols` elements and stride 0.
struct TensorArg {
  const void *data = nullptr;
  ElementType type = ElementType::bf16;
  int64_t cols = 0;
  int64_t rowStride = 0;
  /// The rows of a buffer whose rows are not the launch's
  /// (BufferSpec::ownRows: decode's KV caches, batch x cache capacity; the
  /// rope table, its positions); 0 for every other buffer.
  int64_t rows = 0;
};

/// The buffers of one launch by slot; a slot the operation does not use
/// must stay empty (data null).
struct LaunchArgs {
  std::array<TensorArg, kNumBufferSlots> tensors{};

  LaunchArgs &set(BufferSlot slot, const void *data, ElementType type,
                  int64_t cols, int64_t rowStride = 0) {
    tensors[static_cast<int>(slot)] = {data, type, cols, rowStride};
    return *this;
  }
  /// Decode's KV cache: k_cache and v_cache of `cacheRows` rows (batch x
  /// cache capacity).
  LaunchArgs &setCache(const void *kCache, const void *vCache,
                       ElementType type, int64_t cacheRows, int64_t cols,
                       int64_t rowStride = 0) {
    set(BufferSlot::KCache, kCache, type, cols, rowStride);
    set(BufferSlot::VCache, vCache, type, cols, rowStride);
    tensors[static_cast<int>(BufferSlot::KCache)].rows = cacheRows;
    tensors[static_cast<int>(BufferSlot::VCache)].rows = cacheRows;
    return *this;
  }
  /// Rotary angles: `rows` positions of cos and sin (f32, rotary_dim
  /// columns, `rowStride` floats apart).
  LaunchArgs &setRopeTable(const void *table, int64_t rows, int64_t cols,
                           int64_t rowStride = 0) {
    set(BufferSlot::RopeTable, table, ElementType::f32, cols, rowStride);
    tensors[static_cast<int>(BufferSlot::RopeTable)].rows = rows;
    return *this;
  }
  const TensorArg &operator[](BufferSlot slot) const {
    return tensors[static_cast<int>(slot)];
  }
};

struct KernelOptions {
  /// Tune this operation when the context tunes; false: the heuristic.
  bool tune = true;
  /// Fail launches whose buffers the fast variant cannot access (alignment)
  /// instead of running the scalar variant (which is then not loaded).
  bool refuseMisaligned = false;
  /// Run this configuration at every row count instead of a planned one:
  /// benchmarks time each tuning candidate at their own row counts with it.
  /// It must be valid and fit the operation's rows (Candidates.h).
  std::optional<LaunchConfig> launch;
};

struct ContextOptions {
  int device = 0;
  /// The driver library to dlopen; empty: libcuda.so.1.
  std::string driverLibrary;
  /// Autotune new operations; NORMJIT_TUNE=0 turns tuning off as well.
  bool tuning = true;
  /// Keep compiled kernels and tuning results on disk.
  bool diskCache = true;
  /// Empty: $NORMJIT_CACHE_DIR, $XDG_CACHE_HOME/norm-opt, ~/.cache/norm-opt.
  std::string cacheDirectory;
  /// Kernel bundles (norm-tune) to serve plans and kernels from first.
  std::vector<std::string> bundles;
  /// Null: the built-in compiler (none in a runtime-only build).
  std::shared_ptr<KernelCompiler> compiler;
  /// PTX target; the chip is derived from the device when empty.
  std::string chip;
  int ptxVersion = 80;
  /// -1: NORMJIT_LOG (default warnings); else a LogLevel.
  int logLevel = -1;
  Logger::Sink logSink;
  /// Device memory a tuning run may take for scratch buffers; <= 0:
  /// kDefaultTuningScratchBytes (512 MiB). Buckets whose scratch would take
  /// more, or that the device cannot allocate, tune at fewer rows (halved
  /// down to the bucket's smallest row count) or run the heuristic.
  int64_t tuningScratchBytes = kDefaultTuningScratchBytes;
  /// Threads compiling tuning candidates; 0: the hardware's, at most 8.
  /// Fewer where the system refuses to start one.
  int compileThreads = 0;
  /// Programmatic dependent launch (compute capability 9.0 on;
  /// TargetOptions::pdl): every kernel loads its weights, waits for the
  /// grid before it in the stream and lets the next one start, and is
  /// launched with programmatic stream serialization (cuLaunchKernelEx), so
  /// that its prologue overlaps the tail of the kernel before it. Only where
  /// no kernel just before one in its stream writes the weights it reads.
  /// Kernel bundles (compiled without it) are not used.
  bool pdl = false;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  int64_t maxSharedBytesOptin = 0;
  int driverVersion = 0;
  std::string chip; // the PTX target: sm_80, sm_89 or sm_90
  /// Name, compute capability and SM count: the device in tuning keys.
  std::string getTuningIdentity() const;
};

/// How one row bucket of a kernel was configured.
struct BucketReport {
  enum class Source { Tuned, TuningCache, Bundle, Heuristic, Fixed };
  struct Candidate {
    LaunchConfig launch;
    double microseconds = -1; // < 0: failed
    std::string failure;
  };
  RowBucket bucket = RowBucket::One;
  Source source = Source::Heuristic;
  LaunchConfig launch;                      // what launches of the bucket run
  std::optional<LaunchConfig> scalarLaunch; // for misaligned buffers
  int64_t tunedRows = 0;                    // rows the candidates ran at
  std::vector<Candidate> candidates;        // timed in this process
  std::string tuningReport;                 // table, also from the cache

  static std::string_view getSourceName(Source source);
};

class Context;
class ContextImpl;
class StreamScratch;
struct DecodeLaunch;
struct LoadedKernel;

/// A loaded, tuned kernel for one operation; shared, immutable, and valid
/// after its context is destroyed (it keeps the modules it uses).
class Kernel {
public:
  ~Kernel();

  /// Checks `args` against the operation (presence, element types, row
  /// lengths, strides, no output overlapping another buffer, alignment) and
  /// enqueues the kernel for `rows` rows on `stream` (a CUstream; null is
  /// the legacy default stream). Buffers the fast variant cannot access go
  /// to the scalar variant unless the kernel refuses misaligned buffers.
  /// Zero rows: nothing, success.
  ///
  /// Kernels assume their buffers do not alias (inputs are read through the
  /// read-only cache, long rows may be read again after outputs are
  /// written), so an output that shares a byte with any other buffer is
  /// refused with InvalidArgument, except the row input an in-place row
  /// kernel may write it over (OpSpec::outputOver, residualOver): exactly
  /// that buffer, same address and row stride, or none of its bytes.
  /// Buffers interleaved with the same row stride (the halves of one packed
  /// tensor) do not overlap.
  ///
  /// Decode attention (OpKind::AttentionDecode) also takes the KV caches
  /// (LaunchArgs::setCache) and cache_seqlens; its workspace and semaphores
  /// are the context's, per stream, allocated (and the semaphores zeroed)
  /// at the first launch on a stream that needs more than it has: leave
  /// them empty. A decode kernel whose context is gone fails to launch.
  ///
  /// A backward row kernel (OpSpec::backward) writes its f32 weight and
  /// bias gradient partials to the context's per-stream scratch (leave
  /// weight_grad_partials and bias_grad_partials empty), then its column
  /// sums reduce them into weight_grad and bias_grad (param type, the
  /// weight's length) on the same stream: one call, two or three kernels,
  /// the same bits every run. With zero rows it only zeroes weight_grad and
  /// bias_grad (the sums over no rows); the other buffers may be null.
  Status launch(const LaunchArgs &args, int64_t rows, void *stream) const;

  /// The configuration a launch of `rows` rows with `args` would run.
  Status getLaunchFor(const LaunchArgs &args, int64_t rows,
                      LaunchConfig &launch) const;

  const OpSpec &getSpec() const { return spec; }
  const BucketReport &getReport(RowBucket bucket) const {
    return plans[static_cast<int>(bucket)].report;
  }

  /// One column sum of a backward kernel: the kernel that reduces the
  /// `partials` into the caller's `gradient`.
  struct GradientSumKernel {
    BufferSlot partials, gradient;
    std::shared_ptr<const Kernel> kernel;

    /// Sums `partialRows` f32 rows of `stride` floats at `data` (the
    /// partials) into `output` (the gradient) on `stream`.
    Status launch(const void *data, int64_t stride, const TensorArg &output,
                  int64_t partialRows, void *stream) const;
    /// The variant of the sum that takes `sumArgs` (the gradient alone; the
    /// partials are aligned for any) for `partialRows` rows, null if none.
    const LoadedKernel *getVariant(const LaunchArgs &sumArgs,
                                   int64_t partialRows) const;
  };

private:
  friend class ContextImpl;
  struct Plan {
    std::shared_ptr<const LoadedKernel> fast;
    std::shared_ptr<const LoadedKernel> scalar; // null: none fits
    BucketReport report;
  };
  struct ExpectedBuffer {
    bool present = false;
    bool rows2D = false;
    bool written = false;
    ElementType type = ElementType::f32;
    int64_t cols = 0;
    bool ownRows = false; // rows of its own (TensorArg::rows)
    bool scratch = false; // the runtime's: the caller leaves it empty
    /// In place: the input the launch may pass for this output, exactly.
    std::optional<BufferSlot> over;
  };

  Kernel() = default;
  Status launchChecked(const LaunchArgs &args, int64_t rows,
                       void *stream) const;
  /// `decode` (decode attention only): its splits and cache capacity.
  Status check(const LaunchArgs &args, int64_t rows,
               const LoadedKernel *&variant,
               DecodeLaunch *decode = nullptr) const;
  /// The KV cache parameters of a launch checked buffer by buffer (decode
  /// attention, K-prepare into a cache: norm::hasKvCache).
  Status getDecodeLaunch(const LaunchArgs &args, int64_t rows,
                         const LoadedKernel &variant,
                         DecodeLaunch &decode) const;
  /// InvalidArgument when an output shares a byte with another buffer.
  Status checkOverlap(const LaunchArgs &args, int64_t rows) const;
  /// The gradients of a backward launch whose sums reduce `partialRows`
  /// rows: empty partials, each gradient its weight's length and type and
  /// aligned for a variant of its sum, no two sharing a byte. Checked before
  /// anything is enqueued, zero rows too.
  Status checkGradients(const LaunchArgs &args, int64_t partialRows) const;
  /// A backward launch of no rows: zero weight and bias gradients.
  Status zeroGradients(const LaunchArgs &args, void *stream) const;
  /// A backward launch: the row kernel `variant` into the stream's
  /// partials, then the column sums.
  Status launchBackward(const LaunchArgs &args, int64_t rows,
                        const LoadedKernel &variant, void *stream) const;

  OpSpec spec;
  bool refuseMisaligned = false;
  std::array<ExpectedBuffer, kNumBufferSlots> expected{};
  std::array<Plan, kNumRowBuckets> plans;
  /// Decode attention and backward kernels: the context's per-stream
  /// scratch (gone with the context); decode's splits fill smCount SMs.
  std::weak_ptr<StreamScratch> streamScratch;
  int64_t smCount = 1;
  /// A backward kernel's column sums, in launch order (getGradientSums).
  std::vector<GradientSumKernel> gradientSums;
};

class Context {
public:
  /// Loads the driver, opens the device (its primary context, shared with
  /// the CUDA runtime) and the caches. NoDriver / NoDevice where there is no
  /// driver or device.
  static Status create(const ContextOptions &options,
                       std::unique_ptr<Context> &context);
  ~Context();

  /// The kernel for `spec`: built, tuned and loaded at the first request
  /// (several threads asking at once share one build), from memory after.
  Status getKernel(const OpSpec &spec, const KernelOptions &options,
                   std::shared_ptr<const Kernel> &kernel);

  /// Writes a kernel bundle with the plans of `specs` and every kernel they
  /// use (tuning them first where needed).
  Status writeBundle(const std::vector<OpSpec> &specs, const std::string &path);

  const DeviceInfo &getDeviceInfo() const;
  /// Whether getKernel tunes (options, NORMJIT_TUNE and a compiler).
  bool isTuning() const;

  // Device memory for tools, tests and examples; not for the launch path.
  Status allocate(size_t bytes, void *&pointer);
  Status release(void *pointer);
  Status copyToDevice(void *device, const void *host, size_t bytes);
  Status copyToHost(void *host, const void *device, size_t bytes);
  Status synchronize(void *stream);

private:
  explicit Context(std::shared_ptr<ContextImpl> impl);
  std::shared_ptr<ContextImpl> impl;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_RUNTIME_H
