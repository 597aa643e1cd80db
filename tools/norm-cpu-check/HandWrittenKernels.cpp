//===- HandWrittenKernels.cpp - reference kernels for the CPU check -------===//
//
// Straightforward gpu.func kernels written as MLIR text, one per operation
// and launch configuration, following the kernel ABI and the kernel-program
// contract of the host path (thread/block indices, scf, arith, math,
// memref, norm.row_allreduce). They read each element twice instead of
// keeping rows in registers and ignore the vector width: they exist to test
// the host lowering and the checks independently of the kernel generator.
//
// Mapping: a CTA of `warps * 32` threads works on `warps * 32 /
// threads_per_row` rows at a time, `rows_per_cta` rows in all; a thread
// strides over its row with step `threads_per_row`. Group norm rows are
// (row, group) pairs; QK-Norm rows are (token, head) pairs; column
// statistics give each column `threads_per_row` threads that stride over
// the rows, and a CTA `rows_per_cta` columns.
//
//===----------------------------------------------------------------------===//

#include "tools/norm-cpu-check/KernelSource.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

using namespace norm;
using namespace norm::check;

static constexpr const char *kBufferType = "1099511627776x";

static std::string getTypeName(ElementType type) {
  return std::string(getElementTypeName(type));
}

static std::string getMemRefType(ElementType type) {
  return "memref<" + std::string(kBufferType) + getTypeName(type) + ">";
}

namespace {
/// The text of a kernel body: one SSA value per line.
class Body {
public:
  std::string take() { return std::move(text); }

  /// A name for a new value.
  std::string fresh() { return "%v" + std::to_string(next++); }
  /// Emits `expression` as a new value and returns its name.
  std::string let(const std::string &expression) {
    std::string name = fresh();
    line(name + " = " + expression);
    return name;
  }
  void line(const std::string &statement) { text += indent + statement + "\n"; }
  /// Emits a statement that opens a region.
  void open(const std::string &statement) {
    line(statement);
    indent += "  ";
  }
  /// Closes a region; `next` may open the next one (`} else {`).
  void close(const std::string &statement = "}") {
    indent.resize(indent.size() - 2);
    line(statement);
    if (statement.back() == '{')
      indent += "  ";
  }

  std::string index(int64_t value) {
    return let("arith.constant " + std::to_string(value) + " : index");
  }
  std::string f32(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.9e",
                  static_cast<double>(static_cast<float>(value)));
    return let(std::string("arith.constant ") + buffer + " : f32");
  }
  std::string indexOp(const std::string &op, const std::string &a,
                      const std::string &b) {
    return let("arith." + op + " " + a + ", " + b + " : index");
  }
  std::string floatOp(const std::string &op, const std::string &a,
                      const std::string &b) {
    return let("arith." + op + " " + a + ", " + b + " : f32");
  }
  std::string rsqrt(const std::string &a) {
    return let("math.rsqrt " + a + " : f32");
  }
  /// `a` + `b` * `c` on indices.
  std::string offset(const std::string &a, const std::string &b,
                     const std::string &c) {
    return indexOp("addi", a, indexOp("muli", b, c));
  }
  /// Element `index` of `buffer`, as f32.
  std::string load(const std::string &buffer, ElementType type,
                   const std::string &index) {
    std::string value = let("memref.load " + buffer + "[" + index +
                            "] : " + getMemRefType(type));
    if (type == ElementType::f32)
      return value;
    return let("arith.extf " + value + " : " + getTypeName(type) + " to f32");
  }
  /// Stores f32 `value` as element `index` of `buffer`.
  void store(const std::string &value, const std::string &buffer,
             ElementType type, const std::string &index) {
    std::string stored = value;
    if (type != ElementType::f32)
      stored = let("arith.truncf " + value + " : f32 to " + getTypeName(type));
    line("memref.store " + stored + ", " + buffer + "[" + index +
         "] : " + getMemRefType(type));
  }
  /// `value` rounded to `type` and back.
  std::string round(const std::string &value, ElementType type) {
    if (type == ElementType::f32)
      return value;
    std::string narrow =
        let("arith.truncf " + value + " : f32 to " + getTypeName(type));
    return let("arith.extf " + narrow + " : " + getTypeName(type) + " to f32");
  }

private:
  std::string text;
  std::string indent = "      ";
  int next = 0;
};

/// The kernel's parameters as named SSA values.
class Params {
public:
  explicit Params(const std::vector<KernelParam> &abi) {
    for (const KernelParam &param : abi) {
      if (!list.empty())
        list += ", ";
      list += "%" + param.name + ": " +
              (param.kind == KernelParam::Kind::Buffer
                   ? getMemRefType(param.elementType)
                   : std::string("i64"));
      types[param.name] = param.elementType;
    }
  }
  bool has(const std::string &name) const { return types.count(name); }
  std::string operator[](const std::string &name) const { return "%" + name; }
  ElementType type(const std::string &name) const { return types.at(name); }
  const std::string &getList() const { return list; }

private:
  std::map<std::string, ElementType> types;
  std::string list;
};

/// A thread's place in its CTA: `threads_per_row` consecutive threads share
/// a row (lane), the CTA holds `warps * 32 / threads_per_row` of them (slot).
struct ThreadPlace {
  std::string lane, slot, block;
};
} // namespace

static ThreadPlace emitThreadPlace(Body &body, const LaunchConfig &launch) {
  std::string tid = body.let("gpu.thread_id x");
  std::string bid = body.let("gpu.block_id x");
  std::string tpr = body.index(launch.threadsPerRow);
  return {body.indexOp("remui", tid, tpr), body.indexOp("divui", tid, tpr),
          bid};
}

/// The uniform loop over the rows a CTA works on at the same time;
/// `emitRow` emits the work on logical row `segment` of `total`.
static void
emitRowLoop(Body &body, const LaunchConfig &launch, const ThreadPlace &place,
            const std::string &total,
            const std::function<void(const std::string &segment,
                                     const std::string &valid)> &emitRow) {
  int64_t concurrent = launch.getConcurrentRows();
  std::string first =
      body.indexOp("muli", place.block, body.index(launch.rowsPerCta));
  std::string zero = body.index(0), one = body.index(1);
  std::string iterations = body.index(launch.rowsPerCta / concurrent);
  std::string it = body.fresh();
  body.open("scf.for " + it + " = " + zero + " to " + iterations + " step " +
            one + " {");
  std::string segment = body.indexOp(
      "addi", body.offset(first, it, body.index(concurrent)), place.slot);
  std::string valid =
      body.let("arith.cmpi ult, " + segment + ", " + total + " : index");
  emitRow(segment, valid);
  body.close();
}

/// An i64 parameter as an index.
static std::string emitIndex(Body &body, const std::string &value) {
  return body.let("arith.index_cast " + value + " : i64 to index");
}

/// The sums of `value(j)` and of its square over the row's threads, each
/// thread taking `j = lane, lane + threads_per_row, ...` below `end` when
/// `valid`.
static std::pair<std::string, std::string>
emitRowSums(Body &body, const LaunchConfig &launch, const std::string &valid,
            const std::string &lane, const std::string &end,
            const std::function<std::string(const std::string &j)> &value) {
  std::string zero = body.f32(0.0);
  std::string tpr = body.index(launch.threadsPerRow);
  std::string partial = body.fresh(), loop = body.fresh(), j = body.fresh(),
              a = body.fresh(), b = body.fresh();
  body.open(partial + ":2 = scf.if " + valid + " -> (f32, f32) {");
  body.open(loop + ":2 = scf.for " + j + " = " + lane + " to " + end +
            " step " + tpr + " iter_args(" + a + " = " + zero + ", " + b +
            " = " + zero + ") -> (f32, f32) {");
  std::string v = value(j);
  std::string sum = body.floatOp("addf", a, v);
  std::string squares = body.floatOp("addf", b, body.floatOp("mulf", v, v));
  body.line("scf.yield " + sum + ", " + squares + " : f32, f32");
  body.close();
  body.line("scf.yield " + loop + "#0, " + loop + "#1 : f32, f32");
  body.close("} else {");
  body.line("scf.yield " + zero + ", " + zero + " : f32, f32");
  body.close();
  std::string total = body.fresh();
  body.line(total + ":2 = norm.row_allreduce " + partial + "#0, " + partial +
            "#1 {group_size = " + std::to_string(launch.threadsPerRow) +
            " : i64} : f32, f32");
  return {total + "#0", total + "#1"};
}

/// Opens `scf.for j = lane to end step threads_per_row` under `valid`;
/// returns `j`. Close twice.
static std::string openRowElements(Body &body, const LaunchConfig &launch,
                                   const std::string &valid,
                                   const std::string &lane,
                                   const std::string &end) {
  std::string tpr = body.index(launch.threadsPerRow);
  std::string j = body.fresh();
  body.open("scf.if " + valid + " {");
  body.open("scf.for " + j + " = " + lane + " to " + end + " step " + tpr +
            " {");
  return j;
}

static void emitFusedRow(Body &body, const OpSpec &spec,
                         const LaunchConfig &launch, const Params &p) {
  int64_t groups = spec.groups, width = getRowLength(spec);
  ThreadPlace place = emitThreadPlace(body, launch);
  std::string rows = emitIndex(body, p["rows"]);
  std::string total = body.indexOp("muli", rows, body.index(groups));
  std::string end = body.index(width);
  emitRowLoop(
      body, launch, place, total,
      [&](const std::string &segment, const std::string &valid) {
        std::string groupCount = body.index(groups);
        std::string row = body.indexOp("divui", segment, groupCount);
        std::string base = body.indexOp(
            "muli", body.indexOp("remui", segment, groupCount), end);
        auto rowStart = [&](const std::string &buffer) {
          return body.indexOp("muli", row,
                              emitIndex(body, p[buffer + "_stride"]));
        };
        // v = alpha * input + addend, and v as the statistic sees it.
        auto prologue = [&](const std::string &col) {
          std::string v =
              body.load(p["input"], spec.input,
                        body.indexOp("addi", rowStart("input"), col));
          if (spec.hasAddend) {
            if (spec.alpha != 1.0)
              v = body.floatOp("mulf", body.f32(spec.alpha), v);
            v = body.floatOp(
                "addf", v,
                body.load(p["addend"], spec.addendType,
                          body.indexOp("addi", rowStart("addend"), col)));
          }
          std::string stream = spec.f32Residual ? v : body.round(v, spec.input);
          return std::make_pair(v, stream);
        };
        auto [sum, squares] = emitRowSums(
            body, launch, valid, place.lane, end, [&](const std::string &j) {
              return prologue(body.indexOp("addi", base, j)).second;
            });

        std::string center = body.f32(0.0), scale = body.f32(1.0);
        std::string eps = body.f32(spec.eps);
        std::string count = body.f32(static_cast<double>(width));
        switch (spec.kind) {
        case OpSpec::Kind::RMSNorm:
          scale = body.rsqrt(
              body.floatOp("addf", body.floatOp("divf", squares, count), eps));
          break;
        case OpSpec::Kind::L2Norm:
          scale = body.rsqrt(body.floatOp("addf", squares, eps));
          break;
        case OpSpec::Kind::LayerNorm:
        case OpSpec::Kind::GroupNorm: {
          center = body.floatOp("divf", sum, count);
          std::string variance =
              body.floatOp("subf", body.floatOp("divf", squares, count),
                           body.floatOp("mulf", center, center));
          variance = body.floatOp("maximumf", variance, body.f32(0.0));
          scale = body.rsqrt(body.floatOp("addf", variance, eps));
          break;
        }
        default:
          break;
        }

        std::string j = openRowElements(body, launch, valid, place.lane, end);
        std::string col = body.indexOp("addi", base, j);
        auto [v, stream] = prologue(col);
        if (spec.writeResidual)
          body.store(v, p["residual_out"], spec.input,
                     body.indexOp("addi", rowStart("residual_out"), col));
        std::string y;
        if (spec.kind == OpSpec::Kind::BatchNormInference) {
          std::string mean = body.load(p["mean"], spec.param, col);
          std::string variance = body.load(p["variance"], spec.param, col);
          y = body.floatOp("mulf", body.floatOp("subf", stream, mean),
                           body.rsqrt(body.floatOp("addf", variance, eps)));
        } else {
          y = body.floatOp("mulf", body.floatOp("subf", stream, center), scale);
        }
        if (spec.hasWeight) {
          std::string weight = body.load(p["weight"], spec.param, col);
          if (spec.weightOffset != 0.0)
            weight = body.floatOp("addf", weight, body.f32(spec.weightOffset));
          y = body.floatOp("mulf", y, weight);
        }
        if (spec.hasBias)
          y = body.floatOp("addf", y, body.load(p["bias"], spec.param, col));
        if (spec.hasSkip)
          y = body.floatOp(
              "addf", body.round(y, spec.output),
              body.load(p["skip"], spec.skipType,
                        body.indexOp("addi", rowStart("skip"), col)));
        body.store(y, p["output"], spec.output,
                   body.indexOp("addi", rowStart("output"), col));
        body.close();
        body.close();
      });
}

static void emitQKNorm(Body &body, const OpSpec &spec,
                       const LaunchConfig &launch, const Params &p) {
  int64_t heads = spec.numQHeads + spec.numKvHeads;
  ThreadPlace place = emitThreadPlace(body, launch);
  std::string tokens = emitIndex(body, p["rows"]);
  std::string headCount = body.index(heads);
  std::string total = body.indexOp("muli", tokens, headCount);
  std::string headDim = body.index(spec.hidden);
  emitRowLoop(
      body, launch, place, total,
      [&](const std::string &segment, const std::string &valid) {
        std::string token = body.indexOp("divui", segment, headCount);
        std::string head = body.indexOp("remui", segment, headCount);
        // K heads follow the Q heads in a packed row.
        std::string source = body.indexOp(
            "addi",
            body.indexOp("muli", token, emitIndex(body, p["qkv_stride"])),
            body.indexOp("muli", head, headDim));
        auto [sum, squares] =
            emitRowSums(body, launch, valid, place.lane, headDim,
                        [&](const std::string &j) {
                          return body.load(p["qkv"], spec.input,
                                           body.indexOp("addi", source, j));
                        });
        std::string statistic =
            spec.qkStatistic == ::norm::Statistic::L2
                ? squares
                : body.floatOp("divf", squares,
                               body.f32(static_cast<double>(spec.hidden)));
        std::string scale =
            body.rsqrt(body.floatOp("addf", statistic, body.f32(spec.eps)));
        std::string qHeads = body.index(spec.numQHeads);
        std::string isQ =
            body.let("arith.cmpi ult, " + head + ", " + qHeads + " : index");

        std::string j =
            openRowElements(body, launch, valid, place.lane, headDim);
        std::string y = body.floatOp(
            "mulf",
            body.load(p["qkv"], spec.input, body.indexOp("addi", source, j)),
            scale);
        if (spec.hasWeight) {
          std::string qWeight = body.load(p["q_weight"], spec.param, j);
          std::string kWeight = body.load(p["k_weight"], spec.param, j);
          y = body.floatOp("mulf", y,
                           body.let("arith.select " + isQ + ", " + qWeight +
                                    ", " + kWeight + " : f32"));
        }
        auto emitStore = [&](const std::string &buffer,
                             const std::string &outHead) {
          std::string start = body.indexOp(
              "muli", token, emitIndex(body, p[buffer + "_stride"]));
          body.store(
              y, p[buffer], spec.output,
              body.indexOp("addi", body.offset(start, outHead, headDim), j));
        };
        body.open("scf.if " + isQ + " {");
        emitStore("q", head);
        body.close("} else {");
        emitStore("k", body.indexOp("subi", head, qHeads));
        body.close();
        body.close();
        body.close();
      });
}

static void emitColumnStats(Body &body, const OpSpec &spec,
                            const LaunchConfig &launch, const Params &p) {
  ThreadPlace place = emitThreadPlace(body, launch);
  std::string rowsI64 = p["rows"];
  std::string rows = emitIndex(body, rowsI64);
  std::string stride = emitIndex(body, p["input_stride"]);
  std::string columns = body.index(spec.hidden);
  emitRowLoop(body, launch, place, columns,
              [&](const std::string &col, const std::string &valid) {
                auto [sum, squares] = emitRowSums(
                    body, launch, valid, place.lane, rows,
                    [&](const std::string &row) {
                      return body.load(p["input"], spec.input,
                                       body.offset(col, row, stride));
                    });
                std::string count =
                    body.let("arith.sitofp " + rowsI64 + " : i64 to f32");
                std::string mean = body.floatOp("divf", sum, count);
                std::string variance =
                    body.floatOp("subf", body.floatOp("divf", squares, count),
                                 body.floatOp("mulf", mean, mean));
                variance = body.floatOp("maximumf", variance, body.f32(0.0));
                std::string first = body.let("arith.cmpi eq, " + place.lane +
                                             ", " + body.index(0) + " : index");
                std::string writer =
                    body.let("arith.andi " + valid + ", " + first + " : i1");
                body.open("scf.if " + writer + " {");
                body.store(mean, p["mean"], ElementType::f32, col);
                body.store(variance, p["variance"], ElementType::f32, col);
                body.close();
              });
}


namespace {
class HandWrittenKernels : public KernelProvider {
public:
  std::string_view getName() const override { return "hand-written"; }

  // The QK-Norm kernels are the simplest ones: RMS and L2, plain weights,
  // no rotation.
  bool supports(const OpSpec &spec) const override {
    // The training, in-place, FP8, K-prepare and attention kernels have no
    // hand-written counterparts.
    if (spec.saveStats || spec.backward ||
        spec.kind == OpSpec::Kind::KeyPrepare ||
        spec.kind == OpSpec::Kind::Attention ||
        spec.kind == OpSpec::Kind::AttentionDecode ||
        spec.kind == OpSpec::Kind::ColumnSum ||
        spec.outputOver != ::norm::RowOperand::None ||
        spec.residualOver != ::norm::RowOperand::None ||
        spec.outputScale != ::norm::OutputScale::None)
      return false;
    return spec.kind != OpSpec::Kind::QKNormPrologue ||
           (spec.qkStatistic != ::norm::Statistic::MeanVar &&
            spec.weightOffset == 0.0 && spec.rope == ::norm::RopeStyle::None);
  }

  LaunchConfig getDefaultLaunch(const OpSpec &spec,
                                int64_t rows) const override {
    // A small ladder: the fewest threads per row that keep at most 16
    // elements per thread, at least 4 warps per CTA.
    LaunchConfig launch;
    launch.vector = ::norm::getMaxVector(spec);
    int64_t length = getRowLength(spec);
    for (launch.threadsPerRow = 1; launch.threadsPerRow < 1024;
         launch.threadsPerRow *= 2)
      if (length <= 16 * launch.threadsPerRow)
        break;
    launch.warps = std::max<int64_t>(4, launch.threadsPerRow / 32);
    launch.rowsPerCta = launch.getConcurrentRows();
    return launch;
  }

  Status build(const OpSpec &spec, const LaunchConfig &launch,
               KernelSource &source) const override {
    if (!supports(spec))
      return Status::error(::norm::ErrorCode::Unsupported,
                           "no hand-written kernel: QK-Norm kernels are RMS "
                           "and L2 without a weight offset or rotary "
                           "embeddings, and there are no training, in-place "
                           "or attention kernels");
    // The ABI of the generated kernel (names aside): the check compares the
    // two providers with the same harness.
    KernelSignature &signature = source.signature;
    if (Status status = ::norm::describeKernel(spec, launch,
                                               ::norm::TargetOptions(),
                                               signature);
        !status)
      return status;
    signature.name = "hand_written_" + signature.kind + "_" +
                     launch.getMangledSuffix();
    signature.sharedBytes = 0; // hand-written kernels keep rows in registers
    // Their column statistics take one column per kernel row.
    if (spec.kind == OpSpec::Kind::BatchNormStats)
      signature.fixedGridX =
          (spec.hidden + launch.rowsPerCta - 1) / launch.rowsPerCta;

    Params params(signature.params);
    Body body;
    if (spec.kind == OpSpec::Kind::QKNormPrologue)
      emitQKNorm(body, spec, launch, params);
    else if (spec.kind == OpSpec::Kind::BatchNormStats)
      emitColumnStats(body, spec, launch, params);
    else
      emitFusedRow(body, spec, launch, params);

    std::ostringstream os;
    os << "gpu.module @norm_kernels {\n"
       << "  gpu.func @" << signature.name << "(" << params.getList()
       << ") kernel attributes {known_block_size = array<i32: "
       << launch.getThreadsPerCta() << ", 1, 1>} {\n"
       << body.take() << "    gpu.return\n  }\n}\n";
    source.mlir = os.str();
    source.pipeline.clear();
    return Status::success();
  }
};

} // namespace

std::unique_ptr<KernelProvider> check::createHandWrittenKernels() {
  return std::make_unique<HandWrittenKernels>();
}
