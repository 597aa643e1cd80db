//===- NormOps.td - norm dialect operations ----------------*- tablegen -*-===//

#ifndef NORM_OPS_TD
#define NORM_OPS_TD

include "dialects/NormBase.td"
include "dialects/NormInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/CastInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Hidden sizes must be static and positive; the verifiers say so with a
// precise message instead of a type-constraint failure.
def Norm_RowTensor : TensorRankOf<[F32, F16, BF16], [2]>;
// What a row kernel writes: also FP8 (quantized outputs).
def Norm_OutputRowTensor
    : TensorRankOf<[F32, F16, BF16, F8E4M3FN, F8E5M2], [2]>;
// An f32 scalar in device memory (an FP8 output's static scale or bound).
def Norm_F32ScalarTensor : TensorRankOf<[F32], [1]>;
def Norm_ParamTensor : TensorRankOf<[F32, F16, BF16], [1]>;
// Rotary embeddings: one i32 position per token, and cos/sin rows.
def Norm_PositionsTensor : TensorRankOf<[I32], [1]>;
def Norm_RopeTableTensor : TensorRankOf<[F32], [2]>;
// Training: saved per-row statistics and gradient partials, f32 rows.
def Norm_F32RowTensor : TensorRankOf<[F32], [2]>;
// A KV cache: the keys' type, or e4m3 with scales (fp8 caches).
def Norm_CacheTensor : TensorRankOf<[F32, F16, BF16, F8E4M3FN], [2]>;
def Norm_ScalesTensor : TensorRankOf<[F32], [1]>;

// Attributes an op does not define are refused unless a dialect prefix
// says whose they are: a misspelt `weight_ofset` must not compile to a
// kernel without the offset.
def Norm_RejectUnknownAttributes : NativeOpTrait<"RejectUnknownAttributes"> {
  let cppNamespace = "::mlir::norm";
}

class Norm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Norm_Dialect, mnemonic, !listconcat(traits, [Norm_RejectUnknownAttributes])>;

// A kernel op: one future GPU kernel, described by the kernel model.
defvar Norm_KernelOp = DeclareOpInterfaceMethods<Norm_KernelOpInterface>;

// Printed form of an optional 1-D parameter operand: `name(%v : type)`.
class OptParam<string name> {
  string format = "(`" # name # "` `(` $" # name # "^ `:` type($" # name # ") `)`)?";
}

// Printed form of a real attribute, `name(1e-06)`, in its shortest form
// that parses back to the same double.
class Real<string keyword, string attr> {
  string format = "`" # keyword # "` `(` custom<Real>($" # attr # ") `)`";
}
class OptReal<string keyword, string attr> {
  string format = "(`" # keyword # "` `(` custom<Real>($" # attr # ")^ `)`)?";
}


//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

def Norm_RMSNormOp : Norm_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalization of each row";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps) * (weight + weight_offset)`, per row, with
    the statistic accumulated in f32. Without a weight the scale is 1.
    `weight_offset = 1.0` is Gemma's `(1 + w)` form; an offset needs a
    weight. `eps` is positive and finite, `weight_offset` finite.

    Canonicalization drops a weight that scales by exactly 1 (a splat 1.0
    weight with offset 0, or a splat 0.0 weight with offset 1).

    ```mlir
    %y = norm.rms_norm %x weight(%w : tensor<4096xbf16>) eps(1.0e-06)
        : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input, Optional<Norm_ParamTensor>:$weight,
                       F64Attr:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_offset);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$input " # OptParam<"weight">.format # " " # Real<"eps", "eps">.format #
      " " # OptReal<"offset", "weight_offset">.format #
      " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Norm_LayerNormOp : Norm_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "layer normalization of each row";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias`, per row, with
    the biased variance and f32 accumulation. Weight and bias are optional;
    canonicalization drops a splat 1.0 weight and a splat 0.0 bias.

    ```mlir
    %y = norm.layer_norm %x weight(%w : tensor<1024xf16>) bias(%b : tensor<1024xf16>)
        eps(1.0e-05) : tensor<8x1024xf16> -> tensor<8x1024xf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input, Optional<Norm_ParamTensor>:$weight,
                       Optional<Norm_ParamTensor>:$bias, F64Attr:$eps);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$input " # OptParam<"weight">.format # " " #
      OptParam<"bias">.format # " " # Real<"eps", "eps">.format #
      " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Norm_L2NormOp : Norm_Op<"l2_norm", [Pure]> {
  let summary = "L2 normalization of each row (Gemma 2-style QK-Norm)";
  let description = [{
    `y = x / sqrt(sum(x^2) + eps)`, per row: the row projected onto the unit
    sphere, with `eps` keeping all-zero rows finite.

    ```mlir
    %y = norm.l2_norm %q eps(1.0e-12) : tensor<?x128xbf16> -> tensor<?x128xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input, F64Attr:$eps);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$input " # Real<"eps", "eps">.format #
      " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Norm_GroupNormOp : Norm_Op<"group_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "group normalization: layer norm over groups of channels";
  let description = [{
    Splits each row's `hidden` channels into `groups` contiguous groups of
    `hidden / groups` channels, normalizes each group by its own mean and
    biased variance, then applies the per-channel weight and bias. `groups`
    is positive and divides the hidden size; canonicalization drops a splat
    1.0 weight and a splat 0.0 bias.

    ```mlir
    %y = norm.group_norm %x weight(%w : tensor<512xf32>) bias(%b : tensor<512xf32>)
        eps(1.0e-05) {groups = 32 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input, Optional<Norm_ParamTensor>:$weight,
                       Optional<Norm_ParamTensor>:$bias, I64Attr:$groups,
                       F64Attr:$eps);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$input " # OptParam<"weight">.format # " " #
      OptParam<"bias">.format # " " # Real<"eps", "eps">.format #
      " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Norm_BatchNormInferenceOp
    : Norm_Op<"batch_norm_inference", [Pure, AttrSizedOperandSegments]> {
  let summary = "batch normalization with running statistics";
  let description = [{
    `y = (x - running_mean) / sqrt(running_var + eps) * weight + bias`, with
    per-channel (per hidden index) statistics; rows are the batch.
    Canonicalization drops a splat 1.0 weight and a splat 0.0 bias.

    ```mlir
    %y = norm.batch_norm_inference %x mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>)
        eps(1.0e-05) : tensor<?x256xf16> -> tensor<?x256xf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input, Norm_ParamTensor:$mean,
                       Norm_ParamTensor:$variance,
                       Optional<Norm_ParamTensor>:$weight,
                       Optional<Norm_ParamTensor>:$bias, F64Attr:$eps);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = [{
    $input `mean` `(` $mean `:` type($mean) `)`
    `variance` `(` $variance `:` type($variance) `)` }] #
    OptParam<"weight">.format # " " # OptParam<"bias">.format # " " # Real<"eps", "eps">.format #
    " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Norm_BatchNormTrainingOp
    : Norm_Op<"batch_norm_training", [Pure, AttrSizedOperandSegments]> {
  let summary = "batch normalization with statistics of the batch";
  let description = [{
    Computes each channel's mean and biased variance over the rows (the
    batch), normalizes with them and applies weight and bias. Also returns
    the batch mean and biased variance in f32 (a framework derives its
    running statistics from them). Canonicalization drops a splat 1.0
    weight and a splat 0.0 bias.

    ```mlir
    %y, %mean, %var = norm.batch_norm_training %x eps(1.0e-05)
        : tensor<?x256xf32> -> tensor<?x256xf32>, tensor<256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input, Optional<Norm_ParamTensor>:$weight,
                       Optional<Norm_ParamTensor>:$bias, F64Attr:$eps);
  let results = (outs Norm_RowTensor:$result, Norm_ParamTensor:$batch_mean,
                      Norm_ParamTensor:$batch_variance);
  let assemblyFormat = "$input " # OptParam<"weight">.format # " " #
      OptParam<"bias">.format # " " # Real<"eps", "eps">.format # " attr-dict `:` type($input) `->` " #
      "type($result) `,` type($batch_mean) `,` type($batch_variance)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Norm_ResidualAddOp : Norm_Op<"residual_add", [Pure]> {
  let summary = "scaled residual add: alpha * x + y";
  let description = [{
    `result = alpha * residual + sublayer`, computed in f32 and rounded to
    the result type, which is the type of `residual`: the residual stream
    keeps its storage type. `alpha = 1` is the plain residual connection; DeepNorm
    uses `alpha = (2N)^(1/4)` for N layers (see `norm::getDeepNormConstants`).
    The operands may have different element types (a residual stream kept in
    f32 beside a bf16 sublayer output). `alpha` is positive and finite.

    The op folds `1 * x + 0` to `x` and `alpha * 0 + y` to `y` when
    `y` has the result type. `alpha * x + 0` with `alpha != 1` stays: it is a
    multiply.

    ```mlir
    %h = norm.residual_add %x, %f alpha(2.0)
        : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$residual, Norm_RowTensor:$sublayer,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$residual `,` $sublayer " #
      OptReal<"alpha", "alpha">.format # " attr-dict `:` type($residual) "
      "`,` type($sublayer) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Norm_CastOp : Norm_Op<"cast", [Pure,
    DeclareOpInterfaceMethods<CastOpInterface>]> {
  let summary = "convert between storage types (round to nearest even)";
  let description = [{
    Converts each element between f32, f16 and bf16 with round-to-nearest-
    even; the shape (static or dynamic, dimension by dimension) is unchanged.

    A cast to the same type folds away. `cast(cast(x : A -> B) : B -> C)`
    becomes `cast(x : A -> C)` when B holds every value of A exactly
    (f16/bf16 -> f32): bf16 -> f32 -> bf16 disappears, bf16 -> f32 -> f16 is
    one cast, while f32 -> bf16 -> f32 rounds and stays.

    ```mlir
    %y = norm.cast %x : tensor<?x4096xf32> to tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Norm_RotaryOp : Norm_Op<"rotary", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embeddings of the heads of token rows";
  let description = [{
    Rotates each `head_dim`-long head of each row of `input`
    (`tokens x (num_heads * head_dim)`, one sequence, row `i` at position
    `i`): the pairs of `style` (`neox`: `(d, d + rotary_dim / 2)`, `gptj`:
    `(2i, 2i + 1)`) of the first `rotary_dim` elements (default `head_dim`)
    turn by `pos * rope_theta^(-2i / rotary_dim)`, in f32, and the result is
    rounded to the element type. With `positions` (i32, one per row), row
    `i` is at position `positions[i]`; with `rope_table` (f32,
    `positions x rotary_dim`: the cosines of row `p`'s angles, then their
    sines, as FlashInfer's and vLLM's `cos_sin_cache`) the angles are the
    table's, and `rope_theta` is absent (otherwise it is required). A
    position outside the table rotates its row to NaN. This is the layer op of a model's graph;
    `norm-fuse-rotary-into-attention` moves it into the `norm.attention`
    that reads it (q and k both), where the attention kernel applies it in
    its prologue. On its own it is not a kernel op.

    ```mlir
    %qr = norm.rotary <neox> %q {num_heads = 32 : i64, head_dim = 128 : i64,
                                 rope_theta = 1.0e+06 : f64}
        : tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       Norm_RopeStyleAttr:$style,
                       I64Attr:$num_heads, I64Attr:$head_dim,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$style $input " # OptParam<"positions">.format # " " #
      OptParam<"rope_table">.format # " attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Norm_AttentionOp : Norm_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-head attention with an optional QK-Norm prologue";
  let description = [{
    `softmax(scale * norm(q) norm(k)^T [+ causal mask]) v` per head, on
    token-major tensors: `q` is `tokens x (num_heads * head_dim)`, `k` and
    `v` are `tokens x (num_kv_heads * head_dim)` (grouped-query attention
    when `num_kv_heads < num_heads`). With `qk_norm` set, each head's query
    and key rows are normalized first (RMSNorm, L2 or LayerNorm without
    bias) with the optional `head_dim`-long weights (or a row per head,
    `num_heads * head_dim` for q and `num_kv_heads * head_dim` for k:
    Command R+), plus `qk_norm_offset`
    (Gemma 3's `1 + w`): the fusion pass `norm-fuse-qk-norm-into-attention`
    moves separate norms here so that an attention kernel applies them in
    its prologue. QK-Norm
    weights, `qk_norm_eps` and `qk_norm_offset` need `qk_norm`; `qk_norm`
    needs `qk_norm_eps`; an offset needs weights.
    `num_kv_heads` divides `num_heads`; `k` and `v` have the same shape; the
    result has the type of `q`; `scale` is positive and finite.

    With `rope`, the (normalized) query and key rows are then rotated by
    their position within the sequence (rotary position embeddings,
    `#norm.rope<neox>` or `<gptj>`) over their first `rotary_dim` elements
    (default `head_dim`; any even number) with the
    frequency base `rope_theta`; or at the optional `positions` (i32, one
    per token), or with the angles of a `rope_table` instead of
    `rope_theta` (see `norm.rotary`). `rope_theta` is required with `rope`
    unless a table gives the angles. Positions move the rotations only: the
    causal mask stays by index within the sequence. With `rope_first` (which
    needs `qk_norm` and `rope`) the rows are rotated first and normalized
    after (Llama 4's L2 QK-Norm of rotated rows); each step rounds to the
    element type, as the graph stores it.

    ```mlir
    %o = norm.attention %q, %k, %v q_norm_weight(%wq : tensor<128xbf16>)
        k_norm_weight(%wk : tensor<128xbf16>)
        scale(0.08838834764831845) qk_norm_eps(1.0e-06)
        {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
         causal, qk_norm = #norm.qk_norm<rms>}
        : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$q, Norm_RowTensor:$k, Norm_RowTensor:$v,
                       Optional<Norm_ParamTensor>:$q_norm_weight,
                       Optional<Norm_ParamTensor>:$k_norm_weight,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, UnitAttr:$causal, F64Attr:$scale,
                       OptionalAttr<Norm_QKNormKindAttr>:$qk_norm,
                       OptionalAttr<F64Attr>:$qk_norm_eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$qk_norm_offset,
                       OptionalAttr<Norm_RopeStyleAttr>:$rope,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first);
  let results = (outs Norm_RowTensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v " # OptParam<"q_norm_weight">.format #
      " " # OptParam<"k_norm_weight">.format # " " # OptParam<"positions">.format #
      " " # OptParam<"rope_table">.format # " " # Real<"scale", "scale">.format #
      " " # OptReal<"qk_norm_eps", "qk_norm_eps">.format # " " #
      OptReal<"qk_norm_offset", "qk_norm_offset">.format # " attr-dict `:` type($q) `,` "
      "type($k) `,` type($v) `->` type($result)";
  let hasVerifier = 1;
}

def Norm_AttentionDecodeOp : Norm_Op<"attention_decode", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "a decode step: append new keys and values to a KV cache, attend";
  let description = [{
    One decode step of a layer: sequence `b` has `cache_seqlens[b]` rows in
    its cache (`k_cache`, `v_cache`, rows `b * capacity` on) and new tokens
    `cu_seqlens[b]` to `cu_seqlens[b + 1]` in `q`, `k` and `v`. The new k
    and v rows are appended to the cache (rows past the capacity are
    dropped), and each new token attends to its sequence's cache and the new
    tokens up to itself: `softmax(scale * norm(q) norm(k)^T) v` per head, as
    `norm.attention` with the same QK-Norm and rotary fields (rotations at
    positions `cache_seqlens[b] + i`, or `positions`). The results are the
    output and the updated caches.

    With `pages(%block_tables)` and `cache_block_size = P` the caches are
    pages of `P` rows (vLLM's `[num_blocks, block_size, kv_heads,
    head_dim]` as `num_blocks * P` rows; SGLang's `P = 1`; a power of two
    up to 256): position `p` of sequence `b` is row `block_tables[b *
    max_blocks + p / P] * P + p % P`, `max_blocks` the table's entries /
    batch and the capacity `max_blocks * P`. An entry outside `[0, rows /
    P)` (unset, -1) is never written, and reads as page 0. With
    `page_indptr(%indptr)` (i32, batch + 1) the table is FlashInfer's
    ragged one (`kv_indices`, `kv_indptr`): sequence `b`'s pages are
    `block_tables[indptr[b] .. indptr[b + 1])`, its capacity their count x
    `P`, and position `p` is row `block_tables[indptr[b] + p / P] * P + p %
    P`.

    With `f8E4M3FN` caches and `scales(%k_scale, %v_scale)` (f32, one
    element, or one per kv head: vLLM's `k_scale`, `v_scale`) a key or
    value `x` is stored as `e4m3(x * (1 / scale))`, rounded to nearest even
    and saturated, and every key and value the attention reads, the new
    tokens' included, is `element(e4m3 * scale)`.

    Like `norm.attention`, it reads q and k as the graph gives them: the
    fusion passes move per-head norms and `norm.rotary` into it, and
    `norm-form-attention-kernels` turns it into one
    `norm.attention_decode_kernel` (QK-Norm, RoPE, cache write and
    split-KV attention in one launch).

    ```mlir
    %o, %kc, %vc = norm.attention_decode %q, %k, %v seqlens(%cu : tensor<?xi32>)
        cache(%k_cache, %v_cache lengths %len : tensor<?xi32>) scale(0.08838834764831845)
        {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64}
        : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>,
          tensor<?x1024xbf16>, tensor<?x1024xbf16>
       -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$q, Norm_RowTensor:$k, Norm_RowTensor:$v,
                       TensorRankOf<[I32], [1]>:$cu_seqlens,
                       Norm_CacheTensor:$k_cache, Norm_CacheTensor:$v_cache,
                       TensorRankOf<[I32], [1]>:$cache_seqlens,
                       Optional<TensorRankOf<[I32], [1]>>:$block_tables,
                       Optional<TensorRankOf<[I32], [1]>>:$page_indptr,
                       Optional<Norm_ScalesTensor>:$k_scale,
                       Optional<Norm_ScalesTensor>:$v_scale,
                       Optional<Norm_ParamTensor>:$q_norm_weight,
                       Optional<Norm_ParamTensor>:$k_norm_weight,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F64Attr:$scale,
                       OptionalAttr<Norm_QKNormKindAttr>:$qk_norm,
                       OptionalAttr<F64Attr>:$qk_norm_eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$qk_norm_offset,
                       OptionalAttr<Norm_RopeStyleAttr>:$rope,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first,
                       OptionalAttr<I64Attr>:$cache_block_size);
  let results = (outs Norm_RowTensor:$output, Norm_CacheTensor:$k_cache_out,
                      Norm_CacheTensor:$v_cache_out);
  let assemblyFormat = "$q `,` $k `,` $v `seqlens` `(` $cu_seqlens `:` "
      "type($cu_seqlens) `)` `cache` `(` $k_cache `,` $v_cache `lengths` "
      "$cache_seqlens `:` type($cache_seqlens) `)` "
      "(`pages` `(` $block_tables^ `:` type($block_tables) `)`)? "
      "(`page_indptr` `(` $page_indptr^ `:` type($page_indptr) `)`)? "
      "(`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,` "
      "type($v_scale) `)`)? " #
      OptParam<"q_norm_weight">.format # " " #
      OptParam<"k_norm_weight">.format # " " # OptParam<"positions">.format #
      " " # OptParam<"rope_table">.format # " " #
      Real<"scale", "scale">.format #
      " " # OptReal<"qk_norm_eps", "qk_norm_eps">.format # " " #
      OptReal<"qk_norm_offset", "qk_norm_offset">.format # " attr-dict `:` "
      "type($q) `,` type($k) `,` type($v) `,` type($k_cache) `,` "
      "type($v_cache) `->` type($output) `,` type($k_cache_out) `,` "
      "type($v_cache_out)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel ops: one op, one future GPU kernel
//===----------------------------------------------------------------------===//

def Norm_FusedRowOp : Norm_Op<"fused_row", [Pure, AttrSizedOperandSegments,
                                            AttrSizedResultSegments,
                                            Norm_KernelOp]> {
  let summary = "one row kernel: prologue, statistic, epilogue";
  let description = [{
    The core abstraction of norm-opt: every row-wise normalization is

    ```
    v    = alpha * input + addend            (prologue; just `input` without an addend)
    s    = statistic(v)                      (per row, or per group of channels)
    y    = skip + normalize(v, s) * (weight + weight_offset) + bias
    ```

    - `input` is the residual stream when there is an `addend` (the operand
      `alpha` scales, as in `norm.residual_add`). Without `f32_residual`, `v`
      is rounded to the element type of `input` before the statistic, as the
      unfused graph rounds its residual sum; with it, the statistic sees the
      f32 sum. `residual_out` (optional, element type of `input`) stores `v`.
    - `statistic`: `rms` (`v * rsqrt(mean(v^2) + eps)`), `mean_var`
      (`(v - mean) * rsqrt(var + eps)`), `l2` (`v * rsqrt(sum(v^2) + eps)`),
      or `none` (elementwise: `(v - mean) * rsqrt(variance + eps)` with the
      per-channel `mean`/`variance` operands when given, else `v`).
    - `groups > 1` computes the statistic over `hidden / groups` contiguous
      channels (GroupNorm); it needs a statistic other than `none`.
    - `skip` adds a tensor after normalization (Sandwich-Norm: `x + norm(f)`);
      the normalized value is rounded to the output type before the add, as
      in the unfused graph.
    - `output` may have another element type than `input` (a fused cast).
    - `eps` is there exactly when something reads it: a statistic, or the
      per-channel `variance`. Weight, bias, mean and variance share one
      element type.
    - `saved_rstd` and `saved_mean` (optional results, `rows x groups` f32)
      keep what `norm.fused_row_grad` reads: the scale of each row's
      statistic (`rsqrt(var + eps)`, `rsqrt(mean(v^2) + eps)`,
      `rsqrt(sum(v^2) + eps)`) and, for `mean_var` (where it is required
      with `saved_rstd`), its mean; written in the same pass.
    - `output_over(input | addend)` and `residual_over(input | addend)`
      write the output, or `residual_out`, in place of that row input: the
      result may take the operand's buffer (same element type; the two
      results never the same operand). The kernel claims no `noalias` for
      either buffer and writes a row only after every thread has read it.
      Rows streamed twice through global memory store `residual_out` as
      they first read the row, each thread its own elements, so there only
      `rms` and `l2` rows that read `v` back from it (no `f32_residual`)
      take `residual_over` (vLLM's `fused_add_rms_norm`: `residual_over(input)` with
      `output_over(addend)`).
    - An `output` of `f8E4M3FN` or `f8E5M2` is quantized in the same pass:
      `q = fp8(y * (1 / scale))`, rounded to nearest even and saturated to
      the largest finite value (448, 57344), `y` the f32 normalized value.
      The scale is either static, the f32 operand `output_scale`
      (`tensor<1xf32>`, vLLM's `rms_norm_static_fp8_quant`), or per token:
      the result `output_scales` (`rows x 1` f32) receives each row's
      `max(min(amax(|y|), scale_ub) / fp8_max, 1 / (fp8_max * 512))`
      (`rms_norm_dynamic_per_token_quant`; `scale_ub`, an optional
      `tensor<1xf32>` operand, bounds the amax). Per-token scales need rows
      held whole (registers or shared memory) and `groups = 1`; an FP8
      output takes no `skip`.

    `launch` is the launch configuration; `kernel` names the `gpu.func` that
    implements the op once kernels are generated. A launch configuration
    must fit the row (`hidden / groups` elements, at most 2^24): no thread of
    a row without work, and vector accesses of at most 16 bytes of every row
    tensor. A thread keeps its share of a row in registers where the
    registers of its CTA hold it (at most 64 elements, fewer in CTAs of more
    than 512 threads: `norm::fitsInRegisters`); the kernel stages longer
    shares in shared memory, or reads rows too long for it twice.

    Canonicalization drops a weight that scales by exactly 1 (splat 1.0 with
    offset 0 or splat 0.0 with offset 1) and a splat 0.0 bias.

    ```mlir
    %y, %h = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>)
        weight(%w : tensor<4096xbf16>) eps(1.0e-06)
        : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins
      Norm_RowTensor:$input,
      Optional<Norm_RowTensor>:$addend,
      Optional<Norm_RowTensor>:$skip,
      Optional<Norm_ParamTensor>:$weight,
      Optional<Norm_ParamTensor>:$bias,
      Optional<Norm_ParamTensor>:$mean,
      Optional<Norm_ParamTensor>:$variance,
      Optional<Norm_F32ScalarTensor>:$output_scale,
      Optional<Norm_F32ScalarTensor>:$scale_ub,
      Norm_StatisticAttr:$statistic,
      OptionalAttr<F64Attr>:$eps,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_offset,
      DefaultValuedAttr<I64Attr, "1">:$groups,
      UnitAttr:$f32_residual,
      OptionalAttr<Norm_RowOperand>:$output_over,
      OptionalAttr<Norm_RowOperand>:$residual_over,
      OptionalAttr<Norm_LaunchAttr>:$launch,
      OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_OutputRowTensor:$output,
                      Optional<Norm_RowTensor>:$residual_out,
                      Optional<Norm_F32RowTensor>:$output_scales,
                      Optional<Norm_F32RowTensor>:$saved_mean,
                      Optional<Norm_F32RowTensor>:$saved_rstd);
  let assemblyFormat = [{
    $statistic $input
    (`addend` `(` $addend^ `:` type($addend) `)`)?
    (`skip` `(` $skip^ `:` type($skip) `)`)? }] #
    OptParam<"weight">.format # " " # OptParam<"bias">.format # " " #
    OptParam<"mean">.format # " " # OptParam<"variance">.format # " " #
    OptParam<"output_scale">.format # " " # OptParam<"scale_ub">.format # " " #
    OptReal<"eps", "eps">.format #
    " " # OptReal<"alpha", "alpha">.format # " " #
    OptReal<"offset", "weight_offset">.format # [{
    (`output_over` `(` $output_over^ `)`)?
    (`residual_over` `(` $residual_over^ `)`)?
    attr-dict `:` type($input) `->` type($output) (`,` type($residual_out)^)?
    (`output_scales` `(` type($output_scales)^ `)`)?
    (`saved_mean` `(` type($saved_mean)^ `)`)?
    (`saved_rstd` `(` type($saved_rstd)^ `)`)?
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The hidden size (the static row length).
    int64_t getHidden();
    /// Element type in which `v` is held between prologue and statistic.
    Type getStreamElementType();
  }];
}

def Norm_QKNormPrologueOp : Norm_Op<"qk_norm_prologue", [Pure,
    AttrSizedOperandSegments, AttrSizedResultSegments, Norm_KernelOp]> {
  let summary = "normalize q and k per head, straight from a packed qkv tensor";
  let description = [{
    Reads the packed projection output `qkv` of shape
    `tokens x ((num_q_heads + 2 * num_kv_heads) * head_dim)` (q heads, then k
    heads, then v heads) and writes `q` (`tokens x num_q_heads * head_dim`)
    and `k` (`tokens x num_kv_heads * head_dim`), each head row normalized by
    RMSNorm, L2 norm or LayerNorm without bias (`mean_var`) and scaled by
    `q_weight`/`k_weight` (length `head_dim`, or a row per head for both:
    `num_q_heads * head_dim` and `num_kv_heads * head_dim`, Command R+) plus
    `weight_offset` (Gemma 3's `1 + w`: `offset(1.0)`). One launch; `v` is not touched; one key/value
    head (multi-query attention) is as good as many. The row stride of
    `qkv` is a runtime argument of the kernel. A launch configuration serves
    rows of `head_dim` elements, held in registers (`norm::fitsInRegisters`).
    `saved_rstd` and `saved_mean` (optional results, `tokens x (num_q_heads
    + num_kv_heads)` f32, q heads first; `saved_mean` exactly for
    `mean_var`) keep each head's statistic for the backward
    (`norm.fused_row_grad` with `per_head_weight`).

    With `rope`, the normalized head rows, rounded to the element type as
    the unfused graph stores them, are then rotated (see `norm.rotary`: row
    `i` at position `i`, or `positions[i]`; angles by `rope_theta` or from
    a `rope_table`) and rounded again; with `rope_first` (Llama 4's norm of
    rotated rows) they are rotated first. This is QK-Norm and RoPE in one
    launch for an attention kernel the project does not own. The pairs are
    turned in registers, so a launch keeps each pair within a thread
    (`norm::verifyRotaryLayout`). Statistics are saved without `rope` only.

    ```mlir
    %q, %k = norm.qk_norm_prologue <rms> %qkv q_weight(%wq : tensor<128xbf16>)
        k_weight(%wk : tensor<128xbf16>)
        eps(1.0e-06) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64}
        : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$qkv,
                       Optional<Norm_ParamTensor>:$q_weight,
                       Optional<Norm_ParamTensor>:$k_weight,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       Norm_QKNormKindAttr:$kind, I64Attr:$num_q_heads,
                       I64Attr:$num_kv_heads, I64Attr:$head_dim, F64Attr:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_offset,
                       OptionalAttr<Norm_RopeStyleAttr>:$rope,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first,
                       OptionalAttr<Norm_LaunchAttr>:$launch,
                       OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_RowTensor:$q, Norm_RowTensor:$k,
                      Optional<Norm_F32RowTensor>:$saved_mean,
                      Optional<Norm_F32RowTensor>:$saved_rstd);
  let assemblyFormat = "$kind $qkv " # OptParam<"q_weight">.format # " " #
      OptParam<"k_weight">.format # " " # OptParam<"positions">.format # " " #
      OptParam<"rope_table">.format # " " # Real<"eps", "eps">.format # " " #
      OptReal<"offset", "weight_offset">.format # " attr-dict `:` type($qkv) `->` "
      "type($q) `,` type($k) "
      "(`saved_mean` `(` type($saved_mean)^ `)`)? "
      "(`saved_rstd` `(` type($saved_rstd)^ `)`)?";
  let hasVerifier = 1;
}

def Norm_KPrepareOp : Norm_Op<"k_prepare", [Pure, AttrSizedOperandSegments,
    AttrSizedResultSegments, Norm_KernelOp]> {
  let summary = "normalize and rotate the k heads once, for every query to read";
  let description = [{
    Writes `k_out`, the head rows of `k` (`tokens x num_kv_heads *
    head_dim`) normalized by `qk_norm` (RMSNorm, L2 or LayerNorm without
    bias; optional) with the optional `k_weight` (the head dim, or a row per
    head) plus `weight_offset`, rounded to the element type, then rotated by
    `rope` (optional; see `norm.rotary`: a token at its index within its
    sequence of the varlen batch `cu_seqlens`, as attention turns its keys,
    or at `positions[i]`; angles by `rope_theta` or a `rope_table`;
    `rope_first` rotates before the norm) and rounded again: the keys
    exactly as the unfused graph stores them. `cu_seqlens` is there exactly
    when tokens turn by their index (`rope` without `positions`) or with a
    cache. With `v`, its rows are copied to `v_out` in the same launch (a
    packed projection's strided v made contiguous beside its keys).

    With `cache(%k_cache, %v_cache lengths %cache_seqlens)` the keys and
    values go into a KV cache instead, as `norm.attention_decode` appends
    them: sequence `b` of `cu_seqlens` owns the rows from `b * capacity`
    (capacity = the caches' rows / batch) and holds `cache_seqlens[b]`
    (clamped to [0, capacity]) rows; its new token `i` goes to the row after
    them, and turns at position `cache_seqlens[b] + i` without `positions`;
    rows past the capacity are dropped. `k_out` and `v_out` are then the
    updated caches (every other row as it was): QK-Norm + RoPE + the cache
    write of a prefill or chunked-prefill step in one launch, which serving
    stacks keep as separate kernels.
    `pages(%block_tables)` with `cache_block_size` pages the caches as for
    `norm.attention_decode`: a new token on an unset page is not written;
    and FP8 caches with `scales(...)` (the keys rounded to k's type first).

    This is the key side of QK-Norm attention done once per token and kv
    head: `norm-form-attention-kernels` pairs it with a
    `norm.attention_kernel` whose `prepared_k` keys skip the per-tile norm
    and rotation (which every query tile of every query head of a group
    would otherwise repeat). On its own it is QK-Norm + RoPE of k in one
    launch, for an attention kernel the project does not own. Statistics
    are saved (`saved_mean`, `saved_rstd`: `tokens x num_kv_heads` f32)
    without `rope` only, as for `norm.qk_norm_prologue`.

    ```mlir
    %kn = norm.k_prepare %k k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
        {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 8 : i64,
         head_dim = 128 : i64, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
        : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$k, Optional<Norm_RowTensor>:$v,
                       Optional<TensorRankOf<[I32], [1]>>:$cu_seqlens,
                       Optional<Norm_CacheTensor>:$k_cache,
                       Optional<Norm_CacheTensor>:$v_cache,
                       Optional<TensorRankOf<[I32], [1]>>:$cache_seqlens,
                       Optional<TensorRankOf<[I32], [1]>>:$block_tables,
                       Optional<TensorRankOf<[I32], [1]>>:$page_indptr,
                       Optional<Norm_ScalesTensor>:$k_scale,
                       Optional<Norm_ScalesTensor>:$v_scale,
                       Optional<Norm_ParamTensor>:$k_weight,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       OptionalAttr<Norm_QKNormKindAttr>:$qk_norm,
                       I64Attr:$num_kv_heads, I64Attr:$head_dim,
                       OptionalAttr<F64Attr>:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_offset,
                       OptionalAttr<Norm_RopeStyleAttr>:$rope,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first,
                       OptionalAttr<I64Attr>:$cache_block_size,
                       OptionalAttr<Norm_LaunchAttr>:$launch,
                       OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_CacheTensor:$k_out, Optional<Norm_CacheTensor>:$v_out,
                      Optional<Norm_F32RowTensor>:$saved_mean,
                      Optional<Norm_F32RowTensor>:$saved_rstd);
  let assemblyFormat = "$k (`values` `(` $v^ `:` type($v) `)`)? "
      "(`seqlens` `(` $cu_seqlens^ `:` type($cu_seqlens) `)`)? "
      "(`cache` `(` $k_cache^ `,` $v_cache `lengths` $cache_seqlens `:` "
      "type($k_cache) `,` type($v_cache) `,` type($cache_seqlens) `)`)? "
      "(`pages` `(` $block_tables^ `:` type($block_tables) `)`)? "
      "(`page_indptr` `(` $page_indptr^ `:` type($page_indptr) `)`)? "
      "(`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,` "
      "type($v_scale) `)`)? " #
      OptParam<"k_weight">.format # " " # OptParam<"positions">.format # " " #
      OptParam<"rope_table">.format # " " # OptReal<"eps", "eps">.format # " " #
      OptReal<"offset", "weight_offset">.format # " attr-dict `:` type($k) `->` "
      "type($k_out) (`,` type($v_out)^)? "
      "(`saved_mean` `(` type($saved_mean)^ `)`)? "
      "(`saved_rstd` `(` type($saved_rstd)^ `)`)?";
  let hasVerifier = 1;
}

def Norm_AttentionKernelOp : Norm_Op<"attention_kernel", [Pure,
    AttrSizedOperandSegments, Norm_KernelOp]> {
  let summary = "attention over variable-length sequences, QK-Norm in its prologue";
  let description = [{
    The prefill/training forward kernel of `norm.attention`: for each
    sequence `b` (tokens `cu_seqlens[b]` to `cu_seqlens[b + 1]`, i32, as
    FlashAttention's varlen API gives them) and query head `h`,
    `output = softmax(scale * qn kn^T [+ causal mask]) v` over the keys of
    the same sequence, where `qn` and `kn` are the head rows of `q` and of
    key/value head `h / (num_heads / num_kv_heads)` of `k`, normalized when
    `qk_norm` is set (RMSNorm, L2 or LayerNorm without bias, the optional
    weights plus `qk_norm_offset`) and rounded to the element type, as the
    unfused graph stores them, then rotated by `rope` (see `norm.attention`:
    by theta, or the `rope_table`'s angles, at each token's index within its
    sequence or at its `positions` entry) and rounded again. `q` and the
    output are
    `tokens x (num_heads * head_dim)`, `k` and `v`
    `tokens x (num_kv_heads * head_dim)`, each with its own row stride (so
    they may be views of one packed projection). The optional `lse` result
    (`tokens x num_heads`, f32) holds each score row's natural-log
    log-sum-exp, for a backward pass. With `prepared_k`, `k` holds keys
    already normalized and rotated (`norm.k_prepare`): the QK-Norm and
    rotary fields apply to q alone, and there is no `k_norm_weight`.

    One CTA computes 16 or 32 query rows per warp (`rows_per_cta` /
    warps) of one sequence and head with tensor cores (`norm.mma_sync`,
    `norm.ldmatrix`), streaming key/value tiles of `block_n` rows through
    shared memory (`norm.async_copy`) with an online softmax in f32; causal
    kernels skip the tiles above the diagonal, and only the tiles on the
    diagonal or at the sequence's end are masked.

    ```mlir
    %o = norm.attention_kernel %q, %k, %v seqlens(%cu : tensor<3xi32>)
        q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
        scale(0.08838834764831845) qk_norm_eps(1.0e-06)
        {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
         causal, qk_norm = #norm.qk_norm<rms>}
        : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$q, Norm_RowTensor:$k, Norm_RowTensor:$v,
                       TensorRankOf<[I32], [1]>:$cu_seqlens,
                       Optional<Norm_ParamTensor>:$q_norm_weight,
                       Optional<Norm_ParamTensor>:$k_norm_weight,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, UnitAttr:$causal, F64Attr:$scale,
                       OptionalAttr<Norm_QKNormKindAttr>:$qk_norm,
                       OptionalAttr<F64Attr>:$qk_norm_eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$qk_norm_offset,
                       OptionalAttr<Norm_RopeStyleAttr>:$rope,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first, UnitAttr:$prepared_k,
                       OptionalAttr<Norm_LaunchAttr>:$launch,
                       OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_RowTensor:$output,
                      Optional<TensorRankOf<[F32], [2]>>:$lse);
  let assemblyFormat = "$q `,` $k `,` $v `seqlens` `(` $cu_seqlens `:` "
      "type($cu_seqlens) `)` " # OptParam<"q_norm_weight">.format # " " #
      OptParam<"k_norm_weight">.format # " " # OptParam<"positions">.format #
      " " # OptParam<"rope_table">.format # " " # Real<"scale", "scale">.format #
      " " # OptReal<"qk_norm_eps", "qk_norm_eps">.format # " " #
      OptReal<"qk_norm_offset", "qk_norm_offset">.format # " attr-dict `:` "
      "type($q) `,` type($k) `,` type($v) `->` type($output) (`,` type($lse)^)?";
  let hasVerifier = 1;
}

def Norm_AttentionDecodeKernelOp : Norm_Op<"attention_decode_kernel", [Pure,
    AttrSizedOperandSegments, Norm_KernelOp]> {
  let summary = "decode attention against a KV cache: QK-Norm, RoPE, append, attend";
  let description = [{
    The decode kernel of `norm.attention`, in one launch: sequence `b` has
    `cache_seqlens[b]` rows in its cache (`k_cache` and `v_cache`, rows
    `b * capacity` to `(b + 1) * capacity - 1`, already normalized and
    rotated) and new tokens `cu_seqlens[b]` to `cu_seqlens[b + 1]` in `q`,
    `k` and `v` (a few per sequence: one, or a speculative draft). The new
    tokens' q and k rows are normalized and rotated as in
    `norm.attention_kernel`, at positions `cache_seqlens[b] + i` (or their
    `positions` entries); their k
    and v rows are appended to the cache (rows past `capacity` are not
    written), and each new token attends to the cache and the new tokens up
    to itself. The results are the output and the caches, updated in place:
    the kernel writes only the appended rows.

    Paged caches (`pages`, `cache_block_size`) as `norm.attention_decode`
    describes them: the CTA looks a page up once for the rows of a key tile
    that one page holds.

    One CTA holds the query rows (new tokens x the query heads of one kv
    head, so that the heads of a group read the cache once) of a tile, and
    one of `kv_splits` (a launch parameter) ranges of the cache; the last
    range also holds the new keys. Splits write their normalized output and
    log-sum-exp to a workspace, and the last to finish combines them in
    split order (flash-decoding, deterministic).

    ```mlir
    %o, %kc, %vc = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
        cache(%k_cache, %v_cache lengths %cache_len : tensor<?xi32>)
        q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
        scale(0.08838834764831845) qk_norm_eps(1.0e-06)
        {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
         qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>,
         rope_theta = 1.0e+06 : f64}
        : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>,
          tensor<?x1024xbf16>, tensor<?x1024xbf16>
       -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$q, Norm_RowTensor:$k, Norm_RowTensor:$v,
                       TensorRankOf<[I32], [1]>:$cu_seqlens,
                       Norm_CacheTensor:$k_cache, Norm_CacheTensor:$v_cache,
                       TensorRankOf<[I32], [1]>:$cache_seqlens,
                       Optional<TensorRankOf<[I32], [1]>>:$block_tables,
                       Optional<TensorRankOf<[I32], [1]>>:$page_indptr,
                       Optional<Norm_ScalesTensor>:$k_scale,
                       Optional<Norm_ScalesTensor>:$v_scale,
                       Optional<Norm_ParamTensor>:$q_norm_weight,
                       Optional<Norm_ParamTensor>:$k_norm_weight,
                       Optional<Norm_PositionsTensor>:$positions,
                       Optional<Norm_RopeTableTensor>:$rope_table,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F64Attr:$scale,
                       OptionalAttr<Norm_QKNormKindAttr>:$qk_norm,
                       OptionalAttr<F64Attr>:$qk_norm_eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$qk_norm_offset,
                       OptionalAttr<Norm_RopeStyleAttr>:$rope,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<F64Attr>:$rope_theta,
                       UnitAttr:$rope_first,
                       OptionalAttr<I64Attr>:$cache_block_size,
                       OptionalAttr<Norm_LaunchAttr>:$launch,
                       OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_RowTensor:$output, Norm_CacheTensor:$k_cache_out,
                      Norm_CacheTensor:$v_cache_out);
  let assemblyFormat = "$q `,` $k `,` $v `seqlens` `(` $cu_seqlens `:` "
      "type($cu_seqlens) `)` `cache` `(` $k_cache `,` $v_cache `lengths` "
      "$cache_seqlens `:` type($cache_seqlens) `)` "
      "(`pages` `(` $block_tables^ `:` type($block_tables) `)`)? "
      "(`page_indptr` `(` $page_indptr^ `:` type($page_indptr) `)`)? "
      "(`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,` "
      "type($v_scale) `)`)? " #
      OptParam<"q_norm_weight">.format # " " #
      OptParam<"k_norm_weight">.format # " " # OptParam<"positions">.format #
      " " # OptParam<"rope_table">.format # " " # Real<"scale", "scale">.format #
      " " # OptReal<"qk_norm_eps", "qk_norm_eps">.format # " " #
      OptReal<"qk_norm_offset", "qk_norm_offset">.format # " attr-dict `:` "
      "type($q) `,` type($k) `,` type($v) `,` type($k_cache) `,` "
      "type($v_cache) `->` type($output) `,` type($k_cache_out) `,` "
      "type($v_cache_out)";
  let hasVerifier = 1;
}

def Norm_ColumnStatsOp : Norm_Op<"column_stats", [Pure, Norm_KernelOp]> {
  let summary = "per-channel mean and biased variance over all rows";
  let description = [{
    The statistics kernel of training-mode batch normalization: for each
    hidden index, the mean and biased variance of the column, accumulated in
    f32 and returned as f32 vectors. A launch configuration's vector
    accesses move at most 16 bytes of `input`.

    ```mlir
    %mean, %var = norm.column_stats %x : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Norm_RowTensor:$input,
                       OptionalAttr<Norm_LaunchAttr>:$launch,
                       OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_ParamTensor:$mean, Norm_ParamTensor:$variance);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($mean) `,` "
                       "type($variance)";
  let hasVerifier = 1;
}

def Norm_FusedRowGradOp : Norm_Op<"fused_row_grad", [Pure,
    AttrSizedOperandSegments, AttrSizedResultSegments, Norm_KernelOp]> {
  let summary = "the gradients of a row norm, from its saved statistics";
  let description = [{
    The backward kernel of a `norm.fused_row` with statistic `rms`,
    `mean_var` or `l2`, over whole rows or groups, derived from the same
    operation: for
    `y = xhat * (weight + weight_offset) + bias`, `xhat = (v - mean) * rstd`
    and `g = grad_output * (weight + weight_offset)`,

    ```
    dv          = rstd * (g - mean(g) - xhat * mean(g * xhat))   mean_var
                = rstd * (g - xhat * mean(g * xhat))             rms
                = rstd * (g - xhat * sum(g * xhat))              l2
                  + residual_grad                                (optional)
    grad_input  = alpha * dv
    addend_grad = dv                                             (optional)
    ```

    - `input` is the `v` the forward normalized: its input, or with an
      addend the residual stream it stored (`residual_out`); `saved_rstd`
      and `saved_mean` (for `mean_var`) are its saved statistics, `rows x 1`
      f32. `grad_output` has the forward output's element type, the
      gradients `input`'s (`addend_grad` the addend's).
    - `residual_grad` is the gradient that reached the forward's
      `residual_out`: it adds to `dv`. `addend_grad` is there exactly when a
      DeepNorm `alpha` other than 1 makes the two input gradients differ.
    - `weight_grad_partials` and `bias_grad_partials` (optional, f32 rows of
      the hidden size) hold sums of `grad_output * xhat` and `grad_output`
      over disjoint sets of rows, one row per thread group of each CTA of the
      launch (`ceil(rows / rows_per_cta) x` the rows a CTA works on at
      once); `norm.column_sum` reduces them to the weight and bias
      gradients. Every sum has a fixed order: the same launch gives the
      same bits on every run, without atomics.
    - `groups > 1` (GroupNorm): each group of `hidden / groups` channels
      has its own statistics (`rows x groups`) and the means above are over
      the group; the weight and the partials are hidden-wide, each group's
      sums in its own channels. The launch's CTAs come in whole multiples
      of the groups' share, so that every thread group of the persistent
      grid only takes rows of one group (`norm::getBackwardGridMultiple`).
    - `groups > 1` with `per_head_weight`: the rows hold `groups` heads of
      `hidden / groups` that share one head's weight (its gradient partials
      are head-wide too) and have one saved statistic each (`rows x
      groups`): the backward of the per-head QK-Norm, the q and the k heads
      of a packed qkv one op each (row slices of the same tensors).

    ```mlir
    %dx, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x4096xbf16>)
        weight(%w : tensor<4096xbf16>) saved_rstd(%rstd : tensor<?x1xf32>)
        : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
          weight_grad_partials(tensor<?x4096xf32>)
    ```
  }];
  let arguments = (ins
      Norm_RowTensor:$input,
      Norm_RowTensor:$grad_output,
      Optional<Norm_RowTensor>:$residual_grad,
      Optional<Norm_ParamTensor>:$weight,
      Optional<Norm_F32RowTensor>:$saved_mean,
      Norm_F32RowTensor:$saved_rstd,
      Norm_StatisticAttr:$statistic,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_offset,
      DefaultValuedAttr<I64Attr, "1">:$groups,
      UnitAttr:$per_head_weight,
      OptionalAttr<Norm_LaunchAttr>:$launch,
      OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_RowTensor:$grad_input,
                      Optional<Norm_RowTensor>:$addend_grad,
                      Optional<Norm_F32RowTensor>:$weight_grad_partials,
                      Optional<Norm_F32RowTensor>:$bias_grad_partials);
  let assemblyFormat = [{
    $statistic $input `grad` `(` $grad_output `:` type($grad_output) `)`
    (`residual_grad` `(` $residual_grad^ `:` type($residual_grad) `)`)? }] #
    OptParam<"weight">.format # [{
    (`saved_mean` `(` $saved_mean^ `:` type($saved_mean) `)`)?
    `saved_rstd` `(` $saved_rstd `:` type($saved_rstd) `)` }] #
    OptReal<"alpha", "alpha">.format # " " #
    OptReal<"offset", "weight_offset">.format # [{
    attr-dict `:` type($input) `->` type($grad_input)
    (`addend_grad` `(` type($addend_grad)^ `)`)?
    (`weight_grad_partials` `(` type($weight_grad_partials)^ `)`)?
    (`bias_grad_partials` `(` type($bias_grad_partials)^ `)`)?
  }];
  let hasVerifier = 1;
}

def Norm_ColumnSumOp : Norm_Op<"column_sum", [Pure, Norm_KernelOp]> {
  let summary = "the f32 sum of each column, in the output's element type";
  let description = [{
    The second step of the weight and bias gradients of
    `norm.fused_row_grad`: sums its f32 partial rows column by column, in a
    fixed order (the same bits on every run), and rounds once to the
    parameter type. No rows sum to zeros.

    ```mlir
    %dw = norm.column_sum %partials : tensor<?x4096xf32> -> tensor<4096xbf16>
    ```
  }];
  let arguments = (ins Norm_F32RowTensor:$input,
                       OptionalAttr<Norm_LaunchAttr>:$launch,
                       OptionalAttr<SymbolRefAttr>:$kernel);
  let results = (outs Norm_ParamTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel-program ops (inside gpu.func)
//===----------------------------------------------------------------------===//

def Norm_RowAllReduceOp : Norm_Op<"row_allreduce", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "combine f32 values over the threads that share a row";
  let description = [{
    The threads of a CTA form consecutive groups of `group_size` threads
    (one group per row). Each result is the sum (`kind = add`, the default)
    or the maximum (`kind = max`, with `arith.maximumf` semantics) of the
    matching operand over the threads of the group, delivered to every
    thread of the group. All threads of the CTA must reach the op together
    (uniform control flow).

    `group_size` is a power of two up to 32, or a multiple of 32. The GPU
    lowering (`norm-lower-row-allreduce`) emits warp butterfly shuffles and,
    for groups wider than a warp, one shared-memory exchange; the host
    lowering (`norm-kernels-to-host`) combines over a loop of threads, in
    thread order.

    ```mlir
    %sum, %sumsq = norm.row_allreduce %a, %b {group_size = 256 : i64} : f32, f32
    %max = norm.row_allreduce %m {group_size = 4 : i64, kind = #norm.reduction<max>} : f32
    ```
  }];
  let arguments = (ins Variadic<F32>:$values, I64Attr:$group_size,
                   DefaultValuedAttr<Norm_ReductionKindAttr,
                                     "::mlir::norm::ReductionKind::add">:$kind);
  let results = (outs Variadic<F32>:$results);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Warp-level matrix ops and asynchronous copies (inside gpu.func)
//===----------------------------------------------------------------------===//

def Norm_MmaSyncOp : Norm_Op<"mma_sync"> {
  let summary = "one warp's 16x8x16 matrix multiply-accumulate (mma.sync)";
  let description = [{
    `D = A * B + C` with A 16x16, B 16x8 (k x n), C and D 16x8, A and B of
    bf16 or f16, C and D of f32: PTX's
    `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32`. The matrices are
    spread over the 32 lanes of a warp as PTX's fragments; with
    `lane = thread id % 32`, `g = lane / 4` and `t = lane % 4`, lane `lane`
    holds

    - A (`vector<8xT>`): element i at row `g + 8 * ((i / 2) % 2)`, column
      `2t + i % 2 + 8 * (i / 4)`;
    - B (`vector<4xT>`): element i at row (k) `2t + i % 2 + 8 * (i / 2)`,
      column (n) `g`;
    - C and D (`vector<4xf32>`): element i at row `g + 8 * (i / 2)`,
      column `2t + i % 2`.

    All 32 lanes of a warp must execute the op together (uniform control
    flow, like `norm.row_allreduce`). The GPU lowering is `nvvm.mma.sync`
    (sm_80 and later); the host lowering (`norm-kernels-to-host`) gathers the
    warp's fragments, multiplies in f32 and adds the products to C in
    increasing k order. The hardware's accumulation order is unspecified,
    so results may differ in the last bits.

    ```mlir
    %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
    ```
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$a, AnyVectorOfNonZeroRank:$b,
                   AnyVectorOfNonZeroRank:$c);
  let results = (outs AnyVectorOfNonZeroRank:$d);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($a) `,` type($b) "
                       "`,` type($c) `->` type($d)";
  let hasVerifier = 1;
}

def Norm_LdMatrixOp : Norm_Op<"ldmatrix"> {
  let summary = "one warp's load of 8x8 matrices from shared memory (ldmatrix)";
  let description = [{
    PTX's `ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16`: the warp
    loads `count` (1, 2 or 4) matrices of 8x8 16-bit elements (bf16 or f16)
    from workgroup memory. Each lane `l` gives, with `memref[indices]`, the
    address of one row of 8 contiguous elements (16 bytes, 16-byte aligned):
    lanes `8j` to `8j + 7` give rows 0 to 7 of matrix j. For `count` 1 and
    2 the addresses of lanes `8 * count` and above are ignored. The row's 8
    elements lie along the innermost dimension, whose stride is 1.

    A memref of an FP8 type (f8E4M3FN, f8E5M2) holds matrices of byte
    pairs: each 16-bit element is two bytes (the low one first), a row is
    16 of them, and lane `l` receives `4 * count` bytes, the two of each
    16-bit element it would receive in a row. `transpose` moves the pairs
    whole, so it does not transpose bytes: the kernels widen them to f16 in
    registers, in the order their mma fragments need.

    Lane `l` receives `2 * count` elements; elements `2j` and `2j + 1` come
    from matrix j: without `transpose` from row `l / 4`, columns
    `2 * (l % 4)` and `2 * (l % 4) + 1`; with `transpose` from rows
    `2 * (l % 4)` and `2 * (l % 4) + 1`, column `l / 4` (the fragment of the
    transposed matrix). These are the A and B fragments of `norm.mma_sync`:
    `count = 4` loads a 16x16 A tile, and B comes from a tile stored `[n][k]`
    without `transpose` or from one stored `[k][n]` with it.

    All 32 lanes of a warp must execute the op together (uniform control
    flow). The GPU lowering is `nvvm.ldmatrix`; the host lowering reads
    each lane's row from the buffer that stands for workgroup memory. The
    host does not check the alignment.

    ```mlir
    %a = norm.ldmatrix %tile[%row, %col] {count = 4 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<8xbf16>
    %v = norm.ldmatrix %tile[%row, %col] {count = 2 : i64, transpose} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$memref,
                   Variadic<Index>:$indices, I64Attr:$count,
                   UnitAttr:$transpose);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = "$memref `[` $indices `]` attr-dict `:` type($memref) "
                       "`->` type($result)";
  let hasVerifier = 1;
}

def Norm_AsyncCopyOp : Norm_Op<"async_copy", [AttrSizedOperandSegments]> {
  let summary = "copy 4, 8 or 16 bytes from global to shared memory (cp.async)";
  let description = [{
    Starts PTX's `cp.async` of `elements` contiguous elements (4, 8 or 16
    bytes) from `src[src_indices]` in global memory (the default address
    space) to `dst[dst_indices]` in workgroup memory. With `src_elements`
    (between 0 and `elements`) only the first `src_elements` are read and
    the rest are zero-filled (cp.async's src-size), so ragged tails need no
    branch. The elements lie along the innermost dimension of both memrefs,
    whose stride is 1; both addresses are aligned to the copy's size.

    The copy completes asynchronously: `norm.async_commit` closes a group of
    copies and `norm.async_wait` waits for groups; a barrier must follow the
    wait before other threads read the data. 16-byte copies bypass L1
    (`.cg`), smaller ones use `.ca`. The host lowering copies at once (the
    commit and wait are no-ops there), which is equivalent for kernels that
    wait and synchronize before they read.

    ```mlir
    norm.async_copy %k[%i], %tile[%r, %c], %valid {elements = 8 : i64} : memref<?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                   Variadic<Index>:$src_indices,
                   Arg<AnyMemRef, "", [MemWrite]>:$dst,
                   Variadic<Index>:$dst_indices,
                   Optional<Index>:$src_elements, I64Attr:$elements);
  let assemblyFormat = "$src `[` $src_indices `]` `,` $dst `[` $dst_indices `]` "
                       "(`,` $src_elements^)? attr-dict `:` type($src) `,` "
                       "type($dst)";
  let hasVerifier = 1;
}

def Norm_AsyncCopyRowsOp : Norm_Op<"async_copy_rows"> {
  let summary = "cp.async of one chunk from each of several rows, one add apart";
  let description = [{
    Starts `rows` copies of `elements` contiguous elements (4, 8 or 16
    bytes, as `norm.async_copy`): copy i reads
    `src[src_index + i * src_stride]` in global memory and writes
    `dst[dst_index + i * dst_stride]` in workgroup memory. Both memrefs are
    one-dimensional; every copy is whole (tiles whose rows are all in
    range; ragged ones take `norm.async_copy` with `src_elements`).

    On NVVM each source address after the first is the one before plus
    `src_stride`'s bytes, an `add.s64` in an inline asm that loop
    optimizations cannot rewrite: a key loop issues one add and one
    cp.async a row, where strength reduction would keep every row's address
    as an induction variable (two registers across the loop each) and plain
    index arithmetic recomputes it (an add, a shift and an add). The
    destination offsets, a constant apart, become the copies' immediates.
    The host lowering copies at once, as `norm.async_copy`'s does.

    ```mlir
    norm.async_copy_rows %k[%at] step %stride, %tile[%offset] step 1024 {elements = 8 : i64, rows = 8 : i64} : memref<?xbf16>, memref<16384xbf16, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src, Index:$src_index,
                   Index:$src_stride, Arg<AnyMemRef, "", [MemWrite]>:$dst,
                   Index:$dst_index, I64Attr:$dst_stride, I64Attr:$elements,
                   I64Attr:$rows);
  let assemblyFormat = "$src `[` $src_index `]` `step` $src_stride `,` $dst "
                       "`[` $dst_index `]` `step` $dst_stride attr-dict `:` "
                       "type($src) `,` type($dst)";
  let hasVerifier = 1;
}

def Norm_AsyncCommitOp : Norm_Op<"async_commit"> {
  let summary = "close the thread's group of async copies (cp.async.commit_group)";
  let description = [{
    The `norm.async_copy` ops this thread started since the last commit form
    one group, which `norm.async_wait` can wait for. A no-op on the host.

    ```mlir
    norm.async_commit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Norm_AsyncWaitOp : Norm_Op<"async_wait"> {
  let summary = "wait for the thread's async copies (cp.async.wait_group)";
  let description = [{
    Waits until at most `pending` of this thread's committed groups of
    `norm.async_copy` are still in flight (`pending = 0`: all of them).
    Only this thread's copies are covered: a `gpu.barrier` must follow
    before other threads read what they wrote. A no-op on the host.

    ```mlir
    norm.async_wait {pending = 1 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$pending);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Warpgroup matrix ops (sm_90a)
//===----------------------------------------------------------------------===//

def Norm_AsyncProxyFenceOp : Norm_Op<"async_proxy_fence"> {
  let summary = "make shared stores visible to wgmma and TMA (fence.proxy.async)";
  let description = [{
    PTX's `fence.proxy.async.shared::cta`: the thread's stores to workgroup
    memory before it (the generic proxy) are ordered before the reads of
    the asynchronous proxy (`norm.wgmma` operands, TMA stores) after it. A
    barrier must still follow before other threads' multiplies read the
    data. A no-op on the host.

    ```mlir
    norm.async_proxy_fence
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Norm_NamedBarrierOp : Norm_Op<"named_barrier"> {
  let summary = "a barrier of some warps of the CTA (bar.sync id, threads)";
  let description = [{
    PTX's `bar.sync id, threads`: the `threads` threads (whole warps) that
    execute it with the same `id` (1 to 15; 0 is the CTA's `gpu.barrier`)
    meet, and their shared-memory accesses before it are ordered before
    those after it; a warpgroup's threads meet this way inside its role's
    branch of a warp-specialized kernel. On the host a meeting point of the
    threads that take the branch.

    ```mlir
    norm.named_barrier {id = 1 : i64, threads = 128 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$id, I64Attr:$threads);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Norm_SetMaxRegistersOp : Norm_Op<"set_max_registers"> {
  let summary = "move registers between warpgroups (setmaxnreg)";
  let description = [{
    PTX's `setmaxnreg.{inc,dec}.sync.aligned.u32 count` (sm_90a): the warps
    of the executing warpgroup give registers back to the CTA's pool down to
    `count` a thread, or take them up to `count` (waiting until the pool has
    them). A warp-specialized kernel's producer decreases, its consumers
    increase, so that the consumers hold more than an even share. `count`
    is a multiple of 8 in [24, 256]; all warps of a warpgroup execute the
    same one. Code after it must fit `count` registers: each role's code
    sits in its own branch. A no-op on the host.

    ```mlir
    norm.set_max_registers {count = 240 : i64, increase = true}
    ```
  }];
  let arguments = (ins I64Attr:$count, BoolAttr:$increase);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Norm_MbarrierInitOp : Norm_Op<"mbarrier_init"> {
  let summary = "initialize a shared-memory barrier (mbarrier.init)";
  let description = [{
    PTX's `mbarrier.init.shared::cta.b64` of the barrier object
    `bars[index]` (8 bytes of workgroup memory) for `count` arrivals a
    phase, followed by `fence.mbarrier_init.release.cluster`, which makes
    the initialized object visible to the asynchronous proxy (bulk copies
    completing on it). One thread initializes; a `gpu.barrier` must follow
    before any thread uses the object. A no-op on the host, whose copies
    land at issue and whose waits therefore have nothing to wait for: the
    protocol (counts, transaction bytes, phases) is checked where the PTX
    runs (ptxsim), a wait that never completes trapping.

    ```mlir
    norm.mbarrier_init %bars[%c0] {count = 1 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemWrite]>:$bars, Index:$index,
                   I64Attr:$count);
  let assemblyFormat = "$bars `[` $index `]` attr-dict `:` type($bars)";
  let hasVerifier = 1;
}

def Norm_MbarrierArriveOp : Norm_Op<"mbarrier_arrive"> {
  let summary = "arrive on a shared-memory barrier (mbarrier.arrive)";
  let description = [{
    The thread arrives on `bars[index]` once (`mbarrier.arrive`); with
    `tx_bytes` it first raises the phase's expected transaction count by
    that many bytes (`mbarrier.arrive.expect_tx`), the bytes the bulk
    copies completing on the barrier will bring. The phase completes when
    all arrivals and all expected bytes are in. A no-op on the host.

    ```mlir
    norm.mbarrier_arrive %bars[%i], %bytes : memref<4xi64, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemWrite]>:$bars, Index:$index,
                   Optional<Index>:$tx_bytes);
  let assemblyFormat = "$bars `[` $index `]` (`,` $tx_bytes^)? attr-dict `:` "
                       "type($bars)";
  let hasVerifier = 1;
}

def Norm_MbarrierWaitOp : Norm_Op<"mbarrier_wait"> {
  let summary = "wait for a phase of a shared-memory barrier (try_wait.parity)";
  let description = [{
    Waits until the phase of `bars[index]` with parity `parity` (0 or 1)
    has completed: `mbarrier.try_wait.parity.shared::cta.b64` in a loop.
    The loop is bounded: after `max_tries` unsuccessful tries (each may
    suspend the thread for a while) the kernel traps, so that a wrong
    transaction count or a missing arrival fails the launch instead of
    hanging it. The memory the phase's copies wrote is visible after it.
    A no-op on the host.

    ```mlir
    norm.mbarrier_wait %bars[%i], %parity : memref<4xi64, #gpu.address_space<workgroup>>
    ```
  }];
  // A wait orders memory (an acquire of what the phase's copies wrote): a
  // write, so that it is never dead.
  let arguments = (ins Arg<AnyMemRef, "", [MemRead, MemWrite]>:$bars,
                   Index:$index, Index:$parity,
                   DefaultValuedAttr<I64Attr, "4194304">:$max_tries);
  let assemblyFormat = "$bars `[` $index `]` `,` $parity attr-dict `:` "
                       "type($bars)";
  let hasVerifier = 1;
}

def Norm_BulkCopyOp : Norm_Op<"bulk_copy"> {
  let summary = "asynchronous bulk copy to shared memory (cp.async.bulk)";
  let description = [{
    PTX's `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`:
    copies `bytes` contiguous bytes (a multiple of 16) from `src[src_index]`
    in global memory to `dst[dst_index]` in workgroup memory (both 16-byte
    aligned), asynchronously; the copy completes `bytes` transaction bytes
    on the barrier `bars[bar_index]`, whose phase must expect them
    (`norm.mbarrier_arrive` with `tx_bytes`). Read the data after
    `norm.mbarrier_wait`. Issued by one thread. The host copies at issue.

    ```mlir
    norm.bulk_copy %k[%at], %tile[%row], %bars[%c0] {bytes = 256 : i64} : memref<?xbf16>, memref<8192xbf16, #gpu.address_space<workgroup>>, memref<4xi64, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src, Index:$src_index,
                   Arg<AnyMemRef, "", [MemWrite]>:$dst, Index:$dst_index,
                   Arg<AnyMemRef, "", [MemWrite]>:$bars, Index:$bar_index,
                   I64Attr:$bytes);
  let assemblyFormat = "$src `[` $src_index `]` `,` $dst `[` $dst_index `]` `,` "
                       "$bars `[` $bar_index `]` attr-dict `:` type($src) `,` "
                       "type($dst) `,` type($bars)";
  let hasVerifier = 1;
}

def Norm_TmaLoadOp : Norm_Op<"tma_load"> {
  let summary = "TMA load of a 2-D box into shared memory (cp.async.bulk.tensor)";
  let description = [{
    PTX's `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`:
    copies the box of `box_rows` x `box_columns` elements whose first
    element is (`row`, `column`) of a row-major view to `dst[dst_index]` in
    workgroup memory, rows of the box one after the other, each row's
    16-byte chunks swizzled by `swizzle` bytes (0, 32, 64 or 128; the XOR of
    `#norm.shared_matrix` on the byte offset from the box's start, which is
    aligned to the swizzle's atom). Elements outside the view (coordinates
    past its rows or columns) arrive as zeros. The copy completes the box's
    bytes, out-of-bounds ones included, on `bars[bar_index]`. Issued by one
    thread.

    The GPU reads the view through `map`, a CUtensorMap of 128 bytes that
    the host encoded for it (`runtime/TensorMap.h`; its box and swizzle
    must be these); `src` with `rows`, `columns` and `row_stride`
    (elements) is the view itself, which the host execution reads (the GPU
    ignores them).

    ```mlir
    norm.tma_load %kmap, %k[%tokens, %width, %stride] at [%row, %col], %tile[%at], %bars[%c0] {box_rows = 64 : i64, box_columns = 64 : i64, swizzle = 128 : i64} : memref<16xi64>, memref<?xbf16>, memref<8192xbf16, #gpu.address_space<workgroup>>, memref<4xi64, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$map,
                   Arg<AnyMemRef, "", [MemRead]>:$src, Index:$rows,
                   Index:$columns, Index:$row_stride, Index:$row,
                   Index:$column, Arg<AnyMemRef, "", [MemWrite]>:$dst,
                   Index:$dst_index, Arg<AnyMemRef, "", [MemWrite]>:$bars,
                   Index:$bar_index, I64Attr:$box_rows, I64Attr:$box_columns,
                   I64Attr:$swizzle);
  let assemblyFormat = "$map `,` $src `[` $rows `,` $columns `,` $row_stride "
                       "`]` `at` ` ` `[` $row `,` $column `]` `,` $dst `[` "
                       "$dst_index `]` `,` $bars `[` $bar_index `]` attr-dict "
                       "`:` type($map) `,` type($src) `,` type($dst) `,` "
                       "type($bars)";
  let hasVerifier = 1;
}

/// The results are the operands' types (ops that pass values through).
def Norm_PassThroughTypes : DeclareOpInterfaceMethods<InferTypeOpInterface>;

def Norm_WgmmaOp : Norm_Op<"wgmma"> {
  let summary = "a warpgroup's asynchronous 64xNx16 matrix multiply (wgmma)";
  let description = [{
    `D = A * B + C` (or `A * B` with `accumulate = false`) for one k16 step
    of a warpgroup (4 consecutive warps, 128 threads, the first warp's index
    a multiple of 4): PTX's `wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T`
    with T bf16 or f16 and N = 8 to 256 in steps of 8, given by C's type,
    `vector<(N/2)xf32>`.

    - B (16xN, k x n) lies in workgroup memory: `b` is a one-dimensional
      memref of T, `b_index` the element at which the operand starts, and
      `b_layout` places element (n, k) (see `#norm.shared_matrix`).
    - A (64x16) lies in workgroup memory the same way (`a` a memref, with
      `a_index` and `a_layout`), or in registers: `a` is the
      `vector<8xT>` of a `norm.mma_sync` A fragment, warp w of the
      warpgroup holding rows 16w to 16w + 15.
    - C and D: with `lane = thread id % 32`, `w` = the warp's index in the
      warpgroup, element i of a thread's vector is at row
      `16w + lane / 4 + 8 * ((i / 2) % 2)`, column
      `8 * (i / 4) + 2 * (lane % 4) + i % 2`.

    The multiply runs asynchronously: the values it reads and writes (C, D
    and a register A) pass through `norm.wgmma_fence` before and
    `norm.wgmma_wait` after it, which keep every other access to those
    registers out of its way; `norm.wgmma_commit` closes a group of them.
    Workgroup memory that generic stores wrote needs a
    `fence.proxy.async` before the multiply reads it. All 128 threads
    execute the op together, with the same memrefs and indices.

    The GPU lowering is an inline `wgmma.mma_async` (the register-A form
    has no NVVM op) with descriptors built from the shared address and the
    layouts; the host lowering (`norm-kernels-to-host`) computes each
    warp's 16 rows at once, reading A and B through the layouts, summing
    the products in f32 in increasing k order.

    ```mlir
    %d = norm.wgmma %q[%qi], %k[%ki], %c {a_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>, b_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>} : memref<8192xbf16, #gpu.address_space<workgroup>>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<64xf32> -> vector<64xf32>
    %o = norm.wgmma %p, %v[%vi], %acc {b_layout = #norm.shared_matrix<swizzle = 128, lbo = 8192, sbo = 1024, mn_major = true>} : vector<8xbf16>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<64xf32> -> vector<64xf32>
    ```
  }];
  let arguments = (ins AnyType:$a, Optional<Index>:$a_index,
                   Arg<AnyMemRef, "", [MemRead]>:$b, Index:$b_index,
                   AnyVectorOfNonZeroRank:$c,
                   OptionalAttr<Norm_SharedMatrixAttr>:$a_layout,
                   Norm_SharedMatrixAttr:$b_layout,
                   DefaultValuedAttr<BoolAttr, "true">:$accumulate);
  let results = (outs AnyVectorOfNonZeroRank:$d);
  let assemblyFormat = "$a (`[` $a_index^ `]`)? `,` $b `[` $b_index `]` `,` "
                       "$c attr-dict `:` type($a) `,` type($b) `,` type($c) "
                       "`->` type($d)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// N, the columns of B, C and D.
    int64_t getN();
  }];
}

def Norm_WgmmaFenceOp : Norm_Op<"wgmma_fence", [Norm_PassThroughTypes]> {
  let summary = "order register accesses before warpgroup multiplies (wgmma.fence)";
  let description = [{
    PTX's `wgmma.fence.sync.aligned`: the registers the following
    `norm.wgmma` ops read (accumulators, a register A) were written before
    it. The values pass through and come out as the results, which those
    ops take, so that no write to them moves after the fence. All threads
    of the warpgroup execute it together; the identity on the host.

    ```mlir
    %acc1, %p1 = norm.wgmma_fence %acc, %p : vector<64xf32>, vector<8xbf16>
    ```
  }];
  let arguments = (ins Variadic<AnyVectorOfNonZeroRank>:$values);
  let results = (outs Variadic<AnyVectorOfNonZeroRank>:$results);
  let assemblyFormat = "$values attr-dict (`:` type($values)^)?";
  let hasVerifier = 1;
}

def Norm_WgmmaCommitOp : Norm_Op<"wgmma_commit"> {
  let summary = "close a group of warpgroup multiplies (wgmma.commit_group)";
  let description = [{
    The `norm.wgmma` ops the warpgroup issued since the last commit form
    one group, which `norm.wgmma_wait` can wait for. A no-op on the host.

    ```mlir
    norm.wgmma_commit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Norm_WgmmaWaitOp : Norm_Op<"wgmma_wait", [Norm_PassThroughTypes]> {
  let summary = "wait for warpgroup multiplies (wgmma.wait_group)";
  let description = [{
    PTX's `wgmma.wait_group.sync.aligned`: waits until at most `pending` of
    the warpgroup's committed groups of `norm.wgmma` are in flight. The
    values the finished multiplies wrote or read (their results, a register
    A) pass through and come out as the results, which are the ones to use
    after it: nothing reads or overwrites those registers before the wait.
    The identity on the host, where the multiplies finish at issue.

    ```mlir
    %s, %o = norm.wgmma_wait %s0, %o0 {pending = 0 : i64} : vector<32xf32>, vector<64xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyVectorOfNonZeroRank>:$values,
                   I64Attr:$pending);
  let results = (outs Variadic<AnyVectorOfNonZeroRank>:$results);
  let assemblyFormat = "$values attr-dict (`:` type($values)^)?";
  let hasVerifier = 1;
}

def Norm_OpaqueIndexOp : Norm_Op<"opaque_index", [Pure]> {
  let summary = "an index that loop optimizations may not look through";
  let description = [{
    Returns `value`. On NVVM an empty inline asm (`mov.b64`), so that LLVM's
    loop strength reduction cannot rewrite what depends on it into
    induction variables of its own: an attention kernel's async copies, one
    64-bit add apart, would otherwise each keep a 64-bit induction variable
    across the key loop. The identity on the host.

    ```mlir
    %hidden = norm.opaque_index %row
    ```
  }];
  let arguments = (ins Index:$value);
  let results = (outs Index:$result);
  let assemblyFormat = "$value attr-dict";
}

def Norm_GridDependencyWaitOp : Norm_Op<"grid_dependency_wait"> {
  let summary = "wait for the grid before this one (griddepcontrol.wait)";
  let description = [{
    Programmatic dependent launch (sm_90 on): waits until the grid this one
    was launched after (with programmatic stream serialization) has
    completed and its memory operations are visible; returns at once for a
    launch without it. Kernels of a target with `pdl` issue it after their
    independent prologue (weights and parameters, which no grid before
    them writes) and before their first read of a row. Lowered with a
    memory clobber, so that no access moves across it; a no-op on the host,
    which runs grids one after another.

    ```mlir
    norm.grid_dependency_wait
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Norm_LaunchDependentsOp : Norm_Op<"launch_dependents"> {
  let summary = "let the next grid start (griddepcontrol.launch_dependents)";
  let description = [{
    Programmatic dependent launch: once every CTA of this grid has issued
    it (or finished), the grid launched after this one may start its
    prologue; that grid's `norm.grid_dependency_wait` still waits for this
    one to complete. A no-op on the host.

    ```mlir
    norm.launch_dependents
    ```
  }];
  let assemblyFormat = "attr-dict";
}

#endif // NORM_OPS_TD
