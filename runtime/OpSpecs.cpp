//===- OpSpecs.cpp - operation descriptions: checks, identity, buffers ----===//

#include "runtime/OpSpecs.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

using namespace norm::jit;

using Kind = OpSpec::Kind;

/// Larger rows are a caller's bug (a size in bytes passed as elements, say),
/// and keep every size product far from overflow.
static constexpr int64_t kMaxHidden = int64_t(1) << 24;

static constexpr BufferSlot kAllSlots[] = {
    BufferSlot::Input,    BufferSlot::Addend,  BufferSlot::Skip,
    BufferSlot::Weight,   BufferSlot::Bias,    BufferSlot::Mean,
    BufferSlot::Variance, BufferSlot::Output,  BufferSlot::ResidualOut,
    BufferSlot::Qkv,      BufferSlot::QWeight, BufferSlot::KWeight,
    BufferSlot::Q,        BufferSlot::K};
static_assert(sizeof(kAllSlots) / sizeof(kAllSlots[0]) == kNumBufferSlots);

std::string_view norm::jit::getBufferSlotName(BufferSlot slot) {
  switch (slot) {
  case BufferSlot::Input:
    return "input";
  case BufferSlot::Addend:
    return "addend";
  case BufferSlot::Skip:
    return "skip";
  case BufferSlot::Weight:
    return "weight";
  case BufferSlot::Bias:
    return "bias";
  case BufferSlot::Mean:
    return "mean";
  case BufferSlot::Variance:
    return "variance";
  case BufferSlot::Output:
    return "output";
  case BufferSlot::ResidualOut:
    return "residual_out";
  case BufferSlot::Qkv:
    return "qkv";
  case BufferSlot::QWeight:
    return "q_weight";
  case BufferSlot::KWeight:
    return "k_weight";
  case BufferSlot::Q:
    return "q";
  case BufferSlot::K:
    return "k";
  }
  return "?";
}

std::optional<BufferSlot> norm::jit::parseBufferSlot(std::string_view name) {
  for (BufferSlot slot : kAllSlots)
    if (getBufferSlotName(slot) == name)
      return slot;
  return std::nullopt;
}

static constexpr Kind kAllKinds[] = {
    Kind::RMSNorm,        Kind::LayerNorm,          Kind::L2Norm,
    Kind::GroupNorm,      Kind::BatchNormInference, Kind::Elementwise,
    Kind::BatchNormStats, Kind::QKNormPrologue};

std::string_view norm::jit::getOpKindName(Kind kind) {
  switch (kind) {
  case Kind::RMSNorm:
    return "rms_norm";
  case Kind::LayerNorm:
    return "layer_norm";
  case Kind::L2Norm:
    return "l2_norm";
  case Kind::GroupNorm:
    return "group_norm";
  case Kind::BatchNormInference:
    return "batch_norm_inference";
  case Kind::Elementwise:
    return "elementwise";
  case Kind::BatchNormStats:
    return "batch_norm_stats";
  case Kind::QKNormPrologue:
    return "qk_norm";
  }
  return "?";
}

static bool usesEps(Kind kind) {
  return kind != Kind::Elementwise && kind != Kind::BatchNormStats;
}

static bool isPositiveFinite(double value) {
  return value > 0.0 && std::isfinite(value);
}

static std::string formatNumber(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

Status norm::jit::validateOpSpec(const OpSpec &spec) {
  auto invalid = [&](const std::string &message) {
    return Status::error(ErrorCode::InvalidArgument,
                         std::string(getOpKindName(spec.kind)) + ": " +
                             message);
  };
  bool knownKind = false;
  for (Kind kind : kAllKinds)
    knownKind |= kind == spec.kind;
  if (!knownKind)
    return Status::error(ErrorCode::InvalidArgument,
                         "unknown operation kind " +
                             std::to_string(static_cast<int>(spec.kind)));
  for (ElementType type :
       {spec.input, spec.output, spec.param, spec.addendType, spec.skipType})
    if (getElementTypeName(type) == "?")
      return invalid("unknown element type " +
                     std::to_string(static_cast<int>(type)));

  const char *sizeName =
      spec.kind == Kind::QKNormPrologue ? "head dim" : "hidden size";
  if (spec.hidden <= 0 || spec.hidden > kMaxHidden)
    return invalid(std::string(sizeName) + " must be in [1, " +
                   std::to_string(kMaxHidden) + "], got " +
                   std::to_string(spec.hidden));
  if (usesEps(spec.kind) && !isPositiveFinite(spec.eps))
    return invalid("eps must be a positive finite number, got " +
                   formatNumber(spec.eps));

  if (spec.kind == Kind::BatchNormStats) {
    if (spec.hasWeight || spec.hasBias || spec.hasAddend || spec.hasSkip ||
        spec.writeResidual || spec.f32Residual)
      return invalid("column statistics take only an input");
    return Status::success();
  }

  if (spec.kind == Kind::QKNormPrologue) {
    if (spec.numQHeads <= 0 || spec.numKvHeads <= 0 ||
        spec.numQHeads > kMaxHidden || spec.numKvHeads > kMaxHidden)
      return invalid("QK-Norm needs positive head counts, got " +
                     std::to_string(spec.numQHeads) + " query and " +
                     std::to_string(spec.numKvHeads) + " key/value heads");
    if ((spec.numQHeads + 2 * spec.numKvHeads) * spec.hidden > kMaxHidden)
      return invalid("the packed qkv row is too long");
    if (spec.hasBias || spec.hasAddend || spec.hasSkip || spec.writeResidual ||
        spec.f32Residual || spec.weightOffset != 0.0 || spec.groups != 1)
      return invalid("the QK-Norm prologue takes only qkv and optional "
                     "q/k weights");
    return Status::success();
  }

  if (!std::isfinite(spec.alpha) || !(spec.alpha > 0.0))
    return invalid("alpha must be a positive finite number, got " +
                   formatNumber(spec.alpha));
  if (!spec.hasAddend) {
    if (spec.alpha != 1.0)
      return invalid("alpha needs an addend");
    if (spec.writeResidual)
      return invalid("writing the residual needs an addend");
    if (spec.f32Residual)
      return invalid("an f32 residual needs an addend");
  }
  if (!std::isfinite(spec.weightOffset))
    return invalid("the weight offset must be finite");
  if (spec.weightOffset != 0.0 && !spec.hasWeight)
    return invalid("a weight offset needs a weight");
  if (spec.groups < 1)
    return invalid("groups must be positive, got " +
                   std::to_string(spec.groups));
  if (spec.kind != Kind::GroupNorm && spec.groups != 1)
    return invalid("groups apply to group_norm only");
  if (spec.hidden % spec.groups != 0)
    return invalid("groups (" + std::to_string(spec.groups) +
                   ") must divide the hidden size (" +
                   std::to_string(spec.hidden) + ")");
  if (spec.numQHeads != 0 || spec.numKvHeads != 0 || spec.qkL2)
    return invalid("head counts apply to qk_norm only");
  return Status::success();
}

OpSpec norm::jit::normalizeOpSpec(const OpSpec &spec) {
  OpSpec n = spec;
  OpSpec defaults;
  if (!n.hasAddend) {
    n.addendType = defaults.addendType;
    n.alpha = defaults.alpha;
  }
  if (!n.hasSkip)
    n.skipType = defaults.skipType;
  bool hasParams =
      n.hasWeight || n.hasBias || n.kind == Kind::BatchNormInference;
  if (!hasParams)
    n.param = defaults.param;
  if (!usesEps(n.kind))
    n.eps = 0.0;
  if (n.kind != Kind::QKNormPrologue) {
    n.numQHeads = n.numKvHeads = 0;
    n.qkL2 = false;
  }
  if (n.kind == Kind::BatchNormStats)
    n.output = ElementType::f32;
  return n;
}

//===----------------------------------------------------------------------===//
// Canonical text
//===----------------------------------------------------------------------===//

static std::string hexDouble(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%a", value);
  return buffer;
}

std::string norm::jit::getCanonicalSpec(const OpSpec &original) {
  OpSpec s = normalizeOpSpec(original);
  auto type = [](ElementType t) { return std::string(getElementTypeName(t)); };
  std::ostringstream os;
  os << "op=" << getOpKindName(s.kind) << " hidden=" << s.hidden
     << " input=" << type(s.input) << " output=" << type(s.output)
     << " param=" << type(s.param) << " weight=" << s.hasWeight
     << " bias=" << s.hasBias << " addend=" << s.hasAddend
     << " addend_type=" << type(s.addendType)
     << " residual_out=" << s.writeResidual << " f32_residual=" << s.f32Residual
     << " skip=" << s.hasSkip << " skip_type=" << type(s.skipType)
     << " eps=" << hexDouble(s.eps) << " alpha=" << hexDouble(s.alpha)
     << " offset=" << hexDouble(s.weightOffset) << " groups=" << s.groups
     << " q_heads=" << s.numQHeads << " kv_heads=" << s.numKvHeads
     << " qk_l2=" << s.qkL2;
  return os.str();
}

std::optional<OpSpec> norm::jit::parseCanonicalSpec(std::string_view text,
                                                    std::string &error) {
  std::map<std::string, std::string, std::less<>> fields;
  std::istringstream is{std::string(text)};
  std::string token;
  while (is >> token) {
    size_t eq = token.find('=');
    if (eq == std::string::npos ||
        !fields.emplace(token.substr(0, eq), token.substr(eq + 1)).second) {
      error = "malformed operation field '" + token + "'";
      return std::nullopt;
    }
  }
  auto take = [&](const char *key) -> std::optional<std::string> {
    auto it = fields.find(key);
    if (it == fields.end()) {
      if (error.empty())
        error = std::string("operation lacks field '") + key + "'";
      return std::nullopt;
    }
    std::string value = it->second;
    fields.erase(it);
    return value;
  };
  auto integer = [&](const char *key, int64_t &out) {
    std::optional<std::string> v = take(key);
    if (!v)
      return;
    char *end = nullptr;
    out = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end)
      error = std::string("field '") + key + "' is not an integer";
  };
  auto flag = [&](const char *key, bool &out) {
    int64_t value = 0;
    integer(key, value);
    out = value != 0;
  };
  auto real = [&](const char *key, double &out) {
    std::optional<std::string> v = take(key);
    if (!v)
      return;
    char *end = nullptr;
    out = std::strtod(v->c_str(), &end);
    if (v->empty() || *end)
      error = std::string("field '") + key + "' is not a number";
  };
  auto type = [&](const char *key, ElementType &out) {
    std::optional<std::string> v = take(key);
    if (!v)
      return;
    if (std::optional<ElementType> t = parseElementType(*v))
      out = *t;
    else
      error = std::string("field '") + key + "' is not an element type";
  };

  OpSpec spec;
  if (std::optional<std::string> op = take("op")) {
    bool found = false;
    for (Kind kind : kAllKinds)
      if (getOpKindName(kind) == *op) {
        spec.kind = kind;
        found = true;
      }
    if (!found)
      error = "unknown operation kind '" + *op + "'";
  }
  integer("hidden", spec.hidden);
  type("input", spec.input);
  type("output", spec.output);
  type("param", spec.param);
  flag("weight", spec.hasWeight);
  flag("bias", spec.hasBias);
  flag("addend", spec.hasAddend);
  type("addend_type", spec.addendType);
  flag("residual_out", spec.writeResidual);
  flag("f32_residual", spec.f32Residual);
  flag("skip", spec.hasSkip);
  type("skip_type", spec.skipType);
  real("eps", spec.eps);
  real("alpha", spec.alpha);
  real("offset", spec.weightOffset);
  integer("groups", spec.groups);
  integer("q_heads", spec.numQHeads);
  integer("kv_heads", spec.numKvHeads);
  flag("qk_l2", spec.qkL2);
  if (error.empty() && !fields.empty())
    error = "unknown operation field '" + fields.begin()->first + "'";
  if (!error.empty())
    return std::nullopt;
  return spec;
}

std::string norm::jit::describeOpSpec(const OpSpec &spec) {
  std::ostringstream os;
  os << getOpKindName(spec.kind) << " h" << spec.hidden << " "
     << getElementTypeName(spec.input);
  if (spec.output != spec.input && spec.kind != Kind::BatchNormStats)
    os << "->" << getElementTypeName(spec.output);
  if (spec.kind == Kind::QKNormPrologue)
    os << " heads " << spec.numQHeads << "/" << spec.numKvHeads
       << (spec.qkL2 ? " l2" : "");
  if (spec.groups != 1)
    os << " groups " << spec.groups;
  if (spec.hasAddend)
    os << " +addend";
  if (spec.writeResidual)
    os << " +residual_out";
  if (spec.f32Residual)
    os << " +f32_residual";
  if (spec.hasSkip)
    os << " +skip";
  if (!spec.hasWeight && spec.kind != Kind::BatchNormStats)
    os << " no-weight";
  if (spec.hasBias)
    os << " +bias";
  if (spec.weightOffset != 0.0)
    os << " offset " << spec.weightOffset;
  return os.str();
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

std::vector<BufferSpec> norm::jit::getBuffers(const OpSpec &spec) {
  std::vector<BufferSpec> buffers;
  auto add = [&](BufferSlot slot, ElementType type, int64_t cols, bool rows2D,
                 bool written) {
    buffers.push_back({slot, type, cols, rows2D, written});
  };
  int64_t h = spec.hidden;
  switch (spec.kind) {
  case Kind::BatchNormStats:
    add(BufferSlot::Input, spec.input, h, true, false);
    add(BufferSlot::Mean, ElementType::f32, h, false, true);
    add(BufferSlot::Variance, ElementType::f32, h, false, true);
    return buffers;
  case Kind::QKNormPrologue: {
    int64_t q = spec.numQHeads, kv = spec.numKvHeads;
    add(BufferSlot::Qkv, spec.input, (q + 2 * kv) * h, true, false);
    if (spec.hasWeight) {
      add(BufferSlot::QWeight, spec.param, h, false, false);
      add(BufferSlot::KWeight, spec.param, h, false, false);
    }
    add(BufferSlot::Q, spec.output, q * h, true, true);
    add(BufferSlot::K, spec.output, kv * h, true, true);
    return buffers;
  }
  default:
    break;
  }
  // norm.fused_row: input, addend, skip, weight, bias, mean, variance, output,
  // residual_out.
  add(BufferSlot::Input, spec.input, h, true, false);
  if (spec.hasAddend)
    add(BufferSlot::Addend, spec.addendType, h, true, false);
  if (spec.hasSkip)
    add(BufferSlot::Skip, spec.skipType, h, true, false);
  if (spec.hasWeight)
    add(BufferSlot::Weight, spec.param, h, false, false);
  if (spec.hasBias)
    add(BufferSlot::Bias, spec.param, h, false, false);
  if (spec.kind == Kind::BatchNormInference) {
    add(BufferSlot::Mean, spec.param, h, false, false);
    add(BufferSlot::Variance, spec.param, h, false, false);
  }
  add(BufferSlot::Output, spec.output, h, true, true);
  if (spec.writeResidual)
    add(BufferSlot::ResidualOut, spec.input, h, true, true);
  return buffers;
}

int64_t norm::jit::getRowLength(const OpSpec &spec) {
  if (spec.kind == Kind::GroupNorm && spec.groups > 0)
    return spec.hidden / spec.groups;
  return spec.hidden;
}

int64_t norm::jit::getBytesPerRow(const OpSpec &spec) {
  int64_t bytes = 0;
  for (const BufferSpec &buffer : getBuffers(spec))
    if (buffer.rows2D)
      bytes += buffer.cols * getElementBytes(buffer.type);
  return bytes;
}
