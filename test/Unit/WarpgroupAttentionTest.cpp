//===- WarpgroupAttentionTest.cpp - the Hopper key/value loop -------------===//
//
// The loop of emitWarpgroupAttentionLoop in a kernel of its own: the threads
// write the query tile into its boxes (TMA's 128-byte swizzle, computed
// here independently of the emitter), the producer warpgroup's TMA loads bring
// K and V through the ring, the consumer warpgroups' outputs and
// log2-sum-exps go to global memory. Checked against float64 attention
// over the same bf16/f16 inputs, P rounded to the element type as the
// kernel rounds it (the one rounding it adds), on the host execution path.
//
//===----------------------------------------------------------------------===//

#include "MatrixTestSupport.h"

#include "passes/WarpgroupAttention.h"

#include "dialects/NormDialect.h"
#include "dialects/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "compiler/Compiler.h"
#include "compiler/model/Launch.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

using namespace norm;
using namespace norm::test;

namespace {

struct LoopCase {
  std::string name;
  int64_t headDim = 128, blockN = 64, stages = 2, warpgroups = 2;
  /// The CTA's query rows (at most 64 x warpgroups) and keys.
  int64_t queries = 128, keys = 201;
  bool causal = false;
  /// K and V: the CTA's keys start at row firstKey of a view with
  /// kvHeads heads, its own at kvHead; rows after them belong to another
  /// sequence (huge values that must not leak in).
  int64_t firstKey = 3, kvHeads = 2, kvHead = 1;
  /// Causal: the position of query row 0 (the keys are positions 0..).
  int64_t queryPosition = 0;
  bool outlier = false;
  /// The next tile's Q K^T during this tile's softmax.
  bool overlap = false;
  ElementType type = ElementType::bf16;
};

int64_t getViewRows(const LoopCase &c) { return c.firstKey + c.keys + 20; }

/// The kernel module's text.
std::string buildKernel(const LoopCase &c) {
  using namespace mlir;
  MLIRContext context;
  context.loadDialect<gpu::GPUDialect, arith::ArithDialect, math::MathDialect,
                      memref::MemRefDialect, scf::SCFDialect,
                      vector::VectorDialect, mlir::norm::NormDialect>();
  Location loc = UnknownLoc::get(&context);
  OpBuilder top(&context);
  auto module = ModuleOp::create(loc);
  top.setInsertionPointToEnd(module.getBody());
  auto kernels = gpu::GPUModuleOp::create(top, loc, "norm_kernels");
  top.setInsertionPointToStart(kernels.getBody());
  Type element = c.type == ElementType::bf16 ? Type(top.getBF16Type())
                                             : Type(top.getF16Type());
  Type f32 = top.getF32Type();
  auto bare = [&](Type t) { return MemRefType::get({1099511627776}, t); };
  // A CUtensorMap's 128 bytes (the GPU's view of K and V; unused here).
  auto tensorMap = MemRefType::get({16}, top.getI64Type());
  auto func = gpu::GPUFuncOp::create(
      top, loc, "attention",
      top.getFunctionType({bare(element), bare(element), bare(element),
                           bare(f32), bare(f32), tensorMap, tensorMap,
                           top.getI64Type()},
                          {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), top.getUnitAttr());
  int64_t threads = 128 * (c.warpgroups + 1);
  func.setKnownBlockSizeAttr(
      top.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  ImplicitLocOpBuilder b(loc, &context);
  b.setInsertionPointToStart(&func.getBody().front());
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, v).getResult();
  };
  auto args = func.getArguments();

  mlir::norm::WarpgroupAttentionLoop loop;
  loop.headDim = c.headDim;
  loop.blockN = c.blockN;
  loop.stages = c.stages;
  loop.warpgroups = c.warpgroups;
  loop.queryBase = 0;
  loop.keyBase = loop.getQueryElements();
  loop.valueBase = loop.keyBase + c.stages * loop.getTileElements();
  int64_t elements = loop.valueBase + c.stages * loop.getTileElements();
  auto workgroup =
      gpu::AddressSpaceAttr::get(&context, gpu::AddressSpace::Workgroup);
  auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                               workgroup);
  Value memory = gpu::DynamicSharedMemoryOp::create(b, bytes);
  loop.shared = memref::ViewOp::create(
      b, MemRefType::get({elements}, element, nullptr, workgroup), memory,
      index(0), ValueRange{});
  loop.sharedChunks = memref::ViewOp::create(
      b,
      MemRefType::get({elements / 8}, VectorType::get({8}, element), nullptr,
                      workgroup),
      memory, index(0), ValueRange{});
  loop.barriers = memref::ViewOp::create(
      b, MemRefType::get({2 * c.stages}, b.getI64Type(), nullptr, workgroup),
      memory, index(2 * elements), ValueRange{});

  // The query tile into its boxes: element (r, col) of warpgroup r / 64's
  // 64 rows at box col / 64, byte (r % 64) * 128 + 2 (col % 64), its 16-byte
  // chunk XOR the row's index mod 8; zeros past the queries.
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  int64_t tileElements = loop.getQueryElements();
  auto copy = scf::ForOp::create(b, tid, index(tileElements), index(threads));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(copy.getBody());
    Value i = copy.getInductionVar();
    Value row = arith::DivUIOp::create(b, i, index(c.headDim));
    Value col = arith::RemUIOp::create(b, i, index(c.headDim));
    Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                         index(c.queries));
    Value at = arith::SelectOp::create(
        b, inside,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, row, index(c.headDim)), col),
        index(0));
    Value x = memref::LoadOp::create(b, args[0], ValueRange{at});
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(element));
    x = arith::SelectOp::create(b, inside, x, zero);
    Value byte = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, arith::RemUIOp::create(b, row, index(64)),
                              index(128)),
        arith::MulIOp::create(b, arith::RemUIOp::create(b, col, index(64)),
                              index(2)));
    Value line = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, byte, index(7)), index(7));
    byte = arith::XOrIOp::create(b, byte,
                                 arith::ShLIOp::create(b, line, index(4)));
    Value tileBase = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, arith::DivUIOp::create(b, row, index(64)),
                              index(64 * c.headDim)),
        arith::MulIOp::create(b, arith::DivUIOp::create(b, col, index(64)),
                              index(64 * 64)));
    memref::StoreOp::create(
        b, x, loop.shared,
        ValueRange{arith::AddIOp::create(
            b, tileBase, arith::DivUIOp::create(b, byte, index(2)))});
  }
  mlir::norm::AsyncProxyFenceOp::create(b);
  gpu::BarrierOp::create(b);

  loop.keyMap = args[5];
  loop.valueMap = args[6];
  loop.key = args[1];
  loop.value = args[2];
  loop.rows = index(getViewRows(c));
  loop.columns = index(c.kvHeads * c.headDim);
  loop.rowStride = index(c.kvHeads * c.headDim);
  loop.firstKey = index(c.firstKey);
  loop.firstColumn = index(c.kvHead * c.headDim);
  // The key count as a parameter: the loops stay loops.
  loop.keys = arith::IndexCastOp::create(b, b.getIndexType(), args[7]);
  loop.causal = c.causal;
  loop.queryPosition = index(c.queryPosition);
  loop.scaleLog2 = M_LOG2E / std::sqrt(double(c.headDim));
  loop.overlapSoftmax = c.overlap;
  // Each consumer thread's accumulators and its rows' log2-sum-exps.
  auto epilogue = [&](const mlir::norm::WarpgroupAttentionResult &result) {
    Value lane = arith::RemUIOp::create(b, tid, index(32));
    Value warp = arith::DivUIOp::create(b, tid, index(32));
    Value rowBase =
        arith::AddIOp::create(b, arith::MulIOp::create(b, warp, index(16)),
                              arith::DivUIOp::create(b, lane, index(4)));
    Value colBase = arith::MulIOp::create(
        b, arith::RemUIOp::create(b, lane, index(4)), index(2));
    for (int64_t i = 0; i < c.headDim / 2; ++i) {
      Value row = arith::AddIOp::create(b, rowBase, index(8 * ((i / 2) % 2)));
      Value col = arith::AddIOp::create(b, colBase, index(8 * (i / 4) + i % 2));
      Value at = arith::AddIOp::create(
          b, arith::MulIOp::create(b, row, index(c.headDim)), col);
      memref::StoreOp::create(b, vector::ExtractOp::create(b, result.output, i),
                              args[3], ValueRange{at});
    }
    for (int64_t h = 0; h < 2; ++h)
      memref::StoreOp::create(
          b, result.rowLse[h], args[4],
          ValueRange{arith::AddIOp::create(
              b, arith::MulIOp::create(b, tid, index(2)), index(h))});
  };
  mlir::norm::emitWarpgroupAttentionLoop(b, loop, epilogue);
  gpu::ReturnOp::create(b);
  std::string text;
  llvm::raw_string_ostream os(text);
  kernels->print(os);
  return text;
}

void checkLoop(const LoopCase &c) {
  SCOPED_TRACE(c.name);
  std::mt19937 rng(std::hash<std::string>()(c.name) % 100000);
  int64_t d = c.headDim, viewRows = getViewRows(c), width = c.kvHeads * d;
  std::vector<uint16_t> q = randomBits(c.type, 64 * c.warpgroups * d, rng);
  std::vector<uint16_t> k = randomBits(c.type, viewRows * width, rng);
  std::vector<uint16_t> v = randomBits(c.type, viewRows * width, rng);
  // The next sequence's rows: keys of 30000 and values of Inf and NaN, so
  // that a key read from them shows, and a value multiplied by a zero
  // probability too (a partial tile's TMA box brings them).
  uint16_t huge = encode(c.type, 30000.0);
  uint16_t inf = encode(c.type, INFINITY);
  uint16_t nan = c.type == ElementType::bf16 ? 0x7fc0 : 0x7e00;
  for (int64_t r = c.firstKey + c.keys; r < viewRows; ++r)
    for (int64_t col = 0; col < width; ++col) {
      k[r * width + col] = huge;
      v[r * width + col] = (r + col) % 2 ? inf : nan;
    }
  // An outlier channel: scores of hundreds, a softmax that one key rules.
  if (c.outlier)
    for (int64_t r = 0; r < viewRows; ++r) {
      k[r * width + c.kvHead * d + 5] =
          r < c.firstKey + c.keys ? encode(c.type, 40.0 * ((r % 7) - 3)) : huge;
      if (r < 64 * c.warpgroups)
        q[r * d + 5] = encode(c.type, 12.0);
    }
  int64_t consumers = 128 * c.warpgroups;
  std::vector<float> out(64 * c.warpgroups * d, NAN), lse(2 * consumers, NAN);
  std::vector<int64_t> maps(32, 0);
  std::string kernel = buildKernel(c);
  std::unique_ptr<HostKernels> kernels = compileOrFail(kernel);
  ASSERT_TRUE(kernels);
  Status status = kernels->launch("attention",
                                  {q.data(), k.data(), v.data(), out.data(),
                                   lse.data(), maps.data(), maps.data() + 16},
                                  {c.keys}, 1);
  ASSERT_TRUE(status) << status.message();

  double scale = 1.0 / std::sqrt(double(d));
  for (int64_t r = 0; r < c.queries; ++r) {
    int64_t visible =
        c.causal ? std::min(c.keys, c.queryPosition + r + 1) : c.keys;
    std::vector<double> s(visible);
    double best = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      double dot = 0;
      for (int64_t col = 0; col < d; ++col)
        dot += decode(c.type, q[r * d + col]) *
               decode(c.type, k[(c.firstKey + j) * width + c.kvHead * d + col]);
      s[j] = dot * scale;
      best = std::max(best, s[j]);
    }
    double sum = 0, vMax = 0;
    std::vector<double> o(d, 0.0);
    for (int64_t j = 0; j < visible; ++j) {
      double p = std::exp(s[j] - best);
      sum += p;
      // The kernel multiplies V by P rounded to the element type.
      double rounded = decode(c.type, encode(c.type, p));
      for (int64_t col = 0; col < d; ++col) {
        double x =
            decode(c.type, v[(c.firstKey + j) * width + c.kvHead * d + col]);
        o[col] += rounded * x;
        vMax = std::max(vMax, std::fabs(x));
      }
    }
    for (int64_t col = 0; col < d; ++col) {
      double expected = visible ? o[col] / sum : 0.0;
      double got = out[r * d + col];
      // The rounding of P's reference (its maximum, whose exp2 the kernel
      // takes against a running maximum) and f32 sums over the keys.
      double tolerance = 2e-3 * vMax + 1e-5;
      ASSERT_FALSE(std::isnan(got)) << "row " << r << " column " << col;
      EXPECT_NEAR(got, expected, tolerance) << "row " << r << " column " << col;
    }
    // The log2-sum-exp of the scaled scores, from lane t = 0 of the row.
    int64_t warp = r / 16, g = r % 16 % 8, h = r % 16 / 8;
    double expectedLse =
        visible ? (best + std::log(sum)) / std::log(2.0) : -INFINITY;
    double gotLse = lse[2 * (32 * warp + 4 * g) + h];
    if (visible)
      EXPECT_NEAR(gotLse, expectedLse, 1e-4 * std::fabs(expectedLse) + 1e-4)
          << "row " << r;
  }
}

TEST(WarpgroupAttention, PlainTwoWarpgroups) {
  checkLoop({"d128_n64_s2"});
  LoopCase overlapped{"d128_n64_s2_overlapped"};
  overlapped.overlap = true;
  checkLoop(overlapped);
}

TEST(WarpgroupAttention, HeadDims) {
  LoopCase d64{"d64_n128_s3"};
  d64.headDim = 64;
  d64.blockN = 128;
  d64.stages = 3;
  d64.keys = 300;
  checkLoop(d64);
  LoopCase d256{"d256_n32_one_warpgroup"};
  d256.headDim = 256;
  d256.blockN = 32;
  d256.warpgroups = 1;
  d256.queries = 50;
  d256.keys = 70;
  d256.type = ElementType::f16;
  checkLoop(d256);
}

TEST(WarpgroupAttention, Causal) {
  LoopCase c{"causal_d128_n64"};
  c.causal = true;
  c.keys = 128;
  c.queries = 128;
  checkLoop(c);
  // A later query tile of the sequence: its first rows see most keys.
  LoopCase later{"causal_later_tile"};
  later.causal = true;
  later.keys = 250;
  later.queries = 122;
  later.queryPosition = 128;
  checkLoop(later);
  later.name = "causal_later_tile_overlapped";
  later.overlap = true;
  later.stages = 3;
  checkLoop(later);
}

TEST(WarpgroupAttention, OutlierChannel) {
  LoopCase c{"outlier_d128_n64"};
  c.outlier = true;
  checkLoop(c);
}

// The kernel's sm_90a PTX holds the Hopper instructions; with
// NORM_TEST_PTX_DIR set, it goes there for ptxas
// (test/Target/warpgroup-attention-ptxas.test).
// NORM_TEST_PTX_CASES (comma-separated names) replaces the cases, to
// measure others: `d<head dim>_n<block_n>_s<stages>`, `_o` overlapped.
TEST(WarpgroupAttention, LowersForSm90a) {
  std::vector<std::string> names = {"d128_n128_s2_o", "d64_n128_s3_o",
                                    "d256_n64_s2", "d128_n128_s2"};
  // `rule`: every configuration at head dims 64-256 and block_n 32-192
  // that fitsWarpgroupAttentionRegisters admits, for ptxas to check.
  if (const char *list = std::getenv("NORM_TEST_PTX_CASES");
      list && std::string(list) == "rule") {
    names.clear();
    for (int64_t d : {64, 128, 192, 256})
      for (int64_t n = 32; n <= 192; n += 32)
        for (bool overlap : {false, true})
          if (fitsWarpgroupAttentionRegisters(d, n, overlap, 2))
            names.push_back("d" + std::to_string(d) + "_n" + std::to_string(n) +
                            "_s2" + (overlap ? "_o" : ""));
  } else if (list) {
    names.clear();
    std::stringstream stream(list);
    for (std::string name; std::getline(stream, name, ',');)
      names.push_back(name);
  }
  for (const std::string &name : names) {
    LoopCase c{name};
    c.headDim = std::stoi(name.substr(1));
    c.blockN = std::stoi(name.substr(name.find('n') + 1));
    c.stages = std::stoi(name.substr(name.find('s') + 1));
    c.overlap = name.size() > 2 && name.substr(name.size() - 2) == "_o";
    // Causal kernels of one CTA of 128 rows visit at most 128 keys: their
    // loops fold away at 128 keys a tile.
    c.causal = c.blockN < 128;
    TargetOptions target;
    target.chip = "sm_90a";
    std::string ptx;
    Status status = compileKernelModule(
        "module attributes {gpu.container_module} {\n" + buildKernel(c) + "}\n",
        target, ptx);
    ASSERT_TRUE(status) << status.message();
    for (const char *instruction :
         {"wgmma.mma_async.sync.aligned.m64n", "wgmma.fence.sync.aligned",
          "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0",
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier",
          "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
          "fence.proxy.async", "ex2.approx"})
      EXPECT_NE(ptx.find(instruction), std::string::npos) << instruction;
    if (const char *dir = std::getenv("NORM_TEST_PTX_DIR"))
      std::ofstream(std::string(dir) + "/" + c.name + ".ptx") << ptx;
  }
}

} // namespace
