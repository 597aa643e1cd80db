//===- OpOptions.cpp - operations on the command line ---------------------===//

#include "tools/norm-tune/OpOptions.h"

#include <cstdlib>
#include <sstream>

using namespace norm;
using namespace norm::jit;

const char *OpOptions::getHelp() {
  return "operation:\n"
         "  --op rms|layer|l2|qk    normalization (default rms)\n"
         "  --hidden N[,N...]       hidden sizes (head dim for qk)\n"
         "  --dtype bf16|f16|f32    input and output type (default bf16)\n"
         "  --out-dtype T           output type\n"
         "  --param-dtype T         weight/bias type\n"
         "  --eps X                 (default 1e-6)\n"
         "  --addend                fused residual add: v = alpha * x + "
         "addend\n"
         "  --residual-out          also store v\n"
         "  --f32-residual          normalize the unrounded f32 sum\n"
         "  --alpha X               DeepNorm's residual scale\n"
         "  --bias  --no-weight  --offset X (Gemma: 1)\n"
         "  --heads Q,KV            query and key/value heads (qk)\n";
}

static bool parseInteger(const std::string &text, int64_t &value) {
  char *end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0';
}

static bool parseReal(const std::string &text, double &value) {
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0';
}

/// "a,b,c" as integers.
static bool parseList(const std::string &text, std::vector<int64_t> &values) {
  std::stringstream stream(text);
  std::string item;
  values.clear();
  while (std::getline(stream, item, ',')) {
    int64_t value;
    if (!parseInteger(item, value))
      return false;
    values.push_back(value);
  }
  return !values.empty();
}

OpOptions::Parse OpOptions::parse(const std::vector<std::string> &args,
                                  size_t &i, std::string &error) {
  const std::string &arg = args[i];
  // Flags.
  struct Flag {
    const char *name;
    bool OpSpec::*field;
    bool value;
  };
  for (Flag flag : {Flag{"--addend", &OpSpec::hasAddend, true},
                    Flag{"--residual-out", &OpSpec::writeResidual, true},
                    Flag{"--f32-residual", &OpSpec::f32Residual, true},
                    Flag{"--bias", &OpSpec::hasBias, true},
                    Flag{"--no-weight", &OpSpec::hasWeight, false}})
    if (arg == flag.name) {
      base.*flag.field = flag.value;
      return Parse::Done;
    }

  // Options with a value.
  bool known = arg == "--op" || arg == "--hidden" || arg == "--dtype" ||
               arg == "--out-dtype" || arg == "--param-dtype" ||
               arg == "--eps" || arg == "--alpha" || arg == "--offset" ||
               arg == "--heads";
  if (!known)
    return Parse::NotMine;
  if (i + 1 >= args.size()) {
    error = arg + " needs a value";
    return Parse::Error;
  }
  const std::string &value = args[++i];
  auto bad = [&] {
    error = "bad value '" + value + "' for " + arg;
    return Parse::Error;
  };
  if (arg == "--op") {
    if (value == "rms")
      base.kind = OpSpec::Kind::RMSNorm;
    else if (value == "layer")
      base.kind = OpSpec::Kind::LayerNorm;
    else if (value == "l2")
      base.kind = OpSpec::Kind::L2Norm;
    else if (value == "qk")
      base.kind = OpSpec::Kind::QKNormPrologue;
    else
      return bad();
    return Parse::Done;
  }
  if (arg == "--hidden")
    return parseList(value, hidden) ? Parse::Done : bad();
  if (arg == "--dtype" || arg == "--out-dtype" || arg == "--param-dtype") {
    std::optional<ElementType> type = parseElementType(value);
    if (!type)
      return bad();
    if (arg != "--param-dtype")
      base.output = *type;
    if (arg == "--dtype")
      base.input = base.addendType = *type;
    if (arg != "--out-dtype")
      base.param = *type;
    return Parse::Done;
  }
  if (arg == "--heads") {
    std::vector<int64_t> heads;
    if (!parseList(value, heads) || heads.size() != 2)
      return bad();
    base.numQHeads = heads[0];
    base.numKvHeads = heads[1];
    return Parse::Done;
  }
  double *real = arg == "--eps"     ? &base.eps
                 : arg == "--alpha" ? &base.alpha
                                    : &base.weightOffset;
  return parseReal(value, *real) ? Parse::Done : bad();
}

Status OpOptions::getSpecs(std::vector<OpSpec> &specs) const {
  if (hidden.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "no hidden sizes (--hidden N[,N...])");
  specs.clear();
  for (int64_t size : hidden) {
    OpSpec spec = base;
    spec.hidden = size;
    if (Status status =
            verifyOpSpec(spec).withContext(getOpKindName(spec.kind));
        !status)
      return status;
    specs.push_back(spec);
  }
  return Status::success();
}
