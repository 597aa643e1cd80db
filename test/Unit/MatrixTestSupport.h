//===- MatrixTestSupport.h - kernels of matrix ops for tests ----*- C++ -*-===//
//
// What the warp (WarpMatrixTest.cpp) and warpgroup (WarpgroupMatrixTest.cpp)
// matrix op tests share: kernel IR written as text, random operands exact
// in bf16 and f16, and the check of a product against float64.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_UNIT_MATRIXTESTSUPPORT_H
#define NORM_TEST_UNIT_MATRIXTESTSUPPORT_H

#include "compiler/HostExecution.h"
#include "compiler/model/FloatFormats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace norm::test {

using check::decode;
using check::encode;

/// The memref type of a kernel buffer argument (bare pointers).
inline std::string buffer(const std::string &type) {
  return "memref<1099511627776x" + type + ">";
}

/// Kernel IR text with fresh SSA names and cached index constants.
class KernelText {
public:
  /// `%vN = rhs`; returns `%vN`.
  std::string op(const std::string &rhs) {
    std::string name = "%v" + std::to_string(next++);
    body += "    " + name + " = " + rhs + "\n";
    return name;
  }
  void line(const std::string &text) { body += "    " + text + "\n"; }
  std::string index(int64_t value) {
    auto [it, inserted] = constants.try_emplace(value);
    if (inserted)
      it->second = op("arith.constant " + std::to_string(value) + " : index");
    return it->second;
  }
  std::string add(const std::string &x, int64_t value) {
    if (value == 0)
      return x;
    return op("arith.addi " + x + ", " + index(value) + " : index");
  }
  std::string add(const std::string &x, const std::string &y) {
    return op("arith.addi " + x + ", " + y + " : index");
  }
  std::string mul(const std::string &x, int64_t value) {
    return op("arith.muli " + x + ", " + index(value) + " : index");
  }
  std::string div(const std::string &x, int64_t value) {
    return op("arith.divui " + x + ", " + index(value) + " : index");
  }
  std::string rem(const std::string &x, int64_t value) {
    return op("arith.remui " + x + ", " + index(value) + " : index");
  }

  /// Constants made inside a region do not dominate what follows it.
  void forgetConstants() { constants.clear(); }

  std::string body;

private:
  int next = 0;
  std::map<int64_t, std::string> constants;
};

/// One kernel module around `body`, with the thread and block ids named.
inline std::string kernelModule(const std::string &name,
                                const std::string &params, int64_t blockSize,
                                const std::string &attributions,
                                const std::string &body) {
  std::string workgroup =
      attributions.empty() ? "" : " workgroup(" + attributions + ")";
  return "gpu.module @norm_kernels {\n  gpu.func @" + name + "(" + params +
         ")" + workgroup +
         " kernel attributes {known_block_size = array<i32: " +
         std::to_string(blockSize) + ", 1, 1>} {\n" + body +
         "    gpu.return\n  }\n}\n";
}

/// Random values exactly representable in `type`, in [-2, 2].
inline std::vector<uint16_t> randomBits(ElementType type, size_t count,
                                        std::mt19937 &rng) {
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  std::vector<uint16_t> bits(count);
  for (uint16_t &b : bits)
    b = static_cast<uint16_t>(encode(type, value(rng)));
  return bits;
}

inline std::vector<float> randomFloats(size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<float> values(count);
  for (float &v : values)
    v = value(rng);
  return values;
}

inline std::unique_ptr<HostKernels> compileOrFail(const std::string &mlir) {
  std::unique_ptr<HostKernels> kernels;
  Status status = HostKernels::compile(mlir, {}, kernels);
  EXPECT_TRUE(status) << status.message() << "\n" << mlir;
  return kernels;
}

/// Expects `d` (f32, rows x cols) to be `c + a * b` with a (rows x depth)
/// and b given by `getB(k, n)`, within f32's accumulation error over
/// `depth` terms.
template <typename GetA, typename GetB, typename GetC>
void expectProduct(const float *d, int64_t rows, int64_t cols, int64_t depth,
                   GetA getA, GetB getB, GetC getC, const std::string &what) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < cols; ++n) {
      double exact = getC(m, n), magnitude = std::fabs(exact);
      for (int64_t k = 0; k < depth; ++k) {
        exact += getA(m, k) * getB(k, n);
        magnitude += std::fabs(getA(m, k) * getB(k, n));
      }
      double tolerance = (depth + 1) * check::kF32Roundoff * magnitude;
      double got = d[m * cols + n];
      ASSERT_FALSE(std::isnan(got)) << what << " D[" << m << "][" << n << "]";
      EXPECT_LE(std::fabs(got - exact), tolerance)
          << what << " D[" << m << "][" << n << "] = " << got << ", expected "
          << exact;
    }
}

// The fragments of mma.m16n8k16 with .f16/.bf16 inputs and .f32
// accumulators, as the PTX ISA states them ("Matrix Fragments for
// mma.m16n8k16 with floating point type"), with groupID = lane >> 2 and
// threadID_in_group = lane % 4:
//   A: row = groupID for a0, a1, a4, a5, groupID + 8 otherwise;
//      col = threadID_in_group * 2 + (i & 1), + 8 for i >= 4
//   B: row = threadID_in_group * 2 + (i & 1), + 8 for i >= 2; col = groupID
//   C: row = groupID for c0, c1, groupID + 8 otherwise;
//      col = threadID_in_group * 2 + (i & 1)
struct Position {
  int64_t row, col;
};
inline Position fragmentA(int64_t lane, int64_t i) {
  int64_t group = lane >> 2, inGroup = lane % 4;
  bool low = i == 0 || i == 1 || i == 4 || i == 5;
  return {low ? group : group + 8, inGroup * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
inline Position fragmentB(int64_t lane, int64_t i) {
  int64_t group = lane >> 2, inGroup = lane % 4;
  return {inGroup * 2 + (i & 1) + (i >= 2 ? 8 : 0), group};
}
inline Position fragmentC(int64_t lane, int64_t i) {
  int64_t group = lane >> 2, inGroup = lane % 4;
  return {i < 2 ? group : group + 8, inGroup * 2 + (i & 1)};
}

} // namespace norm::test

#endif // NORM_TEST_UNIT_MATRIXTESTSUPPORT_H
