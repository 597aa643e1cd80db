//===- KernelModelTest.cpp - the plain-C++ kernel model -------------------===//
//
// The rules every layer shares: operations, their buffers, launch
// configurations, where rows live, the scalar fallback, targets, and the
// signature of a kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/KernelModel.h"
#include "test/Unit/OpSpecs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace norm;

namespace {

OpSpec rmsNorm(int64_t hidden = 4096, ElementType type = ElementType::bf16) {
  OpSpec spec = examples::makeRmsNorm(hidden);
  spec.input = spec.output = spec.param = type;
  return spec;
}

/// verifyOpSpec must refuse `spec` with a message mentioning `text`.
void expectInvalid(const OpSpec &spec, const std::string &text) {
  Status status = verifyOpSpec(spec);
  ASSERT_FALSE(status.ok()) << "accepted: " << getCanonicalSpec(spec);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

/// `spec` is valid, its canonical text names ` field=1` where that of
/// `without` (the same operation without the field) does not, and the text
/// parses back to itself. Returns the parsed spec.
OpSpec expectCanonicalRoundTrip(const OpSpec &spec, const OpSpec &without,
                                const std::string &field) {
  EXPECT_TRUE(verifyOpSpec(spec)) << verifyOpSpec(spec).message();
  std::string text = getCanonicalSpec(spec);
  std::string other = getCanonicalSpec(without);
  EXPECT_NE(text, other) << "another kernel";
  EXPECT_NE(text.find(" " + field + "=1"), std::string::npos) << text;
  EXPECT_EQ(other.find(field), std::string::npos) << other;
  std::string error;
  std::optional<OpSpec> parsed = parseCanonicalSpec(text, error);
  EXPECT_TRUE(parsed) << error;
  if (!parsed)
    return spec;
  EXPECT_EQ(getCanonicalSpec(*parsed), text);
  return *parsed;
}

void expectLaunchInvalid(const OpSpec &spec, const LaunchConfig &launch,
                         const std::string &text) {
  Status status = verifyLaunchFor(spec, launch);
  ASSERT_FALSE(status.ok()) << launch.getMangledSuffix();
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

TEST(Operations, AcceptsValidOperations) {
  EXPECT_TRUE(verifyOpSpec(rmsNorm()).ok());
  OpSpec fused = rmsNorm(7168);
  fused.hasAddend = fused.writeResidual = fused.f32Residual = true;
  fused.alpha = 2.5;
  fused.weightOffset = 1.0;
  EXPECT_TRUE(verifyOpSpec(fused).ok());
  EXPECT_TRUE(verifyOpSpec(examples::makeQKNorm()).ok());
  OpSpec group = rmsNorm(512);
  group.kind = OpKind::GroupNorm;
  group.groups = 32;
  EXPECT_TRUE(verifyOpSpec(group).ok());
  OpSpec stats;
  stats.kind = OpKind::BatchNormStats;
  stats.hidden = 256;
  EXPECT_TRUE(verifyOpSpec(stats).ok());
  // Gemma 3's QK-Norm and a per-head LayerNorm, with one key/value head.
  OpSpec qk = examples::makeQKNorm();
  qk.numKvHeads = 1;
  qk.weightOffset = 1.0;
  EXPECT_TRUE(verifyOpSpec(qk).ok());
  qk.qkStatistic = Statistic::MeanVar;
  EXPECT_TRUE(verifyOpSpec(qk).ok());
  // Elementwise kernels read no eps: 0 is fine there.
  OpSpec add = rmsNorm();
  add.kind = OpKind::Elementwise;
  add.hasWeight = false;
  add.hasAddend = true;
  add.eps = 0;
  EXPECT_TRUE(verifyOpSpec(add).ok());
  EXPECT_FALSE(usesEps(add));
  EXPECT_EQ(getCanonicalSpec(add), getCanonicalSpec(normalizeOpSpec(add)));
}

TEST(Operations, RejectsBadSizesAndNumbers) {
  expectInvalid(rmsNorm(0), "hidden size must be in [1,");
  expectInvalid(rmsNorm(-4), "got -4");
  expectInvalid(rmsNorm(int64_t(1) << 40), "hidden size");
  expectInvalid(rmsNorm(kMaxRowLength + 1), "hidden size");
  OpSpec spec = rmsNorm();
  spec.eps = 0;
  expectInvalid(spec, "eps must be a positive finite number, got 0.0");
  spec.eps = std::numeric_limits<double>::infinity();
  expectInvalid(spec, "got +inf");
  spec.eps = std::nan("");
  expectInvalid(spec, "got NaN");
  spec = rmsNorm();
  spec.hasAddend = true;
  spec.alpha = -1;
  expectInvalid(spec, "alpha must be a positive finite number");
  spec = rmsNorm();
  spec.weightOffset = std::nan("");
  expectInvalid(spec, "weight_offset must be a finite number");
}

TEST(Operations, RejectsUnsupportedCombinations) {
  OpSpec spec = rmsNorm();
  spec.alpha = 2;
  expectInvalid(spec, "alpha needs an addend");
  spec = rmsNorm();
  spec.writeResidual = true;
  expectInvalid(spec, "residual_out needs an addend");
  spec = rmsNorm();
  spec.f32Residual = true;
  expectInvalid(spec, "f32_residual needs an addend");
  spec = rmsNorm();
  spec.hasWeight = false;
  spec.weightOffset = 1;
  expectInvalid(spec, "weight_offset needs a weight");
  spec = rmsNorm();
  spec.kind = OpKind::Elementwise;
  spec.groups = 4;
  expectInvalid(spec, "groups > 1 needs a statistic");
  spec.kind = OpKind::GroupNorm;
  spec.groups = 3;
  expectInvalid(spec, "groups (3) must divide the hidden size (4096)");
  spec.groups = 0;
  expectInvalid(spec, "groups must be positive, got 0");
  spec = rmsNorm();
  spec.numQHeads = 8;
  expectInvalid(spec, "head counts apply to qk_norm only");

  OpSpec qk = examples::makeQKNorm();
  qk.numKvHeads = 0;
  expectInvalid(qk, "positive head counts");
  qk.numKvHeads = 8;
  qk.hasAddend = true;
  expectInvalid(qk, "takes only qkv");
  qk.hasAddend = false;
  qk.qkStatistic = Statistic::None;
  expectInvalid(qk, "QK-Norm needs a statistic");
  qk = examples::makeQKNorm();
  qk.hasWeight = false;
  qk.weightOffset = 1.0;
  expectInvalid(qk, "weight_offset needs a weight");
  qk = examples::makeQKNorm();
  qk.numQHeads = int64_t(1) << 20;
  expectInvalid(qk, "packed qkv row");

  OpSpec stats;
  stats.kind = OpKind::BatchNormStats;
  stats.hidden = 64;
  stats.hasWeight = true;
  expectInvalid(stats, "only an input");

  OpSpec unknown = rmsNorm();
  unknown.kind = static_cast<OpKind>(42);
  expectInvalid(unknown, "unknown operation kind 42");
  OpSpec badType = rmsNorm();
  badType.output = static_cast<ElementType>(9);
  expectInvalid(badType, "unknown element type 9");
}

TEST(Operations, CanonicalTextIgnoresUnusedFields) {
  OpSpec a = rmsNorm();
  OpSpec b = a;
  b.addendType = ElementType::f32; // no addend: irrelevant
  b.skipType = ElementType::f16;   // no skip: irrelevant
  b.statsType = ElementType::f32;  // no per-channel statistics: irrelevant
  EXPECT_EQ(getCanonicalSpec(a), getCanonicalSpec(b));
  b.eps = 1e-5;
  EXPECT_NE(getCanonicalSpec(a), getCanonicalSpec(b));
  OpSpec c = a;
  c.hasAddend = true;
  c.addendType = ElementType::f32;
  OpSpec d = c;
  d.addendType = ElementType::bf16;
  EXPECT_NE(getCanonicalSpec(c), getCanonicalSpec(d));
  // LayerNorm over groups is GroupNorm: one identity for one kernel.
  OpSpec layer = rmsNorm(512);
  layer.kind = OpKind::LayerNorm;
  layer.groups = 8;
  OpSpec group = layer;
  group.kind = OpKind::GroupNorm;
  EXPECT_EQ(getCanonicalSpec(layer), getCanonicalSpec(group));
}

TEST(Operations, CanonicalTextRoundTrips) {
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

  OpSpec qk = examples::makeQKNorm();
  qk.qkStatistic = Statistic::MeanVar;
  qk.weightOffset = 1.0;
  back = parseCanonicalSpec(getCanonicalSpec(qk), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->qkStatistic, Statistic::MeanVar);
  EXPECT_EQ(back->weightOffset, 1.0);

  // In place: fields only where set, so other kernels keep their names.
  OpSpec vllm = spec;
  vllm.residualOver = RowOperand::Input;
  vllm.outputOver = RowOperand::Addend;
  vllm.output = vllm.addendType = ElementType::f16;
  std::string inPlace = getCanonicalSpec(vllm);
  EXPECT_NE(inPlace.find(" output_over=addend residual_over=input"),
            std::string::npos)
      << inPlace;
  EXPECT_EQ(text.find("_over"), std::string::npos) << text;
  back = parseCanonicalSpec(inPlace, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->outputOver, RowOperand::Addend);
  EXPECT_EQ(back->residualOver, RowOperand::Input);
  EXPECT_EQ(getCanonicalSpec(*back), inPlace);
  EXPECT_FALSE(parseCanonicalSpec(text + " output_over=weight", error));
  EXPECT_NE(error.find("field 'output_over' is not a row operand"),
            std::string::npos)
      << error;
  error.clear();

  EXPECT_FALSE(parseCanonicalSpec(text + " extra=1", error));
  EXPECT_NE(error.find("unknown operation field 'extra'"), std::string::npos);
  error.clear();
  EXPECT_FALSE(parseCanonicalSpec("op=rms_norm hidden=12", error));
  EXPECT_NE(error.find("lacks field"), std::string::npos);
  error.clear();
  EXPECT_FALSE(parseCanonicalSpec("op=rms_norm hidden=x", error));
}

/// verifyOpSpec refuses `spec` with a message that contains `message`.
void refused(const OpSpec &spec, const std::string &message) {
  Status status = verifyOpSpec(spec);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(message), std::string::npos)
      << status.message();
}

TEST(Operations, InPlaceRules) {
  OpSpec vllm = rmsNorm(4096);
  vllm.hasAddend = vllm.writeResidual = true;
  vllm.residualOver = RowOperand::Input;
  vllm.outputOver = RowOperand::Addend;
  EXPECT_TRUE(verifyOpSpec(vllm).ok());
  // Every row kind may: elementwise residual adds and GroupNorm included.
  OpSpec group = vllm;
  group.kind = OpKind::GroupNorm;
  group.groups = 32;
  EXPECT_TRUE(verifyOpSpec(group).ok());
  OpSpec add = vllm;
  add.kind = OpKind::Elementwise;
  EXPECT_TRUE(verifyOpSpec(add).ok()) << verifyOpSpec(add).message();

  OpSpec cast = vllm;
  cast.output = ElementType::f32;
  refused(cast, "output (f32) cannot overwrite 'addend' (bf16)");
  OpSpec sameInput = vllm;
  sameInput.outputOver = RowOperand::Input;
  refused(sameInput, "output and residual_out cannot both overwrite 'input'");
  OpSpec noResidual = vllm;
  noResidual.writeResidual = false;
  refused(noResidual, "residual_over needs residual_out");
  OpSpec qk = examples::makeQKNorm();
  qk.outputOver = RowOperand::Input;
  refused(qk, "apply to forward row kernels");
  OpSpec unknown = vllm;
  unknown.outputOver = static_cast<RowOperand>(7);
  refused(unknown, "unknown in-place operand 7");

  // The buffers name the inputs their outputs may overwrite.
  for (const BufferSpec &buffer : getBuffers(vllm)) {
    std::optional<BufferSlot> over =
        buffer.slot == BufferSlot::Output        ? BufferSlot::Addend
        : buffer.slot == BufferSlot::ResidualOut ? BufferSlot::Input
                                                 : std::optional<BufferSlot>();
    EXPECT_EQ(buffer.over, over) << getBufferSlotName(buffer.slot);
  }
  // The backward of an in-place forward is not in place.
  vllm.saveStats = true;
  BackwardKernels backward;
  ASSERT_TRUE(getBackwardKernels(vllm, backward).ok());
  ASSERT_EQ(backward.rows.size(), 1u);
  EXPECT_EQ(backward.rows[0].outputOver, RowOperand::None);
  EXPECT_EQ(backward.rows[0].residualOver, RowOperand::None);
}

TEST(Operations, Fp8OutputRules) {
  OpSpec spec = rmsNorm(4096);
  spec.hasAddend = spec.writeResidual = true;
  spec.output = ElementType::f8E4M3FN;
  spec.outputScale = OutputScale::Static;
  EXPECT_TRUE(verifyOpSpec(spec).ok()) << verifyOpSpec(spec).message();
  OpSpec token = spec;
  token.output = ElementType::f8E5M2;
  token.outputScale = OutputScale::PerToken;
  token.scaleUpperBound = true;
  EXPECT_TRUE(verifyOpSpec(token).ok()) << verifyOpSpec(token).message();

  OpSpec unscaled = spec;
  unscaled.outputScale = OutputScale::None;
  refused(unscaled, "an FP8 output (f8E4M3FN) needs a scale");
  OpSpec bf16 = spec;
  bf16.output = ElementType::bf16;
  refused(bf16, "output scales quantize FP8 outputs");
  OpSpec grouped = token;
  grouped.kind = OpKind::GroupNorm;
  grouped.groups = 32;
  refused(grouped, "groups must be 1, got 32");
  OpSpec bounded = spec;
  bounded.scaleUpperBound = true;
  refused(bounded, "scale_ub bounds per-token FP8 scales only");
  OpSpec skip = spec;
  skip.hasSkip = true;
  refused(skip, "a skip (Sandwich-Norm) add before it is not supported");
  OpSpec backward = spec;
  backward.backward = true;
  refused(backward, "written by forward row kernels only");
  OpSpec qk = examples::makeQKNorm();
  qk.output = ElementType::f8E4M3FN;
  qk.outputScale = OutputScale::Static;
  refused(qk, "written by forward row kernels only");
  // FP8 is an output type only.
  OpSpec input = spec;
  input.input = ElementType::f8E4M3FN;
  refused(input, "FP8 (f8E4M3FN) is the type of quantized outputs only");

  // The buffers: the scalars after the row inputs, the scales after
  // residual_out, each f32 one element wide.
  std::vector<BufferSlot> slots;
  for (const BufferSpec &buffer : getBuffers(token))
    slots.push_back(buffer.slot);
  EXPECT_EQ(slots, (std::vector<BufferSlot>{
                       BufferSlot::Input, BufferSlot::Addend,
                       BufferSlot::Weight, BufferSlot::ScaleUpperBound,
                       BufferSlot::Output, BufferSlot::ResidualOut,
                       BufferSlot::OutputScales}));
  EXPECT_TRUE(isParameterBuffer(BufferSlot::OutputScale));
  EXPECT_FALSE(isParameterBuffer(BufferSlot::OutputScales));

  // Identity: the fields only where set; a round trip keeps them.
  std::string text = getCanonicalSpec(token);
  EXPECT_NE(text.find("output=f8E5M2"), std::string::npos) << text;
  EXPECT_NE(text.find(" output_scale=per_token scale_ub=1"), std::string::npos)
      << text;
  EXPECT_EQ(getCanonicalSpec(rmsNorm(4096)).find("scale"), std::string::npos);
  std::string error;
  std::optional<OpSpec> back = parseCanonicalSpec(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->outputScale, OutputScale::PerToken);
  EXPECT_TRUE(back->scaleUpperBound);
  EXPECT_EQ(getCanonicalSpec(*back), text);
  EXPECT_NE(getCanonicalSpec(spec), text);
  EXPECT_FALSE(parseCanonicalSpec(text + " output_scale=dynamic", error));

  // vLLM's per-token scale: amax / fp8_max, bounded, at least
  // 1 / (fp8_max * 512).
  EXPECT_EQ(getPerTokenScale(ElementType::f8E4M3FN, 448.0, std::nullopt),
            1.0);
  EXPECT_EQ(getPerTokenScale(ElementType::f8E4M3FN, 896.0, 448.0), 1.0);
  EXPECT_EQ(getPerTokenScale(ElementType::f8E5M2, 0.0, std::nullopt),
            1.0 / (57344.0 * 512));
  EXPECT_TRUE(std::isnan(getPerTokenScale(
      ElementType::f8E4M3FN, std::numeric_limits<double>::quiet_NaN(),
      std::nullopt)));
}

TEST(Launches, PerTokenScalesNeedRowsHeldWhole) {
  TargetOptions sm90;
  int64_t shared = sm90.getMaxSharedBytes();
  OpSpec spec = rmsNorm(100000);
  spec.output = ElementType::f8E4M3FN;
  spec.outputScale = OutputScale::PerToken;
  LaunchConfig launch = getHeuristicLaunch(spec, 4096);
  EXPECT_EQ(getRowStorage(spec, launch, shared), RowStorage::Shared);
  EXPECT_TRUE(verifyLaunchFor(spec, launch, shared).ok());
  // Without a statistic too: the amax needs the row staged.
  OpSpec add = spec;
  add.kind = OpKind::Elementwise;
  add.hasAddend = true;
  EXPECT_EQ(getRowStorage(add, getHeuristicLaunch(add, 4096), shared),
            RowStorage::Shared);
  spec.hidden = 262144;
  launch = getHeuristicLaunch(spec, 4096);
  ASSERT_EQ(getRowStorage(spec, launch, shared), RowStorage::Streamed);
  Status status = verifyLaunchFor(spec, launch, shared);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported) << status.message();
  EXPECT_NE(status.message().find("use a static scale there"),
            std::string::npos)
      << status.message();
  // A static scale streams.
  spec.outputScale = OutputScale::Static;
  EXPECT_TRUE(verifyLaunchFor(spec, launch, shared).ok());
  // cvt to FP8: sm_90 from PTX 7.8, sm_89 from PTX 8.1, never sm_80.
  TargetOptions sm89;
  sm89.chip = "sm_89";
  EXPECT_TRUE(sm90.hasFp8Conversions());
  EXPECT_FALSE(sm89.hasFp8Conversions());
  sm89.ptxVersion = 81;
  EXPECT_TRUE(sm89.hasFp8Conversions());
  TargetOptions sm80;
  sm80.chip = "sm_80";
  sm80.ptxVersion = 90;
  EXPECT_FALSE(sm80.hasFp8Conversions());
}

TEST(Launches, InPlaceResidualsNeedRowsReadWhole) {
  // bf16 rows of up to 115712 elements stage in the 227 KiB of an sm_90
  // CTA; longer ones stream, storing residual_out in their first pass.
  TargetOptions sm90;
  int64_t shared = sm90.getMaxSharedBytes();
  OpSpec spec = rmsNorm(115712);
  spec.hasAddend = spec.writeResidual = true;
  spec.residualOver = RowOperand::Input;
  LaunchConfig launch = getHeuristicLaunch(spec, 4096);
  EXPECT_EQ(getRowStorage(spec, launch, shared), RowStorage::Shared);
  EXPECT_TRUE(verifyLaunchFor(spec, launch, shared).ok());
  spec.hidden = 115720;
  launch = getHeuristicLaunch(spec, 4096);
  ASSERT_EQ(getRowStorage(spec, launch, shared), RowStorage::Streamed);
  // RMS rows read v back from residual_out, each thread its own elements:
  // in place even streamed.
  ASSERT_TRUE(readsResidualBack(spec));
  Status status = verifyLaunchFor(spec, launch, shared);
  EXPECT_TRUE(status.ok()) << status.message();
  // Not with an f32 residual stream: the second pass reads the input again.
  OpSpec f32 = spec;
  f32.f32Residual = true;
  LaunchConfig f32Launch = getHeuristicLaunch(f32, 4096);
  ASSERT_EQ(getRowStorage(f32, f32Launch, shared), RowStorage::Streamed);
  EXPECT_FALSE(readsResidualBack(f32));
  status = verifyLaunchFor(f32, f32Launch, shared);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported) << status.message();
  // Nor mean_var rows: every thread reads the first element (the pivot).
  OpSpec layer = spec;
  layer.kind = OpKind::LayerNorm;
  LaunchConfig layerLaunch = getHeuristicLaunch(layer, 4096);
  ASSERT_EQ(getRowStorage(layer, layerLaunch, shared), RowStorage::Streamed);
  status = verifyLaunchFor(layer, layerLaunch, shared);
  EXPECT_EQ(status.code(), ErrorCode::Unsupported) << status.message();
  EXPECT_NE(status.message().find("mean_var rows"), std::string::npos)
      << status.message();
  // The output alone may be in place there: it is stored after the
  // exchange, each element by the thread that read it.
  spec.residualOver = RowOperand::None;
  spec.outputOver = RowOperand::Input;
  EXPECT_TRUE(verifyLaunchFor(spec, launch, shared).ok());
  // Without a statistic, one pass: in place at any length.
  OpSpec add = spec;
  add.kind = OpKind::Elementwise;
  add.outputOver = RowOperand::None;
  add.residualOver = RowOperand::Input;
  LaunchConfig addLaunch = getHeuristicLaunch(add, 4096);
  EXPECT_TRUE(verifyLaunchFor(add, addLaunch, shared).ok());
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

TEST(Buffers, FollowKernelParameterOrder) {
  OpSpec spec = rmsNorm(2048);
  spec.hasAddend = spec.writeResidual = spec.hasBias = spec.hasSkip = true;
  spec.param = ElementType::f32;
  std::vector<BufferSpec> buffers = getBuffers(spec);
  std::vector<std::string> names;
  for (const BufferSpec &b : buffers)
    names.push_back(std::string(getBufferSlotName(b.slot)));
  EXPECT_EQ(names,
            (std::vector<std::string>{"input", "addend", "skip", "weight",
                                      "bias", "output", "residual_out"}));
  EXPECT_EQ(buffers[3].type, ElementType::f32);
  EXPECT_FALSE(buffers[3].rows2D);
  EXPECT_TRUE(buffers[5].written);
  EXPECT_EQ(buffers[6].type, spec.input);
  EXPECT_EQ(getBytesPerRow(spec), 5 * 2048 * 2);

  OpSpec bn = rmsNorm(256);
  bn.kind = OpKind::BatchNormInference;
  bn.statsType = ElementType::f32;
  buffers = getBuffers(bn);
  ASSERT_EQ(buffers.size(), 5u);
  EXPECT_EQ(buffers[1].type, ElementType::bf16); // the weight
  EXPECT_EQ(buffers[2].slot, BufferSlot::Mean);
  EXPECT_EQ(buffers[2].type, ElementType::f32);

  OpSpec qk = examples::makeQKNorm();
  buffers = getBuffers(qk);
  ASSERT_EQ(buffers.size(), 5u);
  EXPECT_EQ(buffers[0].slot, BufferSlot::Qkv);
  EXPECT_EQ(buffers[0].cols, (32 + 16) * 128);
  EXPECT_EQ(buffers[3].slot, BufferSlot::Q);
  EXPECT_EQ(buffers[3].cols, 32 * 128);
  EXPECT_EQ(buffers[4].cols, 8 * 128);
  EXPECT_EQ(getRowLength(qk), 128);
  EXPECT_EQ(getRowsPerToken(qk), 40);

  OpSpec group = rmsNorm(512);
  group.kind = OpKind::GroupNorm;
  group.groups = 8;
  EXPECT_EQ(getRowLength(group), 64);
  EXPECT_EQ(getRowsPerToken(group), 8);
}

//===----------------------------------------------------------------------===//
// Training kernels
//===----------------------------------------------------------------------===//

static std::vector<std::string> getBufferNames(const OpSpec &spec) {
  std::vector<std::string> names;
  for (const BufferSpec &b : getBuffers(spec))
    names.push_back(std::string(getBufferSlotName(b.slot)));
  return names;
}

TEST(Training, BackwardBuffersFollowTheForward) {
  // DeepNorm pre-norm block, LayerNorm-style: every buffer there is.
  OpSpec spec = rmsNorm(4096);
  spec.kind = OpKind::LayerNorm;
  spec.hasAddend = spec.writeResidual = spec.hasBias = spec.backward = true;
  spec.alpha = 2.0;
  spec.addendType = ElementType::f32;
  ASSERT_TRUE(verifyOpSpec(spec)) << verifyOpSpec(spec).message();
  EXPECT_EQ(getBufferNames(spec),
            (std::vector<std::string>{
                "input", "grad_output", "residual_grad", "weight",
                "saved_mean", "saved_rstd", "grad_input", "addend_grad",
                "weight_grad_partials", "bias_grad_partials"}));
  std::vector<BufferSpec> buffers = getBuffers(spec);
  EXPECT_EQ(buffers[5].cols, 1);
  EXPECT_EQ(buffers[5].type, ElementType::f32);
  EXPECT_EQ(buffers[7].type, ElementType::f32); // the addend's type
  EXPECT_TRUE(buffers[8].ownRows && buffers[8].written);
  EXPECT_FALSE(hasVectorRows(buffers[5]));
  EXPECT_FALSE(hasVectorRows(buffers[8]));
  EXPECT_EQ(getKernelOpName(spec), "fused_row_grad");
  EXPECT_FALSE(usesEps(spec));
  // x, dy, dh, dx, df (f32) and the saved statistics; not the partials.
  EXPECT_EQ(getBytesPerRow(spec), 4 * 4096 * 2 + 4096 * 4 + 2 * 4);

  // RMSNorm without alpha: grad_input is the addend's gradient too.
  OpSpec rms = rmsNorm(4096);
  rms.backward = true;
  EXPECT_EQ(getBufferNames(rms),
            (std::vector<std::string>{"input", "grad_output", "weight",
                                      "saved_rstd", "grad_input",
                                      "weight_grad_partials"}));

  OpSpec forward = rmsNorm(4096);
  forward.kind = OpKind::GroupNorm;
  forward.groups = 32;
  forward.saveStats = true;
  buffers = getBuffers(forward);
  EXPECT_EQ(getBufferNames(forward),
            (std::vector<std::string>{"input", "weight", "output",
                                      "saved_mean", "saved_rstd"}));
  EXPECT_EQ(buffers[4].cols, 32);

  OpSpec sum = rmsNorm(4096);
  sum.kind = OpKind::ColumnSum;
  sum.hasWeight = false;
  sum.input = ElementType::f32;
  EXPECT_EQ(getBufferNames(sum),
            (std::vector<std::string>{"input", "output"}));
  EXPECT_EQ(getKernelOpName(sum), "column_sum");
}

TEST(Training, RulesOfBackwardAndSavedStatistics) {
  auto message = [](const OpSpec &spec) { return verifyOpSpec(spec).message(); };
  OpSpec spec = rmsNorm(1024);
  spec.backward = true;
  spec.kind = OpKind::GroupNorm;
  spec.groups = 4;
  EXPECT_TRUE(verifyOpSpec(spec)) << message(spec);
  EXPECT_TRUE(hasGroupedWeightGradients(spec));
  spec.kind = OpKind::BatchNormInference;
  spec.groups = 1;
  EXPECT_NE(message(spec).find("batch_norm_inference has none yet"),
            std::string::npos);
  spec = rmsNorm(1024);
  spec.backward = spec.hasAddend = spec.f32Residual = true;
  EXPECT_NE(message(spec).find("f32_residual does not store"),
            std::string::npos);
  spec = rmsNorm(1024);
  spec.backward = spec.hasSkip = true;
  EXPECT_NE(message(spec).find("Sandwich skip is grad_output itself"),
            std::string::npos);
  spec = rmsNorm(1024);
  spec.backward = spec.saveStats = true;
  EXPECT_NE(message(spec).find("save_stats applies to forward kernels"),
            std::string::npos);
  spec = rmsNorm(1024);
  spec.kind = OpKind::Elementwise;
  spec.saveStats = true;
  EXPECT_NE(message(spec).find("save_stats needs a statistic"),
            std::string::npos);
  OpSpec qk = examples::makeQKNorm();
  qk.backward = true;
  EXPECT_NE(message(qk).find("the QK-Norm prologue's backward is one per head"),
            std::string::npos);
  qk.backward = false;
  qk.saveStats = true;
  EXPECT_TRUE(verifyOpSpec(qk)) << message(qk);
  OpSpec stats = rmsNorm(64);
  stats.kind = OpKind::BatchNormStats;
  stats.hasWeight = false;
  stats.saveStats = true;
  EXPECT_NE(message(stats).find("save_stats applies to row kernels, the QK-Norm prologue and K-prepare"),
            std::string::npos);
  OpSpec sum = rmsNorm(64);
  sum.kind = OpKind::ColumnSum;
  EXPECT_NE(message(sum).find("takes only its f32 partial rows"),
            std::string::npos);
  sum.hasWeight = false;
  EXPECT_NE(message(sum).find("reduces f32 partial rows, got bf16"),
            std::string::npos);
}

TEST(Training, IdentitiesAndPartials) {
  OpSpec spec = rmsNorm(2880);
  spec.backward = true;
  spec.eps = 1e-5; // a backward kernel does not read it
  OpSpec other = spec;
  other.eps = 1e-6;
  EXPECT_EQ(getCanonicalSpec(spec), getCanonicalSpec(other));
  // An addend without alpha or residual stream changes nothing backward.
  other.hasAddend = true;
  other.addendType = ElementType::f32;
  EXPECT_EQ(getCanonicalSpec(spec), getCanonicalSpec(other));
  other.alpha = 2.0;
  EXPECT_NE(getCanonicalSpec(spec), getCanonicalSpec(other));

  OpSpec forward = rmsNorm(2880);
  OpSpec saving = forward;
  saving.saveStats = true;
  EXPECT_NE(getCanonicalSpec(forward), getCanonicalSpec(saving));
  EXPECT_EQ(getCanonicalSpec(forward).find("save_stats"), std::string::npos);
  for (const OpSpec &s : {spec, other, saving}) {
    std::string error;
    std::optional<OpSpec> back = parseCanonicalSpec(getCanonicalSpec(s), error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(getCanonicalSpec(*back), getCanonicalSpec(s));
    EXPECT_EQ(back->backward, s.backward);
    EXPECT_EQ(back->saveStats, s.saveStats);
  }

  // One partial row per thread group and CTA: ceil(rows / rows_per_cta) x
  // the rows at once.
  LaunchConfig launch{8, 32, 4, 16};
  EXPECT_EQ(getGradPartialRows(spec, launch, 0), 0);
  EXPECT_EQ(getGradPartialRows(spec, launch, 1), 4);
  EXPECT_EQ(getGradPartialRows(spec, launch, 33), 12);
  // Per-head QK-Norm backward (8 heads of 128 sharing a weight): a kernel
  // row per head.
  OpSpec heads = rmsNorm(8 * 128);
  heads.backward = heads.perHeadWeight = true;
  heads.groups = 8;
  ASSERT_TRUE(verifyOpSpec(heads)) << verifyOpSpec(heads).message();
  EXPECT_EQ(getGradPartialRows(heads, launch, 5), 12);
  std::vector<BufferSpec> buffers = getBuffers(heads);
  EXPECT_EQ(buffers[2].slot, BufferSlot::Weight);
  EXPECT_EQ(buffers[2].cols, 128);
  EXPECT_EQ(buffers[3].cols, 8); // saved_rstd: one per head
  EXPECT_EQ(buffers.back().cols, 128);
  // Groups with their own channels (RMS over 8 groups of 128): thread
  // groups in whole groups, 8 of them a partial row of the hidden size, the
  // weight and its gradient hidden-wide. 4 rows at once: CTAs in pairs.
  OpSpec grouped = heads;
  grouped.perHeadWeight = false;
  ASSERT_TRUE(verifyOpSpec(grouped)) << verifyOpSpec(grouped).message();
  EXPECT_EQ(getBackwardGridMultiple(heads, launch), 1);
  EXPECT_EQ(getBackwardGridMultiple(grouped, LaunchConfig{8, 16, 4, 16}), 1);
  launch = LaunchConfig{8, 16, 2, 16};
  EXPECT_EQ(getBackwardGridMultiple(grouped, launch), 2);
  EXPECT_EQ(getGradPartialRows(grouped, launch, 1), 1);  // 2 CTAs, 8 groups
  EXPECT_EQ(getGradPartialRows(grouped, launch, 5), 2);  // 3 -> 4 CTAs
  EXPECT_EQ(getGradPartialRows(grouped, launch, 0), 0);
  buffers = getBuffers(grouped);
  EXPECT_EQ(buffers[2].cols, 1024);
  EXPECT_EQ(buffers.back().cols, 1024);
  EXPECT_EQ(getGradientSums(grouped)[0].columnSum.hidden, 1024);
  KernelSignature groupedSig;
  ASSERT_TRUE(describeKernel(grouped, launch, TargetOptions(), groupedSig));
  EXPECT_EQ(groupedSig.gridMultiple, 2);
  EXPECT_EQ(groupedSig.getGridX(5), 4);
  EXPECT_EQ(groupedSig.getGridFormula(),
            "min(ceil(rows * 8 / 16) rounded up to a multiple of 2, 264)");
  std::string jsonError;
  std::optional<KernelSignature> parsed =
      KernelSignature::fromJson(groupedSig.toJson(), jsonError);
  ASSERT_TRUE(parsed) << jsonError;
  EXPECT_TRUE(parsed->describesSameKernel(groupedSig));
  // The cap rounds down to whole multiples, never below one.
  EXPECT_EQ(getPersistentGridX(1 << 20, 1, 264, 32), 256);
  EXPECT_EQ(getPersistentGridX(1 << 20, 1, 264, 300), 300);
  EXPECT_EQ(getPersistentGridX(33, 1, 264, 32), 64);
  EXPECT_EQ(getPersistentGridX(0, 1, 264, 32), 0);
  EXPECT_EQ(getPersistentGridX(33, 16, 264, 1), 3);
  OpSpec headsForward = heads;
  headsForward.backward = false;
  EXPECT_NE(verifyOpSpec(headsForward).message().find(
                "per_head_weight applies to backward kernels"),
            std::string::npos);
  // A persistent grid of at most two waves whatever the rows, one partial
  // row per thread group of each of its CTAs.
  OpSpec llama = rmsNorm(4096);
  llama.backward = true;
  for (int64_t rows : {1, 5, 4096, 65536, 1 << 20}) {
    LaunchConfig heuristic = getHeuristicLaunch(llama, rows);
    ASSERT_TRUE(verifyLaunchFor(llama, heuristic)) << rows;
    EXPECT_TRUE(fitsInRegisters(llama, heuristic)) << rows;
    KernelSignature sig;
    ASSERT_TRUE(describeKernel(llama, heuristic, TargetOptions(), sig));
    EXPECT_EQ(sig.maxGridX, kBackwardCtas);
    int64_t blocks = (rows + heuristic.rowsPerCta - 1) / heuristic.rowsPerCta;
    EXPECT_EQ(sig.getGridX(rows), std::min(blocks, kBackwardCtas)) << rows;
    EXPECT_EQ(getGradPartialRows(llama, heuristic, rows),
              sig.getGridX(rows) * heuristic.getConcurrentRows())
        << rows;
  }
  EXPECT_EQ(getGradPartialRows(llama, getHeuristicLaunch(llama, 1 << 20),
                               1 << 20),
            kBackwardCtas * getHeuristicLaunch(llama, 1 << 20)
                                .getConcurrentRows());
}

TEST(Training, BackwardKernelsDeriveFromTheForward) {
  // A Sandwich pre-norm block with a bias: one backward row kernel (the
  // skip's gradient is grad_output), two column sums.
  OpSpec block = rmsNorm(5120);
  block.kind = OpKind::LayerNorm;
  block.hasAddend = block.writeResidual = block.hasSkip = block.hasBias = true;
  block.param = ElementType::f32;
  block.saveStats = true;
  BackwardKernels kernels;
  ASSERT_TRUE(getBackwardKernels(block, kernels));
  ASSERT_EQ(kernels.rows.size(), 1u);
  const OpSpec &row = kernels.rows[0];
  EXPECT_TRUE(row.backward);
  EXPECT_FALSE(row.hasSkip || row.saveStats);
  EXPECT_TRUE(row.writeResidual && row.hasBias);
  ASSERT_EQ(kernels.columnSums.size(), 2u);
  EXPECT_EQ(kernels.columnSums[1].hidden, 5120);
  EXPECT_EQ(kernels.columnSums[1].output, ElementType::f32);
  for (const OpSpec &sum : kernels.columnSums)
    EXPECT_TRUE(verifyOpSpec(sum)) << verifyOpSpec(sum).message();

  // QK-Norm (32 q / 8 kv heads of 128, Gemma's 1 + w): q heads, k heads.
  OpSpec qk = examples::makeQKNorm();
  qk.weightOffset = 1.0;
  ASSERT_TRUE(getBackwardKernels(qk, kernels));
  ASSERT_EQ(kernels.rows.size(), 2u);
  EXPECT_EQ(kernels.rows[0].hidden, 32 * 128);
  EXPECT_EQ(kernels.rows[0].groups, 32);
  EXPECT_EQ(kernels.rows[1].hidden, 8 * 128);
  EXPECT_TRUE(kernels.rows[1].perHeadWeight);
  EXPECT_EQ(kernels.rows[1].weightOffset, 1.0);
  ASSERT_EQ(kernels.columnSums.size(), 2u);
  EXPECT_EQ(kernels.columnSums[0].hidden, 128);
  // One k head (multi-query): a plain row.
  qk.numKvHeads = 1;
  ASSERT_TRUE(getBackwardKernels(qk, kernels));
  EXPECT_EQ(kernels.rows[1].groups, 1);
  EXPECT_EQ(getBuffers(kernels.rows[1])[2].cols, 128); // the weight

  OpSpec cast = rmsNorm(64);
  cast.kind = OpKind::Elementwise;
  cast.hasWeight = false;
  Status status = getBackwardKernels(cast, kernels);
  EXPECT_NE(status.message().find("elementwise has none yet"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(kernels.rows.empty());
  OpSpec deep = rmsNorm(64);
  deep.hasAddend = deep.f32Residual = true;
  EXPECT_NE(getBackwardKernels(deep, kernels).message().find("f32_residual"),
            std::string::npos);
}

TEST(Buffers, SlotNamesRoundTrip) {
  for (int i = 0; i < kNumBufferSlots; ++i) {
    auto slot = static_cast<BufferSlot>(i);
    EXPECT_EQ(parseBufferSlot(getBufferSlotName(slot)), slot);
  }
  EXPECT_FALSE(parseBufferSlot("inputs"));
}

//===----------------------------------------------------------------------===//
// Launch configurations
//===----------------------------------------------------------------------===//

TEST(Launch, Rules) {
  EXPECT_TRUE(verifyLaunch({8, 128, 4, 1}).ok());
  EXPECT_TRUE(verifyLaunch({8, 16, 4, 8}).ok());
  EXPECT_TRUE(verifyLaunch({8, 896, 28, 1}).ok());
  auto message = [](const LaunchConfig &launch) {
    return verifyLaunch(launch).message();
  };
  EXPECT_EQ(message({3, 128, 4, 1}), "vector width must be 1, 2, 4 or 8, got 3");
  EXPECT_EQ(message({8, 48, 4, 1}), "threads_per_row must be 1, 2, 4, 8, 16 "
                                    "or a multiple of 32 up to 1024, got 48");
  EXPECT_FALSE(verifyLaunch({8, 12, 4, 1}).ok());
  EXPECT_EQ(message({8, 2048, 64, 1}),
            "threads_per_row must be 1, 2, 4, 8, 16 or a multiple of 32 up "
            "to 1024, got 2048");
  EXPECT_EQ(message({8, 256, 4, 1}), "threads_per_row (256) must divide the "
                                     "128 threads of a CTA of 4 warps");
  EXPECT_EQ(message({8, 16, 4, 4}), "rows_per_cta (4) must be a positive "
                                    "multiple of the 8 rows a CTA works on at "
                                    "once");
  EXPECT_EQ(message({1, 96, 4, 1}), "threads_per_row (96) must divide the 128 "
                                    "threads of a CTA of 4 warps");
}

TEST(Launch, RulesForTheRows) {
  OpSpec rms = rmsNorm(128);
  EXPECT_TRUE(verifyLaunchFor(rms, {8, 16, 4, 8}).ok());
  expectLaunchInvalid(rms, {8, 32, 1, 1},
                      "leaves threads without work: 32 threads x vector 8 "
                      "for rows of 128 elements");
  OpSpec f32 = rmsNorm(128, ElementType::f32);
  expectLaunchInvalid(f32, {8, 16, 4, 8},
                      "launch vector width 8 of f32 moves 32 bytes per access "
                      "(at most 16)");
  // The widest row buffer decides: a bf16 row cast to f32.
  OpSpec cast = rms;
  cast.output = ElementType::f32;
  expectLaunchInvalid(cast, {8, 16, 4, 8}, "of f32 moves 32 bytes");
  // Groups and heads start one after another: the vector divides them.
  OpSpec group = rmsNorm(96);
  group.kind = OpKind::GroupNorm;
  group.groups = 8; // groups of 12
  expectLaunchInvalid(group, {8, 1, 1, 32}, "vector (8) must divide the 12");
  EXPECT_TRUE(verifyLaunchFor(group, {4, 1, 1, 32}).ok());
  // Row kernels stage or stream shares beyond registers; the QK-Norm
  // prologue keeps heads in registers.
  EXPECT_TRUE(verifyLaunchFor(rms, {1, 1, 1, 32}).ok());
  OpSpec qk = examples::makeQKNorm();
  expectLaunchInvalid(qk, {1, 1, 1, 32}, "elements of a row per thread in "
                                         "registers");
  EXPECT_TRUE(verifyLaunchFor(qk, {8, 16, 4, 8}).ok());
  qk.hidden = 100000;
  expectLaunchInvalid(qk, {8, 1024, 32, 1},
                      "do not fit in the registers of one CTA");
  // Column statistics map threads onto columns: only the access width.
  OpSpec stats;
  stats.kind = OpKind::BatchNormStats;
  stats.hidden = 100000;
  EXPECT_TRUE(verifyLaunchFor(stats, {4, 16, 4, 8}).ok());
}

TEST(Launch, ParseSuffix) {
  LaunchConfig launch{8, 128, 4, 1};
  EXPECT_EQ(parseLaunchSuffix(launch.getMangledSuffix()), launch);
  EXPECT_FALSE(parseLaunchSuffix("v8_t128_w4_r1x"));
  EXPECT_FALSE(parseLaunchSuffix("v8_t128_w4"));
  EXPECT_FALSE(parseLaunchSuffix("v3_t128_w4_r1"));
  EXPECT_FALSE(parseLaunchSuffix("v08_t128_w4_r1")); // not canonical
}

TEST(Launch, MaxVector) {
  EXPECT_EQ(getMaxVector(rmsNorm(4096)), 8);
  EXPECT_EQ(getMaxVector(rmsNorm(4096, ElementType::f32)), 4);
  EXPECT_EQ(getMaxVector(rmsNorm(4100)), 4);
  EXPECT_EQ(getMaxVector(rmsNorm(769)), 1);
  OpSpec mixed = rmsNorm(4096);
  mixed.output = ElementType::f32; // the widest row buffer decides
  EXPECT_EQ(getMaxVector(mixed), 4);
}

//===----------------------------------------------------------------------===//
// Registers and row storage
//===----------------------------------------------------------------------===//

// A thread of a 1024-thread CTA has 64 registers, one of a 512-thread CTA
// 128: the share of a row registers hold shrinks with the CTA.
TEST(Storage, RegistersFollowTheCtaSize) {
  EXPECT_EQ(getRegistersPerThread(1024), 64);
  EXPECT_EQ(getRegistersPerThread(768), 80);
  EXPECT_EQ(getRegistersPerThread(512), 128);
  EXPECT_EQ(getRegistersPerThread(128), 255);
  OpSpec rms = rmsNorm(65536); // v and the weight: 4 bytes an element
  EXPECT_EQ(getRegisterBytesPerVector(rms, 8), 32);
  EXPECT_EQ(getMaxElementsPerThread(rms, 512, 8), kMaxElementsPerThread);
  EXPECT_EQ(getMaxElementsPerThread(rms, 1024, 8), 32);
  EXPECT_EQ(getMaxElementsPerThread(rms, 768, 8), 40);
  // 64 elements a thread at 1024 threads spilled (ptxas, sm_80 and sm_90):
  // hidden 65536 leaves registers whatever the configuration.
  EXPECT_FALSE(fitsInRegisters(rms, {8, 1024, 32, 1}));
  EXPECT_FALSE(fitsInRegisters(rms, {8, 512, 16, 1}));
  EXPECT_TRUE(fitsInRegisters(rmsNorm(32768), {8, 512, 16, 1}));
  EXPECT_TRUE(fitsInRegisters(rmsNorm(16384), {8, 1024, 32, 1}));
  EXPECT_TRUE(fitsInRegisters(rmsNorm(32768), {8, 1024, 32, 1}));
  EXPECT_FALSE(fitsInRegisters(rmsNorm(32768 + 8), {8, 1024, 32, 1}));
  // f32 rows and more parameters take more registers per element.
  OpSpec layer = rmsNorm(4096, ElementType::f32);
  layer.kind = OpKind::LayerNorm;
  layer.hasBias = true;
  EXPECT_EQ(getRegisterBytesPerVector(layer, 4), 48);
  EXPECT_EQ(getMaxElementsPerThread(layer, 1024, 4), 8);
  OpSpec qk = examples::makeQKNorm(); // bf16 head and both weights
  EXPECT_EQ(getRegisterBytesPerVector(qk, 8), 48);
}

// A lone bf16 takes a whole register: rows of odd length (the scalar
// fallback) hold half as many elements. At 1024 threads, 32 elements of a
// thread spilled 32 bytes, 28 none (ptxas, sm_90).
TEST(Storage, ScalarAccessesTakeWholeRegisters) {
  OpSpec rms = rmsNorm(4096);
  EXPECT_EQ(getRegisterBytesPerVector(rms, 1), 8);
  EXPECT_EQ(getRegisterBytesPerVector(rms, 2), 8);
  EXPECT_EQ(getMaxElementsPerThread(rms, 1024, 1), 16);
  EXPECT_EQ(getMaxElementsPerThread(rms, 512, 1), 37);
  EXPECT_TRUE(fitsInRegisters(rmsNorm(16 * 1024), {1, 1024, 32, 1}));
  EXPECT_FALSE(fitsInRegisters(rmsNorm(16 * 1024 + 1), {1, 1024, 32, 1}));
  EXPECT_TRUE(fitsInRegisters(rmsNorm(16 * 1024 + 2), {2, 1024, 32, 1}));
  // f32 elements fill their registers at any vector.
  OpSpec f32 = rmsNorm(4096, ElementType::f32);
  EXPECT_EQ(getRegisterBytesPerVector(f32, 1) * 4,
            getRegisterBytesPerVector(f32, 4));
}

// Where a CTA of 256 threads could give a thread 255 registers, the rule
// counts on kRegisterBudget: ptxas kept bf16 LayerNorm with 60 elements a
// thread at 128 registers, and spilled.
TEST(Storage, RegistersBeyondTheBudgetAreNotCountedOn) {
  OpSpec layer = rmsNorm(4096);
  layer.kind = OpKind::LayerNorm;
  layer.hasBias = true;
  EXPECT_EQ(getMaxElementsPerThread(layer, 256, 2),
            getMaxElementsPerThread(layer, 512, 2));
  EXPECT_LT(getMaxElementsPerThread(layer, 256, 2), 60);
}

TEST(Storage, LongRowsAreStagedWhereTheTargetHasRoom) {
  OpSpec rms = rmsNorm(100000);
  LaunchConfig launch{8, 1024, 32, 1};
  TargetOptions sm90, sm80, sm89;
  sm80.chip = "sm_80";
  sm89.chip = "sm_89";
  EXPECT_EQ(getRowStorage(rms, launch, sm90.getMaxSharedBytes()),
            RowStorage::Shared);
  EXPECT_EQ(getRowStorage(rms, launch, sm80.getMaxSharedBytes()),
            RowStorage::Streamed);
  EXPECT_EQ(getRowStorage(rms, launch, sm89.getMaxSharedBytes()),
            RowStorage::Streamed);
  EXPECT_EQ(getStagedRowBytes(rms, 8), 200000);
  EXPECT_EQ(getSharedBytes(rms, launch, sm90.getMaxSharedBytes()), 200000);
  EXPECT_EQ(getSharedBytes(rms, launch, sm80.getMaxSharedBytes()), 0);
  // Without a statistic one pass is all there is.
  OpSpec add = rms;
  add.kind = OpKind::Elementwise;
  add.hasWeight = false;
  add.hasAddend = true;
  EXPECT_EQ(getRowStorage(add, launch, sm90.getMaxSharedBytes()),
            RowStorage::Streamed);
  // An f32 residual stream is staged in f32; partial vectors stay whole and
  // rows 16-byte aligned.
  OpSpec f32 = rmsNorm(2881);
  f32.hasAddend = f32.f32Residual = true;
  EXPECT_EQ(getStagedRowBytes(f32, 1), 11536);
  EXPECT_EQ(getStagedRowBytes(rmsNorm(2881), 1), 5776);
}

TEST(Storage, BackwardRowsBeyondRegistersStageVAndGradOutput) {
  TargetOptions sm90, sm89;
  sm89.chip = "sm_89";
  int64_t shared90 = sm90.getMaxSharedBytes();
  // bf16 RMSNorm: registers up to 8192, staged (v and dy, the column sums
  // in registers) up to 32 elements a thread in CTAs of 512: 16384.
  OpSpec rms = rmsNorm(16384);
  rms.backward = true;
  LaunchConfig heuristic = getHeuristicLaunch(rms, 4096);
  EXPECT_EQ(heuristic, (LaunchConfig{8, 512, 16, 1}));
  EXPECT_FALSE(fitsInRegisters(rms, heuristic));
  EXPECT_TRUE(fitsInRegisters(rms, heuristic, RowStorage::Shared));
  EXPECT_EQ(getRowStorage(rms, heuristic, shared90), RowStorage::Shared);
  EXPECT_EQ(getStagedTypes(rms),
            (std::vector<ElementType>{ElementType::bf16, ElementType::bf16}));
  EXPECT_EQ(getStagedRowBytes(rms, 8), 2 * 32768);
  EXPECT_EQ(getSharedBytes(rms, heuristic, shared90), 2 * 32768);
  EXPECT_TRUE(verifyLaunchFor(rms, heuristic, shared90));
  KernelSignature sig;
  ASSERT_TRUE(describeKernel(rms, heuristic, sm90, sig));
  EXPECT_EQ(sig.sharedBytes, 2 * 32768);
  EXPECT_NE(sig.name.find("_smem"), std::string::npos) << sig.name;
  EXPECT_EQ(sig.maxGridX, kBackwardCtas);
  // Not in CTAs of 1024 threads (64 registers a thread), nor 48 elements a
  // thread, nor beyond 16384 elements.
  Status big = verifyLaunchFor(rms, {8, 1024, 32, 1}, shared90);
  EXPECT_EQ(big.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(big.message().find("at most 512 threads"), std::string::npos)
      << big.message();
  EXPECT_FALSE(fitsInRegisters(rms, {8, 1024, 32, 1}, RowStorage::Shared));
  OpSpec wider = rmsNorm(24576);
  wider.backward = true;
  EXPECT_EQ(getMaxElementsPerThread(wider, 512, 8, RowStorage::Shared), 32);
  EXPECT_EQ(verifyLaunchFor(wider, getHeuristicLaunch(wider, 1)).code(),
            ErrorCode::Unsupported);
  // f32 LayerNorm with a bias: two column sums an element, 512 threads;
  // twice the bytes staged, more than sm_89's CTAs may use.
  OpSpec layer = rmsNorm(16384, ElementType::f32);
  layer.kind = OpKind::LayerNorm;
  layer.hasBias = layer.backward = true;
  layer.param = ElementType::f32;
  LaunchConfig layerLaunch = getHeuristicLaunch(layer, 4096);
  EXPECT_EQ(layerLaunch, (LaunchConfig{4, 512, 16, 1}));
  EXPECT_EQ(getSharedBytes(layer, layerLaunch, shared90), 2 * 65536);
  Status sm89Status =
      verifyLaunchFor(layer, layerLaunch, sm89.getMaxSharedBytes());
  EXPECT_EQ(sm89Status.code(), ErrorCode::Unsupported);
  EXPECT_NE(sm89Status.message().find("131072 bytes of shared memory"),
            std::string::npos)
      << sm89Status.message();
  EXPECT_FALSE(describeKernel(layer, layerLaunch, sm89, sig));
  // Four rows at a time stage four rows of each, region after region.
  OpSpec narrow = rmsNorm(1000);
  narrow.backward = true;
  LaunchConfig four{8, 32, 4, 8};
  EXPECT_FALSE(fitsInRegisters(narrow, four));
  EXPECT_EQ(getRowStorage(narrow, four, shared90), RowStorage::Shared);
  EXPECT_EQ(getSharedBytes(narrow, four, shared90), 4 * 2 * 2000);
  // Without column sums (L2 without a weight) nothing but the cap of the
  // unrolled chunks.
  OpSpec l2 = rmsNorm(16384);
  l2.kind = OpKind::L2Norm;
  l2.hasWeight = false;
  l2.backward = true;
  EXPECT_EQ(getRegisterBytesPerVector(l2, 8, RowStorage::Shared), 0);
  EXPECT_EQ(getMaxElementsPerThread(l2, 512, 8, RowStorage::Shared), 32);
}

TEST(Storage, ScalarFallback) {
  // Same mapping where one thread can hold its share of the row.
  EXPECT_EQ(getScalarFallback(rmsNorm(4096), {8, 512, 16, 1}),
            (LaunchConfig{1, 512, 16, 1}));
  // A vector configuration that stages its rows has a scalar twin that
  // stages them too: the same mapping.
  EXPECT_EQ(getScalarFallback(rmsNorm(16384), {8, 128, 4, 1}),
            (LaunchConfig{1, 128, 4, 1}));
  EXPECT_FALSE(getScalarFallback(rmsNorm(4096), {1, 512, 16, 1}))
      << "a scalar configuration is its own fallback";
  // Rows per CTA stay a multiple of the rows a CTA works on.
  std::optional<LaunchConfig> small =
      getScalarFallback(rmsNorm(769), {8, 8, 4, 16});
  ASSERT_TRUE(small);
  EXPECT_TRUE(verifyLaunchFor(rmsNorm(769), *small).ok());
  EXPECT_EQ(small->rowsPerCta % small->getConcurrentRows(), 0);
  // Rows beyond registers keep the mapping: the scalar kernel stages or
  // streams them as the vector kernel does.
  EXPECT_EQ(getScalarFallback(rmsNorm(1 << 17), {8, 1024, 32, 1}),
            (LaunchConfig{1, 1024, 32, 1}));
  // ... but QK-Norm heads that long fit no configuration.
  OpSpec qk = examples::makeQKNorm();
  qk.hidden = 1 << 17;
  EXPECT_FALSE(getScalarFallback(qk, {8, 1024, 32, 1}));
  // Every fallback of a heuristic configuration is valid.
  for (int64_t hidden : {64, 128, 769, 2880, 4096, 7168, 16384, 32768, 65536})
    for (ElementType type : {ElementType::bf16, ElementType::f32}) {
      OpSpec spec = rmsNorm(hidden, type);
      LaunchConfig launch = getHeuristicLaunch(spec, 4096);
      if (std::optional<LaunchConfig> scalar =
              getScalarFallback(spec, launch)) {
        EXPECT_TRUE(verifyLaunchFor(spec, *scalar).ok())
            << hidden << " " << scalar->getMangledSuffix();
      }
    }
}

TEST(Heuristic, ConfigurationsFitTheirRows) {
  for (int64_t hidden : {1, 3, 64, 128, 768, 769, 1152, 2048, 2880, 4096,
                         4544, 5120, 7168, 8192, 16384, 32768, 65536, 100000})
    for (ElementType type : {ElementType::bf16, ElementType::f32})
      for (int64_t rows : {-1, 1, 4096}) {
        OpSpec spec = rmsNorm(hidden, type);
        LaunchConfig launch = getHeuristicLaunch(spec, rows);
        EXPECT_TRUE(verifyLaunchFor(spec, launch).ok())
            << hidden << " " << launch.getMangledSuffix();
      }
  // One 16-byte vector per thread for 8192, a ladder for short rows.
  EXPECT_EQ(getHeuristicLaunch(rmsNorm(8192), -1), (LaunchConfig{8, 1024, 32, 1}));
  EXPECT_EQ(getHeuristicLaunch(rmsNorm(128), -1), (LaunchConfig{8, 16, 4, 8}));
  // QK-Norm heads of every common size fit in registers.
  for (int64_t headDim : {64, 96, 128, 256}) {
    OpSpec qk = examples::makeQKNorm();
    qk.hidden = headDim;
    LaunchConfig launch = getHeuristicLaunch(qk, 4096);
    EXPECT_TRUE(verifyLaunchFor(qk, launch).ok()) << headDim;
  }
}

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

TEST(Targets, ChipsAndTheirSharedMemory) {
  ASSERT_TRUE(findChip("sm_80"));
  EXPECT_EQ(findChip("sm_80")->maxSharedBytesPerCta, 166912);
  EXPECT_EQ(findChip("sm_89")->maxSharedBytesPerCta, 101376);
  EXPECT_EQ(findChip("sm_90")->maxSharedBytesPerCta, 232448);
  EXPECT_EQ(findChip("sm_90a")->maxSharedBytesPerCta, 232448);
  EXPECT_FALSE(findChip("sm_75"));
  TargetOptions target;
  EXPECT_TRUE(target.verify().ok());
  EXPECT_EQ(target.getMaxSharedBytes(), 232448);
  target.maxSharedBytes = 101376;
  EXPECT_EQ(target.getMaxSharedBytes(), 101376);
  target.chip = "sm_75";
  EXPECT_EQ(target.verify().message(),
            "unsupported chip 'sm_75' (expected sm_80, sm_89, sm_90 or sm_90a)");
  target.chip = "sm_89";
  target.maxSharedBytes = 200000;
  EXPECT_NE(target.verify().message().find("exceeds what a CTA may use on "
                                           "sm_89 (101376)"),
            std::string::npos);
  target.maxSharedBytes = -1;
  EXPECT_FALSE(target.verify().ok());
  target.maxSharedBytes = 0;
  target.ptxVersion = 70;
  EXPECT_NE(target.verify().message().find("unsupported ptx-version 70"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Kernel signatures
//===----------------------------------------------------------------------===//

TEST(Signatures, DescribeTheKernel) {
  OpSpec spec = rmsNorm(4096);
  spec.hasAddend = spec.writeResidual = true;
  KernelSignature sig;
  ASSERT_TRUE(describeKernel(spec, {8, 512, 16, 1}, TargetOptions(), sig).ok());
  EXPECT_EQ(sig.kind, "fused_row");
  EXPECT_EQ(sig.name.rfind("norm_rms_add_h4096_bf16_bf16_", 0), 0u) << sig.name;
  EXPECT_EQ(sig.name.substr(sig.name.size() - 15), "_v8_t512_w16_r1");
  EXPECT_EQ(sig.blockThreads, 512);
  EXPECT_EQ(sig.sharedBytes, 0);
  std::string names;
  for (const KernelParam &param : sig.params)
    names += param.name + ":" + std::to_string(param.alignment) +
             (param.readOnly ? "r " : " ");
  EXPECT_EQ(names, "input:16r addend:16r weight:16r output:16 residual_out:16 "
                   "rows:1 input_stride:1 addend_stride:1 output_stride:1 "
                   "residual_out_stride:1 ");
  EXPECT_EQ(sig.getGridX(1000), 1000);

  // Alignment follows the vector, at most 16 bytes.
  ASSERT_TRUE(describeKernel(spec, {2, 512, 16, 1}, TargetOptions(), sig).ok());
  EXPECT_EQ(sig.params[0].alignment, 4);

  // Staged rows: their shared memory and the _smem name.
  ASSERT_TRUE(describeKernel(rmsNorm(100000), {8, 1024, 32, 1},
                             TargetOptions(), sig)
                  .ok());
  EXPECT_EQ(sig.sharedBytes, 200000);
  EXPECT_EQ(sig.name.substr(sig.name.size() - 5), "_smem");

  // QK-Norm rows are heads; column statistics have a fixed grid.
  ASSERT_TRUE(
      describeKernel(examples::makeQKNorm(), {8, 16, 4, 8}, TargetOptions(), sig)
          .ok());
  EXPECT_EQ(sig.kind, "qk_norm_prologue");
  EXPECT_EQ(sig.rowMultiplier, 40);
  EXPECT_EQ(sig.getGridX(10), 50);
  OpSpec stats;
  stats.kind = OpKind::BatchNormStats;
  stats.hidden = 1000;
  ASSERT_TRUE(describeKernel(stats, {4, 16, 4, 8}, TargetOptions(), sig).ok());
  EXPECT_EQ(sig.fixedGridX, 32); // 250 tiles, 8 per CTA
  EXPECT_EQ(sig.params.back().name, "input_stride");

  // Invalid requests are refused with the rule they break.
  Status status = describeKernel(rmsNorm(128), {8, 32, 1, 1}, TargetOptions(), sig);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("without work"), std::string::npos);
}

TEST(Signatures, NamesDependOnEverySemanticField) {
  LaunchConfig launch{8, 512, 16, 1};
  TargetOptions target;
  OpSpec base = rmsNorm(4096);
  std::string name = getKernelName(base, launch, target);
  auto differs = [&](auto change) {
    OpSpec spec = base;
    change(spec);
    return getKernelName(spec, launch, target) != name;
  };
  EXPECT_TRUE(differs([](OpSpec &s) { s.eps = 1e-5; }));
  EXPECT_TRUE(differs([](OpSpec &s) { s.weightOffset = 1.0; }));
  EXPECT_TRUE(differs([](OpSpec &s) { s.param = ElementType::f32; }));
  EXPECT_TRUE(differs([](OpSpec &s) { s.hasBias = true; }));
  EXPECT_FALSE(differs([](OpSpec &s) { s.addendType = ElementType::f32; }))
      << "no addend: its type is not part of the kernel";
  EXPECT_EQ(name, getKernelName(base, launch, target)) << "stable";
}

} // namespace

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {

// Shared-memory bank conflicts of the attention tiles at every head dim
// served: an ldmatrix matrix is 8 consecutive rows (from a multiple of 8) at
// one chunk column, 8 16-byte reads that are one wavefront only if they
// fall in 8 different 16-byte bank groups (slot mod 8). Rows of 10, 12 or
// 20 chunks (head dims 80, 96, 160) with a 2- or 4-chunk swizzle and no
// padding put two rows in one group.
//
// An FP8 cache's byte tiles: rows of D bytes in 16-byte chunks, read by
// ldmatrix of byte pairs the same way (getFp8TileLayout).
TEST(Attention, TileLayoutsAreFreeOfBankConflicts) {
  for (bool fp8 : {false, true})
    for (int64_t headDim = 16; headDim <= kMaxAttentionHeadDim; headDim += 16) {
      AttentionTileLayout layout =
          fp8 ? getFp8TileLayout(headDim) : getAttentionTileLayout(headDim);
      ASSERT_EQ(layout.rowChunks, headDim / (fp8 ? 16 : 8));
      for (int64_t first = 0; first < 128; first += 8)
        for (int64_t chunk = 0; chunk < layout.rowChunks; ++chunk) {
          std::set<int64_t> groups;
          for (int64_t row = first; row < first + 8; ++row)
            groups.insert(layout.getSlot(row, chunk) % 8);
          EXPECT_EQ(groups.size(), 8u) << "head dim " << headDim << ", rows "
                                       << first << "+, chunk " << chunk;
        }
      // Each row's chunks in distinct slots of its own pitch.
      for (int64_t row = 0; row < 16; ++row) {
        std::set<int64_t> slots;
        for (int64_t chunk = 0; chunk < layout.rowChunks; ++chunk) {
          int64_t slot = layout.getSlot(row, chunk);
          EXPECT_GE(slot, row * layout.pitchChunks);
          EXPECT_LT(slot, (row + 1) * layout.pitchChunks);
          slots.insert(slot);
        }
        EXPECT_EQ(static_cast<int64_t>(slots.size()), layout.rowChunks);
      }
      // Padding only where the swizzle cannot serve and the row is even: one
      // chunk a row.
      EXPECT_EQ(layout.pitchChunks - layout.rowChunks,
                layout.rowChunks % 8 == 0 || layout.rowChunks % 2 ? 0 : 1)
          << headDim;
    }
  // The tiles' bytes follow the padded rows: head dim 96, 64 query rows,
  // two stages of 64 keys and values, 13 chunks a row.
  OpSpec spec;
  spec.kind = OpKind::Attention;
  spec.hidden = 96;
  LaunchConfig launch;
  launch.rowsPerCta = 64;
  launch.blockN = 64;
  launch.stages = 2;
  EXPECT_EQ(getAttentionSharedBytes(spec, launch), (64 + 4 * 64) * 13 * 16);
  // Decode over an FP8 cache: one stage of bf16 tiles (for new keys,
  // getAttentionWideStages) and its byte tiles, 6 chunks padded to 7.
  spec.kind = OpKind::AttentionDecode;
  spec.fp8Cache = true;
  launch.rowsPerCta = 16;
  EXPECT_EQ(getAttentionSharedBytes(spec, launch),
            (16 + 2 * 64) * 13 * 16 + 4 * 64 * 7 * 16);
}

TEST(Attention, OperationRules) {
  OpSpec spec = examples::makeAttention();
  EXPECT_TRUE(verifyOpSpec(spec));
  spec.qkStatistic = Statistic::None;
  spec.hasWeight = false;
  spec.eps = 0.0;
  EXPECT_TRUE(verifyOpSpec(spec)) << "attention without QK-Norm";
  for (int64_t d : {16, 64, 96, 128, 160, 256}) {
    OpSpec s = examples::makeAttention();
    s.hidden = d;
    EXPECT_TRUE(verifyOpSpec(s)) << d;
  }
  for (int64_t d : {8, 72, 100, 272, 512}) {
    OpSpec s = examples::makeAttention();
    s.hidden = d;
    expectInvalid(s, "multiple of 16");
  }
  OpSpec gqa = examples::makeAttention();
  gqa.numKvHeads = 5;
  expectInvalid(gqa, "must divide the 32 query heads");
  OpSpec f32 = examples::makeAttention();
  f32.input = f32.output = ElementType::f32;
  expectInvalid(f32, "bf16 or f16");
  OpSpec mixed = examples::makeAttention();
  mixed.output = ElementType::f16;
  expectInvalid(mixed, "one type");
  OpSpec weightless = examples::makeAttention();
  weightless.qkStatistic = Statistic::None;
  expectInvalid(weightless, "QK-Norm weights need a QK-Norm statistic");
  OpSpec scale = examples::makeAttention();
  scale.scale = 0.0;
  expectInvalid(scale, "scale must be a positive finite number");
  OpSpec offset = examples::makeAttention();
  offset.hasWeight = false;
  offset.weightOffset = 1.0;
  expectInvalid(offset, "weight_offset needs a weight");
  OpSpec eps = examples::makeAttention();
  eps.eps = 0.0;
  expectInvalid(eps, "eps");
  // The attention fields belong to attention only.
  OpSpec row = rmsNorm();
  row.causal = true;
  expectInvalid(row, "apply to attention only");
}

TEST(Attention, CanonicalTextRoundTripsAndIsolatesTheKinds) {
  OpSpec spec = examples::makeAttention();
  spec.writeLse = true;
  std::string text = getCanonicalSpec(spec);
  EXPECT_NE(text.find("causal=1"), std::string::npos) << text;
  std::string error;
  std::optional<OpSpec> parsed = parseCanonicalSpec(text, error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_EQ(getCanonicalSpec(*parsed), text);
  EXPECT_TRUE(parsed->causal && parsed->writeLse);
  EXPECT_EQ(parsed->scale, spec.scale);
  // Row kernels' identities do not mention the attention fields.
  EXPECT_EQ(getCanonicalSpec(rmsNorm()).find("causal"), std::string::npos);
  // Without QK-Norm, the norm's fields do not change the identity.
  OpSpec plain = examples::makeAttention(), other = plain;
  plain.qkStatistic = other.qkStatistic = Statistic::None;
  plain.hasWeight = other.hasWeight = false;
  other.eps = 1e-5;
  EXPECT_EQ(getCanonicalSpec(plain), getCanonicalSpec(other));
}

TEST(Attention, RopeRules) {
  OpSpec spec = examples::makeAttention();
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = spec.hidden;
  spec.ropeTheta = 1e6;
  EXPECT_TRUE(verifyOpSpec(spec));
  OpSpec partial = spec;
  partial.rotaryDim = 64; // ChatGLM, half of 128
  EXPECT_TRUE(verifyOpSpec(partial));
  OpSpec gptj = spec;
  gptj.rope = RopeStyle::GptJ;
  gptj.rotaryDim = 24;
  EXPECT_TRUE(verifyOpSpec(gptj)) << "gptj pairs fill 8-element chunks";
  OpSpec stablelm = spec;
  stablelm.rotaryDim = 24; // pairs one at a time, as StableLM's 20 of 80
  EXPECT_TRUE(verifyOpSpec(stablelm));
  OpSpec odd = spec;
  odd.rotaryDim = 25;
  expectInvalid(odd, "neox rotary embeddings need an even rotary dim from 2 "
                     "to the head dim (128), got 25");
  OpSpec wide = spec;
  wide.rotaryDim = 144;
  expectInvalid(wide, "to the head dim (128), got 144");
  OpSpec none = spec;
  none.rotaryDim = 0;
  expectInvalid(none, "got 0");
  for (double theta : {0.0, -1.0, 1.0, std::numeric_limits<double>::infinity(),
                       std::nan("")}) {
    OpSpec s = spec;
    s.ropeTheta = theta;
    expectInvalid(s, "rope_theta");
  }
  OpSpec row = rmsNorm();
  row.rope = RopeStyle::NeoX;
  expectInvalid(row, "rotary embeddings (rope) apply to attention, the "
                     "QK-Norm prologue and K-prepare only");
  // theta^(-2i / d): 1 at pair 0, 1 / theta at the half-way pair.
  EXPECT_EQ(getRopeFrequency(1e4, 128, 0), 1.0);
  EXPECT_DOUBLE_EQ(getRopeFrequency(1e4, 128, 32), 1e-2);
  for (RopeStyle style : {RopeStyle::None, RopeStyle::NeoX, RopeStyle::GptJ})
    EXPECT_EQ(parseRopeStyleName(getRopeStyleName(style)), style);
  EXPECT_FALSE(parseRopeStyleName("llama"));
}

TEST(Attention, RopeIdentity) {
  OpSpec spec = examples::makeAttention();
  std::string plain = getCanonicalSpec(spec);
  EXPECT_EQ(plain.find("rope"), std::string::npos)
      << "kernels without rope keep their identity";
  OpSpec unused = spec;
  unused.rotaryDim = 64;
  unused.ropeTheta = 5e5;
  EXPECT_EQ(getCanonicalSpec(unused), plain) << "rope fields without rope";
  spec.rope = RopeStyle::GptJ;
  spec.rotaryDim = 64;
  spec.ropeTheta = 1e6;
  std::string text = getCanonicalSpec(spec);
  EXPECT_NE(text.find("rope=gptj rotary_dim=64"), std::string::npos) << text;
  std::string error;
  std::optional<OpSpec> parsed = parseCanonicalSpec(text, error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_EQ(parsed->rope, RopeStyle::GptJ);
  EXPECT_EQ(parsed->rotaryDim, 64);
  EXPECT_EQ(parsed->ropeTheta, 1e6);
  EXPECT_EQ(getCanonicalSpec(*parsed), text);
  std::string bad = text;
  bad.replace(bad.find("gptj"), 4, "abcd");
  EXPECT_FALSE(parseCanonicalSpec(bad, error));
  EXPECT_NE(error.find("rotary embedding style"), std::string::npos) << error;
  EXPECT_NE(describeOpSpec(spec).find("rope gptj 64"), std::string::npos)
      << describeOpSpec(spec);
}

TEST(Attention, QKWeightsPerHead) {
  OpSpec spec = examples::makeAttention(); // RMS QK-Norm with weights
  ASSERT_TRUE(spec.hasWeight);
  OpSpec shared = spec;
  spec.qkWeightPerHead = true;
  EXPECT_TRUE(expectCanonicalRoundTrip(spec, shared, "qk_weight_per_head")
                  .qkWeightPerHead);
  EXPECT_NE(describeOpSpec(spec).find("weight per head"), std::string::npos);
  std::string name =
      getKernelName(spec, LaunchConfig{8, 16, 4, 64, 64, 2}, TargetOptions());
  EXPECT_NE(name.find("_hw_"), std::string::npos) << name;
  // The weights: a row per head, q heads for q, kv heads for k.
  for (const BufferSpec &buffer : getBuffers(spec)) {
    if (buffer.slot == BufferSlot::QWeight)
      EXPECT_EQ(buffer.cols, spec.hidden * spec.numQHeads);
    if (buffer.slot == BufferSlot::KWeight)
      EXPECT_EQ(buffer.cols, spec.hidden * spec.numKvHeads);
  }
  OpSpec noWeight = spec;
  noWeight.hasWeight = false;
  expectInvalid(noWeight, "per-head QK-Norm weights need QK-Norm weights");
  OpSpec row = rmsNorm();
  row.qkWeightPerHead = true;
  expectInvalid(row, "per-head QK-Norm weights apply to attention, the "
                     "QK-Norm prologue and K-prepare only");
}

TEST(QKNormPrologue, RotaryEmbeddings) {
  // Qwen 3: QK-Norm, then NeoX RoPE at explicit positions.
  OpSpec spec = examples::makeQKNorm();
  OpSpec plain = spec;
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = 128;
  spec.ropeTheta = 1e6;
  spec.ropePositions = true;
  EXPECT_TRUE(verifyOpSpec(spec)) << verifyOpSpec(spec).message();
  EXPECT_TRUE(expectCanonicalRoundTrip(spec, plain, "rope_positions").ropePositions);
  EXPECT_NE(describeOpSpec(spec).find("rope neox 128 theta"),
            std::string::npos)
      << describeOpSpec(spec);
  LaunchConfig launch = getHeuristicLaunch(spec, 64);
  std::string name = getKernelName(spec, launch, TargetOptions());
  EXPECT_EQ(name.rfind("norm_qk_rms_ropeneox128_pos_d128_", 0), 0u) << name;
  int64_t positions = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    positions += buffer.slot == BufferSlot::Positions;
  EXPECT_EQ(positions, 1);
  // The halves of the rotary dims are laid out alike: pairs (d, d + 64) meet
  // in one thread and lane, with the 16 threads x 8 lanes of a head without
  // rope.
  EXPECT_TRUE(verifyRotaryLayout(spec, launch));
  EXPECT_EQ(launch.vector, 8);
  EXPECT_EQ(launch.threadsPerRow, 16);
  std::vector<RowSegment> segments = getRowSegments(spec);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[1].offset, 64);
  OpSpec stablelm = spec;
  stablelm.hidden = 80;
  stablelm.rotaryDim = 20;
  segments = getRowSegments(stablelm);
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[1].offset, 10);
  EXPECT_EQ(segments[2].offset, 20);
  EXPECT_EQ(segments[2].length, 60);
  // Chunks per segment: 10 elements in 8 threads x 2, twice, then 60.
  EXPECT_EQ(getElementsPerThread(stablelm, {2, 8, 4, 16}), 2 * (1 + 1 + 4));
  expectLaunchInvalid(stablelm, {4, 4, 4, 32},
                      "the QK-Norm prologue turns neox pairs within a thread: "
                      "the vector must divide rotary_dim / 2 (10), got 4");
  OpSpec gptj = spec;
  gptj.rope = RopeStyle::GptJ;
  expectLaunchInvalid(gptj, {1, 16, 4, 16}, "the vector must be even");
  EXPECT_EQ(getRowSegments(gptj).size(), 1u);
  // The heuristic finds a layout for any even rotary dim: StableLM's 20 of
  // 80 (pairs 10 apart: 2 threads x 1 element), GPT-J 24 of 128.
  for (auto [style, headDim, rotaryDim] :
       {std::tuple{RopeStyle::NeoX, 80, 20}, std::tuple{RopeStyle::GptJ, 128, 24},
        std::tuple{RopeStyle::NeoX, 256, 256}, std::tuple{RopeStyle::NeoX, 64, 2},
        std::tuple{RopeStyle::GptJ, 6, 6}}) {
    OpSpec s = spec;
    s.rope = style;
    s.hidden = headDim;
    s.rotaryDim = rotaryDim;
    LaunchConfig l = getHeuristicLaunch(s, 1000);
    EXPECT_TRUE(verifyLaunchFor(s, l))
        << headDim << "/" << rotaryDim << ": " << verifyLaunchFor(s, l).message();
  }
  // The backward differentiates the norm alone: no saved statistics, no
  // backward kernels with rope.
  OpSpec save = spec;
  save.saveStats = true;
  expectInvalid(save, "save_stats keeps the statistics for the QK-Norm's "
                      "backward, which has no rotary embeddings");
  BackwardKernels kernels;
  Status backward = getBackwardKernels(spec, kernels);
  EXPECT_EQ(backward.code(), ErrorCode::Unsupported) << backward.message();
  OpSpec first = spec;
  first.ropeFirst = true;
  EXPECT_TRUE(verifyOpSpec(first));
  EXPECT_TRUE(expectCanonicalRoundTrip(first, spec, "rope_first").ropeFirst);
}

TEST(QKNormPrologue, WeightsPerHead) {
  // Command R+: LayerNorm per head, a weight row per head, 6 q / 2 kv heads.
  OpSpec spec = examples::makeQKNorm();
  spec.numQHeads = 6;
  spec.numKvHeads = 2;
  spec.qkStatistic = Statistic::MeanVar;
  spec.eps = 1e-5;
  OpSpec shared = spec;
  spec.qkWeightPerHead = true;
  EXPECT_TRUE(expectCanonicalRoundTrip(spec, shared, "qk_weight_per_head")
                  .qkWeightPerHead);
  EXPECT_NE(describeOpSpec(spec).find("weight per head"), std::string::npos)
      << describeOpSpec(spec);
  std::string name = getKernelName(spec, getHeuristicLaunch(spec, 64),
                                   TargetOptions());
  EXPECT_EQ(name.rfind("norm_qk_mean_var_hw_d128_", 0), 0u) << name;
  for (const BufferSpec &buffer : getBuffers(spec)) {
    if (buffer.slot == BufferSlot::QWeight)
      EXPECT_EQ(buffer.cols, 128 * 6);
    if (buffer.slot == BufferSlot::KWeight)
      EXPECT_EQ(buffer.cols, 128 * 2);
  }
  OpSpec noWeight = spec;
  noWeight.hasWeight = false;
  expectInvalid(noWeight, "per-head QK-Norm weights need QK-Norm weights");
  // The backward: each kind of head a GroupNorm whose weight is the row's
  // channels (a row per head), not one row the heads share.
  BackwardKernels kernels;
  ASSERT_TRUE(getBackwardKernels(spec, kernels));
  ASSERT_EQ(kernels.rows.size(), 2u);
  for (size_t i = 0; i < kernels.rows.size(); ++i) {
    const OpSpec &row = kernels.rows[i];
    int64_t heads = i == 0 ? 6 : 2;
    EXPECT_EQ(row.groups, heads);
    EXPECT_FALSE(row.perHeadWeight);
    for (const BufferSpec &buffer : getBuffers(row))
      if (buffer.slot == BufferSlot::Weight)
        EXPECT_EQ(buffer.cols, 128 * heads);
  }
  ASSERT_TRUE(getBackwardKernels(shared, kernels));
  for (const OpSpec &row : kernels.rows)
    EXPECT_TRUE(row.perHeadWeight);
}

TEST(Attention, RopeBeforeTheQKNorm) {
  OpSpec spec = examples::makeAttention(); // RMS QK-Norm
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = spec.hidden;
  OpSpec after = spec;
  spec.ropeFirst = true;
  EXPECT_TRUE(expectCanonicalRoundTrip(spec, after, "rope_first").ropeFirst);
  EXPECT_NE(describeOpSpec(spec).find("before the QK-Norm"), std::string::npos)
      << describeOpSpec(spec);
  LaunchConfig launch{8, 16, 4, 64, 64, 2};
  std::string name = getKernelName(spec, launch, TargetOptions());
  EXPECT_NE(name.find("_first_"), std::string::npos) << name;
  OpSpec noNorm = spec;
  noNorm.qkStatistic = Statistic::None;
  noNorm.hasWeight = false;
  expectInvalid(noNorm, "rotating before the QK-Norm needs both");
  OpSpec noRope = spec;
  noRope.rope = RopeStyle::None;
  expectInvalid(noRope, "rotating before the QK-Norm needs both");
  OpSpec row = rmsNorm();
  row.ropeFirst = true;
  expectInvalid(row, "(rope) apply to attention, the QK-Norm prologue and K-prepare");
}

TEST(Attention, RopeTablesAndPositions) {
  OpSpec spec = examples::makeAttention();
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = 64;
  spec.ropeTheta = 0.0; // unused with a table
  spec.ropeTable = spec.ropePositions = true;
  EXPECT_TRUE(verifyOpSpec(spec)) << verifyOpSpec(spec).message();
  OpSpec theta = spec;
  theta.ropeTable = false;
  expectInvalid(theta, "rope_theta");
  OpSpec noRope = spec;
  noRope.rope = RopeStyle::None;
  expectInvalid(noRope, "rotary positions and tables need a rotary");
  OpSpec row = rmsNorm();
  row.ropePositions = true;
  expectInvalid(row, "(rope) apply to attention, the QK-Norm prologue and K-prepare");

  // Identity: only where set; theta is not part of a table's kernel.
  std::string text = getCanonicalSpec(spec);
  EXPECT_NE(text.find(" rope_positions=1 rope_table=1"), std::string::npos)
      << text;
  OpSpec otherTheta = spec;
  otherTheta.ropeTheta = 1e6;
  EXPECT_EQ(getCanonicalSpec(otherTheta), text);
  std::string error;
  std::optional<OpSpec> parsed = parseCanonicalSpec(text, error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_TRUE(parsed->ropeTable && parsed->ropePositions);
  EXPECT_EQ(getCanonicalSpec(*parsed), text);
  OpSpec implicit = spec;
  implicit.ropeTable = implicit.ropePositions = false;
  implicit.ropeTheta = 1e4;
  EXPECT_EQ(getCanonicalSpec(implicit).find("rope_positions"),
            std::string::npos);
  EXPECT_NE(describeOpSpec(spec).find("rope neox 64 table positions"),
            std::string::npos)
      << describeOpSpec(spec);

  // Buffers: positions (i32, one per token) and the table (f32 rows of
  // rotary_dim, rows of its own) after the sequence offsets.
  for (OpKind kind : {OpKind::Attention, OpKind::AttentionDecode}) {
    OpSpec s = spec;
    s.kind = kind;
    s.causal = kind == OpKind::Attention && spec.causal;
    std::vector<std::string> names;
    const BufferSpec *table = nullptr;
    std::vector<BufferSpec> buffers = getBuffers(s);
    for (const BufferSpec &b : buffers) {
      names.push_back(std::string(getBufferSlotName(b.slot)));
      if (b.slot == BufferSlot::RopeTable)
        table = &b;
    }
    auto at = [&](const char *name) {
      return std::find(names.begin(), names.end(), name) - names.begin();
    };
    EXPECT_EQ(at("positions"), at("rope_table") - 1);
    EXPECT_LT(at("cu_seqlens"), at("positions"));
    EXPECT_LT(at("rope_table"), at("output"));
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(table->type, ElementType::f32);
    EXPECT_EQ(table->cols, 64);
    EXPECT_TRUE(table->rows2D && table->ownRows && !table->written);
    EXPECT_EQ(getLaunchLength(s, BufferSlot::Positions, 16,
                              DecodeShape{37, 2, 0, 1}),
              37);
    // The table is not a per-token row: its bytes are not the rows'.
    OpSpec without = s;
    without.ropeTable = without.ropePositions = false;
    without.ropeTheta = 1e4;
    EXPECT_EQ(getBytesPerRow(s), getBytesPerRow(without));

    KernelSignature sig;
    Status described =
        describeKernel(s, getHeuristicLaunch(s, -1), TargetOptions(), sig);
    ASSERT_TRUE(described) << described.message();
    EXPECT_NE(sig.name.find("_ropeneox64_table_pos_"), std::string::npos)
        << sig.name;
    int tableRows = 0;
    for (const KernelParam &p : sig.params) {
      tableRows += p.kind == KernelParam::Kind::RopeTableRows;
      if (p.name == "rope_table") {
        EXPECT_EQ(p.alignment, 16) << "the table's rows are read in quads";
        EXPECT_TRUE(p.readOnly);
      }
      if (p.name == "positions") {
        EXPECT_EQ(p.alignment, 4);
      }
    }
    EXPECT_EQ(tableRows, 1);
    std::optional<KernelSignature> back =
        KernelSignature::fromJson(sig.toJson(), error);
    ASSERT_TRUE(back) << error;
    EXPECT_TRUE(back->describesSameKernel(sig));
  }
}

TEST(Attention, Buffers) {
  OpSpec spec = examples::makeAttention();
  spec.writeLse = true;
  std::vector<BufferSpec> buffers = getBuffers(spec);
  std::vector<std::string> names;
  for (const BufferSpec &b : buffers)
    names.push_back(std::string(getBufferSlotName(b.slot)));
  EXPECT_EQ(names, (std::vector<std::string>{"q", "k", "v", "q_weight",
                                             "k_weight", "cu_seqlens",
                                             "output", "lse"}));
  EXPECT_EQ(buffers[0].cols, 32 * 128);
  EXPECT_EQ(buffers[1].cols, 8 * 128);
  EXPECT_EQ(buffers[5].type, ElementType::i32);
  EXPECT_EQ(buffers[5].cols, 0) << "the offsets' length comes with the launch";
  EXPECT_EQ(buffers[7].type, ElementType::f32);
  EXPECT_EQ(buffers[7].cols, 32);
  EXPECT_TRUE(buffers[7].written && buffers[6].written && !buffers[2].written);
}

TEST(Attention, LaunchRules) {
  OpSpec spec = examples::makeAttention();
  LaunchConfig launch = getHeuristicLaunch(spec, -1);
  EXPECT_EQ(launch.getMangledSuffix(), "v8_t16_w4_r64_n64_s2");
  EXPECT_TRUE(verifyLaunchFor(spec, launch, 227 * 1024));
  std::optional<LaunchConfig> parsed = parseLaunchSuffix("v8_t16_w4_r64_n64_s2");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, launch);
  EXPECT_FALSE(parseLaunchSuffix("v8_t16_w4_r64_n48_s2"));
  EXPECT_FALSE(getScalarFallback(spec, launch));
  // Tiles: 64 query rows + 2 stages x (64 keys + 64 values) of 128 bf16.
  EXPECT_EQ(getSharedBytes(spec, launch, 0), (64 + 4 * 64) * 256);
  // The output goes out in 16-byte chunks through the query tile where the
  // accumulators leave registers for it (96 here, 112 at head dim 192 with
  // 32 keys, not 120 at 208); decode's rows (a group of heads) never do.
  EXPECT_TRUE(usesStagedOutput(spec, launch));
  OpSpec staged = spec;
  staged.hidden = 192;
  LaunchConfig narrow = launch;
  narrow.blockN = 32;
  EXPECT_TRUE(usesStagedOutput(staged, narrow));
  staged.hidden = 208;
  EXPECT_FALSE(usesStagedOutput(staged, narrow));
  staged = spec;
  staged.kind = OpKind::AttentionDecode;
  EXPECT_FALSE(usesStagedOutput(staged, launch));
  LaunchConfig rows = launch;
  rows.rowsPerCta = 96;
  expectLaunchInvalid(spec, rows, "rows_per_cta must be 64 or 128, got 96");
  // 32 query rows a warp: two row tiles, twice the accumulators (192 at
  // head dim 128 with 64 keys: ptxas spilled), fine with 32 keys at head
  // dim 64; decode's warps keep 16.
  LaunchConfig wideRows = launch;
  wideRows.rowsPerCta = 128;
  EXPECT_EQ(wideRows.getRowTiles(), 2);
  EXPECT_EQ(getAttentionAccumulators(spec, wideRows), 192);
  expectLaunchInvalid(spec, wideRows,
                      "and 32 query rows a warp keeps 192 f32 accumulators");
  OpSpec small = examples::makeAttention();
  small.hidden = 64;
  LaunchConfig smallLaunch = getHeuristicLaunch(small, -1);
  EXPECT_EQ(smallLaunch.getMangledSuffix(), "v8_t8_w4_r128_n64_s2");
  EXPECT_TRUE(verifyLaunchFor(small, smallLaunch, 227 * 1024));
  OpSpec decode = examples::makeAttention();
  decode.kind = OpKind::AttentionDecode;
  LaunchConfig decodeRows = getHeuristicLaunch(decode, -1);
  decodeRows.rowsPerCta = 32 * decodeRows.warps;
  expectLaunchInvalid(decode, decodeRows, "at most 8 warps 16 query rows");
  LaunchConfig threads = launch;
  threads.threadsPerRow = 32;
  expectLaunchInvalid(spec, threads, "maps 16 threads onto a head row");
  LaunchConfig vector = launch;
  vector.vector = 4;
  expectLaunchInvalid(spec, vector, "16-byte vectors");
  LaunchConfig rowKernel = launch;
  rowKernel.blockN = rowKernel.stages = 0;
  expectLaunchInvalid(spec, rowKernel, "needs a launch configuration with block_n");
  expectLaunchInvalid(rmsNorm(128), launch, "apply to attention only");
  // Head dim 256: the output rows take 128 accumulators, so at most 64 keys.
  OpSpec gemma = examples::makeAttention();
  gemma.hidden = 256;
  LaunchConfig wide = getHeuristicLaunch(gemma, -1);
  EXPECT_EQ(wide.threadsPerRow, 32);
  EXPECT_TRUE(verifyLaunchFor(gemma, wide, 99 * 1024));
  wide.blockN = 128;
  expectLaunchInvalid(gemma, wide, "192 f32 accumulators");
  // 8 warps keep fewer accumulators: 144 spilled at head dim 224.
  LaunchConfig eight = getHeuristicLaunch(gemma, -1);
  eight.warps = 8;
  eight.rowsPerCta = 128;
  expectLaunchInvalid(gemma, eight, "144 f32 accumulators per thread, more "
                                    "than the 128 that registers hold beside "
                                    "8 warps' copies");
  // Shared memory of the target: head dim 192, 8 warps, 64 keys in 2
  // stages take 144 KiB.
  OpSpec wide192 = examples::makeAttention();
  wide192.hidden = 192;
  LaunchConfig big = getHeuristicLaunch(wide192, -1);
  big.warps = 8;
  big.rowsPerCta = 128;
  big.blockN = 64;
  big.stages = 2;
  EXPECT_TRUE(verifyLaunchFor(wide192, big, 227 * 1024))
      << verifyLaunchFor(wide192, big, 227 * 1024).message();
  Status sm89 = verifyLaunchFor(wide192, big, 99 * 1024);
  EXPECT_NE(sm89.message().find("shared memory"), std::string::npos);
  // Head dim 96 shares each row among 16 threads, 4 of them idle.
  EXPECT_EQ(getAttentionThreadsPerRow(96), 16);
  EXPECT_EQ(getAttentionThreadsPerRow(64), 8);
}

/// Decode's warps split the key tiles where one token's group of query heads
/// fills less than a tile a warp (#33): no warp computes padding tiles.
TEST(Attention, DecodeKeyWarps) {
  OpSpec decode = examples::makeAttention(); // GQA 4, head dim 128
  decode.kind = OpKind::AttentionDecode;
  decode.causal = false;
  LaunchConfig launch = getHeuristicLaunch(decode, -1);
  EXPECT_EQ(launch.getMangledSuffix(), "v8_t16_w4_r16_n64_s2");
  EXPECT_EQ(launch.getRowTiles(), 1);
  EXPECT_EQ(launch.getKeyWarps(), 4);
  // Each warp's slice of 16 keys: 8 score accumulators beside the 64 of
  // its output rows.
  EXPECT_EQ(getAttentionAccumulators(decode, launch), 64 + 8);
  EXPECT_TRUE(verifyLaunchFor(decode, launch, 99 * 1024));
  // The merge (4 warps x 32 lanes x (4 + 64) f32) reuses the tiles.
  EXPECT_EQ(getKeyWarpMergeBytes(decode, launch), 4 * 32 * 68 * 4);
  EXPECT_EQ(getAttentionSharedBytes(decode, launch), (16 + 4 * 64) * 256);
  // A group of 32 heads fills two tiles: two warps a tile; of 64, four
  // tiles: each warp its own.
  OpSpec wide = decode;
  wide.numKvHeads = 1;
  EXPECT_EQ(getHeuristicLaunch(wide, -1).getMangledSuffix(),
            "v8_t16_w4_r32_n64_s2");
  wide.numQHeads = 64;
  EXPECT_EQ(getHeuristicLaunch(wide, -1).getKeyWarps(), 1);
  // Key tiles of 32 (head dim 192) make slices for two warps; of 16 (256),
  // none.
  OpSpec large = decode;
  large.hidden = 192;
  EXPECT_EQ(getHeuristicLaunch(large, -1).getMangledSuffix(),
            "v8_t32_w4_r32_n32_s2");
  large.hidden = 256;
  EXPECT_EQ(getHeuristicLaunch(large, -1).getMangledSuffix(),
            "v8_t32_w4_r64_n16_s2");
  // Where the merge outgrows the tiles (head dim 192, one stage), it sets
  // the shared memory: 4 x 32 x (4 + 96) f32 against (32 + 2 x 32) rows of
  // 384 bytes.
  large.hidden = 192;
  LaunchConfig merge = getHeuristicLaunch(large, -1);
  merge.stages = 1;
  EXPECT_TRUE(verifyLaunchFor(large, merge, 99 * 1024));
  EXPECT_EQ(getAttentionSharedBytes(large, merge), 4 * 32 * 100 * 4);
  // Slices of at least 16 keys, rows a whole tile per group of warps;
  // prefill never splits.
  LaunchConfig thin = launch;
  thin.blockN = 32;
  expectLaunchInvalid(decode, thin, "block_n must be at least 64, got 32");
  LaunchConfig odd = launch;
  odd.rowsPerCta = 48;
  expectLaunchInvalid(decode, odd,
                      "rows_per_cta must be 16 times a divisor of 4, got 48");
  expectLaunchInvalid(examples::makeAttention(), launch,
                      "rows_per_cta must be 64 or 128, got 16");
}

/// The names of the kernel's parameters, in ABI order.
std::vector<std::string> getParamNames(const KernelSignature &sig) {
  std::vector<std::string> names;
  for (const KernelParam &p : sig.params)
    names.push_back(p.name);
  return names;
}

TEST(Attention, Signature) {
  OpSpec spec = examples::makeAttention();
  spec.writeLse = true;
  LaunchConfig launch = getHeuristicLaunch(spec, -1);
  KernelSignature sig;
  ASSERT_TRUE(describeKernel(spec, launch, TargetOptions(), sig));
  EXPECT_EQ(sig.kind, "attention_kernel");
  EXPECT_EQ(sig.name.rfind("norm_attn_qkrms_causal_d128_h32x8_bf16_", 0), 0u)
      << sig.name;
  EXPECT_EQ(getParamNames(sig),
            (std::vector<std::string>{
                "q", "k", "v", "q_weight", "k_weight", "cu_seqlens", "output",
                "lse", "rows", "batch", "q_stride", "k_stride", "v_stride",
                "output_stride", "lse_stride"}));
  EXPECT_EQ(sig.params[5].alignment, 4) << "offsets are read one by one";
  EXPECT_EQ(sig.params[7].alignment, 4) << "lse is written one by one";
  EXPECT_EQ(sig.params[0].alignment, 16);
  EXPECT_TRUE(sig.params[0].readOnly);
  EXPECT_EQ(sig.blockThreads, 128);
  EXPECT_EQ(sig.sharedBytes, (64 + 4 * 64) * 256);
  // 32 heads x (ceil(300 / 64) + 3 sequences) CTAs.
  EXPECT_EQ(sig.getGridX(300, 3), 32 * (5 + 3));
  EXPECT_EQ(sig.getGridFormula(), "32 * (ceil(rows / 64) + batch)");
  std::string error;
  std::optional<KernelSignature> parsed =
      KernelSignature::fromJson(sig.toJson(), error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_TRUE(parsed->describesSameKernel(sig));
  // The target's shared memory decides: sm_89 refuses 8 warps at 256.
  OpSpec gemma = examples::makeAttention();
  gemma.hidden = 256;
  LaunchConfig big = getHeuristicLaunch(gemma, -1);
  big.warps = 8;
  big.rowsPerCta = 128;
  big.blockN = 32;
  TargetOptions sm89;
  sm89.chip = "sm_89";
  KernelSignature refused;
  EXPECT_FALSE(describeKernel(gemma, big, sm89, refused));
}

TEST(KernelModel, DecodeAttentionKernels) {
  OpSpec spec = examples::makeAttention();
  spec.kind = OpKind::AttentionDecode;
  spec.causal = false;
  ASSERT_TRUE(verifyOpSpec(spec));
  // Decode is causal by position and writes no lse.
  OpSpec causal = spec;
  causal.causal = true;
  EXPECT_FALSE(verifyOpSpec(causal));
  OpSpec lse = spec;
  lse.writeLse = true;
  EXPECT_FALSE(verifyOpSpec(lse));
  EXPECT_NE(getCanonicalSpec(spec), getCanonicalSpec(examples::makeAttention()));
  std::string error;
  std::optional<OpSpec> back = parseCanonicalSpec(getCanonicalSpec(spec), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(getCanonicalSpec(*back), getCanonicalSpec(spec));

  LaunchConfig launch = getHeuristicLaunch(spec, -1);
  EXPECT_EQ(launch.warps, 4);
  // Beyond head dim 192: 4 warps and key tiles of 16 (32 spilled at
  // 208-256, 2 warps at 240).
  OpSpec wide = spec;
  wide.hidden = 224;
  LaunchConfig wideLaunch = getHeuristicLaunch(wide, -1);
  EXPECT_EQ(wideLaunch.blockN, 16);
  EXPECT_TRUE(verifyLaunchFor(wide, wideLaunch));
  LaunchConfig keys32 = wideLaunch;
  keys32.blockN = 32;
  expectLaunchInvalid(wide, keys32, "4 warps and key tiles of 16 beyond 192");
  LaunchConfig twoWarps = wideLaunch;
  twoWarps.warps = 2;
  twoWarps.rowsPerCta = 32;
  expectLaunchInvalid(wide, twoWarps, "4 warps and key tiles of 16 beyond 192");
  KernelSignature sig;
  ASSERT_TRUE(describeKernel(spec, launch, TargetOptions(), sig));
  EXPECT_EQ(sig.kind, "attention_decode_kernel");
  EXPECT_TRUE(sig.isDecode());
  EXPECT_EQ(sig.name.rfind("norm_decode_qkrms_d128_h32x8_bf16_", 0), 0u)
      << sig.name;
  EXPECT_EQ(getParamNames(sig),
            (std::vector<std::string>{
                "q", "k", "v", "q_weight", "k_weight", "cu_seqlens",
                "cache_seqlens", "output", "k_cache", "v_cache", "workspace",
                "semaphores", "rows", "batch", "kv_splits", "cache_capacity",
                "q_stride", "k_stride", "v_stride", "output_stride",
                "k_cache_stride", "v_cache_stride"}));
  EXPECT_FALSE(sig.params[8].readOnly) << "the cache is updated in place";
  EXPECT_EQ(sig.params[10].alignment, 16) << "the combine reads quads";
  EXPECT_EQ(sig.params[11].alignment, 4);
  // 8 kv heads x 3 splits x (ceil(5 tokens x 4 heads / 16) + 2 sequences):
  // the heuristic's tile of 16 rows (4 warps split its key tiles).
  EXPECT_EQ(sig.queryGroup, 4);
  EXPECT_EQ(sig.getGridX(5, 2, 3), 8 * 3 * (2 + 2));
  EXPECT_EQ(sig.getGridFormula(),
            "8 * kv_splits * (ceil(rows * 4 / 16) + batch)");
  std::optional<KernelSignature> parsed =
      KernelSignature::fromJson(sig.toJson(), error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_TRUE(parsed->describesSameKernel(sig));

  // The buffers whose length comes with the launch.
  DecodeShape shape{5, 2, 100, 3};
  EXPECT_EQ(getLaunchLength(spec, BufferSlot::CuSeqlens, 64, shape), 3);
  EXPECT_EQ(getLaunchLength(spec, BufferSlot::CacheSeqlens, 64, shape), 2);
  EXPECT_EQ(getLaunchLength(spec, BufferSlot::Workspace, 64, shape),
            3 * 5 * 32 * 129);
  EXPECT_EQ(getLaunchLength(spec, BufferSlot::Semaphores, 64, shape), 8 * 3);
  std::vector<BufferSpec> buffers = getBuffers(spec);
  int updated = 0, scratch = 0;
  for (const BufferSpec &buffer : buffers) {
    updated += buffer.updated;
    scratch += buffer.scratch;
  }
  EXPECT_EQ(updated, 2);
  EXPECT_EQ(scratch, 2);
}

} // namespace
