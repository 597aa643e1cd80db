//===- NormInterfaces.td - what every kernel op answers ----*- tablegen -*-===//

#ifndef NORM_INTERFACES_TD
#define NORM_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Norm_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::mlir::norm";
  let description = [{
    An op that stands for exactly one generated kernel (`norm.fused_row`,
    `norm.qk_norm_prologue`, `norm.column_stats`). It describes itself to the
    kernel model (`compiler/model/`), which states every rule once: the
    operation (`getOpSpec`), and through it the kernel's buffers in ABI
    order, its launch rules, row storage, name and signature. The op only
    maps the model's buffer slots onto its operands and results.
  }];
  let methods = [
    InterfaceMethod<[{
        The operation the kernel computes, as the kernel model describes it.
      }], "::norm::OpSpec", "getOpSpec">,
    InterfaceMethod<[{
        The operand or result that is buffer `slot` of the kernel (see
        `norm::getBuffers`); null when the op has none.
      }], "::mlir::Value", "getBuffer", (ins "::norm::BufferSlot":$slot)>,
    // The accessors ODS generates for the ops' `launch` and `kernel`
    // attributes, through the interface.
    InterfaceMethod<[{
        The launch configuration; null before `norm-assign-launch-config`.
      }], "::mlir::norm::LaunchAttr", "getLaunchAttr", (ins), [{}],
      [{ return $_op.getLaunchAttr(); }]>,
    InterfaceMethod<"Sets the launch configuration.", "void", "setLaunchAttr",
      (ins "::mlir::norm::LaunchAttr":$launch), [{}],
      [{ $_op.setLaunchAttr(launch); }]>,
    InterfaceMethod<[{
        The generated kernel (`@norm_kernels::@name`); null before
        `norm-generate-kernels`.
      }], "::mlir::SymbolRefAttr", "getKernelAttr", (ins), [{}],
      [{ return $_op.getKernelAttr(); }]>,
    InterfaceMethod<"Points the op at its generated kernel.", "void",
      "setKernelAttr", (ins "::mlir::SymbolRefAttr":$kernel), [{}],
      [{ $_op.setKernelAttr(kernel); }]>,
    InterfaceMethod<[{
        The logical row count when static (tokens for the QK-Norm
        prologue), or -1: the row count of the first operand.
      }], "int64_t", "getStaticRows", (ins), [{}], [{
        auto type = ::llvm::cast<::mlir::RankedTensorType>(
            $_op->getOperand(0).getType());
        return type.isDynamicDim(0) ? -1 : type.getDimSize(0);
      }]>,
  ];
}

#endif // NORM_INTERFACES_TD
