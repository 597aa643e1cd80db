//===- KernelSource.h - where the checked kernels come from -----*- C++ -*-===//
//
// The CPU check runs kernel programs from a provider: the compiler's kernel
// generator (norm::buildKernelSource, then norm-generate-kernels), or
// hand-written reference kernels that test the host lowering and the checks
// themselves independently of the generator.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMCPUCHECK_KERNELSOURCE_H
#define NORM_TOOLS_NORMCPUCHECK_KERNELSOURCE_H

#include "compiler/model/KernelModel.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace norm::check {

/// A kernel program for one operation and launch configuration.
struct KernelSource {
  std::string mlir;          // a module: norm IR, or gpu.module kernels
  std::string pipeline;      // passes that turn `mlir` into kernels, or empty
  KernelSignature signature; // name, parameters and grid of the kernel
};

class KernelProvider {
public:
  virtual ~KernelProvider() = default;
  virtual std::string_view getName() const = 0;
  /// Whether the provider has kernels for operations like `spec`.
  virtual bool supports(const OpSpec &spec) const { return true; }
  /// The configuration the compiler picks without tuning for `rows`.
  virtual LaunchConfig getDefaultLaunch(const OpSpec &spec,
                                        int64_t rows) const = 0;
  /// The kernel program of `spec` for `launch`; fails (with a message) for
  /// unsupported specs and configurations.
  virtual Status build(const OpSpec &spec, const LaunchConfig &launch,
                       KernelSource &source) const = 0;
};

/// The kernel generator's kernels for `target` (its shared memory decides
/// which long rows are staged; pdl adds the grid dependency ops, which the
/// host drops).
std::unique_ptr<KernelProvider>
createGeneratedKernels(const ::norm::TargetOptions &target = {});
std::unique_ptr<KernelProvider> createHandWrittenKernels();

} // namespace norm::check

#endif // NORM_TOOLS_NORMCPUCHECK_KERNELSOURCE_H
