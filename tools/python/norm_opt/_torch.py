"""libnormjit kernels on torch tensors.

One libnormjit context per CUDA device (sharing the device's primary context
with PyTorch), kernels cached per operation description; launches go to
torch.cuda.current_stream(). Rows may be strided where the C API allows it:
the last dimension must be contiguous and the leading dimensions must
collapse into one row stride; other layouts are copied to contiguous rows.

A kernel is built (compiled, autotuned, loaded) at the first call of each
operation: make that call before capturing a CUDA graph.
"""

from typing import Dict, NamedTuple, Optional, Tuple

import torch

from norm_opt import _capi
from norm_opt._capi import Buffer, LaunchConfig, OpDesc
from norm_opt._registry import get_kernel

_DTYPES = {torch.float32: _capi.F32, torch.float16: _capi.F16,
           torch.bfloat16: _capi.BF16}
# FP8 outputs (API 8), where this torch has the dtypes.
_FP8_DTYPES = {getattr(torch, name): dtype for name, dtype in
               (("float8_e4m3fn", _capi.F8E4M3FN),
                ("float8_e5m2", _capi.F8E5M2)) if hasattr(torch, name)}

# An FP8 KV cache's storage (API 12): e4m3, or its bytes (vLLM's uint8).
_FP8_CACHE_DTYPES = {torch.uint8} | (
    {torch.float8_e4m3fn} if hasattr(torch, "float8_e4m3fn") else set())

#===------------------------------------------------------------------------===#
# Tensors to buffers
#===------------------------------------------------------------------------===#


def _dtype(tensor: torch.Tensor, name: str) -> int:
    dtype = _DTYPES.get(tensor.dtype)
    if dtype is None:
        raise TypeError(f"{name}: dtype {tensor.dtype} is not supported "
                        "(float32, float16, bfloat16)")
    return dtype


def _row_stride(tensor: torch.Tensor) -> Optional[int]:
    """The stride between rows when the leading dimensions collapse into one
    (the last is contiguous), else None."""
    if tensor.dim() == 0 or (tensor.size(-1) > 1 and tensor.stride(-1) != 1):
        return None
    if tensor.dim() == 1:
        return tensor.size(-1)
    stride = tensor.stride(-2)
    expected = stride
    for dim in range(tensor.dim() - 2, -1, -1):
        if tensor.size(dim) != 1 and tensor.stride(dim) != expected:
            return None
        expected *= tensor.size(dim)
    return stride


def _rows(tensor: torch.Tensor, cols: int, name: str) -> Tuple[torch.Tensor,
                                                               int, int]:
    """(tensor, rows, row stride) of a [..., cols] tensor, copied to
    contiguous rows when its layout has no single row stride."""
    if tensor.dim() == 0 or tensor.size(-1) != cols:
        raise ValueError(f"{name}: expected a last dimension of {cols}, got "
                         f"shape {tuple(tensor.shape)}")
    stride = _row_stride(tensor)
    if stride is None:
        tensor = tensor.contiguous()
        stride = cols
    rows = tensor.numel() // cols if cols else 0
    return tensor, rows, stride


def _device(*tensors: Optional[torch.Tensor]) -> int:
    first = tensors[0]
    if not first.is_cuda:
        raise ValueError("norm_opt runs on CUDA tensors; got a tensor on "
                         f"{first.device}")
    for t in tensors[1:]:
        if t is not None and t.device != first.device:
            raise ValueError(f"tensors on {first.device} and {t.device}")
    return first.device.index if first.device.index is not None else (
        torch.cuda.current_device())


def _param(tensor: Optional[torch.Tensor], cols: int, name: str):
    if tensor is None:
        return None
    if tensor.dim() != 1 or tensor.size(0) != cols:
        raise ValueError(f"{name}: expected shape ({cols},), got "
                         f"{tuple(tensor.shape)}")
    return tensor.contiguous()


class Call(NamedTuple):
    """One prepared launch: the operation, its buffers, the row count, the
    tensors it writes, the tensors to keep alive until it ran, and the
    calls that run before it in its stream (attention's K-prepare), all
    checked before any of them is enqueued."""
    device: int
    desc: OpDesc
    args: object  # _capi._LaunchArgs
    rows: int
    outputs: Tuple[torch.Tensor, ...]
    keep: Tuple[torch.Tensor, ...]
    before: Tuple["Call", ...] = ()


def _buffer(tensor: torch.Tensor, cols: int, stride: int = 0) -> Buffer:
    dtype = _DTYPES.get(tensor.dtype, _FP8_DTYPES.get(tensor.dtype))
    return Buffer(tensor.data_ptr(), dtype, cols, stride)


def _param_dtype(*params: Optional[torch.Tensor]) -> int:
    present = [p for p in params if p is not None]
    if not present:
        return _capi.BF16
    types = {p.dtype for p in present}
    if len(types) != 1:
        raise TypeError(f"weight and bias must have one dtype, got {types}")
    return _dtype(present[0], "weight")


def _output(out: Optional[torch.Tensor], shape, dtype, like: torch.Tensor,
            name: str) -> torch.Tensor:
    if out is None:
        return torch.empty(shape, dtype=dtype, device=like.device)
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise ValueError(f"{name}: expected {tuple(shape)} {dtype}, got "
                         f"{tuple(out.shape)} {out.dtype}")
    return out


#===------------------------------------------------------------------------===#
# Operations
#===------------------------------------------------------------------------===#


def prepare_row_norm(kind: int, input: torch.Tensor,
                     weight: Optional[torch.Tensor],
                     bias: Optional[torch.Tensor], eps: float, *,
                     addend: Optional[torch.Tensor] = None, alpha: float = 1.0,
                     out: Optional[torch.Tensor] = None,
                     residual_out: Optional[torch.Tensor] = None,
                     out_dtype: Optional[torch.dtype] = None,
                     names: Tuple[str, str] = ("input", "addend"),
                     weight_offset: float = 0.0,
                     save_stats: bool = False,
                     scale: Optional[torch.Tensor] = None,
                     scale_ub: Optional[torch.Tensor] = None,
                     scales: Optional[torch.Tensor] = None) -> Call:
    """A fused-row launch: y = norm(alpha * input + addend) * (weight +
    weight_offset) + bias over the last dimension, and with an addend also
    the sum (in input's dtype) as the new residual. `names` name input and
    addend in errors. With save_stats (API 6) also the f32 statistics its
    backward reads, [..., 1] each: outputs (y[, residual][, mean], rstd),
    the mean for a LayerNorm only. An FP8 out_dtype (API 8) quantizes y by
    the f32 scalar `scale` (static), or else per token: then outputs (y[,
    residual], scales), scales [..., 1] f32 (into `scales` if given), each
    row's amax bounded by the f32 scalar `scale_ub` if given."""
    hidden = input.size(-1) if input.dim() else 0
    device = _device(input, addend, weight, bias, out, residual_out)
    input_type = _dtype(input, names[0])
    x, rows, x_stride = _rows(input, hidden, names[0])
    weight = _param(weight, hidden, "weight")
    bias = _param(bias, hidden, "bias")
    param_type = _param_dtype(weight, bias)
    out_dtype = out_dtype or input.dtype
    flags = ((_capi.OP_WEIGHT if weight is not None else 0) |
             (_capi.OP_BIAS if bias is not None else 0))
    buffers = {_capi.INPUT: _buffer(x, hidden, x_stride)}
    keep = [x]
    addend_type = _capi.BF16
    a = a_stride = None
    if addend is not None:
        if tuple(addend.shape) != tuple(input.shape):
            raise ValueError(f"{names[0]} and {names[1]} differ in shape: "
                             f"{tuple(input.shape)} and {tuple(addend.shape)}")
        addend_type = _dtype(addend, names[1])
        a, _, a_stride = _rows(addend, hidden, names[1])
        buffers[_capi.ADDEND] = _buffer(a, hidden, a_stride)
        keep.append(a)
        flags |= _capi.OP_ADDEND | _capi.OP_RESIDUAL_OUT
    fp8 = out_dtype in _FP8_DTYPES
    output_type = (_FP8_DTYPES[out_dtype] if fp8 else
                   _dtype(torch.empty(0, dtype=out_dtype), "out"))
    if not fp8 and (scale is not None or scale_ub is not None or
                    scales is not None):
        raise ValueError("scale, scale_ub and scales quantize FP8 outputs "
                         f"(float8_e4m3fn, float8_e5m2), not {out_dtype}")
    y = _output(out, input.shape, out_dtype, input, "out")
    buffers[_capi.OUTPUT] = _buffer(y, hidden, hidden)
    outputs = [y]
    if addend is not None:
        h = _output(residual_out, input.shape, input.dtype, input,
                    "residual_out")
        buffers[_capi.RESIDUAL_OUT] = _buffer(h, hidden, hidden)
        outputs.append(h)
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            buffers[_capi.WEIGHT if name == "weight" else _capi.BIAS] = (
                _buffer(p, hidden))
            keep.append(p)
    if not (y.is_contiguous() and (len(outputs) == 1 or
                                   outputs[1].is_contiguous())):
        raise ValueError("outputs must be contiguous")
    # In place (API 7): an output given as exactly the rows of an input
    # (vLLM's fused_add_rms_norm: out=x, residual_out=residual) gets a
    # kernel that may write over them.
    rows_of = [(x, x_stride, "INPUT")]
    if addend is not None:
        rows_of.append((a, a_stride, "ADDEND"))
    for output, prefix in zip(outputs, ("OUTPUT", "RESIDUAL")):
        for source, stride, name in rows_of:
            if (rows and output.data_ptr() == source.data_ptr()
                    and stride == hidden):
                flags |= getattr(_capi, "OP_%s_OVER_%s" % (prefix, name))
    if fp8:
        flags |= _add_fp8_scales(buffers, keep, outputs, input, scale,
                                 scale_ub, scales)
    if save_stats:
        outputs += _add_saved_stats(buffers, kind == _capi.OP_LAYER_NORM,
                                    tuple(input.shape[:-1]) + (1,), input)
        flags |= _capi.OP_SAVE_STATS
    desc = OpDesc(kind=kind, hidden=hidden, input_type=input_type,
                  output_type=output_type,
                  param_type=param_type,
                  addend_type=addend_type, flags=flags, eps=float(eps),
                  alpha=float(alpha), weight_offset=float(weight_offset))
    return Call(device, desc, _capi.make_launch_args(buffers), rows,
                tuple(outputs), tuple(keep))


def _f32_scalar(tensor: torch.Tensor, name: str) -> torch.Tensor:
    if tensor.numel() != 1 or tensor.dtype != torch.float32:
        raise ValueError(f"{name}: expected one float32 element, got "
                         f"{tuple(tensor.shape)} {tensor.dtype}")
    return tensor.reshape(1).contiguous()


def _add_fp8_scales(buffers, keep, outputs, like: torch.Tensor,
                    scale: Optional[torch.Tensor],
                    scale_ub: Optional[torch.Tensor],
                    scales: Optional[torch.Tensor]) -> int:
    """The scale buffers of an FP8 output; returns their op flags."""
    if scale is not None:
        if scale_ub is not None or scales is not None:
            raise ValueError("a static scale takes no scale_ub or scales")
        scale = _f32_scalar(scale, "scale")
        buffers[_capi.OUTPUT_SCALE] = _buffer(scale, 1)
        keep.append(scale)
        return _capi.OP_OUTPUT_SCALE_STATIC
    flags = _capi.OP_OUTPUT_SCALE_PER_TOKEN
    if scale_ub is not None:
        scale_ub = _f32_scalar(scale_ub, "scale_ub")
        buffers[_capi.SCALE_UB] = _buffer(scale_ub, 1)
        keep.append(scale_ub)
        flags |= _capi.OP_SCALE_UB
    shape = tuple(like.shape[:-1]) + (1,)
    token = _output(scales, shape, torch.float32, like, "scales")
    if not token.is_contiguous():
        raise ValueError("scales must be contiguous")
    buffers[_capi.OUTPUT_SCALES] = _buffer(token, 1, 1)
    outputs.append(token)
    return flags


def _add_saved_stats(buffers, mean: bool, shape, like: torch.Tensor):
    """Fresh f32 saved statistics of `shape` (a row of one per group or
    head for each token) as the SAVED_MEAN (with `mean`) and SAVED_RSTD
    buffers of a forward launch; returns them, mean first."""
    cols = shape[-1]
    stats = []
    for slot, present in ((_capi.SAVED_MEAN, mean), (_capi.SAVED_RSTD, True)):
        if present:
            t = torch.empty(shape, dtype=torch.float32, device=like.device)
            buffers[slot] = Buffer(t.data_ptr(), _capi.F32, cols, cols)
            stats.append(t)
    return stats


def _is_per_head(weight: Optional[torch.Tensor], head_dim: int) -> bool:
    """Whether a QK-Norm weight holds a row per head: [heads, head_dim]
    with several heads, or more than head_dim elements."""
    if weight is None:
        return False
    if weight.dim() == 2:
        return weight.size(0) > 1
    return weight.dim() == 1 and weight.size(0) > head_dim


def _qk_weight_pair(q_weight: Optional[torch.Tensor],
                    k_weight: Optional[torch.Tensor], head_dim: int,
                    q_heads: int, kv_heads: int, names: Tuple[str, str]):
    """The QK-Norm weights as the C API takes them (1-D, contiguous) and
    whether they hold a row per head (Command R+'s q_norm and k_norm of
    [heads, head_dim], given as such or flat): where either does, both do
    (one key/value head's row is its only head's)."""
    if q_weight is None:
        return None, None, False
    per_head = (_is_per_head(q_weight, head_dim) or
                _is_per_head(k_weight, head_dim))
    pair = []
    for weight, heads, name in ((q_weight, q_heads, names[0]),
                                (k_weight, kv_heads, names[1])):
        rows = heads if per_head else 1
        if weight.dim() == 2:
            if tuple(weight.shape) != (rows, head_dim):
                raise ValueError(f"{name}: expected shape ({rows}, {head_dim})"
                                 f", got {tuple(weight.shape)}")
            weight = weight.reshape(-1)
        if weight.dim() != 1 or weight.size(0) != rows * head_dim:
            what = (f"a row of {head_dim} per head ({heads} heads), as the "
                    "other weight has" if per_head else
                    f"one row of the head dim")
            raise ValueError(f"{name}: expected {rows * head_dim} elements "
                             f"({what}), got shape {tuple(weight.shape)}")
        pair.append(weight.contiguous())
    return pair[0], pair[1], per_head


def _add_qk_weights(buffers, keep, q_weight: Optional[torch.Tensor],
                    k_weight: Optional[torch.Tensor],
                    per_head: bool = False) -> int:
    """Adds the QK-Norm weights (both or neither, or q's alone for prepared
    keys; 1-D, a row per head with `per_head`) to a launch's buffers; their
    flags."""
    if q_weight is None:
        return 0
    buffers[_capi.Q_WEIGHT] = _buffer(q_weight, q_weight.size(0))
    keep.append(q_weight)
    if k_weight is not None:
        buffers[_capi.K_WEIGHT] = _buffer(k_weight, k_weight.size(0))
        keep.append(k_weight)
    return _capi.OP_WEIGHT | (_capi.OP_QK_WEIGHT_PER_HEAD if per_head else 0)


# rope= of attention and the QK-Norm prologue: normjit_rope.
_ROPES = {None: _capi.ROPE_NONE, "neox": _capi.ROPE_NEOX,
          "gptj": _capi.ROPE_GPTJ}
_DEFAULT_ROPE_THETA = 10000.0


def prepare_qk_norm(qkv: torch.Tensor, num_q_heads: int, num_kv_heads: int,
                    q_weight: Optional[torch.Tensor] = None,
                    k_weight: Optional[torch.Tensor] = None, eps: float = 1e-6,
                    *, l2: bool = False, layer_norm: bool = False,
                    weight_offset: float = 0.0,
                    out_dtype: Optional[torch.dtype] = None,
                    q_out: Optional[torch.Tensor] = None,
                    k_out: Optional[torch.Tensor] = None,
                    save_stats: bool = False,
                    rope: Optional[str] = None,
                    rotary_dim: Optional[int] = None,
                    rope_theta: float = _DEFAULT_ROPE_THETA,
                    positions: Optional[torch.Tensor] = None,
                    cos_sin_cache: Optional[torch.Tensor] = None,
                    rope_first: bool = False) -> Call:
    """The QK-Norm prologue: per-head norms of q and k read from a packed
    [..., (Hq + 2 Hkv) * D] projection (rows may be strided): RMSNorm, L2
    (l2=True) or LayerNorm without bias (layer_norm=True), the weights
    shifted by weight_offset (1.0: Gemma 3's 1 + w); a weight row per head
    (Command R+: [Hq, D] and [Hkv, D], or flat) where either has several
    rows (API 9). With save_stats (API
    6) also the f32 statistics of each head, [..., Hq + Hkv] (q heads,
    then k heads): outputs (q, k[, mean], rstd), the mean for LayerNorm
    heads only. With rope= (API 9) the normalized heads are then rotated
    (before the norm with rope_first, Llama 4), as attention's rope fields
    say, row t at position t or positions[t]; not with save_stats."""
    if l2 and layer_norm:
        raise ValueError("l2 and layer_norm exclude each other")
    rope_style, rotary_dim_given = rope, rotary_dim
    rope, rotary_dim, rope_theta = _rope_desc_fields(
        rope, rotary_dim, rope_theta, cos_sin_cache, rope_first, None,
        needs_norm=False)
    heads = num_q_heads + 2 * num_kv_heads
    if num_q_heads <= 0 or num_kv_heads <= 0 or qkv.dim() == 0 or (
            qkv.size(-1) % heads):
        raise ValueError(f"qkv: a last dimension of {qkv.size(-1) if qkv.dim() else 0} "
                         f"does not hold {num_q_heads} + 2 x {num_kv_heads} "
                         "heads")
    head_dim = qkv.size(-1) // heads
    if (q_weight is None) != (k_weight is None):
        raise ValueError("give both q_weight and k_weight, or neither")
    device = _device(qkv, q_weight, k_weight)
    input_type = _dtype(qkv, "qkv")
    x, tokens, stride = _rows(qkv, qkv.size(-1), "qkv")
    _check_rope_inputs(positions, cos_sin_cache, rope_style,
                       rotary_dim_given, rope_theta, tokens, head_dim)
    q_weight, k_weight, per_head = _qk_weight_pair(
        q_weight, k_weight, head_dim, num_q_heads, num_kv_heads,
        ("q_weight", "k_weight"))
    param_type = _param_dtype(q_weight, k_weight)
    out_dtype = out_dtype or qkv.dtype
    lead = tuple(qkv.shape[:-1])
    q = _output(q_out, lead + (num_q_heads, head_dim), out_dtype, qkv, "q_out")
    k = _output(k_out, lead + (num_kv_heads, head_dim), out_dtype, qkv,
                "k_out")
    if not (q.is_contiguous() and k.is_contiguous()):
        raise ValueError("outputs must be contiguous")
    buffers = {
        _capi.QKV: _buffer(x, qkv.size(-1), stride),
        _capi.Q: _buffer(q, num_q_heads * head_dim, num_q_heads * head_dim),
        _capi.K: _buffer(k, num_kv_heads * head_dim, num_kv_heads * head_dim),
    }
    keep = [x]
    flags = (_capi.OP_QK_L2 if l2 else 0) | (
        _capi.OP_QK_MEAN_VAR if layer_norm else 0) | _add_qk_weights(
            buffers, keep, q_weight, k_weight, per_head)
    outputs = [q, k]
    if save_stats:
        outputs += _add_saved_stats(buffers, layer_norm, lead + (
            num_q_heads + num_kv_heads,), qkv)
        flags |= _capi.OP_SAVE_STATS
    rope_flags, table_rows = _add_rope_inputs(buffers, keep, positions,
                                              cos_sin_cache, tokens)
    flags |= rope_flags | (_capi.OP_ROPE_FIRST if rope_first else 0)
    if cos_sin_cache is not None:
        rope_theta = 0.0  # the table's angles replace rope_theta's
    desc = OpDesc(kind=_capi.OP_QK_NORM, hidden=head_dim,
                  input_type=input_type, output_type=_dtype(q, "q"),
                  param_type=param_type, flags=flags,
                  eps=float(eps), weight_offset=float(weight_offset),
                  num_q_heads=num_q_heads, num_kv_heads=num_kv_heads,
                  rope=rope, rotary_dim=rotary_dim, rope_theta=rope_theta)
    return Call(device, desc,
                _capi.make_launch_args(buffers, rope_table_rows=table_rows),
                tokens, tuple(outputs), tuple(keep))


def run(call: Call, config: Optional[LaunchConfig] = None,
        stream: Optional[int] = None) -> Tuple[torch.Tensor, ...]:
    """Launches a prepared call (after the calls it runs after, at their
    own configurations) on the current stream (or `stream`, a CUstream
    handle) and returns its outputs."""
    if call.rows == 0:
        return call.outputs
    kernels = [get_kernel(c.device, c.desc) for c in call.before]
    kernel = get_kernel(call.device, call.desc, config)
    if stream is None:
        stream = torch.cuda.current_stream(call.device).cuda_stream
    for before, before_kernel in zip(call.before, kernels):
        before_kernel.launch(before.args, before.rows, stream)
    kernel.launch(call.args, call.rows, stream)
    return call.outputs


def _default_eps(input: torch.Tensor, eps: Optional[float]) -> float:
    return torch.finfo(input.dtype).eps if eps is None else eps


# The row norms and QK-Norm below run one launch here (nothing saved) unless
# autograd needs them (grad enabled and an input requiring grad) or
# torch.compile traces them: then the torch.library ops of _train, which
# save the statistics and have a backward.


def rms_norm(input, weight=None, eps=None, *, out=None, weight_offset=0.0):
    eps = _default_eps(input, eps)
    if _train.use_ops(out is not None, input, weight):
        return _train.row_norm("rms", input, None, weight, None, eps, 1.0,
                               weight_offset)[0]
    return run(prepare_row_norm(_capi.OP_RMS_NORM, input, weight, None, eps,
                                out=out, weight_offset=weight_offset))[0]


def layer_norm(input, weight=None, bias=None, eps=1e-5, *, out=None):
    if _train.use_ops(out is not None, input, weight, bias):
        return _train.row_norm("layer", input, None, weight, bias, eps)[0]
    return run(prepare_row_norm(_capi.OP_LAYER_NORM, input, weight, bias, eps,
                                out=out))[0]


def fused_add_rms_norm(x, residual, weight=None, eps=None, *, alpha=1.0,
                       out=None, residual_out=None, weight_offset=0.0):
    eps = _default_eps(x, eps)
    if _train.use_ops(out is not None or residual_out is not None, x,
                      residual, weight):
        return _train.row_norm("rms", residual, x, weight, None, eps, alpha,
                               weight_offset)[:2]
    return run(_prepare_add_norm(_capi.OP_RMS_NORM, x, residual, weight, None,
                                 eps, alpha, out, residual_out,
                                 weight_offset))


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5, *,
                         alpha=1.0, out=None, residual_out=None):
    if _train.use_ops(out is not None or residual_out is not None, x,
                      residual, weight, bias):
        return _train.row_norm("layer", residual, x, weight, bias, eps,
                               alpha)[:2]
    return run(_prepare_add_norm(_capi.OP_LAYER_NORM, x, residual, weight,
                                 bias, eps, alpha, out, residual_out))


def _quantized_norm(kind, input, weight, bias, eps, scale, scale_ub,
                    residual, dtype, out, weight_offset):
    if dtype not in _FP8_DTYPES:
        raise TypeError(f"dtype {dtype} is no FP8 type this torch has "
                        "(float8_e4m3fn, float8_e5m2)")
    if residual is None:
        call = prepare_row_norm(kind, input, weight, bias, eps, out=out,
                                out_dtype=dtype, weight_offset=weight_offset,
                                scale=scale, scale_ub=scale_ub)
    else:
        call = prepare_row_norm(kind, residual, weight, bias, eps,
                                addend=input, out=out, out_dtype=dtype,
                                names=("residual", "input"),
                                weight_offset=weight_offset, scale=scale,
                                scale_ub=scale_ub)
    outputs = run(call)
    # (y, scale or scales[, the new residual]).
    y, rest = outputs[0], list(outputs[1:])
    new_residual = rest.pop(0) if residual is not None else None
    token = rest.pop(0) if scale is None else scale
    return (y, token) if residual is None else (y, token, new_residual)


def rms_norm_quant(input, weight=None, eps=None, *, scale=None, scale_ub=None,
                   residual=None, dtype=None, out=None, weight_offset=0.0):
    """RMSNorm with an FP8 output in one pass (vLLM's
    rms_norm_static_fp8_quant with `scale`, else
    rms_norm_dynamic_per_token_quant): y = norm(input [+ residual]) * (weight
    + weight_offset), q = fp8(y / scale), rounded to nearest even and
    saturated. Returns (q, scale) with a static scale, (q, scales) per token
    (scales [..., 1] float32, max(min(amax, scale_ub) / fp8_max, 1 /
    (fp8_max * 512))), and the new residual last when `residual` is given.
    Inference only: no autograd."""
    return _quantized_norm(_capi.OP_RMS_NORM, input, weight, None,
                           _default_eps(input, eps), scale, scale_ub, residual,
                           dtype or torch.float8_e4m3fn, out, weight_offset)


def layer_norm_quant(input, weight=None, bias=None, eps=1e-5, *, scale=None,
                     scale_ub=None, residual=None, dtype=None, out=None):
    """LayerNorm with an FP8 output in one pass: as rms_norm_quant."""
    return _quantized_norm(_capi.OP_LAYER_NORM, input, weight, bias, eps,
                           scale, scale_ub, residual,
                           dtype or torch.float8_e4m3fn, out, 0.0)


def _prepare_add_norm(kind, x, residual, weight, bias, eps, alpha, out,
                      residual_out, weight_offset=0.0) -> Call:
    # The residual stream is the input (scaled by alpha), x the addend: the
    # sum keeps the residual's dtype, y takes x's.
    return prepare_row_norm(kind, residual, weight, bias, eps, addend=x,
                            alpha=alpha, out=out, residual_out=residual_out,
                            out_dtype=x.dtype, names=("residual", "x"),
                            weight_offset=weight_offset)


def qk_norm(qkv, num_q_heads, num_kv_heads, q_weight=None, k_weight=None,
            eps=1e-6, *, l2=False, layer_norm=False, weight_offset=0.0,
            q_out=None, k_out=None, rope=None, rotary_dim=None,
            rope_theta=_DEFAULT_ROPE_THETA, positions=None,
            cos_sin_cache=None, rope_first=False):
    rotary = dict(rope=rope, rotary_dim=rotary_dim, rope_theta=rope_theta,
                  positions=positions, cos_sin_cache=cos_sin_cache,
                  rope_first=rope_first)
    if _train.use_ops(q_out is not None or k_out is not None, qkv, q_weight,
                      k_weight):
        heads = num_q_heads + 2 * num_kv_heads
        head_dim = qkv.size(-1) // heads if qkv.dim() and heads > 0 else 0
        if head_dim and (_is_per_head(q_weight, head_dim) or
                         _is_per_head(k_weight, head_dim)):
            raise NotImplementedError(
                "norm_opt.qk_norm: weights with a row per head have no "
                "backward or torch.compile op yet: call it under "
                "torch.no_grad() outside torch.compile")
        if rope is not None:
            raise NotImplementedError(
                "norm_opt.qk_norm: rope has no backward or torch.compile op "
                "yet: call it under torch.no_grad() outside torch.compile")
        if l2 and layer_norm:
            raise ValueError("l2 and layer_norm exclude each other")
        kind = "l2" if l2 else "layer" if layer_norm else "rms"
        return _train.qk_norm(qkv, num_q_heads, num_kv_heads, q_weight,
                              k_weight, eps, kind, weight_offset)[:2]
    return run(prepare_qk_norm(qkv, num_q_heads, num_kv_heads, q_weight,
                               k_weight, eps, l2=l2, layer_norm=layer_norm,
                               weight_offset=weight_offset, q_out=q_out,
                               k_out=k_out, **rotary))


#===------------------------------------------------------------------------===#
# Attention
#===------------------------------------------------------------------------===#

# qk_norm= of attention: the C API's statistic flag.
_QK_NORMS = {"rms": _capi.OP_QK_RMS, "l2": _capi.OP_QK_L2,
             "layer": _capi.OP_QK_MEAN_VAR}


def _rope_fields(rope: Optional[str], rotary_dim: Optional[int],
                 rope_theta: float) -> Tuple[int, int, float]:
    """normjit_op_desc's (rope, rotary_dim, rope_theta). libnormjit checks
    the values; here only what its zero defaults would hide."""
    if rope not in _ROPES:
        raise ValueError(f"rope: expected None, 'neox' or 'gptj', got {rope!r}")
    if rope is None:
        if rotary_dim is not None or rope_theta != _DEFAULT_ROPE_THETA:
            raise ValueError("rotary_dim and rope_theta need rope='neox' or "
                             "'gptj'")
        return _capi.ROPE_NONE, 0, 0.0
    # 0 means "the default" in the C API: None and 10000.0 say that here.
    if rotary_dim is not None and int(rotary_dim) == 0:
        raise ValueError("rotary_dim: expected a positive number of rotated "
                         "elements per head (None: the head dim), got 0")
    if float(rope_theta) == 0.0:
        raise ValueError("rope_theta: expected a positive frequency base, "
                         "got 0")
    return _ROPES[rope], int(rotary_dim or 0), float(rope_theta)


def _check_table_theta(rope_theta: float) -> None:
    """With a cos_sin_cache the table gives the angles: a rope_theta other
    than the default would be ignored, so it is refused."""
    if float(rope_theta) != _DEFAULT_ROPE_THETA:
        raise ValueError("rope_theta: the cos_sin_cache gives the angles; "
                         "leave rope_theta at its default (got "
                         f"{rope_theta})")


def _rope_desc_fields(rope: Optional[str], rotary_dim: Optional[int],
                      rope_theta: float, cos_sin_cache, rope_first: bool,
                      qk_norm: Optional[str],
                      needs_norm: bool = True) -> Tuple[int, int, float]:
    """The checked rope fields of a desc (_rope_fields) where a table may
    give the angles and rope_first rotates before a QK-Norm (`qk_norm`; the
    QK-Norm prologue always has one: needs_norm False)."""
    if qk_norm is not None and qk_norm not in _QK_NORMS:
        raise ValueError(f"qk_norm: expected None, 'rms', 'l2' or 'layer', got "
                         f"{qk_norm!r}")
    if rope_first and (rope is None or (needs_norm and qk_norm is None)):
        raise ValueError("rope_first: rotating before the QK-Norm needs rope="
                         + (" and qk_norm=" if needs_norm else ""))
    if cos_sin_cache is not None and rope is not None:
        _check_table_theta(rope_theta)  # before _rope_fields' rules of theta
    return _rope_fields(rope, rotary_dim, rope_theta)


def _check_rope_inputs(positions: Optional[torch.Tensor],
                       cos_sin_cache: Optional[torch.Tensor],
                       rope: Optional[str], rotary_dim: Optional[int],
                       rope_theta: float, tokens: int,
                       head_dim: int) -> None:
    """What attention's positions and cos_sin_cache must be, from their
    shapes, dtypes and strides alone (so the shape functions check it too):
    positions int32 [tokens]; cos_sin_cache float32 [max_position,
    rotary_dim], row stride a multiple of 4 floats, rope_theta left at its
    default."""
    if positions is None and cos_sin_cache is None:
        return
    if rope is None:
        raise ValueError("positions and cos_sin_cache need rope='neox' or "
                         "'gptj'")
    if positions is not None:
        if positions.dtype != torch.int32:
            # int64 would need a range check, which reads the values (a
            # device sync, impossible in CUDA graph capture): convert it.
            raise TypeError("positions: expected int32, got "
                            f"{positions.dtype} (convert with "
                            "positions.to(torch.int32))")
        if positions.dim() != 1 or positions.size(0) != tokens:
            raise ValueError("positions: expected one position per token, "
                             f"shape ({tokens},), got "
                             f"{tuple(positions.shape)}")
    if cos_sin_cache is not None:
        _check_table_theta(rope_theta)
        if cos_sin_cache.dtype != torch.float32:
            raise TypeError("cos_sin_cache: expected float32, got "
                            f"{cos_sin_cache.dtype}")
        width = int(rotary_dim) if rotary_dim else head_dim
        if cos_sin_cache.dim() != 2 or cos_sin_cache.size(1) != width:
            raise ValueError("cos_sin_cache: expected [max_position, "
                             f"rotary_dim = {width}] (cos, then sin), got "
                             f"shape {tuple(cos_sin_cache.shape)}")
        if cos_sin_cache.size(0) < 1:
            raise ValueError("cos_sin_cache: expected at least one position "
                             "(row)")
        # Never copied (a table is large and shared by every layer).
        if (width > 1 and cos_sin_cache.stride(1) != 1) or (
                cos_sin_cache.size(0) > 1 and cos_sin_cache.stride(0) % 4):
            raise ValueError("cos_sin_cache: the last dimension must be "
                             "contiguous and the row stride a multiple of 4 "
                             f"floats, got strides {cos_sin_cache.stride()}")


def _heads(tensor: torch.Tensor, name: str,
           head_dim: Optional[int]) -> Tuple[torch.Tensor, int, int]:
    """(a [tokens, heads * head_dim] view, heads, head_dim) of a token-major
    [tokens, heads * head_dim] or [tokens, heads, head_dim] tensor."""
    if tensor.dim() == 3:
        if head_dim is not None and tensor.size(2) != head_dim:
            raise ValueError(f"{name}: head dim {tensor.size(2)}, expected "
                             f"{head_dim}")
        heads, head_dim = tensor.size(1), tensor.size(2)
        # Heads side by side in each token's row: one [tokens, H * D] view
        # (packed qkv slices included); other layouts are copied.
        if tensor.stride(2) != 1 or (heads > 1 and tensor.stride(1) != head_dim):
            tensor = tensor.contiguous()
        return tensor.flatten(1), heads, head_dim
    if tensor.dim() != 2:
        raise ValueError(f"{name}: expected [tokens, heads * head_dim] or "
                         f"[tokens, heads, head_dim], got shape "
                         f"{tuple(tensor.shape)}")
    if head_dim is None:
        raise ValueError(f"{name}: a [tokens, heads * head_dim] tensor needs "
                         "head_dim= (or give [tokens, heads, head_dim])")
    if head_dim <= 0 or tensor.size(1) % head_dim:
        raise ValueError(f"{name}: {tensor.size(1)} columns are no whole "
                         f"number of heads of {head_dim}")
    return tensor, tensor.size(1) // head_dim, head_dim


def _given_head_dim(head_dim: Optional[int],
                    q_norm_weight: Optional[torch.Tensor],
                    q: torch.Tensor) -> Optional[int]:
    """head_dim=, else q's own ([tokens, heads, head_dim]), else the
    QK-Norm weight's row length."""
    if head_dim is None and q.dim() != 3 and q_norm_weight is not None and (
            q_norm_weight.dim()):
        return q_norm_weight.size(-1)
    return head_dim


def _check_forward_only(*tensors: Optional[torch.Tensor]) -> None:
    # A loop, not any() of a generator: torch.compile traces it without a
    # graph break on every version.
    if not torch.is_grad_enabled():
        return
    for t in tensors:
        if t is not None and t.requires_grad:
            raise RuntimeError(
                "norm_opt.attention is forward only (no backward yet): call "
                "it under torch.no_grad() or torch.inference_mode(), or "
                "detach its inputs")


def _add_rope_inputs(buffers, keep, positions: Optional[torch.Tensor],
                     cos_sin_cache: Optional[torch.Tensor],
                     tokens: int) -> Tuple[int, int]:
    """Adds the positions and the cos_sin_cache (checked by
    _check_rope_inputs) to a launch's buffers; their flags and the table's
    rows."""
    flags, table_rows = 0, 0
    if positions is not None:
        positions = positions.contiguous()
        buffers[_capi.POSITIONS] = Buffer(positions.data_ptr(), _capi.I32,
                                          tokens)
        keep.append(positions)
        flags |= _capi.OP_ROPE_POSITIONS
    if cos_sin_cache is not None:
        table_rows = cos_sin_cache.size(0)
        buffers[_capi.ROPE_TABLE] = Buffer(
            cos_sin_cache.data_ptr(), _capi.F32, cos_sin_cache.size(1),
            cos_sin_cache.stride(0) if table_rows > 1 else
            cos_sin_cache.size(1))
        keep.append(cos_sin_cache)
        flags |= _capi.OP_ROPE_TABLE
    return flags, table_rows


def prepare_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                      causal: bool = False, scale: Optional[float] = None,
                      cu_seqlens: Optional[torch.Tensor] = None,
                      qk_norm: Optional[str] = None,
                      q_norm_weight: Optional[torch.Tensor] = None,
                      k_norm_weight: Optional[torch.Tensor] = None,
                      qk_norm_eps: float = 1e-6, qk_norm_offset: float = 0.0,
                      return_lse: bool = False,
                      head_dim: Optional[int] = None,
                      rope: Optional[str] = None,
                      rotary_dim: Optional[int] = None,
                      rope_theta: float = _DEFAULT_ROPE_THETA,
                      positions: Optional[torch.Tensor] = None,
                      cos_sin_cache: Optional[torch.Tensor] = None,
                      rope_first: bool = False,
                      prepare_keys: bool = True) -> Call:
    """One attention (see norm_opt.attention): outputs (out[, lse]). With a
    QK-Norm or rope and `prepare_keys`, a K-prepare call normalizes and
    rotates k once into a [tokens, kv_heads * head_dim] buffer, which the
    attention kernel reads as it is (normalizing and rotating q alone);
    without, the attention kernel does both in its loop."""
    rope_style, rotary_dim_given = rope, rotary_dim
    rope, rotary_dim, rope_theta = _rope_desc_fields(
        rope, rotary_dim, rope_theta, cos_sin_cache, rope_first, qk_norm)
    if (q_norm_weight is None) != (k_norm_weight is None):
        raise ValueError("give both q_norm_weight and k_norm_weight, or neither")
    if q_norm_weight is not None and qk_norm is None:
        raise ValueError("q_norm_weight and k_norm_weight need qk_norm")
    head_dim = _given_head_dim(head_dim, q_norm_weight, q)
    device = _device(q, k, v, cu_seqlens, q_norm_weight, k_norm_weight,
                     positions, cos_sin_cache)
    input_type = _dtype(q, "q")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"q is {q.dtype}, {name} is {t.dtype}: attention "
                            "takes one dtype")
    q2, num_q_heads, head_dim = _heads(q, "q", head_dim)
    k2, num_kv_heads, _ = _heads(k, "k", head_dim)
    v2, v_heads, _ = _heads(v, "v", head_dim)
    tokens = q2.size(0)
    if k2.size(0) != tokens or v2.size(0) != tokens:
        raise ValueError(f"q, k and v have {tokens}, {k2.size(0)} and "
                         f"{v2.size(0)} tokens: they share cu_seqlens")
    if v_heads != num_kv_heads:
        raise ValueError(f"k has {num_kv_heads} heads, v {v_heads}")
    _check_rope_inputs(positions, cos_sin_cache, rope_style,
                       rotary_dim_given, rope_theta, tokens, head_dim)
    q2, _, q_stride = _rows(q2, num_q_heads * head_dim, "q")
    k2, _, k_stride = _rows(k2, num_kv_heads * head_dim, "k")
    v2, _, v_stride = _rows(v2, num_kv_heads * head_dim, "v")
    if cu_seqlens is None:
        # One sequence of every token (a host-to-device copy: pass
        # cu_seqlens inside CUDA graphs).
        cu_seqlens = torch.tensor([0, tokens], dtype=torch.int32,
                                  device=q.device)
    if cu_seqlens.dtype != torch.int32 or cu_seqlens.dim() != 1 or (
            cu_seqlens.size(0) < 2):
        raise ValueError("cu_seqlens: expected an int32 tensor of batch + 1 "
                         f"offsets, got {cu_seqlens.dtype} of shape "
                         f"{tuple(cu_seqlens.shape)}")
    cu_seqlens = cu_seqlens.contiguous()
    q_norm_weight, k_norm_weight, per_head = _qk_weight_pair(
        q_norm_weight, k_norm_weight, head_dim, num_q_heads, num_kv_heads,
        ("q_norm_weight", "k_norm_weight"))
    before = ()
    if prepare_keys and (qk_norm is not None or rope != _capi.ROPE_NONE):
        keys = _prepare_keys(
            k2, k_stride, num_kv_heads, head_dim, device, cu_seqlens, qk_norm,
            k_norm_weight, per_head, qk_norm_eps, qk_norm_offset, rope,
            rotary_dim, 0.0 if cos_sin_cache is not None else rope_theta,
            positions, cos_sin_cache, rope_first)
        before = (keys,)
        k2, k_stride, k_norm_weight = keys.outputs[0], 0, None
    cols = num_q_heads * head_dim
    out = torch.empty((tokens, cols), dtype=q.dtype, device=q.device)
    buffers = {
        _capi.Q: _buffer(q2, cols, q_stride),
        _capi.K: _buffer(k2, num_kv_heads * head_dim, k_stride),
        _capi.V: _buffer(v2, num_kv_heads * head_dim, v_stride),
        _capi.CU_SEQLENS: Buffer(cu_seqlens.data_ptr(), _capi.I32,
                                 cu_seqlens.size(0)),
        _capi.OUTPUT: _buffer(out, cols, cols),
    }
    keep = [q2, k2, v2, cu_seqlens]
    flags = (_QK_NORMS[qk_norm] if qk_norm else 0) | (
        _capi.OP_CAUSAL if causal else 0) | (
            _capi.OP_ROPE_FIRST if rope_first else 0) | (
                _capi.OP_PREPARED_K if before else 0) | _add_qk_weights(
                    buffers, keep, q_norm_weight, k_norm_weight, per_head)
    rope_flags, table_rows = _add_rope_inputs(buffers, keep, positions,
                                              cos_sin_cache, tokens)
    flags |= rope_flags
    if cos_sin_cache is not None:
        rope_theta = 0.0  # the table's angles replace rope_theta's
    out = out.view(q.shape)
    outputs = [out]
    if return_lse:
        lse = torch.empty((tokens, num_q_heads), dtype=torch.float32,
                          device=q.device)
        buffers[_capi.LSE] = Buffer(lse.data_ptr(), _capi.F32, num_q_heads)
        outputs.append(lse)
        flags |= _capi.OP_WRITE_LSE
    desc = OpDesc(kind=_capi.OP_ATTENTION, hidden=head_dim,
                  input_type=input_type, output_type=input_type,
                  param_type=_param_dtype(q_norm_weight, k_norm_weight),
                  flags=flags, eps=float(qk_norm_eps),
                  weight_offset=float(qk_norm_offset),
                  num_q_heads=num_q_heads, num_kv_heads=num_kv_heads,
                  scale=float(scale) if scale is not None else 0.0,
                  rope=rope, rotary_dim=rotary_dim, rope_theta=rope_theta)
    return Call(device, desc,
                _capi.make_launch_args(buffers, rope_table_rows=table_rows),
                tokens, tuple(outputs), tuple(keep), before)


def _prepare_keys(k2, k_stride, num_kv_heads, head_dim, device, cu_seqlens,
                  qk_norm, k_weight, per_head, eps, offset, rope, rotary_dim,
                  rope_theta, positions, cos_sin_cache, rope_first,
                  v=None, v_stride=0, cache=None) -> Call:
    """The K-prepare launch of checked inputs: k's heads normalized and
    rotated once into new [tokens, kv_heads * head_dim] keys (and v copied
    beside them): outputs (k_out[, v_out]). Keys turn by their index within
    their sequence of cu_seqlens, or at their positions. With `cache`
    (k_cache, v_cache, cache_seqlens), the keys and v go into the caches in
    place instead: no outputs."""
    tokens, cols = k2.size(0), num_kv_heads * head_dim
    buffers = {_capi.K: _buffer(k2, cols, k_stride)}
    keep, outputs, cache_rows = [k2], [], 0
    flags = _QK_NORMS[qk_norm] if qk_norm else 0
    if cache is None:
        k_out = torch.empty((tokens, cols), dtype=k2.dtype, device=k2.device)
        buffers[_capi.K_OUT] = _buffer(k_out, cols, cols)
        keep.append(k_out)
        outputs.append(k_out)
    else:
        (k_cache, v_cache, cache_seqlens, block_table, block_size, scales,
         kv_indptr) = cache
        cache_rows, scale_flags = _cache_buffers(
            buffers, keep, k_cache, v_cache, cache_seqlens, k2.dtype,
            cu_seqlens.size(0) - 1, num_kv_heads, head_dim, block_table,
            block_size, scales, kv_indptr)
        flags |= _capi.OP_WRITE_CACHE | scale_flags
    if k_weight is not None:
        buffers[_capi.K_WEIGHT] = _buffer(k_weight, k_weight.size(0))
        keep.append(k_weight)
        flags |= _capi.OP_WEIGHT | (
            _capi.OP_QK_WEIGHT_PER_HEAD if per_head else 0)
    # A cache's rows are per sequence.
    if cache is not None or (rope != _capi.ROPE_NONE and positions is None):
        buffers[_capi.CU_SEQLENS] = Buffer(cu_seqlens.data_ptr(), _capi.I32,
                                           cu_seqlens.size(0))
        keep.append(cu_seqlens)
    if v is not None:
        buffers[_capi.V] = _buffer(v, cols, v_stride)
        keep.append(v)
    if v is not None and cache is None:
        v_out = torch.empty_like(k_out)
        buffers[_capi.V_OUT] = _buffer(v_out, cols, cols)
        keep.append(v_out)
        outputs.append(v_out)
        flags |= _capi.OP_COPY_V
    rope_flags, table_rows = _add_rope_inputs(buffers, keep, positions,
                                              cos_sin_cache, tokens)
    flags |= rope_flags | (_capi.OP_ROPE_FIRST if rope_first else 0)
    desc = OpDesc(kind=_capi.OP_K_PREPARE, hidden=head_dim,
                  input_type=_dtype(k2, "k"), output_type=_dtype(k2, "k"),
                  param_type=_param_dtype(k_weight), flags=flags,
                  eps=float(eps), weight_offset=float(offset),
                  num_q_heads=0, num_kv_heads=num_kv_heads, rope=rope,
                  rotary_dim=rotary_dim, rope_theta=rope_theta,
                  cache_block_size=cache[4] if cache is not None else 0)
    return Call(device, desc,
                _capi.make_launch_args(buffers, cache_rows=cache_rows,
                                       rope_table_rows=table_rows),
                tokens, tuple(outputs), tuple(keep))


def _attention_impl(q, k, v, cu_seqlens, q_norm_weight, k_norm_weight, causal,
                    scale, qk_norm, qk_norm_eps, qk_norm_offset, return_lse,
                    head_dim, rope=None, rotary_dim=None,
                    rope_theta=_DEFAULT_ROPE_THETA, positions=None,
                    cos_sin_cache=None, rope_first=False):
    # Defaults as in the schema: older torch passes only the given arguments.
    outputs = run(prepare_attention(
        q, k, v, causal=causal, scale=scale, cu_seqlens=cu_seqlens,
        qk_norm=qk_norm, q_norm_weight=q_norm_weight,
        k_norm_weight=k_norm_weight, qk_norm_eps=qk_norm_eps,
        qk_norm_offset=qk_norm_offset, return_lse=return_lse,
        head_dim=head_dim, rope=rope, rotary_dim=rotary_dim,
        rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first))
    lse = outputs[1] if return_lse else q.new_empty((0,), dtype=torch.float32)
    return outputs[0], lse


def _attention_fake(q, k, v, cu_seqlens, q_norm_weight, k_norm_weight, causal,
                    scale, qk_norm, qk_norm_eps, qk_norm_offset, return_lse,
                    head_dim, rope=None, rotary_dim=None,
                    rope_theta=_DEFAULT_ROPE_THETA, positions=None,
                    cos_sin_cache=None, rope_first=False):
    """Shapes only (torch.compile's fake tensors, meta tensors), and the
    rotary inputs' shapes, dtypes and strides."""
    _, heads, dim = _heads(q, "q", _given_head_dim(head_dim, q_norm_weight, q))
    _check_rope_inputs(positions, cos_sin_cache, rope, rotary_dim, rope_theta,
                       q.size(0), dim)
    lse = q.new_empty((q.size(0), heads) if return_lse else (0,),
                      dtype=torch.float32)
    return q.new_empty(q.shape), lse


# torch.ops.norm_opt.attention: a custom op with a shape function, so that
# torch.compile keeps it as one node (the eager kernel reads data pointers).
# CPU tensors reach the kernel too, and are refused there (norm_opt runs on
# CUDA tensors), so that tests on the fake driver can use host memory.
_LIBRARY = torch.library.Library("norm_opt", "DEF")


def _define_op(schema: str, impl, fake) -> None:
    """torch.ops.norm_opt.<name> of `schema`: `impl` for CUDA (and CPU)
    tensors, `fake` as its shape function."""
    name = schema[:schema.index("(")]
    _LIBRARY.define(schema)
    for key in ("CUDA", "CPU"):
        _LIBRARY.impl(name, impl, key)
    if hasattr(torch.library, "register_fake"):  # torch >= 2.4
        torch.library.register_fake("norm_opt::" + name, fake)
    else:  # fake tensors use the Meta kernel; torch < 2 has no autograd
        # fallthrough for meta tensors, and the ops have no backward here.
        for key in ("Meta", "AutogradMeta"):
            _LIBRARY.impl(name, fake, key)


_define_op(
    "attention(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens, "
    "Tensor? q_norm_weight, Tensor? k_norm_weight, bool causal, float? scale, "
    "str? qk_norm, float qk_norm_eps, float qk_norm_offset, bool return_lse, "
    "int? head_dim, str? rope=None, int? rotary_dim=None, "
    "float rope_theta=10000.0, Tensor? positions=None, "
    "Tensor? cos_sin_cache=None, bool rope_first=False) -> (Tensor, Tensor)",
    _attention_impl, _attention_fake)


def attention(q, k, v, *, causal=False, scale=None, cu_seqlens=None,
              qk_norm=None, q_norm_weight=None, k_norm_weight=None,
              qk_norm_eps=1e-6, qk_norm_offset=0.0, return_lse=False,
              head_dim=None, rope=None, rotary_dim=None,
              rope_theta=_DEFAULT_ROPE_THETA, positions=None,
              cos_sin_cache=None, rope_first=False):
    _check_forward_only(q, k, v, q_norm_weight, k_norm_weight, cos_sin_cache)
    out, lse = torch.ops.norm_opt.attention(
        q, k, v, cu_seqlens, q_norm_weight, k_norm_weight, bool(causal),
        None if scale is None else float(scale), qk_norm, float(qk_norm_eps),
        float(qk_norm_offset), bool(return_lse), head_dim, rope,
        None if rotary_dim is None else int(rotary_dim), float(rope_theta),
        positions, cos_sin_cache, bool(rope_first))
    return (out, lse) if return_lse else out


def prepare_k_prepare(k: torch.Tensor, *, v: Optional[torch.Tensor] = None,
                      cu_seqlens: Optional[torch.Tensor] = None,
                      qk_norm: Optional[str] = None,
                      k_weight: Optional[torch.Tensor] = None,
                      eps: float = 1e-6, weight_offset: float = 0.0,
                      head_dim: Optional[int] = None,
                      rope: Optional[str] = None,
                      rotary_dim: Optional[int] = None,
                      rope_theta: float = _DEFAULT_ROPE_THETA,
                      positions: Optional[torch.Tensor] = None,
                      cos_sin_cache: Optional[torch.Tensor] = None,
                      rope_first: bool = False,
                      cache: Optional[tuple] = None) -> Call:
    """One K-prepare launch (see norm_opt.k_prepare): outputs (k_out[,
    v_out]); into `cache` = (k_cache, v_cache, cache_seqlens[, block_table[,
    block_size[, (k_scale, v_scale)[, kv_indptr]]]]) (see
    norm_opt.k_prepare_cache), none."""
    if qk_norm is None and rope is None and cache is None:
        raise ValueError("k_prepare needs qk_norm=, rope=, or both")
    if k_weight is not None and qk_norm is None:
        raise ValueError("k_weight needs qk_norm")
    rope_style, rotary_dim_given = rope, rotary_dim
    rope, rotary_dim, rope_theta = _rope_desc_fields(
        rope, rotary_dim, rope_theta, cos_sin_cache, rope_first, qk_norm)
    if head_dim is None and k.dim() != 3 and k_weight is not None and (
            k_weight.dim()):
        head_dim = k_weight.size(-1)
    device = _device(k, v, cu_seqlens, k_weight, positions, cos_sin_cache)
    _dtype(k, "k")
    k2, kv_heads, head_dim = _heads(k, "k", head_dim)
    tokens = k2.size(0)
    _check_rope_inputs(positions, cos_sin_cache, rope_style, rotary_dim_given,
                       rope_theta, tokens, head_dim)
    k2, _, k_stride = _rows(k2, kv_heads * head_dim, "k")
    v2, v_stride = None, 0
    if v is not None:
        if v.dtype != k.dtype:
            raise TypeError(f"k is {k.dtype}, v is {v.dtype}")
        v2, v_heads, _ = _heads(v, "v", head_dim)
        if v2.size(0) != tokens or v_heads != kv_heads:
            raise ValueError(f"v: expected {tokens} tokens of {kv_heads} "
                             f"heads like k, got shape {tuple(v.shape)}")
        v2, _, v_stride = _rows(v2, kv_heads * head_dim, "v")
    if cache is not None:
        if v is None:
            raise ValueError("k_prepare_cache needs v: a cache takes both")
        _, cu_seqlens = _cache_sequences(cache[2], cu_seqlens, k2, "k")
        table = cache[3] if len(cache) > 3 else None
        scales = cache[5] if len(cache) > 5 else None
        cache = (cache[0], cache[1], cache[2].contiguous(), table,
                 _cache_block_size(cache[0], table,
                                   cache[4] if len(cache) > 4 else None),
                 scales if scales is not None and any(
                     x is not None for x in scales) else None,
                 cache[6] if len(cache) > 6 else None)
    elif rope != _capi.ROPE_NONE and positions is None:
        if cu_seqlens is None:
            cu_seqlens = torch.tensor([0, tokens], dtype=torch.int32,
                                      device=k.device)
        if cu_seqlens.dtype != torch.int32 or cu_seqlens.dim() != 1 or (
                cu_seqlens.size(0) < 2):
            raise ValueError("cu_seqlens: expected an int32 tensor of batch "
                             "+ 1 offsets, got "
                             f"{cu_seqlens.dtype} of shape "
                             f"{tuple(cu_seqlens.shape)}")
        cu_seqlens = cu_seqlens.contiguous()
    per_head = _is_per_head(k_weight, head_dim)
    if k_weight is not None:
        rows = kv_heads if per_head else 1
        k_weight = k_weight.reshape(-1)
        if k_weight.size(0) != rows * head_dim:
            raise ValueError(f"k_weight: expected {rows * head_dim} elements, "
                             f"got {k_weight.size(0)}")
        k_weight = k_weight.contiguous()
    return _prepare_keys(
        k2, k_stride, kv_heads, head_dim, device, cu_seqlens, qk_norm,
        k_weight, per_head, eps, weight_offset, rope, rotary_dim,
        0.0 if cos_sin_cache is not None else rope_theta, positions,
        cos_sin_cache, rope_first, v2, v_stride, cache)


def _k_prepare_impl(k, v, cu_seqlens, k_weight, qk_norm, eps, weight_offset,
                    head_dim, rope, rotary_dim, rope_theta, positions,
                    cos_sin_cache, rope_first):
    outputs = run(prepare_k_prepare(
        k, v=v, cu_seqlens=cu_seqlens, qk_norm=qk_norm, k_weight=k_weight,
        eps=eps, weight_offset=weight_offset, head_dim=head_dim, rope=rope,
        rotary_dim=rotary_dim, rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first))
    k_out = outputs[0].view(k.shape)
    v_out = outputs[1].view(v.shape) if v is not None else k.new_empty((0,))
    return k_out, v_out


def _k_prepare_fake(k, v, cu_seqlens, k_weight, qk_norm, eps, weight_offset,
                    head_dim, rope, rotary_dim, rope_theta, positions,
                    cos_sin_cache, rope_first):
    return k.new_empty(k.shape), (v.new_empty(v.shape) if v is not None
                                  else k.new_empty((0,)))


_define_op(
    "k_prepare(Tensor k, Tensor? v, Tensor? cu_seqlens, Tensor? k_weight, "
    "str? qk_norm, float eps, float weight_offset, int? head_dim, str? rope, "
    "int? rotary_dim, float rope_theta, Tensor? positions, "
    "Tensor? cos_sin_cache, bool rope_first) -> (Tensor, Tensor)",
    _k_prepare_impl, _k_prepare_fake)


def k_prepare(k, *, v=None, cu_seqlens=None, qk_norm=None, k_weight=None,
              eps=1e-6, weight_offset=0.0, head_dim=None, rope=None,
              rotary_dim=None, rope_theta=_DEFAULT_ROPE_THETA, positions=None,
              cos_sin_cache=None, rope_first=False):
    _check_forward_only(k, v, k_weight, cos_sin_cache)
    k_out, v_out = torch.ops.norm_opt.k_prepare(
        k, v, cu_seqlens, k_weight, qk_norm, float(eps), float(weight_offset),
        head_dim, rope, None if rotary_dim is None else int(rotary_dim),
        float(rope_theta), positions, cos_sin_cache, bool(rope_first))
    return (k_out, v_out) if v is not None else k_out


def _k_prepare_cache_impl(k, v, k_cache, v_cache, cache_seqlens, cu_seqlens,
                          k_weight, qk_norm, eps, weight_offset, head_dim,
                          rope, rotary_dim, rope_theta, positions,
                          cos_sin_cache, rope_first, block_table=None,
                          block_size=None, k_scale=None, v_scale=None,
                          kv_indptr=None):
    run(prepare_k_prepare(
        k, v=v, cu_seqlens=cu_seqlens, qk_norm=qk_norm, k_weight=k_weight,
        eps=eps, weight_offset=weight_offset, head_dim=head_dim, rope=rope,
        rotary_dim=rotary_dim, rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first,
        cache=(k_cache, v_cache, cache_seqlens, block_table, block_size,
               (k_scale, v_scale), kv_indptr)))


def _k_prepare_cache_fake(k, v, k_cache, v_cache, cache_seqlens, cu_seqlens,
                          k_weight, qk_norm, eps, weight_offset, head_dim,
                          rope, rotary_dim, rope_theta, positions,
                          cos_sin_cache, rope_first, block_table=None,
                          block_size=None, k_scale=None, v_scale=None,
                          kv_indptr=None):
    """Nothing to return: the schema says that the kernel writes the
    caches."""
    return None


# torch.ops.norm_opt.k_prepare_cache: k_cache and v_cache are written in
# place (Tensor(a!), Tensor(b!)), so functionalization keeps the writes.
_define_op(
    "k_prepare_cache(Tensor k, Tensor v, Tensor(a!) k_cache, "
    "Tensor(b!) v_cache, Tensor cache_seqlens, Tensor? cu_seqlens, "
    "Tensor? k_weight, str? qk_norm, float eps, float weight_offset, "
    "int? head_dim, str? rope, int? rotary_dim, float rope_theta, "
    "Tensor? positions, Tensor? cos_sin_cache, bool rope_first, "
    "Tensor? block_table=None, int? block_size=None, Tensor? k_scale=None, "
    "Tensor? v_scale=None, Tensor? kv_indptr=None) -> ()",
    _k_prepare_cache_impl, _k_prepare_cache_fake)


def k_prepare_cache(k, v, k_cache, v_cache, cache_seqlens, cu_seqlens=None, *,
                    qk_norm=None, k_weight=None, eps=1e-6, weight_offset=0.0,
                    head_dim=None, rope=None, rotary_dim=None,
                    rope_theta=_DEFAULT_ROPE_THETA, positions=None,
                    cos_sin_cache=None, rope_first=False, block_table=None,
                    block_size=None, k_scale=None, v_scale=None,
                    kv_indptr=None):
    _check_forward_only(k, v, k_weight, cos_sin_cache)
    torch.ops.norm_opt.k_prepare_cache(
        k, v, k_cache, v_cache, cache_seqlens, cu_seqlens, k_weight, qk_norm,
        float(eps), float(weight_offset),
        None if head_dim is None else int(head_dim), rope,
        None if rotary_dim is None else int(rotary_dim), float(rope_theta),
        positions, cos_sin_cache, bool(rope_first), block_table,
        None if block_size is None else int(block_size), k_scale, v_scale,
        kv_indptr)


#===------------------------------------------------------------------------===#
# Decode attention
#===------------------------------------------------------------------------===#


def _cache_rows(cache: torch.Tensor, name: str, batch: int, kv_heads: int,
                head_dim: int, block_size: int = 0) -> Tuple[int, int]:
    """(rows, row stride) of a KV cache, [batch, capacity, Hkv, D] or
    [batch * capacity, Hkv * D]; paged (block_size), vLLM's [num_blocks,
    block_size, Hkv, D] or [num_blocks * block_size, Hkv * D]. The kernel
    writes it in place, so it is never copied: its rows must have one
    stride."""
    cols = kv_heads * head_dim
    if cache.dim() == 4:
        outer, inner = ("num_blocks", block_size) if block_size else (
            batch, "capacity")
        if (not block_size and cache.size(0) != batch) or (
                block_size and cache.size(1) != block_size) or (
                cache.size(2) != kv_heads or cache.size(3) != head_dim):
            raise ValueError(f"{name}: expected [{outer}, {inner}, "
                             f"{kv_heads}, {head_dim}], got shape "
                             f"{tuple(cache.shape)}")
        flat = cache.flatten(2) if cache.stride(3) == 1 and (
            kv_heads == 1 or cache.stride(2) == head_dim) else None
    elif cache.dim() == 2:
        if cache.size(1) != cols:
            raise ValueError(f"{name}: expected [batch * capacity, {cols}], "
                             f"got shape {tuple(cache.shape)}")
        flat = cache
    else:
        raise ValueError(f"{name}: expected [batch, capacity, heads, "
                         f"head_dim] or [batch * capacity, heads * head_dim], "
                         f"got shape {tuple(cache.shape)}")
    stride = _row_stride(flat) if flat is not None else None
    if stride is None:
        raise ValueError(f"{name}: its rows have no single stride (the "
                         "kernel updates the cache in place, so it cannot be "
                         "copied): pass a cache whose heads are contiguous")
    return flat.numel() // cols if cols else 0, stride


def _cache_sequences(cache_seqlens: torch.Tensor,
                     cu_seqlens: Optional[torch.Tensor], x: torch.Tensor,
                     name: str) -> Tuple[int, torch.Tensor]:
    """(batch, cu_seqlens) of a step that appends the tokens of `x` to KV
    caches: one cache length per sequence; without cu_seqlens one new token
    per sequence (a device allocation: pass cu_seqlens inside CUDA
    graphs)."""
    if cache_seqlens.dtype != torch.int32 or cache_seqlens.dim() != 1 or (
            cache_seqlens.size(0) < 1):
        raise ValueError("cache_seqlens: expected an int32 tensor of one "
                         f"cache length per sequence, got {cache_seqlens.dtype}"
                         f" of shape {tuple(cache_seqlens.shape)}")
    batch, tokens = cache_seqlens.size(0), x.size(0)
    if cu_seqlens is None:
        if tokens != batch:
            raise ValueError(f"{name} has {tokens} tokens for {batch} "
                             "sequences: without cu_seqlens each sequence has "
                             "one new token")
        cu_seqlens = torch.arange(batch + 1, dtype=torch.int32,
                                  device=x.device)
    if cu_seqlens.dtype != torch.int32 or cu_seqlens.dim() != 1 or (
            cu_seqlens.size(0) != batch + 1):
        raise ValueError(f"cu_seqlens: expected batch + 1 = {batch + 1} int32 "
                         f"offsets, got {cu_seqlens.dtype} of shape "
                         f"{tuple(cu_seqlens.shape)}")
    return batch, cu_seqlens.contiguous()


def _cache_block_size(k_cache: torch.Tensor,
                      block_table: Optional[torch.Tensor],
                      block_size: Optional[int]) -> int:
    """The rows of a page of a paged cache (0: not paged): `block_size`, or
    the pages' dim of a 4-D [num_blocks, block_size, Hkv, D] cache."""
    if block_table is None:
        if block_size is not None:
            raise ValueError("block_size pages a cache: pass block_table too")
        return 0
    if block_size is None:
        if k_cache.dim() != 4:
            raise ValueError("block_table: give block_size with a 2-D cache "
                             "(or a [num_blocks, block_size, heads, "
                             "head_dim] one)")
        block_size = k_cache.size(1)
    block_size = int(block_size)
    if not 1 <= block_size <= 256 or block_size & (block_size - 1):
        raise ValueError("block_size: a paged KV cache's block size must be "
                         "a power of two in [1, 256] (vLLM's 16, SGLang's "
                         f"1), got {block_size}")
    return block_size


def _cache_buffers(buffers: Dict[int, Buffer], keep: list,
                   k_cache: torch.Tensor, v_cache: torch.Tensor,
                   cache_seqlens: torch.Tensor, dtype: torch.dtype,
                   batch: int, kv_heads: int, head_dim: int,
                   block_table: Optional[torch.Tensor] = None,
                   block_size: int = 0,
                   scales: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
                   kv_indptr: Optional[torch.Tensor] = None
                   ) -> Tuple[int, int]:
    """Adds the KV caches (written in place), their lengths, a paged
    cache's block table ([batch, max_blocks] int32; with kv_indptr int32
    [batch + 1], FlashInfer's kv_indices, any length) and an FP8 cache's
    scales (k_scale, v_scale: float32, one or one per kv head) to
    `buffers`; returns the caches' rows and the desc flags of the scales and
    the ragged table."""
    if kv_indptr is not None:
        if block_table is None:
            raise ValueError("kv_indptr: FlashInfer's page table takes "
                             "block_table (its kv_indices) too")
        if block_table.dtype != torch.int32 or block_table.dim() != 1 or (
                block_table.numel() < 1):
            raise ValueError("block_table: with kv_indptr, FlashInfer's "
                             "kv_indices: expected int32 [pages] (at least "
                             f"one), got {block_table.dtype} of shape "
                             f"{tuple(block_table.shape)}")
        if kv_indptr.dtype != torch.int32 or kv_indptr.dim() != 1 or (
                kv_indptr.numel() != batch + 1):
            raise ValueError(f"kv_indptr: expected int32 [batch + 1 = "
                             f"{batch + 1}], got {kv_indptr.dtype} of shape "
                             f"{tuple(kv_indptr.shape)}")
    elif block_table is not None and (
            block_table.dtype != torch.int32 or block_table.dim() != 2 or (
                block_table.size(0) != batch or block_table.size(1) < 1)):
        raise ValueError("block_table: expected int32 [batch = "
                         f"{batch}, max_blocks], got {block_table.dtype} "
                         f"of shape {tuple(block_table.shape)}")
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if scales is not None:
            # vLLM keeps e4m3 caches as uint8 bytes.
            if cache.dtype not in _FP8_CACHE_DTYPES:
                raise TypeError(f"{name}: an FP8 cache (k_scale, v_scale) "
                                "holds e4m3 (float8_e4m3fn, or its bytes as "
                                f"uint8), got {cache.dtype}")
        elif cache.dtype != dtype:
            raise TypeError(f"the keys are {dtype}, {name} is {cache.dtype}: "
                            "a cache holds them as they are (or e4m3 with "
                            "k_scale and v_scale)")
    k_rows, k_stride = _cache_rows(k_cache, "k_cache", batch, kv_heads,
                                   head_dim, block_size)
    v_rows, v_stride = _cache_rows(v_cache, "v_cache", batch, kv_heads,
                                   head_dim, block_size)
    if k_rows != v_rows:
        raise ValueError(f"k_cache has {k_rows} rows, v_cache {v_rows}")
    page_flags = 0
    if kv_indptr is not None:
        _device(k_cache, kv_indptr)
        kv_indptr = kv_indptr.contiguous()
        buffers[_capi.PAGE_INDPTR] = Buffer(kv_indptr.data_ptr(), _capi.I32,
                                            batch + 1)
        keep.append(kv_indptr)
        page_flags = _capi.OP_PAGE_INDPTR
    if block_table is not None:
        if k_rows % block_size:
            raise ValueError(f"k_cache: {k_rows} rows are not whole pages "
                             f"of {block_size}")
        _device(k_cache, block_table)
        # Read only: rows one after another (a copy where they are not).
        block_table = block_table.contiguous()
        buffers[_capi.BLOCK_TABLES] = Buffer(block_table.data_ptr(),
                                             _capi.I32, block_table.numel())
        keep.append(block_table)
    cols = kv_heads * head_dim
    cache_type = _capi.F8E4M3FN if scales is not None else _DTYPES[dtype]
    buffers[_capi.K_CACHE] = Buffer(k_cache.data_ptr(), cache_type, cols,
                                    k_stride)
    buffers[_capi.V_CACHE] = Buffer(v_cache.data_ptr(), cache_type, cols,
                                    v_stride)
    flags = 0
    if scales is not None:
        counts = set()
        for slot, name, scale in ((_capi.K_SCALE, "k_scale", scales[0]),
                                  (_capi.V_SCALE, "v_scale", scales[1])):
            if scale is None or scale.dtype != torch.float32 or (
                    scale.numel() not in (1, kv_heads)) or scale.dim() > 1:
                raise ValueError(f"{name}: expected a float32 scale, one or "
                                 f"one per kv head ({kv_heads}), got "
                                 + ("None" if scale is None else
                                    f"{scale.dtype} of shape "
                                    f"{tuple(scale.shape)}"))
            _device(k_cache, scale)
            scale = scale.reshape(-1).contiguous()
            counts.add(scale.numel())
            buffers[slot] = Buffer(scale.data_ptr(), _capi.F32, scale.numel())
            keep.append(scale)
        if len(counts) != 1:
            raise ValueError("k_scale and v_scale: one count for both")
        flags = _capi.OP_FP8_CACHE | (_capi.OP_CACHE_SCALE_PER_HEAD
                                      if counts.pop() > 1 else 0)
    buffers[_capi.CACHE_SEQLENS] = Buffer(cache_seqlens.data_ptr(), _capi.I32,
                                          batch)
    keep += [k_cache, v_cache, cache_seqlens]
    return k_rows, flags | page_flags


def prepare_attention_decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             k_cache: torch.Tensor, v_cache: torch.Tensor,
                             cache_seqlens: torch.Tensor,
                             cu_seqlens: Optional[torch.Tensor] = None, *,
                             scale: Optional[float] = None,
                             qk_norm: Optional[str] = None,
                             q_norm_weight: Optional[torch.Tensor] = None,
                             k_norm_weight: Optional[torch.Tensor] = None,
                             qk_norm_eps: float = 1e-6,
                             qk_norm_offset: float = 0.0,
                             head_dim: Optional[int] = None,
                             rope: Optional[str] = None,
                             rotary_dim: Optional[int] = None,
                             rope_theta: float = _DEFAULT_ROPE_THETA,
                             positions: Optional[torch.Tensor] = None,
                             cos_sin_cache: Optional[torch.Tensor] = None,
                             rope_first: bool = False,
                             block_table: Optional[torch.Tensor] = None,
                             block_size: Optional[int] = None,
                             k_scale: Optional[torch.Tensor] = None,
                             v_scale: Optional[torch.Tensor] = None,
                             kv_indptr: Optional[torch.Tensor] = None
                             ) -> Call:
    """One decode launch (see norm_opt.attention_decode): outputs (out,)."""
    batch, cu_seqlens = _cache_sequences(cache_seqlens, cu_seqlens, q, "q")
    block_size = _cache_block_size(k_cache, block_table, block_size)
    tokens = q.size(0)
    # The new tokens' part is prefill attention's (q, k, v, QK-Norm, RoPE,
    # cu_seqlens): its call, with the caches added and the kind changed.
    call = prepare_attention(q, k, v, scale=scale, cu_seqlens=cu_seqlens,
                             qk_norm=qk_norm, q_norm_weight=q_norm_weight,
                             k_norm_weight=k_norm_weight,
                             qk_norm_eps=qk_norm_eps,
                             qk_norm_offset=qk_norm_offset, head_dim=head_dim,
                             rope=rope, rotary_dim=rotary_dim,
                             rope_theta=rope_theta, positions=positions,
                             cos_sin_cache=cos_sin_cache,
                             rope_first=rope_first, prepare_keys=False)
    desc = call.desc._replace(kind=_capi.OP_ATTENTION_DECODE,
                              cache_block_size=block_size)
    _device(q, k_cache, v_cache, cache_seqlens)
    cache_seqlens = cache_seqlens.contiguous()
    # The buffers of the prepared call, read back from its launch arguments.
    buffers = {slot: Buffer(t.data or 0, t.dtype, t.cols, t.row_stride)
               for slot, t in enumerate(call.args.tensors) if t.data}
    keep = list(call.keep)
    scales = None if k_scale is None and v_scale is None else (k_scale,
                                                               v_scale)
    rows, scale_flags = _cache_buffers(buffers, keep, k_cache, v_cache,
                                       cache_seqlens, q.dtype, batch,
                                       desc.num_kv_heads, desc.hidden,
                                       block_table, block_size, scales,
                                       kv_indptr)
    desc = desc._replace(flags=desc.flags | scale_flags)
    args = _capi.make_launch_args(
        buffers, cache_rows=rows, rope_table_rows=call.args.rope_table_rows)
    return Call(call.device, desc, args, tokens, call.outputs, tuple(keep))


def _attention_decode_impl(q, k, v, k_cache, v_cache, cache_seqlens,
                           cu_seqlens, q_norm_weight, k_norm_weight, scale,
                           qk_norm, qk_norm_eps, qk_norm_offset, head_dim,
                           rope=None, rotary_dim=None,
                           rope_theta=_DEFAULT_ROPE_THETA, positions=None,
                           cos_sin_cache=None, rope_first=False,
                           block_table=None, block_size=None, k_scale=None,
                           v_scale=None, kv_indptr=None):
    return run(prepare_attention_decode(
        q, k, v, k_cache, v_cache, cache_seqlens, cu_seqlens, scale=scale,
        qk_norm=qk_norm, q_norm_weight=q_norm_weight,
        k_norm_weight=k_norm_weight, qk_norm_eps=qk_norm_eps,
        qk_norm_offset=qk_norm_offset, head_dim=head_dim, rope=rope,
        rotary_dim=rotary_dim, rope_theta=rope_theta, positions=positions,
        cos_sin_cache=cos_sin_cache, rope_first=rope_first,
        block_table=block_table, block_size=block_size, k_scale=k_scale,
        v_scale=v_scale, kv_indptr=kv_indptr))[0]


def _attention_decode_fake(q, k, v, k_cache, v_cache, cache_seqlens,
                           cu_seqlens, q_norm_weight, k_norm_weight, scale,
                           qk_norm, qk_norm_eps, qk_norm_offset, head_dim,
                           rope=None, rotary_dim=None,
                           rope_theta=_DEFAULT_ROPE_THETA, positions=None,
                           cos_sin_cache=None, rope_first=False,
                           block_table=None, block_size=None, k_scale=None,
                           v_scale=None, kv_indptr=None):
    """Shapes only: the output, like q; the caches are left alone (the
    schema says that the kernel writes them). The rotary inputs' shapes,
    dtypes and strides are checked as in prefill."""
    _, _, dim = _heads(q, "q", _given_head_dim(head_dim, q_norm_weight, q))
    _check_rope_inputs(positions, cos_sin_cache, rope, rotary_dim, rope_theta,
                       q.size(0), dim)
    return q.new_empty(q.shape)


# torch.ops.norm_opt.attention_decode: k_cache and v_cache are written in
# place (Tensor(a!), Tensor(b!)), so functionalization (torch.compile)
# keeps the writes; the output is new and aliases no input.
_define_op(
    "attention_decode(Tensor q, Tensor k, Tensor v, Tensor(a!) k_cache, "
    "Tensor(b!) v_cache, Tensor cache_seqlens, Tensor? cu_seqlens, "
    "Tensor? q_norm_weight, Tensor? k_norm_weight, float? scale, "
    "str? qk_norm, float qk_norm_eps, float qk_norm_offset, int? head_dim, "
    "str? rope=None, int? rotary_dim=None, float rope_theta=10000.0, "
    "Tensor? positions=None, Tensor? cos_sin_cache=None, "
    "bool rope_first=False, Tensor? block_table=None, "
    "int? block_size=None, Tensor? k_scale=None, Tensor? v_scale=None, "
    "Tensor? kv_indptr=None) -> Tensor",
    _attention_decode_impl, _attention_decode_fake)


def attention_decode(q, k, v, k_cache, v_cache, cache_seqlens,
                     cu_seqlens=None, *, scale=None, qk_norm=None,
                     q_norm_weight=None, k_norm_weight=None, qk_norm_eps=1e-6,
                     qk_norm_offset=0.0, head_dim=None, rope=None,
                     rotary_dim=None, rope_theta=_DEFAULT_ROPE_THETA,
                     positions=None, cos_sin_cache=None, rope_first=False,
                     block_table=None, block_size=None, k_scale=None,
                     v_scale=None, kv_indptr=None):
    _check_forward_only(q, k, v, k_cache, v_cache, q_norm_weight,
                        k_norm_weight, cos_sin_cache)
    return torch.ops.norm_opt.attention_decode(
        q, k, v, k_cache, v_cache, cache_seqlens, cu_seqlens, q_norm_weight,
        k_norm_weight, None if scale is None else float(scale), qk_norm,
        float(qk_norm_eps), float(qk_norm_offset),
        None if head_dim is None else int(head_dim), rope,
        None if rotary_dim is None else int(rotary_dim), float(rope_theta),
        positions, cos_sin_cache, bool(rope_first), block_table,
        None if block_size is None else int(block_size), k_scale, v_scale,
        kv_indptr)


def cache_seqlens_from_last_page_len(kv_indptr, kv_last_page_len,
                                     block_size, cu_seqlens=None):
    for name, t, count in (("kv_indptr", kv_indptr, None),
                           ("kv_last_page_len", kv_last_page_len,
                            kv_indptr.numel() - 1)):
        if t.dtype != torch.int32 or t.dim() != 1 or (
                count is not None and t.numel() != count):
            raise ValueError(f"{name}: expected int32 [" + (
                "batch + 1" if count is None else f"batch = {count}") +
                f"], got {t.dtype} of shape {tuple(t.shape)}")
    pages = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int64)
    total = torch.where(pages > 0, (pages - 1) * int(block_size) +
                        kv_last_page_len.to(torch.int64),
                        torch.zeros_like(pages))
    new = 1 if cu_seqlens is None else (
        cu_seqlens[1:] - cu_seqlens[:-1]).to(torch.int64)
    return torch.clamp(total - new, min=0).to(torch.int32)


# The training ops (torch.ops.norm_opt.row_norm, qk_norm and their
# backwards) use this module's helpers.
from norm_opt import _train  # noqa: E402
