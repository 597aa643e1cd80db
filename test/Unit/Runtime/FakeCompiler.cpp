//===- FakeCompiler.cpp - a counting kernel compiler for tests ------------===//

#include "test/Unit/Runtime/FakeCompiler.h"

#include "runtime/Candidates.h"
#include "runtime/OpSpecs.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

using namespace norm::jit;
using namespace norm::jit::test;

std::string norm::jit::test::getFakeKernelName(const OpSpec &spec,
                                               const LaunchConfig &launch) {
  return "norm_" + std::string(getOpKindName(spec.kind)) + "_h" +
         std::to_string(spec.hidden) + "_" + launch.getMangledSuffix() +
         (keepsRowInRegisters(launch, spec) ? "" : "_stream");
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
  if (rejects(launch) || !fitsRow(launch, spec))
    return norm::Status::error("fake compiler rejects " +
                               launch.getMangledSuffix());
  // The signature the kernel generator writes (describeKernel), long rows
  // streamed.
  KernelSignature &sig = result.signature;
  sig.name = getFakeKernelName(spec, launch);
  sig.hidden = spec.hidden;
  sig.launch = launch;
  sig.blockThreads = launch.getThreadsPerCta();
  if (spec.kind == OpSpec::Kind::QKNormPrologue) {
    sig.kind = "qk_norm_prologue";
    sig.rowMultiplier = spec.numQHeads + spec.numKvHeads;
  } else if (spec.kind == OpSpec::Kind::BatchNormStats) {
    sig.kind = "column_stats";
    int64_t tiles = (spec.hidden + launch.vector - 1) / launch.vector;
    sig.fixedGridX = (tiles + launch.rowsPerCta - 1) / launch.rowsPerCta;
  } else {
    sig.kind = "fused_row";
    sig.rowMultiplier = spec.groups;
  }
  std::vector<BufferSpec> buffers = getBuffers(spec);
  for (const BufferSpec &buffer : buffers) {
    KernelParam param;
    param.kind = KernelParam::Kind::Buffer;
    param.name = std::string(getBufferSlotName(buffer.slot));
    param.elementType = buffer.type;
    param.rowMajor2D = buffer.rows2D;
    param.readOnly = !buffer.written;
    param.alignment =
        std::min<int64_t>(launch.vector * getElementBytes(buffer.type), 16);
    sig.params.push_back(param);
  }
  sig.params.push_back({KernelParam::Kind::Rows, "rows"});
  for (const BufferSpec &buffer : buffers)
    if (buffer.rows2D)
      sig.params.push_back(
          {KernelParam::Kind::RowStride,
           std::string(getBufferSlotName(buffer.slot)) + "_stride"});

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
                                              int64_t /*rows*/) {
  ++heuristicCalls;
  int64_t length = getRowLength(spec);
  LaunchConfig launch;
  launch.vector = getMaxVector(spec);
  launch.threadsPerRow = length <= 64      ? 8
                         : length <= 128   ? 16
                         : length <= 3072  ? 32
                         : length <= 6144  ? 64
                         : length <= 16384 ? 128
                                           : 256;
  while (!fitsRow(launch, spec) && launch.threadsPerRow < 1024) {
    if ((launch.threadsPerRow - 1) * launch.vector >= length)
      break;
    launch.threadsPerRow *= 2;
  }
  while (launch.threadsPerRow > 1 &&
         (launch.threadsPerRow - 1) * launch.vector >= length)
    launch.threadsPerRow /= 2;
  launch.warps = launch.threadsPerRow >= 128 ? launch.threadsPerRow / 32 : 4;
  launch.rowsPerCta = launch.getConcurrentRows();
  return launch;
}
