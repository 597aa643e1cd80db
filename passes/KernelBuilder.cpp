//===- KernelBuilder.cpp - the gpu.func of a kernel -----------------------===//

#include "passes/KernelBuilder.h"

#include "dialects/NormOps.h"
#include "passes/FusedRowKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::norm;
using ::norm::KernelParam;

namespace {

/// Static extent of the 1-D memrefs that stand for kernel buffers: the
/// bare-pointer calling convention needs static shapes, and no allocation
/// comes near 2^40 elements.
constexpr int64_t kBufferExtent = int64_t(1) << 40;

} // namespace

void mlir::norm::emitFusedRowKernel(ImplicitLocOpBuilder &b,
                                    gpu::GPUFuncOp func,
                                    const ::norm::KernelSignature &signature,
                                    const ::norm::OpSpec &spec) {
  FusedRowEmitter(b, func, signature, spec).emit();
}

gpu::GPUFuncOp mlir::norm::buildKernel(OpBuilder &builder, Location loc,
                                       const ::norm::OpSpec &spec,
                                       const ::norm::KernelSignature &sig) {
  MLIRContext *context = builder.getContext();
  SmallVector<Type> inputs;
  for (const KernelParam &param : sig.params) {
    if (param.kind == KernelParam::Kind::Buffer)
      inputs.push_back(MemRefType::get(
          {kBufferExtent}, getMlirType(context, param.elementType)));
    else if (param.kind == KernelParam::Kind::TensorMap)
      inputs.push_back(
          MemRefType::get({kTensorMapWords}, builder.getI64Type()));
    else
      inputs.push_back(builder.getI64Type());
  }
  auto func = gpu::GPUFuncOp::create(builder, loc, sig.name,
                                     builder.getFunctionType(inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(sig.blockThreads), 1, 1}));
  // A tensor map passes by value (norm-grid-constant-params): the kernel
  // takes its address, which the TMA copies read. The bytes of each
  // parameter that does (0 for the others), on the function: the NVVM
  // conversion keeps function attributes, not argument ones outside llvm.
  SmallVector<int64_t> byValue;
  for (const KernelParam &param : sig.params)
    byValue.push_back(
        param.kind == KernelParam::Kind::TensorMap ? 8 * kTensorMapWords : 0);
  if (llvm::any_of(byValue, [](int64_t bytes) { return bytes != 0; }))
    func->setAttr(NormDialect::kGridConstantAttrName,
                  builder.getDenseI64ArrayAttr(byValue));
  for (auto [i, param] : llvm::enumerate(sig.params)) {
    if (param.kind != KernelParam::Kind::Buffer)
      continue;
    // noalias + readonly let inputs load through the non-coherent cache
    // (ld.global.nc); the alignment lets 16-byte accesses stay whole. The
    // runtime checks both before every launch (no output overlaps another
    // buffer but the input it may overwrite in place, exactly; misaligned
    // buffers go to the scalar fallback). An in-place pair claims no
    // noalias: its loads stay coherent with the stores.
    // Under programmatic dependent launch only the parameters are read-only
    // for the kernel's whole lifetime (the kernel before it may still write
    // the rest while this one starts): the others load coherently.
    std::optional<::norm::BufferSlot> slot =
        ::norm::parseBufferSlot(param.name);
    bool stable = !sig.pdl || (slot && ::norm::isParameterBuffer(*slot));
    if (!sig.mayAlias(param) && stable)
      func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                      builder.getUnitAttr());
    if (param.readOnly)
      func.setArgAttr(i, LLVM::LLVMDialect::getReadonlyAttrName(),
                      builder.getUnitAttr());
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    builder.getI64IntegerAttr(param.alignment));
  }

  // The register rule (and the tuner) size the CTA; without this hint
  // ptxas aims at more CTAs per SM with fewer registers and spills to get
  // there: attention at sm_80, head dim 128: 168 registers and 16 bytes
  // spilled, against 198 and none; backward bf16 RMSNorm at 4096, 512
  // threads: 64 registers and a spill; LayerNorm bf16 at 4544 with 1024
  // threads (which may take 64): 31 registers and 8 bytes spilled, against
  // 37 and none. Rows that loop over their chunks (staged or streamed)
  // too: bf16 RMSNorm staged at 57600 with 512 threads, 40 registers and 4
  // bytes spilled without it; their loops are not unrolled beyond
  // norm::getChunksInFlight, so the registers do not invite ptxas to
  // schedule more loads ahead.
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                builder.getI32IntegerAttr(1));

  ImplicitLocOpBuilder b(loc, context);
  b.setInsertionPointToStart(&func.getBody().front());
  auto ret = gpu::ReturnOp::create(b);
  b.setInsertionPoint(ret);
  switch (spec.kind) {
  case ::norm::OpKind::QKNormPrologue:
  case ::norm::OpKind::KeyPrepare:
    emitQKNormPrologueKernel(b, func, sig, spec);
    break;
  case ::norm::OpKind::BatchNormStats:
  case ::norm::OpKind::ColumnSum:
    emitColumnStatsKernel(b, func, sig, spec);
    break;
  case ::norm::OpKind::Attention:
  case ::norm::OpKind::AttentionDecode:
    emitAttentionKernel(b, func, sig, spec);
    break;
  default:
    emitFusedRowKernel(b, func, sig, spec);
    break;
  }
  return func;
}
