//===- Device.h - a device, its loaded kernels and launches -----*- C++ -*-===//
//
// The device side of libnormjit: the primary context of one device, kernel
// variants loaded into it with their launch layout precomputed from the
// kernel signature, and the launch itself: fill a parameter array on the
// stack, one cuLaunchKernel.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_DEVICE_H
#define NORM_RUNTIME_DEVICE_H

#include "runtime/CudaDriver.h"
#include "runtime/KernelStore.h"
#include "runtime/Runtime.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace norm::jit {

/// The device of a context: shared by the context and every loaded kernel,
/// so that kernels stay valid after their context is destroyed.
struct DeviceState {
  std::shared_ptr<const CudaDriver> driver;
  cu::Device device = 0;
  cu::Context context = nullptr; // the device's primary context, retained
  DeviceInfo info;
  /// "driver=13000 cc=9.0": what a cubin in the cache was linked for.
  std::string cubinTag;

  /// The SMs decode's splits are computed for (at least 1).
  int64_t getSmCount() const { return std::max(info.multiprocessors, 1); }

  ~DeviceState();
};

/// Where each kernel parameter's value comes from: computed once per kernel
/// from its signature, so that a launch only copies values.
struct LaunchLayout {
  struct Param {
    /// Batch: the sequences of `slot` (cu_seqlens), its offsets less one.
    /// KvSplits, CacheCapacity, CacheBlocks: decode's and a cache's
    /// (DecodeLaunch). TableRows: the
    /// rows of `slot` (the rope table).
    enum class Kind : uint8_t {
      Buffer,
      Rows,
      Batch,
      Stride,
      KvSplits,
      CacheCapacity,
      CacheBlocks,
      TableRows,
      /// A TMA tensor map of buffer `slot` (128 bytes by value), encoded at
      /// each launch from the buffer's pointer, rows and stride.
      TensorMap
    } kind = Kind::Rows;
    uint8_t slot = 0; // BufferSlot of a buffer, a stride or the batch's
    bool rows2D = false;
    int32_t elementBytes = 0;
    int64_t alignment = 1; // bytes, for pointer and stride * elementBytes
    ElementType elementType = ElementType::f32; // a tensor map's
  };
  static constexpr int kMaxParams = 2 * kNumBufferSlots + 7;
  /// Tensor maps of a kernel at most (k and v).
  static constexpr int kMaxTensorMaps = 2;

  std::array<Param, kMaxParams> params{};
  int numParams = 0;
  /// Whether the kernel takes a batch (attention): the grid counts it.
  bool hasBatch = false;
  /// The box of its tensor maps (KernelSignature::getTensorMapBox).
  TensorMapBox tensorMapBox{};
  /// Whether it is decode attention's (kv_splits, cache_capacity).
  bool isDecode = false;
  /// Whether it writes a KV cache (cache_capacity; norm::hasKvCache).
  bool hasCache = false;
};

/// The launch values of the kernels with a KV cache: the CTAs decode's keys
/// split over (1 for K-prepare), each sequence's cache rows and a paged
/// cache's pages.
struct DecodeLaunch {
  int64_t splits = 1;
  int64_t capacity = 0;
  int64_t blocks = 0; // a paged cache's pages
};

/// Maps the signature's parameters onto buffer slots. Internal error when the
/// kernel does not take exactly the operation's buffers (getBuffers), with
/// their element types and shapes, a row count, a batch where the operation
/// has sequence offsets (and only there) and their row strides.
Status computeLaunchLayout(const OpSpec &spec, const KernelSignature &signature,
                           LaunchLayout &layout);

/// One kernel variant loaded on the device.
struct LoadedKernel {
  using Param = LaunchLayout::Param;
  static constexpr int kMaxParams = LaunchLayout::kMaxParams;

  std::shared_ptr<DeviceState> device;
  cu::Module module = nullptr;
  cu::Function function = nullptr;
  /// Local memory a thread of the kernel takes (the driver's
  /// CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES): non-zero where its registers
  /// spilled. The tuner never times such a kernel.
  int localBytes = 0;
  KernelBinary binary; // kept for bundles
  LaunchLayout layout;

  LoadedKernel() = default;
  LoadedKernel(const LoadedKernel &) = delete;
  LoadedKernel &operator=(const LoadedKernel &) = delete;
  ~LoadedKernel();

  const KernelSignature &getSignature() const { return binary.signature; }

  /// Whether every buffer meets this variant's alignment for `rows` rows.
  bool isAligned(const LaunchArgs &args, int64_t rows) const;
  /// For messages: the first buffer that is not aligned, and how.
  std::string describeMisalignment(const LaunchArgs &args, int64_t rows) const;
  /// For messages: what this variant needs, "align the pointers and row
  /// strides (in bytes) of q, k, v and output to 16 bytes".
  std::string describeAlignment() const;

  /// The batch of a launch with `args`: the sequences its cu_seqlens
  /// delimits (attention), else 0.
  int64_t getBatch(const LaunchArgs &args) const;

  /// Whether `rows` rows (and the batch of `args`) fit the grid of this
  /// variant (2^31 - 1 CTAs).
  Status checkRows(const LaunchArgs &args, int64_t rows,
                   int64_t splits = 1) const;

  /// Enqueues the kernel; `args` must have been checked. No allocation.
  /// Decode kernels need `decode` (and args with the workspace and
  /// semaphores).
  Status launch(const LaunchArgs &args, int64_t rows, cu::Stream stream,
                const DecodeLaunch *decode = nullptr) const;
};

/// Loads `binary` on the device: the cached cubin where there is one for
/// this driver, else the PTX linked by the driver (`linkedCubin` then holds
/// the result, for the cache). Checks the signature against `spec` and
/// computes the launch layout. CompileError when the driver rejects the PTX,
/// Unsupported when the kernel cannot launch its block on this device.
Status loadKernel(const std::shared_ptr<DeviceState> &device,
                  const OpSpec &spec, KernelBinary binary,
                  std::shared_ptr<const LoadedKernel> &kernel,
                  bool &linkedCubin, const Logger &log);

/// Device memory freed at the end of its scope.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  /// Allocates `bytes` (at least 1) and fills every byte with `fill`.
  static Status create(std::shared_ptr<DeviceState> device, size_t bytes,
                       unsigned char fill, DeviceBuffer &buffer);
  /// Allocates `bytes` (at least 1), left as they are.
  static Status allocate(std::shared_ptr<DeviceState> device, size_t bytes,
                         DeviceBuffer &buffer);
  void *get() const { return reinterpret_cast<void *>(pointer); }

private:
  std::shared_ptr<DeviceState> device;
  cu::DevicePtr pointer = 0;
};

/// Zeroes `count` decode semaphores at `semaphores` with cuMemsetD32Async on
/// `stream`, before the kernels enqueued after it (which leave them zero).
/// The device's context must be current.
Status zeroDecodeSemaphores(const CudaDriver &driver, const void *semaphores,
                            int64_t count, cu::Stream stream);

/// Per-stream scratch of launches, owned by a context: decode attention's
/// workspace for the partial outputs of its split keys and the semaphores
/// of their combine, a backward launch's f32 gradient partials (kernels on
/// one stream run one after another, so they may share it; kernels on two
/// streams may not). A stream's buffers are allocated at its first launch
/// that needs them, grown (after synchronizing that stream, whose kernels
/// may still use the old ones) when a launch needs more, and freed with the
/// context. New semaphores are zeroed once with cuMemsetD32Async on the
/// stream, before the kernel; every kernel leaves them zero.
class StreamScratch {
public:
  explicit StreamScratch(std::shared_ptr<DeviceState> device)
      : device(std::move(device)) {}

  /// Calls `launch(workspace, semaphores)` with the workspace
  /// (`workspaceElements` f32) and the semaphores (`semaphoreCount` i32) of
  /// `stream`, allocating or growing them first, under the lock, so that no
  /// other thread grows them while the launch picks them up.
  template <typename Launch>
  Status run(cu::Stream stream, int64_t workspaceElements,
             int64_t semaphoreCount, Launch &&launch) {
    std::lock_guard<std::mutex> lock(mutex);
    PerStream *scratch = nullptr;
    if (Status status =
            reserve(stream, workspaceElements, semaphoreCount, scratch);
        !status)
      return status;
    return launch(scratch->workspace.get(), scratch->semaphores.get());
  }

  /// Streams with scratch, and its bytes (for tests and logs).
  size_t getStreamCount();
  int64_t getBytes();

private:
  struct PerStream {
    cu::Stream stream = nullptr;
    DeviceBuffer workspace, semaphores;
    int64_t workspaceElements = 0, semaphoreCount = 0;
  };
  Status reserve(cu::Stream stream, int64_t workspaceElements,
                 int64_t semaphoreCount, PerStream *&scratch);

  std::shared_ptr<DeviceState> device;
  std::mutex mutex;
  std::vector<std::unique_ptr<PerStream>> streams;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_DEVICE_H
