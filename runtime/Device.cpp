//===- Device.cpp - a device, its loaded kernels and launches -------------===//

#include "runtime/Device.h"

#include "runtime/TensorMap.h"

#include <cstring>
#include <sstream>

using namespace norm;
using namespace norm::jit;

DeviceState::~DeviceState() {
  if (context)
    (void)driver->devicePrimaryCtxRelease(device);
}

LoadedKernel::~LoadedKernel() {
  if (!module)
    return;
  ScopedContext scope(*device->driver, device->context);
  (void)device->driver->moduleUnload(module);
}

/// The effective row stride of a buffer.
static int64_t getRowStride(const TensorArg &tensor) {
  return tensor.rowStride ? tensor.rowStride : tensor.cols;
}

/// Whether one buffer meets one parameter's alignment.
static bool isParamAligned(const LaunchLayout::Param &param,
                           const TensorArg &tensor, int64_t rows) {
  if (param.alignment <= 1)
    return true;
  auto address = reinterpret_cast<uintptr_t>(tensor.data);
  if (address % param.alignment != 0)
    return false;
  // A single row never steps by its stride.
  // Decode's caches have rows of their own.
  if (tensor.rows)
    rows = tensor.rows;
  return !param.rows2D || rows <= 1 ||
         (getRowStride(tensor) * param.elementBytes) % param.alignment == 0;
}

bool LoadedKernel::isAligned(const LaunchArgs &args, int64_t rows) const {
  for (int i = 0; i < layout.numParams; ++i) {
    const Param &param = layout.params[i];
    if (param.kind == Param::Kind::Buffer &&
        !isParamAligned(param, args.tensors[param.slot], rows))
      return false;
  }
  return true;
}

std::string LoadedKernel::describeMisalignment(const LaunchArgs &args,
                                               int64_t rows) const {
  for (int i = 0; i < layout.numParams; ++i) {
    const Param &param = layout.params[i];
    const TensorArg &tensor = args.tensors[param.slot];
    if (param.kind != Param::Kind::Buffer ||
        isParamAligned(param, tensor, rows))
      continue;
    std::ostringstream os;
    os << "buffer '" << getBufferSlotName(static_cast<BufferSlot>(param.slot))
       << "' ";
    if (reinterpret_cast<uintptr_t>(tensor.data) % param.alignment != 0)
      os << "at " << tensor.data << " is not aligned to";
    else
      os << "has a row stride of " << getRowStride(tensor)
         << " elements, not a multiple of";
    os << " the " << param.alignment << " bytes kernel "
       << getSignature().launch.getMangledSuffix() << " needs";
    return os.str();
  }
  return "all buffers are aligned";
}

int64_t LoadedKernel::getBatch(const LaunchArgs &args) const {
  return layout.hasBatch
             ? getBatchOfOffsets(args[BufferSlot::CuSeqlens].cols)
             : 0;
}

std::string LoadedKernel::describeAlignment() const {
  // Grouped by alignment, widest first.
  std::string message;
  for (int64_t alignment = kMaxAccessBytes; alignment > 1; alignment /= 2) {
    std::vector<std::string> names;
    bool rows2D = false;
    for (int i = 0; i < layout.numParams; ++i) {
      const Param &param = layout.params[i];
      if (param.kind != Param::Kind::Buffer || param.alignment != alignment ||
          param.alignment <= param.elementBytes)
        continue;
      names.push_back(std::string(
          getBufferSlotName(static_cast<BufferSlot>(param.slot))));
      rows2D |= param.rows2D;
    }
    if (names.empty())
      continue;
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
      list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") +
              names[i];
    message += std::string(message.empty() ? "align" : "; align") +
               (rows2D ? " the pointers and row strides (in bytes) of "
                       : " the pointers of ") +
               list + " to " + std::to_string(alignment) + " bytes";
  }
  return message.empty() ? "it needs no alignment" : message;
}

Status LoadedKernel::checkRows(const LaunchArgs &args, int64_t rows,
                               int64_t splits) const {
  // Rows below 2^60 bytes, a batch below 2^31 (Kernel::check) and at most
  // kMaxDecodeSplits: no overflow.
  int64_t batch = getBatch(args);
  int64_t gridX = getSignature().getGridX(rows, batch, splits);
  if (gridX > 0x7fffffff)
    return Status::error(ErrorCode::InvalidArgument,
                         "too many rows: " + std::to_string(rows) +
                             (layout.hasBatch
                                  ? " in " + std::to_string(batch) +
                                        " sequences"
                                  : std::string()) +
                             " need " + std::to_string(gridX) + " CTAs");
  return Status::success();
}

Status LoadedKernel::launch(const LaunchArgs &args, int64_t rows,
                            cu::Stream stream,
                            const DecodeLaunch *decode) const {
  if (layout.hasCache &&
      (!decode || decode->capacity < 1 || decode->splits < 1 ||
       decode->splits > kMaxDecodeSplits))
    return Status::error(ErrorCode::Internal,
                         "KV cache kernel " + getSignature().name +
                             " launched without its splits and cache "
                             "capacity");
  int64_t splits = decode ? decode->splits : 1;
  // Kernel::launch checked it already; the tuner launches variants directly.
  if (Status status = checkRows(args, rows, splits); !status)
    return status;
  // Every parameter is 8 bytes (a pointer or an i64) but a tensor map's
  // 128, encoded here before anything is enqueued.
  uint64_t values[kMaxParams];
  void *pointers[kMaxParams];
  cu::TensorMap maps[LaunchLayout::kMaxTensorMaps];
  int mapCount = 0;
  for (int i = 0; i < layout.numParams; ++i) {
    const Param &param = layout.params[i];
    const TensorArg &tensor = args.tensors[param.slot];
    if (param.kind == Param::Kind::TensorMap) {
      if (mapCount == LaunchLayout::kMaxTensorMaps)
        return Status::error(ErrorCode::Internal,
                             "too many tensor maps for " + getSignature().name);
      TensorMapSpec map;
      map.name = getBufferSlotName(static_cast<BufferSlot>(param.slot));
      map.type = param.elementType;
      map.base = tensor.data;
      map.rows = static_cast<uint64_t>(tensor.rows ? tensor.rows : rows);
      map.columns = static_cast<uint64_t>(tensor.cols);
      map.rowStride = static_cast<uint64_t>(getRowStride(tensor));
      map.boxRows = static_cast<uint32_t>(layout.tensorMapBox.rows);
      map.boxColumns = static_cast<uint32_t>(layout.tensorMapBox.columns);
      map.swizzleBytes = static_cast<int>(layout.tensorMapBox.swizzle);
      if (Status status = encodeTensorMap(*device->driver, map, maps[mapCount]);
          !status)
        return status;
      pointers[i] = &maps[mapCount++];
      continue;
    }
    switch (param.kind) {
    case Param::Kind::Buffer:
      values[i] = reinterpret_cast<uintptr_t>(tensor.data);
      break;
    case Param::Kind::Rows:
      values[i] = static_cast<uint64_t>(rows);
      break;
    case Param::Kind::Batch:
      values[i] = static_cast<uint64_t>(getBatchOfOffsets(tensor.cols));
      break;
    case Param::Kind::Stride:
      values[i] = static_cast<uint64_t>(getRowStride(tensor));
      break;
    case Param::Kind::KvSplits:
      values[i] = static_cast<uint64_t>(splits);
      break;
    case Param::Kind::CacheCapacity:
      values[i] = static_cast<uint64_t>(decode ? decode->capacity : 0);
      break;
    case Param::Kind::CacheBlocks:
      values[i] = static_cast<uint64_t>(decode ? decode->blocks : 0);
      break;
    case Param::Kind::TableRows:
      values[i] = static_cast<uint64_t>(tensor.rows);
      break;
    case Param::Kind::TensorMap:
      break;
    }
    pointers[i] = &values[i];
  }
  const KernelSignature &sig = getSignature();
  int64_t gridX = sig.getGridX(rows, getBatch(args), splits);
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  if (!sig.pdl) {
    cu::Result result = driver.launchKernel(
        function, static_cast<unsigned>(gridX), 1, 1,
        static_cast<unsigned>(sig.blockThreads), 1, 1,
        static_cast<unsigned>(sig.sharedBytes), stream, pointers, nullptr);
    if (result != cu::kSuccess)
      return Status::error(ErrorCode::DriverError,
                           driver.describe("cuLaunchKernel", result) +
                               " for " + sig.name);
    return Status::success();
  }
  // The kernel waits for its predecessor (griddepcontrol.wait): it may
  // start before that one ends.
  cu::LaunchAttribute programmatic;
  programmatic.id = cu::kLaunchAttributeProgrammaticStreamSerialization;
  programmatic.value.programmaticStreamSerializationAllowed = 1;
  cu::LaunchConfig config;
  config.gridDimX = static_cast<unsigned>(gridX);
  config.blockDimX = static_cast<unsigned>(sig.blockThreads);
  config.sharedMemBytes = static_cast<unsigned>(sig.sharedBytes);
  config.hStream = stream;
  config.attrs = &programmatic;
  config.numAttrs = 1;
  cu::Result result = driver.launchKernelEx(&config, function, pointers,
                                            nullptr);
  if (result != cu::kSuccess)
    return Status::error(ErrorCode::DriverError,
                         driver.describe("cuLaunchKernelEx", result) +
                             " for " + sig.name);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Status norm::jit::computeLaunchLayout(const OpSpec &spec,
                                      const KernelSignature &sig,
                                      LaunchLayout &layout) {
  auto mismatch = [&](const std::string &what) {
    return Status::error(ErrorCode::Internal,
                         "the signature of kernel " + sig.name +
                             " does not match " + describeOpSpec(spec) + ": " +
                             what);
  };
  std::vector<BufferSpec> buffers = getBuffers(spec);
  std::array<const BufferSpec *, kNumBufferSlots> expected{};
  for (const BufferSpec &buffer : buffers)
    expected[static_cast<int>(buffer.slot)] = &buffer;
  std::array<bool, kNumBufferSlots> seen{}, strideSeen{};
  std::array<int, kNumBufferSlots> mapSeen{};
  int maps = 0;
  bool rowsSeen = false, splitsSeen = false, capacitySeen = false,
       blocksSeen = false, tableRowsSeen = false;
  layout.hasBatch = false;
  layout.isDecode = spec.kind == OpKind::AttentionDecode;
  layout.hasCache = hasKvCache(spec);
  if (sig.params.size() > LaunchLayout::kMaxParams)
    return mismatch("too many parameters");
  if (sig.blockThreads < 1 || sig.blockThreads > 1024 || sig.sharedBytes < 0)
    return mismatch("bad block size or shared memory");

  layout.numParams = 0;
  for (const KernelParam &p : sig.params) {
    LaunchLayout::Param param;
    switch (p.kind) {
    case KernelParam::Kind::Buffer: {
      std::optional<BufferSlot> slot = parseBufferSlot(p.name);
      const BufferSpec *buffer =
          slot ? expected[static_cast<int>(*slot)] : nullptr;
      if (!buffer)
        return mismatch("unexpected buffer '" + p.name + "'");
      if (seen[static_cast<int>(*slot)])
        return mismatch("buffer '" + p.name + "' appears twice");
      if (buffer->type != p.elementType || buffer->rows2D != p.rowMajor2D)
        return mismatch("buffer '" + p.name + "' has another type or shape");
      if (p.alignment < 1 || (p.alignment & (p.alignment - 1)) != 0)
        return mismatch("buffer '" + p.name + "' has a bad alignment");
      // The kernel's noalias claims must be the ones the launch checks keep.
      std::string over =
          buffer->over ? std::string(getBufferSlotName(*buffer->over)) : "";
      if (p.over != over)
        return mismatch("buffer '" + p.name + "' is written over " +
                        (p.over.empty() ? "no input" : "'" + p.over + "'") +
                        ", the operation's over " +
                        (over.empty() ? "none" : "'" + over + "'"));
      seen[static_cast<int>(*slot)] = true;
      param.kind = LaunchLayout::Param::Kind::Buffer;
      param.slot = static_cast<uint8_t>(*slot);
      param.rows2D = p.rowMajor2D;
      param.elementBytes = static_cast<int32_t>(getElementBytes(p.elementType));
      // Never less than the element: the kernel accesses whole elements.
      param.alignment = std::max<int64_t>(p.alignment, param.elementBytes);
      break;
    }
    case KernelParam::Kind::Rows:
      if (rowsSeen)
        return mismatch("two row counts");
      rowsSeen = true;
      param.kind = LaunchLayout::Param::Kind::Rows;
      break;
    case KernelParam::Kind::Batch:
      if (layout.hasBatch)
        return mismatch("two batch counts");
      if (!expected[static_cast<int>(BufferSlot::CuSeqlens)])
        return mismatch("a batch without sequence offsets");
      layout.hasBatch = true;
      param.kind = LaunchLayout::Param::Kind::Batch;
      param.slot = static_cast<uint8_t>(BufferSlot::CuSeqlens);
      break;
    case KernelParam::Kind::KvSplits:
    case KernelParam::Kind::CacheCapacity: {
      bool &seenOnce = p.kind == KernelParam::Kind::KvSplits ? splitsSeen
                                                             : capacitySeen;
      bool expectedHere = p.kind == KernelParam::Kind::KvSplits
                              ? layout.isDecode
                              : layout.hasCache;
      if (!expectedHere || seenOnce)
        return mismatch("unexpected parameter '" + p.name + "'");
      seenOnce = true;
      param.kind = p.kind == KernelParam::Kind::KvSplits
                       ? LaunchLayout::Param::Kind::KvSplits
                       : LaunchLayout::Param::Kind::CacheCapacity;
      break;
    }
    case KernelParam::Kind::CacheBlocks:
      if (!spec.cacheBlockSize || blocksSeen)
        return mismatch("unexpected parameter '" + p.name + "'");
      blocksSeen = true;
      param.kind = LaunchLayout::Param::Kind::CacheBlocks;
      break;
    case KernelParam::Kind::RopeTableRows:
      if (!expected[static_cast<int>(BufferSlot::RopeTable)] || tableRowsSeen)
        return mismatch("unexpected parameter '" + p.name + "'");
      tableRowsSeen = true;
      param.kind = LaunchLayout::Param::Kind::TableRows;
      param.slot = static_cast<uint8_t>(BufferSlot::RopeTable);
      break;
    case KernelParam::Kind::TensorMap: {
      std::optional<BufferSlot> slot = parseBufferSlot(getTensorMapSource(p));
      const BufferSpec *buffer =
          slot ? expected[static_cast<int>(*slot)] : nullptr;
      if (!buffer || !buffer->rows2D ||
          mapSeen[static_cast<int>(*slot)]++ != 0 ||
          ++maps > LaunchLayout::kMaxTensorMaps)
        return mismatch("unexpected tensor map '" + p.name + "'");
      param.kind = LaunchLayout::Param::Kind::TensorMap;
      param.slot = static_cast<uint8_t>(*slot);
      param.elementType = buffer->type;
      layout.tensorMapBox = sig.getTensorMapBox();
      break;
    }
    case KernelParam::Kind::RowStride: {
      constexpr std::string_view suffix = "_stride";
      std::string_view name = p.name;
      std::optional<BufferSlot> slot;
      if (name.size() > suffix.size() &&
          name.substr(name.size() - suffix.size()) == suffix)
        slot = parseBufferSlot(name.substr(0, name.size() - suffix.size()));
      const BufferSpec *buffer =
          slot ? expected[static_cast<int>(*slot)] : nullptr;
      if (!buffer || !buffer->rows2D || strideSeen[static_cast<int>(*slot)])
        return mismatch("unexpected stride '" + p.name + "'");
      strideSeen[static_cast<int>(*slot)] = true;
      param.kind = LaunchLayout::Param::Kind::Stride;
      param.slot = static_cast<uint8_t>(*slot);
      break;
    }
    }
    layout.params[layout.numParams++] = param;
  }
  for (const BufferSpec &buffer : buffers)
    if (!seen[static_cast<int>(buffer.slot)])
      return mismatch("no parameter for buffer '" +
                      std::string(getBufferSlotName(buffer.slot)) + "'");
  if (!rowsSeen)
    return mismatch("no row count parameter");
  if (expected[static_cast<int>(BufferSlot::CuSeqlens)] && !layout.hasBatch)
    return mismatch("no batch parameter");
  if (layout.isDecode && !splitsSeen)
    return mismatch("no kv_splits parameter");
  if (layout.hasCache && !capacitySeen)
    return mismatch("no cache_capacity parameter");
  if (spec.cacheBlockSize && !blocksSeen)
    return mismatch("no cache_blocks parameter");
  if (expected[static_cast<int>(BufferSlot::RopeTable)] && !tableRowsSeen)
    return mismatch("no rope_table_rows parameter");
  return Status::success();
}

/// Links PTX into a cubin for the current context's device.
static Status linkPtx(const CudaDriver &driver, const KernelBinary &binary,
                      std::string &cubin) {
  char errorLog[8192] = {0};
  int options[] = {cu::kJitErrorLogBuffer, cu::kJitErrorLogBufferSizeBytes};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  cu::LinkState state = nullptr;
  if (Status status = driver.check(
          driver.linkCreate(2, options, values, &state), "cuLinkCreate");
      !status)
    return status;
  const std::string &ptx = binary.ptx;
  cu::Result result = driver.linkAddData(
      state, cu::kJitInputPtx, const_cast<char *>(ptx.c_str()), ptx.size() + 1,
      binary.signature.name.c_str(), 0, nullptr, nullptr);
  void *image = nullptr;
  size_t size = 0;
  if (result == cu::kSuccess)
    result = driver.linkComplete(state, &image, &size);
  if (result == cu::kSuccess)
    cubin.assign(static_cast<const char *>(image), size);
  (void)driver.linkDestroy(state);
  if (result != cu::kSuccess) {
    std::string message = "the CUDA driver rejected the PTX of " +
                          binary.signature.name + ": " +
                          driver.describe("cuLink", result);
    if (errorLog[0])
      message += "\n" + std::string(errorLog);
    return Status::error(ErrorCode::CompileError, message);
  }
  return Status::success();
}

Status norm::jit::loadKernel(const std::shared_ptr<DeviceState> &device,
                             const OpSpec &spec, KernelBinary binary,
                             std::shared_ptr<const LoadedKernel> &result,
                             bool &linkedCubin, const Logger &log) {
  const CudaDriver &driver = *device->driver;
  linkedCubin = false;
  auto kernel = std::make_shared<LoadedKernel>();
  kernel->device = device;
  kernel->binary = std::move(binary);
  KernelBinary &bin = kernel->binary;
  if (Status status =
          computeLaunchLayout(spec, kernel->binary.signature, kernel->layout);
      !status)
    return status;

  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  if (!bin.cubin.empty()) {
    cu::Result r = driver.moduleLoadDataEx(&kernel->module, bin.cubin.data(), 0,
                                           nullptr, nullptr);
    if (r != cu::kSuccess) {
      log.log(LogLevel::Warning, "cached cubin of " + bin.signature.name +
                                     " rejected, linking its PTX again: " +
                                     driver.describe("cuModuleLoadData", r));
      kernel->module = nullptr;
      bin.cubin.clear();
    }
  }
  if (!kernel->module) {
    if (Status status = linkPtx(driver, bin, bin.cubin); !status)
      return status;
    linkedCubin = true;
    if (Status status = driver.check(
            driver.moduleLoadDataEx(&kernel->module, bin.cubin.data(), 0,
                                    nullptr, nullptr),
            "cuModuleLoadData");
        !status) {
      kernel->module = nullptr;
      return status;
    }
  }
  const KernelSignature &sig = bin.signature;
  if (Status status =
          driver.check(driver.moduleGetFunction(
                           &kernel->function, kernel->module, sig.name.c_str()),
                       "cuModuleGetFunction");
      !status)
    return status.withContext("kernel " + sig.name);

  int maxThreads = 0;
  if (Status status = driver.check(
          driver.funcGetAttribute(&maxThreads, cu::kFuncMaxThreadsPerBlock,
                                  kernel->function),
          "cuFuncGetAttribute");
      !status)
    return status;
  if (Status status = driver.check(
          driver.funcGetAttribute(&kernel->localBytes, cu::kFuncLocalSizeBytes,
                                  kernel->function),
          "cuFuncGetAttribute");
      !status)
    return status;
  if (maxThreads < sig.blockThreads)
    return Status::error(ErrorCode::Unsupported,
                         "kernel " + sig.name + " can run at most " +
                             std::to_string(maxThreads) +
                             " threads per block on this device, it needs " +
                             std::to_string(sig.blockThreads));
  constexpr int64_t kDefaultSharedLimit = 48 * 1024;
  if (sig.sharedBytes > kDefaultSharedLimit) {
    if (sig.sharedBytes > device->info.maxSharedBytesOptin)
      return Status::error(
          ErrorCode::Unsupported,
          "kernel " + sig.name + " needs " + std::to_string(sig.sharedBytes) +
              " bytes of shared memory, the device has " +
              std::to_string(device->info.maxSharedBytesOptin));
    if (Status status = driver.check(
            driver.funcSetAttribute(kernel->function,
                                    cu::kFuncMaxDynamicSharedSizeBytes,
                                    static_cast<int>(sig.sharedBytes)),
            "cuFuncSetAttribute");
        !status)
      return status;
  }
  result = std::move(kernel);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  std::swap(device, other.device);
  std::swap(pointer, other.pointer);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (!pointer)
    return;
  ScopedContext scope(*device->driver, device->context);
  (void)device->driver->memFree(pointer);
}

Status DeviceBuffer::allocate(std::shared_ptr<DeviceState> device,
                              size_t bytes, DeviceBuffer &buffer) {
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  DeviceBuffer created;
  created.device = std::move(device);
  bytes = std::max<size_t>(bytes, 1);
  if (Status status =
          driver.check(driver.memAlloc(&created.pointer, bytes), "cuMemAlloc");
      !status) {
    created.pointer = 0;
    return status;
  }
  buffer = std::move(created);
  return Status::success();
}

Status DeviceBuffer::create(std::shared_ptr<DeviceState> device, size_t bytes,
                            unsigned char fill, DeviceBuffer &buffer) {
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  DeviceBuffer created;
  if (Status status = allocate(device, bytes, created); !status)
    return status;
  if (Status status =
          driver.check(driver.memsetD8(created.pointer, fill,
                                       std::max<size_t>(bytes, 1)),
                       "cuMemsetD8");
      !status)
    return status;
  buffer = std::move(created);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// StreamScratch
//===----------------------------------------------------------------------===//

Status norm::jit::zeroDecodeSemaphores(const CudaDriver &driver,
                                       const void *semaphores, int64_t count,
                                       cu::Stream stream) {
  return driver
      .check(driver.memsetD32Async(reinterpret_cast<cu::DevicePtr>(semaphores),
                                   0, static_cast<size_t>(count), stream),
             "cuMemsetD32Async")
      .withContext("zeroing the decode semaphores");
}

Status StreamScratch::reserve(cu::Stream stream, int64_t workspaceElements,
                              int64_t semaphoreCount, PerStream *&result) {
  PerStream *scratch = nullptr;
  for (const std::unique_ptr<PerStream> &entry : streams)
    if (entry->stream == stream)
      scratch = entry.get();
  bool growWorkspace = !scratch || scratch->workspaceElements < workspaceElements;
  // Backward launches take no semaphores: none are allocated for them.
  bool growSemaphores =
      semaphoreCount > 0 &&
      (!scratch || scratch->semaphoreCount < semaphoreCount);
  if (scratch && !growWorkspace && !growSemaphores) {
    result = scratch;
    return Status::success();
  }
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  // Kernels of this stream may still use the buffers that are replaced.
  if (scratch)
    if (Status status = driver.check(driver.streamSynchronize(stream),
                                     "cuStreamSynchronize");
        !status)
      return status.withContext("growing the scratch of a stream");
  // Nothing changes until every new buffer is there.
  DeviceBuffer workspace, semaphores;
  int64_t elements = std::max<int64_t>(workspaceElements, 1);
  int64_t count = semaphoreCount;
  if (growWorkspace)
    if (Status status =
            DeviceBuffer::allocate(device, elements * 4, workspace);
        !status)
      return status.withContext("scratch workspace (" +
                                std::to_string(elements * 4) + " bytes)");
  if (growSemaphores) {
    if (Status status = DeviceBuffer::allocate(device, count * 4, semaphores);
        !status)
      return status.withContext("decode semaphores (" +
                                std::to_string(count * 4) + " bytes)");
    // Zero before the first kernel, in stream order; kernels leave them so.
    if (Status status =
            zeroDecodeSemaphores(driver, semaphores.get(), count, stream);
        !status)
      return status;
  }
  if (!scratch) {
    streams.push_back(std::make_unique<PerStream>());
    scratch = streams.back().get();
    scratch->stream = stream;
  }
  // Move-assignment swaps: the replaced buffers are freed with the locals.
  if (growWorkspace) {
    scratch->workspace = std::move(workspace);
    scratch->workspaceElements = elements;
  }
  if (growSemaphores) {
    scratch->semaphores = std::move(semaphores);
    scratch->semaphoreCount = count;
  }
  result = scratch;
  return Status::success();
}

size_t StreamScratch::getStreamCount() {
  std::lock_guard<std::mutex> lock(mutex);
  return streams.size();
}

int64_t StreamScratch::getBytes() {
  std::lock_guard<std::mutex> lock(mutex);
  int64_t bytes = 0;
  for (const std::unique_ptr<PerStream> &entry : streams)
    bytes += 4 * (entry->workspaceElements + entry->semaphoreCount);
  return bytes;
}
