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
#include "dialects/NormOps.h"
#include "passes/LoweringPasses.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
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
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;
using ::norm::BufferSpec;
using ::norm::CompiledKernel;
using ::norm::CompiledModule;
using ::norm::ErrorCode;
using ::norm::KernelSignature;
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

  /// A CompileError: `what`, and the diagnostics the session collected.
  Status error(const llvm::Twine &what) const {
    std::string message = what.str();
    if (!messages.empty())
      message += ":\n" + messages;
    return Status::error(ErrorCode::CompileError, std::move(message));
  }

  MLIRContext context;

private:
  std::string messages;
  ScopedDiagnosticHandler handler;
};

/// A module for `target` with one function `@kernel` whose body is the
/// kernel op of `spec` with `launch`: the kernel's inputs are the function's
/// arguments and its outputs its results, in the kernel's buffer order.
FailureOr<OwningOpRef<ModuleOp>>
buildKernelModule(Session &session, const OpSpec &spec,
                  const LaunchConfig &launch, const TargetOptions &target) {
  MLIRContext *context = &session.context;
  context->loadDialect<mlir::norm::NormDialect, func::FuncDialect>();
  Location loc = FileLineColLoc::get(context, "kernel-source", 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  mlir::norm::setTargetOptions(*module, target);

  std::vector<BufferSpec> buffers = ::norm::getBuffers(spec);
  auto isInput = [](const BufferSpec &buffer) {
    return !buffer.scratch && (!buffer.written || buffer.updated);
  };
  auto isResult = [](const BufferSpec &buffer) {
    return !buffer.scratch && buffer.written;
  };
  SmallVector<Type> inputs, results;
  for (const BufferSpec &buffer : buffers) {
    Type type = mlir::norm::getBufferType(context, buffer, /*rows=*/-1);
    if (isInput(buffer))
      inputs.push_back(type);
    if (isResult(buffer))
      results.push_back(type);
  }
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  auto func = func::FuncOp::create(builder, loc, "kernel",
                                   builder.getFunctionType(inputs, results));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  llvm::SmallDenseMap<int, Value> arguments;
  unsigned next = 0;
  for (const BufferSpec &buffer : buffers)
    if (isInput(buffer))
      arguments[static_cast<int>(buffer.slot)] = body->getArgument(next++);
  FailureOr<mlir::norm::KernelOpInterface> op = mlir::norm::createKernelOp(
      builder, loc, spec, /*rows=*/-1, [&](::norm::BufferSlot slot) {
        return arguments.lookup(static_cast<int>(slot));
      });
  if (failed(op))
    return failure();
  op->setLaunchAttr(mlir::norm::getLaunchAttr(context, launch));
  SmallVector<Value> returned;
  for (const BufferSpec &buffer : buffers)
    if (isResult(buffer))
      returned.push_back(op->getBuffer(buffer.slot));
  func::ReturnOp::create(builder, loc, returned);
  if (failed(verify(*module)))
    return failure();
  return module;
}

Operation *findKernelOp(ModuleOp module) {
  Operation *found = nullptr;
  module.walk([&](mlir::norm::KernelOpInterface op) {
    found = op;
    return WalkResult::interrupt();
  });
  return found;
}

} // namespace

namespace norm {

/// InvalidArgument when `spec`, `launch` or `target` breaks a rule of the
/// kernel model: the caller's mistake, not the compiler's.
static Status checkRequest(const OpSpec &spec, const LaunchConfig &launch,
                           const TargetOptions &target) {
  if (Status status = target.verify(); !status)
    return status;
  KernelSignature signature;
  return describeKernel(spec, launch, target, signature);
}

Status buildKernelSource(const OpSpec &spec, const LaunchConfig &launch,
                         const TargetOptions &target, std::string &mlir) {
  if (Status status = checkRequest(spec, launch, target); !status)
    return status;
  Session session;
  FailureOr<OwningOpRef<ModuleOp>> module =
      buildKernelModule(session, spec, launch, target);
  if (failed(module))
    return session.error("cannot build the kernel op");
  llvm::raw_string_ostream os(mlir);
  (*module)->print(os);
  return Status::success();
}

Status compileKernel(const OpSpec &spec, const LaunchConfig &launch,
                     const TargetOptions &target, CompiledKernel &result) {
  if (Status status = checkRequest(spec, launch, target); !status)
    return status;
  Session session;
  FailureOr<OwningOpRef<ModuleOp>> module =
      buildKernelModule(session, spec, launch, target);
  if (failed(module))
    return session.error("cannot build the kernel op");
  auto kernelOp = cast<mlir::norm::KernelOpInterface>(findKernelOp(**module));

  // The kernel alone: the runtime asks for a scalar fallback by itself.
  PassManager generate(&session.context);
  mlir::norm::NormGenerateKernelsOptions generateOptions;
  generateOptions.scalarFallback = false;
  generate.addPass(mlir::norm::createNormGenerateKernels(generateOptions));
  if (failed(generate.run(**module)))
    return session.error("kernel generation failed");
  FailureOr<KernelSignature> signature =
      mlir::norm::describeKernel(kernelOp, launch, target);
  if (failed(signature))
    return session.error("kernel description failed");
  result.signature = std::move(*signature);
  result.kernelIR.clear();
  {
    llvm::raw_string_ostream os(result.kernelIR);
    (*module)->walk([&](gpu::GPUFuncOp func) { func.print(os); });
  }

  PassManager lower(&session.context);
  mlir::norm::buildNormKernelsToPtxPipeline(lower, /*optLevel=*/3);
  if (failed(lower.run(**module)))
    return session.error("lowering to PTX failed");
  FailureOr<std::string> ptx = getKernelPtx(**module);
  if (failed(ptx))
    return session.error("no PTX");
  result.ptx = std::move(*ptx);
  return Status::success();
}

/// Parses `mlir` into `module` (in `session`), sets `target`, fuses (with
/// `fuse`) and lowers it to PTX.
static Status lowerToPtx(Session &session, std::string_view mlir,
                         const TargetOptions &target, bool fuse,
                         OwningOpRef<ModuleOp> &module, std::string &ptx) {
  if (Status status = target.verify(); !status)
    return status;
  module = parseSourceString<ModuleOp>(
      llvm::StringRef(mlir.data(), mlir.size()), &session.context, "program");
  if (!module)
    return session.error("invalid program");
  mlir::norm::setTargetOptions(*module, target);

  PassManager pm(&session.context);
  if (fuse)
    mlir::norm::buildNormFusePipeline(pm, mlir::norm::NormFuseOptions());
  mlir::norm::buildNormLowerToPtxPipeline(pm, mlir::norm::LowerToPtxConfig());
  if (failed(pm.run(*module)))
    return session.error("compilation failed");
  FailureOr<std::string> result = getKernelPtx(*module);
  if (failed(result))
    return session.error("no PTX");
  ptx = std::move(*result);
  return Status::success();
}

Status compileProgram(std::string_view mlir, const TargetOptions &target,
                      CompiledModule &result) {
  Session session;
  OwningOpRef<ModuleOp> module;
  std::string ptx;
  if (Status status =
          lowerToPtx(session, mlir, target, /*fuse=*/true, module, ptx);
      !status)
    return status;
  FailureOr<std::vector<KernelSignature>> kernels =
      getBundleSignatures(*module, ptx);
  if (failed(kernels))
    return session.error("kernel description failed");
  result.ptx = std::move(ptx);
  result.kernels = std::move(*kernels);
  return Status::success();
}

Status compileKernelModule(std::string_view mlir, const TargetOptions &target,
                           std::string &ptx) {
  Session session;
  OwningOpRef<ModuleOp> module;
  return lowerToPtx(session, mlir, target, /*fuse=*/false, module, ptx);
}

std::string_view getCompilerVersion() {
  // Bump the generation with every change to the generated code.
  static const std::string version =
      "norm-opt-codegen-4 (LLVM " LLVM_VERSION_STRING ")";
  return version;
}

//===----------------------------------------------------------------------===//
// ptxas
//===----------------------------------------------------------------------===//

static std::string findPtxas(const std::string &ptxasPath) {
  if (!ptxasPath.empty())
    return ptxasPath;
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

/// Runs ptxas on `ptx` for `chip` with `extraArgs`, writing a cubin; its
/// log (stdout and stderr) in `log`.
static Status runPtxas(std::string_view ptx, std::string_view chip,
                       const std::string &ptxasPath,
                       llvm::ArrayRef<llvm::StringRef> extraArgs,
                       std::vector<uint8_t> &cubin, std::string &log) {
  auto fail = [](std::string message) {
    return Status::error(ErrorCode::CompileError, std::move(message));
  };
  std::string ptxas = findPtxas(ptxasPath);
  if (ptxas.empty())
    return fail("ptxas not found: pass its path, set CUDA_HOME, or put "
                "ptxas on PATH (the CUDA toolkit provides it)");
  llvm::SmallString<128> ptxPath, cubinPath, logPath;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("norm-kernel", "ptx", fd, ptxPath))
    return fail("cannot create a temporary file for ptxas");
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
    return fail("cannot create a temporary file for ptxas");

  std::string arch = "-arch=" + std::string(chip);
  llvm::SmallVector<llvm::StringRef> args = {ptxas, arch};
  args.append(extraArgs.begin(), extraArgs.end());
  args.append({ptxPath, "-o", cubinPath});
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  std::string error;
  int code =
      llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                /*SecondsToWait=*/0, /*MemoryLimit=*/0, &error);
  if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
    log = (*buffer)->getBuffer().str();
  if (code != 0)
    return fail(ptxas + " failed" + (error.empty() ? "" : " (" + error + ")") +
                ": " + log);
  auto buffer = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!buffer)
    return fail("cannot read the cubin that ptxas wrote");
  llvm::StringRef bytes = (*buffer)->getBuffer();
  cubin.assign(bytes.begin(), bytes.end());
  return Status::success();
}

Status assembleCubin(std::string_view ptx, std::string_view chip,
                     const std::string &ptxasPath,
                     std::vector<uint8_t> &cubin) {
  std::string log;
  return runPtxas(ptx, chip, ptxasPath, {}, cubin, log);
}

Status getKernelResources(std::string_view ptx, std::string_view chip,
                          const std::string &ptxasPath,
                          std::vector<KernelResources> &kernels) {
  std::vector<uint8_t> cubin;
  std::string log;
  if (Status status = runPtxas(ptx, chip, ptxasPath, {"-v"}, cubin, log);
      !status)
    return status;
  // ptxas info    : Compiling entry function 'NAME' for 'sm_90'
  //     N bytes stack frame, N bytes spill stores, N bytes spill loads
  // ptxas info    : Used N registers, ...
  static const llvm::Regex entry("Compiling entry function '([^']+)'");
  static const llvm::Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes "
                                 "spill stores, ([0-9]+) bytes spill loads");
  static const llvm::Regex used("Used ([0-9]+) registers");
  kernels.clear();
  llvm::SmallVector<llvm::StringRef, 4> match;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(log).split(lines, '\n');
  auto number = [](llvm::StringRef text) {
    int64_t value = 0;
    text.getAsInteger(10, value);
    return value;
  };
  for (llvm::StringRef line : lines) {
    if (entry.match(line, &match)) {
      kernels.push_back({match[1].str()});
    } else if (kernels.empty()) {
      continue;
    } else if (frame.match(line, &match)) {
      kernels.back().stackFrameBytes = number(match[1]);
      kernels.back().spillStoreBytes = number(match[2]);
      kernels.back().spillLoadBytes = number(match[3]);
    } else if (used.match(line, &match)) {
      kernels.back().registers = number(match[1]);
    }
  }
  if (kernels.empty())
    return Status::error(ErrorCode::CompileError,
                         "ptxas -v reported no kernel: " + log);
  return Status::success();
}

} // namespace norm
