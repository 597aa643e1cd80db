"""Drop-in torch.nn modules on libnormjit's kernels, trainable.

    norm = norm_opt.nn.RMSNorm(4096, eps=1e-6, device="cuda", dtype=torch.bfloat16)
    norm.load_state_dict(torch_rms_norm.state_dict())   # a torch.nn.RMSNorm's
    y = norm(x)

RMSNorm and LayerNorm take torch.nn.RMSNorm's and torch.nn.LayerNorm's
constructor arguments and name their parameters as those do (`weight`,
`bias`), so their state dicts load both ways; FusedAddRMSNorm is the
pre-norm block's add + RMSNorm in one kernel. They normalize over the
trailing `normalized_shape` dimensions (flattened into one row) in float32
and return the input's dtype, forward and backward through norm_opt's
kernels (torch.ops.norm_opt.row_norm and row_norm_backward; weight and bias
gradients in the parameters' dtype, summed in float32 in a fixed order).

Nothing falls back to torch: CPU tensors, dtypes other than float32,
float16 and bfloat16, inputs whose trailing dimensions are not
normalized_shape and sizes libnormjit refuses (the backward of rows longer
than its kernels hold, NormJitError) raise.
"""

import numbers
from typing import Optional, Sequence, Tuple, Union

import torch

import norm_opt

__all__ = ["RMSNorm", "LayerNorm", "FusedAddRMSNorm"]

_Shape = Union[int, Sequence[int]]


def _as_shape(normalized_shape: _Shape) -> Tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    shape = tuple(int(size) for size in normalized_shape)
    if not shape or any(size <= 0 for size in shape):
        raise ValueError("normalized_shape: expected positive sizes, got "
                         f"{normalized_shape!r}")
    return shape


def _rows(module, input: torch.Tensor, name: str = "input") -> torch.Tensor:
    """input as [..., prod(normalized_shape)] rows (a view where its layout
    allows)."""
    shape = module.normalized_shape
    if input.dim() < len(shape) or (
            tuple(input.shape[input.dim() - len(shape):]) != shape):
        raise ValueError(f"{type(module).__name__}: {name} of shape "
                         f"{tuple(input.shape)} does not end in "
                         f"normalized_shape {shape}")
    if len(shape) == 1:
        return input
    return input.reshape(tuple(input.shape[:input.dim() - len(shape)]) +
                         (module._hidden,))


def _flat(param: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    return None if param is None else param.reshape(-1)


class _Norm(torch.nn.Module):
    def _init_shape(self, normalized_shape: _Shape) -> None:
        self.normalized_shape = _as_shape(normalized_shape)
        hidden = 1
        for size in self.normalized_shape:
            hidden *= size
        self._hidden = hidden

    def _parameter(self, factory, device, dtype):
        return torch.nn.Parameter(factory(self.normalized_shape,
                                          device=device, dtype=dtype))


class RMSNorm(_Norm):
    """torch.nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True,
    device=None, dtype=None) on norm_opt.rms_norm: y = x / sqrt(mean(x^2) +
    eps) * (weight + weight_offset) over the trailing normalized_shape; eps
    None is torch.finfo(x.dtype).eps at each call, as torch's.
    weight_offset (keyword, not torch's: 1.0 is Gemma's (1 + w), whose
    checkpoints store w) shifts the weight in the kernel; the weight still
    starts at ones, as torch's."""

    def __init__(self, normalized_shape: _Shape, eps: Optional[float] = None,
                 elementwise_affine: bool = True, device=None, dtype=None, *,
                 weight_offset: float = 0.0):
        super().__init__()
        self._init_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight_offset = float(weight_offset)
        if elementwise_affine:
            self.weight = self._parameter(torch.empty, device, dtype)
        else:
            if self.weight_offset:
                raise ValueError("weight_offset shifts a weight: it needs "
                                 "elementwise_affine=True")
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            torch.nn.init.ones_(self.weight)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        rows = _rows(self, input)
        return norm_opt.rms_norm(rows, _flat(self.weight), self.eps,
                                 weight_offset=self.weight_offset).view(
                                     input.shape)

    def extra_repr(self) -> str:
        text = (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
        return text + (f", weight_offset={self.weight_offset}"
                       if self.weight_offset else "")


class LayerNorm(_Norm):
    """torch.nn.LayerNorm(normalized_shape, eps=1e-5,
    elementwise_affine=True, bias=True, device=None, dtype=None) on
    norm_opt.layer_norm: (x - mean) / sqrt(var + eps) * weight + bias over
    the trailing normalized_shape."""

    def __init__(self, normalized_shape: _Shape, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self._init_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = self._parameter(torch.empty, device, dtype)
            if bias:
                self.bias = self._parameter(torch.empty, device, dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            torch.nn.init.ones_(self.weight)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        rows = _rows(self, input)
        return norm_opt.layer_norm(rows, _flat(self.weight),
                                   _flat(self.bias), self.eps).view(
                                       input.shape)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class FusedAddRMSNorm(RMSNorm):
    """A pre-norm block's residual add and RMSNorm in one kernel:
    forward(x, residual) -> (normed, new_residual), new_residual = alpha *
    residual + x (rounded to residual's dtype, as the unfused graph rounds
    it) and normed = rms_norm(new_residual) in x's dtype; alpha != 1 is
    DeepNorm's. Its parameter is RMSNorm's `weight` (state dicts of
    torch.nn.RMSNorm load)."""

    def __init__(self, normalized_shape: _Shape, eps: Optional[float] = None,
                 elementwise_affine: bool = True, device=None, dtype=None, *,
                 alpha: float = 1.0, weight_offset: float = 0.0):
        super().__init__(normalized_shape, eps, elementwise_affine, device,
                         dtype, weight_offset=weight_offset)
        self.alpha = float(alpha)

    def forward(self, x: torch.Tensor,
                residual: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        rows_x = _rows(self, x, "x")
        rows_r = _rows(self, residual, "residual")
        y, h = norm_opt.fused_add_rms_norm(
            rows_x, rows_r, _flat(self.weight), self.eps, alpha=self.alpha,
            weight_offset=self.weight_offset)
        return y.view(x.shape), h.view(residual.shape)

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text + (f", alpha={self.alpha}" if self.alpha != 1.0 else "")
