//===- OpSpecsTest.cpp - operation checks, identity and buffers -----------===//

#include "runtime/OpSpecs.h"
#include "test/Unit/Runtime/TestSupport.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

using namespace norm::jit;

namespace {

OpSpec rmsNorm(int64_t hidden = 4096) {
  OpSpec spec;
  spec.kind = OpSpec::Kind::RMSNorm;
  spec.hidden = hidden;
  spec.hasWeight = true;
  return spec;
}

/// The status of validateOpSpec, which must be an error mentioning `text`.
void expectInvalid(const OpSpec &spec, const std::string &text) {
  Status status = validateOpSpec(spec);
  ASSERT_FALSE(status.ok()) << "accepted: " << getCanonicalSpec(spec);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(OpSpecs, AcceptsValidOperations) {
  EXPECT_TRUE(validateOpSpec(rmsNorm()).ok());
  OpSpec fused = rmsNorm(7168);
  fused.hasAddend = fused.writeResidual = fused.f32Residual = true;
  fused.alpha = 2.5;
  fused.weightOffset = 1.0;
  EXPECT_TRUE(validateOpSpec(fused).ok());
  OpSpec qk = test::makeQKNorm();
  EXPECT_TRUE(validateOpSpec(qk).ok());
  OpSpec group = rmsNorm(512);
  group.kind = OpSpec::Kind::GroupNorm;
  group.groups = 32;
  EXPECT_TRUE(validateOpSpec(group).ok());
  OpSpec stats;
  stats.kind = OpSpec::Kind::BatchNormStats;
  stats.hidden = 256;
  EXPECT_TRUE(validateOpSpec(stats).ok());
}

TEST(OpSpecs, RejectsBadSizesAndNumbers) {
  expectInvalid(rmsNorm(0), "hidden size must be in [1,");
  expectInvalid(rmsNorm(-4), "got -4");
  expectInvalid(rmsNorm(int64_t(1) << 40), "hidden size");
  OpSpec spec = rmsNorm();
  spec.eps = 0;
  expectInvalid(spec, "eps must be a positive finite number");
  spec.eps = std::numeric_limits<double>::infinity();
  expectInvalid(spec, "eps");
  spec.eps = std::nan("");
  expectInvalid(spec, "eps");
}

TEST(OpSpecs, RejectsUnsupportedCombinations) {
  OpSpec spec = rmsNorm();
  spec.alpha = 2;
  expectInvalid(spec, "alpha needs an addend");
  spec = rmsNorm();
  spec.writeResidual = true;
  expectInvalid(spec, "writing the residual needs an addend");
  spec = rmsNorm();
  spec.f32Residual = true;
  expectInvalid(spec, "f32 residual needs an addend");
  spec = rmsNorm();
  spec.hasWeight = false;
  spec.weightOffset = 1;
  expectInvalid(spec, "weight offset needs a weight");
  spec = rmsNorm();
  spec.groups = 4;
  expectInvalid(spec, "groups apply to group_norm only");
  spec.kind = OpSpec::Kind::GroupNorm;
  spec.groups = 3;
  expectInvalid(spec, "groups (3) must divide the hidden size (4096)");
  spec = rmsNorm();
  spec.numQHeads = 8;
  expectInvalid(spec, "head counts apply to qk_norm only");

  OpSpec qk;
  qk.kind = OpSpec::Kind::QKNormPrologue;
  qk.hidden = 128;
  qk.numQHeads = 32;
  expectInvalid(qk, "positive head counts");
  qk.numKvHeads = 8;
  qk.hasAddend = true;
  expectInvalid(qk, "takes only qkv");

  OpSpec stats;
  stats.kind = OpSpec::Kind::BatchNormStats;
  stats.hidden = 64;
  stats.hasWeight = true;
  expectInvalid(stats, "only an input");

  OpSpec unknown = rmsNorm();
  unknown.kind = static_cast<OpSpec::Kind>(42);
  expectInvalid(unknown, "unknown operation kind 42");
  OpSpec badType = rmsNorm();
  badType.output = static_cast<ElementType>(9);
  expectInvalid(badType, "unknown element type 9");
}

TEST(OpSpecs, CanonicalTextIgnoresUnusedFields) {
  OpSpec a = rmsNorm();
  OpSpec b = a;
  b.addendType = ElementType::f32; // no addend: irrelevant
  b.skipType = ElementType::f16;   // no skip: irrelevant
  EXPECT_EQ(getCanonicalSpec(a), getCanonicalSpec(b));
  b.eps = 1e-5;
  EXPECT_NE(getCanonicalSpec(a), getCanonicalSpec(b));
  OpSpec c = a;
  c.hasAddend = true;
  c.addendType = ElementType::f32;
  OpSpec d = c;
  d.addendType = ElementType::bf16;
  EXPECT_NE(getCanonicalSpec(c), getCanonicalSpec(d));
}

TEST(OpSpecs, CanonicalTextRoundTrips) {
  OpSpec spec = rmsNorm(7168);
  spec.hasAddend = spec.writeResidual = true;
  spec.alpha = 0.1; // not exact in binary: must round trip bit for bit
  spec.eps = 1e-6;
  spec.input = ElementType::f16;
  spec.output = ElementType::f32;
  std::string text = getCanonicalSpec(spec);
  std::string error;
  std::optional<OpSpec> back = parseCanonicalSpec(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(getCanonicalSpec(*back), text);
  EXPECT_EQ(back->alpha, 0.1);
  EXPECT_EQ(back->eps, 1e-6);
  EXPECT_EQ(back->output, ElementType::f32);

  EXPECT_FALSE(parseCanonicalSpec(text + " extra=1", error));
  EXPECT_NE(error.find("unknown operation field 'extra'"), std::string::npos);
  error.clear();
  EXPECT_FALSE(parseCanonicalSpec("op=rms_norm hidden=12", error));
  EXPECT_NE(error.find("lacks field"), std::string::npos);
  error.clear();
  EXPECT_FALSE(parseCanonicalSpec("op=rms_norm hidden=x", error));
}

TEST(OpSpecs, BuffersFollowKernelParameterOrder) {
  OpSpec spec = rmsNorm(2048);
  spec.hasAddend = spec.writeResidual = spec.hasBias = true;
  spec.param = ElementType::f32;
  std::vector<BufferSpec> buffers = getBuffers(spec);
  std::vector<std::string> names;
  for (const BufferSpec &b : buffers)
    names.push_back(std::string(getBufferSlotName(b.slot)));
  EXPECT_EQ(names,
            (std::vector<std::string>{"input", "addend", "weight", "bias",
                                      "output", "residual_out"}));
  EXPECT_EQ(buffers[2].type, ElementType::f32);
  EXPECT_FALSE(buffers[2].rows2D);
  EXPECT_TRUE(buffers[4].written);
  EXPECT_EQ(buffers[5].type, spec.input);
  EXPECT_EQ(getBytesPerRow(spec), 4 * 2048 * 2);

  OpSpec qk = test::makeQKNorm();
  buffers = getBuffers(qk);
  ASSERT_EQ(buffers.size(), 5u);
  EXPECT_EQ(buffers[0].slot, BufferSlot::Qkv);
  EXPECT_EQ(buffers[0].cols, (32 + 16) * 128);
  EXPECT_EQ(buffers[3].slot, BufferSlot::Q);
  EXPECT_EQ(buffers[3].cols, 32 * 128);
  EXPECT_EQ(buffers[4].cols, 8 * 128);
  EXPECT_EQ(getRowLength(qk), 128);

  OpSpec group = rmsNorm(512);
  group.kind = OpSpec::Kind::GroupNorm;
  group.groups = 8;
  EXPECT_EQ(getRowLength(group), 64);
}

TEST(OpSpecs, SlotNamesRoundTrip) {
  for (int i = 0; i < kNumBufferSlots; ++i) {
    auto slot = static_cast<BufferSlot>(i);
    EXPECT_EQ(parseBufferSlot(getBufferSlotName(slot)), slot);
  }
  EXPECT_FALSE(parseBufferSlot("inputs"));
}

} // namespace
