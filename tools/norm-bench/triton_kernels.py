"""The Triton anchor: single-pass kernels with one program per row, as in the
seed material (BLOCK = next_pow2(hidden), the whole row in registers, fp32
math, masked tails), one per operation of the benchmark."""

import triton
import triton.language as tl


@triton.jit
def _rms_norm(X, W, Y, x_stride, y_stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(X + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * y_stride + cols, (x * rstd * w).to(Y.dtype.element_ty),
             mask=mask)


@triton.jit
def _layer_norm(X, W, B, Y, x_stride, y_stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(X + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * y_stride + cols, (d * rstd * w + b).to(
        Y.dtype.element_ty), mask=mask)


@triton.jit
def _add_rms_norm(X, R, W, Y, H, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    offsets = row * stride + cols
    x = tl.load(X + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + offsets, mask=mask, other=0.0).to(tl.float32)
    h = (x + r).to(H.dtype.element_ty)  # rounded as torch's add rounds it
    tl.store(H + offsets, h, mask=mask)
    v = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + offsets, (v * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _qk_norm(QKV, QW, KW, Q, K, qkv_stride, q_heads, kv_heads, eps,
             D: tl.constexpr):
    program = tl.program_id(0)
    heads = q_heads + kv_heads
    token = program // heads
    head = program % heads
    cols = tl.arange(0, D)
    x = tl.load(QKV + token * qkv_stride + head * D + cols).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    if head < q_heads:
        w = tl.load(QW + cols).to(tl.float32)
        tl.store(Q + (token * q_heads + head) * D + cols,
                 (x * rstd * w).to(Q.dtype.element_ty))
    else:
        w = tl.load(KW + cols).to(tl.float32)
        tl.store(K + (token * kv_heads + head - q_heads) * D + cols,
                 (x * rstd * w).to(K.dtype.element_ty))


def rms_norm(x, w, eps, out):
    n = x.shape[-1]
    _rms_norm[(x.shape[0],)](x, w, out, x.stride(0), out.stride(0), n, eps,
                             BLOCK=triton.next_power_of_2(n))
    return out


def layer_norm(x, w, b, eps, out):
    n = x.shape[-1]
    _layer_norm[(x.shape[0],)](x, w, b, out, x.stride(0), out.stride(0), n,
                               eps, BLOCK=triton.next_power_of_2(n))
    return out


def add_rms_norm(x, r, w, eps, out, residual_out):
    n = x.shape[-1]
    _add_rms_norm[(x.shape[0],)](x, r, w, out, residual_out, x.stride(0), n,
                                 eps, BLOCK=triton.next_power_of_2(n))
    return out, residual_out


def qk_norm(qkv, qw, kw, q_heads, kv_heads, eps, q, k):
    tokens = qkv.shape[0]
    d = q.shape[-1]
    _qk_norm[(tokens * (q_heads + kv_heads),)](
        qkv, qw, kw, q, k, qkv.stride(0), q_heads, kv_heads, eps, D=d)
    return q, k


def version() -> str:
    return triton.__version__


__all__ = ["rms_norm", "layer_norm", "add_rms_norm", "qk_norm", "version"]
