//===- AttentionCheck.cpp - attention kernels run and checked -------------===//

#include "tools/norm-cpu-check/AttentionCheck.h"

#include "compiler/Compiler.h"
#include "compiler/model/AttentionReference.h"
#include "compiler/model/Buffers.h"
#include "compiler/model/FloatFormats.h"
#include "tools/norm-cpu-check/Buffers.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <tuple>

using namespace norm;
using namespace norm::check;

LaunchConfig norm::check::getForcedLaunch(const OpSpec &spec, int64_t warps,
                                          int64_t blockN, int64_t stages,
                                          int64_t rowTiles) {
  LaunchConfig launch = getHeuristicLaunch(spec, -1);
  int64_t heuristicTiles = launch.getRowTiles();
  if (warps)
    launch.warps = warps;
  if (blockN)
    launch.blockN = blockN;
  if (stages)
    launch.stages = stages;
  if (rowTiles) {
    launch.rowsPerCta = 16 * rowTiles * launch.warps;
    return launch;
  }
  return fitAttentionRows(spec, launch, heuristicTiles, /*maxSharedBytes=*/0);
}

LaunchConfig norm::check::getWarpgroupLaunch(const OpSpec &spec,
                                             int64_t warpgroups, int64_t blockN,
                                             int64_t stages, bool overlap) {
  LaunchConfig launch;
  launch.vector = 16 / getElementBytes(spec.input);
  launch.threadsPerRow = getAttentionThreadsPerRow(spec.hidden);
  launch.warps = 4 * (warpgroups + 1);
  launch.rowsPerCta = 64 * warpgroups;
  launch.blockN = blockN;
  launch.stages = stages;
  launch.warpgroups = warpgroups;
  launch.overlap = overlap;
  return launch;
}

Status norm::check::compileForHost(const OpSpec &spec,
                                   const LaunchConfig &launch,
                                   KernelSource &source,
                                   std::unique_ptr<HostKernels> &kernels,
                                   const TargetOptions &target) {
  std::unique_ptr<KernelProvider> provider = createGeneratedKernels(target);
  if (Status built = provider->build(spec, launch, source); !built)
    return built;
  HostCompileOptions options;
  options.cpu = "x86-64";
  options.optLevel = 0;
  return HostKernels::compile(source.mlir, options, kernels);
}

Status AttentionRunner::compile(const OpSpec &spec,
                                const LaunchConfig &launch) {
  if (engine.simulator.root.empty())
    return compileForHost(spec, launch, source, host, engine.target);
  CompiledKernel compiled;
  if (Status built = compileKernel(spec, launch, engine.target, compiled);
      !built)
    return built;
  source.signature = compiled.signature;
  ptx = std::move(compiled.ptx);
  return Status::success();
}

Status AttentionRunner::launch(const std::vector<SimBuffer> &buffers,
                               const std::vector<int64_t> &integers,
                               int64_t gridX) {
  if (!host)
    return runOnPtxsim(engine.simulator, ptx, source.signature, buffers,
                       integers, gridX);
  std::vector<void *> pointers;
  for (const SimBuffer &buffer : buffers)
    pointers.push_back(buffer.data);
  return host->launch(source.signature.name, pointers, integers, gridX);
}

double norm::check::getLlama3Frequency(double theta, int64_t rotaryDim,
                                       int64_t pair) {
  constexpr double kFactor = 8, kLow = 1, kHigh = 4, kContext = 8192;
  constexpr double kPi = 3.141592653589793;
  double frequency = getRopeFrequency(theta, rotaryDim, pair);
  double wavelength = 2 * kPi / frequency;
  if (wavelength < kContext / kHigh)
    return frequency;
  if (wavelength > kContext / kLow)
    return frequency / kFactor;
  double smooth = (kContext / wavelength - kLow) / (kHigh - kLow);
  return (1 - smooth) * frequency / kFactor + smooth * frequency;
}

std::vector<float> norm::check::makeRopeTable(double theta, int64_t rotaryDim,
                                              int64_t rows, int64_t stride) {
  int64_t half = rotaryDim / 2;
  std::vector<float> table(rows * stride, 0.0f);
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double angle =
          static_cast<double>(p) * getLlama3Frequency(theta, rotaryDim, i);
      table[p * stride + i] = static_cast<float>(std::cos(angle));
      table[p * stride + half + i] = static_cast<float>(std::sin(angle));
    }
  return table;
}

namespace {
/// The spec of `kind` for a prefill or decode case: the options both kinds
/// of case share.
template <typename Case> OpSpec getCaseSpec(OpKind kind, const Case &c) {
  OpSpec spec =
      makeAttentionSpec(kind, c.type, c.headDim, c.heads, c.kvHeads, c.norm,
                        c.weights, c.offset, c.rope, c.rotaryDim, c.ropeTheta);
  spec.ropeTable = c.table;
  spec.ropePositions = c.positions;
  spec.ropeFirst = c.ropeFirst;
  spec.qkWeightPerHead = c.weightPerHead;
  return spec;
}
} // namespace

OpSpec norm::check::getSpec(const AttentionCase &c) {
  OpSpec spec = getCaseSpec(OpKind::Attention, c);
  spec.causal = c.causal;
  spec.writeLse = c.lse;
  spec.keysPrepared = c.preparedKeys;
  return spec;
}

OpSpec norm::check::getSpec(const DecodeCase &c) {
  OpSpec spec = getCaseSpec(OpKind::AttentionDecode, c);
  if (c.keysOnly) {
    spec = getKeyPrepareSpec(spec);
    spec.writeCache = true;
  }
  spec.cacheBlockSize = c.blockSize;
  spec.pageIndptr = c.blockSize && c.pageIndptr;
  spec.fp8Cache = c.fp8Cache;
  spec.cacheScalePerHead = c.fp8Cache && c.scalePerHead && c.kvHeads > 1;
  return spec;
}

std::string AttentionResult::getMessage() const {
  std::string message;
  for (const std::string &failure : failures)
    message += (message.empty() ? "" : "\n") + failure;
  return message;
}

namespace {
/// The value checks of a case: the first few mismatches described, the
/// rest counted, the worst ratio kept.
class ValueCheck {
public:
  explicit ValueCheck(AttentionResult &result) : result(result) {}

  /// Whether `e` accepts `actual`, element `row`, `col` of `buffer` of
  /// element type `type`.
  bool compare(const std::string &buffer, int64_t row, int64_t col,
               ElementType type, double actual, const Expected &e) {
    if (!std::isnan(actual) && e.tolerance > 0.0) {
      double &worst = result.worstRatio[type];
      worst = std::max(worst, std::fabs(actual - e.value) / e.tolerance);
    }
    if (e.accepts(actual))
      return true;
    char text[256];
    std::snprintf(text, sizeof(text), "%.9g, expected %.9g +- %.3g", actual,
                  e.value, e.tolerance);
    describe(buffer, row, col, text);
    return false;
  }

  /// A value the case must not have produced, with why.
  void reject(const std::string &buffer, int64_t row, int64_t col,
              const std::string &what) {
    describe(buffer, row, col, what);
  }

  /// The count of all mismatches where more than the described.
  void finish() {
    if (wrong > kDescribed)
      result.failures.push_back(std::to_string(wrong) + " wrong values in all");
  }

private:
  static constexpr int64_t kDescribed = 3;

  void describe(const std::string &buffer, int64_t row, int64_t col,
                const std::string &what) {
    if (wrong++ < kDescribed)
      result.failures.push_back(buffer + "[" + std::to_string(row) + "][" +
                                std::to_string(col) + "] = " + what);
  }

  AttentionResult &result;
  int64_t wrong = 0;
};

/// Writes `fault` into `output` (`rows` written rows of it) or the first
/// input.
void injectFault(AttentionFault fault, GuardedBuffer &output, int64_t rows,
                 GuardedBuffer &firstInput) {
  switch (fault) {
  case AttentionFault::None:
    return;
  case AttentionFault::Guard:
    output.corruptGuard();
    return;
  case AttentionFault::Input:
    firstInput.fill(0);
    return;
  default:
    break;
  }
  if (rows == 0)
    return;
  if (fault == AttentionFault::Gap) {
    output.storeBits(0, output.getCols(), 0);
  } else if (fault == AttentionFault::Nan) {
    output.storeBits(0, 0, getOutputPoison(output.getType()));
  } else {
    double value = output.load(0, 0);
    output.store(0, 0, value * 1.25 + std::copysign(0.5, value));
  }
}

/// Inputs by name with their bytes before the launch; each must be the
/// same after.
class InputSnapshots {
public:
  void add(const std::string &name, const GuardedBuffer &buffer) {
    inputs.push_back({name, &buffer, buffer.snapshot()});
  }
  void check(AttentionResult &result) const {
    for (const auto &[name, buffer, bytes] : inputs)
      if (!buffer->matches(bytes))
        result.failures.push_back("input '" + name + "' was modified");
  }

private:
  std::vector<
      std::tuple<std::string, const GuardedBuffer *, std::vector<uint8_t>>>
      inputs;
};

void checkStrayWrites(const GuardedBuffer &buffer, const std::string &name,
                      AttentionResult &result) {
  if (auto stray = buffer.findStrayWrite(getOutputPoison(buffer.getType())))
    result.failures.push_back("stray write to '" + name + "': " + *stray);
}

AttentionResult failed(AttentionResult &result, const std::string &message) {
  result.failures.push_back(message);
  return result;
}

/// The QK-Norm weights of `spec` for `heads` heads (a row per head, or one
/// they share), drawn from `random`.
GuardedBuffer makeWeights(const OpSpec &spec, int64_t heads, Random &random) {
  int64_t cols = spec.hidden * (spec.qkWeightPerHead ? heads : 1);
  GuardedBuffer weights(spec.input, 1, cols, cols);
  weights.fill(getInputGuard(spec.input));
  weights.fillRows([&](int64_t) { return random.uniform(-0.5, 1.5); });
  return weights;
}

/// The offsets of sequences of `lengths` (cu_seqlens): 0 and their running
/// sums.
std::vector<int64_t> getOffsets(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> offsets = {0};
  for (int64_t length : lengths)
    offsets.push_back(offsets.back() + length);
  return offsets;
}

/// An i32 buffer of `values` (at least one element).
GuardedBuffer makeIndices(const std::vector<int64_t> &values) {
  int64_t cols = std::max<int64_t>(values.size(), 1);
  GuardedBuffer indices(ElementType::i32, 1, cols, cols);
  indices.fill(getInputGuard(ElementType::i32));
  for (size_t i = 0; i < values.size(); ++i)
    indices.store(0, i, static_cast<double>(values[i]));
  return indices;
}

/// The rope table of `values` (makeRopeTable's rows, `stride` apart).
GuardedBuffer makeTableBuffer(const std::vector<float> &values, int64_t rows,
                              int64_t rotaryDim, int64_t stride) {
  GuardedBuffer table(ElementType::f32, rows, rotaryDim, stride);
  table.fill(getInputGuard(ElementType::f32));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t col = 0; col < rotaryDim; ++col)
      table.store(p, col, values[p * stride + col]);
  return table;
}

/// A kernel's arguments: buffers with their row strides by parameter name,
/// integers by parameter kind.
class Arguments {
public:
  void add(const std::string &name, const void *data, int64_t bytes,
           int64_t stride) {
    buffers[name] = {SimBuffer{const_cast<void *>(data), bytes}, stride};
  }
  void add(const std::string &name, GuardedBuffer &buffer) {
    add(name, buffer.data(), buffer.getBytesFromData(), buffer.getStride());
  }
  void set(KernelParam::Kind kind, int64_t value) { integers[kind] = value; }

  /// The buffers and integers of `signature`'s parameters, in their order;
  /// fails on a parameter that is not here.
  Status bind(const KernelSignature &signature, std::vector<SimBuffer> &bound,
              std::vector<int64_t> &boundIntegers) const {
    for (const KernelParam &param : signature.params) {
      // A stride is named after its buffer: "<buffer>_stride".
      bool stride = param.kind == KernelParam::Kind::RowStride;
      std::string name =
          stride ? param.name.substr(0, param.name.size() - 7) : param.name;
      auto buffer = buffers.find(name);
      auto integer = integers.find(param.kind);
      bool byPointer = param.kind == KernelParam::Kind::Buffer ||
                       param.kind == KernelParam::Kind::TensorMap;
      if (byPointer && buffer != buffers.end())
        bound.push_back(buffer->second.first);
      else if (stride && buffer != buffers.end())
        boundIntegers.push_back(buffer->second.second);
      else if (!stride && integer != integers.end())
        boundIntegers.push_back(integer->second);
      else
        return Status::invalid("unexpected parameter " + param.name + " of " +
                               signature.name);
    }
    return Status::success();
  }

private:
  std::map<std::string, std::pair<SimBuffer, int64_t>> buffers;
  std::map<KernelParam::Kind, int64_t> integers;
};

} // namespace

AttentionResult norm::check::runAttentionCase(const AttentionCase &c,
                                              const AttentionEngine &engine,
                                              AttentionFault fault) {
  AttentionResult result;
  OpSpec spec = getSpec(c);
  LaunchConfig launch =
      c.warpgroups
          ? getWarpgroupLaunch(spec, c.warpgroups, c.blockN ? c.blockN : 128,
                               c.stages ? c.stages : 2, c.overlap)
          : getForcedLaunch(spec, c.warps, c.blockN, c.stages, c.rowTiles);
  AttentionEngine caseEngine = engine;
  if (c.warpgroups)
    caseEngine.target.chip = "sm_90a";
  AttentionRunner runner(caseEngine);
  if (Status compiled = runner.compile(spec, launch); !compiled)
    return failed(result, "no kernel: " + compiled.message());
  const KernelSignature &signature = runner.getSignature();
  result.kernel = signature.name;
  ++result.kernelsCompiled;

  int64_t d = c.headDim, qCols = c.heads * d, kvCols = c.kvHeads * d;
  std::vector<int64_t> cu = getOffsets(c.lengths);
  int64_t tokens = cu.back(), batch = c.lengths.size();

  // Inputs: separate tensors with a gap after each row, or one packed
  // projection read through three column offsets.
  Random random(0x5eed + d * 31 + c.heads);
  auto draw = [&](int64_t) { return random.uniform(-2.0, 2.0); };
  int64_t packedCols = qCols + 2 * kvCols;
  std::unique_ptr<GuardedBuffer> qkv, q, k, v;
  const void *qData, *kData, *vData;
  int64_t qBytes, kBytes, vBytes;
  int64_t qStride, kStride, vStride;
  if (c.packed) {
    qkv = std::make_unique<GuardedBuffer>(c.type, tokens, packedCols,
                                          packedCols + 8);
    qkv->fill(getInputGuard(c.type));
    qkv->fillRows(draw);
    auto at = [&](int64_t col) {
      return static_cast<const char *>(qkv->data()) +
             col * getElementBytes(c.type);
    };
    qData = at(0), kData = at(qCols), vData = at(qCols + kvCols);
    auto bytesFrom = [&](int64_t col) {
      return qkv->getBytesFromData() - col * getElementBytes(c.type);
    };
    qBytes = bytesFrom(0), kBytes = bytesFrom(qCols);
    vBytes = bytesFrom(qCols + kvCols);
    qStride = kStride = vStride = qkv->getStride();
  } else {
    q = std::make_unique<GuardedBuffer>(c.type, tokens, qCols, qCols + 8);
    k = std::make_unique<GuardedBuffer>(c.type, tokens, kvCols, kvCols + 16);
    v = std::make_unique<GuardedBuffer>(c.type, tokens, kvCols, kvCols);
    for (GuardedBuffer *buffer : {q.get(), k.get(), v.get()}) {
      buffer->fill(getInputGuard(c.type));
      buffer->fillRows(draw);
    }
    if (c.adversarial) {
      // An outlier channel in q and k (scores of hundreds: a softmax that
      // one key rules), tiny query rows, spikes and constant rows in v.
      auto channel = [&](int64_t row, int64_t col) -> std::optional<double> {
        if (col % d == 5)
          return 12.0 * static_cast<double>(row % 5 - 2);
        return std::nullopt;
      };
      q->fillRows([&](int64_t row, int64_t col) {
        double x = channel(row, col).value_or(random.uniform(-2.0, 2.0));
        return row % 9 == 4 ? x * 1e-3 : x;
      });
      k->fillRows([&](int64_t row, int64_t col) {
        return channel(row + 1, col).value_or(random.uniform(-2.0, 2.0));
      });
      v->fillRows([&](int64_t row, int64_t col) {
        if (row % 11 == 4)
          return 1.0;
        if (row % 7 == 3 && col % d == 0)
          return 500.0;
        return random.uniform(-2.0, 2.0);
      });
    }
    qData = q->data(), kData = k->data(), vData = v->data();
    qBytes = q->getBytesFromData(), kBytes = k->getBytesFromData();
    vBytes = v->getBytesFromData();
    qStride = q->getStride(), kStride = k->getStride(),
    vStride = v->getStride();
  }
  GuardedBuffer qWeight = makeWeights(spec, c.heads, random);
  GuardedBuffer kWeight = makeWeights(spec, c.kvHeads, random);
  GuardedBuffer offsets = makeIndices(cu);
  GuardedBuffer output(c.type, tokens, qCols, qCols + 8);
  output.fill(getOutputPoison(c.type));
  GuardedBuffer lse(ElementType::f32, tokens, c.heads, c.heads + 4);
  lse.fill(getOutputPoison(ElementType::f32));

  // Explicit positions: sequence b from 300 + 37 b, the later ones
  // backwards; the last token of each outside the table when asked (one
  // past its end, or -1), which the reference takes as position 0.
  std::vector<int64_t> positions(tokens), referencePositions;
  std::vector<bool> poisoned(tokens, false);
  int64_t tableRows = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t) {
      int64_t i = t - cu[b], length = cu[b + 1] - cu[b];
      positions[t] = 300 + 37 * b + (b == 0 ? i : length - 1 - i);
      tableRows = std::max(tableRows, positions[t] + 3);
    }
  if (!c.positions)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = cu[b]; t < cu[b + 1]; ++t)
        tableRows = std::max(tableRows, t - cu[b] + 1);
  referencePositions = positions;
  if (c.badPositions)
    for (int64_t b = 0; b < batch; ++b)
      if (cu[b + 1] > cu[b]) {
        int64_t last = cu[b + 1] - 1;
        positions[last] = b % 2 ? -1 : tableRows;
        referencePositions[last] = 0;
        poisoned[last] = true;
      }
  GuardedBuffer positionBuffer = makeIndices(positions);
  int64_t rotaryDim = c.rotaryDim ? c.rotaryDim : d;
  int64_t tableStride = rotaryDim + 4;
  std::vector<float> tableValues =
      makeRopeTable(c.ropeTheta, rotaryDim, tableRows, tableStride);
  GuardedBuffer table =
      makeTableBuffer(tableValues, tableRows, rotaryDim, tableStride);
  std::vector<float> contiguousTable;
  for (int64_t p = 0; p < tableRows; ++p)
    contiguousTable.insert(contiguousTable.end(),
                           tableValues.begin() + p * tableStride,
                           tableValues.begin() + p * tableStride + rotaryDim);

  InputSnapshots inputs;
  if (qkv)
    inputs.add("qkv", *qkv);
  else
    for (auto [name, buffer] :
         {std::pair{"q", q.get()}, std::pair{"k", k.get()},
          std::pair{"v", v.get()}})
      inputs.add(name, *buffer);
  // What the K-prepare and attention kernels share.
  Arguments shared;
  shared.set(KernelParam::Kind::Rows, tokens);
  shared.set(KernelParam::Kind::Batch, batch);
  shared.set(KernelParam::Kind::RopeTableRows, tableRows);
  for (auto [name, buffer] :
       {std::pair{"q_weight", &qWeight}, std::pair{"k_weight", &kWeight},
        std::pair{"cu_seqlens", &offsets},
        std::pair{"positions", &positionBuffer},
        std::pair{"rope_table", &table}}) {
    inputs.add(name, *buffer);
    shared.add(name, *buffer);
  }

  // Prepared keys: the K-prepare kernel writes them (poisoned first) from k,
  // and the attention kernel reads them instead of k.
  GuardedBuffer prepared(c.type, tokens, kvCols, kvCols + 24);
  prepared.fill(getOutputPoison(c.type));
  if (c.preparedKeys) {
    OpSpec keySpec = getKeyPrepareSpec(spec);
    AttentionRunner keyRunner(engine);
    if (Status keyCompiled =
            keyRunner.compile(keySpec, getHeuristicLaunch(keySpec, -1));
        !keyCompiled)
      return failed(result, "no K-prepare kernel: " + keyCompiled.message());
    ++result.kernelsCompiled;
    Arguments keyArguments = shared;
    keyArguments.add("k", kData, kBytes, kStride);
    keyArguments.add("k_out", prepared);
    std::vector<SimBuffer> keyBuffers;
    std::vector<int64_t> keyIntegers;
    if (Status bound = keyArguments.bind(keyRunner.getSignature(), keyBuffers,
                                         keyIntegers);
        !bound)
      return failed(result, bound.message());
    // One kernel row per token and kv head.
    if (Status keysRan =
            keyRunner.launch(keyBuffers, keyIntegers,
                             keyRunner.getSignature().getGridX(tokens, 1));
        !keysRan)
      return failed(result, "K-prepare launch failed: " + keysRan.message());
    checkStrayWrites(prepared, "k_out", result);
  }
  Arguments arguments = shared;
  arguments.add("q", qData, qBytes, qStride);
  if (c.preparedKeys)
    arguments.add("k", prepared);
  else
    arguments.add("k", kData, kBytes, kStride);
  arguments.add("v", vData, vBytes, vStride);
  arguments.add("output", output);
  arguments.add("lse", lse);
  // The GPU's tensor maps of k and v (the host path reads the buffers).
  std::vector<int64_t> tensorMaps(32, 0);
  arguments.add("k_tensor_map", tensorMaps.data(), 128, 0);
  arguments.add("v_tensor_map", tensorMaps.data() + 16, 128, 0);
  std::vector<SimBuffer> buffers;
  std::vector<int64_t> integers;
  if (Status bound = arguments.bind(signature, buffers, integers); !bound)
    return failed(result, bound.message());
  if (Status ran =
          runner.launch(buffers, integers, signature.getGridX(tokens, batch));
      !ran)
    return failed(result, "launch failed: " + ran.message());
  injectFault(fault, output, tokens, qkv ? *qkv : *q);

  // The reference of the unfused graph.
  AttentionProblem problem = getAttentionProblem(spec, cu);
  if (c.positions)
    problem.positions = referencePositions;
  if (c.table)
    problem.ropeTable = contiguousTable;
  AttentionOperands operands;
  operands.q = {c.type, qData, tokens, qCols, qStride};
  operands.k = {c.type, kData, tokens, kvCols, kStride};
  operands.v = {c.type, vData, tokens, kvCols, vStride};
  if (c.weights) {
    operands.qWeight = qWeight.paramView();
    operands.kWeight = kWeight.paramView();
  }
  if (Status valid = verifyAttentionProblem(problem, operands); !valid)
    return failed(result, "no reference: " + valid.message());
  AttentionExpected expected = referenceAttention(problem, operands);

  ValueCheck values(result);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < qCols; ++col) {
      double actual = output.load(t, col);
      // A query outside the table: NaN, whatever the reference says.
      if (!poisoned[t])
        values.compare("output", t, col, c.type, actual,
                       expected.output.at(t, col));
      else if (!std::isnan(actual))
        values.reject("output", t, col,
                      std::to_string(actual) +
                          ", expected NaN (its position lies outside the "
                          "table)");
    }
  if (c.lse)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < c.heads; ++h)
        if (!poisoned[t])
          values.compare("lse", t, h, ElementType::f32, lse.load(t, h),
                         expected.lse.at(h, t));
  values.finish();

  checkStrayWrites(output, "output", result);
  if (c.lse)
    checkStrayWrites(lse, "lse", result);
  inputs.check(result);
  return result;
}

AttentionResult norm::check::runDecodeCase(const DecodeCase &c,
                                           const AttentionEngine &engine,
                                           AttentionFault fault) {
  AttentionResult result;
  OpSpec spec = getSpec(c);
  LaunchConfig launch =
      c.keysOnly ? getHeuristicLaunch(spec, -1)
                 : getForcedLaunch(spec, c.warps, c.blockN, c.stages);
  AttentionRunner runner(engine);
  if (Status compiled = runner.compile(spec, launch); !compiled)
    return failed(result, "no kernel: " + compiled.message());
  const KernelSignature &signature = runner.getSignature();
  result.kernel = signature.name;
  ++result.kernelsCompiled;
  // The decode operation of the case, which the reference takes.
  DecodeCase step = c;
  step.keysOnly = false;
  OpSpec decode = getSpec(step);

  int64_t d = c.headDim, qCols = c.heads * d, kvCols = c.kvHeads * d;
  int64_t batch = c.newTokens.size(), capacity = c.capacity;
  std::vector<int64_t> cu = getOffsets(c.newTokens);
  int64_t tokens = cu.back();

  Random random(0xdec0de + d * 7 + c.heads);
  // The cache's place of each sequence's positions.
  DecodeProblem problem;
  problem.cacheSeqlens = c.cacheLengths;
  int64_t cacheRows = batch * capacity;
  if (int64_t page = c.blockSize) {
    int64_t maxBlocks = std::max<int64_t>((capacity + page - 1) / page, 1);
    capacity = maxBlocks * page;
    problem.blockSize = page;
    problem.cacheBlocks = batch * maxBlocks + 3;
    cacheRows = problem.cacheBlocks * page;
    std::vector<int64_t> pages(problem.cacheBlocks);
    std::iota(pages.begin(), pages.end(), 0);
    for (int64_t i = problem.cacheBlocks - 1; i > 0; --i)
      std::swap(pages[i], pages[random.next() % (i + 1)]);
    problem.blockTables.assign(batch * maxBlocks, -1);
    int64_t next = 0;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t cachedPages = (c.cacheLengths[b] + page - 1) / page;
      int64_t usedPages = std::min(
          (c.cacheLengths[b] + c.newTokens[b] + page - 1) / page, maxBlocks);
      for (int64_t i = 0; i < maxBlocks; ++i) {
        int64_t &entry = problem.blockTables[b * maxBlocks + i];
        // Pages only the append reaches: every third sequence's unset, the
        // next's past the cache; the rest of a table unset or garbage.
        if (i < cachedPages || (i < usedPages && b % 3 == 0))
          entry = pages[next++];
        else if (i < usedPages)
          entry = b % 3 == 1 ? -1 : problem.cacheBlocks + 5;
        else
          entry = b % 2 ? -1 : INT32_MIN + 7;
      }
    }
    if (c.pageIndptr) {
      // FlashInfer's ragged form of the table: odd sequences' pages end
      // with their caches.
      // Sequences' ranges abut (kv_indptr); an unused page before the
      // first and after the last.
      int64_t spare = pages[next];
      std::vector<int64_t> ragged = {spare};
      for (int64_t b = 0; b < batch; ++b) {
        int64_t cachedPages = (c.cacheLengths[b] + page - 1) / page;
        int64_t count = b % 2 ? cachedPages : maxBlocks;
        problem.pageIndptr.push_back(ragged.size());
        for (int64_t i = 0; i < count; ++i)
          ragged.push_back(problem.blockTables[b * maxBlocks + i]);
      }
      problem.pageIndptr.push_back(ragged.size());
      ragged.push_back(spare);
      problem.blockTables = std::move(ragged);
    }
  }
  problem.cacheCapacity = capacity;
  auto draw = [&](int64_t) { return random.uniform(-2.0, 2.0); };
  GuardedBuffer q(c.type, tokens, qCols, qCols + 8);
  GuardedBuffer k(c.type, tokens, kvCols, kvCols + 16);
  GuardedBuffer v(c.type, tokens, kvCols, kvCols);
  for (GuardedBuffer *buffer : {&q, &k, &v}) {
    buffer->fill(getInputGuard(c.type));
    buffer->fillRows(draw);
  }
  GuardedBuffer qWeight = makeWeights(decode, c.heads, random);
  GuardedBuffer kWeight = makeWeights(decode, c.kvHeads, random);
  GuardedBuffer offsets = makeIndices(cu);
  GuardedBuffer lengths = makeIndices(c.cacheLengths);
  GuardedBuffer pageTable = makeIndices(problem.blockTables);
  GuardedBuffer pageIndptr = makeIndices(problem.pageIndptr);

  // Positions and the table of their angles.
  std::vector<int64_t> positions(tokens);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t)
      positions[t] = c.cacheLengths[b] + (t - cu[b]) + (c.positions ? 5 : 0);
  GuardedBuffer positionBuffer = makeIndices(positions);
  int64_t rotaryDim = c.rotaryDim ? c.rotaryDim : d;
  int64_t tableRows = *std::max_element(positions.begin(), positions.end()) + 2;
  std::vector<float> tableValues =
      makeRopeTable(c.ropeTheta, rotaryDim, tableRows, rotaryDim);
  GuardedBuffer table =
      makeTableBuffer(tableValues, tableRows, rotaryDim, rotaryDim);

  // The caches: every row holds values (rows past a sequence's length
  // too, which the kernel must neither read nor write), and a copy of
  // what they must hold afterwards.
  // An FP8 cache holds e4m3 codes over scales near 1/100 (a second kv
  // head's 1/500, whose new keys saturate).
  ElementType cacheType = c.fp8Cache ? ElementType::f8E4M3FN : c.type;
  auto makeCache = [&](uint64_t seed) {
    auto cache = std::make_unique<GuardedBuffer>(cacheType, cacheRows, kvCols,
                                                 kvCols + 16);
    cache->fill(getInputGuard(cacheType));
    Random values(seed);
    double range = c.fp8Cache ? 2.5 / 0.01 : 2.5;
    cache->fillRows([&](int64_t) { return values.uniform(-range, range); });
    return cache;
  };
  if (c.fp8Cache)
    for (std::vector<double> *scales : {&problem.kScales, &problem.vScales})
      for (int64_t g = 0; g < (getSpec(c).cacheScalePerHead ? c.kvHeads : 1);
           ++g)
        scales->push_back(
            static_cast<float>(g == 1 ? 0.002 : random.uniform(0.005, 0.02)));
  auto makeScales = [&](const std::vector<double> &scales) {
    int64_t count = std::max<int64_t>(scales.size(), 1);
    GuardedBuffer buffer(ElementType::f32, 1, count, count);
    buffer.fill(getInputGuard(ElementType::f32));
    for (size_t i = 0; i < scales.size(); ++i)
      buffer.store(0, i, scales[i]);
    return buffer;
  };
  GuardedBuffer kScale = makeScales(problem.kScales);
  GuardedBuffer vScale = makeScales(problem.vScales);
  std::unique_ptr<GuardedBuffer> kCache = makeCache(1), vCache = makeCache(2);
  std::unique_ptr<GuardedBuffer> kWant = makeCache(1), vWant = makeCache(2);

  DecodeShape shape{tokens, batch, capacity, c.splits};
  int64_t rowsPerCta = signature.launch.rowsPerCta;
  int64_t workspaceLength =
      getLaunchLength(decode, BufferSlot::Workspace, rowsPerCta, shape);
  int64_t semaphoreCount =
      getLaunchLength(decode, BufferSlot::Semaphores, rowsPerCta, shape);
  GuardedBuffer workspace(ElementType::f32, 1,
                          std::max<int64_t>(workspaceLength, 1),
                          std::max<int64_t>(workspaceLength, 1));
  workspace.fill(getOutputPoison(ElementType::f32));
  GuardedBuffer semaphores(ElementType::i32, 1, semaphoreCount, semaphoreCount);
  semaphores.fill(getInputGuard(ElementType::i32));
  semaphores.fillRows([](int64_t) { return 0.0; });
  std::vector<uint8_t> zeroSemaphores = semaphores.snapshot();
  GuardedBuffer output(c.type, tokens, qCols, qCols + 8);

  InputSnapshots inputs;
  Arguments arguments;
  for (auto [name, buffer] :
       {std::pair{"q", &q}, std::pair{"k", &k}, std::pair{"v", &v},
        std::pair{"q_weight", &qWeight}, std::pair{"k_weight", &kWeight},
        std::pair{"cu_seqlens", &offsets}, std::pair{"cache_seqlens", &lengths},
        std::pair{"positions", &positionBuffer},
        std::pair{"rope_table", &table}, std::pair{"block_tables", &pageTable},
        std::pair{"page_indptr", &pageIndptr}, std::pair{"k_scale", &kScale},
        std::pair{"v_scale", &vScale}}) {
    inputs.add(name, *buffer);
    arguments.add(name, *buffer);
  }
  for (auto [name, buffer] :
       {std::pair{"output", &output}, std::pair{"k_cache", kCache.get()},
        std::pair{"v_cache", vCache.get()}, std::pair{"workspace", &workspace},
        std::pair{"semaphores", &semaphores}})
    arguments.add(name, *buffer);
  arguments.set(KernelParam::Kind::Rows, tokens);
  arguments.set(KernelParam::Kind::Batch, batch);
  arguments.set(KernelParam::Kind::KvSplits, c.splits);
  arguments.set(KernelParam::Kind::CacheCapacity, capacity);
  arguments.set(KernelParam::Kind::CacheBlocks, problem.cacheBlocks);
  arguments.set(KernelParam::Kind::RopeTableRows, tableRows);
  std::vector<SimBuffer> buffers;
  std::vector<int64_t> integers;
  if (Status bound = arguments.bind(signature, buffers, integers); !bound)
    return failed(result, bound.message());
  int64_t grid = signature.getGridX(tokens, batch, c.keysOnly ? 1 : c.splits);
  std::vector<uint8_t> firstOutput;
  for (int run = 0; run < 2; ++run) {
    output.fill(getOutputPoison(c.type));
    if (Status ran = runner.launch(buffers, integers, grid); !ran)
      return failed(result, "launch failed: " + ran.message());
    if (!semaphores.matches(zeroSemaphores))
      result.failures.push_back("semaphores not reset after launch " +
                                std::to_string(run));
    if (run == 0)
      firstOutput = output.snapshot();
    else if (!output.matches(firstOutput))
      result.failures.push_back("a second launch differs");
  }
  // K-prepare writes no output: the faults go to its cache.
  injectFault(fault, c.keysOnly ? *kCache : output, tokens, q);

  problem.step = getAttentionProblem(decode, cu);
  if (c.positions)
    problem.step.positions = positions;
  if (c.table)
    problem.step.ropeTable = tableValues;
  DecodeOperands operands;
  operands.step.q = q.view();
  operands.step.k = k.view();
  operands.step.v = v.view();
  if (c.weights) {
    operands.step.qWeight = qWeight.paramView();
    operands.step.kWeight = kWeight.paramView();
  }
  operands.kCache = kWant->view();
  operands.vCache = vWant->view();
  if (Status valid = verifyDecodeProblem(problem, operands); !valid)
    return failed(result, "no reference: " + valid.message());
  DecodeExpected expected = referenceDecode(problem, operands);

  ValueCheck values(result);
  // The appended rows; the copies take the kernel's value where the
  // reference allows either neighbour, and must then match byte for byte.
  // An FP8 cache's keys: any code the reference's key may round to, which
  // the attention then reads (the output's reference uses the kernel's).
  auto appended = [&](const char *name, GuardedBuffer &cache,
                      GuardedBuffer &want, const Expected &e, int64_t t,
                      int64_t row, int64_t col) {
    double actual = cache.load(row, col);
    if (!c.fp8Cache) {
      bool ok = values.compare(name, row, col, c.type, actual, e);
      want.store(row, col, ok && e.tolerance > 0 ? actual : e.value);
      return;
    }
    bool key = name[0] == 'k';
    const std::vector<double> &scales = key ? problem.kScales : problem.vScales;
    double scale = scales[scales.size() == 1 ? 0 : col / d];
    double low = quantizeFp8(c.type, e.value - e.tolerance, scale);
    double high = quantizeFp8(c.type, e.value + e.tolerance, scale);
    if (!(actual >= low && actual <= high))
      values.reject(name, row, col,
                    std::to_string(actual) + ", expected e4m3 in [" +
                        std::to_string(low) + ", " + std::to_string(high) +
                        "]");
    want.store(row, col, actual);
    if (key)
      problem.newKeyCodes[t * kvCols + col] = actual;
  };
  if (c.fp8Cache)
    problem.newKeyCodes.assign(tokens * kvCols, std::nan(""));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t) {
      // Rows past the capacity or on a page not the sequence's are
      // dropped: every other row stays.
      int64_t position = c.cacheLengths[b] + (t - cu[b]);
      bool own = position < getCacheCapacity(problem, b);
      int64_t row = own ? getCacheRow(problem, b, position, &own) : 0;
      if (!own)
        continue;
      for (auto [name, cache, want, rows] :
           {std::tuple{"k_cache", kCache.get(), kWant.get(),
                       &expected.kAppended},
            std::tuple{"v_cache", vCache.get(), vWant.get(),
                       &expected.vAppended}})
        for (int64_t col = 0; col < kvCols; ++col)
          appended(name, *cache, *want, rows->at(t, col), t, row, col);
    }
  // An FP8 cache's output reads the keys the kernel appended.
  if (c.fp8Cache && !c.keysOnly)
    expected.output = referenceDecode(problem, operands).output;
  for (int64_t t = 0; t < tokens && !c.keysOnly; ++t)
    for (int64_t col = 0; col < qCols; ++col)
      values.compare("output", t, col, c.type, output.load(t, col),
                     expected.output.at(t, col));
  values.finish();
  if (!kCache->matches(kWant->snapshot()))
    result.failures.push_back("k_cache changed outside the appended rows");
  if (!vCache->matches(vWant->snapshot()))
    result.failures.push_back("v_cache changed outside the appended rows");
  checkStrayWrites(output, "output", result);
  checkStrayWrites(workspace, "workspace", result);
  inputs.check(result);
  return result;
}
