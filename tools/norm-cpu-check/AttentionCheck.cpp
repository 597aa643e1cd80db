//===- AttentionCheck.cpp - attention kernels run and checked -------------===//

#include "tools/norm-cpu-check/AttentionCheck.h"

#include "compiler/Compiler.h"
#include "compiler/model/AttentionReference.h"
#include "compiler/model/Buffers.h"
#include "compiler/model/FloatFormats.h"
#include "tools/norm-cpu-check/Buffers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
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

Status norm::check::compileForHost(const OpSpec &spec,
                                   const LaunchConfig &launch,
                                   KernelSource &source,
                                   std::unique_ptr<HostKernels> &kernels) {
  std::unique_ptr<KernelProvider> provider = createGeneratedKernels();
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
    return compileForHost(spec, launch, source, host);
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

OpSpec norm::check::getSpec(const AttentionCase &c) {
  OpSpec spec = makeAttentionSpec(OpKind::Attention, c.type, c.headDim, c.heads,
                                  c.kvHeads, c.norm, c.weights, c.offset,
                                  c.rope, c.rotaryDim, c.ropeTheta);
  spec.causal = c.causal;
  spec.writeLse = c.lse;
  spec.ropeTable = c.table;
  spec.ropePositions = c.positions;
  spec.ropeFirst = c.ropeFirst;
  spec.qkWeightPerHead = c.weightPerHead;
  spec.keysPrepared = c.preparedKeys;
  return spec;
}

OpSpec norm::check::getSpec(const DecodeCase &c) {
  OpSpec spec = makeAttentionSpec(OpKind::AttentionDecode, c.type, c.headDim,
                                  c.heads, c.kvHeads, c.norm, c.weights,
                                  c.offset, c.rope, c.rotaryDim, c.ropeTheta);
  spec.ropeTable = c.table;
  spec.ropePositions = c.positions;
  spec.ropeFirst = c.ropeFirst;
  spec.qkWeightPerHead = c.weightPerHead;
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
} // namespace

AttentionResult norm::check::runAttentionCase(const AttentionCase &c,
                                              const AttentionEngine &engine,
                                              AttentionFault fault) {
  AttentionResult result;
  OpSpec spec = getSpec(c);
  LaunchConfig launch =
      getForcedLaunch(spec, c.warps, c.blockN, c.stages, c.rowTiles);
  AttentionRunner runner(engine);
  if (Status compiled = runner.compile(spec, launch); !compiled)
    return failed(result, "no kernel: " + compiled.message());
  const KernelSignature &signature = runner.getSignature();
  result.kernel = signature.name;
  ++result.kernelsCompiled;

  int64_t d = c.headDim, qCols = c.heads * d, kvCols = c.kvHeads * d;
  std::vector<int64_t> cu = {0};
  for (int64_t length : c.lengths)
    cu.push_back(cu.back() + length);
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
    qData = q->data(), kData = k->data(), vData = v->data();
    qBytes = q->getBytesFromData(), kBytes = k->getBytesFromData();
    vBytes = v->getBytesFromData();
    qStride = q->getStride(), kStride = k->getStride(),
    vStride = v->getStride();
  }
  int64_t qWeights = d * (c.weightPerHead ? c.heads : 1);
  int64_t kWeights = d * (c.weightPerHead ? c.kvHeads : 1);
  GuardedBuffer qWeight(c.type, 1, qWeights, qWeights);
  GuardedBuffer kWeight(c.type, 1, kWeights, kWeights);
  for (GuardedBuffer *w : {&qWeight, &kWeight}) {
    w->fill(getInputGuard(c.type));
    w->fillRows([&](int64_t) { return random.uniform(-0.5, 1.5); });
  }
  GuardedBuffer offsets(ElementType::i32, 1, batch + 1, batch + 1);
  offsets.fill(getInputGuard(ElementType::i32));
  for (int64_t i = 0; i <= batch; ++i)
    offsets.store(0, i, static_cast<double>(cu[i]));
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
  GuardedBuffer positionBuffer(ElementType::i32, 1,
                               std::max<int64_t>(tokens, 1),
                               std::max<int64_t>(tokens, 1));
  positionBuffer.fill(getInputGuard(ElementType::i32));
  for (int64_t t = 0; t < tokens; ++t)
    positionBuffer.store(0, t, static_cast<double>(positions[t]));
  int64_t rotaryDim = c.rotaryDim ? c.rotaryDim : d;
  int64_t tableStride = rotaryDim + 4;
  std::vector<float> tableValues =
      makeRopeTable(c.ropeTheta, rotaryDim, tableRows, tableStride);
  GuardedBuffer table(ElementType::f32, tableRows, rotaryDim, tableStride);
  table.fill(getInputGuard(ElementType::f32));
  std::vector<float> contiguousTable;
  for (int64_t p = 0; p < tableRows; ++p)
    for (int64_t col = 0; col < rotaryDim; ++col) {
      table.store(p, col, tableValues[p * tableStride + col]);
      contiguousTable.push_back(tableValues[p * tableStride + col]);
    }

  InputSnapshots inputs;
  if (qkv)
    inputs.add("qkv", *qkv);
  else
    for (auto [name, buffer] :
         {std::pair{"q", q.get()}, std::pair{"k", k.get()},
          std::pair{"v", v.get()}})
      inputs.add(name, *buffer);
  inputs.add("q_weight", qWeight);
  inputs.add("k_weight", kWeight);
  inputs.add("cu_seqlens", offsets);
  inputs.add("positions", positionBuffer);
  inputs.add("rope_table", table);

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
    std::vector<SimBuffer> keyBuffers;
    std::vector<int64_t> keyIntegers;
    for (const KernelParam &param : keyRunner.getSignature().params) {
      const std::string &n = param.name;
      switch (param.kind) {
      case KernelParam::Kind::Rows:
        keyIntegers.push_back(tokens);
        continue;
      case KernelParam::Kind::Batch:
        keyIntegers.push_back(batch);
        continue;
      case KernelParam::Kind::RopeTableRows:
        keyIntegers.push_back(tableRows);
        continue;
      case KernelParam::Kind::RowStride:
        keyIntegers.push_back(n == "k_stride"            ? kStride
                              : n == "k_out_stride"      ? prepared.getStride()
                              : n == "rope_table_stride" ? table.getStride()
                                                         : -1);
        if (keyIntegers.back() < 0)
          return failed(result, "unexpected K-prepare parameter " + n);
        continue;
      default:
        break;
      }
      SimBuffer buffer =
          n == "k" ? SimBuffer{const_cast<void *>(kData), kBytes}
          : n == "k_weight"
              ? SimBuffer{kWeight.data(), kWeight.getBytesFromData()}
          : n == "positions" ? SimBuffer{positionBuffer.data(),
                                         positionBuffer.getBytesFromData()}
          : n == "cu_seqlens"
              ? SimBuffer{offsets.data(), offsets.getBytesFromData()}
          : n == "rope_table"
              ? SimBuffer{table.data(), table.getBytesFromData()}
          : n == "k_out"
              ? SimBuffer{prepared.data(), prepared.getBytesFromData()}
              : SimBuffer();
      if (!buffer.data)
        return failed(result, "unexpected K-prepare parameter " + n);
      keyBuffers.push_back(buffer);
    }
    // One kernel row per token and kv head.
    if (Status keysRan =
            keyRunner.launch(keyBuffers, keyIntegers,
                             keyRunner.getSignature().getGridX(tokens, 1));
        !keysRan)
      return failed(result, "K-prepare launch failed: " + keysRan.message());
    checkStrayWrites(prepared, "k_out", result);
  }
  const void *attentionK = c.preparedKeys ? prepared.data() : kData;
  int64_t attentionKBytes =
      c.preparedKeys ? prepared.getBytesFromData() : kBytes;
  int64_t attentionKStride = c.preparedKeys ? prepared.getStride() : kStride;

  // Parameters in signature order.
  std::vector<SimBuffer> buffers;
  std::vector<int64_t> integers;
  for (const KernelParam &param : signature.params) {
    if (param.kind == KernelParam::Kind::Rows) {
      integers.push_back(tokens);
      continue;
    }
    if (param.kind == KernelParam::Kind::Batch) {
      integers.push_back(batch);
      continue;
    }
    if (param.kind == KernelParam::Kind::RopeTableRows) {
      integers.push_back(tableRows);
      continue;
    }
    if (param.kind == KernelParam::Kind::RowStride) {
      const std::string &n = param.name;
      integers.push_back(n == "q_stride"            ? qStride
                         : n == "k_stride"          ? attentionKStride
                         : n == "v_stride"          ? vStride
                         : n == "output_stride"     ? output.getStride()
                         : n == "rope_table_stride" ? table.getStride()
                                                    : lse.getStride());
      continue;
    }
    const std::string &n = param.name;
    auto whole = [](GuardedBuffer &buffer) {
      return SimBuffer{buffer.data(), buffer.getBytesFromData()};
    };
    auto slice = [](const void *data, int64_t bytes) {
      return SimBuffer{const_cast<void *>(data), bytes};
    };
    SimBuffer buffer = n == "q"            ? slice(qData, qBytes)
                       : n == "k"          ? slice(attentionK, attentionKBytes)
                       : n == "v"          ? slice(vData, vBytes)
                       : n == "q_weight"   ? whole(qWeight)
                       : n == "k_weight"   ? whole(kWeight)
                       : n == "cu_seqlens" ? whole(offsets)
                       : n == "positions"  ? whole(positionBuffer)
                       : n == "rope_table" ? whole(table)
                       : n == "output"     ? whole(output)
                       : n == "lse"        ? whole(lse)
                                           : SimBuffer();
    if (!buffer.data)
      return failed(result, "unexpected parameter " + n);
    buffers.push_back(buffer);
  }
  if (Status ran =
          runner.launch(buffers, integers, signature.getGridX(tokens, batch));
      !ran)
    return failed(result, "launch failed: " + ran.message());
  injectFault(fault, output, tokens, qkv ? *qkv : *q);

  // The reference of the unfused graph.
  AttentionProblem problem;
  problem.type = c.type;
  problem.numHeads = c.heads;
  problem.numKvHeads = c.kvHeads;
  problem.headDim = d;
  problem.causal = c.causal;
  problem.scale = spec.scale;
  if (c.norm != Statistic::None)
    problem.qkNorm = c.norm;
  problem.qkEps = spec.eps;
  problem.qkOffset = c.offset;
  problem.cuSeqlens = cu;
  problem.rope = c.rope;
  problem.rotaryDim = c.rotaryDim;
  problem.ropeTheta = c.ropeTheta;
  problem.ropeFirst = c.ropeFirst;
  problem.qkWeightPerHead = c.weightPerHead;
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
  LaunchConfig launch = getForcedLaunch(spec, c.warps, c.blockN, c.stages);
  AttentionRunner runner(engine);
  if (Status compiled = runner.compile(spec, launch); !compiled)
    return failed(result, "no kernel: " + compiled.message());
  const KernelSignature &signature = runner.getSignature();
  result.kernel = signature.name;
  ++result.kernelsCompiled;

  int64_t d = c.headDim, qCols = c.heads * d, kvCols = c.kvHeads * d;
  int64_t batch = c.newTokens.size(), capacity = c.capacity;
  std::vector<int64_t> cu = {0};
  for (int64_t count : c.newTokens)
    cu.push_back(cu.back() + count);
  int64_t tokens = cu.back();

  Random random(0xdec0de + d * 7 + c.heads);
  auto draw = [&](int64_t) { return random.uniform(-2.0, 2.0); };
  GuardedBuffer q(c.type, tokens, qCols, qCols + 8);
  GuardedBuffer k(c.type, tokens, kvCols, kvCols + 16);
  GuardedBuffer v(c.type, tokens, kvCols, kvCols);
  for (GuardedBuffer *buffer : {&q, &k, &v}) {
    buffer->fill(getInputGuard(c.type));
    buffer->fillRows(draw);
  }
  int64_t qWeights = d * (c.weightPerHead ? c.heads : 1);
  int64_t kWeights = d * (c.weightPerHead ? c.kvHeads : 1);
  GuardedBuffer qWeight(c.type, 1, qWeights, qWeights);
  GuardedBuffer kWeight(c.type, 1, kWeights, kWeights);
  for (GuardedBuffer *w : {&qWeight, &kWeight}) {
    w->fill(getInputGuard(c.type));
    w->fillRows([&](int64_t) { return random.uniform(-0.5, 1.5); });
  }
  GuardedBuffer offsets(ElementType::i32, 1, batch + 1, batch + 1);
  GuardedBuffer lengths(ElementType::i32, 1, batch, batch);
  for (GuardedBuffer *buffer : {&offsets, &lengths})
    buffer->fill(getInputGuard(ElementType::i32));
  for (int64_t i = 0; i <= batch; ++i)
    offsets.store(0, i, static_cast<double>(cu[i]));
  for (int64_t i = 0; i < batch; ++i)
    lengths.store(0, i, static_cast<double>(c.cacheLengths[i]));

  // Positions and the table of their angles.
  std::vector<int64_t> positions(tokens);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t)
      positions[t] = c.cacheLengths[b] + (t - cu[b]) + (c.positions ? 5 : 0);
  GuardedBuffer positionBuffer(ElementType::i32, 1, tokens, tokens);
  positionBuffer.fill(getInputGuard(ElementType::i32));
  for (int64_t t = 0; t < tokens; ++t)
    positionBuffer.store(0, t, static_cast<double>(positions[t]));
  int64_t rotaryDim = c.rotaryDim ? c.rotaryDim : d;
  int64_t tableRows = *std::max_element(positions.begin(), positions.end()) + 2;
  std::vector<float> tableValues =
      makeRopeTable(c.ropeTheta, rotaryDim, tableRows, rotaryDim);
  GuardedBuffer table(ElementType::f32, tableRows, rotaryDim, rotaryDim);
  table.fill(getInputGuard(ElementType::f32));
  for (int64_t p = 0; p < tableRows; ++p)
    for (int64_t col = 0; col < rotaryDim; ++col)
      table.store(p, col, tableValues[p * rotaryDim + col]);

  // The caches: every row holds values (rows past a sequence's length
  // too, which the kernel must neither read nor write), and a copy of
  // what they must hold afterwards.
  int64_t cacheRows = batch * capacity;
  auto makeCache = [&](uint64_t seed) {
    auto cache =
        std::make_unique<GuardedBuffer>(c.type, cacheRows, kvCols, kvCols + 8);
    cache->fill(getInputGuard(c.type));
    Random values(seed);
    cache->fillRows([&](int64_t) { return values.uniform(-2.5, 2.5); });
    return cache;
  };
  std::unique_ptr<GuardedBuffer> kCache = makeCache(1), vCache = makeCache(2);
  std::unique_ptr<GuardedBuffer> kWant = makeCache(1), vWant = makeCache(2);

  DecodeShape shape{tokens, batch, capacity, c.splits};
  int64_t rowsPerCta = signature.launch.rowsPerCta;
  int64_t workspaceLength =
      getLaunchLength(spec, BufferSlot::Workspace, rowsPerCta, shape);
  int64_t semaphoreCount =
      getLaunchLength(spec, BufferSlot::Semaphores, rowsPerCta, shape);
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
  std::map<std::string, GuardedBuffer *> byName = {
      {"q", &q},
      {"k", &k},
      {"v", &v},
      {"q_weight", &qWeight},
      {"k_weight", &kWeight},
      {"cu_seqlens", &offsets},
      {"cache_seqlens", &lengths},
      {"positions", &positionBuffer},
      {"rope_table", &table}};
  for (const auto &[name, buffer] : byName)
    inputs.add(name, *buffer);
  byName.insert({{"output", &output},
                 {"k_cache", kCache.get()},
                 {"v_cache", vCache.get()},
                 {"workspace", &workspace},
                 {"semaphores", &semaphores}});
  std::vector<SimBuffer> buffers;
  std::vector<int64_t> integers;
  for (const KernelParam &param : signature.params) {
    switch (param.kind) {
    case KernelParam::Kind::Rows:
      integers.push_back(tokens);
      continue;
    case KernelParam::Kind::Batch:
      integers.push_back(batch);
      continue;
    case KernelParam::Kind::KvSplits:
      integers.push_back(c.splits);
      continue;
    case KernelParam::Kind::CacheCapacity:
      integers.push_back(capacity);
      continue;
    case KernelParam::Kind::RopeTableRows:
      integers.push_back(tableRows);
      continue;
    case KernelParam::Kind::RowStride: {
      std::string buffer = param.name.substr(0, param.name.size() - 7);
      if (!byName.count(buffer))
        return failed(result, "unexpected parameter " + param.name);
      integers.push_back(byName[buffer]->getStride());
      continue;
    }
    case KernelParam::Kind::Buffer:
      if (!byName.count(param.name))
        return failed(result, "unexpected parameter " + param.name);
      buffers.push_back(
          {byName[param.name]->data(), byName[param.name]->getBytesFromData()});
      continue;
    }
  }
  int64_t grid = signature.getGridX(tokens, batch, c.splits);
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
  injectFault(fault, output, tokens, q);

  DecodeProblem problem;
  AttentionProblem &step = problem.step;
  step.type = c.type;
  step.numHeads = c.heads;
  step.numKvHeads = c.kvHeads;
  step.headDim = d;
  step.scale = spec.scale;
  if (c.norm != Statistic::None)
    step.qkNorm = c.norm;
  step.qkEps = spec.eps;
  step.qkOffset = c.offset;
  step.cuSeqlens = cu;
  step.rope = spec.rope;
  step.rotaryDim = spec.rotaryDim;
  step.ropeTheta = spec.ropeTheta;
  step.ropeFirst = spec.ropeFirst;
  step.qkWeightPerHead = spec.qkWeightPerHead;
  if (c.positions)
    step.positions = positions;
  if (c.table)
    step.ropeTable = tableValues;
  problem.cacheSeqlens = c.cacheLengths;
  problem.cacheCapacity = capacity;
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
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < qCols; ++col)
      values.compare("output", t, col, c.type, output.load(t, col),
                     expected.output.at(t, col));
  // The appended rows; the copies take the kernel's value where the
  // reference allows either neighbour, and must then match byte for byte.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = cu[b]; t < cu[b + 1]; ++t) {
      // Rows past the capacity are dropped: the next sequence's stay.
      if (c.cacheLengths[b] + (t - cu[b]) >= capacity)
        continue;
      int64_t row = b * capacity + c.cacheLengths[b] + (t - cu[b]);
      for (auto [name, cache, want, rows] :
           {std::tuple{"k_cache", kCache.get(), kWant.get(),
                       &expected.kAppended},
            std::tuple{"v_cache", vCache.get(), vWant.get(),
                       &expected.vAppended}})
        for (int64_t col = 0; col < kvCols; ++col) {
          const Expected &e = rows->at(t, col);
          double actual = cache->load(row, col);
          bool ok = values.compare(name, row, col, c.type, actual, e);
          want->store(row, col, ok && e.tolerance > 0 ? actual : e.value);
        }
    }
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
