//===- NormOps.h - norm dialect operations ----------------------*- C++ -*-===//

#ifndef NORM_DIALECTS_NORMOPS_H
#define NORM_DIALECTS_NORMOPS_H

#include "dialects/NormDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include "dialects/NormInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/NormOps.h.inc"

namespace mlir::norm {

/// Whether every value of `narrow` is exactly representable in `wide`: a
/// cast between them can be folded into the reader.
bool widensExactly(Type narrow, Type wide);

/// Whether QK-Norm weights `qWeight` and `kWeight` (either may be null) of
/// heads of `headDim` elements hold a row per head (Command R+'s
/// [heads, head_dim] q_norm and k_norm): either holds more than one row. The
/// verifiers, norm::OpSpec::qkWeightPerHead and the passes that complete or
/// move the weights all ask this.
bool isPerHeadQKWeightPair(Value qWeight, Value kWeight, int64_t headDim);

/// The head_dim rows a QK-Norm weight holds (1 for none).
int64_t getQKWeightRows(Value weight, int64_t headDim);

//===----------------------------------------------------------------------===//
// Kernel ops and the kernel model
//===----------------------------------------------------------------------===//

/// The model's name of an MLIR element type (f32, f16 or bf16: the only
/// ones the dialect admits), and back.
::norm::ElementType getElementType(Type type);
Type getMlirType(MLIRContext *context, ::norm::ElementType type);

/// #norm.launch and the model's LaunchConfig, both ways.
::norm::LaunchConfig getLaunchConfig(LaunchAttr launch);
LaunchAttr getLaunchAttr(MLIRContext *context,
                         const ::norm::LaunchConfig &launch);

/// One buffer of a kernel op: the model's slot and the op's operand or
/// result.
struct KernelBuffer {
  ::norm::BufferSlot slot;
  Value value;
};

/// The buffers of `op` in the kernel's ABI order (norm::getBuffers).
SmallVector<KernelBuffer> getKernelBuffers(KernelOpInterface op);

/// The signature of the kernel of `op` with `launch` on `target`
/// (norm::describeKernel); fails with a diagnostic at the op.
FailureOr<::norm::KernelSignature>
describeKernel(KernelOpInterface op, const ::norm::LaunchConfig &launch,
               const ::norm::TargetOptions &target);

/// Creates the kernel op of `spec` without a launch configuration: its
/// operands are `getInput(slot)` for each input buffer of the model (the
/// result types follow from `spec`, with `rows` rows: -1 for dynamic).
/// Fails with a diagnostic at `loc` when `spec` breaks a rule.
FailureOr<KernelOpInterface>
createKernelOp(OpBuilder &builder, Location loc, const ::norm::OpSpec &spec,
               int64_t rows, function_ref<Value(::norm::BufferSlot)> getInput);

/// The tensor type of buffer `buffer` of a kernel with `rows` rows.
RankedTensorType getBufferType(MLIRContext *context,
                               const ::norm::BufferSpec &buffer, int64_t rows);

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

/// The target of the kernels of `op`'s module: its `norm.target`, or the
/// default target (sm_90, PTX 8.0) when it has none.
::norm::TargetOptions getTargetOptions(Operation *op);

/// Records `target` on `module` as `norm.target`.
void setTargetOptions(ModuleOp module, const ::norm::TargetOptions &target);

} // namespace mlir::norm

#endif // NORM_DIALECTS_NORMOPS_H
