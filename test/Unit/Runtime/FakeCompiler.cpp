//===- FakeCompiler.cpp - a counting kernel compiler for tests ------------===//

#include "test/Unit/Runtime/FakeCompiler.h"

#include "runtime/Candidates.h"
#include "compiler/model/KernelModel.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

std::string norm::jit::test::getFakeKernelName(const OpSpec &spec,
                                               const LaunchConfig &launch,
                                               const TargetOptions &target) {
  return getKernelName(spec, launch, target);
}

norm::Status FakeCompiler::compile(const OpSpec &spec,
                                   const LaunchConfig &launch,
                                   const TargetOptions &target,
                                   CompiledKernel &result) {
  ++compiles;
  if (onCompile)
    onCompile(launch);
  if (delayMs)
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
  if (rejects(launch))
    return norm::Status::error(ErrorCode::CompileError,
                               "fake compiler rejects " +
                                   launch.getMangledSuffix());
  // The signature the kernel generator builds the kernel from.
  if (Status status = describeKernel(spec, launch, target, result.signature);
      !status)
    return status;
  const KernelSignature &sig = result.signature;

  auto [fixedNs, perCtaNs] = cost(launch);
  std::ostringstream ptx;
  ptx << "// fake-cost-ns: " << fixedNs << " " << perCtaNs << "\n"
      << ".version " << target.ptxVersion / 10 << "." << target.ptxVersion % 10
      << "\n.target " << target.chip << "\n.address_size 64\n\n"
      << ".visible .entry " << sig.name << "(";
  for (size_t i = 0; i < sig.params.size(); ++i)
    ptx << (i ? ",\n" : "\n") << "  .param .u64 " << sig.name << "_param_" << i;
  ptx << "\n)\n{\n  ret;\n}\n";
  result.ptx = ptx.str();
  return norm::Status::success();
}

LaunchConfig FakeCompiler::getHeuristicLaunch(const OpSpec &spec,
                                              int64_t rows) {
  ++heuristicCalls;
  // Attention, column sums and backward grids have no ladder: the kernel
  // model's configuration.
  if (isAttention(spec.kind) || spec.kind == OpKind::ColumnSum ||
      spec.backward)
    return norm::getHeuristicLaunch(spec, rows);
  int64_t length = getRowLength(spec);
  LaunchConfig launch;
  launch.vector = getMaxVector(spec);
  launch.threadsPerRow = length <= 64      ? 8
                         : length <= 128   ? 16
                         : length <= 3072  ? 32
                         : length <= 6144  ? 64
                         : length <= 16384 ? 128
                                           : 256;
  auto complete = [&] {
    launch.warps = launch.threadsPerRow >= 128 ? launch.threadsPerRow / 32 : 4;
    launch.rowsPerCta = launch.getConcurrentRows();
  };
  complete();
  // Wider until the share fits in registers, as long as no thread idles.
  while (!fitsInRegisters(spec, launch) && launch.threadsPerRow < 1024 &&
         (2 * launch.threadsPerRow - 1) * launch.vector < length) {
    launch.threadsPerRow *= 2;
    complete();
  }
  while (launch.threadsPerRow > 1 &&
         (launch.threadsPerRow - 1) * launch.vector >= length) {
    launch.threadsPerRow /= 2;
    complete();
  }
  return launch;
}
