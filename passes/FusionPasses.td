//===- FusionPasses.td - norm fusion passes ----------------*- tablegen -*-===//
//
// The passes that turn the layer ops of the norm dialect into kernel ops, one
// op per future GPU kernel. Each fusion keeps the numerics of the unfused
// graph (see the description of norm.fused_row): a rewrite that would round a
// value differently is not made. `norm-fuse` (FusionPipeline.cpp) runs them in
// order.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PASSES_FUSIONPASSES_TD
#define NORM_PASSES_FUSIONPASSES_TD

include "mlir/Pass/PassBase.td"

def FuseSandwichNorm : Pass<"norm-fuse-sandwich-norm"> {
  let summary = "Fuse `x + norm(f)` into the norm's row kernel as a skip";
  let description = [{
    Sandwich-Norm normalizes a sublayer's output before the residual add:
    `h = x + norm(f)`. This pass folds the add into the row kernel of the
    norm: `norm.fused_row (input = f, skip = x)`, whose output has the type of
    `h`. The producer may be any op that is one row kernel (a norm,
    `norm.cast`, `norm.residual_add` or a `norm.fused_row` not yet
    configured).

    The fused kernel rounds the normalized value to the output type before
    the add, so the rewrite needs the producer to round to that same element
    type; a mixed-type add (`f32` stream, `bf16` norm) is left alone. An add
    with `alpha != 1` is left alone too: a kernel's skip is not scaled.
    The producer's result must have no other user.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect"];
}

def FuseResidualAddIntoNorm : Pass<"norm-fuse-residual-add-into-norm"> {
  let summary = "Fuse `norm(alpha * x + f)` into one row kernel";
  let description = [{
    Pre-norm (`h = x + f; y = norm(h)`), post-norm (`norm(x + f)`) and
    DeepNorm (`norm(alpha * x + f)`) become one `norm.fused_row` with
    `input = x`, `addend = f` and the add's `alpha`: the kernel reads `x` and
    `f` once. When `h` has users besides the norm, the kernel also stores `h`
    (`residual_out`) and those users read it instead.

    The consumer may be any op that is one row kernel without an addend: the
    norms, `norm.cast` and unconfigured `norm.fused_row` ops. When `h` feeds
    several of them, the first in the block is fused and the others read
    `residual_out`. The consumer must be in the block of the add.

    Two adds in a row before a norm (`norm((x + a) + b)`) stay two kernels:
    a kernel has one addend, and the graph rounds the first sum before the
    second add. The second add is fused with the norm; the first becomes an
    elementwise kernel of its own.

    The kernel normalizes `h` as the graph rounds it (to the element type of
    `x`). With `f32-residual`, it normalizes the unrounded f32 sum instead
    (`f32_residual`): this deliberately deviates from the graph's rounding,
    for models trained with an f32 residual stream. `residual_out` still holds
    the rounded `h`. An f32 stream is not rounded either way and gets no
    attribute.
  }];
  let options = [
    Option<"f32Residual", "f32-residual", "bool", /*default=*/"false",
           "Normalize the f32 sum instead of the sum rounded to the residual "
           "stream's element type (deviates from the graph on purpose)">
  ];
  let dependentDialects = ["::mlir::norm::NormDialect"];
}

def FuseRotaryIntoAttention : Pass<"norm-fuse-rotary-into-attention"> {
  let summary = "Move the rotary embeddings of q and k into norm.attention";
  let description = [{
    Matches `norm.attention` (or `norm.attention_decode`, whose rotations
    need explicit `positions`: a decode row is not at its index) whose `q`
    and `k` are both `norm.rotary` results with the same style, rotary dim,
    theta, positions and table, with the attention's heads
    (`num_heads` for q, `num_kv_heads` for k) and `head_dim`, used only by
    the attention: the attention then reads the unrotated `q` and `k` and
    carries `rope`, `rotary_dim` and `rope_theta`. Attention ops that
    already rotate are left alone. Run before
    `norm-fuse-qk-norm-into-attention`, it moves in rotations of normalized
    rows (Qwen3, Gemma 3), and the QK-Norm fusion then finds the norms that
    feed them; run after it, it moves in rotations that the attention's
    QK-Norm reads (Llama 4's L2 norm of rotated rows) and sets
    `rope_first`.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect"];
}

def FuseQKNormIntoAttention : Pass<"norm-fuse-qk-norm-into-attention"> {
  let summary = "Move per-head QK-Norm into the norm.attention op";
  let description = [{
    Matches `norm.attention` or `norm.attention_decode` whose `q` and `k`
    are both normalized per head:

    ```mlir
    // q : tensor<T x (H * D)>, one row of D values per token and head
    %heads = tensor.expand_shape %q [[0], [1, 2]] ...      // T x H x D
    %rows = tensor.collapse_shape %heads [[0, 1], [2]] ... // (T * H) x D
    %n = norm.rms_norm %rows ...                           // or norm.l2_norm
    %nheads = tensor.expand_shape %n [[0, 1], [2]] ...     // T x H x D
    %qn = tensor.collapse_shape %nheads [[0], [1, 2]] ...  // T x (H * D)
    ```

    with `D` the attention's `head_dim`, `H` its (key/value) head count, the
    same norm kind and eps on both, and no `weight_offset` (the attention
    prologue has none). The attention then reads `q` and `k` directly and
    carries `qk_norm`, `qk_norm_eps` and the norm weights. A LayerNorm with
    a weight per head (Command R+) is `norm.group_norm` of `H` groups on
    `T x (H * D)` with an `H * D` weight and no bias: it moves in too, and
    the attention then takes a weight row per head. Norms whose results
    have other users, and attention ops with a `qk_norm` already, are left
    alone.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect"];
}

def FormQKNormPrologue : Pass<"norm-form-qk-norm-prologue"> {
  let summary = "Form one QK-Norm prologue kernel from per-head norms of q "
                "and k sliced out of one packed projection";
  let description = [{
    Matches the per-head norms of q and k (the reshape chain of
    `norm-fuse-qk-norm-into-attention`) when `q` and `k` are
    `tensor.extract_slice`s with unit strides of one packed projection
    `qkv : tensor<T x ((Hq + 2 * Hkv) * D)>`, `q` at column 0 with `Hq * D`
    columns and `k` at column `Hq * D` with `Hkv * D` columns, over the same
    rows. Both norms must have the same kind and eps; the weights may differ.
    They become one `norm.qk_norm_prologue` whose results replace the
    normalized `q` and `k`.

    When the slices cannot be shown to take every row of `qkv` (the row
    count is an unrelated SSA value), the prologue reads a row slice of
    `qkv` with the slices' rows: a view with the same row stride, never a
    copy.

    Rotations (`norm.rotary`) of q and k that turn both alike move in too:
    of the normalized rows, where each is the norm's only user (Qwen 3,
    Gemma 3; the prologue's results then replace the rotations'), or of the
    slices before the norms (Llama 4: `rope_first`). The rotations that an
    attention reads have moved into it before this pass runs in `norm-fuse`.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FormAttentionKernels : Pass<"norm-form-attention-kernels"> {
  let summary = "Turn every attention layer op into its kernel op";
  let description = [{
    Each `norm.attention`, with or without a fused QK-Norm, becomes the
    attention kernel op over one sequence of all its tokens:
    `cu_seqlens = [0, tokens]`, built with `tensor.from_elements`
    (variable-length batches come from a host that calls the kernel with
    its own offsets). Where the attention normalizes or rotates its keys
    (`qk_norm`, `rope`), the key side becomes a `norm.k_prepare` of k
    (normalized and rotated once per token and kv head, rounded as the
    graph stores it) and the kernel reads those keys (`prepared_k`),
    normalizing and rotating q alone in its prologue; with `keys-in-loop`
    the kernel normalizes each key tile as it arrives instead (one launch;
    every query tile's CTA repeats the work). Inside the loop the kernels
    take both QK-Norm weights or neither: a missing one becomes ones. Each
    `norm.attention_decode` becomes a `norm.attention_decode_kernel` of the
    same operands and fields (its new keys are few; the cache holds them
    prepared).
  }];
  let options = [
    Option<"keysInLoop", "keys-in-loop", "bool", /*default=*/"false",
           "Normalize and rotate the keys in the attention kernel's loop "
           "instead of once in a norm.k_prepare kernel">,
  ];
  let dependentDialects = ["::mlir::norm::NormDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FormRowKernels : Pass<"norm-form-row-kernels"> {
  let summary = "Turn each remaining layer op into its kernel op";
  let description = [{
    One kernel op per future kernel: `rms_norm` becomes `fused_row <rms>`,
    `layer_norm` `<mean_var>`, `l2_norm` `<l2>`, `group_norm` `<mean_var>`
    with `groups`, `batch_norm_inference` `<none>` with the running
    `mean`/`variance`, a lone `residual_add` `<none>` with an addend, a lone
    `cast` `<none>` with another output type. `batch_norm_training` becomes
    a `norm.column_stats` kernel and a `fused_row <none>` normalizing with
    its statistics. `norm.attention` is not a row kernel and stays.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect"];
}

def FuseCasts : Pass<"norm-fuse-casts"> {
  let summary = "Fold element type conversions into the row kernels next to "
                "them";
  let description = [{
    A conversion (`norm.cast`, or a `norm.fused_row` that only converts) of
    a row kernel's output becomes that kernel's output type when the result
    is the same: the kernel computes in f32 and rounds once, so the producer
    must round to f32 (or its output must be exactly its residual stream, as
    for a lone residual add) and must have no skip. A kernel reading an
    exactly widened value (f16 or bf16 to f32) as its addend or skip, or as
    its input when it has no addend, reads the narrow value instead (it
    widens to f32 anyway; with an addend the input's element type sets the
    rounding of the residual stream).

    A quantizing conversion (a `norm.fused_row <none>` to `f8E4M3FN` or
    `f8E5M2` with its `output_scale`, or its `output_scales` and
    `scale_ub`) folds the same way, scales and all: the producer then
    quantizes its f32 result in the same pass (per-token scales only into a
    producer without groups). A producer rounding to bf16 first keeps its
    quantize apart, since the unfused graph rounds twice.

    Kernels with a fixed `launch` or `kernel` are left as they are.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect"];
}

#endif // NORM_PASSES_FUSIONPASSES_TD
