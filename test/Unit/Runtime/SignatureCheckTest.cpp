//===- SignatureCheckTest.cpp - stored kernels are the ones asked for -----===//

#include "runtime/SignatureCheck.h"

#include "runtime/Candidates.h"
#include "test/Unit/Runtime/TestSupport.h"

#include <functional>
#include <gtest/gtest.h>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

/// What FakeCompiler (the generator's signature) gives `spec` with `launch`.
KernelSignature compileSignature(const OpSpec &spec,
                                 const LaunchConfig &launch) {
  FakeCompiler compiler;
  CompiledKernel kernel;
  Status status = compiler.compile(spec, launch, TargetOptions(), kernel);
  EXPECT_TRUE(status.ok()) << status.message();
  return kernel.signature;
}

std::vector<OpSpec> getOperations() {
  std::vector<OpSpec> specs = {makeRmsNorm(), makeQKNorm(),
                               makeRmsNorm(100000)};
  OpSpec group = makeRmsNorm(512);
  group.kind = OpSpec::Kind::GroupNorm;
  group.groups = 32;
  group.hasBias = true;
  specs.push_back(group);
  OpSpec groupBackward = group;
  groupBackward.backward = true;
  specs.push_back(groupBackward);
  OpSpec stats = makeRmsNorm(256);
  stats.kind = OpSpec::Kind::BatchNormStats;
  stats.hasWeight = false;
  specs.push_back(stats);
  OpSpec fused = makeRmsNorm(7168);
  fused.hasAddend = fused.writeResidual = true;
  fused.output = ElementType::f32;
  specs.push_back(fused);
  return specs;
}

TEST(SignatureCheck, AcceptsWhatTheGeneratorWrites) {
  FakeCompiler compiler;
  for (const OpSpec &spec : getOperations())
    for (int64_t rows : {1, 100000}) {
      LaunchConfig launch = compiler.getHeuristicLaunch(spec, rows);
      for (const LaunchConfig &each :
           {launch, getScalarFallback(spec, launch).value_or(launch)}) {
        Status status = checkSignatureFor(compileSignature(spec, each), spec,
                                          each, TargetOptions());
        EXPECT_TRUE(status.ok()) << status.message();
      }
    }
}

TEST(SignatureCheck, LongRowsAreStagedWhereTheTargetSaysSo) {
  // 100000 bf16 values on 1024 threads, vector 8: 12500 vectors, 200000
  // bytes staged per row on sm_90 (227 KiB), streamed on 99 KiB.
  OpSpec spec = makeRmsNorm(100000);
  LaunchConfig launch{8, 1024, 32, 1};
  KernelSignature sig = compileSignature(spec, launch);
  TargetOptions target;
  ASSERT_TRUE(checkSignatureFor(sig, spec, launch, target).ok());
  EXPECT_EQ(sig.sharedBytes, 200000);
  sig.sharedBytes = 1024; // too little for the rows it stages
  Status status = checkSignatureFor(sig, spec, launch, target);
  EXPECT_NE(status.message().find("shared bytes 1024, expected 200000"),
            std::string::npos)
      << status.message();
  // Where the target has not the memory, the kernel streams: another name.
  target.maxSharedBytes = 99 * 1024;
  status = checkSignatureFor(compileSignature(spec, launch), spec, launch,
                             target);
  EXPECT_NE(status.message().find("shared bytes 200000, expected 0"),
            std::string::npos)
      << status.message();
}

TEST(SignatureCheck, RefusesEveryField) {
  OpSpec spec = makeRmsNorm();
  spec.hasAddend = spec.writeResidual = true;
  LaunchConfig launch{8, 128, 4, 1};
  const KernelSignature good = compileSignature(spec, launch);
  ASSERT_TRUE(checkSignatureFor(good, spec, launch, TargetOptions()).ok());
  using Edit = std::function<void(KernelSignature &)>;
  struct Case {
    Edit edit;
    const char *message;
  };
  auto param = [](size_t i, std::function<void(KernelParam &)> edit) {
    return [=](KernelSignature &sig) { edit(sig.params[i]); };
  };
  for (const Case &c : std::vector<Case>{
           {[](KernelSignature &s) { s.launch.rowsPerCta = 2; },
            "launch v8_t128_w4_r2, expected v8_t128_w4_r1"},
           {[](KernelSignature &s) { s.blockThreads = 256; },
            "block threads 256, expected 128"},
           {[](KernelSignature &s) { s.rowMultiplier = 2; },
            "grid ceil(rows * 2 / 1), expected ceil(rows / 1)"},
           {[](KernelSignature &s) { s.fixedGridX = 1; },
            "grid 1, expected ceil(rows / 1)"},
           {[](KernelSignature &s) { s.hidden = 2048; },
            "hidden 2048, expected 4096"},
           {[](KernelSignature &s) { s.kind = "column_stats"; },
            "kind 'column_stats', expected 'fused_row'"},
           {param(0, [](KernelParam &p) { p.name = "addend"; }),
            "parameter 0 buffer 'addend'"},
           {param(0, [](KernelParam &p) { p.elementType = ElementType::f16; }),
            "parameter 0 buffer 'input' f16"},
           {param(0, [](KernelParam &p) { p.rowMajor2D = false; }),
            "parameter 0 buffer 'input' bf16 1-D"},
           {param(2, [](KernelParam &p) { p.readOnly = false; }),
            "parameter 2 buffer 'weight' bf16 1-D written"},
           {param(3, [](KernelParam &p) { p.readOnly = true; }),
            "parameter 3 buffer 'output' bf16 2-D read-only"},
           {param(3, [](KernelParam &p) { p.alignment = 4; }),
            "aligned to 4, expected buffer 'output' bf16 2-D written aligned "
            "to 16"},
           {param(5, [](KernelParam &p) { p.kind = KernelParam::Kind::RowStride; }),
            "parameter 5 row stride 'rows', expected row count 'rows'"},
           {param(6, [](KernelParam &p) { p.name = "output_stride"; }),
            "parameter 6 row stride 'output_stride', expected row stride "
            "'input_stride'"},
           {[](KernelSignature &s) { std::swap(s.params[0], s.params[1]); },
            "parameter 0 buffer 'addend'"},
           {[](KernelSignature &s) { s.params.pop_back(); },
            "parameter 9 missing, expected row stride 'residual_out_stride'"},
           {[](KernelSignature &s) { s.params.push_back(s.params.back()); },
            "parameter 10 row stride 'residual_out_stride', expected none"},
           {[](KernelSignature &s) { s.fallback = "other"; }, "fallback"},
           {[](KernelSignature &s) { s.sharedBytes = 16; },
            "shared bytes 16, expected 0"},
           {[](KernelSignature &s) { s.name = "norm_v8_t128_w4_r2"; },
            "name 'norm_v8_t128_w4_r2', expected 'norm_rms_add_h4096_bf16_bf16_"},
           {[](KernelSignature &s) { s.name += "_stream"; }, "name"},
       }) {
    KernelSignature sig = good;
    c.edit(sig);
    Status status = checkSignatureFor(sig, spec, launch, TargetOptions());
    EXPECT_EQ(status.code(), ErrorCode::Internal) << c.message;
    EXPECT_NE(status.message().find(c.message), std::string::npos)
        << status.message();
  }
}

TEST(SignatureCheck, GroupNormBackwardGridsAreWholeGroups) {
  // 32 groups of 16 channels, 4 rows at once: CTAs in multiples of 8.
  OpSpec spec = makeRmsNorm(512);
  spec.kind = OpSpec::Kind::GroupNorm;
  spec.groups = 32;
  spec.hasBias = spec.backward = true;
  LaunchConfig launch{2, 8, 1, 16};
  KernelSignature sig = compileSignature(spec, launch);
  ASSERT_TRUE(checkSignatureFor(sig, spec, launch, TargetOptions()).ok());
  EXPECT_EQ(sig.gridMultiple, 8);
  sig.gridMultiple = 1; // thread groups would mix groups
  Status status = checkSignatureFor(sig, spec, launch, TargetOptions());
  EXPECT_EQ(status.code(), ErrorCode::Internal);
  EXPECT_NE(status.message().find(
                "grid min(ceil(rows * 32 / 16), 264), expected min(ceil(rows "
                "* 32 / 16) rounded up to a multiple of 8, 264)"),
            std::string::npos)
      << status.message();
}

} // namespace
