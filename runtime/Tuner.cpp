//===- Tuner.cpp - timing kernel variants on the device -------------------===//

#include "runtime/Tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace norm;
using namespace norm::jit;

/// 0x3c in every byte: about 0.0115 as f32, bf16 and f16 alike (finite and
/// positive, so variances are valid).
static constexpr unsigned char kScratchFill = 0x3c;
static constexpr double kTargetRunMs = 0.1;
static constexpr int kTrials = 3;

Status Tuner::create(std::shared_ptr<DeviceState> device, const OpSpec &spec,
                     std::unique_ptr<Tuner> &result) {
  std::unique_ptr<Tuner> tuner(new Tuner());
  tuner->device = device;
  tuner->spec = spec;
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  if (Status status = driver.check(
          driver.streamCreate(&tuner->stream, cu::kStreamNonBlocking),
          "cuStreamCreate");
      !status)
    return status;
  for (cu::Event *event : {&tuner->start, &tuner->stop})
    if (Status status = driver.check(
            driver.eventCreate(event, cu::kEventDefault), "cuEventCreate");
        !status)
      return status;
  result = std::move(tuner);
  return Status::success();
}

Status Tuner::allocateScratch(int64_t rows, const TuningRun &run) {
  buffers.clear();
  args = LaunchArgs();
  scratchRows = 0;
  if (rows < 1 || rows > std::numeric_limits<int32_t>::max())
    return Status::error(ErrorCode::Internal,
                         "tuning scratch for " + std::to_string(rows) +
                             " rows: more than i32 sequence offsets count");
  bool decode = spec.kind == OpKind::AttentionDecode;
  DecodeShape shape = hasKvCache(spec)
                          ? getCacheTuningShape(spec, rows)
                          : DecodeShape{rows, kTuningSequences, 0, 1};
  std::vector<DeviceBuffer> allocated;
  LaunchArgs scratchArgs;
  for (const BufferSpec &buffer : getBuffers(spec)) {
    int64_t elements = getTuningBufferElements(spec, buffer, rows, run);
    size_t bytes = elements * getElementBytes(buffer.type);
    DeviceBuffer scratch;
    if (Status status =
            DeviceBuffer::create(device, bytes, kScratchFill, scratch);
        !status)
      return status.withContext("tuning scratch buffer '" +
                                std::string(getBufferSlotName(buffer.slot)) +
                                "' (" + std::to_string(bytes) + " bytes)");
    // 2-D buffers have rows of `cols`; the caches rows of their own.
    int64_t cols = buffer.rows2D ? buffer.cols : elements;
    scratchArgs.set(buffer.slot, scratch.get(), buffer.type, cols);
    if (buffer.updated)
      scratchArgs.tensors[static_cast<int>(buffer.slot)].rows =
          shape.batch * shape.cacheCapacity;
    // A rope table of `rows` positions, which the positions below stay in.
    if (buffer.slot == BufferSlot::RopeTable)
      scratchArgs.tensors[static_cast<int>(buffer.slot)].rows = rows;
    // Gradient partials of as many rows as the largest launch writes.
    if (isGradPartials(buffer.slot))
      scratchArgs.tensors[static_cast<int>(buffer.slot)].rows =
          elements / buffer.cols;
    allocated.push_back(std::move(scratch));
  }
  // The gradients the column sums write.
  LaunchArgs sums;
  for (const Kernel::GradientSumKernel &sum : gradientSums) {
    const OpSpec &columnSum = sum.kernel->getSpec();
    DeviceBuffer gradient;
    if (Status status = DeviceBuffer::create(
            device,
            columnSum.hidden * getElementBytes(columnSum.output), 0, gradient);
        !status)
      return status.withContext("tuning scratch buffer '" +
                                std::string(getBufferSlotName(sum.gradient)) +
                                "'");
    sums.set(sum.gradient, gradient.get(), columnSum.output, columnSum.hidden);
    allocated.push_back(std::move(gradient));
  }
  buffers = std::move(allocated);
  args = scratchArgs;
  gradientArgs = sums;
  // Garbage offsets would send the kernel out of bounds: `batch` sequences
  // of the rows, evenly.
  std::vector<int32_t> offsets;
  for (int64_t b = 0; b <= shape.batch; ++b)
    offsets.push_back(static_cast<int32_t>(b * rows / shape.batch));
  if (Status status = write(BufferSlot::CuSeqlens, offsets); !status)
    return status;
  // Each decode sequence attends to its whole cache, its new token last;
  // K-prepare fills empty caches.
  if (hasKvCache(spec)) {
    std::vector<int32_t> lengths(shape.batch,
                                 decode ? shape.cacheCapacity - 1 : 0);
    if (Status status = write(BufferSlot::CacheSeqlens, lengths); !status)
      return status;
  }
  // A paged cache's pages in order: sequence b's at b x max_blocks on.
  if (spec.cacheBlockSize) {
    std::vector<int32_t> table(shape.batch * shape.cacheCapacity /
                               spec.cacheBlockSize);
    std::iota(table.begin(), table.end(), 0);
    if (Status status = write(BufferSlot::BlockTables, table); !status)
      return status;
    // A ragged table's: max_blocks a sequence.
    if (spec.pageIndptr) {
      std::vector<int32_t> starts;
      for (int64_t b = 0; b <= shape.batch; ++b)
        starts.push_back(static_cast<int32_t>(
            b * (shape.cacheCapacity / spec.cacheBlockSize)));
      if (Status status = write(BufferSlot::PageIndptr, starts); !status)
        return status;
    }
  }
  // Positions inside the table, so that every launch reads its rows.
  if (spec.ropePositions) {
    std::vector<int32_t> positions(rows);
    std::iota(positions.begin(), positions.end(), 0);
    if (Status status = write(BufferSlot::Positions, positions); !status)
      return status;
  }
  scratchRows = rows;
  smCount = run.smCount;
  return Status::success();
}

Status Tuner::write(BufferSlot slot, const std::vector<int32_t> &values) {
  const TensorArg &buffer = args[slot];
  if (!buffer.data)
    return Status::success();
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  return driver
      .check(driver.memcpyHtoD(reinterpret_cast<cu::DevicePtr>(buffer.data),
                               values.data(), values.size() * sizeof(int32_t)),
             "cuMemcpyHtoD")
      .withContext("tuning scratch buffer '" +
                   std::string(getBufferSlotName(slot)) + "'");
}

Status Tuner::prepareDecode(const LoadedKernel &kernel, DecodeLaunch &decode) {
  const LaunchConfig &launch = kernel.getSignature().launch;
  DecodeShape shape = getDecodeTuningLaunch(spec, scratchRows, launch, smCount);
  decode = {shape.splits, shape.cacheCapacity};
  // The scratch was sized for the launches of its run.
  for (BufferSlot slot : {BufferSlot::Workspace, BufferSlot::Semaphores}) {
    int64_t needed = getLaunchLength(spec, slot, launch.rowsPerCta, shape);
    if (needed > args[slot].cols)
      return Status::error(ErrorCode::Internal,
                           "tuning " + launch.getMangledSuffix() + " needs " +
                               std::to_string(needed) + " elements of '" +
                               std::string(getBufferSlotName(slot)) +
                               "', the scratch has " +
                               std::to_string(args[slot].cols));
  }
  // Every launch leaves the semaphores zero; the first needs them so too.
  const TensorArg &semaphores = args[BufferSlot::Semaphores];
  return zeroDecodeSemaphores(*device->driver, semaphores.data, semaphores.cols,
                              stream);
}

Tuner::~Tuner() {
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  for (cu::Event event : {start, stop})
    if (event)
      (void)driver.eventDestroy(event);
  if (stream)
    (void)driver.streamDestroy(stream);
}

Status Tuner::launch(const LoadedKernel &kernel, const DecodeLaunch *decode) {
  if (Status status = kernel.launch(args, scratchRows, stream, decode);
      !status)
    return status;
  if (gradientSums.empty())
    return Status::success();
  int64_t partialRows =
      getGradPartialRows(spec, kernel.getSignature().launch, scratchRows);
  for (const Kernel::GradientSumKernel &sum : gradientSums) {
    const TensorArg &partials = args[sum.partials];
    if (Status status =
            sum.launch(partials.data, partials.cols,
                       gradientArgs[sum.gradient], partialRows, stream);
        !status)
      return status;
  }
  return Status::success();
}

Status Tuner::run(const LoadedKernel &kernel, const DecodeLaunch *decode,
                  int launches, double &milliseconds) {
  const CudaDriver &driver = *device->driver;
  if (Status status =
          driver.check(driver.eventRecord(start, stream), "cuEventRecord");
      !status)
    return status;
  for (int i = 0; i < launches; ++i)
    if (Status status = launch(kernel, decode); !status)
      return status;
  if (Status status =
          driver.check(driver.eventRecord(stop, stream), "cuEventRecord");
      !status)
    return status;
  if (Status status =
          driver.check(driver.eventSynchronize(stop), "cuEventSynchronize");
      !status)
    return status;
  float elapsed = 0;
  if (Status status = driver.check(
          driver.eventElapsedTime(&elapsed, start, stop), "cuEventElapsedTime");
      !status)
    return status;
  milliseconds = elapsed;
  return Status::success();
}

Status Tuner::time(const LoadedKernel &kernel, double &microseconds) {
  if (scratchRows < 1)
    return Status::error(ErrorCode::Internal, "timing without scratch");
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  DecodeLaunch decode;
  const DecodeLaunch *decodeLaunch = nullptr;
  if (spec.kind == OpKind::AttentionDecode) {
    if (Status status = prepareDecode(kernel, decode); !status)
      return status;
    decodeLaunch = &decode;
  } else if (spec.writeCache) {
    decode.capacity = getCacheTuningShape(spec, scratchRows).cacheCapacity;
    decodeLaunch = &decode;
  }
  // Warm up (first-launch costs, caches) and catch launch errors untimed.
  for (int i = 0; i < 2; ++i)
    if (Status status = launch(kernel, decodeLaunch); !status)
      return status;
  if (Status status =
          driver.check(driver.streamSynchronize(stream), "cuStreamSynchronize");
      !status)
    return status;

  constexpr int kProbeLaunches = 3;
  double probe = 0;
  if (Status status = run(kernel, decodeLaunch, kProbeLaunches, probe); !status)
    return status;
  double perLaunch = probe / kProbeLaunches;
  int launches = perLaunch > 0
                     ? static_cast<int>(std::clamp(
                           std::ceil(kTargetRunMs / perLaunch), 3.0, 200.0))
                     : 200;
  double best = probe / kProbeLaunches;
  for (int trial = 0; trial < kTrials; ++trial) {
    double ms = 0;
    if (Status status = run(kernel, decodeLaunch, launches, ms); !status)
      return status;
    best = std::min(best, ms / launches);
  }
  microseconds = best * 1000.0;
  return Status::success();
}
