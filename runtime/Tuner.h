//===- Tuner.h - timing kernel variants on the device -----------*- C++ -*-===//
//
// The measuring half of autotuning (the candidates come from Candidates.h):
// scratch buffers for every buffer of the operation, a stream of its own and
// two CUDA events. Each variant is warmed up, then timed as the best of three
// runs of enough back-to-back launches to fill about 100 us, so that event
// resolution and launch gaps do not decide.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_TUNER_H
#define NORM_RUNTIME_TUNER_H

#include "runtime/Device.h"

#include <vector>

namespace norm::jit {

class Tuner {
public:
  /// Allocates scratch buffers for up to `maxRows` rows of `spec`, filled
  /// with small finite values in every element type.
  static Status create(std::shared_ptr<DeviceState> device, const OpSpec &spec,
                       int64_t maxRows, std::unique_ptr<Tuner> &tuner);
  ~Tuner();

  /// The time of one launch of `kernel` at `rows` rows, in microseconds.
  Status time(const LoadedKernel &kernel, int64_t rows, double &microseconds);

private:
  Tuner() = default;
  Status run(const LoadedKernel &kernel, int64_t rows, int launches,
             double &milliseconds);

  std::shared_ptr<DeviceState> device;
  std::vector<DeviceBuffer> buffers;
  LaunchArgs args;
  cu::Stream stream = nullptr;
  cu::Event start = nullptr, stop = nullptr;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_TUNER_H
