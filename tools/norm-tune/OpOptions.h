//===- OpOptions.h - operations on the command line -------------*- C++ -*-===//
//
// The operation options norm-tune and normjit-bench share:
//
//   --op rms|layer|l2|qk     --hidden N[,N...]       --dtype bf16|f16|f32
//   --out-dtype T            --param-dtype T         --eps X
//   --addend  --residual-out  --f32-residual  --alpha X  (fused residual add)
//   --bias  --no-weight  --offset X                  --heads Q,KV (qk)
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMTUNE_OPOPTIONS_H
#define NORM_TOOLS_NORMTUNE_OPOPTIONS_H

#include "compiler/model/KernelModel.h"

#include <string>
#include <vector>

namespace norm::jit {

struct OpOptions {
  OpSpec base;
  std::vector<int64_t> hidden;

  OpOptions() { base.hasWeight = true; }

  enum class Parse { NotMine, Done, Error };
  /// Parses args[i] (and its value, advancing i) if it is an operation
  /// option; Error sets `error`.
  Parse parse(const std::vector<std::string> &args, size_t &i,
              std::string &error);

  /// One operation per hidden size, each checked (norm::verifyOpSpec).
  Status getSpecs(std::vector<OpSpec> &specs) const;

  static const char *getHelp();
};

} // namespace norm::jit

#endif // NORM_TOOLS_NORMTUNE_OPOPTIONS_H
