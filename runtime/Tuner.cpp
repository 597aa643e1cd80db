//===- Tuner.cpp - timing kernel variants on the device -------------------===//

#include "runtime/Tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

Status Tuner::allocateScratch(int64_t rows) {
  buffers.clear();
  args = LaunchArgs();
  scratchRows = 0;
  offsetRows = 0;
  std::vector<DeviceBuffer> allocated;
  LaunchArgs scratchArgs;
  for (const BufferSpec &buffer : getBuffers(spec)) {
    size_t bytes = getTuningBufferBytes(buffer, rows);
    DeviceBuffer scratch;
    if (Status status =
            DeviceBuffer::create(device, bytes, kScratchFill, scratch);
        !status)
      return status.withContext("tuning scratch buffer '" +
                                std::string(getBufferSlotName(buffer.slot)) +
                                "' (" + std::to_string(bytes) + " bytes)");
    // A length that comes with the launch: kTuningSequences + 1 offsets.
    int64_t cols = buffer.cols ? buffer.cols : kTuningSequences + 1;
    scratchArgs.set(buffer.slot, scratch.get(), buffer.type, cols);
    allocated.push_back(std::move(scratch));
  }
  buffers = std::move(allocated);
  args = scratchArgs;
  scratchRows = rows;
  return writeSequenceOffsets(rows);
}

Status Tuner::writeSequenceOffsets(int64_t rows) {
  const TensorArg &offsets = args[BufferSlot::CuSeqlens];
  if (!offsets.data || offsetRows == rows)
    return Status::success();
  // Garbage offsets would send the kernel out of bounds: one sequence of
  // every token timed.
  static_assert(kTuningSequences == 1);
  int32_t values[kTuningSequences + 1] = {0, static_cast<int32_t>(rows)};
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  if (Status status = driver.check(
          driver.memcpyHtoD(reinterpret_cast<cu::DevicePtr>(offsets.data),
                            values, sizeof(values)),
          "cuMemcpyHtoD");
      !status)
    return status.withContext("tuning scratch buffer 'cu_seqlens'");
  offsetRows = rows;
  return Status::success();
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

Status Tuner::run(const LoadedKernel &kernel, int64_t rows, int launches,
                  double &milliseconds) {
  const CudaDriver &driver = *device->driver;
  if (Status status =
          driver.check(driver.eventRecord(start, stream), "cuEventRecord");
      !status)
    return status;
  for (int i = 0; i < launches; ++i)
    if (Status status = kernel.launch(args, rows, stream); !status)
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

Status Tuner::time(const LoadedKernel &kernel, int64_t rows,
                   double &microseconds) {
  if (rows < 1 || rows > scratchRows)
    return Status::error(ErrorCode::Internal,
                         "timing " + std::to_string(rows) +
                             " rows on scratch for " +
                             std::to_string(scratchRows));
  if (rows > std::numeric_limits<int32_t>::max())
    return Status::error(ErrorCode::Internal,
                         "timing " + std::to_string(rows) +
                             " rows: more than i32 sequence offsets hold");
  if (Status status = writeSequenceOffsets(rows); !status)
    return status;
  const CudaDriver &driver = *device->driver;
  ScopedContext scope(driver, device->context);
  if (!scope.status().ok())
    return scope.status();
  // Warm up (first-launch costs, caches) and catch launch errors untimed.
  for (int i = 0; i < 2; ++i)
    if (Status status = kernel.launch(args, rows, stream); !status)
      return status;
  if (Status status =
          driver.check(driver.streamSynchronize(stream), "cuStreamSynchronize");
      !status)
    return status;

  constexpr int kProbeLaunches = 3;
  double probe = 0;
  if (Status status = run(kernel, rows, kProbeLaunches, probe); !status)
    return status;
  double perLaunch = probe / kProbeLaunches;
  int launches = perLaunch > 0
                     ? static_cast<int>(std::clamp(
                           std::ceil(kTargetRunMs / perLaunch), 3.0, 200.0))
                     : 200;
  double best = probe / kProbeLaunches;
  for (int trial = 0; trial < kTrials; ++trial) {
    double ms = 0;
    if (Status status = run(kernel, rows, launches, ms); !status)
      return status;
    best = std::min(best, ms / launches);
  }
  microseconds = best * 1000.0;
  return Status::success();
}
