//===- KernelSignature.cpp - the ABI of a generated kernel ----------------===//
//
// JSON without a JSON library: the runtime-only build links neither LLVM nor
// MLIR, and signatures are small, flat objects.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/KernelSignature.h"

#include "compiler/model/Buffers.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

using namespace norm;

int64_t KernelSignature::getGridX(int64_t rows, int64_t batch,
                                  int64_t splits) const {
  if (fixedGridX)
    return fixedGridX;
  if (isAttention())
    return rowMultiplier * (isDecode() ? splits : 1) *
           getQueryTiles(rows, queryGroup, launch.rowsPerCta, batch);
  int64_t kernelRows = rows * rowMultiplier;
  if (maxGridX)
    return getPersistentGridX(kernelRows, launch.rowsPerCta, maxGridX,
                              gridMultiple);
  return (kernelRows + launch.rowsPerCta - 1) / launch.rowsPerCta;
}

std::string KernelSignature::getGridFormula() const {
  std::ostringstream os;
  if (fixedGridX) {
    os << fixedGridX;
    return os.str();
  }
  if (isDecode()) {
    os << rowMultiplier << " * kv_splits * (ceil(rows * " << queryGroup
       << " / " << launch.rowsPerCta << ") + batch)";
    return os.str();
  }
  if (isAttention()) {
    os << rowMultiplier << " * (ceil(rows / " << launch.rowsPerCta
       << ") + batch)";
    return os.str();
  }
  if (maxGridX)
    os << "min(";
  os << "ceil(rows";
  if (rowMultiplier != 1)
    os << " * " << rowMultiplier;
  os << " / " << launch.rowsPerCta << ")";
  if (gridMultiple != 1)
    os << " rounded up to a multiple of " << gridMultiple;
  if (maxGridX)
    os << ", " << maxGridX << ")";
  return os.str();
}

//===----------------------------------------------------------------------===//
// Describing a kernel
//===----------------------------------------------------------------------===//

/// 32-bit FNV-1a: stable across runs, platforms and compilers.
static uint32_t hashText(std::string_view text) {
  uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

/// `norm_rms_add_h4096_bf16_bf16`: what the kernel computes, for people.
static std::string getKernelPrefix(const OpSpec &spec) {
  std::ostringstream os;
  auto type = [](ElementType t) { return getElementTypeName(t); };
  auto ropeSuffix = [&]() -> std::string {
    if (spec.rope == RopeStyle::None)
      return "";
    return "_rope" + std::string(getRopeStyleName(spec.rope)) +
           std::to_string(spec.rotaryDim) + (spec.ropeTable ? "_table" : "") +
           (spec.ropePositions ? "_pos" : "") +
           (spec.ropeFirst ? "_first" : "");
  };
  // A paged cache's page ("_p16"; "_p16i": a ragged table) and an FP8 cache
  // ("_fp8", "_fp8h": a scale per head).
  auto pagesSuffix = [&]() -> std::string {
    return (spec.cacheBlockSize ? "_p" + std::to_string(spec.cacheBlockSize) +
                                      (spec.pageIndptr ? "i" : "")
                                : "") +
           (spec.fp8Cache ? (spec.cacheScalePerHead ? "_fp8h" : "_fp8") : "");
  };
  switch (spec.kind) {
  case OpKind::QKNormPrologue:
    os << "norm_qk_" << getStatisticName(spec.qkStatistic)
       << (spec.qkWeightPerHead ? "_hw" : "") << ropeSuffix() << "_d"
       << spec.hidden << "_"
       << type(spec.input) << "_" << type(spec.output);
    return os.str();
  case OpKind::KeyPrepare:
    os << "norm_kprep";
    if (spec.qkStatistic != Statistic::None)
      os << "_" << getStatisticName(spec.qkStatistic)
         << (spec.qkWeightPerHead ? "_hw" : "");
    os << ropeSuffix() << (spec.copyValues ? "_v" : "")
       << (spec.writeCache ? "_cache" : "") << pagesSuffix() << "_d"
       << spec.hidden << "_" << type(spec.input) << "_" << type(spec.output);
    return os.str();
  case OpKind::BatchNormStats:
    os << "norm_colstats_h" << spec.hidden << "_" << type(spec.input)
       << "_f32";
    return os.str();
  case OpKind::ColumnSum:
    os << "norm_colsum_h" << spec.hidden << "_f32_" << type(spec.output);
    return os.str();
  case OpKind::Attention:
  case OpKind::AttentionDecode:
    os << (spec.kind == OpKind::Attention ? "norm_attn" : "norm_decode");
    if (spec.qkStatistic != Statistic::None)
      os << "_qk" << getStatisticName(spec.qkStatistic)
         << (spec.qkWeightPerHead ? "_hw" : "");
    if (spec.causal)
      os << "_causal";
    if (spec.keysPrepared)
      os << "_kprep";
    os << ropeSuffix() << pagesSuffix() << "_d" << spec.hidden << "_h"
       << spec.numQHeads << "x" << spec.numKvHeads << "_" << type(spec.input);
    return os.str();
  case OpKind::RMSNorm:
    os << "norm_rms";
    break;
  case OpKind::LayerNorm:
    os << "norm_layer";
    break;
  case OpKind::GroupNorm:
    os << "norm_group";
    break;
  case OpKind::L2Norm:
    os << "norm_l2";
    break;
  case OpKind::BatchNormInference:
    os << "norm_bn";
    break;
  case OpKind::Elementwise:
    os << "norm_ew";
    break;
  }
  if (spec.backward)
    os << "_bwd";
  if (spec.hasAddend)
    os << "_add";
  if (spec.hasSkip)
    os << "_skip";
  os << "_h" << spec.hidden << "_" << type(spec.input) << "_"
     << type(spec.output);
  return os.str();
}

std::string norm::getKernelName(const OpSpec &spec, const LaunchConfig &launch,
                                const TargetOptions &target) {
  OpSpec normal = normalizeOpSpec(spec);
  char hash[16];
  std::snprintf(hash, sizeof(hash), "%08x",
                hashText(getCanonicalSpec(normal)));
  RowStorage storage =
      getRowStorage(normal, launch, target.getMaxSharedBytes());
  return getKernelPrefix(normal) + "_" + hash + "_" +
         launch.getMangledSuffix() + std::string(getRowStorageSuffix(storage)) +
         (target.pdl ? "_pdl" : "");
}

Status norm::describeKernel(const OpSpec &spec, const LaunchConfig &launch,
                            const TargetOptions &target,
                            KernelSignature &sig) {
  if (Status status = verifyOpSpec(spec); !status)
    return status;
  int64_t maxShared = target.getMaxSharedBytes();
  if (Status status = verifyLaunchFor(spec, launch, maxShared); !status)
    return status;
  if (launch.isWarpgroupAttention() && target.chip != "sm_90a")
    return Status::invalid("the sm_90a attention family (warpgroups) needs "
                           "wgmma, setmaxnreg and TMA: target sm_90a, not " +
                           target.chip);
  OpSpec normal = normalizeOpSpec(spec);
  sig = KernelSignature();
  sig.name = getKernelName(normal, launch, target);
  sig.kind = std::string(getKernelOpName(normal));
  sig.hidden = normal.hidden;
  sig.launch = launch;
  sig.blockThreads = launch.getThreadsPerCta();
  sig.sharedBytes = getSharedBytes(normal, launch, maxShared);
  sig.pdl = target.pdl;
  if (normal.kind == OpKind::BatchNormStats ||
      normal.kind == OpKind::ColumnSum) {
    // One "row" of work per `vector` columns.
    int64_t tiles = (normal.hidden + launch.vector - 1) / launch.vector;
    sig.fixedGridX = (tiles + launch.rowsPerCta - 1) / launch.rowsPerCta;
  } else if (normal.kind == OpKind::AttentionDecode) {
    sig.rowMultiplier = normal.numKvHeads;
    sig.queryGroup = normal.numQHeads / normal.numKvHeads;
  } else {
    sig.rowMultiplier = getRowsPerToken(normal);
    if (normal.backward) {
      sig.maxGridX = kBackwardCtas;
      sig.gridMultiple = getBackwardGridMultiple(normal, launch);
    }
  }
  std::vector<BufferSpec> buffers = getBuffers(normal);
  for (const BufferSpec &buffer : buffers) {
    KernelParam param;
    param.kind = KernelParam::Kind::Buffer;
    param.name = std::string(getBufferSlotName(buffer.slot));
    param.elementType = buffer.type;
    param.rowMajor2D = buffer.rows2D;
    param.readOnly = !buffer.written;
    // Attention's tiles are 16-byte vectors of bf16 or f16; its sequence
    // offsets and cache lengths are read, and its log-sum-exps, partials
    // and semaphores written, one by one, as are saved statistics and FP8
    // scales.
    bool scalar = !buffer.rows2D && buffer.cols == 0;
    scalar |= buffer.slot == BufferSlot::Lse ||
              buffer.slot == BufferSlot::SavedMean ||
              buffer.slot == BufferSlot::SavedRstd ||
              buffer.slot == BufferSlot::OutputScale ||
              buffer.slot == BufferSlot::ScaleUpperBound ||
              buffer.slot == BufferSlot::OutputScales;
    param.alignment = scalar ? getElementBytes(buffer.type)
                             : getBufferAlignment(buffer.type, launch.vector);
    // The runtime allocates the partials, whose quads the combine reads
    // whole; the rope table's rows are read in f32 quads.
    if (buffer.slot == BufferSlot::Workspace ||
        buffer.slot == BufferSlot::RopeTable)
      param.alignment = 16;
    if (buffer.over)
      param.over = std::string(getBufferSlotName(*buffer.over));
    sig.params.push_back(std::move(param));
  }
  KernelParam rows;
  rows.kind = KernelParam::Kind::Rows;
  rows.name = "rows";
  sig.params.push_back(rows);
  // Sequence offsets come with their count (attention; K-prepare turning
  // keys by their index within their sequence).
  bool offsets = std::any_of(buffers.begin(), buffers.end(),
                             [](const BufferSpec &buffer) {
                               return buffer.slot == BufferSlot::CuSeqlens;
                             });
  if (offsets) {
    KernelParam batch;
    batch.kind = KernelParam::Kind::Batch;
    batch.name = "batch";
    sig.params.push_back(batch);
  }
  auto addParam = [&](KernelParam::Kind kind, const char *name) {
    KernelParam param;
    param.kind = kind;
    param.name = name;
    sig.params.push_back(param);
  };
  if (normal.kind == OpKind::AttentionDecode)
    addParam(KernelParam::Kind::KvSplits, "kv_splits");
  if (normal.kind == OpKind::AttentionDecode || normal.writeCache)
    addParam(KernelParam::Kind::CacheCapacity, "cache_capacity");
  if (normal.cacheBlockSize)
    addParam(KernelParam::Kind::CacheBlocks, "cache_blocks");
  if (normal.ropeTable) {
    KernelParam tableRows;
    tableRows.kind = KernelParam::Kind::RopeTableRows;
    tableRows.name = "rope_table_rows";
    sig.params.push_back(tableRows);
  }
  for (const BufferSpec &buffer : buffers) {
    if (!buffer.rows2D)
      continue;
    KernelParam stride;
    stride.kind = KernelParam::Kind::RowStride;
    stride.name = std::string(getBufferSlotName(buffer.slot)) + "_stride";
    sig.params.push_back(std::move(stride));
  }
  if (launch.isWarpgroupAttention()) {
    addParam(KernelParam::Kind::TensorMap, "k_tensor_map");
    addParam(KernelParam::Kind::TensorMap, "v_tensor_map");
  }
  return Status::success();
}

std::string norm::getTensorMapSource(const KernelParam &param) {
  std::string_view name = param.name, suffix = "_tensor_map";
  if (param.kind != KernelParam::Kind::TensorMap ||
      name.size() <= suffix.size() ||
      name.substr(name.size() - suffix.size()) != suffix)
    return "";
  return std::string(name.substr(0, name.size() - suffix.size()));
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

static std::string_view getParamKindName(KernelParam::Kind kind) {
  switch (kind) {
  case KernelParam::Kind::Buffer:
    return "buffer";
  case KernelParam::Kind::Rows:
    return "rows";
  case KernelParam::Kind::Batch:
    return "batch";
  case KernelParam::Kind::RowStride:
    return "row_stride";
  case KernelParam::Kind::KvSplits:
    return "kv_splits";
  case KernelParam::Kind::CacheCapacity:
    return "cache_capacity";
  case KernelParam::Kind::RopeTableRows:
    return "rope_table_rows";
  case KernelParam::Kind::CacheBlocks:
    return "cache_blocks";
  case KernelParam::Kind::TensorMap:
    return "tensor_map";
  }
  return "?";
}

bool KernelSignature::mayAlias(const KernelParam &param) const {
  if (param.kind != KernelParam::Kind::Buffer)
    return false;
  if (!param.over.empty())
    return true;
  for (const KernelParam &other : params)
    if (other.over == param.name)
      return true;
  return false;
}

std::string KernelSignature::toJson() const {
  std::ostringstream os;
  os << "{\"name\": " << quote(name) << ", \"kind\": " << quote(kind)
     << ", \"hidden\": " << hidden << ", \"launch\": {\"vector\": "
     << launch.vector << ", \"threads_per_row\": " << launch.threadsPerRow
     << ", \"warps\": " << launch.warps
     << ", \"rows_per_cta\": " << launch.rowsPerCta;
  if (launch.isAttention())
    os << ", \"block_n\": " << launch.blockN
       << ", \"stages\": " << launch.stages;
  if (launch.isWarpgroupAttention())
    os << ", \"warpgroups\": " << launch.warpgroups
       << ", \"overlap\": " << launch.overlap;
  os << "}, \"block_threads\": " << blockThreads
     << ", \"grid\": " << quote(getGridFormula())
     << ", \"row_multiplier\": " << rowMultiplier
     << ", \"fixed_grid_x\": " << fixedGridX;
  if (queryGroup != 1)
    os << ", \"query_group\": " << queryGroup;
  if (maxGridX)
    os << ", \"max_grid_x\": " << maxGridX;
  if (gridMultiple != 1)
    os << ", \"grid_multiple\": " << gridMultiple;
  if (pdl)
    os << ", \"pdl\": true";
  os
     << ", \"shared_bytes\": " << sharedBytes;
  if (!fallback.empty())
    os << ", \"fallback\": " << quote(fallback);
  os << ", \"params\": [";
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam &p = params[i];
    os << (i ? ", " : "") << "{\"name\": " << quote(p.name)
       << ", \"kind\": " << quote(getParamKindName(p.kind));
    if (p.kind == KernelParam::Kind::Buffer)
      os << ", \"type\": " << quote(getElementTypeName(p.elementType))
         << ", \"rows_x_hidden\": " << (p.rowMajor2D ? "true" : "false")
         << ", \"read_only\": " << (p.readOnly ? "true" : "false")
         << ", \"alignment\": " << p.alignment;
    if (!p.over.empty())
      os << ", \"over\": " << quote(p.over);
    if (p.kind == KernelParam::Kind::TensorMap)
      os << ", \"type\": \"cu_tensor_map\"";
    else if (p.kind != KernelParam::Kind::Buffer)
      os << ", \"type\": \"i64\"";
    os << "}";
  }
  os << "]}";
  return os.str();
}

std::string
norm::signaturesToJson(const std::vector<KernelSignature> &signatures) {
  std::string out = "[\n";
  for (size_t i = 0; i < signatures.size(); ++i)
    out += "  " + signatures[i].toJson() +
           (i + 1 < signatures.size() ? ",\n" : "\n");
  return out + "]\n";
}

//===----------------------------------------------------------------------===//
// Reading: a small recursive-descent JSON parser
//===----------------------------------------------------------------------===//

namespace {

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type =
      Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
};

class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text(text) {}

  std::optional<Json> parseDocument(std::string &error) {
    std::optional<Json> value = parseValue(0);
    skipSpace();
    if (value && pos != text.size())
      fail("trailing characters");
    if (!this->error.empty()) {
      error = this->error;
      return std::nullopt;
    }
    return value;
  }

private:
  static constexpr int kMaxDepth = 32;

  void fail(const std::string &what) {
    if (error.empty())
      error = "malformed JSON at offset " + std::to_string(pos) + ": " + what;
  }
  void skipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  std::optional<Json> parseValue(int depth) {
    if (depth > kMaxDepth) {
      fail("nesting too deep");
      return std::nullopt;
    }
    skipSpace();
    if (pos >= text.size()) {
      fail("unexpected end");
      return std::nullopt;
    }
    char c = text[pos];
    Json value;
    if (c == '{') {
      ++pos;
      value.type = Json::Type::Object;
      if (consume('}'))
        return value;
      do {
        skipSpace();
        std::optional<std::string> key = parseString();
        if (!key || !consume(':')) {
          fail("expected \"key\":");
          return std::nullopt;
        }
        std::optional<Json> member = parseValue(depth + 1);
        if (!member)
          return std::nullopt;
        value.object[*key] = std::move(*member);
      } while (consume(','));
      if (!consume('}')) {
        fail("expected '}'");
        return std::nullopt;
      }
      return value;
    }
    if (c == '[') {
      ++pos;
      value.type = Json::Type::Array;
      if (consume(']'))
        return value;
      do {
        std::optional<Json> element = parseValue(depth + 1);
        if (!element)
          return std::nullopt;
        value.array.push_back(std::move(*element));
      } while (consume(','));
      if (!consume(']')) {
        fail("expected ']'");
        return std::nullopt;
      }
      return value;
    }
    if (c == '"') {
      std::optional<std::string> s = parseString();
      if (!s)
        return std::nullopt;
      value.type = Json::Type::String;
      value.string = std::move(*s);
      return value;
    }
    for (auto [word, type, flag] :
         {std::tuple{"true", Json::Type::Bool, true},
          std::tuple{"false", Json::Type::Bool, false},
          std::tuple{"null", Json::Type::Null, false}}) {
      std::string_view w(word);
      if (text.substr(pos, w.size()) == w) {
        pos += w.size();
        value.type = type;
        value.boolean = flag;
        return value;
      }
    }
    // A number.
    size_t start = pos;
    while (pos < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[pos])) ||
            std::string_view("+-.eE").find(text[pos]) != std::string_view::npos))
      ++pos;
    if (start == pos) {
      fail("unexpected character");
      return std::nullopt;
    }
    std::string digits(text.substr(start, pos - start));
    char *end = nullptr;
    value.number = std::strtod(digits.c_str(), &end);
    if (end != digits.c_str() + digits.size()) {
      fail("bad number");
      return std::nullopt;
    }
    value.type = Json::Type::Number;
    return value;
  }

  std::optional<std::string> parseString() {
    if (pos >= text.size() || text[pos] != '"') {
      fail("expected a string");
      return std::nullopt;
    }
    ++pos;
    std::string out;
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        break;
      char e = text[pos++];
      switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (pos + 4 > text.size()) {
          fail("bad \\u escape");
          return std::nullopt;
        }
        unsigned code = std::strtoul(std::string(text.substr(pos, 4)).c_str(),
                                     nullptr, 16);
        pos += 4;
        if (code > 0x7f) {
          fail("only ASCII \\u escapes are supported");
          return std::nullopt;
        }
        out += static_cast<char>(code);
        break;
      }
      default: out += e; break;
      }
    }
    if (pos >= text.size()) {
      fail("unterminated string");
      return std::nullopt;
    }
    ++pos;
    return out;
  }

  std::string_view text;
  size_t pos = 0;
  std::string error;
};

/// Typed field access that records the first missing or mistyped field.
class Fields {
public:
  Fields(const Json &object, std::string &error, std::string context)
      : object(object), error(error), context(std::move(context)) {}

  const Json *get(const std::string &key, Json::Type type) {
    auto it = object.object.find(key);
    if (it == object.object.end() || it->second.type != type) {
      if (error.empty())
        error = context + ": missing or mistyped field '" + key + "'";
      return nullptr;
    }
    return &it->second;
  }
  int64_t integer(const std::string &key) {
    const Json *v = get(key, Json::Type::Number);
    if (!v)
      return 0;
    if (v->number != static_cast<double>(static_cast<int64_t>(v->number)) &&
        error.empty())
      error = context + ": field '" + key + "' must be an integer";
    return static_cast<int64_t>(v->number);
  }
  std::string string(const std::string &key) {
    const Json *v = get(key, Json::Type::String);
    return v ? v->string : std::string();
  }
  bool boolean(const std::string &key) {
    const Json *v = get(key, Json::Type::Bool);
    return v && v->boolean;
  }

private:
  const Json &object;
  std::string &error;
  std::string context;
};

std::optional<KernelSignature> signatureFromJson(const Json &json,
                                                 std::string &error) {
  if (json.type != Json::Type::Object) {
    error = "a kernel signature must be a JSON object";
    return std::nullopt;
  }
  KernelSignature sig;
  Fields fields(json, error, "kernel signature");
  sig.name = fields.string("name");
  sig.kind = fields.string("kind");
  sig.hidden = fields.integer("hidden");
  sig.blockThreads = fields.integer("block_threads");
  sig.rowMultiplier = fields.integer("row_multiplier");
  sig.fixedGridX = fields.integer("fixed_grid_x");
  if (json.object.count("query_group"))
    sig.queryGroup = fields.integer("query_group");
  if (json.object.count("max_grid_x"))
    sig.maxGridX = fields.integer("max_grid_x");
  if (json.object.count("grid_multiple"))
    sig.gridMultiple = fields.integer("grid_multiple");
  if (json.object.count("pdl"))
    sig.pdl = fields.boolean("pdl");
  sig.sharedBytes = fields.integer("shared_bytes");
  if (json.object.count("fallback"))
    sig.fallback = fields.string("fallback");
  if (const Json *launch = fields.get("launch", Json::Type::Object)) {
    Fields l(*launch, error, "launch of " + sig.name);
    sig.launch.vector = l.integer("vector");
    sig.launch.threadsPerRow = l.integer("threads_per_row");
    sig.launch.warps = l.integer("warps");
    sig.launch.rowsPerCta = l.integer("rows_per_cta");
    if (launch->object.count("block_n")) {
      sig.launch.blockN = l.integer("block_n");
      sig.launch.stages = l.integer("stages");
    }
    if (launch->object.count("warpgroups")) {
      sig.launch.warpgroups = l.integer("warpgroups");
      sig.launch.overlap = l.integer("overlap");
    }
  }
  if (const Json *params = fields.get("params", Json::Type::Array)) {
    for (const Json &p : params->array) {
      if (p.type != Json::Type::Object) {
        error = "kernel parameters must be JSON objects";
        return std::nullopt;
      }
      Fields f(p, error, "parameter of " + sig.name);
      KernelParam param;
      param.name = f.string("name");
      std::string kind = f.string("kind");
      if (kind == "buffer") {
        param.kind = KernelParam::Kind::Buffer;
        std::optional<ElementType> type = parseElementType(f.string("type"));
        if (!type) {
          if (error.empty())
            error = "unknown element type of parameter '" + param.name + "'";
          return std::nullopt;
        }
        param.elementType = *type;
        param.rowMajor2D = f.boolean("rows_x_hidden");
        param.readOnly = f.boolean("read_only");
        param.alignment = f.integer("alignment");
        if (p.object.count("over"))
          param.over = f.string("over");
      } else if (kind == "rows") {
        param.kind = KernelParam::Kind::Rows;
      } else if (kind == "batch") {
        param.kind = KernelParam::Kind::Batch;
      } else if (kind == "row_stride") {
        param.kind = KernelParam::Kind::RowStride;
      } else if (kind == "kv_splits") {
        param.kind = KernelParam::Kind::KvSplits;
      } else if (kind == "cache_capacity") {
        param.kind = KernelParam::Kind::CacheCapacity;
      } else if (kind == "rope_table_rows") {
        param.kind = KernelParam::Kind::RopeTableRows;
      } else if (kind == "cache_blocks") {
        param.kind = KernelParam::Kind::CacheBlocks;
      } else if (kind == "tensor_map") {
        param.kind = KernelParam::Kind::TensorMap;
      } else if (error.empty()) {
        error = "unknown parameter kind '" + kind + "'";
      }
      sig.params.push_back(std::move(param));
    }
  }
  if (!error.empty())
    return std::nullopt;
  if (sig.name.empty() || sig.launch.rowsPerCta <= 0 ||
      sig.launch.warps <= 0 || sig.launch.vector <= 0 ||
      sig.launch.threadsPerRow <= 0 || sig.rowMultiplier <= 0 ||
      sig.queryGroup <= 0 || sig.gridMultiple <= 0 ||
      sig.blockThreads != sig.launch.getThreadsPerCta()) {
    error = "inconsistent kernel signature '" + sig.name + "'";
    return std::nullopt;
  }
  return sig;
}

} // namespace

std::optional<KernelSignature>
KernelSignature::fromJson(std::string_view text, std::string &error) {
  std::optional<Json> json = JsonParser(text).parseDocument(error);
  if (!json)
    return std::nullopt;
  return signatureFromJson(*json, error);
}

std::optional<std::vector<KernelSignature>>
norm::signaturesFromJson(std::string_view text, std::string &error) {
  std::optional<Json> json = JsonParser(text).parseDocument(error);
  if (!json)
    return std::nullopt;
  if (json->type != Json::Type::Array) {
    error = "expected a JSON array of kernel signatures";
    return std::nullopt;
  }
  std::vector<KernelSignature> result;
  for (const Json &element : json->array) {
    std::optional<KernelSignature> sig = signatureFromJson(element, error);
    if (!sig)
      return std::nullopt;
    result.push_back(std::move(*sig));
  }
  return result;
}
