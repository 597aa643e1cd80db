//===- HostPasses.td - running kernels on the host ---------*- tablegen -*-===//
//
// Passes that turn the generated GPU kernels into host code, so that CI
// machines without a GPU execute the same kernel programs.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_HOST_PASSES_TD
#define NORM_HOST_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormKernelsToHost : Pass<"norm-kernels-to-host", "::mlir::ModuleOp"> {
  let summary = "Turn each gpu.func kernel into a host function that runs "
                "the whole grid";
  let description = [{
    For every `gpu.func` kernel of every `gpu.module`, creates a `func.func`
    named `<kernel>_host` in the top-level module with the kernel's arguments
    plus a trailing `index`, the grid size. The host function loops over the
    CTAs; inside, the kernel body is split into loops over the CTA's threads
    at every collective: `norm.row_allreduce`, `gpu.barrier`,
    `norm.mma_sync` and `norm.ldmatrix` (loop fission, as in MCUDA):
    thread-dependent values that live across a split point are kept in
    per-thread buffers, thread-uniform computations run once per CTA,
    `norm.row_allreduce` becomes a loop that sums (or takes the maximum of)
    each group of threads in thread order, and workgroup attributions and
    `gpu.dynamic_shared_memory` become host buffers (the latter as large as
    its `memref.view`s, which need constant offsets and static shapes).

    The warp collectives follow the PTX ISA's fragment layouts exactly: for
    each warp, a loop over its lanes gathers their operands into whole
    matrices (`norm.mma_sync`: A, B and C in f32; `norm.ldmatrix`: the rows
    the lanes point at), the result is computed once (D = C + A * B, the
    products added in increasing k order) and a second loop gives every
    lane its fragment. They need a CTA size that is a multiple of 32.
    `norm.async_copy` becomes a plain copy by its thread (zeros past
    `src_elements`); `norm.async_commit` and `norm.async_wait` are dropped,
    which is exact for kernels that wait and synchronize before reading.
    Collectives inside `scf.for` loops with thread-uniform bounds split the
    loop body recursively; the loop itself stays outside the thread loops.
    Warp collectives (and row reductions of at most 32 threads, which are
    shuffles on the GPU) may also sit in `scf.if` branches whose condition is
    the same in all lanes of a warp (computed from uniform values and the
    thread index over a multiple of 32: the roles of a warp-specialized
    kernel); each region is split the same way, its thread loops run the
    threads that take it and its collectives the warps that do. Where each
    branch holds a loop over the same range (a producer's and its
    consumers'), the two run in lockstep, an iteration of the first
    branch's loop before the same iteration of the second's, so that what
    the producer issues for an iteration has landed when the consumers wait
    for it. mbarriers keep their state in their 8 bytes (arrivals expected
    and pending, transaction bytes pending, the phase's parity); copies
    complete their bytes at issue, and a wait (a meeting point: every
    thread's code before it runs first) whose phase has not completed, or
    an arrival beyond a phase's count, records a fault in the module's
    `__norm_host_fault` cell, which the launch reports.

    The CTA size comes from the kernel's `known_block_size` (or
    `gpu.known_block_size`) attribute, or from `block-size`. Kernels outside
    the supported subset (GPU-only ops such as `gpu.shuffle`, collectives
    under other `scf.if`s or in loops with thread-dependent bounds, memory
    allocations, private attributions, calls) are rejected with a
    diagnostic. Per-thread buffers are heap allocations freed on return;
    `norm-host-to-llvm` lowers the result for the CPU.

    Threads run in index order, so a kernel that lets one thread write what
    another reads between two meeting points (a race) sees the write where a
    higher thread reads; `reverse-threads` runs them from the last, which
    shows the other order (an in-place kernel must pass both).

    Example: a kernel
    ```mlir
    %t = gpu.thread_id x
    ...
    %s = norm.row_allreduce %partial {group_size = 64 : i64} : f32
    ...
    ```
    becomes
    ```mlir
    func.func @k_host(..., %grid: index) {
      scf.for %cta = %c0 to %grid step %c1 {
        scf.for %t = %c0 to %c64 step %c1 { ... memref.store %partial, %buf0[%t] }
        scf.for %g = %c0 to %c64 step %c64 { <sum of %buf0[%g..%g+64) into %buf1> }
        scf.for %t = %c0 to %c64 step %c1 { %s = memref.load %buf1[%t] ... }
      }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"0",
           "CTA size of kernels without a known_block_size attribute">,
    Option<"keepGpuModule", "keep-gpu-module", "bool", /*default=*/"false",
           "Keep the gpu.module beside the host functions">,
    Option<"reverseThreads", "reverse-threads", "bool", /*default=*/"false",
           "Run each stretch's threads from the last to the first, so that "
           "a thread that reads what a lower thread writes before their next "
           "meeting point (a race on the GPU) sees it unwritten">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def NormHostExpandF16Conversions
    : Pass<"norm-host-expand-f16-conversions"> {
  let summary = "Expand f16 <-> f32 conversions into integer code";
  let description = [{
    Rewrites `arith.extf` from f16 to f32 and `arith.truncf` from f32 to f16
    (scalars and vectors) into i32 arithmetic on the bit patterns: exact,
    round to nearest even, subnormals, infinities and NaN included. A CPU
    without F16C would otherwise call the compiler runtime's
    `__extendhfsf2` / `__truncsfhf2`, which a JIT session cannot rely on.
    (`arith-expand{include-bf16}` does the same for bf16.)

    ```mlir
    %h = arith.truncf %x : f32 to f16
    ```
    becomes integer code ending in
    ```mlir
    %h = arith.bitcast %bits : i16 to f16
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def NormHostNarrowFloatsToIntegers
    : Pass<"norm-host-narrow-floats-to-integers", "::mlir::ModuleOp"> {
  let summary = "Hold f16 and bf16 values of lowered host code as i16";
  let description = [{
    After the host code is in the LLVM dialect and every f16/bf16
    arithmetic op and conversion has been expanded, f16 and bf16 values are
    only moved: loaded, stored, selected, passed through block arguments.
    LLVM's x86 backend still promotes such values to f32 and truncates them
    back through `__truncsfbf2` / `__truncsfhf2` wherever they cross a phi
    or a select, depending on the CPU's features. This pass retypes every
    such value (and vectors of them) as i16, folds the bitcasts between the
    two, rewrites constants to their bit patterns and element types of
    `llvm.getelementptr` to i16, so that the host code is the same on every
    x86-64 CPU. It fails, naming the op, on any op that would still compute
    on f16 or bf16.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // NORM_HOST_PASSES_TD
