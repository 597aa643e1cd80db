//===- HostExecution.cpp - run generated kernels on the CPU ---------------===//

#include "compiler/HostExecution.h"

#include "dialects/NormDialect.h"
#include "passes/HostPasses.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <mutex>

using namespace mlir;
using namespace ::norm;

namespace {
/// A JIT-compiled host function and the parameters of its kernel.
struct HostFunction {
  void (*entry)(void **) = nullptr;
  std::vector<HostKernelParam> params;
};
} // namespace

namespace norm {
struct HostKernels::Impl {
  std::unique_ptr<ExecutionEngine> engine;
  std::vector<std::string> names;
  std::map<std::string, HostFunction, std::less<>> functions;
};
} // namespace norm

HostKernels::HostKernels(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
HostKernels::~HostKernels() = default;

static std::string printType(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The parameters of a host function, without its trailing grid size.
static std::vector<HostKernelParam> getParams(func::FuncOp host) {
  std::vector<HostKernelParam> params;
  for (Type type : host.getArgumentTypes().drop_back()) {
    HostKernelParam param;
    if (auto memref = dyn_cast<MemRefType>(type)) {
      param.isBuffer = true;
      param.elementType = printType(memref.getElementType());
    }
    params.push_back(param);
  }
  return params;
}

/// `file:line:col: [note: ]message`, as compilers print diagnostics.
static void printDiagnostic(llvm::raw_ostream &os, const Diagnostic &diag) {
  if (auto loc = dyn_cast<FileLineColLoc>(diag.getLocation()))
    os << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
       << loc.getColumn() << ": ";
  else
    os << diag.getLocation() << ": ";
  if (diag.getSeverity() == DiagnosticSeverity::Note)
    os << "note: ";
  os << diag << "\n";
}

static Status checkHostSignature(func::FuncOp host) {
  FunctionType type = host.getFunctionType();
  for (Type arg : type.getInputs().drop_back()) {
    auto memref = dyn_cast<MemRefType>(arg);
    if (memref ? memref.hasStaticShape() && memref.getLayout().isIdentity()
               : arg.isInteger(64))
      continue;
    return Status::error(ErrorCode::CompileError, "kernel " + host.getName().str() +
                         " has a parameter of type " + printType(arg) +
                         "; host kernels take static memrefs (bare "
                         "pointers) and i64 values");
  }
  return Status::success();
}

Status HostKernels::compile(std::string_view mlir,
                            const HostCompileOptions &options,
                            std::unique_ptr<HostKernels> &result) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

  DialectRegistry registry;
  registerAllDialects(registry);
  registry.insert<mlir::norm::NormDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // Many small modules: a thread pool per context would cost more than it
  // saves.
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    printDiagnostic(os, diag);
    for (const Diagnostic &note : diag.getNotes())
      printDiagnostic(os, note);
    return success();
  });
  auto fail = [&](std::string what) {
    return Status::error(ErrorCode::CompileError, what + (diagnostics.empty() ? "" : ":\n") +
                         diagnostics);
  };

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      llvm::StringRef(mlir), &context, "kernel module");
  if (!module)
    return fail("cannot parse the kernel module");

  PassManager kernels(&context);
  if (!options.kernelPipeline.empty()) {
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    if (failed(parsePassPipeline(options.kernelPipeline, kernels, errorStream)))
      return Status::error(ErrorCode::CompileError, "invalid kernel pipeline '" +
                           options.kernelPipeline + "': " + errors);
  }
  mlir::norm::NormKernelsToHostOptions toHost;
  toHost.blockSize = options.blockSize;
  toHost.reverseThreads = options.reverseThreads;
  kernels.addPass(mlir::norm::createNormKernelsToHost(toHost));
  if (failed(kernels.run(*module)))
    return fail("cannot turn the kernels into host functions");

  // Keep the host functions (and their constant tables) only: the rest of a
  // norm program (tensors, the kernel ops) has no CPU lowering and is not
  // needed.
  auto impl = std::make_unique<Impl>();
  for (Operation &op : llvm::make_early_inc_range(*module->getBody())) {
    if (auto global = dyn_cast<memref::GlobalOp>(op);
        global && (global.getConstant() ||
                   global.getSymName() == mlir::norm::kHostFaultSymbol))
      continue;
    auto host = dyn_cast<func::FuncOp>(op);
    if (!host || !host->hasAttr(mlir::norm::kHostKernelAttrName)) {
      op.erase();
      continue;
    }
    if (Status status = checkHostSignature(host); !status)
      return status;
    std::string name =
        host.getName().drop_back(mlir::norm::kHostFunctionSuffix.size()).str();
    impl->names.push_back(name);
    impl->functions[name].params = ::getParams(host);
  }
  if (impl->names.empty())
    return Status::error(ErrorCode::CompileError, "the module has no gpu.func kernels");

  PassManager lowering(&context);
  mlir::norm::buildHostToLLVMPipeline(lowering);
  if (failed(lowering.run(*module)))
    return fail("cannot lower the host kernels to LLVM");

  auto targetBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!targetBuilder)
    return Status::error(ErrorCode::CompileError, "no host target: " +
                         llvm::toString(targetBuilder.takeError()));
  if (!options.cpu.empty()) {
    targetBuilder->setCPU(options.cpu);
    targetBuilder->setFeatures("");
  }
  auto optLevel = static_cast<unsigned>(std::clamp(options.optLevel, 0, 3));
  targetBuilder->setCodeGenOptLevel(
      optLevel == 0   ? llvm::CodeGenOptLevel::None
      : optLevel == 1 ? llvm::CodeGenOptLevel::Less
      : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                      : llvm::CodeGenOptLevel::Aggressive);
  auto targetMachine = targetBuilder->createTargetMachine();
  if (!targetMachine)
    return Status::error(ErrorCode::CompileError, "no host target machine: " +
                         llvm::toString(targetMachine.takeError()));
  auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                               targetMachine->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(*module, engineOptions,
                                        std::move(*targetMachine));
  if (!engine)
    return fail("JIT compilation failed: " +
                llvm::toString(engine.takeError()));
  impl->engine = std::move(*engine);
  for (auto &[name, function] : impl->functions) {
    auto entry = impl->engine->lookupPacked(
        name + mlir::norm::kHostFunctionSuffix.str());
    if (!entry)
      return Status::error(ErrorCode::CompileError, "JIT lookup of " + name +
                           " failed: " + llvm::toString(entry.takeError()));
    function.entry = *entry;
  }
  result.reset(new HostKernels(std::move(impl)));
  return Status::success();
}

std::vector<std::string> HostKernels::getKernelNames() const {
  return impl->names;
}

std::vector<HostKernelParam>
HostKernels::getParams(std::string_view kernel) const {
  auto it = impl->functions.find(kernel);
  return it == impl->functions.end() ? std::vector<HostKernelParam>()
                                     : it->second.params;
}

Status HostKernels::launch(std::string_view kernel,
                           const std::vector<void *> &buffers,
                           const std::vector<int64_t> &integers,
                           int64_t gridX) const {
  auto it = impl->functions.find(kernel);
  if (it == impl->functions.end())
    return Status::invalid("no kernel named '" + std::string(kernel) + "'");
  const HostFunction &function = it->second;
  size_t numBuffers = llvm::count_if(
      function.params, [](const HostKernelParam &p) { return p.isBuffer; });
  size_t numIntegers = function.params.size() - numBuffers;
  if (buffers.size() != numBuffers || integers.size() != numIntegers)
    return Status::invalid("kernel " + std::string(kernel) + " takes " +
                         std::to_string(numBuffers) + " buffers and " +
                         std::to_string(numIntegers) + " integers, got " +
                         std::to_string(buffers.size()) + " and " +
                         std::to_string(integers.size()));
  if (gridX < 0)
    return Status::invalid("negative grid size");

  // The packed calling convention: one pointer per argument, to its value.
  std::vector<void *> pointers = buffers;
  std::vector<int64_t> values = integers;
  std::vector<void *> args;
  size_t nextBuffer = 0, nextInteger = 0;
  for (const HostKernelParam &param : function.params)
    args.push_back(param.isBuffer ? static_cast<void *>(&pointers[nextBuffer++])
                                  : &values[nextInteger++]);
  args.push_back(&gridX);
  // Kernels with mbarriers record the first fault of their program.
  int64_t *faults = nullptr;
  if (auto cell = impl->engine->lookup(mlir::norm::kHostFaultSymbol))
    faults = static_cast<int64_t *>(*cell);
  else
    llvm::consumeError(cell.takeError());
  if (faults)
    *faults = 0;
  function.entry(args.data());
  switch (faults ? static_cast<mlir::norm::HostFault>(*faults)
                 : mlir::norm::HostFault::None) {
  case mlir::norm::HostFault::None:
    return Status::success();
  case mlir::norm::HostFault::BarrierNeverCompletes:
    return Status::error(
        ErrorCode::Internal,
        "kernel " + std::string(kernel) +
            " waited for an mbarrier phase that never completes: an arrival "
            "count, transaction byte count or parity that its program does "
            "not meet (a GPU would hang there, or trap after the bounded "
            "try_wait loop)");
  case mlir::norm::HostFault::BarrierOverArrival:
    return Status::error(ErrorCode::Internal,
                         "kernel " + std::string(kernel) +
                             " arrived at an mbarrier more often than its "
                             "phase's count");
  }
  return Status::error(ErrorCode::Internal, "kernel " + std::string(kernel) +
                                                " recorded an unknown fault");
}
