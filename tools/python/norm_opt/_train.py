"""Training: the norms as torch.library ops with a backward.

torch.ops.norm_opt.row_norm (RMSNorm or LayerNorm over the last dimension,
optionally of alpha * input + addend with the sum as a second output,
Gemma's weight offset) and torch.ops.norm_opt.qk_norm (the QK-Norm
prologue) run libnormjit's forward kernels with NORMJIT_OP_SAVE_STATS and
also return the saved f32 statistics; torch.ops.norm_opt.row_norm_backward
and qk_norm_backward launch the backward kernels that
normjit_op_desc_get_backward derives from the forward's desc (the weight
and bias gradients reduced by the library's column sums: no atomics, the
same bits every run). Every op is functional (no argument written, every
output fresh), has a shape function for torch.compile's fake tensors, and
the forward ops have autograd formulas (torch.library.register_autograd on
torch >= 2.4, else torch.autograd.Functions calling the ops), so
torch.compile(fullgraph=True) traces forward and backward as these ops.

Absent outputs are empty (0,) tensors, as attention's lse: residual_out
without an addend, mean for RMSNorm, gradients of absent inputs.
"""

from typing import Optional, Tuple

import torch

from norm_opt import _capi, _torch
from norm_opt._capi import Buffer, OpDesc
from norm_opt._registry import get_backward_descs

_ROW_KINDS = {"rms": _capi.OP_RMS_NORM, "layer": _capi.OP_LAYER_NORM}
# QK-Norm's statistic: (l2, layer_norm) of prepare_qk_norm.
_QK_KINDS = {"rms": (False, False), "l2": (True, False),
             "layer": (False, True)}
_QK_FLAGS = {"rms": 0, "l2": _capi.OP_QK_L2, "layer": _capi.OP_QK_MEAN_VAR}

_HAVE_REGISTER_AUTOGRAD = hasattr(torch.library, "register_autograd")

#===------------------------------------------------------------------------===#
# Routing
#===------------------------------------------------------------------------===#


def _is_compiling() -> bool:
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is not None and hasattr(dynamo, "is_compiling"):
        return dynamo.is_compiling()
    return False


def needs_grad(*tensors: Optional[torch.Tensor]) -> bool:
    """Whether autograd records a call with these inputs."""
    # A loop, not any() of a generator: torch.compile traces it without a
    # graph break on every version.
    if not torch.is_grad_enabled():
        return False
    for t in tensors:
        if t is not None and t.requires_grad:
            return True
    return False


def use_ops(given_outputs: bool, *tensors: Optional[torch.Tensor]) -> bool:
    """Whether a public norm goes through the torch.library ops: when
    autograd needs its backward, or when torch.compile traces it (the
    direct launch reads data pointers). Outputs given by the caller (out=,
    residual_out=, q_out=, k_out=) are written in place, which autograd
    does not differentiate: refused when it needs to."""
    if needs_grad(*tensors):
        if given_outputs:
            raise RuntimeError(
                "norm_opt: out=, residual_out=, q_out= and k_out= are not "
                "differentiable: leave them out when an input requires grad "
                "(or call under torch.no_grad())")
        return True
    return not given_outputs and _is_compiling()


def row_norm(kind: str, input, addend, weight, bias, eps: float,
             alpha: float = 1.0, weight_offset: float = 0.0):
    """torch.ops.norm_opt.row_norm through autograd: (out, residual_out,
    mean, rstd)."""
    args = (input, addend, weight, bias, kind, float(eps), float(alpha),
            float(weight_offset))
    if not _HAVE_REGISTER_AUTOGRAD and needs_grad(input, addend, weight,
                                                  bias):
        return _RowNormFunction.apply(*args)
    return torch.ops.norm_opt.row_norm(*args)


def qk_norm(qkv, num_q_heads: int, num_kv_heads: int, q_weight, k_weight,
            eps: float, kind: str, weight_offset: float = 0.0):
    """torch.ops.norm_opt.qk_norm through autograd: (q, k, mean, rstd)."""
    args = (qkv, int(num_q_heads), int(num_kv_heads), q_weight, k_weight,
            float(eps), kind, float(weight_offset))
    if not _HAVE_REGISTER_AUTOGRAD and needs_grad(qkv, q_weight, k_weight):
        return _QKNormFunction.apply(*args)
    return torch.ops.norm_opt.qk_norm(*args)


#===------------------------------------------------------------------------===#
# Checks shared by the kernels and the shape functions
#===------------------------------------------------------------------------===#


def _row_kind(kind: str) -> int:
    if kind not in _ROW_KINDS:
        raise ValueError(f"kind: expected 'rms' or 'layer', got {kind!r}")
    return _ROW_KINDS[kind]


def _qk_kind(kind: str) -> Tuple[bool, bool]:
    if kind not in _QK_KINDS:
        raise ValueError(f"kind: expected 'rms', 'l2' or 'layer', got "
                         f"{kind!r}")
    return _QK_KINDS[kind]


def _hidden(tensor: torch.Tensor, name: str) -> int:
    if tensor.dim() == 0:
        raise ValueError(f"{name}: expected [..., hidden], got a scalar")
    return tensor.size(-1)


def _same_shape(a: torch.Tensor, b: Optional[torch.Tensor], names) -> None:
    if b is not None and tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{names[0]} and {names[1]} differ in shape: "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")


def _check_row_norm(input, addend, weight, bias, kind, alpha) -> int:
    """What row_norm's shape function can tell: kind, shapes, dtypes, alpha
    only with an addend. Returns the hidden size."""
    _row_kind(kind)
    hidden = _hidden(input, "input")
    _torch._dtype(input, "input")
    if addend is not None:
        _same_shape(input, addend, ("input", "addend"))
        _torch._dtype(addend, "addend")
    elif float(alpha) != 1.0:
        raise ValueError(f"alpha ({alpha}) scales the input of a sum: it "
                         "needs an addend")
    _torch._param_dtype(_torch._param(weight, hidden, "weight"),
                        _torch._param(bias, hidden, "bias"))
    return hidden


def _check_stats(stats: Optional[torch.Tensor], name: str, cols: int,
                 rows: int) -> None:
    if stats is None:
        raise ValueError(f"{name}: the saved statistics of the forward are "
                         "needed")
    if stats.dtype != torch.float32:
        raise TypeError(f"{name}: expected the float32 statistics the "
                        f"forward saved, got {stats.dtype}")
    if stats.dim() == 0 or stats.size(-1) != cols or (
            stats.numel() != rows * cols):
        raise ValueError(f"{name}: expected {rows} rows of {cols} saved "
                         f"statistics, got shape {tuple(stats.shape)}")


def _stats_buffer(stats: torch.Tensor, cols: int, name: str, keep,
                  column: int = 0, count: Optional[int] = None) -> Buffer:
    """The rows of saved statistics (columns column .. column + count of
    rows of `cols`) as a buffer."""
    t, _, stride = _torch._rows(stats, cols, name)
    keep.append(t)
    return Buffer(t.data_ptr() + 4 * column, _capi.F32,
                  cols if count is None else count, stride)


def _empty(like: torch.Tensor, dtype=None) -> torch.Tensor:
    return like.new_empty((0,), dtype=dtype or like.dtype)


#===------------------------------------------------------------------------===#
# Row norms
#===------------------------------------------------------------------------===#


def _row_norm_impl(input, addend, weight, bias, kind, eps, alpha=1.0,
                   weight_offset=0.0):
    # Defaults as in the schema: older torch passes only the given arguments.
    _check_row_norm(input, addend, weight, bias, kind, alpha)
    code = _row_kind(kind)
    if addend is None:
        call = _torch.prepare_row_norm(code, input, weight, bias, eps,
                                       weight_offset=weight_offset,
                                       save_stats=True)
    else:
        # The sum keeps the input's dtype (the residual stream), y takes
        # the addend's, as fused_add_rms_norm.
        call = _torch.prepare_row_norm(
            code, input, weight, bias, eps, addend=addend, alpha=alpha,
            out_dtype=addend.dtype, weight_offset=weight_offset,
            save_stats=True)
    outputs = list(_torch.run(call))
    out = outputs.pop(0)
    residual = outputs.pop(0) if addend is not None else _empty(input)
    mean = (outputs.pop(0) if code == _capi.OP_LAYER_NORM else
            _empty(input, torch.float32))
    return out, residual, mean, outputs.pop(0)


def _row_norm_fake(input, addend, weight, bias, kind, eps, alpha=1.0,
                   weight_offset=0.0):
    """Shapes only: out like input (in the addend's dtype where there is
    one), residual_out like input, mean and rstd [..., 1] float32."""
    _check_row_norm(input, addend, weight, bias, kind, alpha)
    stats = tuple(input.shape[:-1]) + (1,)
    out = input.new_empty(input.shape, dtype=(
        addend.dtype if addend is not None else input.dtype))
    residual = (input.new_empty(input.shape) if addend is not None else
                _empty(input))
    mean = (input.new_empty(stats, dtype=torch.float32) if kind == "layer"
            else _empty(input, torch.float32))
    return out, residual, mean, input.new_empty(stats, dtype=torch.float32)


def _row_backward_outputs(v, grad_out, grad_residual, weight, mean, rstd,
                          kind, alpha, addend_dtype, bias_dtype):
    """Checks of row_norm_backward's inputs and its fresh outputs:
    (hidden, rows, param dtype, grad_input, grad_addend, grad_weight,
    grad_bias)."""
    code = _row_kind(kind)
    hidden = _hidden(v, "v")
    _torch._dtype(v, "v")
    _torch._dtype(grad_out, "grad_out")
    _same_shape(v, grad_out, ("v", "grad_out"))
    if grad_residual is not None:
        if addend_dtype is None:
            raise ValueError("grad_residual: a residual stream's gradient "
                             "needs an addend (addend_dtype)")
        _same_shape(v, grad_residual, ("v", "grad_residual"))
        if grad_residual.dtype != v.dtype:
            raise TypeError(f"grad_residual is {grad_residual.dtype}, the "
                            f"residual stream {v.dtype}")
    if addend_dtype is None and float(alpha) != 1.0:
        raise ValueError(f"alpha ({alpha}) needs an addend (addend_dtype)")
    weight = _torch._param(weight, hidden, "weight")
    param_dtype = weight.dtype if weight is not None else bias_dtype
    if weight is not None and bias_dtype is not None and (
            bias_dtype != weight.dtype):
        raise TypeError("weight and bias must have one dtype, got "
                        f"{weight.dtype} and {bias_dtype}")
    for dtype, name in ((param_dtype, "weight"), (addend_dtype, "addend")):
        if dtype is not None and dtype not in _torch._DTYPES:
            raise TypeError(f"{name}: dtype {dtype} is not supported "
                            "(float32, float16, bfloat16)")
    rows = v.numel() // hidden if hidden else 0
    if code == _capi.OP_LAYER_NORM:
        _check_stats(mean, "mean", 1, rows)
    _check_stats(rstd, "rstd", 1, rows)
    grad_input = v.new_empty(v.shape)
    grad_addend = (v.new_empty(v.shape, dtype=addend_dtype)
                   if addend_dtype is not None and float(alpha) != 1.0 else
                   _empty(v))
    grad_weight = (v.new_empty((hidden,), dtype=param_dtype)
                   if weight is not None else _empty(v))
    grad_bias = (v.new_empty((hidden,), dtype=bias_dtype)
                 if bias_dtype is not None else _empty(v))
    return (hidden, rows, param_dtype, grad_input, grad_addend, grad_weight,
            grad_bias)


def _row_norm_backward_impl(v, grad_out, grad_residual, weight, mean, rstd,
                            kind, eps, alpha, weight_offset, addend_dtype,
                            bias_dtype):
    (hidden, rows, param_dtype, grad_input, grad_addend, grad_weight,
     grad_bias) = _row_backward_outputs(v, grad_out, grad_residual, weight,
                                        mean, rstd, kind, alpha, addend_dtype,
                                        bias_dtype)
    device = _torch._device(v, grad_out, grad_residual, weight, mean, rstd)
    dtypes = _torch._DTYPES
    # The forward this is the backward of: a residual stream output only
    # where its gradient is given (a post-norm's sum is not an output).
    flags = _capi.OP_SAVE_STATS
    flags |= _capi.OP_WEIGHT if weight is not None else 0
    flags |= _capi.OP_BIAS if bias_dtype is not None else 0
    if addend_dtype is not None:
        flags |= _capi.OP_ADDEND
        flags |= _capi.OP_RESIDUAL_OUT if grad_residual is not None else 0
    forward = OpDesc(
        kind=_row_kind(kind), hidden=hidden, input_type=dtypes[v.dtype],
        output_type=dtypes[grad_out.dtype],
        param_type=dtypes.get(param_dtype, _capi.BF16),
        addend_type=dtypes.get(addend_dtype, _capi.BF16), flags=flags,
        eps=float(eps), alpha=float(alpha) if addend_dtype is not None
        else 1.0, weight_offset=float(weight_offset))
    descs = get_backward_descs(device, forward)
    if len(descs) != 1:
        raise RuntimeError(f"libnormjit derived {len(descs)} backward "
                           "operations of a row norm, expected one")
    x, _, x_stride = _torch._rows(v, hidden, "v")
    g, _, g_stride = _torch._rows(grad_out, hidden, "grad_out")
    buffers = {_capi.INPUT: _torch._buffer(x, hidden, x_stride),
               _capi.GRAD_OUTPUT: _torch._buffer(g, hidden, g_stride)}
    keep = [x, g]
    if grad_residual is not None:
        r, _, r_stride = _torch._rows(grad_residual, hidden, "grad_residual")
        buffers[_capi.RESIDUAL_GRAD] = _torch._buffer(r, hidden, r_stride)
        keep.append(r)
    if weight is not None:
        weight = _torch._param(weight, hidden, "weight")
        buffers[_capi.WEIGHT] = _torch._buffer(weight, hidden)
        keep.append(weight)
    if kind == "layer":
        buffers[_capi.SAVED_MEAN] = _stats_buffer(mean, 1, "mean", keep)
    buffers[_capi.SAVED_RSTD] = _stats_buffer(rstd, 1, "rstd", keep)
    buffers[_capi.GRAD_INPUT] = _torch._buffer(grad_input, hidden, hidden)
    outputs = [grad_input]
    for slot, t in ((_capi.ADDEND_GRAD, grad_addend),
                    (_capi.WEIGHT_GRAD, grad_weight),
                    (_capi.BIAS_GRAD, grad_bias)):
        if t.numel():
            buffers[slot] = _torch._buffer(
                t, hidden, hidden if slot == _capi.ADDEND_GRAD else 0)
            outputs.append(t)
    _torch.run(_torch.Call(device, descs[0], _capi.make_launch_args(buffers),
                           rows, tuple(outputs), tuple(keep)))
    if rows == 0:  # sums over no rows; nothing was launched
        grad_weight.zero_()
        grad_bias.zero_()
    return grad_input, grad_addend, grad_weight, grad_bias


def _row_norm_backward_fake(v, grad_out, grad_residual, weight, mean, rstd,
                            kind, eps, alpha, weight_offset, addend_dtype,
                            bias_dtype):
    """Shapes only: grad_input like v, grad_addend like v in addend_dtype
    (alpha != 1; else empty: grad_input is the addend's gradient too),
    grad_weight and grad_bias [hidden] (empty without)."""
    return _row_backward_outputs(v, grad_out, grad_residual, weight, mean,
                                 rstd, kind, alpha, addend_dtype,
                                 bias_dtype)[3:]


#===------------------------------------------------------------------------===#
# QK-Norm
#===------------------------------------------------------------------------===#


def _qk_shape(qkv, num_q_heads, num_kv_heads, q_weight, k_weight, kind):
    """QK-Norm's checks from shapes and dtypes alone: (lead dims, head
    dim)."""
    _qk_kind(kind)
    heads = num_q_heads + 2 * num_kv_heads
    width = qkv.size(-1) if qkv.dim() else 0
    if num_q_heads <= 0 or num_kv_heads <= 0 or qkv.dim() == 0 or (
            width % heads):
        raise ValueError(f"qkv: a last dimension of {width} does not hold "
                         f"{num_q_heads} + 2 x {num_kv_heads} heads")
    head_dim = width // heads
    if (q_weight is None) != (k_weight is None):
        raise ValueError("give both q_weight and k_weight, or neither")
    _torch._dtype(qkv, "qkv")
    _torch._param_dtype(_torch._param(q_weight, head_dim, "q_weight"),
                        _torch._param(k_weight, head_dim, "k_weight"))
    return tuple(qkv.shape[:-1]), head_dim


def _qk_norm_impl(qkv, num_q_heads, num_kv_heads, q_weight, k_weight, eps,
                  kind, weight_offset=0.0):
    l2, layer = _qk_kind(kind)
    outputs = _torch.run(_torch.prepare_qk_norm(
        qkv, num_q_heads, num_kv_heads, q_weight, k_weight, eps, l2=l2,
        layer_norm=layer, weight_offset=weight_offset, save_stats=True))
    mean = outputs[2] if layer else _empty(qkv, torch.float32)
    return outputs[0], outputs[1], mean, outputs[-1]


def _qk_norm_fake(qkv, num_q_heads, num_kv_heads, q_weight, k_weight, eps,
                  kind, weight_offset=0.0):
    """Shapes only: q [..., Hq, D], k [..., Hkv, D], mean (LayerNorm heads;
    else empty) and rstd [..., Hq + Hkv] float32."""
    lead, d = _qk_shape(qkv, num_q_heads, num_kv_heads, q_weight, k_weight,
                        kind)
    stats = lead + (num_q_heads + num_kv_heads,)
    mean = (qkv.new_empty(stats, dtype=torch.float32) if kind == "layer" else
            _empty(qkv, torch.float32))
    return (qkv.new_empty(lead + (num_q_heads, d)),
            qkv.new_empty(lead + (num_kv_heads, d)), mean,
            qkv.new_empty(stats, dtype=torch.float32))


def _qk_backward_outputs(qkv, grad_q, grad_k, q_weight, k_weight, mean, rstd,
                         num_q_heads, num_kv_heads, kind):
    lead, d = _qk_shape(qkv, num_q_heads, num_kv_heads, q_weight, k_weight,
                        kind)
    for grad, heads, name in ((grad_q, num_q_heads, "grad_q"),
                              (grad_k, num_kv_heads, "grad_k")):
        if grad is not None:
            _torch._dtype(grad, name)
            if tuple(grad.shape) != lead + (heads, d):
                raise ValueError(f"{name}: expected shape "
                                 f"{lead + (heads, d)}, got "
                                 f"{tuple(grad.shape)}")
    if grad_q is not None and grad_k is not None and (
            grad_q.dtype != grad_k.dtype):
        raise TypeError(f"grad_q is {grad_q.dtype}, grad_k {grad_k.dtype}")
    tokens = qkv.numel() // qkv.size(-1) if qkv.size(-1) else 0
    heads = num_q_heads + num_kv_heads
    if kind == "layer":
        _check_stats(mean, "mean", heads, tokens)
    _check_stats(rstd, "rstd", heads, tokens)
    grad_qkv = qkv.new_empty(qkv.shape)
    grad_weights = tuple(
        w.new_empty((d,)) if w is not None else _empty(qkv)
        for w in (q_weight, k_weight))
    return (lead, d, tokens, grad_qkv) + grad_weights


def _qk_norm_backward_impl(qkv, grad_q, grad_k, q_weight, k_weight, mean,
                           rstd, num_q_heads, num_kv_heads, eps, kind,
                           weight_offset):
    lead, d, tokens, grad_qkv, grad_qw, grad_kw = _qk_backward_outputs(
        qkv, grad_q, grad_k, q_weight, k_weight, mean, rstd, num_q_heads,
        num_kv_heads, kind)
    device = _torch._device(qkv, grad_q, grad_k, q_weight, k_weight, mean,
                            rstd)
    dtypes = _torch._DTYPES
    given = grad_q if grad_q is not None else grad_k
    output_dtype = given.dtype if given is not None else qkv.dtype
    weighted = q_weight is not None
    forward = OpDesc(
        kind=_capi.OP_QK_NORM, hidden=d, input_type=dtypes[qkv.dtype],
        output_type=dtypes[output_dtype],
        param_type=dtypes[q_weight.dtype] if weighted else _capi.BF16,
        flags=_QK_FLAGS[kind] | _capi.OP_SAVE_STATS |
        (_capi.OP_WEIGHT if weighted else 0), eps=float(eps),
        weight_offset=float(weight_offset), num_q_heads=num_q_heads,
        num_kv_heads=num_kv_heads)
    descs = get_backward_descs(device, forward)
    if len(descs) != 2:
        raise RuntimeError(f"libnormjit derived {len(descs)} backward "
                           "operations of the QK-Norm prologue, expected two "
                           "(q heads, k heads)")
    width = qkv.size(-1)
    heads = num_q_heads + num_kv_heads
    x, _, x_stride = _torch._rows(qkv, width, "qkv")
    keep = [x]
    stats = {}
    if kind == "layer":
        stats[_capi.SAVED_MEAN] = (mean, "mean")
    stats[_capi.SAVED_RSTD] = (rstd, "rstd")
    flat = grad_qkv.view(-1, width)
    # v's columns get no gradient from the norm.
    flat[:, heads * d:].zero_()
    esize = qkv.element_size()
    column, head = 0, 0  # of qkv (and grad_qkv), of the statistics
    for desc, grad, weight, grad_weight, name in (
            (descs[0], grad_q, q_weight, grad_qw, "grad_q"),
            (descs[1], grad_k, k_weight, grad_kw, "grad_k")):
        # The derived desc gives the launch's row: its heads side by side.
        cols, groups = desc.hidden, desc.groups
        if grad is None or tokens == 0:
            flat[:, column:column + cols].zero_()
            grad_weight.zero_()
        else:
            g, _, g_stride = _torch._rows(grad.reshape(lead + (cols,)), cols,
                                          name)
            buffers = {
                _capi.INPUT: Buffer(x.data_ptr() + column * esize,
                                    dtypes[qkv.dtype], cols, x_stride),
                _capi.GRAD_OUTPUT: _torch._buffer(g, cols, g_stride),
                _capi.GRAD_INPUT: Buffer(grad_qkv.data_ptr() + column * esize,
                                         dtypes[qkv.dtype], cols, width),
            }
            launch_keep = keep + [g]
            for slot, (t, stat_name) in stats.items():
                buffers[slot] = _stats_buffer(t, heads, stat_name,
                                              launch_keep, head, groups)
            outputs = [grad_qkv]
            if weight is not None:
                weight = _torch._param(weight, d, name[5:] + "_weight")
                buffers[_capi.WEIGHT] = _torch._buffer(weight, d)
                buffers[_capi.WEIGHT_GRAD] = _torch._buffer(grad_weight, d)
                launch_keep.append(weight)
                outputs.append(grad_weight)
            _torch.run(_torch.Call(device, desc,
                                   _capi.make_launch_args(buffers), tokens,
                                   tuple(outputs), tuple(launch_keep)))
        column += cols
        head += groups
    return grad_qkv, grad_qw, grad_kw


def _qk_norm_backward_fake(qkv, grad_q, grad_k, q_weight, k_weight, mean,
                           rstd, num_q_heads, num_kv_heads, eps, kind,
                           weight_offset):
    """Shapes only: grad_qkv like qkv (zero in v's columns), the weights'
    gradients [head_dim] (empty without weights)."""
    return _qk_backward_outputs(qkv, grad_q, grad_k, q_weight, k_weight, mean,
                                rstd, num_q_heads, num_kv_heads, kind)[3:]


#===------------------------------------------------------------------------===#
# The ops
#===------------------------------------------------------------------------===#

_SCHEMAS = {
    # out = norm(alpha * input + addend) * (weight + weight_offset) + bias;
    # residual_out = alpha * input + addend (with an addend).
    "row_norm": (
        "row_norm(Tensor input, Tensor? addend, Tensor? weight, Tensor? bias, "
        "str kind, float eps, float alpha=1.0, float weight_offset=0.0) -> "
        "(Tensor, Tensor, Tensor, Tensor)",
        _row_norm_impl, _row_norm_fake),
    # From v (input, or residual_out with an addend) and the saved
    # statistics: grad_input = alpha dv, grad_addend = dv (alpha != 1),
    # grad_weight, grad_bias.
    "row_norm_backward": (
        "row_norm_backward(Tensor v, Tensor grad_out, Tensor? grad_residual, "
        "Tensor? weight, Tensor? mean, Tensor rstd, str kind, float eps, "
        "float alpha, float weight_offset, ScalarType? addend_dtype, "
        "ScalarType? bias_dtype) -> (Tensor, Tensor, Tensor, Tensor)",
        _row_norm_backward_impl, _row_norm_backward_fake),
    "qk_norm": (
        "qk_norm(Tensor qkv, int num_q_heads, int num_kv_heads, "
        "Tensor? q_weight, Tensor? k_weight, float eps, str kind, "
        "float weight_offset=0.0) -> (Tensor, Tensor, Tensor, Tensor)",
        _qk_norm_impl, _qk_norm_fake),
    "qk_norm_backward": (
        "qk_norm_backward(Tensor qkv, Tensor? grad_q, Tensor? grad_k, "
        "Tensor? q_weight, Tensor? k_weight, Tensor? mean, Tensor rstd, "
        "int num_q_heads, int num_kv_heads, float eps, str kind, "
        "float weight_offset) -> (Tensor, Tensor, Tensor)",
        _qk_norm_backward_impl, _qk_norm_backward_fake),
}
# Autograd is the Functions' below.
for _schema, _impl, _fake in _SCHEMAS.values():
    _torch._define_op(_schema, _impl, _fake)


#===------------------------------------------------------------------------===#
# Autograd
#===------------------------------------------------------------------------===#


def _row_norm_setup_context(ctx, inputs, output):
    input, addend, weight, bias, kind, eps, alpha, weight_offset = inputs
    _, residual, mean, rstd = output
    # The backward reads the row the forward normalized: the residual
    # stream it wrote, or its input.
    ctx.save_for_backward(residual if addend is not None else input, weight,
                          mean, rstd)
    ctx.norm_fields = (kind, eps, alpha, weight_offset,
                       None if addend is None else addend.dtype,
                       None if bias is None else bias.dtype)
    ctx.mark_non_differentiable(mean, rstd)


def _row_norm_backward(ctx, grad_out, grad_residual, _mean, _rstd):
    v, weight, mean, rstd = ctx.saved_tensors
    kind, eps, alpha, weight_offset, addend_dtype, bias_dtype = \
        ctx.norm_fields
    if grad_out is None:  # where torch does not materialize it
        grad_out = torch.zeros(v.shape, dtype=addend_dtype or v.dtype,
                               device=v.device)
    grad_input, grad_addend, grad_weight, grad_bias = (
        torch.ops.norm_opt.row_norm_backward(
            v, grad_out, grad_residual if addend_dtype is not None else None,
            weight, mean if kind == "layer" else None, rstd, kind, eps, alpha,
            weight_offset, addend_dtype, bias_dtype))
    if addend_dtype is None:
        grad_addend = None
    elif alpha == 1.0:  # dv is the gradient of both
        grad_addend = grad_input.to(addend_dtype)
    return (grad_input, grad_addend,
            grad_weight if weight is not None else None,
            grad_bias if bias_dtype is not None else None,
            None, None, None, None)


def _qk_norm_setup_context(ctx, inputs, output):
    (qkv, num_q_heads, num_kv_heads, q_weight, k_weight, eps, kind,
     weight_offset) = inputs
    _, _, mean, rstd = output
    ctx.save_for_backward(qkv, q_weight, k_weight, mean, rstd)
    ctx.norm_fields = (num_q_heads, num_kv_heads, eps, kind, weight_offset)
    ctx.mark_non_differentiable(mean, rstd)


def _qk_norm_backward(ctx, grad_q, grad_k, _mean, _rstd):
    qkv, q_weight, k_weight, mean, rstd = ctx.saved_tensors
    num_q_heads, num_kv_heads, eps, kind, weight_offset = ctx.norm_fields
    grad_qkv, grad_qw, grad_kw = torch.ops.norm_opt.qk_norm_backward(
        qkv, grad_q, grad_k, q_weight, k_weight,
        mean if kind == "layer" else None, rstd, num_q_heads, num_kv_heads,
        eps, kind, weight_offset)
    weighted = q_weight is not None
    return (grad_qkv, None, None, grad_qw if weighted else None,
            grad_kw if weighted else None, None, None, None)


def _autograd_function(op, setup_context, backward):
    """`op` with its backward as a torch.autograd.Function, for torch
    without torch.library.register_autograd (< 2.4)."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            output = op(*inputs)
            setup_context(ctx, inputs, output)
            return output

        @staticmethod
        def backward(ctx, *grads):
            return backward(ctx, *grads)

    return Function


_RowNormFunction = _autograd_function(torch.ops.norm_opt.row_norm,
                                      _row_norm_setup_context,
                                      _row_norm_backward)
_QKNormFunction = _autograd_function(torch.ops.norm_opt.qk_norm,
                                     _qk_norm_setup_context,
                                     _qk_norm_backward)


if _HAVE_REGISTER_AUTOGRAD:
    torch.library.register_autograd("norm_opt::row_norm", _row_norm_backward,
                                    setup_context=_row_norm_setup_context)
    torch.library.register_autograd("norm_opt::qk_norm", _qk_norm_backward,
                                    setup_context=_qk_norm_setup_context)
