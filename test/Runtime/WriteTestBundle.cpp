//===- WriteTestBundle.cpp - a kernel bundle from the fake compiler -------===//
//
// normjit-write-test-bundle <bundle> [hidden...]: tunes RMSNorm (bf16, with
// weight) for each hidden size (default 4096) on the fake driver with the
// fake compiler and writes their bundle, for tests of what serves bundles
// (the C API test, runtime-only builds) on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/Runtime.h"
#include "test/Unit/Runtime/FakeCompiler.h"

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
