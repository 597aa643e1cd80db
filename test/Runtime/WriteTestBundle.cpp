//===- WriteTestBundle.cpp - a kernel bundle from the fake compiler -------===//
//
// normjit-write-test-bundle <bundle> [hidden...]: tunes RMSNorm (bf16, with
// weight) for each hidden size (default 4096, and then three attention
// operations and RMSNorm 4096's training kernels, forward with saved
// statistics and backward, as well) on the fake driver with the fake
// compiler and writes their bundle, for tests of what serves bundles
// (the C API test, runtime-only builds) on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/Runtime.h"
#include "test/Unit/Runtime/FakeCompiler.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace norm;
using namespace norm::jit;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <bundle> [hidden...]\n", argv[0]);
    return 2;
  }
  std::vector<OpSpec> specs;
  for (int i = 2; i < argc || specs.empty(); ++i) {
    OpSpec spec;
    spec.hidden = i < argc ? std::atoll(argv[i]) : 4096;
    spec.hasWeight = true;
    specs.push_back(spec);
  }
  // Without sizes also three attention kernels (the C API and Python tests
  // describe the same operations): causal GQA without a QK-Norm, a
  // Gemma-style QK-Norm (rms, weights, 1 + w) with one key/value head that
  // writes the log-sum-exp, and the first with a rope table and positions;
  // then two training kernels.
  if (argc == 2) {
    OpSpec causal;
    causal.kind = OpKind::Attention;
    causal.hidden = 128;
    causal.numQHeads = 4;
    causal.numKvHeads = 2;
    causal.qkStatistic = Statistic::None;
    causal.causal = true;
    causal.scale = 1.0 / std::sqrt(128.0);
    specs.push_back(causal);
    OpSpec normed = causal;
    normed.hidden = 64;
    normed.numKvHeads = 1;
    normed.causal = false;
    normed.qkStatistic = Statistic::RMS;
    normed.hasWeight = true;
    normed.weightOffset = 1.0;
    normed.writeLse = true;
    normed.scale = 1.0 / std::sqrt(64.0);
    specs.push_back(normed);
    // The causal one with neox rotary embeddings at explicit positions from
    // a cos/sin table (the Python layer's positions= and cos_sin_cache=).
    OpSpec table = causal;
    table.rope = RopeStyle::NeoX;
    table.rotaryDim = 128;
    table.ropePositions = true;
    table.ropeTable = true;
    specs.push_back(table);
    // Training (the Python layer's norm_opt.rms_norm with autograd): the
    // RMSNorm above saving its rstd, and its backward (writeBundle adds the
    // column sum of its weight gradient).
    OpSpec saving = specs.front();
    saving.saveStats = true;
    specs.push_back(saving);
    OpSpec backward = specs.front();
    backward.backward = true;
    specs.push_back(backward);
    // In place (API 7): the RMSNorm above writing its output over its input.
    OpSpec inPlace = specs.front();
    inPlace.outputOver = RowOperand::Input;
    specs.push_back(inPlace);
  }
  ContextOptions options;
  options.driverLibrary = NORM_FAKE_CUDA_LIBRARY;
  options.compiler = std::make_shared<test::FakeCompiler>();
  options.diskCache = false;
  std::unique_ptr<Context> context;
  Status status = Context::create(options, context);
  if (status.ok())
    status = context->writeBundle(specs, argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
