//===- WarpMatrixTest.cpp - the host emulation of the warp matrix ops -----===//
//
// Small gpu.func kernels run with HostKernels: norm.mma_sync, norm.ldmatrix
// and norm.async_copy, checked against plain matrix products and against
// what the PTX ISA says each lane receives. The kernels place fragments
// with the ISA's layout formulas, written out here in the ISA's own terms
// (groupID, threadID_in_group) independently of the emulator, so that a
// layout mistake cannot hide in both the kernel and its emulation.
//
//===----------------------------------------------------------------------===//

#include "MatrixTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace norm;
using namespace norm::test;

namespace {

/// The same positions in kernel IR: `rowBase + rowOffset`, `colBase +
/// colOffset`, with the offsets of the lane-0 position of element `i` (the
/// formulas are affine in groupID and threadID_in_group).
struct IrPosition {
  std::string row, col;
};
IrPosition fragmentInIr(KernelText &k, Position (*fragment)(int64_t, int64_t),
                        const std::string &group, const std::string &pair,
                        int64_t i) {
  Position offset = fragment(0, i);
  // Which base each coordinate grows with: B's row grows with the lane's
  // pair, its column with its group; A's and C's the other way round.
  bool transposed = fragment == fragmentB;
  return {k.add(transposed ? pair : group, offset.row),
          k.add(transposed ? group : pair, offset.col)};
}

//===----------------------------------------------------------------------===//
// norm.mma_sync from fragments loaded straight from global memory
//===----------------------------------------------------------------------===//

/// Each warp of a CTA of `blockSize` threads multiplies its own matrices:
/// A (16x16), B (16x8, k x n) and C (16x8), row-major, tile = CTA * warps +
/// warp; each lane loads its fragments by the ISA's layout and stores D.
/// With `steps` > 1, an scf.for accumulates A_s * B_s for s < steps (the
/// tile's A_s and B_s one after the other), as the attention kernel's loop
/// over key blocks does.
std::string getMmaKernel(const std::string &type, int64_t blockSize,
                         int64_t steps = 1) {
  KernelText k;
  std::string tid = k.op("gpu.thread_id x");
  std::string bid = k.op("gpu.block_id x");
  std::string warp = k.div(tid, 32), lane = k.rem(tid, 32);
  std::string tile = k.add(k.mul(bid, blockSize / 32), warp);
  std::string group = k.div(lane, 4), pair = k.mul(k.rem(lane, 4), 2);
  std::string cBase = k.mul(tile, 128);
  auto load = [&](const std::string &memref, const std::string &elementType,
                  Position (*fragment)(int64_t, int64_t), int64_t count,
                  const std::string &base, int64_t rowLength) {
    std::string elements;
    for (int64_t i = 0; i < count; ++i) {
      IrPosition at = fragmentInIr(k, fragment, group, pair, i);
      std::string offset = k.add(base, k.add(k.mul(at.row, rowLength), at.col));
      elements += (i ? ", " : "") +
                  k.op("memref.load " + memref + "[" + offset + "] : " +
                       buffer(elementType));
    }
    return k.op("vector.from_elements " + elements + " : vector<" +
                std::to_string(count) + "x" + elementType + ">");
  };
  std::string c = load("%c", "f32", fragmentC, 4, cBase, 8);
  auto mma = [&](const std::string &step, const std::string &acc) {
    std::string at = k.add(k.mul(tile, steps), step);
    std::string a = load("%a", type, fragmentA, 8, k.mul(at, 256), 16);
    std::string b = load("%b", type, fragmentB, 4, k.mul(at, 128), 8);
    return k.op("norm.mma_sync " + a + ", " + b + ", " + acc +
                " : vector<8x" + type + ">, vector<4x" + type +
                ">, vector<4xf32> -> vector<4xf32>");
  };
  std::string d;
  if (steps == 1) {
    d = mma(k.index(0), c);
  } else {
    d = k.op("scf.for %step = " + k.index(0) + " to " + k.index(steps) +
             " step " + k.index(1) + " iter_args(%acc = " + c +
             ") -> (vector<4xf32>) {");
    k.line("scf.yield " + mma("%step", "%acc") + " : vector<4xf32>");
    k.line("}");
    k.forgetConstants();
  }
  for (int64_t i = 0; i < 4; ++i) {
    IrPosition at = fragmentInIr(k, fragmentC, group, pair, i);
    std::string offset = k.add(cBase, k.add(k.mul(at.row, 8), at.col));
    std::string element =
        k.op("vector.extract " + d + "[" + std::to_string(i) +
             "] : f32 from vector<4xf32>");
    k.line("memref.store " + element + ", %d[" + offset + "] : " +
           buffer("f32"));
  }
  return kernelModule("mma",
                      "%a: " + buffer(type) + ", %b: " + buffer(type) +
                          ", %c: " + buffer("f32") + ", %d: " + buffer("f32"),
                      blockSize, "", k.body);
}

void checkMma(ElementType type, const std::string &typeName,
              int64_t blockSize, int64_t grid, bool zeroC, int64_t steps = 1) {
  std::unique_ptr<HostKernels> kernels =
      compileOrFail(getMmaKernel(typeName, blockSize, steps));
  ASSERT_TRUE(kernels);
  std::mt19937 rng(blockSize * 7 + grid + zeroC + steps);
  int64_t tiles = grid * blockSize / 32;
  std::vector<uint16_t> a = randomBits(type, tiles * steps * 256, rng);
  std::vector<uint16_t> b = randomBits(type, tiles * steps * 128, rng);
  std::vector<float> c = zeroC ? std::vector<float>(tiles * 128, 0.0f)
                               : randomFloats(tiles * 128, rng);
  std::vector<float> d(tiles * 128, NAN);
  Status status = kernels->launch(
      "mma", {a.data(), b.data(), c.data(), d.data()}, {}, grid);
  ASSERT_TRUE(status) << status.message();
  for (int64_t t = 0; t < tiles; ++t) {
    // The steps as one product of depth 16 * steps.
    auto getA = [&](int64_t m, int64_t kk) {
      return decode(type, a[(t * steps + kk / 16) * 256 + m * 16 + kk % 16]);
    };
    auto getB = [&](int64_t kk, int64_t n) {
      return decode(type, b[(t * steps + kk / 16) * 128 + kk % 16 * 8 + n]);
    };
    auto getC = [&](int64_t m, int64_t n) {
      return double(c[t * 128 + m * 8 + n]);
    };
    expectProduct(d.data() + t * 128, 16, 8, 16 * steps, getA, getB, getC,
                  typeName + " tile " + std::to_string(t));
  }
}

TEST(WarpMatrix, MmaBf16) { checkMma(ElementType::bf16, "bf16", 32, 1, true); }
TEST(WarpMatrix, MmaF16) { checkMma(ElementType::f16, "f16", 32, 1, true); }
TEST(WarpMatrix, MmaAccumulatesC) {
  checkMma(ElementType::bf16, "bf16", 32, 1, false);
  checkMma(ElementType::f16, "f16", 32, 1, false);
}
// The attention kernel's loop: the accumulator carried through scf.for.
TEST(WarpMatrix, MmaAccumulatesInALoop) {
  checkMma(ElementType::bf16, "bf16", 64, 2, false, /*steps=*/3);
}
// Several warps and CTAs: each warp must multiply its own fragments.
TEST(WarpMatrix, MmaSeveralWarps) {
  checkMma(ElementType::bf16, "bf16", 128, 2, false);
  checkMma(ElementType::f16, "f16", 64, 3, false);
}

//===----------------------------------------------------------------------===//
// norm.ldmatrix: what each lane receives
//===----------------------------------------------------------------------===//

/// CTAs of 64 threads (two warps). Thread t copies row t of its CTA's 64
/// rows of 16 bytes (8 bf16, or 16 e4m3 in pairs) into the shared tile;
/// rows 64 to 71 hold NaN. Lane l of warp w points at row 32w + (13l + 5)
/// % 32 (a permutation: the lane-to-row mapping matters); lanes past
/// 8 * count point at the NaN rows, which ldmatrix must ignore. Each thread
/// stores its 4 * count bytes.
std::string getLdMatrixKernel(const std::string &type, int64_t count,
                              bool transpose) {
  bool bytes = type != "bf16";
  int64_t width = bytes ? 16 : 8, perMatrix = bytes ? 4 : 2;
  KernelText k;
  std::string tid = k.op("gpu.thread_id x");
  std::string bid = k.op("gpu.block_id x");
  std::string c0 = k.index(0);
  std::string global = k.add(k.mul(bid, 64), tid);
  std::string rowType = "vector<" + std::to_string(width) + "x" + type + ">";
  std::string tileType = "memref<72x" + std::to_string(width) + "x" + type +
                         ", #gpu.address_space<workgroup>>";
  std::string row = k.op("vector.load %src[" + k.mul(global, width) +
                         "] : " + buffer(type) + ", " + rowType);
  k.line("vector.store " + row + ", %tile[" + tid + ", " + c0 + "] : " +
         tileType + ", " + rowType);
  std::string nan = k.op(std::string("arith.constant dense<") +
                         (bytes ? "0x7F" : "0x7FC0") + "> : " + rowType);
  std::string isFirst = k.op("arith.cmpi ult, " + tid + ", " + k.index(8) +
                             " : index");
  std::string poisonRow = k.add(tid, 64);
  k.line("scf.if " + isFirst + " {\n      vector.store " + nan + ", %tile[" +
         poisonRow + ", " + c0 + "] : " + tileType + ", " + rowType +
         "\n    }");
  k.line("gpu.barrier");
  std::string warp = k.div(tid, 32), lane = k.rem(tid, 32);
  std::string permuted =
      k.add(k.mul(warp, 32), k.rem(k.add(k.mul(lane, 13), 5), 32));
  std::string ignored = k.add(k.rem(lane, 8), 64);
  std::string used = k.op("arith.cmpi ult, " + lane + ", " +
                          k.index(8 * count) + " : index");
  std::string address = k.op("arith.select " + used + ", " + permuted + ", " +
                             ignored + " : index");
  std::string resultType =
      "vector<" + std::to_string(perMatrix * count) + "x" + type + ">";
  std::string result = k.op(
      "norm.ldmatrix %tile[" + address + ", " + c0 + "] {count = " +
      std::to_string(count) + " : i64" + (transpose ? ", transpose" : "") +
      "} : " + tileType + " -> " + resultType);
  k.line("vector.store " + result + ", %out[" + k.mul(global, width) +
         "] : " + buffer(type) + ", " + resultType);
  return kernelModule("load",
                      "%src: " + buffer(type) + ", %out: " + buffer(type), 64,
                      "%tile: " + tileType, k.body);
}

void checkLdMatrix(const std::string &type, int64_t count, bool transpose) {
  SCOPED_TRACE(type + " count " + std::to_string(count) +
               (transpose ? " transposed" : ""));
  std::unique_ptr<HostKernels> kernels =
      compileOrFail(getLdMatrixKernel(type, count, transpose));
  ASSERT_TRUE(kernels);
  const int64_t grid = 2;
  std::mt19937 rng(count * 2 + transpose);
  // Rows of 16 bytes, compared byte by byte (bf16 little-endian).
  std::vector<uint8_t> src(grid * 64 * 16), out(grid * 64 * 16, 0xFF);
  for (uint8_t &byte : src)
    byte = static_cast<uint8_t>(rng());
  Status status = kernels->launch("load", {src.data(), out.data()}, {}, grid);
  ASSERT_TRUE(status) << status.message();
  // The PTX ISA (ldmatrix .b16): lanes 8j..8j+7 give the rows of matrix j;
  // of matrix j, lane l receives row l / 4, 16-bit elements 2 (l % 4) and
  // + 1, in its 32-bit register j. With .trans the matrix arrives
  // transposed: lane l receives column l / 4, rows 2 (l % 4) and + 1. The
  // bytes of an element stay together, in order.
  for (int64_t cta = 0; cta < grid; ++cta)
    for (int64_t warp = 0; warp < 2; ++warp) {
      auto rowOfLane = [&](int64_t lane) {
        return warp * 32 + (13 * lane + 5) % 32;
      };
      for (int64_t lane = 0; lane < 32; ++lane)
        for (int64_t j = 0; j < count; ++j)
          for (int64_t byte = 0; byte < 4; ++byte) {
            int64_t h = byte / 2;
            int64_t r = transpose ? 2 * (lane % 4) + h : lane / 4;
            int64_t c = transpose ? lane / 4 : 2 * (lane % 4) + h;
            uint8_t expected =
                src[(cta * 64 + rowOfLane(8 * j + r)) * 16 + 2 * c + byte % 2];
            int64_t thread = cta * 64 + warp * 32 + lane;
            EXPECT_EQ(out[thread * 16 + 4 * j + byte], expected)
                << "CTA " << cta << " warp " << warp << " lane " << lane
                << " byte " << 4 * j + byte;
          }
    }
}

TEST(WarpMatrix, LdMatrix) {
  for (const char *type : {"bf16", "f8E4M3FN"})
    for (int64_t count : {1, 2, 4})
      for (bool transpose : {false, true})
        checkLdMatrix(type, count, transpose);
}

//===----------------------------------------------------------------------===//
// What the attention kernel does: async copies into shared tiles,
// ldmatrix fragments, two chained mma
//===----------------------------------------------------------------------===//

/// CTAs of 128 threads, one tile set per warp (tile = CTA * 4 + warp): Q
/// (16x16, [m][k]), K (8x16, stored [n][k]) and V (16x8, stored [k][n]),
/// row-major in global memory. The CTA copies its tiles into shared memory
/// with norm.async_copy (Q in 16-byte, K and V in 8-byte pieces), waits
/// and synchronizes, then each warp loads Q with ldmatrix x4, K^T with
/// ldmatrix x2 and V with ldmatrix x2 transposed, and computes
/// S = Q K^T and O = S + Q V, stored per the C layout.
std::string getAttentionKernel(const std::string &type) {
  KernelText k;
  std::string tid = k.op("gpu.thread_id x");
  std::string bid = k.op("gpu.block_id x");
  std::string c0 = k.index(0);
  auto shared = [&](int64_t rows, int64_t cols) {
    return "memref<" + std::to_string(rows) + "x" + std::to_string(cols) +
           "x" + type + ", #gpu.address_space<workgroup>>";
  };
  std::string qType = shared(64, 16), kType = shared(32, 16),
              vType = shared(64, 8);
  // Q: 1024 elements a CTA, 8 per thread; K and V: 512, 4 per thread.
  std::string q = k.add(k.mul(bid, 1024), k.mul(tid, 8));
  k.line("norm.async_copy %q[" + q + "], %qs[" + k.div(tid, 2) + ", " +
         k.mul(k.rem(tid, 2), 8) + "] {elements = 8 : i64} : " + buffer(type) +
         ", " + qType);
  std::string kv = k.add(k.mul(bid, 512), k.mul(tid, 4));
  k.line("norm.async_copy %k[" + kv + "], %ks[" + k.div(tid, 4) + ", " +
         k.mul(k.rem(tid, 4), 4) + "] {elements = 4 : i64} : " + buffer(type) +
         ", " + kType);
  k.line("norm.async_commit");
  k.line("norm.async_copy %v[" + kv + "], %vs[" + k.div(tid, 2) + ", " +
         k.mul(k.rem(tid, 2), 4) + "] {elements = 4 : i64} : " + buffer(type) +
         ", " + vType);
  k.line("norm.async_commit");
  k.line("norm.async_wait {pending = 0 : i64}");
  k.line("gpu.barrier");

  std::string warp = k.div(tid, 32), lane = k.rem(tid, 32);
  // A (x4): matrix j = lane / 8 is A[8 (j % 2) ..][8 (j / 2) ..], so lane
  // l points at row l % 16, column 8 (l / 16) of the warp's Q.
  std::string qRow = k.add(k.mul(warp, 16), k.rem(lane, 16));
  std::string qCol = k.mul(k.div(lane, 16), 8);
  std::string a = k.op("norm.ldmatrix %qs[" + qRow + ", " + qCol +
                       "] {count = 4 : i64} : " + qType + " -> vector<8x" +
                       type + ">");
  // B = K^T (x2): matrix j holds k in [8j, 8j + 8): lane l < 16 points at
  // K row (n) l % 8, column (k) 8 (l / 8).
  std::string kRow = k.add(k.mul(warp, 8), k.rem(lane, 8));
  std::string kCol = k.mul(k.rem(k.div(lane, 8), 2), 8);
  std::string bk = k.op("norm.ldmatrix %ks[" + kRow + ", " + kCol +
                        "] {count = 2 : i64} : " + kType + " -> vector<4x" +
                        type + ">");
  // B = V (x2, transposed): matrix j is V rows [8j, 8j + 8): lane l < 16
  // points at V row (k) l.
  std::string vRow = k.add(k.mul(warp, 16), k.rem(lane, 16));
  std::string bv = k.op("norm.ldmatrix %vs[" + vRow + ", " + c0 +
                        "] {count = 2 : i64, transpose} : " + vType +
                        " -> vector<4x" + type + ">");
  std::string zero = k.op("arith.constant dense<0.0> : vector<4xf32>");
  std::string mmaType = " : vector<8x" + type + ">, vector<4x" + type +
                        ">, vector<4xf32> -> vector<4xf32>";
  std::string s =
      k.op("norm.mma_sync " + a + ", " + bk + ", " + zero + mmaType);
  std::string o = k.op("norm.mma_sync " + a + ", " + bv + ", " + s + mmaType);

  std::string group = k.div(lane, 4), pair = k.mul(k.rem(lane, 4), 2);
  std::string base = k.mul(k.add(k.mul(bid, 4), warp), 128);
  for (auto [result, out] : {std::pair{s, "%s"}, std::pair{o, "%o"}})
    for (int64_t i = 0; i < 4; ++i) {
      IrPosition at = fragmentInIr(k, fragmentC, group, pair, i);
      std::string offset = k.add(base, k.add(k.mul(at.row, 8), at.col));
      std::string element = k.op("vector.extract " + result + "[" +
                                 std::to_string(i) +
                                 "] : f32 from vector<4xf32>");
      k.line("memref.store " + element + ", " + out + "[" + offset + "] : " +
             buffer("f32"));
    }
  return kernelModule(
      "attention",
      "%q: " + buffer(type) + ", %k: " + buffer(type) + ", %v: " +
          buffer(type) + ", %s: " + buffer("f32") + ", %o: " + buffer("f32"),
      128, "%qs: " + qType + ", %ks: " + kType + ", %vs: " + vType, k.body);
}

void checkAttention(ElementType type, const std::string &typeName) {
  std::unique_ptr<HostKernels> kernels =
      compileOrFail(getAttentionKernel(typeName));
  ASSERT_TRUE(kernels);
  const int64_t grid = 2, tiles = grid * 4;
  std::mt19937 rng(static_cast<unsigned>(type) + 11);
  std::vector<uint16_t> q = randomBits(type, tiles * 256, rng);
  std::vector<uint16_t> kt = randomBits(type, tiles * 128, rng);
  std::vector<uint16_t> v = randomBits(type, tiles * 128, rng);
  std::vector<float> s(tiles * 128, NAN), o(tiles * 128, NAN);
  Status status = kernels->launch(
      "attention", {q.data(), kt.data(), v.data(), s.data(), o.data()}, {},
      grid);
  ASSERT_TRUE(status) << status.message();
  for (int64_t t = 0; t < tiles; ++t) {
    auto getQ = [&](int64_t m, int64_t kk) {
      return decode(type, q[t * 256 + m * 16 + kk]);
    };
    // S = Q K^T: B[k][n] = K[n][k].
    auto getKt = [&](int64_t kk, int64_t n) {
      return decode(type, kt[t * 128 + n * 16 + kk]);
    };
    expectProduct(s.data() + t * 128, 16, 8, 16, getQ, getKt,
                  [](int64_t, int64_t) { return 0.0; },
                  typeName + " S tile " + std::to_string(t));
    // O = S + Q V, with the S the kernel computed as C.
    auto getV = [&](int64_t kk, int64_t n) {
      return decode(type, v[t * 128 + kk * 8 + n]);
    };
    auto getS = [&](int64_t m, int64_t n) {
      return double(s[t * 128 + m * 8 + n]);
    };
    expectProduct(o.data() + t * 128, 16, 8, 16, getQ, getV, getS,
                  typeName + " O tile " + std::to_string(t));
  }
}

TEST(WarpMatrix, AttentionTilesBf16) {
  checkAttention(ElementType::bf16, "bf16");
}
TEST(WarpMatrix, AttentionTilesF16) { checkAttention(ElementType::f16, "f16"); }

//===----------------------------------------------------------------------===//
// norm.async_copy: zero fill, then a barrier, then reads
//===----------------------------------------------------------------------===//

/// CTAs of 32 threads. The shared buffer is first filled with 7 (plain
/// stores, a barrier); then thread t copies `elements` elements from
/// src[t * elements] into slot t, of which only t % (elements + 1) are
/// read, the rest zero-filled; after the wait and a barrier, thread t
/// writes slot (t + 1) % 32 (another thread's copy) to out.
std::string getCopyKernel(const std::string &type, int64_t elements) {
  KernelText k;
  std::string tid = k.op("gpu.thread_id x");
  std::string bid = k.op("gpu.block_id x");
  std::string n = std::to_string(elements);
  std::string slotType = "vector<" + n + "x" + type + ">";
  std::string sharedType = "memref<" + std::to_string(32 * elements) + "x" +
                           type + ", #gpu.address_space<workgroup>>";
  std::string own = k.mul(tid, elements);
  std::string seven = k.op("arith.constant dense<7.0> : " + slotType);
  k.line("vector.store " + seven + ", %slots[" + own + "] : " + sharedType +
         ", " + slotType);
  k.line("gpu.barrier");
  std::string global = k.mul(k.add(k.mul(bid, 32), tid), elements);
  std::string valid = k.rem(tid, elements + 1);
  k.line("norm.async_copy %src[" + global + "], %slots[" + own + "], " + valid +
         " {elements = " + n + " : i64} : " + buffer(type) + ", " + sharedType);
  k.line("norm.async_commit");
  k.line("norm.async_wait {pending = 0 : i64}");
  k.line("gpu.barrier");
  std::string next = k.mul(k.rem(k.add(tid, 1), 32), elements);
  std::string slot = k.op("vector.load %slots[" + next + "] : " + sharedType +
                          ", " + slotType);
  k.line("vector.store " + slot + ", %out[" + global + "] : " + buffer(type) +
         ", " + slotType);
  return kernelModule("copy",
                      "%src: " + buffer(type) + ", %out: " + buffer(type), 32,
                      "%slots: " + sharedType, k.body);
}

TEST(WarpMatrix, AsyncCopyZeroFillsF32) {
  std::unique_ptr<HostKernels> kernels = compileOrFail(getCopyKernel("f32", 4));
  ASSERT_TRUE(kernels);
  const int64_t grid = 2;
  // Elements past src_elements are NaN: reading them would show.
  std::vector<float> src(grid * 32 * 4);
  for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i)
    src[i] = (i / 4) % 32 % 5 > i % 4 ? float(i) : NAN;
  std::vector<float> out(src.size(), -1.0f);
  Status status = kernels->launch("copy", {src.data(), out.data()}, {}, grid);
  ASSERT_TRUE(status) << status.message();
  for (int64_t cta = 0; cta < grid; ++cta)
    for (int64_t t = 0; t < 32; ++t) {
      int64_t from = (t + 1) % 32, valid = from % 5;
      for (int64_t e = 0; e < 4; ++e) {
        int64_t at = (cta * 32 + from) * 4 + e;
        float expected = e < valid ? float(at) : 0.0f;
        EXPECT_EQ(out[(cta * 32 + t) * 4 + e], expected)
            << "CTA " << cta << " thread " << t << " element " << e;
      }
    }
}

TEST(WarpMatrix, AsyncCopyZeroFillsBf16) {
  std::unique_ptr<HostKernels> kernels =
      compileOrFail(getCopyKernel("bf16", 8));
  ASSERT_TRUE(kernels);
  std::mt19937 rng(5);
  std::vector<uint16_t> src = randomBits(ElementType::bf16, 32 * 8, rng);
  for (int64_t i = 0; i < 32 * 8; ++i)
    if (i % 8 >= (i / 8) % 9)
      src[i] = 0x7FC0; // NaN past src_elements
  std::vector<uint16_t> out(src.size(), 0xFFFF);
  Status status = kernels->launch("copy", {src.data(), out.data()}, {}, 1);
  ASSERT_TRUE(status) << status.message();
  for (int64_t t = 0; t < 32; ++t) {
    int64_t from = (t + 1) % 32, valid = from % 9;
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(out[t * 8 + e], e < valid ? src[from * 8 + e] : 0)
          << "thread " << t << " element " << e;
  }
}

//===----------------------------------------------------------------------===//
// norm.row_allreduce with kind = max
//===----------------------------------------------------------------------===//

TEST(WarpMatrix, RowAllReduceMax) {
  const char *kernel = R"mlir(
gpu.module @norm_kernels {
  gpu.func @max(%x: memref<1099511627776xf32>, %y: memref<1099511627776xf32>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<1099511627776xf32>
    %m = norm.row_allreduce %v {group_size = 16 : i64,
                                kind = #norm.reduction<max>} : f32
    memref.store %m, %y[%t] : memref<1099511627776xf32>
    gpu.return
  }
}
)mlir";
  std::unique_ptr<HostKernels> kernels = compileOrFail(kernel);
  ASSERT_TRUE(kernels);
  std::mt19937 rng(3);
  std::vector<float> x = randomFloats(64, rng), y(64, NAN);
  x[5] = -INFINITY;
  x[20] = NAN; // the second group's maximum is NaN (maximumf)
  x[40] = -0.0f;
  ASSERT_TRUE(kernels->launch("max", {x.data(), y.data()}, {}, 1));
  for (int64_t g = 0; g < 4; ++g) {
    float expected = -INFINITY;
    bool nan = false;
    for (int64_t t = 16 * g; t < 16 * g + 16; ++t) {
      nan |= std::isnan(x[t]);
      expected = std::max(expected, x[t]);
    }
    for (int64_t t = 16 * g; t < 16 * g + 16; ++t) {
      if (nan)
        EXPECT_TRUE(std::isnan(y[t])) << t;
      else
        EXPECT_EQ(y[t], expected) << t;
    }
  }
}

} // namespace
