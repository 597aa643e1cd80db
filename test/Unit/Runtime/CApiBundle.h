//===- CApiBundle.h - a C API context serving one bundle --------*- C++ -*-===//

#ifndef NORM_TEST_RUNTIME_CAPIBUNDLE_H
#define NORM_TEST_RUNTIME_CAPIBUNDLE_H

#include "runtime/normjit.hpp"
#include "test/Unit/Runtime/TestSupport.h"

#include <optional>
#include <vector>

namespace norm::jit::test {

/// Tests of the C API on the fake driver whose context serves only a
/// bundle (written by a fake-compiler context) of the kernels they open.
class CApiBundleTest : public FakeDriverTest {
protected:
  /// `context`: a C context on the fake driver serving only a bundle of
  /// `specs` (no tuning, no disk cache).
  void openBundleOf(const std::vector<OpSpec> &specs) {
    std::string path = dir / "kernels.njb";
    std::unique_ptr<Context> writer;
    ASSERT_TRUE(Context::create(
                    makeFakeOptions(std::make_shared<FakeCompiler>()), writer)
                    .ok());
    Status written = writer->writeBundle(specs, path);
    ASSERT_TRUE(written.ok()) << written.message();
    normjit_context_options options = normjit::contextOptions();
    options.driver_library = NORM_FAKE_CUDA_LIBRARY;
    const char *bundles[] = {path.c_str()};
    options.bundles = bundles;
    options.num_bundles = 1;
    options.flags = NORMJIT_CONTEXT_NO_TUNING | NORMJIT_CONTEXT_NO_DISK_CACHE;
    options.log_level = 0;
    context.emplace(options);
  }

  TempDir dir;
  std::optional<normjit::Context> context;
};

} // namespace norm::jit::test

#endif // NORM_TEST_RUNTIME_CAPIBUNDLE_H
