"""libnormjit kernels on torch tensors.

One libnormjit context per CUDA device (sharing the device's primary context
with PyTorch), kernels cached per operation description; launches go to
torch.cuda.current_stream(). Rows may be strided where the C API allows it:
the last dimension must be contiguous and the leading dimensions must
collapse into one row stride; other layouts are copied to contiguous rows.

A kernel is built (compiled, autotuned, loaded) at the first call of each
operation: make that call before capturing a CUDA graph.
"""

from typing import NamedTuple, Optional, Tuple

import torch

from norm_opt import _capi
from norm_opt._capi import Buffer, LaunchConfig, OpDesc
from norm_opt._registry import get_kernel

_DTYPES = {torch.float32: _capi.F32, torch.float16: _capi.F16,
           torch.bfloat16: _capi.BF16}

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
    tensors it writes, and the tensors to keep alive until it ran."""
    device: int
    desc: OpDesc
    args: object  # _capi._LaunchArgs
    rows: int
    outputs: Tuple[torch.Tensor, ...]
    keep: Tuple[torch.Tensor, ...]


def _buffer(tensor: torch.Tensor, cols: int, stride: int = 0) -> Buffer:
    return Buffer(tensor.data_ptr(), _DTYPES[tensor.dtype], cols, stride)


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
                     names: Tuple[str, str] = ("input", "addend")) -> Call:
    """A fused-row launch: y = norm(alpha * input + addend) * weight + bias
    over the last dimension, and with an addend also the sum (in input's
    dtype) as the new residual. `names` name input and addend in errors."""
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
    if addend is not None:
        if tuple(addend.shape) != tuple(input.shape):
            raise ValueError(f"{names[0]} and {names[1]} differ in shape: "
                             f"{tuple(input.shape)} and {tuple(addend.shape)}")
        addend_type = _dtype(addend, names[1])
        a, _, a_stride = _rows(addend, hidden, names[1])
        buffers[_capi.ADDEND] = _buffer(a, hidden, a_stride)
        keep.append(a)
        flags |= _capi.OP_ADDEND | _capi.OP_RESIDUAL_OUT
    output_type = _dtype(torch.empty(0, dtype=out_dtype), "out")
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
    desc = OpDesc(kind=kind, hidden=hidden, input_type=input_type,
                  output_type=output_type,
                  param_type=param_type,
                  addend_type=addend_type, flags=flags, eps=float(eps),
                  alpha=float(alpha))
    return Call(device, desc, _capi.make_launch_args(buffers), rows,
                tuple(outputs), tuple(keep))


def prepare_qk_norm(qkv: torch.Tensor, num_q_heads: int, num_kv_heads: int,
                    q_weight: Optional[torch.Tensor] = None,
                    k_weight: Optional[torch.Tensor] = None, eps: float = 1e-6,
                    *, l2: bool = False, layer_norm: bool = False,
                    weight_offset: float = 0.0,
                    out_dtype: Optional[torch.dtype] = None,
                    q_out: Optional[torch.Tensor] = None,
                    k_out: Optional[torch.Tensor] = None) -> Call:
    """The QK-Norm prologue: per-head norms of q and k read from a packed
    [..., (Hq + 2 Hkv) * D] projection (rows may be strided): RMSNorm, L2
    (l2=True) or LayerNorm without bias (layer_norm=True), the weights
    shifted by weight_offset (1.0: Gemma 3's 1 + w)."""
    if l2 and layer_norm:
        raise ValueError("l2 and layer_norm exclude each other")
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
    q_weight = _param(q_weight, head_dim, "q_weight")
    k_weight = _param(k_weight, head_dim, "k_weight")
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
        _capi.OP_QK_MEAN_VAR if layer_norm else 0)
    if q_weight is not None:
        buffers[_capi.Q_WEIGHT] = _buffer(q_weight, head_dim)
        buffers[_capi.K_WEIGHT] = _buffer(k_weight, head_dim)
        keep += [q_weight, k_weight]
        flags |= _capi.OP_WEIGHT
    desc = OpDesc(kind=_capi.OP_QK_NORM, hidden=head_dim,
                  input_type=input_type, output_type=_dtype(q, "q"),
                  param_type=param_type, flags=flags,
                  eps=float(eps), weight_offset=float(weight_offset),
                  num_q_heads=num_q_heads, num_kv_heads=num_kv_heads)
    return Call(device, desc, _capi.make_launch_args(buffers), tokens, (q, k),
                tuple(keep))


def run(call: Call, config: Optional[LaunchConfig] = None,
        stream: Optional[int] = None) -> Tuple[torch.Tensor, ...]:
    """Launches a prepared call on the current stream (or `stream`, a
    CUstream handle) and returns its outputs."""
    if call.rows == 0:
        return call.outputs
    kernel = get_kernel(call.device, call.desc, config)
    if stream is None:
        stream = torch.cuda.current_stream(call.device).cuda_stream
    kernel.launch(call.args, call.rows, stream)
    return call.outputs


def _default_eps(input: torch.Tensor, eps: Optional[float]) -> float:
    return torch.finfo(input.dtype).eps if eps is None else eps


def rms_norm(input, weight=None, eps=None, *, out=None):
    return run(prepare_row_norm(_capi.OP_RMS_NORM, input, weight, None,
                                _default_eps(input, eps), out=out))[0]


def layer_norm(input, weight=None, bias=None, eps=1e-5, *, out=None):
    return run(prepare_row_norm(_capi.OP_LAYER_NORM, input, weight, bias, eps,
                                out=out))[0]


def fused_add_rms_norm(x, residual, weight=None, eps=None, *, alpha=1.0,
                       out=None, residual_out=None):
    return run(_prepare_add_norm(_capi.OP_RMS_NORM, x, residual, weight, None,
                                 _default_eps(x, eps), alpha, out,
                                 residual_out))


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5, *,
                         alpha=1.0, out=None, residual_out=None):
    return run(_prepare_add_norm(_capi.OP_LAYER_NORM, x, residual, weight,
                                 bias, eps, alpha, out, residual_out))


def _prepare_add_norm(kind, x, residual, weight, bias, eps, alpha, out,
                      residual_out) -> Call:
    # The residual stream is the input (scaled by alpha), x the addend: the
    # sum keeps the residual's dtype, y takes x's.
    return prepare_row_norm(kind, residual, weight, bias, eps, addend=x,
                            alpha=alpha, out=out, residual_out=residual_out,
                            out_dtype=x.dtype, names=("residual", "x"))


def qk_norm(qkv, num_q_heads, num_kv_heads, q_weight=None, k_weight=None,
            eps=1e-6, *, l2=False, layer_norm=False, weight_offset=0.0,
            q_out=None, k_out=None):
    return run(prepare_qk_norm(qkv, num_q_heads, num_kv_heads, q_weight,
                               k_weight, eps, l2=l2, layer_norm=layer_norm,
                               weight_offset=weight_offset, q_out=q_out,
                               k_out=k_out))
