//===- WarpgroupMatrixTest.cpp - norm.wgmma against plain products --------===//
//
// Small kernels of one or two warpgroups: shared memory filled with an
// image of A and B that the test lays out, then one norm.wgmma (A from
// shared memory or from registers), checked against the float64 product.
// The images are written the way TMA writes its boxes (rows of the swizzle
// width, 16-byte chunks XOR the line index) or, without a swizzle, by the
// core-matrix formula of the PTX ISA, independently of the dialect's
// #norm.shared_matrix offsets, and the start addresses step inside a
// swizzle atom as a k loop does. Unplaced elements are NaN, so an element
// read from the wrong place shows.
//
// By default the kernels run on the host execution path; with
// NORM_TEST_ENGINE=ptxsim their sm_90a PTX runs on GPGPU-Sim ($NORM_PTXSIM),
// whose wgmma is an implementation of its own (test/Host/ptxsim-wgmma.test).
//
//===----------------------------------------------------------------------===//

#include "MatrixTestSupport.h"

#include "compiler/Compiler.h"
#include "tools/norm-cpu-check/Ptxsim.h"

#include <cstdlib>
#include <functional>
#include <optional>

using namespace norm;
using namespace norm::test;

namespace {

/// Where an operand's image lies: `kind` names how the test writes it.
struct Placement {
  enum Kind {
    /// TMA's box of rows of `swizzle` bytes: element (mn, kk) of the
    /// operand's whole tile at mn * swizzle + 2 kk; the k16 step `step`
    /// starts 32 * step bytes in.
    KMajorBox,
    /// TMA boxes of [k][swizzle / 2 mn-elements], one after the other
    /// (`kRows` rows each): element (mn, kk) at (mn / (swizzle / 2)) *
    /// kRows * swizzle + kk * swizzle + 2 (mn % (swizzle / 2)); the step
    /// starts 16 * step rows in.
    MnMajorBox,
    /// No swizzle: 8x8 core matrices of 16-byte rows, 128 bytes apart
    /// along k (LBO) and 256 along mn (SBO).
    CoreMatrices,
  };
  Kind kind;
  int64_t swizzle = 0;
  int64_t kRows = 16;
  int64_t step = 0;
  /// Bytes from the start of shared memory to the tile, a multiple of 1024.
  int64_t base = 0;

  bool mnMajor() const { return kind == MnMajorBox; }

  /// The #norm.shared_matrix of the operand.
  std::string layout() const {
    int64_t lbo = 16, sbo = 1024;
    if (kind == KMajorBox)
      sbo = 8 * swizzle;
    if (kind == MnMajorBox) {
      lbo = kRows * swizzle;
      sbo = 8 * swizzle;
    }
    if (kind == CoreMatrices) {
      lbo = 128;
      sbo = 256;
    }
    return "#norm.shared_matrix<swizzle = " + std::to_string(swizzle) +
           ", lbo = " + std::to_string(lbo) + ", sbo = " + std::to_string(sbo) +
           (mnMajor() ? ", mn_major = true" : "") + ">";
  }

  /// The element at which the operand's k16 step starts.
  int64_t start() const {
    int64_t offset = kind == KMajorBox    ? 32 * step
                     : kind == MnMajorBox ? 16 * step * swizzle
                                          : 0;
    return (base + offset) / 2;
  }

  /// The element of shared memory that holds element (mn, k) of the step.
  int64_t at(int64_t mn, int64_t k) const {
    int64_t byte = 0;
    switch (kind) {
    case KMajorBox:
      byte = mn * swizzle + 2 * (16 * step + k);
      break;
    case MnMajorBox: {
      int64_t line = swizzle / 2;
      byte = (mn / line) * kRows * swizzle + (16 * step + k) * swizzle +
             2 * (mn % line);
      break;
    }
    case CoreMatrices:
      byte = (mn % 8) * 16 + (mn / 8) * 256 + (k % 8) * 2 + (k / 8) * 128;
      break;
    }
    // TMA's swizzle (CUTLASS's Swizzle<B, 4, 3>) on the address.
    if (swizzle)
      byte ^= ((byte >> 7) & (swizzle / 16 - 1)) << 4;
    return (base + byte) / 2;
  }
};

struct WgmmaCase {
  std::string name;
  std::string type = "bf16";
  int64_t n = 64;
  /// A in shared memory; none: in registers.
  std::optional<Placement> a;
  Placement b;
  bool accumulate = true;
  int64_t blockSize = 128;
  /// Bulk copies of this many bytes bring the image, its two halves in two
  /// phases of one mbarrier; 0: the threads copy it.
  int64_t bulkChunk = 0;
  /// Warp-specialized: after the warpgroups, one producer warp whose first
  /// lane issues the bulk copies; the warpgroups multiply in a branch that
  /// the producer skips (its D is its C).
  bool producerWarp = false;
  /// Transaction bytes the arrival expects beyond the copies' (a mistake
  /// the host execution must report).
  int64_t extraBytes = 0;
  /// The launch's error, if the case expects one.
  std::string expectedError;
};

ElementType getType(const std::string &name) {
  return name == "bf16" ? ElementType::bf16 : ElementType::f16;
}

/// Bytes of shared memory the case's images take.
int64_t getImageElements(const WgmmaCase &c) {
  int64_t last = 0;
  for (int64_t k = 0; k < 16; ++k) {
    for (int64_t mn = 0; mn < c.n; ++mn)
      last = std::max(last, c.b.at(mn, k));
    if (c.a)
      for (int64_t m = 0; m < 64; ++m)
        last = std::max(last, c.a->at(m, k));
  }
  return (last + 1 + 511) / 512 * 512;
}

/// The names a kernel's shared memory gets: the thread id, the image of
/// `elements` of `type` from byte 0, and one barrier object after it.
struct SharedNames {
  std::string tid, view, tile, bar, bars;
};
SharedNames declareShared(KernelText &k, const std::string &type,
                          int64_t elements) {
  SharedNames names;
  names.tile = "memref<" + std::to_string(elements) + "x" + type +
               ", #gpu.address_space<workgroup>>";
  names.bars = "memref<1xi64, #gpu.address_space<workgroup>>";
  names.tid = k.op("gpu.thread_id x");
  std::string bytes = "memref<?xi8, #gpu.address_space<workgroup>>";
  std::string smem = k.op("gpu.dynamic_shared_memory : " + bytes);
  names.view = k.op("memref.view " + smem + "[" + k.index(0) +
                    "][] : " + bytes + " to " + names.tile);
  names.bar = k.op("memref.view " + smem + "[" + k.index(2 * elements) +
                   "][] : " + bytes + " to " + names.bars);
  return names;
}

/// The kernel: the CTA copies the image into shared memory, each thread
/// loads its C (and A) fragment from its own slots, and the warpgroups each
/// compute D, stored to the thread's slots.
std::string getWgmmaKernel(const WgmmaCase &c, int64_t imageElements) {
  KernelText k;
  std::string t = c.type, acc = "vector<" + std::to_string(c.n / 2) + "xf32>";
  std::string aRegs = "vector<8x" + t + ">";
  SharedNames shared = declareShared(k, t, imageElements);
  const std::string &tile = shared.tile, &tid = shared.tid, &view = shared.view;
  if (c.bulkChunk) {
    // Thread 0 initializes the barrier (after the image), then issues each
    // half's copies in its own phase; every thread waits for both parities.
    const std::string &bars = shared.bars, &bar = shared.bar;
    std::string first =
        k.op("arith.cmpi eq, " + tid + ", " +
             k.index(c.producerWarp ? c.blockSize - 32 : 0) + " : index");
    std::string c0 = k.index(0);
    k.line("scf.if " + first + " {");
    k.line("  norm.mbarrier_init " + bar + "[" + c0 +
           "] {count = 1 : i64} : " + bars);
    k.line("}");
    k.line("gpu.barrier");
    int64_t half = imageElements / 2, chunk = c.bulkChunk / 2;
    for (int64_t phase = 0; phase < 2; ++phase) {
      std::string tx = k.index(2 * half + c.extraBytes);
      std::string copies;
      for (int64_t at = phase * half; at < (phase + 1) * half; at += chunk)
        copies += "  norm.bulk_copy %image[" + k.index(at) + "], " + view +
                  "[" + k.index(at) + "], " + bar + "[" + c0 + "] {bytes = " +
                  std::to_string(std::min(chunk, (phase + 1) * half - at) * 2) +
                  " : i64} : " + buffer(t) + ", " + tile + ", " + bars + "\n";
      k.line("scf.if " + first + " {");
      k.line("  norm.mbarrier_arrive " + bar + "[" + c0 + "], " + tx + " : " +
             bars);
      k.body += copies;
      k.line("}");
      k.line("norm.mbarrier_wait " + bar + "[" + c0 + "], " + k.index(phase) +
             " : " + bars);
    }
  } else {
    k.line("scf.for %i = " + tid + " to " + k.index(imageElements) + " step " +
           k.index(c.blockSize) + " {");
    k.line("  %x = memref.load %image[%i] : " + buffer(t));
    k.line("  memref.store %x, " + view + "[%i] : " + tile);
    k.line("}");
    k.line("norm.async_proxy_fence");
    k.line("gpu.barrier");
  }
  std::string cv = k.op("vector.load %c[" + k.mul(tid, c.n / 2) +
                        "] : " + buffer("f32") + ", " + acc);
  std::string d;
  std::string consumer;
  if (c.producerWarp) {
    std::string warp =
        k.op("arith.divui " + tid + ", " + k.index(32) + " : index");
    consumer = k.op("arith.cmpi ult, " + warp + ", " +
                    k.index(c.blockSize / 32 - 1) + " : index");
    k.line("%role = scf.if " + consumer + " -> (" + acc + ") {");
    // The consumers' own meeting point.
    k.line("norm.named_barrier {id = 1 : i64, threads = " +
           std::to_string(c.blockSize - 32) + " : i64}");
  }
  std::string attrs = "b_layout = " + c.b.layout() +
                      (c.accumulate ? "" : ", accumulate = false");
  std::string bStart = k.index(c.b.start());
  if (c.a) {
    std::string fenced = k.op("norm.wgmma_fence " + cv + " : " + acc);
    d = k.op("norm.wgmma " + view + "[" + k.index(c.a->start()) + "], " + view +
             "[" + bStart + "], " + fenced + " {a_layout = " + c.a->layout() +
             ", " + attrs + "} : " + tile + ", " + tile + ", " + acc + " -> " +
             acc);
  } else {
    std::string av = k.op("vector.load %areg[" + k.mul(tid, 8) +
                          "] : " + buffer(t) + ", " + aRegs);
    k.line("%f:2 = norm.wgmma_fence " + cv + ", " + av + " : " + acc + ", " +
           aRegs);
    d = k.op("norm.wgmma %f#1, " + view + "[" + bStart + "], %f#0 {" + attrs +
             "} : " + aRegs + ", " + tile + ", " + acc + " -> " + acc);
  }
  k.line("norm.wgmma_commit");
  std::string done =
      k.op("norm.wgmma_wait " + d + " {pending = 0 : i64} : " + acc);
  if (c.producerWarp) {
    k.line("scf.yield " + done + " : " + acc);
    k.line("} else {");
    k.line("scf.yield " + cv + " : " + acc);
    k.line("}");
    done = "%role";
  }
  k.line("vector.store " + done + ", %d[" + k.mul(tid, c.n / 2) +
         "] : " + buffer("f32") + ", " + acc);
  std::string params = "%image: " + buffer(t) + ", %c: " + buffer("f32") +
                       ", %d: " + buffer("f32");
  if (!c.a)
    params += ", %areg: " + buffer(t);
  return kernelModule("wgmma", params, c.blockSize, "", k.body);
}

/// The position of element i of a thread's accumulators in its warpgroup's
/// 64xN D: warp w's rows 16w + mma.sync's C fragment, 8 columns on per 4
/// elements (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts"
/// of wgmma .m64nNk16).
Position accumulatorAt(int64_t thread, int64_t i) {
  Position p = fragmentC(thread % 32, i % 4);
  return {16 * (thread / 32 % 4) + p.row, p.col + 8 * (i / 4)};
}

/// Runs the kernel on the engine the environment selects.
Status launch(const std::string &kernel, const WgmmaCase &c,
              int64_t imageElements, std::vector<void *> buffers,
              std::vector<int64_t> bytes) {
  const char *engine = std::getenv("NORM_TEST_ENGINE");
  if (!engine || std::string(engine) == "host") {
    std::unique_ptr<HostKernels> kernels = compileOrFail(kernel);
    if (!kernels)
      return Status::invalid("the kernel does not compile for the host");
    return kernels->launch("wgmma", buffers, {}, 1);
  }
  std::string root = check::findPtxsim(/*sourceDir=*/"");
  if (std::string(engine) != "ptxsim" || root.empty())
    return Status::invalid("NORM_TEST_ENGINE: 'host', or 'ptxsim' with "
                           "$NORM_PTXSIM holding bin/ptxsim-run");
  TargetOptions target;
  target.chip = "sm_90a";
  std::string ptx;
  if (Status status = compileKernelModule(
          "module attributes {gpu.container_module} {\n" + kernel + "}\n",
          target, ptx);
      !status)
    return status;
  KernelSignature signature;
  signature.name = "wgmma";
  signature.blockThreads = c.blockSize;
  signature.sharedBytes = imageElements * 2 + 16;
  std::vector<check::SimBuffer> simBuffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    signature.params.push_back(KernelParam());
    simBuffers.push_back({buffers[i], bytes[i]});
  }
  check::PtxsimOptions options;
  options.root = root;
  return check::runOnPtxsim(options, ptx, signature, simBuffers, {}, 1);
}

void checkWgmma(const WgmmaCase &c) {
  SCOPED_TRACE(c.name);
  ElementType type = getType(c.type);
  std::mt19937 rng(std::hash<std::string>()(c.name) % 100000);
  std::vector<uint16_t> a = randomBits(type, 64 * 16, rng);
  std::vector<uint16_t> b = randomBits(type, 16 * c.n, rng);
  int64_t imageElements = getImageElements(c);
  uint16_t nan = type == ElementType::bf16 ? 0x7fc0 : 0x7e00;
  std::vector<uint16_t> image(imageElements, nan);
  for (int64_t k = 0; k < 16; ++k) {
    for (int64_t n = 0; n < c.n; ++n)
      image[c.b.at(n, k)] = b[k * c.n + n];
    if (c.a)
      for (int64_t m = 0; m < 64; ++m)
        image[c.a->at(m, k)] = a[m * 16 + k];
  }
  int64_t threads = c.blockSize, perThread = c.n / 2;
  // C differs between the warpgroups; without accumulate it is NaN.
  std::vector<float> cMatrix = randomFloats(threads / 128 * 64 * c.n, rng);
  std::vector<float> cRegs(threads * perThread), d(threads * perThread, NAN);
  std::vector<uint16_t> aRegs(threads * 8);
  for (int64_t t = 0; t < threads; ++t) {
    for (int64_t i = 0; i < perThread; ++i) {
      Position p = accumulatorAt(t, i);
      cRegs[t * perThread + i] =
          !c.accumulate ? NAN
          : t < threads / 128 * 128
              ? cMatrix[(t / 128 * 64 + p.row) * c.n + p.col]
              : float(t + i);
    }
    for (int64_t i = 0; i < 8; ++i) {
      Position p = fragmentA(t % 32, i);
      aRegs[t * 8 + i] = a[(16 * (t / 32 % 4) + p.row) * 16 + p.col];
    }
  }
  std::vector<void *> buffers = {image.data(), cRegs.data(), d.data()};
  std::vector<int64_t> bytes = {imageElements * 2, threads * perThread * 4,
                                threads * perThread * 4};
  if (!c.a) {
    buffers.push_back(aRegs.data());
    bytes.push_back(threads * 16);
  }
  std::string kernel = getWgmmaKernel(c, imageElements);
  Status status = launch(kernel, c, imageElements, buffers, bytes);
  if (!c.expectedError.empty()) {
    EXPECT_FALSE(status);
    EXPECT_NE(status.message().find(c.expectedError), std::string::npos)
        << status.message();
    return;
  }
  ASSERT_TRUE(status) << status.message() << "\n" << kernel;

  // The producer warp's D is its C, untouched.
  for (int64_t t = threads / 128 * 128; t < threads; ++t)
    for (int64_t i = 0; i < perThread; ++i)
      EXPECT_EQ(d[t * perThread + i], cRegs[t * perThread + i])
          << "producer thread " << t << " element " << i;
  for (int64_t group = 0; group < threads / 128; ++group) {
    std::vector<float> dMatrix(64 * c.n, NAN);
    for (int64_t t = 128 * group; t < 128 * (group + 1); ++t)
      for (int64_t i = 0; i < perThread; ++i) {
        Position p = accumulatorAt(t, i);
        dMatrix[p.row * c.n + p.col] = d[t * perThread + i];
      }
    expectProduct(
        dMatrix.data(), 64, c.n, 16,
        [&](int64_t m, int64_t k) { return decode(type, a[m * 16 + k]); },
        [&](int64_t k, int64_t n) { return decode(type, b[k * c.n + n]); },
        [&](int64_t m, int64_t n) {
          return c.accumulate ? double(cMatrix[(group * 64 + m) * c.n + n])
                              : 0.0;
        },
        c.name + " warpgroup " + std::to_string(group));
  }
}

Placement kMajor(int64_t swizzle, int64_t step, int64_t base) {
  return {Placement::KMajorBox, swizzle, 16, step, base};
}
Placement mnMajor(int64_t kRows, int64_t step, int64_t base) {
  return {Placement::MnMajorBox, 128, kRows, step, base};
}
Placement coreMatrices(int64_t base) {
  return {Placement::CoreMatrices, 0, 16, 0, base};
}

// The attention kernel's S = Q K^T: both K-major with a 128-byte swizzle,
// steps inside the atom (Q's 64 rows of 64 columns, 8 KiB, K after them).
TEST(WarpgroupMatrix, SharedKMajorSwizzle128) {
  checkWgmma(
      {"ss_sw128_n64", "bf16", 64, kMajor(128, 1, 0), kMajor(128, 1, 8192)});
  checkWgmma({"ss_sw128_n256_step3", "bf16", 256, kMajor(128, 3, 0),
              kMajor(128, 3, 8192)});
  checkWgmma(
      {"ss_sw128_n8_f16", "f16", 8, kMajor(128, 2, 0), kMajor(128, 0, 8192)});
}

TEST(WarpgroupMatrix, SharedNarrowSwizzles) {
  checkWgmma(
      {"ss_sw64_n32", "bf16", 32, kMajor(64, 1, 0), kMajor(64, 1, 4096)});
  checkWgmma(
      {"ss_sw32_n16_f16", "f16", 16, kMajor(32, 0, 0), kMajor(32, 0, 2048)});
  checkWgmma({"ss_core_matrices_n24", "bf16", 24, coreMatrices(0),
              coreMatrices(2048)});
}

// A stored [k][m] (transpose-a).
TEST(WarpgroupMatrix, SharedMnMajorA) {
  checkWgmma(
      {"ss_a_mn_n64", "bf16", 64, mnMajor(32, 1, 0), kMajor(128, 2, 4096)});
}

// O += P V: P from registers, V [keys][d] in boxes of 64 columns (MN-major,
// 128-byte swizzle), the step 16 keys in.
TEST(WarpgroupMatrix, RegisterAWithMnMajorB) {
  checkWgmma({"rs_v_n128", "bf16", 128, std::nullopt, mnMajor(64, 2, 0)});
  checkWgmma({"rs_v_n64_f16", "f16", 64, std::nullopt, mnMajor(32, 1, 0)});
  checkWgmma({"rs_k_major_n256", "bf16", 256, std::nullopt, kMajor(128, 1, 0)});
}

// scale-d = 0: C (NaN here) is not read.
TEST(WarpgroupMatrix, OverwritesWithoutAccumulate) {
  WgmmaCase c{"ss_overwrite_n64", "bf16", 64, kMajor(128, 0, 0),
              kMajor(128, 0, 8192)};
  c.accumulate = false;
  checkWgmma(c);
  WgmmaCase r{"rs_overwrite_n32", "bf16", 32, std::nullopt, mnMajor(16, 0, 0)};
  r.accumulate = false;
  checkWgmma(r);
}

// Two warpgroups: warp w computes rows 16 (w % 4) onwards of its own D.
TEST(WarpgroupMatrix, TwoWarpgroups) {
  WgmmaCase c{"two_warpgroups_n64", "bf16", 64, kMajor(128, 1, 0),
              kMajor(128, 1, 8192)};
  c.blockSize = 256;
  checkWgmma(c);
  WgmmaCase r{"two_warpgroups_rs_n128", "bf16", 128, std::nullopt,
              mnMajor(64, 3, 0)};
  r.blockSize = 256;
  checkWgmma(r);
}

// Warp specialization: a producer warp brings the image, the warpgroups'
// multiply sits in a branch it does not take.
TEST(WarpgroupMatrix, ProducerWarpAndConsumerBranch) {
  WgmmaCase c{"roles_ss_n64", "bf16", 64, kMajor(128, 1, 0),
              kMajor(128, 1, 8192)};
  c.bulkChunk = 2048;
  c.blockSize = 288;
  c.producerWarp = true;
  checkWgmma(c);
  WgmmaCase r{"roles_rs_n128", "bf16", 128, std::nullopt, mnMajor(64, 2, 0)};
  r.bulkChunk = 4096;
  r.blockSize = 160;
  r.producerWarp = true;
  checkWgmma(r);
}

// A phase whose arrival expects 16 bytes more than the copies bring never
// completes: the host execution reports the wait (a GPU would hang).
TEST(WarpgroupMatrix, ReportsAWaitThatNeverCompletes) {
  if (const char *engine = std::getenv("NORM_TEST_ENGINE");
      engine && std::string(engine) != "host")
    GTEST_SKIP() << "the host execution's check";
  WgmmaCase c{"bulk_missing_bytes", "bf16", 64, kMajor(128, 1, 0),
              kMajor(128, 1, 8192)};
  c.bulkChunk = 1024;
  c.extraBytes = 16;
  c.expectedError = "waited for an mbarrier phase that never completes";
  checkWgmma(c);
}

// The image through bulk copies completing on an mbarrier, two phases.
TEST(WarpgroupMatrix, BulkCopiesBringTheOperands) {
  WgmmaCase c{"bulk_ss_sw128_n64", "bf16", 64, kMajor(128, 1, 0),
              kMajor(128, 1, 8192)};
  c.bulkChunk = 1024;
  checkWgmma(c);
  WgmmaCase r{"bulk_rs_v_n128", "bf16", 128, std::nullopt, mnMajor(64, 2, 0)};
  r.bulkChunk = 4096;
  checkWgmma(r);
}

/// A and B reach shared memory as TMA boxes of row-major matrices (A 64 x
/// 64 and B n x 64, rows 72 elements apart, the boxes in the 128-byte
/// swizzle), then one wgmma multiplies the k16 slice `step`. B's view ends
/// `missingRows` rows early: those rows of its box arrive as zeros. Host
/// path only: ptxsim has no tensor copies.
void checkTmaWgmma(int64_t n, int64_t step, int64_t missingRows) {
  SCOPED_TRACE("tma n" + std::to_string(n) + " step " + std::to_string(step));
  const char *engine = std::getenv("NORM_TEST_ENGINE");
  if (engine && std::string(engine) != "host")
    GTEST_SKIP() << "TMA tensor copies run on the host path only";
  constexpr int64_t kStride = 72;
  int64_t aElements = 64 * 64, imageElements = aElements + n * 64;
  KernelText k;
  std::string acc = "vector<" + std::to_string(n / 2) + "xf32>";
  SharedNames shared = declareShared(k, "bf16", imageElements);
  const std::string &tile = shared.tile, &tid = shared.tid, &view = shared.view,
                    &bar = shared.bar, &bars = shared.bars;
  std::string c0 = k.index(0);
  std::string first = k.op("arith.cmpi eq, " + tid + ", " + c0 + " : index");
  std::string box = " {box_columns = 64 : i64, box_rows = ";
  std::string types =
      " : memref<16xi64>, " + buffer("bf16") + ", " + tile + ", " + bars;
  std::string a64 = k.index(64), stride = k.index(kStride);
  std::string bRows = k.index(n - missingRows);
  std::string bytes = k.index(2 * imageElements);
  std::string bAt = k.index(aElements);
  k.line("scf.if " + first + " {");
  k.line("  norm.mbarrier_init " + bar + "[" + c0 +
         "] {count = 1 : i64} : " + bars);
  k.line("}");
  k.line("gpu.barrier");
  k.line("scf.if " + first + " {");
  k.line("  norm.mbarrier_arrive " + bar + "[" + c0 + "], " + bytes + " : " +
         bars);
  k.line("  norm.tma_load %amap, %a[" + a64 + ", " + a64 + ", " + stride +
         "] at [" + c0 + ", " + c0 + "], " + view + "[" + c0 + "], " + bar +
         "[" + c0 + "]" + box + "64 : i64, swizzle = 128 : i64}" + types);
  k.line("  norm.tma_load %bmap, %b[" + bRows + ", " + a64 + ", " + stride +
         "] at [" + c0 + ", " + c0 + "], " + view + "[" + bAt + "], " + bar +
         "[" + c0 + "]" + box + std::to_string(n) +
         " : i64, swizzle = 128 : i64}" + types);
  k.line("}");
  k.line("norm.mbarrier_wait " + bar + "[" + c0 + "], " + c0 + " : " + bars);
  std::string cv = k.op("vector.load %c[" + k.mul(tid, n / 2) +
                        "] : " + buffer("f32") + ", " + acc);
  std::string fenced = k.op("norm.wgmma_fence " + cv + " : " + acc);
  Placement a = kMajor(128, step, 0), b = kMajor(128, step, 2 * aElements);
  std::string product =
      k.op("norm.wgmma " + view + "[" + k.index(a.start()) + "], " + view +
           "[" + k.index(b.start()) + "], " + fenced +
           " {a_layout = " + a.layout() + ", b_layout = " + b.layout() +
           "} : " + tile + ", " + tile + ", " + acc + " -> " + acc);
  k.line("norm.wgmma_commit");
  std::string done =
      k.op("norm.wgmma_wait " + product + " {pending = 0 : i64} : " + acc);
  k.line("vector.store " + done + ", %d[" + k.mul(tid, n / 2) +
         "] : " + buffer("f32") + ", " + acc);
  std::string kernel =
      kernelModule("wgmma",
                   "%a: " + buffer("bf16") + ", %b: " + buffer("bf16") +
                       ", %amap: memref<16xi64>, %bmap: memref<16xi64>, %c: " +
                       buffer("f32") + ", %d: " + buffer("f32"),
                   128, "", k.body);

  std::mt19937 rng(n * 31 + step);
  // Row-major, 72 elements a row; the padding and the rows past B's view
  // hold NaN, which must never be read.
  uint16_t nan = 0x7fc0;
  std::vector<uint16_t> aBits =
      randomBits(ElementType::bf16, 64 * kStride, rng);
  std::vector<uint16_t> bBits = randomBits(ElementType::bf16, n * kStride, rng);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 64; c < kStride; ++c)
      aBits[r * kStride + c] = nan;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < kStride; ++c)
      if (c >= 64 || r >= n - missingRows)
        bBits[r * kStride + c] = nan;
  std::vector<float> cMatrix = randomFloats(64 * n, rng);
  std::vector<float> cRegs(128 * n / 2), d(128 * n / 2, NAN);
  for (int64_t t = 0; t < 128; ++t)
    for (int64_t i = 0; i < n / 2; ++i) {
      Position p = accumulatorAt(t, i);
      cRegs[t * n / 2 + i] = cMatrix[p.row * n + p.col];
    }
  std::vector<uint64_t> maps(32, 0);
  std::unique_ptr<HostKernels> kernels = compileOrFail(kernel);
  ASSERT_TRUE(kernels);
  Status status = kernels->launch("wgmma",
                                  {aBits.data(), bBits.data(), maps.data(),
                                   maps.data() + 16, cRegs.data(), d.data()},
                                  {}, 1);
  ASSERT_TRUE(status) << status.message();
  std::vector<float> dMatrix(64 * n, NAN);
  for (int64_t t = 0; t < 128; ++t)
    for (int64_t i = 0; i < n / 2; ++i) {
      Position p = accumulatorAt(t, i);
      dMatrix[p.row * n + p.col] = d[t * n / 2 + i];
    }
  expectProduct(
      dMatrix.data(), 64, n, 16,
      [&](int64_t m, int64_t kk) {
        return decode(ElementType::bf16, aBits[m * kStride + 16 * step + kk]);
      },
      [&](int64_t kk, int64_t col) {
        return col >= n - missingRows
                   ? 0.0
                   : decode(ElementType::bf16,
                            bBits[col * kStride + 16 * step + kk]);
      },
      [&](int64_t m, int64_t col) { return double(cMatrix[m * n + col]); },
      "tma");
}

// The attention kernel's Q and K path: TMA boxes in the 128-byte swizzle
// are what wgmma's K-major layout reads, at every k16 step of the atom;
// a box past the view's last row brings zeros.
TEST(WarpgroupMatrix, TmaBoxesFeedWgmma) {
  checkTmaWgmma(64, 0, 0);
  checkTmaWgmma(128, 3, 0);
  checkTmaWgmma(64, 1, 5);
}

} // namespace
