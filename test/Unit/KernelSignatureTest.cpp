//===- KernelSignatureTest.cpp - kernel ABI metadata ----------------------===//

#include "compiler/model/KernelSignature.h"

#include <gtest/gtest.h>

using namespace norm;

namespace {

KernelSignature makeSignature() {
  KernelSignature sig;
  sig.name = "norm_rms_h4096_bf16_v8_t128_w4_r1";
  sig.kind = "fused_row";
  sig.hidden = 4096;
  sig.launch = {8, 128, 4, 4};
  sig.blockThreads = 128;
  sig.sharedBytes = 16;
  KernelParam input{KernelParam::Kind::Buffer, "input", ElementType::bf16,
                    true, true, 16};
  KernelParam weight{KernelParam::Kind::Buffer, "weight", ElementType::f32,
                     false, true, 32};
  KernelParam output{KernelParam::Kind::Buffer, "output", ElementType::bf16,
                     true, false, 16};
  KernelParam rows{KernelParam::Kind::Rows, "rows"};
  KernelParam stride{KernelParam::Kind::RowStride, "input_stride"};
  sig.params = {input, weight, output, rows, stride};
  return sig;
}

TEST(KernelSignature, JsonRoundTrip) {
  KernelSignature sig = makeSignature();
  std::string error;
  std::optional<KernelSignature> back = KernelSignature::fromJson(sig.toJson(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->toJson(), sig.toJson());
  EXPECT_EQ(back->params.size(), 5u);
  EXPECT_EQ(back->params[1].elementType, ElementType::f32);
  EXPECT_TRUE(back->params[0].readOnly);
  EXPECT_FALSE(back->params[2].readOnly);
  EXPECT_EQ(back->params[4].kind, KernelParam::Kind::RowStride);
}

TEST(KernelSignature, InPlaceOutputsRoundTrip) {
  KernelSignature sig = makeSignature();
  sig.params[2].over = "input";
  std::string json = sig.toJson();
  EXPECT_NE(json.find("\"alignment\": 16, \"over\": \"input\"}"),
            std::string::npos)
      << json;
  // Only in-place outputs say it.
  EXPECT_EQ(makeSignature().toJson().find("over"), std::string::npos);
  std::string error;
  std::optional<KernelSignature> back = KernelSignature::fromJson(json, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->params[2].over, "input");
  EXPECT_TRUE(back->describesSameKernel(sig));
  EXPECT_FALSE(back->describesSameKernel(makeSignature()));
  // The pair claims no noalias; the weight and the scalars are not in it.
  EXPECT_TRUE(sig.mayAlias(sig.params[0]));
  EXPECT_TRUE(sig.mayAlias(sig.params[2]));
  EXPECT_FALSE(sig.mayAlias(sig.params[1]));
  EXPECT_FALSE(sig.mayAlias(sig.params[3]));
}

TEST(KernelSignature, PdlRoundTrips) {
  // Programmatic dependent launch: said only where set.
  KernelSignature sig = makeSignature();
  EXPECT_EQ(sig.toJson().find("pdl"), std::string::npos);
  sig.pdl = true;
  std::string error;
  std::optional<KernelSignature> back =
      KernelSignature::fromJson(sig.toJson(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(back->pdl);
  EXPECT_FALSE(back->describesSameKernel(makeSignature()));

  // The target's pdl names the kernel and needs griddepcontrol.
  TargetOptions target;
  target.pdl = true;
  ASSERT_TRUE(target.verify().ok());
  OpSpec spec;
  spec.hidden = 4096;
  spec.hasWeight = true;
  KernelSignature described;
  ASSERT_TRUE(describeKernel(spec, {8, 512, 16, 1}, target, described).ok());
  EXPECT_TRUE(described.pdl);
  EXPECT_EQ(described.name.substr(described.name.size() - 4), "_pdl");
  target.chip = "sm_89";
  EXPECT_NE(target.verify().message().find(
                "pdl needs griddepcontrol, which sm_89 lacks"),
            std::string::npos);
}

TEST(KernelSignature, GridFormula) {
  KernelSignature sig = makeSignature();
  EXPECT_EQ(sig.getGridX(0), 0);
  EXPECT_EQ(sig.getGridX(1), 1);
  EXPECT_EQ(sig.getGridX(9), 3);
  EXPECT_EQ(sig.getGridFormula(), "ceil(rows / 4)");
  sig.rowMultiplier = 40;
  EXPECT_EQ(sig.getGridX(3), 30);
  EXPECT_EQ(sig.getGridFormula(), "ceil(rows * 40 / 4)");
  sig.fixedGridX = 7;
  EXPECT_EQ(sig.getGridX(1000), 7);
}

TEST(KernelSignature, ArrayRoundTrip) {
  std::vector<KernelSignature> sigs = {makeSignature(), makeSignature()};
  sigs[1].name = "other";
  std::string error;
  auto back = signaturesFromJson(signaturesToJson(sigs), error);
  ASSERT_TRUE(back) << error;
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].name, "other");
}

TEST(KernelSignature, RejectsMalformedJson) {
  std::string json = makeSignature().toJson();
  std::string error;
  // Every truncation is rejected with a message, never accepted or crashing.
  for (size_t n = 0; n < json.size(); ++n) {
    error.clear();
    EXPECT_FALSE(KernelSignature::fromJson(json.substr(0, n), error)) << n;
    EXPECT_FALSE(error.empty());
  }
  error.clear();
  EXPECT_FALSE(KernelSignature::fromJson("[1, 2]", error));
  EXPECT_NE(error.find("object"), std::string::npos);
  error.clear();
  std::string wrongType = json;
  wrongType.replace(wrongType.find("\"bf16\""), 6, "\"i8\"");
  EXPECT_FALSE(KernelSignature::fromJson(wrongType, error));
  EXPECT_NE(error.find("element type"), std::string::npos) << error;
  error.clear();
  std::string deep(100, '[');
  EXPECT_FALSE(signaturesFromJson(deep, error));
  EXPECT_NE(error.find("deep"), std::string::npos) << error;
}

TEST(KernelSignature, RejectsInconsistentLaunch) {
  KernelSignature sig = makeSignature();
  sig.blockThreads = 64; // a 4-warp CTA has 128 threads
  std::string error;
  EXPECT_FALSE(KernelSignature::fromJson(sig.toJson(), error));
  EXPECT_NE(error.find("inconsistent"), std::string::npos);
}

} // namespace
