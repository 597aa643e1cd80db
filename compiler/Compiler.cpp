//===- Compiler.cpp - norm programs to PTX, in process --------------------===//
//
// Thread safety: every call builds its own MLIRContext (with MLIR's own
// threading off) from one immutable, lazily built DialectRegistry; nothing
// else is shared, so concurrent calls need no locking. Errors never abort:
// diagnostics are collected into the returned Status.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"

#include "compiler/KernelBundle.h"
#include "compiler/KernelDescription.h"
#include "dialects/NormOps.h"
#include "dialects/RealFormat.h"
#include "passes/LoweringPasses.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;
using ::norm::CompiledKernel;
using ::norm::CompiledModule;
using ::norm::ElementType;
using ::norm::LaunchConfig;
using ::norm::OpSpec;
using ::norm::Status;
using ::norm::TargetOptions;

namespace {

const DialectRegistry &getRegistry() {
  static const DialectRegistry registry = [] {
    DialectRegistry r;
    r.insert<mlir::norm::NormDialect, func::FuncDialect, arith::ArithDialect,
             gpu::GPUDialect, LLVM::LLVMDialect, math::MathDialect,
             memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect,
             vector::VectorDialect>();
    mlir::norm::registerNormPtxExtensions(r);
    return r;
  }();
  return registry;
}

/// A context of its own per call, collecting error diagnostics.
class Session {
public:
  Session()
      : context(getRegistry(), MLIRContext::Threading::DISABLED),
        handler(&context, [this](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return success();
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "\n";
          os << diag.getLocation() << ": " << diag;
          for (const Diagnostic &note : diag.getNotes())
            os << "\n  note: " << note;
          return success();
        }) {}

  Status error(const llvm::Twine &what) const {
    std::string message = what.str();
    if (!messages.empty())
      message += ":\n" + messages;
    return Status::error(std::move(message));
  }

  MLIRContext context;

private:
  std::string messages;
  ScopedDiagnosticHandler handler;
};

std::string typeName(ElementType type) {
  return std::string(::norm::getElementTypeName(type));
}

std::string rowType(int64_t hidden, ElementType type) {
  return llvm::formatv("tensor<?x{0}x{1}>", hidden, typeName(type)).str();
}
std::string paramType(int64_t length, ElementType type) {
  return llvm::formatv("tensor<{0}x{1}>", length, typeName(type)).str();
}
std::string launchAttr(const LaunchConfig &launch) {
  return llvm::formatv("#norm.launch<vector = {0}, threads_per_row = {1}, "
                       "warps = {2}, rows_per_cta = {3}>",
                       launch.vector, launch.threadsPerRow, launch.warps,
                       launch.rowsPerCta)
      .str();
}

/// The function `@kernel` holding the one kernel op of `spec`, as text.
std::string writeKernelSource(const OpSpec &spec, const LaunchConfig &launch) {
  std::string args, results, body;
  llvm::raw_string_ostream argsOs(args), resultsOs(results), bodyOs(body);
  auto arg = [&](StringRef name, const std::string &type) {
    argsOs << (args.empty() ? "" : ", ") << "%" << name << ": " << type;
    return llvm::formatv("%{0}", name).str();
  };
  // ` name(%name : type)` for an optional operand.
  auto optional = [&](bool present, StringRef name, const std::string &type) {
    if (!present)
      return std::string();
    return llvm::formatv(" {0}({1} : {2})", name, arg(name, type), type).str();
  };

  if (spec.kind == OpSpec::Kind::BatchNormStats) {
    std::string in = rowType(spec.hidden, spec.input);
    std::string stat = paramType(spec.hidden, ElementType::f32);
    bodyOs << "  %mean, %var = norm.column_stats " << arg("input", in)
           << " {launch = " << launchAttr(launch) << "} : " << in << " -> "
           << stat << ", " << stat << "\n  return %mean, %var : " << stat
           << ", " << stat << "\n";
    resultsOs << stat << ", " << stat;
  } else if (spec.kind == OpSpec::Kind::QKNormPrologue) {
    int64_t d = spec.hidden;
    std::string qkv =
        rowType((spec.numQHeads + 2 * spec.numKvHeads) * d, spec.input);
    std::string q = rowType(spec.numQHeads * d, spec.output);
    std::string k = rowType(spec.numKvHeads * d, spec.output);
    std::string w = paramType(d, spec.param);
    std::string qkvName = arg("qkv", qkv);
    bodyOs << "  %q, %k = norm.qk_norm_prologue <" << (spec.qkL2 ? "l2" : "rms")
           << "> " << qkvName << optional(spec.hasWeight, "q_weight", w)
           << optional(spec.hasWeight, "k_weight", w) << " eps("
           << mlir::norm::formatReal(spec.eps)
           << ") {num_q_heads = " << spec.numQHeads
           << " : i64, num_kv_heads = " << spec.numKvHeads
           << " : i64, head_dim = " << d
           << " : i64, launch = " << launchAttr(launch) << "} : " << qkv
           << " -> " << q << ", " << k << "\n  return %q, %k : " << q << ", "
           << k << "\n";
    resultsOs << q << ", " << k;
  } else {
    const char *statistic = "none";
    switch (spec.kind) {
    case OpSpec::Kind::RMSNorm:
      statistic = "rms";
      break;
    case OpSpec::Kind::LayerNorm:
    case OpSpec::Kind::GroupNorm:
      statistic = "mean_var";
      break;
    case OpSpec::Kind::L2Norm:
      statistic = "l2";
      break;
    default:
      break;
    }
    bool perChannel = spec.kind == OpSpec::Kind::BatchNormInference;
    std::string in = rowType(spec.hidden, spec.input);
    std::string out = rowType(spec.hidden, spec.output);
    std::string p = paramType(spec.hidden, spec.param);
    std::string inputName = arg("input", in);
    bodyOs << "  %out" << (spec.writeResidual ? ":2" : "")
           << " = norm.fused_row <" << statistic << "> " << inputName
           << optional(spec.hasAddend, "addend",
                       rowType(spec.hidden, spec.addendType))
           << optional(spec.hasSkip, "skip",
                       rowType(spec.hidden, spec.skipType))
           << optional(spec.hasWeight, "weight", p)
           << optional(spec.hasBias, "bias", p)
           << optional(perChannel, "mean", p)
           << optional(perChannel, "variance", p) << " eps("
           << mlir::norm::formatReal(spec.eps) << ") alpha("
           << mlir::norm::formatReal(spec.alpha) << ") offset("
           << mlir::norm::formatReal(spec.weightOffset)
           << ") {groups = " << spec.groups << " : i64"
           << (spec.f32Residual ? ", f32_residual" : "")
           << ", launch = " << launchAttr(launch) << "} : " << in << " -> "
           << out << (spec.writeResidual ? ", " + in : "") << "\n";
    resultsOs << out << (spec.writeResidual ? ", " + in : "");
    bodyOs << "  return " << (spec.writeResidual ? "%out#0, %out#1" : "%out")
           << " : " << results << "\n";
  }
  return llvm::formatv("func.func @kernel({0}) -> ({1}) {{\n{2}}\n", args,
                       results, body)
      .str();
}

/// The kernel source of `spec`, parsed and verified in `session`.
FailureOr<OwningOpRef<ModuleOp>> buildKernelModule(Session &session,
                                                   const OpSpec &spec,
                                                   const LaunchConfig &launch) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      writeKernelSource(spec, launch), &session.context, "kernel-source");
  if (!module)
    return failure();
  return module;
}

Operation *findKernelOp(ModuleOp module) {
  Operation *found = nullptr;
  module.walk([&](Operation *op) {
    if (::norm::isKernelOp(op)) {
      found = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

Status getPipelineOptions(const TargetOptions &target,
                          mlir::norm::NormLowerToPtxOptions &options) {
  options.chip = target.chip;
  options.maxSharedBytes = target.maxSharedBytes;
  options.ptxVersion = target.ptxVersion;
  std::string message;
  if (failed(mlir::norm::verifyNormLowerToPtxOptions(
          options, [&](const llvm::Twine &what) {
            message = what.str();
            return failure();
          })))
    return Status::error(message);
  return Status::success();
}

} // namespace

namespace norm {

Status buildKernelSource(const OpSpec &spec, const LaunchConfig &launch,
                         std::string &mlir) {
  Session session;
  FailureOr<OwningOpRef<ModuleOp>> module =
      buildKernelModule(session, spec, launch);
  if (failed(module))
    return session.error("invalid operation or launch configuration");
  llvm::raw_string_ostream os(mlir);
  (*module)->print(os);
  return Status::success();
}

Status compileKernel(const OpSpec &spec, const LaunchConfig &launch,
                     const TargetOptions &target, CompiledKernel &result) {
  mlir::norm::NormLowerToPtxOptions options;
  if (Status status = getPipelineOptions(target, options); !status)
    return status;
  Session session;
  FailureOr<OwningOpRef<ModuleOp>> module =
      buildKernelModule(session, spec, launch);
  if (failed(module))
    return session.error("invalid operation or launch configuration");
  Operation *kernelOp = findKernelOp(**module);

  // The kernel alone: the runtime asks for a scalar fallback by itself.
  PassManager generate(&session.context);
  mlir::norm::NormGenerateKernelsOptions generateOptions;
  generateOptions.scalarFallback = false;
  generateOptions.chip = target.chip;
  generateOptions.maxSharedBytes = target.maxSharedBytes;
  generate.addPass(mlir::norm::createNormGenerateKernels(generateOptions));
  if (failed(generate.run(**module)))
    return session.error("kernel generation failed");
  FailureOr<KernelSignature> signature =
      describeKernel(kernelOp, {}, target.getMaxSharedBytes());
  if (failed(signature))
    return session.error("kernel description failed");
  result.signature = std::move(*signature);
  result.kernelIR.clear();
  {
    llvm::raw_string_ostream os(result.kernelIR);
    (*module)->walk([&](gpu::GPUFuncOp func) { func.print(os); });
  }

  PassManager lower(&session.context);
  mlir::norm::buildNormKernelsToPtxPipeline(lower, options);
  if (failed(lower.run(**module)))
    return session.error("lowering to PTX failed");
  FailureOr<std::string> ptx = getKernelPtx(**module);
  if (failed(ptx))
    return session.error("no PTX");
  result.ptx = std::move(*ptx);
  result.cubin.clear();
  if (target.emitCubin)
    return assembleCubin(result.ptx, target, result.cubin);
  return Status::success();
}

Status compileProgram(std::string_view mlir, const TargetOptions &target,
                      CompiledModule &result) {
  mlir::norm::NormLowerToPtxOptions options;
  if (Status status = getPipelineOptions(target, options); !status)
    return status;
  Session session;
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      llvm::StringRef(mlir.data(), mlir.size()), &session.context, "program");
  if (!module)
    return session.error("invalid program");

  PassManager pm(&session.context);
  mlir::norm::buildNormFusePipeline(pm, mlir::norm::NormFuseOptions());
  mlir::norm::buildNormLowerToPtxPipeline(pm, options);
  if (failed(pm.run(*module)))
    return session.error("compilation failed");
  FailureOr<std::string> ptx = getKernelPtx(*module);
  if (failed(ptx))
    return session.error("no PTX");
  FailureOr<std::vector<KernelSignature>> kernels =
      getBundleSignatures(*module, *ptx, target.getMaxSharedBytes());
  if (failed(kernels))
    return session.error("kernel description failed");
  result.ptx = std::move(*ptx);
  result.kernels = std::move(*kernels);
  result.cubin.clear();
  if (target.emitCubin)
    return assembleCubin(result.ptx, target, result.cubin);
  return Status::success();
}

std::string_view getCompilerVersion() {
  // Bump the generation with every change to the generated code.
  static const std::string version =
      "norm-opt-codegen-2 (LLVM " LLVM_VERSION_STRING ")";
  return version;
}

//===----------------------------------------------------------------------===//
// ptxas
//===----------------------------------------------------------------------===//

static std::string findPtxas(const TargetOptions &target) {
  if (!target.ptxasPath.empty())
    return target.ptxasPath;
  if (const char *cudaHome = std::getenv("CUDA_HOME")) {
    llvm::SmallString<256> path(cudaHome);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(path))
      return std::string(path);
  }
  if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName("ptxas"))
    return *path;
  // Where the CUDA installers put it.
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda/bin/ptxas";
  return {};
}

Status assembleCubin(std::string_view ptx, const TargetOptions &target,
                     std::vector<uint8_t> &cubin) {
  std::string ptxas = findPtxas(target);
  if (ptxas.empty())
    return Status::error("ptxas not found: set TargetOptions::ptxasPath or "
                         "CUDA_HOME, or put ptxas on PATH (the CUDA toolkit "
                         "provides it)");
  llvm::SmallString<128> ptxPath, cubinPath, logPath;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("norm-kernel", "ptx", fd, ptxPath))
    return Status::error("cannot create a temporary file for ptxas");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  llvm::scope_exit cleanup([&] {
    for (const llvm::SmallString<128> &path : {ptxPath, cubinPath, logPath})
      if (!path.empty())
        llvm::sys::fs::remove(path);
  });
  if (llvm::sys::fs::createTemporaryFile("norm-kernel", "cubin", cubinPath) ||
      llvm::sys::fs::createTemporaryFile("norm-ptxas", "log", logPath))
    return Status::error("cannot create a temporary file for ptxas");

  std::string arch = "-arch=" + target.chip;
  llvm::SmallVector<llvm::StringRef> args = {ptxas, arch, ptxPath, "-o",
                                             cubinPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  std::string error;
  int code =
      llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                /*SecondsToWait=*/0, /*MemoryLimit=*/0, &error);
  if (code != 0) {
    std::string log;
    if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
      log = (*buffer)->getBuffer().str();
    return Status::error(ptxas + " failed" +
                         (error.empty() ? "" : " (" + error + ")") + ": " +
                         log);
  }
  auto buffer = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!buffer)
    return Status::error("cannot read the cubin that ptxas wrote");
  llvm::StringRef bytes = (*buffer)->getBuffer();
  cubin.assign(bytes.begin(), bytes.end());
  return Status::success();
}

} // namespace norm
