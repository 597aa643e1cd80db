//===- LayoutTest.cpp - kernel signatures against operations --------------===//
//
// The runtime checks every kernel's signature against the buffers of its
// operation before the first launch: a compiler (or bundle) that disagrees
// is an Internal error, never a launch with misplaced pointers.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <gtest/gtest.h>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

KernelSignature compileSignature(const OpSpec &spec) {
  FakeCompiler compiler;
  CompiledKernel kernel;
  EXPECT_TRUE(
      compiler.compile(spec, compiler.getHeuristicLaunch(spec, 1), {}, kernel)
          .ok());
  return kernel.signature;
}

/// The error of computeLaunchLayout for `sig`, which must be Internal.
std::string layoutError(const OpSpec &spec, const KernelSignature &sig) {
  LaunchLayout layout;
  Status status = computeLaunchLayout(spec, sig, layout);
  EXPECT_EQ(status.code(), ErrorCode::Internal) << status.message();
  return status.message();
}

TEST(LaunchLayout, FollowsTheSignature) {
  OpSpec spec = makeRmsNorm();
  spec.hasAddend = spec.writeResidual = true;
  KernelSignature sig = compileSignature(spec);
  LaunchLayout layout;
  ASSERT_TRUE(computeLaunchLayout(spec, sig, layout).ok());
  ASSERT_EQ(layout.numParams, 10);
  using Kind = LaunchLayout::Param::Kind;
  EXPECT_EQ(layout.params[0].kind, Kind::Buffer);
  EXPECT_EQ(layout.params[0].slot, static_cast<int>(BufferSlot::Input));
  EXPECT_EQ(layout.params[0].alignment, 16);
  EXPECT_EQ(layout.params[2].slot, static_cast<int>(BufferSlot::Weight));
  EXPECT_FALSE(layout.params[2].rows2D);
  EXPECT_EQ(layout.params[5].kind, Kind::Rows);
  EXPECT_EQ(layout.params[6].kind, Kind::Stride);
  EXPECT_EQ(layout.params[9].slot, static_cast<int>(BufferSlot::ResidualOut));

  // An alignment below the element size is raised to it.
  sig.params[0].alignment = 1;
  ASSERT_TRUE(computeLaunchLayout(spec, sig, layout).ok());
  EXPECT_EQ(layout.params[0].alignment, 2);
}

TEST(LaunchLayout, RejectsSignaturesThatDisagree) {
  OpSpec spec = makeRmsNorm();
  KernelSignature good = compileSignature(spec);

  KernelSignature missing = good;
  missing.params.erase(missing.params.begin() + 1); // weight
  EXPECT_NE(layoutError(spec, missing).find("no parameter for buffer 'weight'"),
            std::string::npos);

  KernelSignature extra = good;
  extra.params.insert(extra.params.begin(),
                      {KernelParam::Kind::Buffer, "bias",
                       norm::ElementType::bf16, false, true, 2});
  EXPECT_NE(layoutError(spec, extra).find("unexpected buffer 'bias'"),
            std::string::npos);

  KernelSignature type = good;
  type.params[0].elementType = norm::ElementType::f32;
  EXPECT_NE(layoutError(spec, type).find("another type or shape"),
            std::string::npos);

  KernelSignature twice = good;
  twice.params.insert(twice.params.begin(), good.params[0]);
  EXPECT_NE(layoutError(spec, twice).find("appears twice"), std::string::npos);

  KernelSignature noRows = good;
  for (size_t i = 0; i < noRows.params.size(); ++i)
    if (noRows.params[i].kind == KernelParam::Kind::Rows)
      noRows.params.erase(noRows.params.begin() + i);
  EXPECT_NE(layoutError(spec, noRows).find("no row count"), std::string::npos);

  KernelSignature stride = good;
  stride.params.push_back({KernelParam::Kind::RowStride, "weight_stride"});
  EXPECT_NE(layoutError(spec, stride).find("unexpected stride 'weight_stride'"),
            std::string::npos);

  KernelSignature alignment = good;
  alignment.params[0].alignment = 12;
  EXPECT_NE(layoutError(spec, alignment).find("bad alignment"),
            std::string::npos);

  KernelSignature block = good;
  block.blockThreads = 2048;
  EXPECT_NE(layoutError(spec, block).find("bad block size"), std::string::npos);

  // A kernel's noalias claims follow its in-place outputs: one built for
  // another pairing is not this operation's.
  KernelSignature overInput = good;
  overInput.params[2].over = "input"; // output
  EXPECT_NE(layoutError(spec, overInput)
                .find("buffer 'output' is written over 'input', the "
                      "operation's over none"),
            std::string::npos);
  OpSpec inPlace = spec;
  inPlace.outputOver = RowOperand::Input;
  LaunchLayout layout;
  EXPECT_TRUE(
      computeLaunchLayout(inPlace, compileSignature(inPlace), layout).ok());
  EXPECT_NE(layoutError(inPlace, good)
                .find("buffer 'output' is written over no input, the "
                      "operation's over 'input'"),
            std::string::npos);
}

} // namespace
