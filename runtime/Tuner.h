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
  /// A stream and events for timing kernels of `spec`; no scratch yet.
  static Status create(std::shared_ptr<DeviceState> device, const OpSpec &spec,
                       std::unique_ptr<Tuner> &tuner);
  ~Tuner();

  /// Allocates scratch buffers for up to `rows` rows (getTuningScratchBytes),
  /// filled with small finite values in every element type, after
  /// releasing the previous ones; sequence offsets (attention's cu_seqlens)
  /// are valid: one sequence of all the rows timed (time() rewrites them
  /// for fewer). A failure (the device may not have the memory) leaves no
  /// scratch: try again with fewer rows.
  Status allocateScratch(int64_t rows);
  int64_t getScratchRows() const { return scratchRows; }

  /// The time of one launch of `kernel` at `rows` rows (at most the
  /// scratch's), in microseconds.
  Status time(const LoadedKernel &kernel, int64_t rows, double &microseconds);

private:
  Tuner() = default;
  /// Makes the scratch cu_seqlens delimit one sequence of `rows` tokens.
  Status writeSequenceOffsets(int64_t rows);

  Status run(const LoadedKernel &kernel, int64_t rows, int launches,
             double &milliseconds);

  std::shared_ptr<DeviceState> device;
  OpSpec spec;
  std::vector<DeviceBuffer> buffers;
  int64_t scratchRows = 0;
  /// The tokens the scratch cu_seqlens delimits (0: it has none).
  int64_t offsetRows = 0;
  LaunchArgs args;
  cu::Stream stream = nullptr;
  cu::Event start = nullptr, stop = nullptr;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_TUNER_H
