"""norm_opt: libnormjit's fused normalization kernels for PyTorch.

    import norm_opt
    y = norm_opt.rms_norm(x, weight, eps=1e-6)            # like F.rms_norm
    y = norm_opt.layer_norm(x, weight, bias, eps=1e-5)    # like F.layer_norm
    y, h = norm_opt.fused_add_rms_norm(x, residual, weight, eps=1e-6)
    q, k = norm_opt.qk_norm(qkv, 32, 8, q_weight, k_weight, eps=1e-6)
    o = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu)  # varlen
    o = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu, rope="neox",
                           positions=pos, cos_sin_cache=cos_sin_cache)
    o = norm_opt.attention_decode(q, k, v, k_cache, v_cache, lengths)

Each normalizes over the last dimension with a kernel libnormjit built for
that hidden size and autotuned on this GPU at its first call; launches go to
torch.cuda.current_stream(). Errors of libnormjit raise NormJitError with
its status and message. libnormjit.so is found through $NORMJIT_LIBRARY,
beside this package, or by the dynamic loader (norm_opt.configure(library=)
names another). `import norm_opt` needs no torch: the C API layer
(norm_opt.capi: Context, Kernel, OpDesc) works on raw device addresses.

Training (libnormjit API 6): the row norms and qk_norm are differentiable.
When grad is enabled and an input requires grad (or under torch.compile)
they run as torch.library ops, torch.ops.norm_opt.row_norm and qk_norm,
whose forward kernels also save the f32 statistics (rstd, and the mean of
LayerNorms) that their backward ops (row_norm_backward, qk_norm_backward:
libnormjit's backward kernels, derived by normjit_op_desc_get_backward, with
the weight and bias gradients summed in a fixed order, no atomics) read;
registered with autograd, so torch.compile(fullgraph=True) traces forward
and backward as these ops. out=, residual_out=, q_out= and k_out= are not
differentiable (refused when autograd needs them); without grad the norms
run one kernel that saves nothing. Attention and decode attention stay
forward only. norm_opt.nn has drop-in modules: RMSNorm, LayerNorm (torch's
constructor arguments and parameter names: their state dicts load) and
FusedAddRMSNorm.
"""

from norm_opt import _capi as capi
from norm_opt._capi import LaunchConfig, NormJitError, OpDesc, load_library

__all__ = ["rms_norm", "layer_norm", "fused_add_rms_norm",
           "fused_add_layer_norm", "rms_norm_quant", "layer_norm_quant",
           "qk_norm", "k_prepare", "k_prepare_cache", "attention",
           "attention_decode",
           "configure", "get_context", "NormJitError", "LaunchConfig", "OpDesc", "capi",
           "load_library"]


def _torch_layer():
    # torch is imported at the first tensor call, not at `import norm_opt`.
    from norm_opt import _torch
    return _torch


def rms_norm(input, weight=None, eps=None, *, out=None, weight_offset=0.0):
    """input / sqrt(mean(input^2) + eps) * (weight + weight_offset) over the
    last dimension, as F.rms_norm(input, (hidden,), weight, eps); eps None
    is torch.finfo(input.dtype).eps, as there; weight_offset 1.0 is Gemma's
    (1 + w). Accumulates in float32. Differentiable (see Training above)."""
    return _torch_layer().rms_norm(input, weight, eps, out=out,
                                   weight_offset=weight_offset)


def layer_norm(input, weight=None, bias=None, eps=1e-5, *, out=None):
    """(input - mean) / sqrt(var + eps) * weight + bias over the last
    dimension, as F.layer_norm(input, (hidden,), weight, bias, eps).
    Differentiable."""
    return _torch_layer().layer_norm(input, weight, bias, eps, out=out)


def fused_add_rms_norm(x, residual, weight=None, eps=None, *, alpha=1.0,
                       out=None, residual_out=None, weight_offset=0.0):
    """One kernel for h = alpha * residual + x (rounded to residual's dtype,
    as the unfused graph rounds it) and y = rms_norm(h, weight, eps,
    weight_offset) (in x's dtype). Returns (y, h): h is the new residual
    stream. alpha != 1 is DeepNorm's scaled residual. Differentiable in x,
    residual and weight (through both y and h). In place as vLLM's
    fused_add_rms_norm with out=x, residual_out=residual (libnormjit API 7:
    a kernel built to write over exactly those rows; without grad)."""
    return _torch_layer().fused_add_rms_norm(
        x, residual, weight, eps, alpha=alpha, out=out,
        residual_out=residual_out, weight_offset=weight_offset)


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5, *,
                         alpha=1.0, out=None, residual_out=None):
    """fused_add_rms_norm with a LayerNorm: h = alpha * residual + x and
    y = layer_norm(h, weight, bias, eps), one kernel. Returns (y, h).
    Differentiable."""
    return _torch_layer().fused_add_layer_norm(
        x, residual, weight, bias, eps, alpha=alpha, out=out,
        residual_out=residual_out)


def rms_norm_quant(input, weight=None, eps=None, *, scale=None, scale_ub=None,
                   residual=None, dtype=None, out=None, weight_offset=0.0):
    """RMSNorm with an FP8 output (dtype torch.float8_e4m3fn, the default, or
    float8_e5m2) in one kernel (libnormjit API 8). With `scale` (a float32
    scalar tensor) q = fp8(y / scale) as vLLM's rms_norm_static_fp8_quant;
    without it per token, as rms_norm_dynamic_per_token_quant: each row's
    scale max(min(amax(|y|), scale_ub) / fp8_max, 1 / (fp8_max * 512)).
    Rounds to nearest even and saturates. With `residual`, y normalizes
    input + residual, as fused_add_rms_norm. Returns (q, scale or scales
    [..., 1] float32[, the new residual]). Inference only (no autograd)."""
    return _torch_layer().rms_norm_quant(
        input, weight, eps, scale=scale, scale_ub=scale_ub, residual=residual,
        dtype=dtype, out=out, weight_offset=weight_offset)


def layer_norm_quant(input, weight=None, bias=None, eps=1e-5, *, scale=None,
                     scale_ub=None, residual=None, dtype=None, out=None):
    """layer_norm with an FP8 output in one kernel: as rms_norm_quant."""
    return _torch_layer().layer_norm_quant(
        input, weight, bias, eps, scale=scale, scale_ub=scale_ub,
        residual=residual, dtype=dtype, out=out)


def qk_norm(qkv, num_q_heads, num_kv_heads, q_weight=None, k_weight=None,
            eps=1e-6, *, l2=False, layer_norm=False, weight_offset=0.0,
            q_out=None, k_out=None, rope=None, rotary_dim=None,
            rope_theta=10000.0, positions=None, cos_sin_cache=None,
            rope_first=False):
    """The QK-Norm prologue: from a packed projection qkv[..., (Hq + 2 Hkv) *
    D] (rows may be strided), q[..., Hq, D] and k[..., Hkv, D], each head
    RMS-normalized (L2 with l2=True, LayerNorm without bias with
    layer_norm=True) and scaled by its weight plus weight_offset (1.0:
    Gemma 3's 1 + w): q_weight and k_weight are [D] each, or a row per head
    (Command R+: [Hq, D] and [Hkv, D], or flat), forward only for now.
    With rope='neox' or 'gptj' the normalized heads are then rotated
    (rotary_dim, rope_theta, positions and cos_sin_cache as attention's;
    row t at position t without positions), or rotated first with
    rope_first (Llama 4): QK-Norm and RoPE in one launch, forward only for
    now. Differentiable in qkv (its q and k columns; v's get zero) and
    weights of [D]."""
    return _torch_layer().qk_norm(qkv, num_q_heads, num_kv_heads, q_weight,
                                  k_weight, eps, l2=l2, layer_norm=layer_norm,
                                  weight_offset=weight_offset, q_out=q_out,
                                  k_out=k_out, rope=rope,
                                  rotary_dim=rotary_dim, rope_theta=rope_theta,
                                  positions=positions,
                                  cos_sin_cache=cos_sin_cache,
                                  rope_first=rope_first)


def k_prepare(k, *, v=None, cu_seqlens=None, qk_norm=None, k_weight=None,
              eps=1e-6, weight_offset=0.0, head_dim=None, rope=None,
              rotary_dim=None, rope_theta=10000.0, positions=None,
              cos_sin_cache=None, rope_first=False):
    """The key side of QK-Norm attention, once per token and kv head (API
    10): each head of k ([tokens, Hkv, D] or [tokens, Hkv * D] with
    head_dim) normalized by qk_norm ('rms', 'l2', 'layer'; None: rope alone)
    with k_weight ([D], or [Hkv, D] per head) plus weight_offset and eps,
    rounded to k's dtype, then rotated by rope as attention rotates its keys
    (rotary_dim, rope_theta, positions, cos_sin_cache, rope_first as
    there; without positions a token turns by its index within its sequence
    of cu_seqlens, None: one sequence) and rounded again: new keys shaped
    like k. With v, also a contiguous copy of v ([tokens, Hkv, D] like k):
    returns (k_out, v_out). QK-Norm + RoPE of k in one launch for an
    attention that reads the keys as they are; norm_opt.attention runs it
    itself before its kernel. Registered as torch.ops.norm_opt.k_prepare
    with a shape function; forward only."""
    return _torch_layer().k_prepare(
        k, v=v, cu_seqlens=cu_seqlens, qk_norm=qk_norm, k_weight=k_weight,
        eps=eps, weight_offset=weight_offset, head_dim=head_dim, rope=rope,
        rotary_dim=rotary_dim, rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first)


def k_prepare_cache(k, v, k_cache, v_cache, cache_seqlens, cu_seqlens=None, *,
                    qk_norm=None, k_weight=None, eps=1e-6, weight_offset=0.0,
                    head_dim=None, rope=None, rotary_dim=None,
                    rope_theta=10000.0, positions=None, cos_sin_cache=None,
                    rope_first=False, block_table=None, block_size=None,
                    k_scale=None, v_scale=None, kv_indptr=None):
    """k_prepare into KV caches (API 11), in one launch: the normalized,
    rotated keys and v go to k_cache and v_cache ([batch, capacity, Hkv, D]
    or [batch * capacity, Hkv * D], written in place, like
    attention_decode's), new token i of sequence b (of cu_seqlens; None: one
    token a sequence) at row cache_seqlens[b] + i of sequence b's capacity
    rows, rotated at that position without positions; rows past the
    capacity are dropped. The QK-Norm + RoPE + cache write that serving
    stacks keep as separate kernels; without qk_norm and rope a plain cache
    write (vLLM's reshape_and_cache). Paged and FP8 caches (API 12) as in
    attention_decode: block_table, block_size, k_scale, v_scale, kv_indptr
    (API 13). Registered as
    torch.ops.norm_opt.k_prepare_cache (the caches mutated); returns None;
    forward only."""
    return _torch_layer().k_prepare_cache(
        k, v, k_cache, v_cache, cache_seqlens, cu_seqlens, qk_norm=qk_norm,
        k_weight=k_weight, eps=eps, weight_offset=weight_offset,
        head_dim=head_dim, rope=rope, rotary_dim=rotary_dim,
        rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first,
        block_table=block_table, block_size=block_size, k_scale=k_scale,
        v_scale=v_scale, kv_indptr=kv_indptr)


def attention(q, k, v, *, causal=False, scale=None, cu_seqlens=None,
              qk_norm=None, q_norm_weight=None, k_norm_weight=None,
              qk_norm_eps=1e-6, qk_norm_offset=0.0, return_lse=False,
              head_dim=None, rope=None, rotary_dim=None, rope_theta=10000.0,
              positions=None, cos_sin_cache=None, rope_first=False):
    """softmax(scale * q k^T) v per head, as F.scaled_dot_product_attention,
    on token-major variable-length batches (FlashAttention-2's varlen
    layout), forward only.

    q is [tokens, Hq, D] or [tokens, Hq * D] (then head_dim=D is needed,
    unless the norm weights give it), k and v [tokens, Hkv, D] or
    [tokens, Hkv * D], Hkv dividing Hq (grouped-query attention), all bf16 or
    all f16; the heads of a token sit side by side in its row, and rows may
    be strided (q, k and v may be column slices of one packed qkv
    projection). D is a multiple of 16 up to 256. Sequence b is tokens
    cu_seqlens[b]:cu_seqlens[b + 1] (int32, batch + 1 offsets from 0 to
    tokens, non-decreasing: the kernel reads them as given); None is one
    sequence of every token (a host-to-device copy, so pass cu_seqlens
    inside CUDA graphs). causal masks keys after the query within its
    sequence; scale None is 1 / sqrt(D). qk_norm ('rms', 'l2' or 'layer',
    LayerNorm without bias) normalizes each head of q and k first, scaled by
    q_norm_weight / k_norm_weight ([D] each, or a row per head: [Hq, D] and
    [Hkv, D], Command R+) plus qk_norm_offset (1.0: Gemma's 1 + w), with
    qk_norm_eps. rope ('neox': pairs (d, d + rotary_dim / 2), Llama, Qwen;
    'gptj': pairs (2i, 2i + 1)) then rotates the first rotary_dim elements
    (None: all D) of each head of q and k, pair i by pos * rope_theta^(-2i /
    rotary_dim), pos the token's index within its sequence (libnormjit
    refuses, with NormJitError, odd rotary dims); rope_first=True rotates
    first and normalizes the rotated heads (Llama 4). positions (int32
    [tokens], one per token of q, on q's device, copied if not
    contiguous; int64 is refused: convert it with .to(torch.int32), as a
    range check would need a device sync)
    replaces pos by the token's entry, e.g. for chunked prefill; it moves
    the rotations only, the causal mask stays by index within the
    sequence. cos_sin_cache (float32 [max_position, rotary_dim], row p
    holding cos(p f_i) at column i and sin(p f_i) at rotary_dim / 2 + i:
    FlashInfer's and vLLM's cos_sin_cache, so any frequency scaling, Llama
    3, YaRN, NTK, is the table's) gives the angles instead of rope_theta,
    which must then stay at its default; its last dimension must be
    contiguous, its row stride a multiple of 4 floats and its storage
    16-byte aligned (it is never copied). A position outside the table
    turns its token's rows into NaN. Both need rope. Returns the
    output, shaped like q, and with return_lse=True also the float32
    log-sum-exp [tokens, Hq] of the scaled scores. Pointers and row strides
    must be 16-byte aligned (there is no scalar fallback). Registered as
    torch.ops.norm_opt.attention with a shape function, so torch.compile
    keeps it as one op; there is no backward yet: inputs that require grad
    (with grad enabled) raise. With qk_norm or rope the keys are first
    normalized and rotated once (a K-prepare launch into a temporary
    [tokens, Hkv * D] buffer, see k_prepare); the attention kernel then
    normalizes and rotates q alone."""
    return _torch_layer().attention(
        q, k, v, causal=causal, scale=scale, cu_seqlens=cu_seqlens,
        qk_norm=qk_norm, q_norm_weight=q_norm_weight,
        k_norm_weight=k_norm_weight, qk_norm_eps=qk_norm_eps,
        qk_norm_offset=qk_norm_offset, return_lse=return_lse,
        head_dim=head_dim, rope=rope, rotary_dim=rotary_dim,
        rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first)



def attention_decode(q, k, v, k_cache, v_cache, cache_seqlens, cu_seqlens=None,
                     *, scale=None, qk_norm=None, q_norm_weight=None,
                     k_norm_weight=None, qk_norm_eps=1e-6, qk_norm_offset=0.0,
                     head_dim=None, rope=None, rotary_dim=None,
                     rope_theta=10000.0, positions=None, cos_sin_cache=None,
                     rope_first=False, block_table=None, block_size=None,
                     k_scale=None, v_scale=None, kv_indptr=None):
    """One decode step of attention over a KV cache, forward only, in one
    kernel: q and k of the new tokens are normalized (qk_norm,
    q_norm_weight, k_norm_weight, qk_norm_eps, qk_norm_offset) and rotated
    (rope, rotary_dim, rope_theta, positions, cos_sin_cache, rope_first) as
    in norm_opt.attention, each new token by its cache position
    cache_seqlens[b] + i, or by its entry of positions (int32 [tokens]) where
    given (the cache rows written and the keys seen stay by cache
    position), with the angles of cos_sin_cache where given; k and v are
    appended to k_cache and v_cache IN PLACE (token i of sequence b at
    position cache_seqlens[b] + i; positions past the capacity are
    dropped), and each new token attends to its sequence's cache up to and
    including its own position. q, k, v as in norm_opt.attention
    ([tokens, heads, D] or [tokens, heads * D] with head_dim=); k_cache and
    v_cache [batch, capacity, Hkv, D] or [batch * capacity, Hkv * D], the
    dtype of q, with one row stride (never copied); cache_seqlens int32
    [batch], the cache lengths before this step (not updated: add the new
    tokens yourself); cu_seqlens int32 [batch + 1] offsets of the new tokens,
    None: one new token per sequence (created on the device at each call:
    pass it inside CUDA graphs). Paged caches (API 12): with block_table
    (int32 [batch, max_blocks], vLLM's block_tables) the caches are pages
    of block_size rows, [num_blocks, block_size, Hkv, D] (block_size from
    it) or [num_blocks * block_size, Hkv * D] with block_size= (a power of
    two to 256; SGLang's 1); position p of sequence b lies on page
    block_table[b, p // block_size]; an unset entry (-1) or one past the
    pages is never written. FlashInfer's page tables (API 13): with
    kv_indptr (int32 [batch + 1]) block_table is its kv_indices (int32
    [pages], any length): sequence b's pages are block_table[kv_indptr[b]:
    kv_indptr[b + 1]], its capacity their count x block_size (positions past
    it are dropped); cache_seqlens stays the lengths before the step
    (norm_opt.cache_seqlens_from_last_page_len converts FlashInfer's
    kv_last_page_len, which counts the new tokens). FP8 caches (API 12): with k_scale and v_scale
    (float32, one or one per kv head: vLLM's) the caches hold e4m3
    (float8_e4m3fn, or its bytes as uint8): x is stored as e4m3(x /
    scale), rounded to nearest even and saturated (x times the f32
    reciprocal), and every key and value attended to, the new tokens'
    included, is e4m3 * scale. Returns the output, shaped like q.
    libnormjit splits the keys over several CTAs with a workspace of its
    own per stream, allocated at the first call on a stream that needs it
    (so make one call before capturing a CUDA graph). Registered as
    torch.ops.norm_opt.attention_decode, its schema marking k_cache and
    v_cache as written (Tensor(a!), Tensor(b!)), with a shape function, so
    torch.compile (fullgraph=True included) keeps it as one op and keeps
    the cache writes; forward only, as attention."""
    return _torch_layer().attention_decode(
        q, k, v, k_cache, v_cache, cache_seqlens, cu_seqlens, scale=scale,
        qk_norm=qk_norm, q_norm_weight=q_norm_weight,
        k_norm_weight=k_norm_weight, qk_norm_eps=qk_norm_eps,
        qk_norm_offset=qk_norm_offset, head_dim=head_dim, rope=rope,
        rotary_dim=rotary_dim, rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first,
        block_table=block_table, block_size=block_size, k_scale=k_scale,
        v_scale=v_scale, kv_indptr=kv_indptr)


def cache_seqlens_from_last_page_len(kv_indptr, kv_last_page_len, block_size,
                                     cu_seqlens=None):
    """The cache lengths before a decode step (attention_decode's
    cache_seqlens) from FlashInfer's ragged page table, which holds the new
    tokens already: (pages - 1) x block_size + kv_last_page_len - the new
    tokens of each sequence (of cu_seqlens; None: one each), at least 0;
    int32 [batch], on the tables' device (a few small torch ops: compute it
    once per step, outside the layers)."""
    return _torch_layer().cache_seqlens_from_last_page_len(
        kv_indptr, kv_last_page_len, block_size, cu_seqlens)


from norm_opt._registry import configure, get_context  # noqa: E402
