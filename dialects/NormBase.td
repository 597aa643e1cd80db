//===- NormBase.td - norm dialect, enums and attributes ----*- tablegen -*-===//
//
// The `norm` dialect describes the normalization layers of a transformer on
// value-semantics tensors (rows x hidden) and the fused row kernels that the
// fusion passes form from them.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_BASE_TD
#define NORM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Norm_Dialect : Dialect {
  let name = "norm";
  let cppNamespace = "::mlir::norm";
  let summary = "Normalization layers of transformers and their fused kernels";
  let description = [{
    The `norm` dialect has two levels.

    *Layer ops* (`norm.rms_norm`, `norm.layer_norm`, `norm.l2_norm`,
    `norm.group_norm`, `norm.batch_norm_inference`,
    `norm.batch_norm_training`, `norm.residual_add`, `norm.cast`,
    `norm.attention`) state what a model computes, on ranked tensors of f32,
    f16 or bf16 shaped `rows x hidden`: the row count static or dynamic, the
    hidden size static and positive. Weights, biases and per-channel statistics are 1-D
    tensors of the hidden size.

    *Kernel ops* (`norm.fused_row`, `norm.qk_norm_prologue`,
    `norm.column_stats`) each stand for exactly one future GPU kernel. The
    fusion passes build them; they carry the launch configuration
    (`#norm.launch`) and, once lowered, a reference to their `gpu.func`.

    *Kernel-program ops* live inside a `gpu.func`. `norm.row_allreduce` is
    the collective of row kernels; the GPU lowering turns it into warp
    shuffles and at most one shared-memory exchange, the host lowering into
    a loop over threads. The warp-level matrix ops of the attention kernel
    (`norm.mma_sync`, `norm.ldmatrix`) are collectives too, with the
    fragment layouts of the PTX ISA; `norm.async_copy`,
    `norm.async_commit` and `norm.async_wait` are `cp.async`. The host
    lowering emulates all of them exactly as the PTX ISA defines them.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 0;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The module attribute holding the target (a #norm.target).
    static constexpr ::llvm::StringLiteral kTargetAttrName = "norm.target";
    /// The kernel attribute (an array of i64, one per parameter) with the
    /// bytes of each parameter that passes by value as a grid constant (a
    /// tensor map; 0 for the others): the kernel sees a memref of its bytes
    /// (norm-grid-constant-params).
    static constexpr ::llvm::StringLiteral kGridConstantAttrName =
        "norm.grid_constant";
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Norm_StatisticRms : I32EnumAttrCase<"rms", 0>;
def Norm_StatisticMeanVar : I32EnumAttrCase<"mean_var", 1>;
def Norm_StatisticL2 : I32EnumAttrCase<"l2", 2>;
def Norm_StatisticNone : I32EnumAttrCase<"none", 3>;

def Norm_Statistic : I32EnumAttr<"Statistic",
    "the per-row statistic a row kernel computes",
    [Norm_StatisticRms, Norm_StatisticMeanVar, Norm_StatisticL2,
     Norm_StatisticNone]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::norm";
}

def Norm_RowOperandInput : I32EnumAttrCase<"input", 1>;
def Norm_RowOperandAddend : I32EnumAttrCase<"addend", 2>;

def Norm_RowOperand : I32EnumAttr<"RowOperand",
    "the row input an in-place output of `norm.fused_row` overwrites",
    [Norm_RowOperandInput, Norm_RowOperandAddend]> {
  let cppNamespace = "::mlir::norm";
}

def Norm_StatisticAttr : EnumAttr<Norm_Dialect, Norm_Statistic, "statistic"> {
  let summary = "the per-row statistic of `norm.fused_row`";
  let description = [{
    `rms` (root mean square), `mean_var` (mean and biased variance), `l2`
    (Euclidean norm) or `none` (elementwise kernels: inference BatchNorm, or
    no normalization at all).

    ```mlir
    #norm.statistic<mean_var>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Norm_QKNormRms : I32EnumAttrCase<"rms", 0>;
def Norm_QKNormL2 : I32EnumAttrCase<"l2", 1>;
def Norm_QKNormMeanVar : I32EnumAttrCase<"mean_var", 2>;

def Norm_QKNormKind : I32EnumAttr<"QKNormKind",
    "the per-head normalization applied to queries and keys",
    [Norm_QKNormRms, Norm_QKNormL2, Norm_QKNormMeanVar]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::norm";
}

def Norm_QKNormKindAttr : EnumAttr<Norm_Dialect, Norm_QKNormKind, "qk_norm"> {
  let summary = "the per-head normalization of QK-Norm";
  let description = [{
    `rms` (RMSNorm per head, as in Qwen3, OLMo 2 and, with Gemma's `1 + w`
    weights, Gemma 3), `l2` (L2 norm per head) or `mean_var` (LayerNorm per
    head without bias, as in ViT-22B).

    ```mlir
    #norm.qk_norm<rms>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Norm_RopeNeoX : I32EnumAttrCase<"neox", 1>;
def Norm_RopeGptJ : I32EnumAttrCase<"gptj", 2>;

def Norm_RopeStyle : I32EnumAttr<"RopeStyle",
    "how rotary embeddings pair the elements of a head row",
    [Norm_RopeNeoX, Norm_RopeGptJ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::norm";
}

def Norm_RopeStyleAttr : EnumAttr<Norm_Dialect, Norm_RopeStyle, "rope"> {
  let summary = "the pairing of rotary position embeddings";
  let description = [{
    `neox` rotates the pairs `(d, d + rotary_dim / 2)` (GPT-NeoX, Llama,
    Qwen, Gemma: `rotate_half`), `gptj` the pairs `(2i, 2i + 1)` (GPT-J,
    ChatGLM: interleaved). Pair `i` turns by
    `pos * rope_theta^(-2i / rotary_dim)`.

    ```mlir
    #norm.rope<neox>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Norm_ReductionAdd : I32EnumAttrCase<"add", 0>;
def Norm_ReductionMax : I32EnumAttrCase<"max", 1>;

def Norm_ReductionKind : I32EnumAttr<"ReductionKind",
    "how norm.row_allreduce combines the values of a row",
    [Norm_ReductionAdd, Norm_ReductionMax]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::norm";
}

def Norm_ReductionKindAttr
    : EnumAttr<Norm_Dialect, Norm_ReductionKind, "reduction"> {
  let summary = "the combining function of `norm.row_allreduce`";
  let description = [{
    `add` (the sum, in f32) or `max` (the maximum with `arith.maximumf`
    semantics: NaN if any value is NaN, -0.0 below +0.0), e.g. the running
    row maximum of an online softmax.

    ```mlir
    #norm.reduction<max>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Launch configuration
//===----------------------------------------------------------------------===//

def Norm_LaunchAttr : AttrDef<Norm_Dialect, "Launch"> {
  let mnemonic = "launch";
  let summary = "launch configuration of a row kernel";
  let description = [{
    How a row kernel maps rows onto a CTA:

    - `vector`: elements per memory access (1, 2, 4 or 8; at most 16 bytes,
      which the ops using the configuration check against their element
      types).
    - `threads_per_row`: threads that share one row: 1, 2, 4, 8, 16, or a
      multiple of 32 up to 1024.
    - `warps`: warps per CTA (1..32). A CTA works on
      `warps * 32 / threads_per_row` rows at a time.
    - `rows_per_cta`: rows one CTA handles in all, a multiple of the rows it
      works on at a time (the CTA loops over the rest).

    The grid is `ceil(rows / rows_per_cta)` CTAs of `warps * 32` threads. The
    configuration is encoded in the kernel's name so that the runtime can ask
    for any candidate.

    Attention kernels add `block_n` (keys per tile of the key/value loop:
    16, 32, 64 or 128) and `stages` (key/value tiles in flight, 1 or 2);
    their rows are query rows, 16 per warp, and `threads_per_row` threads
    share a head row while the prologue normalizes it.

    The sm_90a family of prefill attention adds `warpgroups`: that many
    consumer warpgroups of 64 query rows (wgmma) and a producer warpgroup
    whose TMA loads keep `stages` (2 to 4) key/value tiles of `block_n`
    (a multiple of 16 up to 256) in flight, so `warps` is
    4 x (warpgroups + 1) and `rows_per_cta` 64 x warpgroups; `overlap = 1`
    runs each tile's softmax beside the next tile's Q K^T.

    ```mlir
    #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>
    #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 64,
                 block_n = 64, stages = 2>
    #norm.launch<vector = 8, threads_per_row = 16, warps = 12,
                 rows_per_cta = 128, block_n = 128, stages = 2,
                 warpgroups = 2, overlap = 1>
    ```
  }];
  let parameters = (ins "int64_t":$vector, "int64_t":$threads_per_row,
                        "int64_t":$warps, "int64_t":$rows_per_cta,
                        DefaultValuedParameter<"int64_t", "0">:$block_n,
                        DefaultValuedParameter<"int64_t", "0">:$stages,
                        DefaultValuedParameter<"int64_t", "0">:$warpgroups,
                        DefaultValuedParameter<"int64_t", "0">:$overlap);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Threads in one CTA.
    int64_t getThreadsPerCta() const { return getWarps() * 32; }
    /// Rows a CTA works on at the same time.
    int64_t getConcurrentRows() const {
      return getThreadsPerCta() / getThreadsPerRow();
    }
    /// A suffix for kernel names, e.g. `v8_t128_w4_r1`.
    std::string getMangledSuffix() const;
  }];
}

//===----------------------------------------------------------------------===//
// Warpgroup matrix operands in shared memory
//===----------------------------------------------------------------------===//

def Norm_SharedMatrixAttr : AttrDef<Norm_Dialect, "SharedMatrix"> {
  let mnemonic = "shared_matrix";
  let summary = "how a wgmma operand lies in shared memory";
  let description = [{
    The layout of one operand of `norm.wgmma` in workgroup memory, the
    fields of a wgmma matrix descriptor (PTX ISA, "Matrix Descriptor
    Format"): the byte offset of element (mn, k) of the operand's k16 slice
    from its first element (`mn`: A's row or B's column; `k`: the reduction
    index, 0 to 15), for 16-bit elements, is

    - K-major (`mn_major = false`; A `[m][k]`, B `[n][k]`), no swizzle:
      `(mn % 8) * 16 + (mn / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo`, the
      8x8 core matrices of 16-byte rows;
    - K-major, swizzle W (32, 64 or 128 bytes):
      `(mn % 8) * W + (mn / 8) * sbo + 2 * k` (`lbo` unused);
    - MN-major (`mn_major = true`; A `[k][m]`, B `[k][n]`), no swizzle:
      `(mn % 8) * 2 + (mn / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo`;
    - MN-major, swizzle W: `(mn % (W / 2)) * 2 + (mn / (W / 2)) * lbo +
      (k % 8) * W + (k / 8) * sbo`.

    A swizzle of W bytes then exchanges the 16-byte chunks of each W-byte
    row, as TMA writes them: byte address `a` becomes `a ^ (((a >> 7) %
    (W / 16)) << 4)`, on the address in shared memory; `norm.wgmma` applies
    it to the offset from its memref's first element, which must therefore
    be aligned to 8 * W bytes (1024 for a 128-byte swizzle).

    `lbo` and `sbo` are multiples of 16 below 2^18. The TMA boxes of an
    attention kernel are K-major with a 128-byte swizzle: rows of 64 bf16
    (one 128-byte line each), eight lines an atom, `sbo = 1024`.

    ```mlir
    #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>
    #norm.shared_matrix<swizzle = 128, lbo = 8192, sbo = 1024, mn_major = true>
    ```
  }];
  let parameters = (ins "int64_t":$swizzle, "int64_t":$lbo, "int64_t":$sbo,
                        DefaultValuedParameter<"bool", "false">:$mn_major);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The byte offset of element (mn, k) of a k16 slice before the swizzle.
    int64_t getOffset(int64_t mn, int64_t k) const;
    /// The descriptor's fields other than the start address: LBO, SBO and
    /// the swizzle mode in their bits.
    uint64_t getDescriptorBits() const;
  }];
}

//===----------------------------------------------------------------------===//
// Target
//===----------------------------------------------------------------------===//

def Norm_TargetAttr : AttrDef<Norm_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "the GPU a module's kernels are generated for";
  let description = [{
    The target of kernel generation, as IR data: `norm-set-target` (and the
    pipelines, from their options) records it on the module as `norm.target`,
    and every pass that depends on the target reads it from there:
    `norm-generate-kernels` (the shared memory a CTA may use decides which
    long rows are staged), the NVVM lowering (chip and PTX version) and the
    kernel bundle writer. A module without one is generated for the default,
    sm_90 with PTX 8.0.

    - `chip`: sm_80, sm_89, sm_90 or sm_90a.
    - `ptx_version`: PTX ISA version x 10, 78 to 90.
    - `max_shared_bytes`: shared memory one CTA may use, at most the chip's
      (0: the chip's: 163 KiB on sm_80, 99 KiB on sm_89, 227 KiB on sm_90).
    - `pdl` (optional, sm_90 on): programmatic dependent launch. Each kernel
      loads its weights, then waits for the grid before it in the stream
      (`griddepcontrol.wait`) and lets the next grid start
      (`griddepcontrol.launch_dependents`); kernel names end in `_pdl`.

    ```mlir
    module attributes {norm.target = #norm.target<chip = "sm_80", ptx_version = 80, max_shared_bytes = 0>} {}
    ```
  }];
  let parameters = (ins StringRefParameter<"the PTX chip">:$chip,
                        "int64_t":$ptx_version, "int64_t":$max_shared_bytes,
                        DefaultValuedParameter<"bool", "false">:$pdl);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The target as the kernel model describes it.
    ::norm::TargetOptions getOptions() const;
    static TargetAttr get(::mlir::MLIRContext *context,
                          const ::norm::TargetOptions &options);
  }];
}

#endif // NORM_BASE_TD
