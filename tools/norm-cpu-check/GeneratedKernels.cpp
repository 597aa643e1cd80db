//===- GeneratedKernels.cpp - the compiler's kernels for the CPU check ----===//
//
// The kernels the compiler generates for the GPU: norm::buildKernelSource
// builds the kernel op of a spec and launch configuration, the kernel
// generator (norm-generate-kernels, without scalar fallbacks) turns it into
// its gpu.func, and the kernel model's describeKernel gives the signature
// the runtime launches it with. The CPU check then runs exactly that
// gpu.func.
//
//===----------------------------------------------------------------------===//

#include "tools/norm-cpu-check/KernelSource.h"

#include "compiler/Compiler.h"
#include "dialects/NormDialect.h"
#include "passes/LoweringPasses.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace ::norm::check;
using ::norm::KernelSignature;
using ::norm::LaunchConfig;
using ::norm::OpSpec;
using ::norm::Status;

namespace {

class GeneratedKernels : public KernelProvider {
public:
  explicit GeneratedKernels(const ::norm::TargetOptions &target)
      : target(target) {}

  std::string_view getName() const override { return "generated"; }

  LaunchConfig getDefaultLaunch(const OpSpec &spec,
                                int64_t rows) const override {
    return ::norm::getHeuristicLaunch(spec, rows);
  }

  Status build(const OpSpec &spec, const LaunchConfig &launch,
               KernelSource &source) const override {
    // The signature the runtime would launch the kernel with.
    if (Status status =
            ::norm::describeKernel(spec, launch, target, source.signature);
        !status)
      return status;
    std::string text;
    if (Status status = ::norm::buildKernelSource(spec, launch, target, text);
        !status)
      return status;

    DialectRegistry registry;
    registerAllDialects(registry);
    registry.insert<mlir::norm::NormDialect>();
    MLIRContext context(registry, MLIRContext::Threading::DISABLED);
    context.printOpOnDiagnostic(false);
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      llvm::raw_string_ostream(diagnostics) << diag << "\n";
      return success();
    });
    auto fail = [&](std::string what) {
      return Status::error(::norm::ErrorCode::CompileError,
                           what + ": " + diagnostics);
    };
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(text, &context, "kernel source");
    if (!module)
      return fail("cannot parse the kernel source");
    PassManager generate(&context);
    mlir::norm::NormGenerateKernelsOptions options;
    options.scalarFallback = false;
    generate.addPass(mlir::norm::createNormGenerateKernels(options));
    if (failed(generate.run(*module)))
      return fail("kernel generation failed");
    source.mlir.clear();
    llvm::raw_string_ostream os(source.mlir);
    module->print(os);
    source.pipeline.clear();
    return Status::success();
  }

private:
  ::norm::TargetOptions target;
};

} // namespace

namespace norm::check {
std::unique_ptr<KernelProvider>
createGeneratedKernels(const ::norm::TargetOptions &target) {
  return std::make_unique<GeneratedKernels>(target);
}
} // namespace norm::check
