//===- LoweringPasses.td - kernel ops to NVVM ---------------*- tablegen -*-===//
//
// From kernel ops with launch configurations to PTX: pick configurations,
// generate one gpu.func per kernel, then the GPU-only lowerings that the
// stock NVVM conversion does not cover the way norm kernels need.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_LOWERINGPASSES_TD
#define NORM_PASSES_LOWERINGPASSES_TD

include "mlir/Pass/PassBase.td"

def NormSetTarget : Pass<"norm-set-target", "::mlir::ModuleOp"> {
  let summary = "Record the GPU the module's kernels are for";
  let description = [{
    Sets the module's `norm.target` (#norm.target), the one place the later
    passes read the target from: `norm-generate-kernels` (shared memory per
    CTA), `norm-attach-nvvm-target` (chip, PTX version) and the kernel
    bundle writer. Options left at their defaults keep the module's value
    (or the default target: sm_90, PTX 8.0, the chip's shared memory). An
    unknown chip, a PTX version outside 7.8 to 9.0 or more shared memory
    than the chip has is an error at the module.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"\"",
           "Target GPU: sm_80, sm_89, sm_90 or sm_90a (empty: keep)">,
    Option<"ptxVersion", "ptx-version", "int", "0",
           "PTX ISA version x 10, 78 to 90 (0: keep)">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "-1",
           "Shared memory a CTA may use, in bytes (0: the chip's; -1: keep)">,
    Option<"pdl", "pdl", "bool", "false",
           "Programmatic dependent launch: kernels wait for their "
           "predecessor after their prologue (sm_90 on; false: keep)">,
  ];
}

def NormAttachNVVMTarget
    : Pass<"norm-attach-nvvm-target", "::mlir::ModuleOp"> {
  let summary = "Attach the module's target to the kernel module for NVVM";
  let description = [{
    Gives `gpu.module @norm_kernels` the `#nvvm.target` of the module's
    `norm.target` (chip, `+ptxNN` features), which `gpu-module-to-binary`
    compiles for, so that the target is stated once.
  }];
  let options = [
    Option<"optLevel", "opt-level", "int", "3", "LLVM optimization level">,
  ];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def NormAssignLaunchConfig : Pass<"norm-assign-launch-config"> {
  let summary = "Give every kernel op without a launch configuration one";
  let description = [{
    Sets `launch` on every kernel op (`norm.fused_row`,
    `norm.qk_norm_prologue`, `norm.column_stats`, `norm.attention_kernel`)
    that has none, from the analytical heuristic
    (`norm::getHeuristicLaunch`: the threads-per-row ladder for short rows,
    about 8 to 16 elements per thread for long ones, 16-byte vectors, several
    rows per CTA for short rows). The options force single fields (0 keeps
    the heuristic's choice); the CTA is widened when a forced
    threads-per-row needs it. A configuration that does not fit the op is an
    error at the op.
  }];
  let options = [
    Option<"vector", "vector", "int64_t", "0",
           "Elements per access (1, 2, 4 or 8)">,
    Option<"threadsPerRow", "threads-per-row", "int64_t", "0",
           "Threads sharing one row">,
    Option<"warps", "warps", "int64_t", "0", "Warps per CTA">,
    Option<"rowsPerCta", "rows-per-cta", "int64_t", "0",
           "Rows one CTA handles in all">,
    Option<"blockN", "block-n", "int64_t", "0",
           "Attention: keys per tile of the key/value loop">,
    Option<"stages", "stages", "int64_t", "0",
           "Attention: key/value tiles in flight">,
  ];
}

def NormGenerateKernels : Pass<"norm-generate-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate one gpu.func per kernel op and launch configuration";
  let description = [{
    For every kernel op with a `launch` configuration, builds its kernel in
    `gpu.module @norm_kernels` (the module becomes a `gpu.container_module`)
    and points the op's `kernel` attribute at it. Kernels are named after
    their semantics and configuration, so identical kernels are generated
    once. The signature follows the kernel ABI (`describeKernel`): buffers
    as static 1-D memrefs with `llvm.noalias`, `llvm.readonly` for inputs and
    `llvm.align`, then `rows`, then one row stride per 2-D buffer.

    Each thread keeps its share of a row in registers (chunks of `vector`
    elements: thread t owns elements [(c * T + t) * V, + V)), rows ragged at
    the end are handled exactly, the statistic accumulates in f32 and is
    reduced by one `norm.row_allreduce`. `norm.fused_row` shares that the
    registers of the CTA do not hold (`norm::fitsInRegisters`) are looped
    over instead, and the row is staged in `gpu.dynamic_shared_memory`
    (kernels named `..._smem`; the signature's shared bytes) or, when the
    rows a CTA holds exceed the shared memory a CTA may use on the module's
    target (`norm.target`, by default the chip's: 163 KiB on sm_80, 99 KiB
    on sm_89, 227 KiB on sm_90, less 1 KiB for the reduction), read twice
    (`..._stream`). Vector kernels come with their scalar fallback
    (`norm::getScalarFallback`) unless `scalar-fallback=false`.

    `norm.attention_kernel` and `norm.attention_decode_kernel` become the
    attention kernels of `passes/AttentionKernel.cpp`; a `norm.attention`
    (or `norm.rotary`) left unformed is an error at the op, naming the pass
    that forms it.
  }];
  let options = [
    Option<"scalarFallback", "scalar-fallback", "bool", "true",
           "Also generate the vector = 1 kernel of every vector kernel">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def NormLowerRowAllReduce : Pass<"norm-lower-row-allreduce",
                                 "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower norm.row_allreduce to warp shuffles and shared memory";
  let description = [{
    GPU-only lowering of `norm.row_allreduce`: an XOR butterfly of
    `gpu.shuffle` within each warp (only the offsets below the group size for
    groups of up to 32 threads) and, for groups wider than a warp, one
    exchange of per-warp partials through a workgroup buffer of the
    kernel (one slot per warp and value) and `gpu.barrier`, after which every
    thread combines its row's partials in the same order. Sums use
    `arith.addf`, `kind = max` `arith.maximumf`. Inside loops a second
    barrier keeps the next iteration from overwriting partials still being
    read. Needs `known_block_size` on the kernel.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"
  ];
}

def NormExternDynamicSharedMemory
    : Pass<"norm-extern-dynamic-shared-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Make the dynamic shared memory of kernels an extern array";
  let description = [{
    `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an internal
    zero-sized global in shared memory, which the NVPTX backend demotes to a
    static `.shared` variable of the kernel: a variable that takes no space
    and may overlap other static shared buffers (the exchange buffer of
    `norm.row_allreduce`). This pass gives every uninitialized zero-sized
    array in the workgroup address space external linkage, so that the PTX
    declares it as `.extern .shared .align 16 .b8 name[];`, the array CUDA
    places after all static shared memory and sizes at launch. In a module
    with `wgmma` or TMA tensor copies (the inline asm of `norm.wgmma` and
    `norm.tma_load`) the array is aligned to 1024 bytes, the atom of a
    128-byte swizzle, which both apply to the shared address itself. Runs after `convert-gpu-to-nvvm`.
  }];
}

def NormGridConstantParams
    : Pass<"norm-grid-constant-params", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Pass marked kernel parameters by value, as grid constants";
  let description = [{
    A kernel parameter given N bytes in its kernel's `norm.grid_constant`
    array (one entry a parameter, 0 for the others; a CUtensorMap, N =
    128) is a memref whose bytes the host passes by value. After
    `convert-gpu-to-nvvm` (bare pointers) the parameter is a pointer; this
    pass makes it `llvm.byval = !llvm.array<N x i8>`, aligned to 64 and
    `nvvm.grid_constant`, so that the PTX declares `.param .align 64 .b8
    name[N]` and the kernel's uses of its address read the parameter itself
    (its generic address, `cvta.param`), as `cp.async.bulk.tensor` needs of a
    tensor map (PTX ISA: a tensor map in the param space must be a
    grid constant). Runs after `convert-gpu-to-nvvm`.
  }];
}

def NormLowerApproxMathToNVVM : Pass<"norm-lower-approx-math-to-nvvm",
                                     "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower f32 math.rsqrt, exp2, log2, sin, cos and fma "
                "without libdevice";
  let description = [{
    The NVVM conversion turns these math ops into calls of libdevice
    (`__nv_rsqrtf`, `__nv_exp2f`, ...), which only link when a CUDA toolkit
    is found, and otherwise leave an `.extern .func` that fails at load
    time. This pass lowers the f32 ops (scalars and vectors) itself:
    `math.rsqrt` with `afn` to `llvm.nvvm.rsqrt.approx.f`
    (`rsqrt.approx.f32`), without it to a correctly rounded square root and
    division; `math.exp2` and `math.log2` with `afn` to `ex2.approx.ftz.f32` and
    `lg2.approx.f32` (the attention kernel's softmax); `math.sin` and
    `math.cos` with `afn` to `sin.approx.f32` and `cos.approx.f32` (rotary
    embeddings, on arguments the kernel reduced to [-pi, pi]); `math.fma`
    to `llvm.intr.fma` (`fma.rn.f32`).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect"];
}

def NormExpandFp8Conversions : Pass<"norm-expand-fp8-conversions"> {
  let summary = "Round f32 to FP8 (e4m3, e5m2): cvt.rn.satfinite or "
                "integer code";
  let description = [{
    Rewrites `arith.truncf` from f32 to `f8E4M3FN` or `f8E5M2` (scalars and
    vectors), which no LLVM backend lowers, into what the target runs:
    where the enclosing `#norm.target` has cvt to FP8 (sm_90 from PTX 7.8,
    sm_89 from PTX 8.1: `norm::TargetOptions::hasFp8Conversions`; LLVM
    cannot select it otherwise) and `software` is not set,
    `nvvm.convert.f32x2.to.f8x2` of element pairs
    (`cvt.rn.satfinite.e4m3x2.f32`); otherwise i32 arithmetic on the bit
    patterns (the host path, sm_80). Both round to nearest even and
    saturate: a magnitude beyond the largest finite value (448, 57344;
    infinities included) becomes it, NaN becomes the quiet NaN (0x7f,
    0x7e). So the CPU run of a kernel stores the bytes the GPU stores.

    ```mlir
    %q = arith.truncf %y : vector<8xf32> to vector<8xf8E4M3FN>
    ```
    becomes, on sm_90, four
    ```mlir
    %p = nvvm.convert.f32x2.to.f8x2 %y1, %y0 {rnd = #nvvm.fp_rnd_mode<rn>,
        sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
    ```
    (the second element in the upper byte) and a bitcast of the bytes.
  }];
  let options = [
    Option<"software", "software", "bool", /*default=*/"false",
           "Integer code even where the chip has cvt to FP8 (the host "
           "path)">,
  ];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // NORM_PASSES_LOWERINGPASSES_TD
