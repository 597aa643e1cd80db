//===- KernelOutput.cpp - norm-opt's .ptx and .cubin outputs --------------===//

#include "tools/norm-opt/KernelOutput.h"
#include "tools/norm-opt/InputGuards.h"

#include "compiler/Compiler.h"
#include "compiler/KernelBundle.h"
#include "dialects/NormOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace norm {

bool isKernelBundleOutput(llvm::StringRef outputFilename) {
  llvm::StringRef extension = llvm::sys::path::extension(outputFilename);
  return extension == ".ptx" || extension == ".cubin";
}

static LogicalResult fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "norm-opt") << message << "\n";
  return failure();
}

static LogicalResult writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return fail(error);
  file->os() << bytes;
  file->keep();
  return success();
}

LogicalResult writeKernelBundle(llvm::StringRef inputFilename,
                                llvm::StringRef outputFilename,
                                DialectRegistry &registry) {
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (!config.inputSplitMarker().empty())
    return fail("--split-input-file cannot write a kernel bundle (" +
                outputFilename + "): one input makes one bundle");

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input)
    return fail(error);
  if (failed(rejectCrashingInput(*input, registry, config)))
    return failure();

  // The passes and diagnostics exactly as MlirOptMain runs them; the result
  // travels as bytecode to be read back here.
  std::string lowered;
  {
    llvm::raw_string_ostream os(lowered);
    config.emitBytecode(true);
    if (failed(MlirOptMain(os, std::move(input), registry, config)))
      return failure();
  }
  if (config.shouldVerifyDiagnostics())
    return success();

  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(lowered, &context, inputFilename);
  if (!module)
    return fail("cannot read back the lowered module");
  FailureOr<std::string> ptx = getKernelPtx(*module);
  if (failed(ptx))
    return failure();
  // Kernels were generated for the module's target (norm.target).
  FailureOr<std::vector<KernelSignature>> kernels =
      getBundleSignatures(*module, *ptx);
  if (failed(kernels))
    return failure();

  if (llvm::sys::path::extension(outputFilename) == ".cubin") {
    std::vector<uint8_t> cubin;
    std::string chip = mlir::norm::getTargetOptions(*module).chip;
    if (Status status = assembleCubin(*ptx, chip, /*ptxasPath=*/"", cubin);
        !status)
      return fail(status.message());
    if (failed(writeFile(outputFilename,
                         llvm::StringRef(reinterpret_cast<const char *>(cubin.data()),
                                         cubin.size()))))
      return failure();
  } else if (failed(writeFile(outputFilename, *ptx))) {
    return failure();
  }
  llvm::SmallString<256> jsonPath(outputFilename);
  llvm::sys::path::replace_extension(jsonPath, "json");
  return writeFile(jsonPath, signaturesToJson(*kernels));
}

} // namespace norm
