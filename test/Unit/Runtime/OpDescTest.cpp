//===- OpDescTest.cpp - the C API's operation descriptions ----------------===//
//
// normjit_op_desc through the C API entry points to the kernel model's
// operation: a bundle written with the fake compiler holds the expected
// operations, and a C context without a compiler (RuntimeTests links
// NoCompiler.cpp) finds a desc's kernel there only when the desc converts
// to exactly one of them (bundles are keyed by the canonical operation);
// otherwise NotFound names the operation it converted to.
//
//===----------------------------------------------------------------------===//

#include "runtime/normjit.hpp"

#include "test/Unit/Runtime/CApiBundle.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

constexpr int64_t kHeadDim = 128;

/// Causal attention of 4 query and 2 key/value heads of kHeadDim, without a
/// QK-Norm: what attentionDesc(kHeadDim, 4, 2, NORMJIT_OP_CAUSAL) is.
OpSpec makeAttention(RopeStyle rope = RopeStyle::None, int64_t rotaryDim = 0,
                     double theta = 10000.0) {
  OpSpec spec;
  spec.kind = OpKind::Attention;
  spec.hidden = kHeadDim;
  spec.numQHeads = 4;
  spec.numKvHeads = 2;
  spec.qkStatistic = Statistic::None;
  spec.causal = true;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  spec.rope = rope;
  spec.rotaryDim = rotaryDim;
  spec.ropeTheta = theta;
  return spec;
}

normjit_op_desc makeAttentionDesc(int32_t rope = NORMJIT_ROPE_NONE,
                                  int64_t rotaryDim = 0, double theta = 0.0) {
  return normjit::attentionDesc(kHeadDim, 4, 2, NORMJIT_OP_CAUSAL, rope,
                                rotaryDim, theta);
}

/// A desc of the QK-Norm prologue with `spec`'s head dim, heads and eps.
normjit_op_desc makeQKNormDesc(const OpSpec &spec) {
  normjit_op_desc qk = normjit::opDesc();
  qk.kind = NORMJIT_OP_QK_NORM;
  qk.hidden = spec.hidden;
  qk.num_q_heads = spec.numQHeads;
  qk.num_kv_heads = spec.numKvHeads;
  qk.eps = spec.eps;
  return qk;
}

/// `desc` as a program whose header's struct ends at `end` passes it:
/// struct_size `end`, garbage after.
normjit_op_desc endingAt(normjit_op_desc desc, size_t end) {
  std::memset(reinterpret_cast<unsigned char *>(&desc) + end, 0xA5,
              sizeof(desc) - end);
  desc.struct_size = static_cast<uint32_t>(end);
  return desc;
}

class OpDescTest : public CApiBundleTest {
protected:
  /// normjit_kernel_create's status for `desc`, and its message.
  std::pair<normjit_status, std::string> create(const normjit_op_desc &desc) {
    normjit_kernel *kernel = nullptr;
    normjit_status status =
        normjit_kernel_create(context->get(), &desc, 0, &kernel);
    std::string message = status == NORMJIT_SUCCESS ? "" : normjit_last_error();
    if (status == NORMJIT_SUCCESS) {
      // From the bundle, not planned otherwise.
      normjit_tuning_info info{};
      info.struct_size = sizeof(info);
      EXPECT_EQ(normjit_kernel_get_tuning(kernel, 1, &info, nullptr, 0),
                NORMJIT_SUCCESS);
      EXPECT_EQ(info.source, NORMJIT_PLAN_BUNDLE);
    }
    normjit_kernel_destroy(kernel);
    return {status, message};
  }

  /// `desc` converts to the operation `operation`, which no kernel of the
  /// bundle implements.
  void expectNotFound(const normjit_op_desc &desc,
                      const std::string &operation) {
    auto [status, message] = create(desc);
    EXPECT_EQ(status, NORMJIT_ERROR_NOT_FOUND);
    EXPECT_NE(message.find(operation + " is in no kernel bundle"),
              std::string::npos)
        << message;
  }
};

TEST_F(OpDescTest, InitLeavesRotaryEmbeddingsOff) {
  normjit_op_desc desc;
  std::memset(&desc, 0xA5, sizeof(desc));
  normjit_op_desc_init(&desc);
  EXPECT_EQ(desc.struct_size, sizeof(normjit_op_desc));
  EXPECT_EQ(desc.rope, NORMJIT_ROPE_NONE);
  EXPECT_EQ(desc.cache_block_size, 0);
  EXPECT_EQ(desc.rotary_dim, 0);
  EXPECT_EQ(desc.rope_theta, 0.0);
}

TEST_F(OpDescTest, QKWeightsPerHeadReachTheirOwnOperation) {
  // Command R+: a LayerNorm QK-Norm with a weight row per head.
  OpSpec spec = makeAttention();
  spec.qkStatistic = Statistic::MeanVar;
  spec.eps = 1e-5;
  spec.hasWeight = spec.qkWeightPerHead = true;
  openBundleOf({spec});
  normjit_op_desc desc = makeAttentionDesc();
  desc.flags |= NORMJIT_OP_QK_MEAN_VAR | NORMJIT_OP_WEIGHT |
                NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  desc.eps = 1e-5;
  EXPECT_EQ(create(desc).first, NORMJIT_SUCCESS);
  desc.flags &= ~NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  EXPECT_EQ(create(desc).first, NORMJIT_ERROR_NOT_FOUND) << "another kernel";
  desc.flags &= ~NORMJIT_OP_WEIGHT;
  desc.flags |= NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  auto [status, message] = create(desc);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("per-head QK-Norm weights need QK-Norm weights"),
            std::string::npos)
      << message;
  normjit_op_desc rms = makeAttentionDesc();
  rms.kind = NORMJIT_OP_RMS_NORM;
  rms.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  std::tie(status, message) = create(rms);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("per-head QK-Norm weights apply to attention, "
                         "the QK-Norm prologue and K-prepare only"),
            std::string::npos)
      << message;
}

TEST_F(OpDescTest, QKNormPrologueWeightsPerHead) {
  // Command R+ outside attention: the QK-Norm prologue with a weight row per
  // head, a kernel of its own.
  OpSpec spec = makeQKNorm();
  spec.numQHeads = 6;
  spec.numKvHeads = 2;
  spec.qkStatistic = Statistic::MeanVar;
  spec.eps = 1e-5;
  spec.qkWeightPerHead = true;
  openBundleOf({spec});
  normjit_op_desc qk = makeQKNormDesc(spec);
  qk.flags = NORMJIT_OP_QK_MEAN_VAR | NORMJIT_OP_WEIGHT |
             NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  EXPECT_EQ(create(qk).first, NORMJIT_SUCCESS);
  qk.flags &= ~NORMJIT_OP_QK_WEIGHT_PER_HEAD;
  EXPECT_EQ(create(qk).first, NORMJIT_ERROR_NOT_FOUND) << "another kernel";
}

TEST_F(OpDescTest, QKNormPrologueRotates) {
  // Llama 4 outside attention: RoPE from a table at explicit positions,
  // then an L2 QK-Norm, in the prologue.
  OpSpec spec = makeQKNorm();
  spec.qkStatistic = Statistic::L2;
  spec.hasWeight = false;
  spec.rope = RopeStyle::GptJ;
  spec.rotaryDim = spec.hidden;
  spec.ropeTable = spec.ropePositions = spec.ropeFirst = true;
  openBundleOf({spec});
  normjit_op_desc qk = makeQKNormDesc(spec);
  qk.rope = NORMJIT_ROPE_GPTJ;
  qk.flags = NORMJIT_OP_QK_L2 | NORMJIT_OP_ROPE_TABLE |
             NORMJIT_OP_ROPE_POSITIONS | NORMJIT_OP_ROPE_FIRST;
  EXPECT_EQ(create(qk).first, NORMJIT_SUCCESS) << normjit_last_error();
  qk.flags &= ~NORMJIT_OP_ROPE_FIRST;
  EXPECT_EQ(create(qk).first, NORMJIT_ERROR_NOT_FOUND) << "another kernel";
  // Not with the statistics of its backward.
  qk.flags |= NORMJIT_OP_SAVE_STATS;
  auto [status, message] = create(qk);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("save_stats keeps the statistics for the QK-Norm's "
                         "backward, which has no rotary embeddings"),
            std::string::npos)
      << message;
}

TEST_F(OpDescTest, KeyPrepareAndPreparedKeysReachTheirOperations) {
  // Qwen 3: K-prepare (RMS with k's weight, NeoX RoPE by index within each
  // sequence, v copied beside) and the attention that reads its keys (q's
  // weight): the kernel model's pair (getKeyPrepareSpec).
  OpSpec attention = makeAttention(RopeStyle::NeoX, kHeadDim, 1e6);
  attention.qkStatistic = Statistic::RMS;
  attention.hasWeight = true;
  attention.eps = 1e-6;
  OpSpec keys = getKeyPrepareSpec(attention);
  keys.copyValues = true;
  attention.keysPrepared = true;
  openBundleOf({keys, attention});
  normjit_op_desc desc = makeAttentionDesc(NORMJIT_ROPE_NEOX, 0, 1e6);
  desc.flags |= NORMJIT_OP_QK_RMS | NORMJIT_OP_WEIGHT | NORMJIT_OP_PREPARED_K;
  desc.eps = 1e-6;
  EXPECT_EQ(create(desc).first, NORMJIT_SUCCESS) << normjit_last_error();
  desc.flags &= ~NORMJIT_OP_PREPARED_K;
  EXPECT_EQ(create(desc).first, NORMJIT_ERROR_NOT_FOUND) << "keys in the loop";
  normjit_op_desc k = desc;
  k.kind = NORMJIT_OP_K_PREPARE;
  k.num_q_heads = 0;
  k.flags = NORMJIT_OP_QK_RMS | NORMJIT_OP_WEIGHT | NORMJIT_OP_COPY_V;
  EXPECT_EQ(create(k).first, NORMJIT_SUCCESS) << normjit_last_error();
  k.flags &= ~NORMJIT_OP_COPY_V;
  EXPECT_EQ(create(k).first, NORMJIT_ERROR_NOT_FOUND) << "without v";
  // Refusals, in the model's words: the flags of one kind on another,
  // query heads, nothing to do.
  for (auto [flags, kind, heads, expected] :
       {std::tuple{NORMJIT_OP_QK_RMS | NORMJIT_OP_PREPARED_K,
                   int32_t(NORMJIT_OP_QK_NORM), 4,
                   "prepared keys apply to prefill attention only"},
        std::tuple{NORMJIT_OP_QK_RMS | NORMJIT_OP_COPY_V,
                   int32_t(NORMJIT_OP_ATTENTION), 4,
                   "copying the values applies to K-prepare only"},
        std::tuple{uint32_t(NORMJIT_OP_QK_RMS), int32_t(NORMJIT_OP_K_PREPARE),
                   4, "K-prepare needs a positive number of key/value heads "
                      "and no query heads"},
        std::tuple{0u, int32_t(NORMJIT_OP_K_PREPARE), 0,
                   "K-prepare needs a QK-Norm statistic (rms, mean_var or "
                   "l2), rotary embeddings (rope), or both"}}) {
    normjit_op_desc bad = makeAttentionDesc();
    bad.kind = kind;
    bad.num_q_heads = heads;
    bad.flags = flags;
    bad.eps = 1e-6;
    auto [status, message] = create(bad);
    EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT) << expected;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST_F(OpDescTest, RopeFirstReachesItsOwnOperation) {
  // Llama 4: an L2 QK-Norm of rotated rows.
  OpSpec spec = makeAttention(RopeStyle::NeoX, kHeadDim, 10000.0);
  spec.qkStatistic = Statistic::L2;
  spec.eps = 1e-6;
  spec.ropeFirst = true;
  openBundleOf({spec});
  normjit_op_desc desc = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  desc.flags |= NORMJIT_OP_QK_L2 | NORMJIT_OP_ROPE_FIRST;
  desc.eps = 1e-6;
  EXPECT_EQ(create(desc).first, NORMJIT_SUCCESS);
  // Normalizing first is another kernel.
  desc.flags &= ~NORMJIT_OP_ROPE_FIRST;
  auto [status, message] = create(desc);
  EXPECT_EQ(status, NORMJIT_ERROR_NOT_FOUND);
  EXPECT_EQ(message.find("before the QK-Norm"), std::string::npos) << message;
}

TEST_F(OpDescTest, RotaryEmbeddingsReachTheOperation) {
  openBundleOf({makeAttention(RopeStyle::NeoX, kHeadDim, 10000.0),
                makeAttention(RopeStyle::GptJ, 64, 1e6)});
  // Rotary dim 0 is the head dim, base 0 is 10000, also spelled out.
  EXPECT_EQ(create(makeAttentionDesc(NORMJIT_ROPE_NEOX)).first,
            NORMJIT_SUCCESS);
  EXPECT_EQ(
      create(makeAttentionDesc(NORMJIT_ROPE_NEOX, kHeadDim, 10000.0)).first,
      NORMJIT_SUCCESS);
  EXPECT_EQ(create(makeAttentionDesc(NORMJIT_ROPE_GPTJ, 64, 1e6)).first,
            NORMJIT_SUCCESS);

  // A struct_size that ends after `rope` gives the later fields their
  // defaults; the bytes past it are not read.
  EXPECT_EQ(create(endingAt(makeAttentionDesc(NORMJIT_ROPE_NEOX),
                            offsetof(normjit_op_desc, rotary_dim)))
                .first,
            NORMJIT_SUCCESS);

  // Neither is the operation without rotary embeddings, nor gptj at the
  // default base: NotFound names what the desc converted to.
  auto [status, message] = create(makeAttentionDesc());
  EXPECT_EQ(status, NORMJIT_ERROR_NOT_FOUND);
  EXPECT_NE(message.find("attention h128 bf16 heads 4/2 none causal "
                         "no-weight is in no kernel bundle"),
            std::string::npos)
      << message;
  std::tie(status, message) = create(makeAttentionDesc(NORMJIT_ROPE_GPTJ, 64));
  EXPECT_EQ(status, NORMJIT_ERROR_NOT_FOUND);
  EXPECT_NE(message.find("attention h128 bf16 heads 4/2 none causal rope "
                         "gptj 64 theta 10000.0 no-weight is in no kernel "
                         "bundle"),
            std::string::npos)
      << message;
  // The defaults follow the head dim.
  normjit_op_desc small =
      normjit::attentionDesc(64, 4, 2, 0, NORMJIT_ROPE_NEOX);
  std::tie(status, message) = create(small);
  EXPECT_EQ(status, NORMJIT_ERROR_NOT_FOUND);
  EXPECT_NE(message.find("attention h64 bf16 heads 4/2 none rope neox 64 "
                         "theta 10000.0 no-weight"),
            std::string::npos)
      << message;
}

// Callers of API 3's first layout, which ended at scale (96 bytes), get no
// rotary embeddings whatever lies past their struct.
TEST_F(OpDescTest, DescsEndingBeforeRopeMeanNoRotaryEmbeddings) {
  openBundleOf({makeAttention()});
  ASSERT_EQ(offsetof(normjit_op_desc, rope), 96u);
  normjit_op_desc old =
      endingAt(makeAttentionDesc(), offsetof(normjit_op_desc, rope));
  EXPECT_EQ(create(old).first, NORMJIT_SUCCESS);
  // The same bytes inside struct_size are read, and refused.
  old.struct_size = sizeof(normjit_op_desc);
  auto [status, message] = create(old);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message, "normjit_op_desc.rope is -1515870811, not a normjit_rope "
                     "(NORMJIT_ROPE_NONE, _NEOX or _GPTJ)");
  // And the operation with rotary embeddings is another one.
  EXPECT_EQ(create(makeAttentionDesc(NORMJIT_ROPE_NEOX)).first,
            NORMJIT_ERROR_NOT_FOUND);
}

TEST_F(OpDescTest, RotaryEmbeddingRefusals) {
  openBundleOf({makeAttention()});
  normjit_op_desc rms = normjit::opDesc();
  rms.hidden = 4096;
  rms.rope = NORMJIT_ROPE_NEOX;
  normjit_op_desc qkNorm = normjit::opDesc();
  qkNorm.kind = NORMJIT_OP_QK_NORM;
  qkNorm.hidden = kHeadDim;
  qkNorm.num_q_heads = 4;
  qkNorm.num_kv_heads = 2;
  qkNorm.rope = NORMJIT_ROPE_GPTJ; // rotates (API 9), but is not causal
  qkNorm.flags = NORMJIT_OP_CAUSAL;
  normjit_op_desc unknown = makeAttentionDesc(3);
  // API 12's cache_block_size, where API 3's reserved field was.
  normjit_op_desc prefillPages = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  prefillPages.cache_block_size = 16;
  normjit_op_desc negativePages = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  negativePages.cache_block_size = -1;
  normjit_op_desc prefillFp8 = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  prefillFp8.flags |= NORMJIT_OP_FP8_CACHE;
  normjit_op_desc perHeadAlone = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  perHeadAlone.kind = NORMJIT_OP_ATTENTION_DECODE;
  perHeadAlone.flags |= NORMJIT_OP_CACHE_SCALE_PER_HEAD;
  normjit_op_desc oddPages = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  oddPages.kind = NORMJIT_OP_ATTENTION_DECODE;
  oddPages.cache_block_size = 24;
  // API 13's ragged table needs the pages.
  normjit_op_desc indptrAlone = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  indptrAlone.kind = NORMJIT_OP_ATTENTION_DECODE;
  indptrAlone.flags |= NORMJIT_OP_PAGE_INDPTR;
  normjit_op_desc rmsPositions = normjit::opDesc();
  rmsPositions.hidden = 4096;
  rmsPositions.flags = NORMJIT_OP_ROPE_POSITIONS;
  normjit_op_desc tableWithTheta = makeAttentionDesc(NORMJIT_ROPE_NEOX, 0, 1e6);
  tableWithTheta.flags |= NORMJIT_OP_ROPE_TABLE;
  normjit_op_desc tableWithoutRope = makeAttentionDesc();
  tableWithoutRope.flags |= NORMJIT_OP_ROPE_TABLE;
  const std::string attentionOnly =
      "normjit_op_desc: scale, NORMJIT_OP_CAUSAL and NORMJIT_OP_WRITE_LSE "
      "apply to NORMJIT_OP_ATTENTION only, rope and NORMJIT_OP_ROPE_* to "
      "attention, NORMJIT_OP_QK_NORM and NORMJIT_OP_K_PREPARE";
  const std::string needRope =
      "normjit_op_desc: rotary_dim, rope_theta, NORMJIT_OP_ROPE_POSITIONS, "
      "NORMJIT_OP_ROPE_TABLE and NORMJIT_OP_ROPE_FIRST need rope "
      "(NORMJIT_ROPE_NEOX or NORMJIT_ROPE_GPTJ)";
  normjit_op_desc firstWithoutRope = makeAttentionDesc();
  firstWithoutRope.flags |= NORMJIT_OP_ROPE_FIRST;
  normjit_op_desc firstWithoutNorm = makeAttentionDesc(NORMJIT_ROPE_NEOX);
  firstWithoutNorm.flags |= NORMJIT_OP_ROPE_FIRST;
  struct Case {
    const char *what;
    normjit_op_desc desc;
    std::string message;
  } cases[] = {
      {"neox 25", makeAttentionDesc(NORMJIT_ROPE_NEOX, 25),
       "attention: neox rotary embeddings need an even rotary dim from 2 to "
       "the head dim (128), got 25"},
      {"gptj past the head", makeAttentionDesc(NORMJIT_ROPE_GPTJ, 136),
       "attention: gptj rotary embeddings need an even rotary dim from 2 to "
       "the head dim (128), got 136"},
      {"negative rotary dim", makeAttentionDesc(NORMJIT_ROPE_GPTJ, -8),
       "attention: gptj rotary embeddings need an even rotary dim from 2 to "
       "the head dim (128), got -8"},
      {"negative base", makeAttentionDesc(NORMJIT_ROPE_NEOX, 0, -1.0),
       "attention: rope_theta must be a positive finite number, got -1.0"},
      {"base 1", makeAttentionDesc(NORMJIT_ROPE_NEOX, 0, 1.0),
       "attention: rope_theta must not be 1 (every pair would turn at the "
       "same rate)"},
      {"rms_norm", rms, attentionOnly},
      {"causal qk_norm", qkNorm, attentionOnly},
      {"unknown style", unknown,
       "normjit_op_desc.rope is 3, not a normjit_rope (NORMJIT_ROPE_NONE, "
       "_NEOX or _GPTJ)"},
      {"rotary dim alone", makeAttentionDesc(NORMJIT_ROPE_NONE, 64), needRope},
      {"base alone", makeAttentionDesc(NORMJIT_ROPE_NONE, 0, 5e5), needRope},
      {"prefill pages", prefillPages,
       "attention: a paged cache (cache_block_size) applies to decode "
       "attention and K-prepare into a KV cache (write_cache) only"},
      {"negative pages", negativePages,
       "normjit_op_desc.cache_block_size is -1, must not be negative"},
      {"prefill fp8 cache", prefillFp8,
       "attention: an FP8 cache (fp8_cache) applies to decode attention and "
       "K-prepare into a KV cache (write_cache) only"},
      {"scales per head alone", perHeadAlone,
       "attention_decode: cache scales per head need an FP8 cache "
       "(fp8_cache)"},
      {"pages of 24", oddPages,
       "attention_decode: a paged KV cache's block size must be a power of "
       "two in [1, 256] (vLLM's 16, SGLang's 1), got 24"},
      {"page_indptr without pages", indptrAlone,
       "attention_decode: a ragged page table (page_indptr) needs a paged "
       "cache (cache_block_size)"},
      {"rms_norm positions", rmsPositions, attentionOnly},
      {"table and theta", tableWithTheta,
       "normjit_op_desc: with NORMJIT_OP_ROPE_TABLE the table gives the "
       "angles; rope_theta must be 0"},
      {"table without rope", tableWithoutRope, needRope},
      {"rope first without rope", firstWithoutRope, needRope},
      {"rope first without a QK-Norm", firstWithoutNorm,
       "attention: rotating before the QK-Norm needs both a rotary embedding "
       "style (rope) and a QK-Norm"},
  };
  // Refused, not served the bundle's operation without rotary embeddings.
  for (const Case &c : cases) {
    auto [status, message] = create(c.desc);
    EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT) << c.what;
    EXPECT_EQ(message, c.message) << c.what;
  }
}

TEST_F(OpDescTest, RopeTablesAndPositionsReachTheOperation) {
  OpSpec table = makeAttention(RopeStyle::NeoX, 64);
  table.ropeTable = table.ropePositions = true;
  OpSpec positions = makeAttention(RopeStyle::GptJ, kHeadDim, 1e6);
  positions.ropePositions = true;
  openBundleOf({table, positions});
  normjit_op_desc tableDesc = makeAttentionDesc(NORMJIT_ROPE_NEOX, 64);
  tableDesc.flags |= NORMJIT_OP_ROPE_TABLE | NORMJIT_OP_ROPE_POSITIONS;
  EXPECT_EQ(create(tableDesc).first, NORMJIT_SUCCESS) << normjit_last_error();
  normjit_op_desc positionsDesc = makeAttentionDesc(NORMJIT_ROPE_GPTJ, 0, 1e6);
  positionsDesc.flags |= NORMJIT_OP_ROPE_POSITIONS;
  EXPECT_EQ(create(positionsDesc).first, NORMJIT_SUCCESS)
      << normjit_last_error();
  // Without the positions flag: another operation.
  positionsDesc.flags &= ~NORMJIT_OP_ROPE_POSITIONS;
  EXPECT_EQ(create(positionsDesc).first, NORMJIT_ERROR_NOT_FOUND);
}

TEST_F(OpDescTest, InPlaceFlagsReachTheOperation) {
  // vLLM's fused_add_rms_norm: residual_out over input, output over addend.
  OpSpec vllm = makeRmsNorm(4096);
  vllm.hasAddend = vllm.writeResidual = vllm.hasWeight = true;
  vllm.residualOver = RowOperand::Input;
  vllm.outputOver = RowOperand::Addend;
  OpSpec layer = vllm;
  layer.kind = OpKind::LayerNorm;
  layer.eps = 1e-5;
  layer.residualOver = RowOperand::Addend;
  layer.outputOver = RowOperand::Input;
  openBundleOf({vllm, layer});
  normjit_op_desc desc = normjit::opDesc();
  desc.hidden = 4096;
  desc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_ADDEND | NORMJIT_OP_RESIDUAL_OUT |
               NORMJIT_OP_RESIDUAL_OVER_INPUT | NORMJIT_OP_OUTPUT_OVER_ADDEND;
  EXPECT_EQ(create(desc).first, NORMJIT_SUCCESS) << normjit_last_error();
  normjit_op_desc layerDesc = desc;
  layerDesc.kind = NORMJIT_OP_LAYER_NORM;
  layerDesc.eps = 1e-5;
  layerDesc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_ADDEND |
                    NORMJIT_OP_RESIDUAL_OUT | NORMJIT_OP_RESIDUAL_OVER_ADDEND |
                    NORMJIT_OP_OUTPUT_OVER_INPUT;
  EXPECT_EQ(create(layerDesc).first, NORMJIT_SUCCESS) << normjit_last_error();

  // Each flag is part of the operation: without one, another kernel.
  normjit_op_desc half = desc;
  half.flags &= ~NORMJIT_OP_OUTPUT_OVER_ADDEND;
  expectNotFound(half, "rms_norm h4096 bf16 +addend +residual_out "
                       "residual_out over input");
  normjit_status status;
  std::string message;

  struct Case {
    const char *what;
    uint32_t flags;
    const char *message;
  };
  const Case cases[] = {
      {"both over input and addend",
       NORMJIT_OP_OUTPUT_OVER_INPUT | NORMJIT_OP_OUTPUT_OVER_ADDEND,
       "NORMJIT_OP_OUTPUT_OVER_INPUT and NORMJIT_OP_OUTPUT_OVER_ADDEND exclude "
       "each other"},
      {"residual both",
       NORMJIT_OP_RESIDUAL_OVER_INPUT | NORMJIT_OP_RESIDUAL_OVER_ADDEND,
       "NORMJIT_OP_RESIDUAL_OVER_INPUT and NORMJIT_OP_RESIDUAL_OVER_ADDEND "
       "exclude each other"},
      {"two outputs over one input",
       NORMJIT_OP_OUTPUT_OVER_INPUT | NORMJIT_OP_RESIDUAL_OVER_INPUT,
       "output and residual_out cannot both overwrite 'input'"},
      {"backward", NORMJIT_OP_BACKWARD | NORMJIT_OP_OUTPUT_OVER_INPUT,
       "in-place outputs (output_over, residual_over) apply to forward row "
       "kernels"},
  };
  for (const Case &c : cases) {
    normjit_op_desc bad = desc;
    bad.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_ADDEND |
                NORMJIT_OP_RESIDUAL_OUT | c.flags;
    std::tie(status, message) = create(bad);
    EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT) << c.what;
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.what << ": " << message;
  }
  // The QK-Norm prologue writes q and k, not rows of its input.
  normjit_op_desc qk = normjit::opDesc();
  qk.kind = NORMJIT_OP_QK_NORM;
  qk.hidden = 128;
  qk.num_q_heads = 8;
  qk.num_kv_heads = 1;
  qk.flags = NORMJIT_OP_OUTPUT_OVER_INPUT;
  std::tie(status, message) = create(qk);
  EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("apply to forward row kernels"), std::string::npos)
      << message;

  // The backward of an in-place forward is not in place.
  normjit_op_desc forward = desc;
  forward.flags |= NORMJIT_OP_SAVE_STATS;
  normjit_op_desc backward[2];
  size_t count = 0;
  ASSERT_EQ(normjit_op_desc_get_backward(&forward, backward, 2, &count),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(backward[0].flags &
                (NORMJIT_OP_OUTPUT_OVER_INPUT | NORMJIT_OP_OUTPUT_OVER_ADDEND |
                 NORMJIT_OP_RESIDUAL_OVER_INPUT |
                 NORMJIT_OP_RESIDUAL_OVER_ADDEND),
            0u);
}

TEST_F(OpDescTest, Fp8FlagsReachTheOperation) {
  // rms_norm_dynamic_per_token_quant after a residual add, bounded.
  OpSpec token = makeRmsNorm(4096);
  token.hasAddend = token.writeResidual = token.hasWeight = true;
  token.output = ElementType::f8E4M3FN;
  token.outputScale = OutputScale::PerToken;
  token.scaleUpperBound = true;
  OpSpec fixed = makeRmsNorm(4096);
  fixed.hasWeight = true;
  fixed.output = ElementType::f8E5M2;
  fixed.outputScale = OutputScale::Static;
  openBundleOf({token, fixed});
  normjit_op_desc desc = normjit::opDesc();
  desc.hidden = 4096;
  desc.output_type = NORMJIT_F8E4M3FN;
  desc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_ADDEND | NORMJIT_OP_RESIDUAL_OUT |
               NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN | NORMJIT_OP_SCALE_UB;
  EXPECT_EQ(create(desc).first, NORMJIT_SUCCESS) << normjit_last_error();
  normjit_op_desc fixedDesc = normjit::opDesc();
  fixedDesc.hidden = 4096;
  fixedDesc.output_type = NORMJIT_F8E5M2;
  fixedDesc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_OUTPUT_SCALE_STATIC;
  EXPECT_EQ(create(fixedDesc).first, NORMJIT_SUCCESS) << normjit_last_error();

  // Without the bound: another kernel.
  normjit_op_desc unbounded = desc;
  unbounded.flags &= ~NORMJIT_OP_SCALE_UB;
  expectNotFound(unbounded, "rms_norm h4096 bf16->f8E4M3FN +addend "
                            "+residual_out scale per_token");
  normjit_status status;
  std::string message;

  struct Case {
    const char *what;
    int32_t input, output;
    uint32_t flags;
    const char *message;
  };
  const Case cases[] = {
      {"both scales", NORMJIT_BF16, NORMJIT_F8E4M3FN,
       NORMJIT_OP_OUTPUT_SCALE_STATIC | NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN,
       "NORMJIT_OP_OUTPUT_SCALE_STATIC and NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN "
       "exclude each other"},
      {"no scale", NORMJIT_BF16, NORMJIT_F8E4M3FN, 0,
       "an FP8 output (f8E4M3FN) needs a scale"},
      {"scale of bf16", NORMJIT_BF16, NORMJIT_BF16,
       NORMJIT_OP_OUTPUT_SCALE_STATIC, "output scales quantize FP8 outputs"},
      {"FP8 input", NORMJIT_F8E4M3FN, NORMJIT_F8E4M3FN,
       NORMJIT_OP_OUTPUT_SCALE_STATIC,
       "FP8 (f8E4M3FN) is the type of quantized outputs only"},
      {"bound of a static scale", NORMJIT_BF16, NORMJIT_F8E5M2,
       NORMJIT_OP_OUTPUT_SCALE_STATIC | NORMJIT_OP_SCALE_UB,
       "scale_ub bounds per-token FP8 scales only"},
  };
  for (const Case &c : cases) {
    normjit_op_desc bad = normjit::opDesc();
    bad.hidden = 4096;
    bad.input_type = c.input;
    bad.output_type = c.output;
    bad.flags = NORMJIT_OP_WEIGHT | c.flags;
    std::tie(status, message) = create(bad);
    EXPECT_EQ(status, NORMJIT_ERROR_INVALID_ARGUMENT) << c.what;
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.what << ": " << message;
  }

  // Quantized outputs have no backward.
  normjit_op_desc backward[2];
  size_t count = 0;
  EXPECT_EQ(normjit_op_desc_get_backward(&desc, backward, 2, &count),
            NORMJIT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(normjit_last_error())
                .find("quantization has no backward kernel"),
            std::string::npos)
      << normjit_last_error();
}

} // namespace
