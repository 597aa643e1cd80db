//===- RopeInputsTest.cpp - rotary positions and tables in libnormjit -----===//
//
// Attention whose rotary positions come from a buffer and whose angles come
// from a cos/sin table (OpSpec::ropePositions, ropeTable; API 5's
// NORMJIT_OP_ROPE_POSITIONS, NORMJIT_OP_ROPE_TABLE) on the fake driver: the
// kernel parameters a launch passes (the buffers, rope_table_rows, the
// table's stride), the checks of both buffers, and the C API's launch
// arguments (API 4's layout, whose cache_rows lay two tensors earlier:
// DecodeTest).
//
// The caller's buffers are host memory: the fake driver records launch
// parameters without reading them.
//
//===----------------------------------------------------------------------===//

#include "runtime/normjit.hpp"

#include "test/Unit/Runtime/CApiBundle.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

constexpr int64_t kHeadDim = 128, kQHeads = 4, kKvHeads = 2, kRotaryDim = 64;
constexpr int64_t kQCols = kQHeads * kHeadDim, kKvCols = kKvHeads * kHeadDim;

/// Causal attention with NeoX over half the head, angles from a table at
/// explicit positions: what attentionDesc(128, 4, 2, causal | positions |
/// table, neox, 64) converts to.
OpSpec makeTableAttention() {
  OpSpec spec;
  spec.kind = OpKind::Attention;
  spec.hidden = kHeadDim;
  spec.numQHeads = kQHeads;
  spec.numKvHeads = kKvHeads;
  spec.qkStatistic = Statistic::None;
  spec.causal = true;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  spec.rope = RopeStyle::NeoX;
  spec.rotaryDim = kRotaryDim;
  spec.ropeTable = spec.ropePositions = true;
  return spec;
}

/// The buffers of one launch of `rows` tokens in one sequence, a table of
/// `tableRows` rows `tableStride` floats apart; 16-byte aligned host memory.
struct Buffers {
  std::vector<std::vector<uint64_t>> owned;
  void *q, *k, *v, *cuSeqlens, *positions, *table, *output;

  Buffers(int64_t rows, int64_t tableRows, int64_t tableStride) {
    auto get = [&](int64_t bytes) -> void * {
      owned.emplace_back((bytes + 7) / 8 + 2);
      return owned.back().data() + 2 - (reinterpret_cast<uintptr_t>(
                                            owned.back().data()) %
                                        16) / 8;
    };
    q = get(rows * kQCols * 2);
    k = get(rows * kKvCols * 2);
    v = get(rows * kKvCols * 2);
    cuSeqlens = get(8);
    positions = get(rows * 4);
    table = get(tableRows * tableStride * 4);
    output = get(rows * kQCols * 2);
  }

  LaunchArgs args(int64_t rows, int64_t tableRows, int64_t tableStride) const {
    LaunchArgs a;
    a.set(BufferSlot::Q, q, ElementType::bf16, kQCols)
        .set(BufferSlot::K, k, ElementType::bf16, kKvCols)
        .set(BufferSlot::V, v, ElementType::bf16, kKvCols)
        .set(BufferSlot::CuSeqlens, cuSeqlens, ElementType::i32, 2)
        .set(BufferSlot::Positions, positions, ElementType::i32, rows)
        .set(BufferSlot::Output, output, ElementType::bf16, kQCols)
        .setRopeTable(table, tableRows, kRotaryDim, tableStride);
    return a;
  }
};

uint64_t address(const void *p) { return reinterpret_cast<uint64_t>(p); }

class RopeInputsTest : public FakeDriverTest {
protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    ASSERT_TRUE(Context::create(makeFakeOptions(std::make_shared<FakeCompiler>()),
                                context)
                    .ok());
    Status status = context->getKernel(makeTableAttention(), {}, kernel);
    ASSERT_TRUE(status.ok()) << status.message();
  }

  std::string refused(const LaunchArgs &args, int64_t rows) {
    Status status = kernel->launch(args, rows, nullptr);
    EXPECT_FALSE(status.ok());
    return status.message();
  }

  std::unique_ptr<Context> context;
  std::shared_ptr<const Kernel> kernel;
};

TEST_F(RopeInputsTest, ParametersCarryTheTableAndPositions) {
  const int64_t rows = 5, tableRows = 4096, tableStride = kRotaryDim + 4;
  Buffers b(rows, tableRows, tableStride);
  Status status = kernel->launch(b.args(rows, tableRows, tableStride), rows,
                                 nullptr);
  ASSERT_TRUE(status.ok()) << status.message();
  fakecuda_launch recorded{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  // q, k, v, cu_seqlens, positions, rope_table, output, rows, batch,
  // rope_table_rows, then the strides of q, k, v, rope_table, output.
  ASSERT_EQ(recorded.num_params, 15);
  std::vector<uint64_t> want = {
      address(b.q),         address(b.k),     address(b.v),
      address(b.cuSeqlens), address(b.positions), address(b.table),
      address(b.output),    rows,             1,
      tableRows,            kQCols,           kKvCols,
      kKvCols,              tableStride,      kQCols};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(recorded.params[i], want[i]) << "parameter " << i;
}

TEST_F(RopeInputsTest, RefusesBadTablesAndPositions) {
  const int64_t rows = 5, tableRows = 100, stride = kRotaryDim;
  Buffers b(rows, tableRows, stride + 4);
  auto expectRefused = [&](LaunchArgs args, const std::string &text) {
    std::string message = refused(args, rows);
    EXPECT_NE(message.find(text), std::string::npos) << message;
  };
  LaunchArgs shortPositions = b.args(rows, tableRows, stride);
  shortPositions.set(BufferSlot::Positions, b.positions, ElementType::i32,
                     rows - 1);
  expectRefused(shortPositions, "buffer 'positions' has 4 elements, the "
                                "operation expects 5: one per token (rows)");
  LaunchArgs noRows = b.args(rows, tableRows, stride);
  noRows.tensors[static_cast<int>(BufferSlot::RopeTable)].rows = 0;
  expectRefused(noRows, "give the table's positions");
  LaunchArgs narrow = b.args(rows, tableRows, stride);
  narrow.setRopeTable(b.table, tableRows, kRotaryDim - 16, stride);
  expectRefused(narrow, "'rope_table' has 48 elements per row, the operation "
                        "expects 64");
  // Quads of f32: a row stride of 66 floats misaligns every other row.
  expectRefused(b.args(rows, tableRows, kRotaryDim + 2), "rope_table");
  LaunchArgs halfType = b.args(rows, tableRows, stride);
  halfType.set(BufferSlot::RopeTable, b.table, ElementType::bf16, kRotaryDim,
               stride);
  expectRefused(halfType, "'rope_table' is bf16, the operation expects f32");
  LaunchArgs positionRows = b.args(rows, tableRows, stride);
  positionRows.tensors[static_cast<int>(BufferSlot::Positions)].rows = 3;
  expectRefused(positionRows, "'positions' has rows of its own");
  LaunchArgs overlapping = b.args(rows, tableRows, stride);
  overlapping.set(BufferSlot::Output, b.table, ElementType::bf16, kQCols);
  expectRefused(overlapping, "rope_table");
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

class RopeInputsCApiTest : public CApiBundleTest {
protected:
  void SetUp() override {
    CApiBundleTest::SetUp();
    openBundleOf({makeTableAttention()});
    normjit_op_desc desc = normjit::attentionDesc(
        kHeadDim, kQHeads, kKvHeads,
        NORMJIT_OP_CAUSAL | NORMJIT_OP_ROPE_POSITIONS | NORMJIT_OP_ROPE_TABLE,
        NORMJIT_ROPE_NEOX, kRotaryDim);
    ASSERT_EQ(normjit_kernel_create(context->get(), &desc, 0, &kernel),
              NORMJIT_SUCCESS)
        << normjit_last_error();
  }
  void TearDown() override {
    normjit_kernel_destroy(kernel);
    CApiBundleTest::TearDown();
  }

  normjit_kernel *kernel = nullptr;
};

TEST_F(RopeInputsCApiTest, LaunchArgsCarryTheTableRows) {
  const int64_t rows = 3, tableRows = 512;
  Buffers b(rows, tableRows, kRotaryDim);
  normjit::LaunchArgs args;
  EXPECT_EQ(args.get()->struct_size, NORMJIT_LAUNCH_ARGS_SIZE_V13);
  args.set(NORMJIT_Q, b.q, NORMJIT_BF16, kQCols)
      .set(NORMJIT_K, b.k, NORMJIT_BF16, kKvCols)
      .set(NORMJIT_V, b.v, NORMJIT_BF16, kKvCols)
      .set(NORMJIT_CU_SEQLENS, b.cuSeqlens, NORMJIT_I32, 2)
      .set(NORMJIT_POSITIONS, b.positions, NORMJIT_I32, rows)
      .set(NORMJIT_OUTPUT, b.output, NORMJIT_BF16, kQCols)
      .setRopeTable(b.table, tableRows, kRotaryDim);
  ASSERT_EQ(normjit_kernel_launch(kernel, args.get(), rows, nullptr),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  fakecuda_launch recorded{};
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  EXPECT_EQ(recorded.params[5], address(b.table));
  EXPECT_EQ(recorded.params[9], uint64_t(tableRows)); // rope_table_rows

  normjit_launch_args negative = *args.get();
  negative.rope_table_rows = -1;
  EXPECT_EQ(normjit_kernel_launch(kernel, &negative, rows, nullptr),
            NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(normjit_last_error()).find("must not be negative"),
            std::string::npos);
  // API 4's layout has neither buffer: refused as missing.
  normjit_launch_args old = *args.get();
  old.struct_size = NORMJIT_LAUNCH_ARGS_SIZE_V4;
  // Its cache_rows (0) lies where API 5 has the positions' pointer.
  old.tensors[NORMJIT_POSITIONS].data = nullptr;
  EXPECT_EQ(normjit_kernel_launch(kernel, &old, rows, nullptr),
            NORMJIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(normjit_last_error()).find("'positions' is null"),
            std::string::npos)
      << normjit_last_error();
  for (uint32_t size : {NORMJIT_LAUNCH_ARGS_SIZE_V4 + 32,
                        NORMJIT_LAUNCH_ARGS_SIZE_V5 + 32}) {
    normjit_launch_args between = *args.get();
    between.struct_size = size;
    EXPECT_EQ(normjit_kernel_launch(kernel, &between, rows, nullptr),
              NORMJIT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(
        std::string(normjit_last_error())
            .find(
                "between the layouts of API 4 (720), API 5 (792), "
                "API 6 (1112), API 8 (1208), API 10 (1272), API 12 (1368) and "
                "API 13 (1400)"),
        std::string::npos)
        << normjit_last_error();
  }
  // API 5's layout: 24 tensors, then cache_rows and rope_table_rows.
  alignas(normjit_launch_args) unsigned char v5[NORMJIT_LAUNCH_ARGS_SIZE_V5];
  std::memcpy(v5, args.get(),
              offsetof(normjit_launch_args, tensors) +
                  NORMJIT_GRAD_OUTPUT * sizeof(normjit_tensor));
  int64_t counts[2] = {0, tableRows - 1};
  std::memcpy(v5 + NORMJIT_LAUNCH_ARGS_SIZE_V5 - sizeof(counts), counts,
              sizeof(counts));
  auto *api5 = reinterpret_cast<normjit_launch_args *>(v5);
  api5->struct_size = NORMJIT_LAUNCH_ARGS_SIZE_V5;
  ASSERT_EQ(normjit_kernel_launch(kernel, api5, rows, nullptr),
            NORMJIT_SUCCESS)
      << normjit_last_error();
  ASSERT_TRUE(fakecuda_get_launch(fakecuda_launch_count() - 1, &recorded));
  EXPECT_EQ(recorded.params[9], uint64_t(tableRows - 1));
}

} // namespace
