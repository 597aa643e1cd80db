//===- CpuCheckTest.cpp - the CPU execution path and its checks -----------===//
//
// The pieces the CPU sweep relies on: exact storage-type rounding, the
// float64 references, guard detection, and the JIT harness itself.
//
//===----------------------------------------------------------------------===//

#include "compiler/HostExecution.h"
#include "tools/norm-cpu-check/Buffers.h"
#include "compiler/model/FloatFormats.h"
#include "compiler/model/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>

using namespace norm;
using namespace norm::check;

namespace {

//===----------------------------------------------------------------------===//
// FloatFormats
//===----------------------------------------------------------------------===//

TEST(FloatFormats, RoundsToNearestEven) {
  // bf16 keeps 7 fraction bits: ties at 2^-8 above 1.
  EXPECT_EQ(roundTo(ElementType::bf16, 1 + 0x1p-8), 1.0);
  EXPECT_EQ(roundTo(ElementType::bf16, 1 + 3 * 0x1p-8), 1 + 0x1p-6);
  EXPECT_EQ(roundTo(ElementType::bf16, -(1 + 3 * 0x1p-8)), -(1 + 0x1p-6));
  // f16 keeps 10 fraction bits.
  EXPECT_EQ(roundTo(ElementType::f16, 1 + 0x1p-11), 1.0);
  EXPECT_EQ(roundTo(ElementType::f16, 1 + 3 * 0x1p-11), 1 + 0x1p-9);
  EXPECT_EQ(roundTo(ElementType::f32, 1 + 0x1p-24), 1.0);
  EXPECT_EQ(roundTo(ElementType::f32, 1 + 3 * 0x1p-24), 1 + 0x1p-22);
}

TEST(FloatFormats, RoundsOnceFromDouble) {
  // Just above a bf16 tie, but exactly on it once rounded to f32: rounding
  // through float would give 1.
  double x = 1 + 0x1p-8 + 0x1p-30;
  EXPECT_EQ(static_cast<double>(static_cast<float>(x)), 1 + 0x1p-8);
  EXPECT_EQ(roundTo(ElementType::bf16, x), 1 + 0x1p-7);
}

TEST(FloatFormats, OverflowAndSubnormals) {
  EXPECT_EQ(roundTo(ElementType::f16, 65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(roundTo(ElementType::f16, 65520.0)));
  EXPECT_TRUE(std::isinf(roundTo(ElementType::bf16, 0x1.ffp127)));
  // f16 subnormals are multiples of 2^-24; ties go to even.
  EXPECT_EQ(roundTo(ElementType::f16, 0x1p-25), 0.0);
  EXPECT_EQ(roundTo(ElementType::f16, 3 * 0x1p-25), 0x1p-23);
  EXPECT_EQ(roundTo(ElementType::f16, 0x1p-14 - 0x1p-25), 0x1p-14);
  EXPECT_EQ(encode(ElementType::f16, 0x1p-24), 0x0001u);
  EXPECT_EQ(encode(ElementType::bf16, 0x1p-133), 0x0001u);
  EXPECT_EQ(ulp(ElementType::f16, 0.0), 0x1p-24);
  EXPECT_EQ(ulp(ElementType::bf16, 3.0), 0x1p-6);
  EXPECT_EQ(ulp(ElementType::f32, 1.0), 0x1p-23);
}

TEST(FloatFormats, EveryHalfPatternRoundTrips) {
  for (ElementType type : {ElementType::f16, ElementType::bf16})
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      double value = decode(type, bits);
      if (std::isnan(value))
        continue;
      ASSERT_EQ(encode(type, value), bits)
          << getElementTypeName(type) << " " << bits;
    }
}

TEST(FloatFormats, EveryFp8PatternRoundTrips) {
  for (ElementType type : {ElementType::f8E4M3FN, ElementType::f8E5M2})
    for (uint32_t bits = 0; bits < 0x100; ++bits) {
      double value = decode(type, bits);
      if (std::isnan(value) || std::isinf(value))
        continue;
      ASSERT_EQ(encode(type, value), bits)
          << getElementTypeName(type) << " " << bits;
    }
}

TEST(FloatFormats, Fp8RoundsToEvenAndSaturates) {
  using T = ElementType;
  // e4m3: 3 fraction bits, largest finite 448 (0x7e), 0x7f is NaN.
  EXPECT_EQ(roundTo(T::f8E4M3FN, 1 + 0x1p-4), 1.0);
  EXPECT_EQ(roundTo(T::f8E4M3FN, 1 + 3 * 0x1p-4), 1 + 0x1p-2);
  EXPECT_EQ(decode(T::f8E4M3FN, 0x7e), 448.0);
  EXPECT_TRUE(std::isnan(decode(T::f8E4M3FN, 0x7f)));
  EXPECT_TRUE(std::isnan(decode(T::f8E4M3FN, 0xff)));
  EXPECT_EQ(encode(T::f8E4M3FN, 464.0), 0x7eu); // would round to 480
  EXPECT_EQ(encode(T::f8E4M3FN, -1e30), 0xfeu);
  EXPECT_EQ(encode(T::f8E4M3FN, std::numeric_limits<double>::infinity()),
            0x7eu);
  // Subnormals: multiples of 2^-9.
  EXPECT_EQ(encode(T::f8E4M3FN, 0x1p-9), 0x01u);
  EXPECT_EQ(encode(T::f8E4M3FN, 0x1p-10), 0x00u);
  EXPECT_EQ(encode(T::f8E4M3FN, 3 * 0x1p-10), 0x02u);
  EXPECT_EQ(encode(T::f8E4M3FN, 0x1p-6 - 0x1p-10), 0x08u); // to 2^-6
  // e5m2: 2 fraction bits, largest finite 57344 (0x7b), infinity 0x7c.
  EXPECT_EQ(decode(T::f8E5M2, 0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(decode(T::f8E5M2, 0x7c)));
  EXPECT_EQ(encode(T::f8E5M2, 65536.0), 0x7bu);
  EXPECT_EQ(encode(T::f8E5M2, 0x1p-16), 0x01u);
  EXPECT_EQ(ulp(T::f8E5M2, 3.0), 0.5);
  EXPECT_EQ(getElementBytes(T::f8E5M2), 1);
}

TEST(FloatFormats, PoisonIsNaN) {
  for (ElementType type :
       {ElementType::f32, ElementType::f16, ElementType::bf16,
        ElementType::f8E4M3FN, ElementType::f8E5M2}) {
    EXPECT_TRUE(std::isnan(decode(type, getOutputPoison(type))));
    EXPECT_TRUE(std::isnan(decode(type, getInputGuard(type))));
  }
}

//===----------------------------------------------------------------------===//
// References
//===----------------------------------------------------------------------===//

TEST(Reference, NaNNeverPasses) {
  Expected e{1.0, std::numeric_limits<double>::infinity()};
  EXPECT_FALSE(e.accepts(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(e.accepts(1e300));
}

/// One f32 row with f32 weights.
struct OneRow {
  explicit OneRow(std::vector<double> values)
      : input(ElementType::f32, 1, values.size(), values.size()),
        weight(ElementType::f32, 1, values.size(), values.size()) {
    for (size_t i = 0; i < values.size(); ++i) {
      input.store(0, i, values[i]);
      weight.store(0, i, 1.0);
    }
  }
  GuardedBuffer input, weight;
};

TEST(Reference, RMSNorm) {
  OneRow row({1, 2, 3, 4});
  OpSpec spec;
  spec.kind = OpSpec::Kind::RMSNorm;
  spec.hidden = 4;
  spec.input = spec.output = spec.param = ElementType::f32;
  spec.hasWeight = true;
  spec.eps = 0.0;
  FusedRowOperands operands;
  operands.input = row.input.view();
  operands.weight = row.weight.paramView();
  FusedRowExpected expected = referenceFusedRow(spec, operands);
  double scale = 1 / std::sqrt(7.5);
  for (int64_t col = 0; col < 4; ++col) {
    const Expected &e = expected.output.at(0, col);
    EXPECT_DOUBLE_EQ(e.value, (col + 1) * scale);
    // f32 tolerance for a short row: about 1e-6 relative.
    EXPECT_GT(e.tolerance, 0.0);
    EXPECT_LT(e.tolerance, 2e-6 * std::fabs(e.value));
  }
}

TEST(Reference, LayerNormCentersAndScales) {
  OneRow row({1, 2, 3, 4});
  OpSpec spec;
  spec.kind = OpSpec::Kind::LayerNorm;
  spec.hidden = 4;
  spec.input = spec.output = ElementType::f32;
  spec.eps = 0.0;
  FusedRowOperands operands;
  operands.input = row.input.view();
  FusedRowExpected expected = referenceFusedRow(spec, operands);
  double scale = 1 / std::sqrt(1.25);
  EXPECT_DOUBLE_EQ(expected.output.at(0, 0).value, -1.5 * scale);
  EXPECT_DOUBLE_EQ(expected.output.at(0, 3).value, 1.5 * scale);
}

TEST(Reference, SandwichRoundsBeforeTheSkip) {
  // normalized = 1 + 2^-8 (a bf16 tie, rounds to 1), skip = 2^-7: the
  // graph computes bf16(1) + 2^-7, not bf16(1 + 2^-8 + 2^-7).
  GuardedBuffer input(ElementType::f32, 1, 1, 1),
      skip(ElementType::f32, 1, 1, 1);
  input.store(0, 0, 1 + 0x1p-8);
  skip.store(0, 0, 0x1p-7);
  OpSpec spec;
  spec.kind = OpSpec::Kind::Elementwise;
  spec.hidden = 1;
  spec.input = ElementType::f32;
  spec.output = ElementType::bf16;
  spec.hasSkip = true;
  FusedRowOperands operands;
  operands.input = input.view();
  operands.skip = skip.view();
  FusedRowExpected expected = referenceFusedRow(spec, operands);
  EXPECT_DOUBLE_EQ(expected.output.at(0, 0).value, 1 + 0x1p-7);
}

TEST(Reference, ResidualIsRoundedToTheInputType) {
  GuardedBuffer input(ElementType::bf16, 1, 1, 1),
      addend(ElementType::bf16, 1, 1, 1);
  input.store(0, 0, 1.0);
  addend.store(0, 0, 0x1p-8); // 1 + 2^-8 is a bf16 tie: 1
  OpSpec spec;
  spec.kind = OpSpec::Kind::Elementwise;
  spec.hidden = 1;
  spec.input = spec.addendType = ElementType::bf16;
  spec.output = ElementType::f32;
  spec.hasAddend = spec.writeResidual = true;
  FusedRowOperands operands;
  operands.input = input.view();
  operands.addend = addend.view();
  FusedRowExpected rounded = referenceFusedRow(spec, operands);
  EXPECT_EQ(rounded.output.at(0, 0).value, 1.0);
  EXPECT_EQ(rounded.residual.at(0, 0).value, 1.0);
  // The kernel's f32 sum may round either way at a tie: one bf16 ulp.
  EXPECT_TRUE(rounded.residual.at(0, 0).accepts(1 + 0x1p-7));
  EXPECT_FALSE(rounded.residual.at(0, 0).accepts(1 + 0x1p-6));
  spec.f32Residual = true;
  FusedRowExpected kept = referenceFusedRow(spec, operands);
  EXPECT_EQ(kept.output.at(0, 0).value, 1 + 0x1p-8);
  EXPECT_EQ(kept.residual.at(0, 0).value, 1.0);
}

TEST(Reference, QKNormReadsQThenKHeads) {
  // One token, head_dim 2, one q head and one kv head: [q | k | v].
  GuardedBuffer qkv(ElementType::f32, 1, 6, 8);
  double values[] = {3, 4, 6, 8, 100, 100};
  for (int i = 0; i < 6; ++i)
    qkv.store(0, i, values[i]);
  OpSpec spec;
  spec.kind = OpSpec::Kind::QKNormPrologue;
  spec.hidden = 2;
  spec.numQHeads = spec.numKvHeads = 1;
  spec.input = spec.output = ElementType::f32;
  spec.qkStatistic = Statistic::L2;
  spec.eps = 0.0;
  QKNormExpected expected = referenceQKNorm(spec, qkv.view(), {}, {});
  EXPECT_DOUBLE_EQ(expected.q.at(0, 0).value, 0.6);
  EXPECT_DOUBLE_EQ(expected.k.at(0, 1).value, 0.8);
}

TEST(Reference, ColumnStats) {
  GuardedBuffer input(ElementType::f32, 4, 1, 4);
  for (int row = 0; row < 4; ++row)
    input.store(row, 0, row + 1);
  ColumnStatsExpected expected = referenceColumnStats(input.view());
  EXPECT_DOUBLE_EQ(expected.mean[0].value, 2.5);
  EXPECT_DOUBLE_EQ(expected.variance[0].value, 1.25);
}

//===----------------------------------------------------------------------===//
// Guarded buffers
//===----------------------------------------------------------------------===//

TEST(GuardedBuffer, FindsWritesOutsideTheRows) {
  GuardedBuffer buffer(ElementType::bf16, 2, 3, 8);
  uint32_t poison = getOutputPoison(ElementType::bf16);
  buffer.fill(poison);
  buffer.fillRows([](int64_t) { return 1.0; });
  EXPECT_FALSE(buffer.findStrayWrite(poison));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u);

  buffer.storeBits(1, 5, 0);
  EXPECT_EQ(buffer.findStrayWrite(poison).value_or(""),
            "the gap after row 1, column 5");
  buffer.storeBits(1, 5, poison);
  buffer.storeBits(0, -1, 0);
  EXPECT_EQ(buffer.findStrayWrite(poison).value_or(""),
            "the guard before the buffer, element -1");
  buffer.storeBits(0, -1, poison);
  buffer.storeBits(2, 0, 0);
  EXPECT_EQ(buffer.findStrayWrite(poison).value_or(""),
            "the guard after the buffer, element 0 past the end");
}

TEST(GuardedBuffer, SnapshotsSeeEveryByte) {
  GuardedBuffer buffer(ElementType::f32, 1, 4, 4);
  buffer.fill(getInputGuard(ElementType::f32));
  std::vector<uint8_t> bytes = buffer.snapshot();
  EXPECT_TRUE(buffer.matches(bytes));
  buffer.corruptGuard();
  EXPECT_FALSE(buffer.matches(bytes));
}

//===----------------------------------------------------------------------===//
// The JIT harness
//===----------------------------------------------------------------------===//

// Writes block_id * 1000 + thread_id of each thread, after a barrier and an
// allreduce over groups of 4 threads (whose sum of thread ids is added).
constexpr const char *kIndexKernel = R"mlir(
gpu.module @norm_kernels {
  gpu.func @ids(%out: memref<1099511627776xf32>, %n: i64)
      kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
    %t = gpu.thread_id x
    %b = gpu.block_id x
    %d = gpu.block_dim x
    %c1000 = arith.constant 1000 : index
    %id = arith.muli %b, %c1000 : index
    %value = arith.addi %id, %t : index
    %vi = arith.index_cast %value : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    %ti = arith.index_cast %t : index to i64
    %tf = arith.sitofp %ti : i64 to f32
    gpu.barrier
    %sum = norm.row_allreduce %tf {group_size = 4 : i64} : f32
    %total = arith.addf %vf, %sum : f32
    %base = arith.muli %b, %d : index
    %i = arith.addi %base, %t : index
    memref.store %total, %out[%i] : memref<1099511627776xf32>
    gpu.return
  }
}
)mlir";

TEST(HostKernels, RunsTheGrid) {
  std::unique_ptr<HostKernels> kernels;
  Status status = HostKernels::compile(kIndexKernel, {}, kernels);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(kernels->getKernelNames(), std::vector<std::string>{"ids"});
  std::vector<HostKernelParam> params = kernels->getParams("ids");
  ASSERT_EQ(params.size(), 2u);
  EXPECT_TRUE(params[0].isBuffer);
  EXPECT_EQ(params[0].elementType, "f32");
  EXPECT_FALSE(params[1].isBuffer);

  std::vector<float> out(3 * 8, -1.0f);
  status = kernels->launch("ids", {out.data()}, {0}, 3);
  ASSERT_TRUE(status) << status.message();
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 8; ++t) {
      float groupSum = t < 4 ? 0 + 1 + 2 + 3 : 4 + 5 + 6 + 7;
      EXPECT_EQ(out[b * 8 + t], b * 1000 + t + groupSum) << b << " " << t;
    }
}

TEST(HostKernels, ReportsBadLaunches) {
  std::unique_ptr<HostKernels> kernels;
  ASSERT_TRUE(HostKernels::compile(kIndexKernel, {}, kernels));
  float out[8];
  Status status = kernels->launch("ids", {out, out}, {0}, 1);
  EXPECT_FALSE(status);
  EXPECT_EQ(status.message(),
            "kernel ids takes 1 buffers and 1 integers, got 2 and 1");
  status = kernels->launch("nope", {out}, {0}, 1);
  EXPECT_EQ(status.message(), "no kernel named 'nope'");
}

TEST(HostKernels, ReportsCompileErrors) {
  std::unique_ptr<HostKernels> kernels;
  Status status = HostKernels::compile("gpu.module @m {", {}, kernels);
  EXPECT_FALSE(status);
  EXPECT_NE(status.message().find("cannot parse the kernel module"),
            std::string::npos)
      << status.message();

  status = HostKernels::compile("func.func @f() { return }", {}, kernels);
  EXPECT_EQ(status.message(), "the module has no gpu.func kernels");

  // The pass's diagnostics come back in the message, with locations.
  status = HostKernels::compile(R"mlir(
gpu.module @m {
  gpu.func @k() kernel { gpu.return }
})mlir",
                                {}, kernels);
  EXPECT_NE(status.message().find(
                "kernel module:3:3: 'gpu.func' op has no known_block_size"),
            std::string::npos)
      << status.message();

  HostCompileOptions options;
  options.kernelPipeline = "no-such-pass";
  status = HostKernels::compile(kIndexKernel, options, kernels);
  EXPECT_NE(status.message().find("invalid kernel pipeline 'no-such-pass'"),
            std::string::npos)
      << status.message();
}

// Converts element b of `in` to `out` in CTA b: f32 -> f16 and f16 -> f32,
// once as scalars and once as 4-element vectors (CTA b converts elements
// 4b..4b+3), so that both forms of the host's integer expansion run. bf16
// goes through arith-expand, f16 through norm-host-expand-f16-conversions;
// either way no f16 or bf16 value is left for LLVM to lower.
constexpr const char *kConversionKernels = R"mlir(
gpu.module @norm_kernels {
  gpu.func @to_f16(%in: memref<1099511627776xf32>, %out: memref<1099511627776xf16>)
      kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
    %b = gpu.block_id x
    %x = memref.load %in[%b] : memref<1099511627776xf32>
    %h = arith.truncf %x : f32 to f16
    memref.store %h, %out[%b] : memref<1099511627776xf16>
    gpu.return
  }
  gpu.func @from_f16(%in: memref<1099511627776xf16>, %out: memref<1099511627776xf32>)
      kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
    %b = gpu.block_id x
    %h = memref.load %in[%b] : memref<1099511627776xf16>
    %x = arith.extf %h : f16 to f32
    memref.store %x, %out[%b] : memref<1099511627776xf32>
    gpu.return
  }
  gpu.func @to_f16x4(%in: memref<1099511627776xf32>, %out: memref<1099511627776xf16>)
      kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
    %b = gpu.block_id x
    %c4 = arith.constant 4 : index
    %i = arith.muli %b, %c4 : index
    %x = vector.load %in[%i] : memref<1099511627776xf32>, vector<4xf32>
    %h = arith.truncf %x : vector<4xf32> to vector<4xf16>
    vector.store %h, %out[%i] : memref<1099511627776xf16>, vector<4xf16>
    gpu.return
  }
  gpu.func @from_f16x4(%in: memref<1099511627776xf16>, %out: memref<1099511627776xf32>)
      kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
    %b = gpu.block_id x
    %c4 = arith.constant 4 : index
    %i = arith.muli %b, %c4 : index
    %h = vector.load %in[%i] : memref<1099511627776xf16>, vector<4xf16>
    %x = arith.extf %h : vector<4xf16> to vector<4xf32>
    vector.store %x, %out[%i] : memref<1099511627776xf32>, vector<4xf32>
    gpu.return
  }
  gpu.func @to_bf16(%in: memref<1099511627776xf32>, %out: memref<1099511627776xbf16>)
      kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
    %b = gpu.block_id x
    %x = memref.load %in[%b] : memref<1099511627776xf32>
    %h = arith.truncf %x : f32 to bf16
    memref.store %h, %out[%b] : memref<1099511627776xbf16>
    gpu.return
  }
}
)mlir";

/// A kernel that rounds `width` f32 values a CTA to `type` (FP8: through
/// norm-expand-fp8-conversions' integer code).
std::string getTruncKernel(const std::string &name, const std::string &type,
                           int width) {
  std::string memref = "memref<1099511627776x" + type + ">";
  std::string vector = "vector<" + std::to_string(width) + "x";
  return "  gpu.func @" + name +
         "(%in: memref<1099511627776xf32>, %out: " + memref +
         ")\n"
         "      kernel attributes {known_block_size = array<i32: 1, 1, 1>} {\n"
         "    %b = gpu.block_id x\n"
         "    %w = arith.constant " + std::to_string(width) + " : index\n"
         "    %i = arith.muli %b, %w : index\n"
         "    %x = vector.load %in[%i] : memref<1099511627776xf32>, " +
         vector + "f32>\n"
         "    %q = arith.truncf %x : " + vector + "f32> to " + vector + type +
         ">\n"
         "    vector.store %q, %out[%i] : " + memref + ", " + vector + type +
         ">\n"
         "    gpu.return\n"
         "  }\n";
}

/// f32 -> e4m3 and e5m2, one element or eight a CTA.
std::string getFp8ConversionKernels() {
  return "module attributes {gpu.container_module} {\ngpu.module @k {\n" +
         getTruncKernel("to_e4m3", "f8E4M3FN", 1) +
         getTruncKernel("to_e4m3x8", "f8E4M3FN", 8) +
         getTruncKernel("to_e5m2x8", "f8E5M2", 8) + "}\n}\n";
}

/// f32 values that exercise f32 -> f16/bf16 rounding: every f16 value, the
/// midpoints between neighbours (ties) and the f32 values on either side,
/// the overflow and subnormal boundaries, and random bit patterns.
std::vector<float> getRoundingInputs() {
  std::vector<float> inputs;
  auto bits = [](uint32_t pattern) {
    float value;
    std::memcpy(&value, &pattern, sizeof(value));
    return value;
  };
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      float value = static_cast<float>(decode(ElementType::f16, h | sign));
      float next = static_cast<float>(decode(ElementType::f16, (h + 1) | sign));
      float tie = static_cast<float>((double(value) + double(next)) / 2);
      inputs.insert(inputs.end(), {value, tie, std::nextafter(tie, 0.0f),
                                   std::nextafter(tie, 1e30f * (sign ? -1 : 1))});
    }
  }
  for (float value : {65504.0f, 65519.0f, 65519.996f, 65520.0f, 65536.0f,
                      0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f,
                      std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN(), 3e38f})
    inputs.insert(inputs.end(), {value, -value});
  uint32_t state = 12345;
  for (int i = 0; i < 100000; ++i) {
    state = state * 1664525u + 1013904223u;
    inputs.push_back(bits(state));
  }
  while (inputs.size() % 4)
    inputs.push_back(0.0f);
  return inputs;
}

/// f32 values that exercise f32 -> FP8 rounding: every finite value of
/// both formats, their midpoints and the f32 values on either side, the
/// saturation and subnormal boundaries, infinities, NaN and random bit
/// patterns; a multiple of 8 of them.
std::vector<float> getFp8RoundingInputs() {
  std::vector<float> inputs;
  for (ElementType type : {ElementType::f8E4M3FN, ElementType::f8E5M2})
    for (uint32_t q = 0; q < 0x7f; ++q)
      for (uint32_t sign : {0u, 0x80u}) {
        double value = decode(type, q | sign);
        double next = decode(type, (q + 1) | sign);
        if (!std::isfinite(value))
          continue;
        float tie = std::isfinite(next)
                        ? static_cast<float>((value + next) / 2)
                        : static_cast<float>(value * 1.0625);
        inputs.insert(inputs.end(),
                      {static_cast<float>(value), tie, std::nextafter(tie, 0.0f),
                       std::nextafter(tie, 1e30f * (sign ? -1 : 1))});
      }
  for (float value : {448.0f, 464.0f, 479.99f, 480.0f, 57344.0f, 61440.0f,
                      65536.0f, 0x1p-9f, 0x1p-10f, 0x1p-16f, 0x1p-17f,
                      0x1.8p-17f, 1e-30f, 0x1p-149f,
                      std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN(), 3e38f})
    inputs.insert(inputs.end(), {value, -value});
  uint32_t state = 54321;
  for (int i = 0; i < 100000; ++i) {
    state = state * 1664525u + 1013904223u;
    float value;
    std::memcpy(&value, &state, sizeof(value));
    inputs.push_back(value);
  }
  while (inputs.size() % 8)
    inputs.push_back(0.0f);
  return inputs;
}

/// NaN matches NaN; everything else bit for bit.
::testing::AssertionResult sameConversion(ElementType type, uint32_t got,
                                          uint32_t want, float input) {
  if (std::isnan(decode(type, got)) && std::isnan(decode(type, want)))
    return ::testing::AssertionSuccess();
  if (got == want)
    return ::testing::AssertionSuccess();
  // AssertionResult formats each value on its own: no stream manipulators.
  char text[128];
  std::snprintf(text, sizeof(text), " of %a: got 0x%x, want 0x%x",
                static_cast<double>(input), got, want);
  return ::testing::AssertionFailure() << getElementTypeName(type) << text;
}

// The host path converts exactly on every CPU: with this machine's features
// and with those of the x86-64 baseline (no F16C, no AVX512-BF16), which
// would otherwise need the compiler runtime's helpers.
TEST(HostKernels, ConvertsNarrowFloatsExactlyOnAnyCpu) {
  std::vector<float> inputs = getRoundingInputs();
  int64_t n = static_cast<int64_t>(inputs.size());
  std::vector<uint16_t> halves(0x10000);
  for (uint32_t h = 0; h < 0x10000; ++h)
    halves[h] = static_cast<uint16_t>(h);
  for (const char *cpu : {"", "x86-64"}) {
    SCOPED_TRACE(std::string("cpu '") + cpu + "'");
    HostCompileOptions options;
    options.cpu = cpu;
    std::unique_ptr<HostKernels> kernels;
    Status status = HostKernels::compile(kConversionKernels, options, kernels);
    ASSERT_TRUE(status) << status.message();

    for (const char *kernel : {"to_f16", "to_f16x4", "to_bf16"}) {
      SCOPED_TRACE(kernel);
      ElementType type = kernel == std::string("to_bf16") ? ElementType::bf16
                                                          : ElementType::f16;
      std::vector<uint16_t> out(n, 0xdead);
      int64_t grid = kernel == std::string("to_f16x4") ? n / 4 : n;
      ASSERT_TRUE(kernels->launch(kernel, {inputs.data(), out.data()}, {}, grid));
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(sameConversion(type, out[i], encode(type, inputs[i]),
                                   inputs[i]));
    }
    for (const char *kernel : {"from_f16", "from_f16x4"}) {
      SCOPED_TRACE(kernel);
      std::vector<float> out(halves.size(), -1.0f);
      int64_t grid = kernel == std::string("from_f16x4") ? 0x4000 : 0x10000;
      ASSERT_TRUE(kernels->launch(kernel, {halves.data(), out.data()}, {}, grid));
      for (uint32_t h = 0; h < 0x10000; ++h) {
        double want = decode(ElementType::f16, h);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(out[h])) << std::hex << h;
          continue;
        }
        uint32_t got, expected;
        float wantFloat = static_cast<float>(want);
        std::memcpy(&got, &out[h], 4);
        std::memcpy(&expected, &wantFloat, 4);
        ASSERT_EQ(got, expected) << "f16 0x" << std::hex << h;
      }
    }
  }
}

// The host path rounds f32 to FP8 as cvt.rn.satfinite does: to nearest
// even, saturated, NaN to NaN, bit for bit what the float64 model encodes.
TEST(HostKernels, ConvertsToFp8Exactly) {
  std::vector<float> inputs = getFp8RoundingInputs();
  int64_t n = static_cast<int64_t>(inputs.size());
  HostCompileOptions options;
  options.cpu = "x86-64";
  std::unique_ptr<HostKernels> kernels;
  Status status =
      HostKernels::compile(getFp8ConversionKernels(), options, kernels);
  ASSERT_TRUE(status) << status.message();
  for (auto [kernel, type, width] :
       {std::tuple{"to_e4m3", ElementType::f8E4M3FN, 1},
        std::tuple{"to_e4m3x8", ElementType::f8E4M3FN, 8},
        std::tuple{"to_e5m2x8", ElementType::f8E5M2, 8}}) {
    SCOPED_TRACE(kernel);
    std::vector<uint8_t> out(n, 0x5a);
    ASSERT_TRUE(
        kernels->launch(kernel, {inputs.data(), out.data()}, {}, n / width));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(
          sameConversion(type, out[i], encode(type, inputs[i]), inputs[i]));
  }
}

} // namespace
