"""The Triton anchor: single-pass kernels with one program per row, as in the
seed material (BLOCK = next_pow2(hidden), the whole row in registers, fp32
math, masked tails), one per operation of the benchmark, with the warps per
program of Triton's layer-norm tutorial; and the backward_bench.py anchor,
backward kernels in the style of Liger-Kernel (below: norm_backward,
qk_norm_backward), written for this benchmark."""

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


#===------------------------------------------------------------------------===#
# Backward (backward_bench.py): in the style of Liger-Kernel's norms, dx row
# by row and, per program, f32 partial sums of dweight (and dbias) that a
# torch sum over the programs reduces. Written for this benchmark.
#===------------------------------------------------------------------------===#


@triton.jit(do_not_specialize=["n_rows", "n_tiles", "tiles_per_program",
                               "heads"])
def _norm_backward(DY, X, W, MEAN, RSTD, DRES, DX, DWP, DBP, n_rows, n,
                   x_stride, dy_stride, dx_stride, res_stride, heads,
                   n_tiles, tiles_per_program, BLOCK: tl.constexpr,
                   ROWS: tl.constexpr, LAYER: tl.constexpr,
                   HAS_RES: tl.constexpr):
    """Rows of n elements, ROWS of them per tile, a run of tiles per program.
    Row r of x (and of dx) is head r % heads of token r // heads (heads 1:
    plain rows); dy, the residual gradient, rstd and mean are dense in r.
    dx = rstd (g - xhat mean(g xhat) [- mean(g)]) [+ dres], g = dy w;
    the program's sums of dy xhat (and dy) go to row program_id of DWP
    (DBP), f32."""
    pid = tl.program_id(0)
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    cmask = cols < n
    w = tl.load(W + cols, mask=cmask, other=0.0).to(tl.float32)
    dw = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    db = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    first = pid * tiles_per_program
    last = tl.minimum(first + tiles_per_program, n_tiles)
    for tile in range(first, last):
        r = tile * ROWS + rows
        rmask = r < n_rows
        mask = rmask[:, None] & cmask[None, :]
        head_row = (r // heads) * x_stride + (r % heads) * n
        x = tl.load(X + head_row[:, None] + cols[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        dy = tl.load(DY + (r * dy_stride)[:, None] + cols[None, :], mask=mask,
                     other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + r, mask=rmask, other=0.0)
        if LAYER:
            mean = tl.load(MEAN + r, mask=rmask, other=0.0)
            xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
        else:
            xhat = x * rstd[:, None]
        g = dy * w[None, :]
        c1 = tl.sum(g * xhat, axis=1) / n
        if LAYER:
            c2 = tl.sum(g, axis=1) / n
            dx = (g - xhat * c1[:, None] - c2[:, None]) * rstd[:, None]
            db += dy
        else:
            dx = (g - xhat * c1[:, None]) * rstd[:, None]
        if HAS_RES:
            dx += tl.load(DRES + (r * res_stride)[:, None] + cols[None, :],
                          mask=mask, other=0.0).to(tl.float32)
        tl.store(DX + ((r // heads) * dx_stride + (r % heads) * n)[:, None]
                 + cols[None, :], dx.to(DX.dtype.element_ty), mask=mask)
        dw += dy * xhat
    tl.store(DWP + pid * n + cols, tl.sum(dw, axis=0), mask=cmask)
    if LAYER:
        tl.store(DBP + pid * n + cols, tl.sum(db, axis=0), mask=cmask)


def backward_shape(n: int, rows: int, sms: int):
    """(BLOCK, ROWS per tile, warps, programs) of a backward over `rows`
    rows of n: whole rows in registers (BLOCK = next_pow2(n)), tiles of
    about 2048 elements for short rows, up to 16 warps, and a grid sized by
    the SM count as Liger-Kernel sizes it, with 32 warps per SM (at most 4
    programs; more than Liger's one, so that a program's row loads are not
    the only ones in flight on its SM)."""
    block = triton.next_power_of_2(n)
    tile_rows = max(1, min(16, 2048 // block))
    warps = min(max(block * tile_rows // 256, 1), 16)
    tiles = triton.cdiv(max(rows, 1), tile_rows)
    programs = max(1, min(tiles, sms * min(4, max(1, 32 // warps))))
    return block, tile_rows, warps, programs


def norm_backward_launch(dy, x, w, mean, rstd, dres, dx, dw_partials,
                         db_partials, rows, n, x_stride, dx_stride, heads,
                         sms, warm=False):
    """One launch of _norm_backward over `rows` rows (dw_partials and
    db_partials [programs, n] f32, backward_shape's programs)."""
    block, tile_rows, warps, programs = backward_shape(n, rows, sms)
    tiles = triton.cdiv(max(rows, 1), tile_rows)
    layer = mean is not None
    _launch(_norm_backward, (programs,),
            (dy, x, w, mean if layer else rstd, rstd,
             dres if dres is not None else dy, dx, dw_partials,
             db_partials if layer else dw_partials, rows, n, x_stride,
             n, dx_stride, n, heads, tiles, triton.cdiv(tiles, programs)),
            warm, BLOCK=block, ROWS=tile_rows, LAYER=layer,
            HAS_RES=dres is not None, num_warps=warps)


def norm_backward(dy, x, w, mean, rstd, dres, dx, dw_partials,
                  db_partials=None, sms=132):
    """dx, dweight (and dbias with mean given: LayerNorm) of rows x [R, n]
    (row stride x.stride(0); dy, dres and dx dense), rstd and mean [R] f32.
    Returns (dx, dw[, db]); dw and db are the partials summed over the
    programs in f32, in w's dtype."""
    rows, n = dy.shape
    norm_backward_launch(dy, x, w, mean, rstd, dres, dx, dw_partials,
                         db_partials, rows, n, x.stride(0), dx.stride(0), 1,
                         sms)
    dw = dw_partials.sum(0).to(w.dtype)
    if mean is None:
        return dx, dw
    return dx, dw, db_partials.sum(0).to(w.dtype)


def qk_norm_backward(qkv, dq, dk, qw, kw, q_rstd, k_rstd, q_heads, kv_heads,
                     dqkv, q_partials, k_partials, sms=132):
    """The QK-Norm prologue's backward (RMS, weights): dqkv [T, (Hq + 2 Hkv)
    D] (q's and k's columns; v's zeroed), dqw, dkw; dq [T, Hq, D], dk [T,
    Hkv, D] dense, q_rstd [T * Hq] and k_rstd [T * Hkv] f32. Two launches,
    each head a row."""
    tokens, d = qkv.shape[0], qw.shape[0]
    width = qkv.stride(0)
    dqkv[:, (q_heads + kv_heads) * d:].zero_()
    for grad, weight, rstd, partials, heads, column in (
            (dq, qw, q_rstd, q_partials, q_heads, 0),
            (dk, kw, k_rstd, k_partials, kv_heads, q_heads * d)):
        norm_backward_launch(grad, qkv[:, column:], weight, None, rstd, None,
                             dqkv[:, column:], partials, None,
                             tokens * heads, d, width, dqkv.stride(0), heads,
                             sms)
    return (dqkv, q_partials.sum(0).to(qw.dtype),
            k_partials.sum(0).to(kw.dtype))


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
