//===- normjit-example.cpp - a host program using libnormjit --------------===//
//
// The fused residual add + RMSNorm of a pre-norm transformer block, through
// the C++ API: create a context, ask for the kernel of the operation (built,
// tuned and cached at the first request), launch it, and check the result
// against a float64 reference.
//
//   normjit-example [--hidden N] [--rows N] [--no-tune] [--bundle FILE]
//
// Exit status 0 when the kernel matches the reference, 1 otherwise (or when
// there is no CUDA device: the message says why).
//
//===----------------------------------------------------------------------===//

#include "runtime/ElementTypes.h"
#include "runtime/Runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace norm;
using namespace norm::jit;

namespace {

/// Deterministic values in [-2, 2), as bf16.
std::vector<uint16_t> makeData(size_t count, uint64_t seed) {
  std::vector<uint16_t> data(count);
  for (uint16_t &value : data) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    value =
        floatToBf16(static_cast<float>((seed >> 40) % 4096) / 1024.0f - 2.0f);
  }
  return data;
}

int fail(const Status &status) {
  std::fprintf(stderr, "normjit-example: %s (%s)\n", status.message().c_str(),
               std::string(getErrorCodeName(status.code())).c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  int64_t hidden = 4096, rows = 64;
  ContextOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : "";
    };
    if (arg == "--hidden")
      hidden = std::atoll(value());
    else if (arg == "--rows")
      rows = std::atoll(value());
    else if (arg == "--no-tune")
      options.tuning = false;
    else if (arg == "--bundle")
      options.bundles.push_back(value());
    else {
      std::fprintf(stderr, "usage: normjit-example [--hidden N] [--rows N] "
                           "[--no-tune] [--bundle FILE]\n");
      return 2;
    }
  }
  if (hidden <= 0 || rows <= 0) {
    std::fprintf(stderr, "normjit-example: --hidden and --rows must be "
                         "positive\n");
    return 2;
  }

  std::unique_ptr<Context> context;
  if (Status status = Context::create(options, context); !status)
    return fail(status);
  const DeviceInfo &device = context->getDeviceInfo();
  std::printf("device: %s (%s), driver %d\n", device.name.c_str(),
              device.chip.c_str(), device.driverVersion);

  // h = x + r (rounded to bf16, as the unfused graph rounds it), written
  // back as the residual stream; y = rmsnorm(h) * w.
  OpSpec spec;
  spec.kind = OpSpec::Kind::RMSNorm;
  spec.hidden = hidden;
  spec.hasWeight = spec.hasAddend = spec.writeResidual = true;
  spec.eps = 1e-6;
  std::shared_ptr<const Kernel> kernel;
  if (Status status = context->getKernel(spec, {}, kernel); !status)
    return fail(status);
  for (RowBucket bucket : kAllRowBuckets) {
    const BucketReport &report = kernel->getReport(bucket);
    std::printf(
        "rows %-5s %s (%s)\n", std::string(getRowBucketName(bucket)).c_str(),
        report.launch.getMangledSuffix().c_str(),
        std::string(BucketReport::getSourceName(report.source)).c_str());
  }

  size_t elements = rows * hidden, bytes = elements * 2;
  std::vector<uint16_t> x = makeData(elements, 1), r = makeData(elements, 2),
                        w = makeData(hidden, 3);
  void *dx, *dr, *dw, *dy, *dh;
  for (void **buffer : {&dx, &dr, &dy, &dh})
    if (Status status = context->allocate(bytes, *buffer); !status)
      return fail(status);
  if (Status status = context->allocate(hidden * 2, dw); !status)
    return fail(status);
  // Outputs start as NaN, so nothing unwritten can pass.
  std::vector<uint16_t> poison(elements, 0x7fc0);
  for (auto [device, host, size] :
       {std::tuple{dx, x.data(), bytes}, std::tuple{dr, r.data(), bytes},
        std::tuple{dw, w.data(), size_t(hidden) * 2},
        std::tuple{dy, poison.data(), bytes},
        std::tuple{dh, poison.data(), bytes}})
    if (Status status = context->copyToDevice(device, host, size); !status)
      return fail(status);

  LaunchArgs args;
  args.set(BufferSlot::Input, dx, ElementType::bf16, hidden)
      .set(BufferSlot::Addend, dr, ElementType::bf16, hidden)
      .set(BufferSlot::Weight, dw, ElementType::bf16, hidden)
      .set(BufferSlot::Output, dy, ElementType::bf16, hidden)
      .set(BufferSlot::ResidualOut, dh, ElementType::bf16, hidden);
  if (Status status = kernel->launch(args, rows, /*stream=*/nullptr); !status)
    return fail(status);
  if (Status status = context->synchronize(nullptr); !status)
    return fail(status);
  std::vector<uint16_t> y(elements), h(elements);
  if (Status status = context->copyToHost(y.data(), dy, bytes); !status)
    return fail(status);
  if (Status status = context->copyToHost(h.data(), dh, bytes); !status)
    return fail(status);
  for (void *buffer : {dx, dr, dw, dy, dh})
    (void)context->release(buffer);

  // float64 reference. bf16 output: about 2^-8 relative rounding.
  constexpr double kRelTolerance = 1.0 / 128, kAbsTolerance = 1e-3;
  double maxError = 0;
  int64_t residualMismatches = 0, outputMismatches = 0;
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<double> sum(hidden);
    double squares = 0;
    for (int64_t c = 0; c < hidden; ++c) {
      size_t i = row * hidden + c;
      float rounded =
          bf16ToFloat(floatToBf16(bf16ToFloat(x[i]) + bf16ToFloat(r[i])));
      sum[c] = rounded;
      squares += sum[c] * sum[c];
      if (h[i] != floatToBf16(rounded))
        ++residualMismatches;
    }
    double scale = 1.0 / std::sqrt(squares / hidden + spec.eps);
    for (int64_t c = 0; c < hidden; ++c) {
      double want = sum[c] * scale * bf16ToFloat(w[c]);
      double got = bf16ToFloat(y[row * hidden + c]);
      double error = std::fabs(got - want);
      if (!(error <= kAbsTolerance + kRelTolerance * std::fabs(want)))
        ++outputMismatches;
      maxError = std::isnan(error) ? INFINITY : std::max(maxError, error);
    }
  }
  std::printf("%lld rows x %lld: residual mismatches %lld, output mismatches "
              "%lld, max |error| %.3g\n",
              static_cast<long long>(rows), static_cast<long long>(hidden),
              static_cast<long long>(residualMismatches),
              static_cast<long long>(outputMismatches), maxError);
  bool pass = residualMismatches == 0 && outputMismatches == 0;
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
