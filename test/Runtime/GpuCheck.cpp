//===- GpuCheck.cpp - libnormjit kernels against a float64 reference ------===//
//
// normjit-gpu-check: on a real device, runs operations through the C++ API
// (tuned, and with the heuristic), every output poisoned with NaN first, and
// compares with a float64 reference of the norm.fused_row,
// norm.qk_norm_prologue and norm.column_stats semantics at a tolerance per
// output type. Every buffer sits between guard bytes that must survive, and
// inputs must come back unchanged. Also zero rows, misaligned buffers (the
// scalar variant), strided rows and a launch captured into a CUDA graph;
// in-place kernels with their outputs over their inputs' very buffers
// (checked there); and a second context with programmatic dependent launch
// (compute capability 9.0 on; "pdl: not run" elsewhere); on compute
// capability 9.0, the sm_90a attention kernel (TMA tensor maps, mbarrier
// transaction counts, wgmma descriptors: what a Hopper checks first) at a
// small varlen causal case against the float64 attention, each consumer
// warpgroup count once (--quick: one). Prints one line per case; exit status 1
// if any fails.
//
//   normjit-gpu-check [--quick] [--no-tune] [--filter TEXT] [--driver LIB]
//
// --quick runs one small case per kernel kind, for compute-sanitizer;
// --driver loads another driver library (tests of this checker use the fake
// driver, whose kernels write nothing: every computing case must fail).
//
//===----------------------------------------------------------------------===//

#include "compiler/model/AttentionReference.h"
#include "compiler/model/FloatFormats.h"
#include "compiler/model/Reference.h"
#include "runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace norm;
using namespace norm::jit;

namespace {

/// A host array of one element type.
struct HostTensor {
  ElementType type = ElementType::f32;
  std::vector<uint8_t> bytes;

  HostTensor(ElementType type, size_t count)
      : type(type), bytes(count * getElementBytes(type)) {}
  size_t size() const { return bytes.size() / getElementBytes(type); }
  // Exactly as the CPU sweep stores them (compiler/model/FloatFormats.h).
  double get(size_t i) const {
    return check::loadElement(type, bytes.data(), static_cast<int64_t>(i));
  }
  void set(size_t i, double value) {
    check::storeElement(type, bytes.data(), static_cast<int64_t>(i), value);
  }
  void poison() {
    for (size_t i = 0; i < size(); ++i)
      set(i, NAN);
  }
};

uint64_t seed = 12345;
double nextRandom() { // in [-2, 2)
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<double>((seed >> 40) % 65536) / 16384.0 - 2.0;
}

//===----------------------------------------------------------------------===//
// Float64 references
//===----------------------------------------------------------------------===//

/// Host copies of every buffer; rows x stride for 2-D ones.
struct Buffers {
  std::vector<HostTensor> tensors; // by BufferSlot, empty where absent
  std::vector<int64_t> strides;
  Buffers() : strides(kNumBufferSlots, 0) {
    for (int i = 0; i < kNumBufferSlots; ++i)
      tensors.emplace_back(ElementType::f32, 0);
  }
  HostTensor &operator[](BufferSlot slot) {
    return tensors[static_cast<int>(slot)];
  }
  double at(BufferSlot slot, int64_t row, int64_t col) {
    return (*this)[slot].get(row * strides[static_cast<int>(slot)] + col);
  }
};

/// The expected outputs by slot, from the float64 references the CPU sweep
/// uses too (compiler/model/Reference.h): each element's value and the error
/// bound a correct kernel stays within.
using ExpectedOutputs = std::map<BufferSlot, check::ExpectedRows>;

check::RowsView getRows(Buffers &b, BufferSlot slot, int64_t rows) {
  HostTensor &tensor = b[slot];
  int64_t stride = b.strides[static_cast<int>(slot)];
  return {tensor.type, tensor.bytes.data(), rows, stride, stride};
}

check::ParamView getParam(Buffers &b, BufferSlot slot) {
  HostTensor &tensor = b[slot];
  if (tensor.bytes.empty())
    return {};
  return {tensor.type, tensor.bytes.data()};
}

/// The saved statistics a forward kernel with save_stats writes.
void expectSavedStats(ExpectedOutputs &expected, check::ExpectedRows &mean,
                      check::ExpectedRows &rstd) {
  if (!rstd.values.empty())
    expected[BufferSlot::SavedRstd] = std::move(rstd);
  if (!mean.values.empty())
    expected[BufferSlot::SavedMean] = std::move(mean);
}

ExpectedOutputs reference(const OpSpec &s, Buffers &b, int64_t rows) {
  ExpectedOutputs expected;
  if (s.kind == OpSpec::Kind::QKNormPrologue) {
    check::QKNormExpected qk = check::referenceQKNorm(
        s, getRows(b, BufferSlot::Qkv, rows), getParam(b, BufferSlot::QWeight),
        getParam(b, BufferSlot::KWeight));
    expected[BufferSlot::Q] = std::move(qk.q);
    expected[BufferSlot::K] = std::move(qk.k);
    expectSavedStats(expected, qk.savedMean, qk.savedRstd);
    return expected;
  }
  if (s.kind == OpSpec::Kind::BatchNormStats) {
    check::RowsView input = getRows(b, BufferSlot::Input, rows);
    input.cols = s.hidden;
    check::ColumnStatsExpected stats = check::referenceColumnStats(input);
    for (auto [slot, values] :
         {std::pair{BufferSlot::Mean, &stats.mean},
          std::pair{BufferSlot::Variance, &stats.variance}}) {
      check::ExpectedRows &out = expected[slot] = check::ExpectedRows(1, s.hidden);
      out.values = *values;
    }
    return expected;
  }
  auto rowsOf = [&](BufferSlot slot) {
    check::RowsView view = getRows(b, slot, rows);
    view.cols = s.hidden;
    return view;
  };
  if (s.backward) {
    // The gradients from the saved statistics; the weight and bias
    // gradients as the column sums round them.
    check::FusedRowGradOperands grad;
    grad.input = rowsOf(BufferSlot::Input);
    grad.gradOutput = rowsOf(BufferSlot::GradOutput);
    if (s.writeResidual)
      grad.residualGrad = rowsOf(BufferSlot::ResidualGrad);
    check::RowsView rstd = getRows(b, BufferSlot::SavedRstd, rows);
    rstd.cols = s.groups;
    grad.savedRstd = rstd;
    if (!b[BufferSlot::SavedMean].bytes.empty()) {
      check::RowsView mean = getRows(b, BufferSlot::SavedMean, rows);
      mean.cols = s.groups;
      grad.savedMean = mean;
    }
    grad.weight = getParam(b, BufferSlot::Weight);
    check::FusedRowGradExpected g = check::referenceFusedRowGrad(s, grad);
    expected[BufferSlot::GradInput] = std::move(g.gradInput);
    if (!g.addendGrad.values.empty())
      expected[BufferSlot::AddendGrad] = std::move(g.addendGrad);
    for (auto [slot, sums] : {std::pair{BufferSlot::WeightGrad, &g.weightGrad},
                              std::pair{BufferSlot::BiasGrad, &g.biasGrad}}) {
      if (sums->empty())
        continue;
      check::ExpectedRows &out = expected[slot] =
          check::ExpectedRows(1, static_cast<int64_t>(sums->size()));
      out.values = check::roundGradientSums(*sums, s.param);
    }
    return expected;
  }
  check::FusedRowOperands operands;
  operands.input = rowsOf(BufferSlot::Input);
  if (s.hasAddend)
    operands.addend = rowsOf(BufferSlot::Addend);
  if (s.hasSkip)
    operands.skip = rowsOf(BufferSlot::Skip);
  operands.weight = getParam(b, BufferSlot::Weight);
  operands.bias = getParam(b, BufferSlot::Bias);
  operands.mean = getParam(b, BufferSlot::Mean);
  operands.variance = getParam(b, BufferSlot::Variance);
  operands.outputScale = getParam(b, BufferSlot::OutputScale);
  operands.scaleUpperBound = getParam(b, BufferSlot::ScaleUpperBound);
  check::FusedRowExpected fused = check::referenceFusedRow(s, operands);
  expected[BufferSlot::Output] = std::move(fused.output);
  if (s.writeResidual)
    expected[BufferSlot::ResidualOut] = std::move(fused.residual);
  if (s.outputScale == OutputScale::PerToken)
    expected[BufferSlot::OutputScales] = std::move(fused.outputScales);
  expectSavedStats(expected, fused.savedMean, fused.savedRstd);
  return expected;
}

//===----------------------------------------------------------------------===//
// Running one case
//===----------------------------------------------------------------------===//

struct Case {
  std::string name;
  OpSpec spec;
  int64_t rows;
  int64_t extraStride = 0;   // elements added to every 2-D row stride
  int64_t misalignBytes = 0; // offset of the input pointer
  bool graph = false;        // launch inside a CUDA graph capture
};

/// Bytes around every device buffer that no kernel may write.
constexpr size_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xa5;

/// A device allocation: guard, data (at `offset`), guard; `image` is what
/// was copied in.
struct GuardedBuffer {
  void *base = nullptr;
  size_t offset = 0;
  std::vector<uint8_t> image;
};

/// The CUDA graph entry points this check uses (not in libnormjit's table:
/// the runtime never needs them).
struct GraphApi {
  using Stream = void *;
  int (*streamCreate)(Stream *, unsigned) = nullptr;
  int (*streamDestroy)(Stream) = nullptr;
  int (*beginCapture)(Stream, int) = nullptr;
  int (*endCapture)(Stream, void **) = nullptr;
  int (*instantiate)(void **, void *, unsigned long long) = nullptr;
  int (*launch)(void *, Stream) = nullptr;
  int (*synchronize)(Stream) = nullptr;
  int (*execDestroy)(void *) = nullptr;
  int (*graphDestroy)(void *) = nullptr;

  bool load() {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda)
      return false;
    auto get = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(cuda, name));
      return fn != nullptr;
    };
    return get(streamCreate, "cuStreamCreate") &&
           get(streamDestroy, "cuStreamDestroy_v2") &&
           get(beginCapture, "cuStreamBeginCapture_v2") &&
           get(endCapture, "cuStreamEndCapture") &&
           get(instantiate, "cuGraphInstantiateWithFlags") &&
           get(launch, "cuGraphLaunch") &&
           get(synchronize, "cuStreamSynchronize") &&
           get(execDestroy, "cuGraphExecDestroy") &&
           get(graphDestroy, "cuGraphDestroy");
  }
};

class Checker {
public:
  explicit Checker(Context &context) : context(context) {}

  bool run(const Case &c, bool tune) {
    std::string label = c.name + (tune ? " (tuned)" : " (heuristic)");
    std::string error;
    bool ok = runCase(c, tune, error);
    std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", label.c_str(),
                error.empty() ? "" : ": ", error.c_str());
    return ok;
  }

private:
  bool runCase(const Case &c, bool tune, std::string &error) {
    KernelOptions options;
    options.tune = tune;
    std::shared_ptr<const Kernel> kernel;
    if (Status status = context.getKernel(c.spec, options, kernel); !status) {
      error = status.message();
      return false;
    }
    // Host buffers with random inputs, poisoned outputs: the kernel's, but
    // for a backward launch the gradient sums instead of the partials (the
    // library's own).
    Buffers host;
    std::vector<BufferSpec> specs;
    for (const BufferSpec &buffer : getBuffers(c.spec))
      if (!isGradPartials(buffer.slot))
        specs.push_back(buffer);
    if (c.spec.backward)
      for (const GradientSum &sum : getGradientSums(c.spec))
        specs.push_back({sum.gradient, sum.columnSum.output,
                         sum.columnSum.hidden, false, true});
    for (const BufferSpec &buffer : specs) {
      int64_t stride = buffer.rows2D ? buffer.cols + c.extraStride : 0;
      int64_t count = buffer.rows2D ? c.rows * stride : buffer.cols;
      HostTensor tensor(buffer.type, count);
      // Variances and saved rstds are positive; a static FP8 scale small
      // enough that the largest outputs saturate (|y| up to 8, scale at
      // most 1/60), a bound that clamps some rows' amax.
      bool positive = buffer.slot == BufferSlot::Variance ||
                      buffer.slot == BufferSlot::SavedRstd;
      for (size_t i = 0; i < tensor.size(); ++i)
        tensor.set(i,
                   buffer.written ? NAN
                   : buffer.slot == BufferSlot::OutputScale
                       ? (std::fabs(nextRandom()) + 1.0) / 180
                   : buffer.slot == BufferSlot::ScaleUpperBound
                       ? std::fabs(nextRandom()) + 2.0
                   : positive ? std::fabs(nextRandom()) + 0.1
                              : nextRandom());
      host[buffer.slot] = std::move(tensor);
      host.strides[static_cast<int>(buffer.slot)] = stride;
    }
    // Device buffers between guard bytes (the input offset by misalignBytes
    // into its front guard).
    LaunchArgs args;
    std::vector<GuardedBuffer> device;
    // The device buffer of each of `specs`: in place, the input's.
    std::vector<size_t> at(specs.size());
    std::array<size_t, kNumBufferSlots> bySlot{};
    auto cleanup = [&] {
      for (GuardedBuffer &buffer : device)
        (void)context.release(buffer.base);
    };
    for (size_t i = 0; i < specs.size(); ++i) {
      const BufferSpec &buffer = specs[i];
      if (buffer.over) {
        // Written over its input (the same rows, stride and type).
        at[i] = bySlot[static_cast<int>(*buffer.over)];
        const GuardedBuffer &input = device[at[i]];
        args.set(buffer.slot,
                 static_cast<char *>(input.base) + input.offset, buffer.type,
                 buffer.cols, host.strides[static_cast<int>(buffer.slot)]);
        continue;
      }
      at[i] = bySlot[static_cast<int>(buffer.slot)] = device.size();
      HostTensor &tensor = host[buffer.slot];
      GuardedBuffer guarded;
      guarded.offset =
          kGuardBytes +
          ((buffer.slot == BufferSlot::Input || buffer.slot == BufferSlot::Qkv)
               ? c.misalignBytes
               : 0);
      guarded.image.assign(guarded.offset + tensor.bytes.size() + kGuardBytes,
                           kGuardByte);
      std::copy(tensor.bytes.begin(), tensor.bytes.end(),
                guarded.image.begin() + guarded.offset);
      if (Status status = context.allocate(guarded.image.size(), guarded.base);
          !status) {
        error = status.message();
        cleanup();
        return false;
      }
      device.push_back(guarded);
      if (Status status = context.copyToDevice(
              guarded.base, guarded.image.data(), guarded.image.size());
          !status) {
        error = status.message();
        cleanup();
        return false;
      }
      args.set(buffer.slot, static_cast<char *>(guarded.base) + guarded.offset,
               buffer.type, buffer.cols,
               buffer.rows2D ? host.strides[static_cast<int>(buffer.slot)] : 0);
    }
    ExpectedOutputs expected = reference(c.spec, host, c.rows);

    Status launched = c.graph ? launchInGraph(*kernel, args, c.rows, error)
                              : kernel->launch(args, c.rows, nullptr);
    if (launched.ok())
      launched = context.synchronize(nullptr);
    if (!launched.ok()) {
      if (error.empty())
        error = launched.message();
      cleanup();
      return false;
    }

    // Compare every written element (and that padding stayed poisoned),
    // every input byte and every guard byte.
    double worst = 0;
    int64_t bad = 0;
    // Counts a bad element; describes only the first (the message costs
    // more than the check, and a broken kernel makes millions).
    auto report = [&](auto &&describe) {
      if (bad++ == 0 && error.empty())
        error = describe();
    };
    // Inputs an output overwrites: checked as that output.
    std::array<bool, kNumBufferSlots> overwritten{};
    for (const BufferSpec &buffer : specs)
      if (buffer.over)
        overwritten[static_cast<int>(*buffer.over)] = true;
    for (size_t i = 0; i < specs.size(); ++i) {
      const BufferSpec &buffer = specs[i];
      GuardedBuffer &guarded = device[at[i]];
      std::string name(getBufferSlotName(buffer.slot));
      std::vector<uint8_t> image(guarded.image.size());
      if (Status status = context.copyToHost(image.data(), guarded.base,
                                             image.size());
          !status) {
        error = status.message();
        cleanup();
        return false;
      }
      size_t dataEnd = image.size() - kGuardBytes;
      for (size_t at = 0; at < image.size(); ++at)
        if ((at < guarded.offset || at >= dataEnd) && image[at] != kGuardByte) {
          report([&] {
            return "guard byte " + std::to_string(at) + " of '" + name +
                   "' overwritten";
          });
          break;
        }
      if (!buffer.written) {
        if (!overwritten[static_cast<int>(buffer.slot)] &&
            std::memcmp(image.data(), guarded.image.data(), image.size()))
          report([&] { return "input '" + name + "' changed"; });
        continue;
      }
      HostTensor result(buffer.type, host[buffer.slot].size());
      std::copy_n(image.begin() + guarded.offset, result.bytes.size(),
                  result.bytes.begin());
      int64_t stride = host.strides[static_cast<int>(buffer.slot)];
      int64_t rows = buffer.rows2D ? c.rows : 1;
      int64_t width = buffer.rows2D ? stride : buffer.cols;
      const check::ExpectedRows &want = expected[buffer.slot];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t col = 0; col < width; ++col) {
          double got = result.get(r * width + col);
          if (col >= buffer.cols) {
            // Padding must be untouched: poison, or in place the input's.
            double before = buffer.over
                                ? host[*buffer.over].get(r * width + col)
                                : NAN;
            if (!(std::isnan(got) ? std::isnan(before) : got == before))
              report([&] { return "padding of '" + name + "' written"; });
            continue;
          }
          const check::Expected &e = want.at(r, col);
          if (std::isnan(e.value)) { // nothing to compute (zero rows)
            if (!std::isnan(got))
              report([&] { return "'" + name + "' written without rows"; });
            continue;
          }
          if (!e.accepts(got))
            report([&] {
              char text[192];
              std::snprintf(text, sizeof(text),
                            "%s[%lld][%lld] = %g, expected %g +- %.3g",
                            name.c_str(), static_cast<long long>(r),
                            static_cast<long long>(col), got, e.value,
                            e.tolerance);
              return std::string(text);
            });
          double err = std::fabs(got - e.value);
          if (!std::isnan(err))
            worst = std::max(worst, err);
        }
    }
    cleanup();
    LaunchConfig used;
    std::string kernelName = "none (no rows)";
    if (c.rows > 0 && kernel->getLaunchFor(args, c.rows, used).ok())
      kernelName = used.getMangledSuffix();
    if (bad) {
      error += " (" + std::to_string(bad) + " bad elements, kernel " +
               kernelName + ")";
      return false;
    }
    char text[96];
    std::snprintf(text, sizeof(text), "kernel %s, max |error| %.3g",
                  kernelName.c_str(), worst);
    error = text;
    return true;
  }

  Status launchInGraph(const Kernel &kernel, const LaunchArgs &args,
                       int64_t rows, std::string &error) {
    if (!graphs.streamCreate && !graphs.load())
      return Status::error(ErrorCode::NoDriver, "no CUDA graph entry points");
    void *stream = nullptr, *graph = nullptr, *exec = nullptr;
    if (graphs.streamCreate(&stream, 1) != 0)
      return Status::error(ErrorCode::DriverError, "cuStreamCreate failed");
    // Global capture mode: any call libnormjit must not make fails it. A
    // backward kernel's first launch on a stream allocates its partials, so
    // it runs once before the capture (normjit.h).
    Status status;
    if (kernel.getSpec().backward)
      status = kernel.launch(args, rows, stream);
    if (status.ok() &&
        graphs.beginCapture(stream, /*CU_STREAM_CAPTURE_MODE_GLOBAL=*/0) != 0)
      status = Status::error(ErrorCode::DriverError, "begin capture failed");
    if (status.ok())
      status = kernel.launch(args, rows, stream);
    if (graphs.endCapture(stream, &graph) != 0 && status.ok())
      status = Status::error(ErrorCode::DriverError, "end capture failed");
    if (status.ok() &&
        (graphs.instantiate(&exec, graph, 0) != 0 ||
         graphs.launch(exec, stream) != 0 || graphs.launch(exec, stream) != 0 ||
         graphs.synchronize(stream) != 0))
      status = Status::error(ErrorCode::DriverError, "graph replay failed");
    if (exec)
      graphs.execDestroy(exec);
    if (graph)
      graphs.graphDestroy(graph);
    graphs.streamDestroy(stream);
    if (!status.ok())
      error = status.message();
    return status;
  }

  Context &context;
  GraphApi graphs;
};

OpSpec makeSpec(OpSpec::Kind kind, int64_t hidden, ElementType type) {
  OpSpec spec;
  spec.kind = kind;
  spec.hidden = hidden;
  spec.input = spec.output = spec.param = spec.addendType = spec.skipType =
      type;
  // Column statistics have no weight (normalizeOpSpec makes them f32).
  spec.hasWeight = kind != OpSpec::Kind::BatchNormStats;
  return spec;
}

std::string named(const std::string &what, int64_t hidden, int64_t rows) {
  return what + " h" + std::to_string(hidden) + " rows " + std::to_string(rows);
}

/// FP8 outputs (e4m3, e5m2): vLLM's static and per-token quantization after
/// a residual add, per-token scales bounded by scale_ub, rows staged in
/// shared memory for the amax pass, a long static row streamed, and a CUDA
/// graph.
std::vector<Case> getFp8Cases(bool quick) {
  using Kind = OpSpec::Kind;
  const ElementType bf16 = ElementType::bf16;
  std::vector<Case> cases;
  auto fp8 = [&](Kind kind, int64_t hidden, ElementType output,
                 OutputScale scale) {
    OpSpec spec = makeSpec(kind, hidden, bf16);
    spec.output = output;
    spec.outputScale = scale;
    return spec;
  };
  OpSpec fixed = fp8(Kind::RMSNorm, quick ? 1000 : 4096,
                     ElementType::f8E4M3FN, OutputScale::Static);
  fixed.hasAddend = fixed.writeResidual = true;
  OpSpec token = fp8(Kind::RMSNorm, quick ? 1000 : 4096,
                     ElementType::f8E4M3FN, OutputScale::PerToken);
  token.hasAddend = token.writeResidual = true;
  if (quick) {
    cases.push_back({named("fused add+rms_norm -> e4m3, static", 1000, 3),
                     fixed, 3});
    cases.push_back({named("fused add+rms_norm -> e4m3, per token", 1000, 3),
                     token, 3});
    return cases;
  }
  for (int64_t rows : {1, 4096}) {
    cases.push_back(
        {named("fused add+rms_norm -> e4m3, static", 4096, rows), fixed, rows});
    cases.push_back({named("fused add+rms_norm -> e4m3, per token", 4096, rows),
                     token, rows});
  }
  OpSpec bounded = fp8(Kind::RMSNorm, 5120, ElementType::f8E5M2,
                       OutputScale::PerToken);
  bounded.scaleUpperBound = true;
  cases.push_back({named("rms_norm -> e5m2, per token, scale_ub", 5120, 1000),
                   bounded, 1000});
  OpSpec layer = fp8(Kind::LayerNorm, 8192, ElementType::f8E4M3FN,
                     OutputScale::PerToken);
  layer.hasBias = true;
  cases.push_back({named("layer_norm +bias -> e4m3, per token", 8192, 777),
                   layer, 777});
  OpSpec staged = fp8(Kind::RMSNorm, 40000, ElementType::f8E4M3FN,
                      OutputScale::PerToken);
  cases.push_back({named("rms_norm -> e4m3, per token, staged", 40000, 5),
                   staged, 5});
  OpSpec streamed = fp8(Kind::RMSNorm, 262144, ElementType::f8E5M2,
                        OutputScale::Static);
  cases.push_back({named("rms_norm -> e5m2, static, streamed", 262144, 3),
                   streamed, 3});
  Case graph{named("fused add+rms_norm -> e4m3 per token, CUDA graph", 4096,
                   256),
             token, 256};
  graph.graph = true;
  cases.push_back(graph);
  return cases;
}

/// In-place row kernels, outputs over the very buffers of their inputs:
/// vLLM's fused_add_rms_norm (residual_out over input, output over addend),
/// the other pairing with mean-var rows (every thread reads the first
/// element), rows staged in shared memory, a graph, strided rows.
std::vector<Case> getInPlaceCases(bool quick) {
  using Kind = OpSpec::Kind;
  const ElementType bf16 = ElementType::bf16;
  std::vector<Case> cases;
  OpSpec vllm = makeSpec(Kind::RMSNorm, quick ? 1000 : 4096, bf16);
  vllm.hasAddend = vllm.writeResidual = true;
  vllm.residualOver = RowOperand::Input;
  vllm.outputOver = RowOperand::Addend;
  if (quick) {
    cases.push_back({named("fused add+rms_norm in place", 1000, 3), vllm, 3});
    return cases;
  }
  for (int64_t rows : {1, 4096})
    cases.push_back(
        {named("fused add+rms_norm in place", 4096, rows), vllm, rows});
  OpSpec layer = makeSpec(Kind::LayerNorm, 5120, bf16);
  layer.hasAddend = layer.writeResidual = layer.hasBias = true;
  layer.residualOver = RowOperand::Addend;
  layer.outputOver = RowOperand::Input;
  cases.push_back({named("fused add+layer_norm in place", 5120, 1000), layer,
                   1000});
  OpSpec staged = vllm;
  staged.hidden = 65536;
  cases.push_back({named("fused add+rms_norm in place, staged", 65536, 3),
                   staged, 3});
  OpSpec norm = makeSpec(Kind::RMSNorm, 3072, bf16);
  norm.outputOver = RowOperand::Input;
  Case strided{named("rms_norm in place, strided (+64)", 3072, 300), norm,
               300};
  strided.extraStride = 64;
  cases.push_back(strided);
  Case graph{named("fused add+rms_norm in place, CUDA graph", 4096, 256),
             vllm, 256};
  graph.graph = true;
  cases.push_back(graph);
  return cases;
}

/// The training kernels: forward kernels saving their statistics, and the
/// backward launches (row kernel + column sums) of the common blocks at
/// model shapes, persistent grids looping (4096 rows), strides, a graph.
std::vector<Case> getTrainingCases(bool quick) {
  using Kind = OpSpec::Kind;
  const ElementType bf16 = ElementType::bf16, f32 = ElementType::f32;
  std::vector<Case> cases;
  auto backwardOf = [](OpSpec spec) {
    spec.backward = true;
    return spec;
  };
  OpSpec llama = makeSpec(Kind::RMSNorm, quick ? 1000 : 4096, bf16);
  OpSpec saving = llama;
  saving.hasAddend = saving.writeResidual = saving.saveStats = true;
  cases.push_back({named("fused add+rms_norm, saved rstd", llama.hidden, 77),
                   saving, 77});
  // The residual stream's gradient, DeepNorm's alpha, Gemma's (1 + w).
  OpSpec deep = backwardOf(llama);
  deep.hasAddend = deep.writeResidual = true;
  deep.alpha = 2.0;
  deep.weightOffset = 1.0;
  OpSpec layer = backwardOf(makeSpec(Kind::LayerNorm, quick ? 333 : 5120,
                                     bf16));
  layer.hasBias = true;
  layer.param = f32;
  OpSpec qkHeads = backwardOf(makeSpec(Kind::RMSNorm, 8 * 128, bf16));
  qkHeads.groups = 8;
  qkHeads.perHeadWeight = true;
  // GroupNorm over 32 groups (diffusion U-Nets' channels), each group's
  // weight and bias gradients in its own channels.
  OpSpec group = backwardOf(makeSpec(Kind::GroupNorm, quick ? 96 : 1280, bf16));
  group.groups = 32;
  group.hasBias = true;
  if (quick) {
    cases.push_back({named("group_norm backward 32 groups", group.hidden, 5),
                     group, 5});
    cases.push_back({named("rms_norm backward", llama.hidden, 5),
                     backwardOf(llama), 5});
    cases.push_back({named("rms_norm backward +deepnorm", 1000, 3), deep, 3});
    cases.push_back({named("layer_norm backward +bias", 333, 4), layer, 4});
    cases.push_back({named("qk_norm heads backward 8 x 128", 1024, 3),
                     qkHeads, 3});
    return cases;
  }
  for (int64_t rows : {int64_t(0), int64_t(1), int64_t(1000), int64_t(4096)})
    cases.push_back({named("rms_norm backward", 4096, rows),
                     backwardOf(llama), rows});
  for (int64_t hidden : {768, 3001, 8192}) {
    OpSpec odd = backwardOf(makeSpec(Kind::RMSNorm, hidden, bf16));
    cases.push_back({named("rms_norm backward", hidden, 2049), odd, 2049});
  }
  // Rows beyond the registers: v and dy staged in shared memory (Llama 3
  // 405B's 16384, GPT-3's 12288, an odd width at scalar accesses).
  for (int64_t hidden : {12288, 16384, 16383}) {
    OpSpec wide = backwardOf(makeSpec(Kind::RMSNorm, hidden, bf16));
    cases.push_back({named("rms_norm backward, staged", hidden, 1100), wide,
                     1100});
  }
  OpSpec wideLayer = backwardOf(makeSpec(Kind::LayerNorm, 16384, f32));
  wideLayer.hasBias = true;
  wideLayer.param = f32;
  cases.push_back({named("layer_norm backward +bias f32, staged", 16384, 600),
                   wideLayer, 600});
  OpSpec wideDeep = deep;
  wideDeep.hidden = 16384;
  cases.push_back({named("rms_norm backward +deepnorm, staged", 16384, 300),
                   wideDeep, 300});
  cases.push_back({named("rms_norm backward +deepnorm", 4096, 1000), deep,
                   1000});
  OpSpec weightless = backwardOf(makeSpec(Kind::RMSNorm, 2048, bf16));
  weightless.hasWeight = false;
  cases.push_back({named("rms_norm backward, no weight", 2048, 300),
                   weightless, 300});
  cases.push_back({named("layer_norm backward +bias f32 params", 5120, 4096),
                   layer, 4096});
  cases.push_back({named("l2_norm backward", 768, 500),
                   backwardOf(makeSpec(Kind::L2Norm, 768, bf16)), 500});
  cases.push_back({named("qk_norm heads backward 8 x 128", 1024, 4096),
                   qkHeads, 4096});
  cases.push_back({named("group_norm backward 32 groups", 1280, 4096), group,
                   4096});
  OpSpec groupOdd = group;
  groupOdd.hidden = 960;
  groupOdd.groups = 3;
  groupOdd.param = f32;
  cases.push_back({named("group_norm backward 3 groups f32 params", 960, 777),
                   groupOdd, 777});
  Case strided{"rms_norm backward, strided rows (+64)", deep, 100};
  strided.extraStride = 64;
  cases.push_back(strided);
  Case graph{"rms_norm backward in a CUDA graph", backwardOf(llama), 512};
  graph.graph = true;
  cases.push_back(graph);
  return cases;
}

/// Every kernel kind, odd and large hidden sizes, every row bucket and zero
/// rows, dtypes, layouts.
std::vector<Case> getFullSweep() {
  using Kind = OpSpec::Kind;
  const ElementType bf16 = ElementType::bf16, f16 = ElementType::f16,
                    f32 = ElementType::f32;
  std::vector<Case> cases;
  for (int64_t hidden : {128, 769, 1152, 2048, 4096, 7168, 8192, 16384})
    for (int64_t rows : {int64_t(1), int64_t(37), int64_t(1000),
                         hidden >= 8192 ? int64_t(1100) : int64_t(3000)})
      cases.push_back({named("rms_norm", hidden, rows),
                       makeSpec(Kind::RMSNorm, hidden, bf16), rows});
  for (int64_t hidden : {1152, 3001, 5120})
    cases.push_back({named("rms_norm f16", hidden, 2000),
                     makeSpec(Kind::RMSNorm, hidden, f16), 2000});
  OpSpec fused = makeSpec(Kind::RMSNorm, 4096, bf16);
  fused.hasAddend = fused.writeResidual = true;
  for (int64_t rows : {1, 64, 4096})
    cases.push_back({named("fused add+rms_norm", 4096, rows), fused, rows});
  for (int64_t hidden : {769, 3001, 16384}) {
    OpSpec odd = fused;
    odd.hidden = hidden;
    cases.push_back({named("fused add+rms_norm", hidden, 777), odd, 777});
  }
  OpSpec fusedF16 = fused;
  fusedF16.input = fusedF16.output = fusedF16.param = fusedF16.addendType = f16;
  fusedF16.hidden = 2048;
  cases.push_back({named("fused add+rms_norm f16", 2048, 3000), fusedF16, 3000});
  OpSpec postNorm = fused;
  postNorm.writeResidual = false;
  cases.push_back({named("post-norm (add, no residual out)", 4096, 500),
                   postNorm, 500});
  OpSpec deep = fused;
  deep.alpha = 2.0;
  deep.hidden = 7168;
  cases.push_back({"DeepNorm alpha 2 h7168", deep, 500});
  OpSpec deepLayer = makeSpec(Kind::LayerNorm, 1024, bf16);
  deepLayer.hasAddend = deepLayer.writeResidual = deepLayer.hasBias = true;
  deepLayer.alpha = 1.5;
  cases.push_back({"DeepNorm layer_norm alpha 1.5 h1024", deepLayer, 300});
  OpSpec f32Residual = fused;
  f32Residual.f32Residual = true;
  cases.push_back({"fused add, f32 residual", f32Residual, 300});
  OpSpec gemma = makeSpec(Kind::RMSNorm, 2048, bf16);
  gemma.weightOffset = 1.0;
  cases.push_back({"Gemma (1+w)", gemma, 100});
  OpSpec weightless = makeSpec(Kind::RMSNorm, 3072, bf16);
  weightless.hasWeight = false;
  cases.push_back({"weightless rms_norm", weightless, 100});
  OpSpec layer = makeSpec(Kind::LayerNorm, 2048, f16);
  layer.hasBias = true;
  layer.param = f32;
  cases.push_back({"layer_norm f16, f32 params, bias", layer, 777});
  cases.push_back(
      {"layer_norm f32 h1024", makeSpec(Kind::LayerNorm, 1024, f32), 50});
  for (int64_t hidden : {769, 4096, 8192})
    for (bool bias : {false, true}) {
      OpSpec spec = makeSpec(Kind::LayerNorm, hidden, bf16);
      spec.hasBias = bias;
      for (int64_t rows : {1, 1000})
        cases.push_back(
            {named(bias ? "layer_norm +bias" : "layer_norm", hidden, rows),
             spec, rows});
    }
  cases.push_back({"l2_norm f32 h256", makeSpec(Kind::L2Norm, 256, f32), 2000});
  cases.push_back(
      {named("l2_norm", 4097, 33), makeSpec(Kind::L2Norm, 4097, bf16), 33});
  OpSpec cast = makeSpec(Kind::RMSNorm, 4096, bf16);
  cast.output = f32;
  cases.push_back({"rms_norm bf16 -> f32", cast, 64});
  OpSpec sandwich = fused;
  sandwich.hasSkip = true;
  cases.push_back({"Sandwich (skip)", sandwich, 128});
  OpSpec sandwichOdd = sandwich;
  sandwichOdd.hidden = 1001;
  cases.push_back({named("Sandwich (skip)", 1001, 65), sandwichOdd, 65});
  OpSpec group = makeSpec(Kind::GroupNorm, 512, f32);
  group.groups = 32;
  group.hasBias = true;
  cases.push_back({"group_norm 32 groups", group, 200});
  OpSpec groupOdd = makeSpec(Kind::GroupNorm, 1000, f16);
  groupOdd.groups = 8;
  cases.push_back({"group_norm f16 8 groups h1000", groupOdd, 300});
  OpSpec batch = makeSpec(Kind::BatchNormInference, 256, f16);
  batch.hasBias = true;
  batch.param = f32;
  cases.push_back({named("batch_norm_inference f16", 256, 1000), batch, 1000});
  OpSpec batchOdd = makeSpec(Kind::BatchNormInference, 769, bf16);
  cases.push_back({named("batch_norm_inference", 769, 33), batchOdd, 33});
  OpSpec stats = makeSpec(Kind::BatchNormStats, 256, f32);
  for (int64_t rows : {1, 5000})
    cases.push_back({named("batch_norm_stats f32", 256, rows), stats, rows});
  OpSpec statsOdd = stats;
  statsOdd.input = bf16;
  statsOdd.hidden = 769;
  cases.push_back({named("batch_norm_stats", 769, 3), statsOdd, 3});
  OpSpec qk = makeSpec(Kind::QKNormPrologue, 128, bf16);
  qk.numQHeads = 32;
  qk.numKvHeads = 8;
  for (int64_t tokens : {1, 300, 4096})
    cases.push_back(
        {"qk_norm 32/8 x 128 tokens " + std::to_string(tokens), qk, tokens});
  OpSpec qkL2 = qk;
  qkL2.qkStatistic = Statistic::L2;
  cases.push_back({"qk_norm l2", qkL2, 77});
  // Gemma 3 1B: (1 + w) weights, 4 query heads and one key/value head of 256.
  OpSpec qkGemma = qk;
  qkGemma.hidden = 256;
  qkGemma.numQHeads = 4;
  qkGemma.numKvHeads = 1;
  qkGemma.weightOffset = 1.0;
  cases.push_back({"qk_norm gemma 4/1 x 256", qkGemma, 333});
  // ViT-22B: LayerNorm per head.
  OpSpec qkLayer = qk;
  qkLayer.hidden = 64;
  qkLayer.numQHeads = qkLayer.numKvHeads = 12;
  qkLayer.qkStatistic = Statistic::MeanVar;
  qkLayer.eps = 1e-5;
  cases.push_back({"qk_norm layer 12/12 x 64", qkLayer, 197});
  OpSpec qkSmall = qk;
  qkSmall.hidden = 64;
  qkSmall.numQHeads = qkSmall.numKvHeads = 16;
  qkSmall.hasWeight = false;
  qkSmall.input = qkSmall.output = f16;
  cases.push_back({"qk_norm f16 16/16 x 64, no weights", qkSmall, 129});
  // Rows too long for registers: staged in shared memory, or streamed (a
  // second pass reads v back).
  cases.push_back({named("rms_norm, long row (staged or streamed)", 70000, 3),
                   makeSpec(Kind::RMSNorm, 70000, bf16), 3});
  OpSpec streamed = fused;
  streamed.hidden = 131072;
  cases.push_back({named("fused add+rms_norm, streamed", 131072, 2), streamed,
                   2});
  OpSpec streamedLayer = makeSpec(Kind::LayerNorm, 65537, f32);
  streamedLayer.hasBias = true;
  cases.push_back({named("layer_norm f32 +bias, streamed", 65537, 2),
                   streamedLayer, 2});
  // Zero rows launch nothing and write nothing.
  for (const OpSpec &spec : {makeSpec(Kind::RMSNorm, 4096, bf16), fused, qk,
                             stats})
    cases.push_back({"zero rows: " + describeOpSpec(spec), spec, 0});
  // Layouts: misaligned pointers (the scalar variant), strided rows, graphs.
  Case misaligned{"misaligned input (+2 bytes)",
                  makeSpec(Kind::RMSNorm, 4096, bf16), 100};
  misaligned.misalignBytes = 2;
  cases.push_back(misaligned);
  Case strided{"strided rows (+64)", fused, 100};
  strided.extraStride = 64;
  cases.push_back(strided);
  Case oddStride{"odd row stride (+3)", makeSpec(Kind::RMSNorm, 1024, bf16),
                 100};
  oddStride.extraStride = 3;
  cases.push_back(oddStride);
  Case qkStrided{"qk_norm strided qkv (+128)", qk, 50};
  qkStrided.extraStride = 128;
  cases.push_back(qkStrided);
  Case graph{"CUDA graph capture", fused, 256};
  graph.graph = true;
  cases.push_back(graph);
  for (Case &inPlace : getInPlaceCases(/*quick=*/false))
    cases.push_back(std::move(inPlace));
  for (Case &quantized : getFp8Cases(/*quick=*/false))
    cases.push_back(std::move(quantized));
  for (Case &training : getTrainingCases(/*quick=*/false))
    cases.push_back(std::move(training));
  return cases;
}

/// One small case per kernel kind and layout: quick enough to run under
/// compute-sanitizer.
std::vector<Case> getQuickSweep() {
  using Kind = OpSpec::Kind;
  const ElementType bf16 = ElementType::bf16, f16 = ElementType::f16,
                    f32 = ElementType::f32;
  std::vector<Case> cases;
  cases.push_back(
      {named("rms_norm", 769, 5), makeSpec(Kind::RMSNorm, 769, bf16), 5});
  cases.push_back(
      {named("rms_norm", 4096, 70), makeSpec(Kind::RMSNorm, 4096, bf16), 70});
  OpSpec fused = makeSpec(Kind::RMSNorm, 1000, bf16);
  fused.hasAddend = fused.writeResidual = true;
  cases.push_back({named("fused add+rms_norm", 1000, 3), fused, 3});
  OpSpec layer = makeSpec(Kind::LayerNorm, 333, f16);
  layer.hasBias = true;
  cases.push_back({named("layer_norm f16 +bias", 333, 4), layer, 4});
  cases.push_back(
      {named("l2_norm f32", 64, 7), makeSpec(Kind::L2Norm, 64, f32), 7});
  OpSpec group = makeSpec(Kind::GroupNorm, 96, bf16);
  group.groups = 3;
  cases.push_back({named("group_norm 3 groups", 96, 5), group, 5});
  OpSpec batch = makeSpec(Kind::BatchNormInference, 40, f32);
  cases.push_back({named("batch_norm_inference f32", 40, 6), batch, 6});
  OpSpec stats = makeSpec(Kind::BatchNormStats, 72, bf16);
  cases.push_back({named("batch_norm_stats", 72, 9), stats, 9});
  OpSpec sandwich = fused;
  sandwich.hasSkip = true;
  cases.push_back({named("Sandwich (skip)", 1000, 2), sandwich, 2});
  OpSpec qk = makeSpec(Kind::QKNormPrologue, 64, bf16);
  qk.numQHeads = 4;
  qk.numKvHeads = 2;
  Case qkStrided{"qk_norm 4/2 x 64 strided qkv (+8)", qk, 3};
  qkStrided.extraStride = 8;
  cases.push_back(qkStrided);
  Case misaligned{"misaligned input (+2 bytes)",
                  makeSpec(Kind::RMSNorm, 512, bf16), 3};
  misaligned.misalignBytes = 2;
  cases.push_back(misaligned);
  cases.push_back({"zero rows", makeSpec(Kind::RMSNorm, 256, bf16), 0});
  cases.push_back({named("rms_norm, long row (staged or streamed)", 70000, 2),
                   makeSpec(Kind::RMSNorm, 70000, bf16), 2});
  for (Case &inPlace : getInPlaceCases(/*quick=*/true))
    cases.push_back(std::move(inPlace));
  for (Case &quantized : getFp8Cases(/*quick=*/true))
    cases.push_back(std::move(quantized));
  for (Case &training : getTrainingCases(/*quick=*/true))
    cases.push_back(std::move(training));
  return cases;
}

/// Cases for a context with programmatic dependent launch: a row kernel
/// (weights before the wait), in place, the QK-Norm prologue (waits first),
/// a backward launch (row kernel, then its column sums), a graph.
std::vector<Case> getPdlCases(bool quick) {
  using Kind = OpSpec::Kind;
  const ElementType bf16 = ElementType::bf16;
  OpSpec fused = makeSpec(Kind::RMSNorm, quick ? 1000 : 4096, bf16);
  fused.hasAddend = fused.writeResidual = true;
  std::vector<Case> cases = {
      {named("pdl: fused add+rms_norm", fused.hidden, quick ? 3 : 4096),
       fused, quick ? 3 : 4096}};
  if (quick)
    return cases;
  OpSpec vllm = fused;
  vllm.residualOver = RowOperand::Input;
  vllm.outputOver = RowOperand::Addend;
  cases.push_back({named("pdl: fused add+rms_norm in place", 4096, 4096), vllm,
                   4096});
  OpSpec qk = makeSpec(Kind::QKNormPrologue, 128, bf16);
  qk.numQHeads = 32;
  qk.numKvHeads = 8;
  cases.push_back({"pdl: qk_norm 32/8 x 128 tokens 4096", qk, 4096});
  OpSpec backward = makeSpec(Kind::RMSNorm, 4096, bf16);
  backward.backward = true;
  cases.push_back({named("pdl: rms_norm backward", 4096, 4096), backward,
                   4096});
  Case graph{named("pdl: fused add+rms_norm, CUDA graph", 4096, 256), fused,
             256};
  graph.graph = true;
  cases.push_back(graph);
  return cases;
}

} // namespace

/// The sm_90a attention family (#34) on a compute capability 9.0 device:
/// small varlen causal cases (every tile tail, an empty sequence) against
/// the float64 attention, its output poisoned first and the rows past the
/// tokens guarded. A mismatch of a tensor map, a transaction count or a
/// descriptor shows here first: a wrong value, or a wait that traps.
/// Returns the failures; adds the cases run to `total`.
int checkWarpgroupAttention(const ContextOptions &base, bool quick,
                            const std::string &filter, int &total) {
  ContextOptions options = base;
  options.chip = "sm_90a";
  std::unique_ptr<Context> context;
  if (Status status = Context::create(options, context); !status) {
    std::printf("sm_90a attention: not run: %s\n", status.message().c_str());
    return 0;
  }
  if (context->getDeviceInfo().computeMajor != 9 ||
      context->getDeviceInfo().computeMinor != 0) {
    std::printf("sm_90a attention: not run: needs compute capability 9.0\n");
    return 0;
  }
  struct Shape {
    const char *name;
    int64_t headDim, warpgroups, blockN;
    bool overlap;
  };
  const Shape shapes[] = {{"d128 2wg n128 overlapped", 128, 2, 128, true},
                          {"d64 1wg n64", 64, 1, 64, false},
                          {"d64 3wg n80 overlapped", 64, 3, 80, true},
                          {"d256 2wg n64", 256, 2, 64, false}};
  const std::vector<int64_t> cu = {0, 130, 130, 131, 333};
  const int64_t tokens = cu.back(), heads = 4, kvHeads = 2;
  int failed = 0;
  for (const Shape &shape : shapes) {
    // --quick: the first only.
    if (quick && &shape != shapes)
      break;
    std::string name = std::string("sm_90a attention ") + shape.name;
    if (!filter.empty() && name.find(filter) == std::string::npos)
      continue;
    ++total;
    OpSpec spec;
    spec.kind = OpKind::Attention;
    spec.hidden = shape.headDim;
    spec.numQHeads = heads;
    spec.numKvHeads = kvHeads;
    spec.qkStatistic = Statistic::None;
    spec.hasWeight = false;
    spec.causal = true;
    spec.scale = 1.0 / std::sqrt(static_cast<double>(shape.headDim));
    spec.input = spec.output = ElementType::bf16;
    LaunchConfig launch;
    launch.vector = 8;
    launch.threadsPerRow = getAttentionThreadsPerRow(shape.headDim);
    launch.warps = 4 * (shape.warpgroups + 1);
    launch.rowsPerCta = 64 * shape.warpgroups;
    launch.blockN = shape.blockN;
    launch.stages = 2;
    launch.warpgroups = shape.warpgroups;
    launch.overlap = shape.overlap;
    KernelOptions kernelOptions;
    kernelOptions.tune = false;
    kernelOptions.launch = launch;
    auto fail = [&](const std::string &why) {
      std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
      ++failed;
    };
    std::shared_ptr<const Kernel> kernel;
    if (Status status = context->getKernel(spec, kernelOptions, kernel);
        !status) {
      fail(status.message());
      continue;
    }
    int64_t qCols = heads * shape.headDim, kvCols = kvHeads * shape.headDim;
    HostTensor q(ElementType::bf16, tokens * qCols),
        k(ElementType::bf16, tokens * kvCols),
        v(ElementType::bf16, tokens * kvCols),
        out(ElementType::bf16, (tokens + 1) * qCols);
    for (HostTensor *tensor : {&q, &k, &v})
      for (size_t i = 0; i < tensor->size(); ++i)
        tensor->set(i, nextRandom());
    out.poison();
    std::vector<int32_t> offsets(cu.begin(), cu.end());
    std::vector<void *> device(5, nullptr);
    const void *host[5] = {q.bytes.data(), k.bytes.data(), v.bytes.data(),
                           offsets.data(), out.bytes.data()};
    size_t bytes[5] = {q.bytes.size(), k.bytes.size(), v.bytes.size(),
                       offsets.size() * 4, out.bytes.size()};
    Status status = Status::success();
    for (int i = 0; i < 5 && status; ++i) {
      status = context->allocate(bytes[i], device[i]);
      if (status)
        status = context->copyToDevice(device[i], host[i], bytes[i]);
    }
    if (status) {
      LaunchArgs args;
      args.set(BufferSlot::Q, device[0], ElementType::bf16, qCols)
          .set(BufferSlot::K, device[1], ElementType::bf16, kvCols)
          .set(BufferSlot::V, device[2], ElementType::bf16, kvCols)
          .set(BufferSlot::CuSeqlens, device[3], ElementType::i32,
               static_cast<int64_t>(offsets.size()))
          .set(BufferSlot::Output, device[4], ElementType::bf16, qCols);
      status = kernel->launch(args, tokens, nullptr);
    }
    if (status)
      status = context->synchronize(nullptr);
    if (status)
      status = context->copyToHost(out.bytes.data(), device[4], bytes[4]);
    for (void *pointer : device)
      if (pointer)
        (void)context->release(pointer);
    if (!status) {
      fail(status.message());
      continue;
    }
    check::AttentionProblem problem = check::getAttentionProblem(spec, cu);
    check::AttentionOperands operands;
    operands.q = {ElementType::bf16, q.bytes.data(), tokens, qCols, qCols};
    operands.k = {ElementType::bf16, k.bytes.data(), tokens, kvCols, kvCols};
    operands.v = {ElementType::bf16, v.bytes.data(), tokens, kvCols, kvCols};
    check::AttentionExpected expected =
        check::referenceAttention(problem, operands);
    int64_t wrong = 0;
    std::string first;
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t col = 0; col < qCols; ++col) {
        double actual = out.get(t * qCols + col);
        const check::Expected &e = expected.output.at(t, col);
        if (!e.accepts(actual) && wrong++ == 0)
          first = "token " + std::to_string(t) + " column " +
                  std::to_string(col) + ": " + std::to_string(actual) +
                  ", expected " + std::to_string(e.value);
      }
    // The row after the last token stays as it was.
    for (int64_t col = 0; col < qCols; ++col)
      if (!std::isnan(out.get(tokens * qCols + col)) && wrong++ == 0)
        first = "the guard row was written";
    if (wrong) {
      fail(std::to_string(wrong) + " wrong values; first " + first);
      continue;
    }
    std::printf("PASS %s: kernel %s\n", name.c_str(),
                launch.getMangledSuffix().c_str());
  }
  return failed;
}

int main(int argc, char **argv) {
  bool quick = false, tuning = true;
  std::string filter, driver;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--no-tune") {
      tuning = false;
    } else if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (arg == "--driver" && i + 1 < argc) {
      driver = argv[++i];
    } else {
      std::fprintf(stderr, "usage: normjit-gpu-check [--quick] [--no-tune] "
                           "[--filter TEXT] [--driver LIB]\n");
      return 2;
    }
  }
  ContextOptions options;
  options.driverLibrary = driver;
  std::unique_ptr<Context> context;
  if (Status status = Context::create(options, context); !status) {
    std::fprintf(stderr, "normjit-gpu-check: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("device: %s\n",
              context->getDeviceInfo().getTuningIdentity().c_str());
  // Tuning under a sanitizer would time thousands of instrumented launches.
  std::vector<bool> modes = {false};
  if (tuning && !quick)
    modes = {true, false};
  Checker checker(*context);
  int failed = 0, total = 0;
  for (const Case &c : quick ? getQuickSweep() : getFullSweep()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos)
      continue;
    for (bool tune : modes) {
      ++total;
      failed += !checker.run(c, tune);
    }
  }
  // Programmatic dependent launch (compute capability 9.0 on): the same
  // kernels built to wait for their predecessor, launched with programmatic
  // stream serialization one after another.
  ContextOptions pdlOptions = options;
  pdlOptions.pdl = true;
  std::unique_ptr<Context> pdlContext;
  if (Status status = Context::create(pdlOptions, pdlContext); !status) {
    std::printf("pdl: not run: %s\n", status.message().c_str());
  } else {
    Checker pdlChecker(*pdlContext);
    for (const Case &c : getPdlCases(quick)) {
      if (!filter.empty() && c.name.find(filter) == std::string::npos)
        continue;
      ++total;
      failed += !pdlChecker.run(c, /*tune=*/false);
    }
  }
  failed += checkWarpgroupAttention(options, quick, filter, total);
  std::printf("%d of %d cases passed\n", total - failed, total);
  return failed || total == 0 ? 1 : 0;
}
