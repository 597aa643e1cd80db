//===- Tuner.h - timing kernel variants on the device -----------*- C++ -*-===//
//
// The measuring half of autotuning (the candidates come from Candidates.h):
// scratch buffers for every buffer of the operation, a stream of its own and
// two CUDA events. Each variant is warmed up, then timed as the best of three
// runs of enough back-to-back launches to fill about 100 us, so that event
// resolution and launch gaps do not decide. A backward kernel is timed with
// its column sums, as every launch runs it: a candidate that writes more
// partial rows pays for their sums.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_TUNER_H
#define NORM_RUNTIME_TUNER_H

#include "runtime/Candidates.h"
#include "runtime/Device.h"
#include "runtime/Runtime.h"

#include <vector>

namespace norm::jit {

class Tuner {
public:
  /// A stream and events for timing kernels of `spec`; no scratch yet.
  static Status create(std::shared_ptr<DeviceState> device, const OpSpec &spec,
                       std::unique_ptr<Tuner> &tuner);
  ~Tuner();

  /// Allocates scratch buffers for timing the launches of `run` at `rows`
  /// rows (getTuningBufferElements), after releasing the previous ones,
  /// filled with small finite values in every element type. Sequence
  /// offsets are valid: attention's one sequence of all the rows, decode's
  /// one token per sequence (getCacheTuningShape), whose cache lengths
  /// leave room for it. A failure (the device may not have the memory)
  /// leaves no scratch: try again with fewer rows.
  Status allocateScratch(int64_t rows, const TuningRun &run = {});

  /// The column sums each timed launch of a backward kernel runs after it,
  /// from its scratch partials into scratch gradients of their own (set
  /// before allocateScratch).
  void setGradientSums(std::vector<Kernel::GradientSumKernel> sums) {
    gradientSums = std::move(sums);
  }
  int64_t getScratchRows() const { return scratchRows; }

  /// The time of one launch of `kernel` at the scratch's rows, in
  /// microseconds. Decode kernels take their tuning launch's splits
  /// (getDecodeTuningLaunch), and their semaphores are zeroed before their
  /// first launch (each launch leaves them zero for the next).
  Status time(const LoadedKernel &kernel, double &microseconds);

private:
  Tuner() = default;
  /// Copies `values` to the scratch buffer of `slot`.
  Status write(BufferSlot slot, const std::vector<int32_t> &values);
  /// Decode's splits and capacity for `kernel`, its semaphores zeroed.
  Status prepareDecode(const LoadedKernel &kernel, DecodeLaunch &decode);

  Status run(const LoadedKernel &kernel, const DecodeLaunch *decode,
             int launches, double &milliseconds);
  /// One launch of `kernel` and its column sums.
  Status launch(const LoadedKernel &kernel, const DecodeLaunch *decode);

  std::shared_ptr<DeviceState> device;
  OpSpec spec;
  std::vector<DeviceBuffer> buffers;
  int64_t scratchRows = 0;
  /// The SMs the scratch's decode launches split for (TuningRun::smCount).
  int64_t smCount = 1;
  LaunchArgs args;
  std::vector<Kernel::GradientSumKernel> gradientSums;
  /// The gradients of gradientSums, in launch order.
  LaunchArgs gradientArgs;
  cu::Stream stream = nullptr;
  cu::Event start = nullptr, stop = nullptr;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_TUNER_H
