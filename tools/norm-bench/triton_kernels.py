"""The Triton anchor: single-pass kernels with one program per row, as in the
seed material (BLOCK = next_pow2(hidden), the whole row in registers, fp32
math, masked tails), one per operation of the benchmark, with the warps per
program of Triton's layer-norm tutorial."""

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
def _add_norm(X, R, W, B, Y, H, stride, n, eps, BLOCK: tl.constexpr,
              LAYER: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    offsets = row * stride + cols
    x = tl.load(X + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + offsets, mask=mask, other=0.0).to(tl.float32)
    h = (x + r).to(H.dtype.element_ty)  # rounded as torch's add rounds it
    tl.store(H + offsets, h, mask=mask)
    v = h.to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    if LAYER:
        mean = tl.sum(v, axis=0) / n
        d = tl.where(mask, v - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
        b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
        y = d * rstd * w + b
    else:
        rstd = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n + eps)
        y = v * rstd * w
    tl.store(Y + offsets, y.to(Y.dtype.element_ty), mask=mask)


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


def _warps(block: int) -> int:
    """The warps of Triton's layer-norm tutorial: a 16 KiB row in registers
    needs more than the default four."""
    return min(max(block // 256, 1), 8)


def _launch(kernel, grid, args, warm, **constexprs):
    """Launches, or with `warm` only compiles into Triton's cache."""
    if not warm:
        return kernel[grid](*args, **constexprs)
    if hasattr(kernel, "warmup"):
        return kernel.warmup(*args, grid=grid, **constexprs)
    return kernel.run(*args, grid=grid, warmup=True, **constexprs)


def rms_norm(x, w, eps, out, warm=False):
    n = x.shape[-1]
    block = triton.next_power_of_2(n)
    _launch(_rms_norm, (x.shape[0],), (x, w, out, x.stride(0), out.stride(0),
                                      n, eps), warm, BLOCK=block,
            num_warps=_warps(block))
    return out


def layer_norm(x, w, b, eps, out, warm=False):
    n = x.shape[-1]
    block = triton.next_power_of_2(n)
    _launch(_layer_norm, (x.shape[0],), (x, w, b, out, x.stride(0),
                                        out.stride(0), n, eps), warm,
            BLOCK=block, num_warps=_warps(block))
    return out


def add_norm(x, r, w, b, eps, out, residual_out, warm=False):
    """h = x + r, then RMSNorm (b None) or LayerNorm of h."""
    n = x.shape[-1]
    block = triton.next_power_of_2(n)
    layer = b is not None
    _launch(_add_norm, (x.shape[0],), (x, r, w, b if layer else w, out,
                                      residual_out, x.stride(0), n, eps),
            warm, BLOCK=block, LAYER=layer, num_warps=_warps(block))
    return out, residual_out


def qk_norm(qkv, qw, kw, q_heads, kv_heads, eps, q, k, warm=False):
    tokens, d = qkv.shape[0], q.shape[-1]
    _launch(_qk_norm, (tokens * (q_heads + kv_heads),),
            (qkv, qw, kw, q, k, qkv.stride(0), q_heads, kv_heads, eps), warm,
            D=d, num_warps=_warps(d))
    return q, k


def version() -> str:
    return triton.__version__


def warm(spec: str, eps: float) -> None:
    """Compiles the kernel of `op:dtype:hidden[:q_heads:kv_heads]` for the
    arguments the benchmark passes (same strides, so the same
    specialization), on one-row tensors."""
    import torch
    op, dtype, hidden, *heads = spec.split(":")
    h = int(hidden)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]

    def empty(*shape):
        return torch.empty(*shape, dtype=dtype, device="cuda")

    if op == "qk":
        hq, hkv = map(int, heads)
        qk_norm(empty(1, (hq + 2 * hkv) * h), empty(h), empty(h), hq, hkv, eps,
                empty(1, hq, h), empty(1, hkv, h), warm=True)
    elif op == "rms":
        rms_norm(empty(1, h), empty(h), eps, empty(1, h), warm=True)
    elif op == "layer":
        layer_norm(empty(1, h), empty(h), empty(h), eps, empty(1, h), warm=True)
    elif op in ("add_rms", "add_layer"):
        add_norm(empty(1, h), empty(1, h), empty(h),
                 empty(h) if op == "add_layer" else None, eps, empty(1, h),
                 empty(1, h), warm=True)
    else:
        raise ValueError(f"unknown operation '{op}'")


if __name__ == "__main__":
    # triton_kernels.py --warm EPS SPEC...: fills Triton's cache.
    import sys
    if len(sys.argv) < 3 or sys.argv[1] != "--warm":
        sys.exit("usage: triton_kernels.py --warm EPS op:dtype:hidden[:hq:hkv]...")
    for spec in sys.argv[3:]:
        warm(spec, float(sys.argv[2]))
