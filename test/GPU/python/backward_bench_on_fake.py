"""backward_bench.py's control flow without a GPU: host torch stands in for
CUDA (bench_on_fake.py's stand-ins), on small shapes. libnormjit is not
used: "ours" is a stand-in of norm_opt's training ops (torch.ops.norm_opt.
row_norm, row_norm_backward, qk_norm, qk_norm_backward, called with the
arguments backward_bench.py passes, which it first checks against the
schemas norm_opt registers) that returns backward_bench.py's float64
reference rounded to bf16, and refuses (NORMJIT_ERROR_UNSUPPORTED, as
libnormjit refuses rows that do not fit) row norms wider than 64; the
Triton anchor is a stand-in in torch (f32, per-program partial sums into
the benchmark's buffers). So every check passes and every later step runs:
the float64 checks of every implementation (the eager anchor's HF
RMSNorm, LayerNorm, the fused add, per-head QK-Norm among them), the
refusals, the timings, the torch.compile pass, the JSON and the tables.
With --unwritten our gradients are all NaN (what an unwritten, poisoned
output reads); with --drop-mean our dx lacks its projection term (dx =
rstd dy w): the float64 checks fail, our points are not timed and the run
fails. Times mean nothing.

    python3 backward_bench_on_fake.py [--unwritten | --drop-mean] ARGS
"""

import sys
import types

import torch
import torch.nn.functional as F

import bench_on_fake

REFUSE_ABOVE = 64


def rstd_of(torch, v, layer):
    v = v.float()
    d = v - v.mean(-1, keepdim=True) if layer else v
    return torch.rsqrt(d.pow(2).mean(-1, keepdim=True) + 1e-6)


def fake_ops(bench, mutation):
    """norm_opt's training ops as the schemas describe them, computed by
    backward_bench's float64 reference."""
    from norm_opt import NormJitError

    def out(t, like):
        if mutation == "--unwritten":
            return torch.full(like.shape, float("nan"), dtype=like.dtype)
        return t.to(like.dtype)

    def row_norm(input, addend, weight, bias, kind, eps, alpha=1.0,
                 weight_offset=0.0):
        assert alpha == 1.0 and weight_offset == 0.0
        v = input if addend is None else input + addend
        rstd = rstd_of(torch, v, kind == "layer")
        mean = (v.float().mean(-1, keepdim=True) if kind == "layer"
                else torch.empty(0))
        y = F.layer_norm(v.float(), (v.shape[-1],), weight.float(), None if
                         bias is None else bias.float(), eps) \
            if kind == "layer" else v.float() * rstd * weight.float()
        return (y.to(v.dtype), v if addend is not None else torch.empty(0),
                mean, rstd)

    def row_norm_backward(v, grad_out, grad_residual, weight, mean, rstd, kind,
                          eps, alpha, weight_offset, addend_dtype, bias_dtype):
        assert rstd.dtype == torch.float32 and rstd.shape == v.shape[:-1] + (1,)
        assert (mean is not None) == (kind == "layer")
        assert (addend_dtype is not None) == (grad_residual is not None)
        if v.shape[-1] > REFUSE_ABOVE:
            raise NormJitError(3, "NORMJIT_ERROR_UNSUPPORTED",
                               f"a backward row of {v.shape[-1]} bf16 "
                               "elements does not fit the registers (fake)")
        dv, dw, db = bench.row_reference(torch, F, kind, v, weight, grad_out,
                                         grad_residual)
        if mutation == "--drop-mean":
            dv = rstd.double() * grad_out.double() * weight.double()
        return (out(dv, v), torch.empty(0), out(dw, weight),
                out(db, weight) if bias_dtype is not None else torch.empty(0))

    def qk_norm(qkv, num_q_heads, num_kv_heads, q_weight, k_weight, eps, kind,
                weight_offset=0.0):
        q, k = bench.qk_parts(qkv, num_q_heads, num_kv_heads,
                              q_weight.shape[0])
        rstd = torch.cat((rstd_of(torch, q, False), rstd_of(torch, k, False)),
                         1)[..., 0]
        return q * 1, k * 1, torch.empty(0), rstd

    def qk_norm_backward(qkv, grad_q, grad_k, q_weight, k_weight, mean, rstd,
                         num_q_heads, num_kv_heads, eps, kind, weight_offset):
        assert rstd.shape == (qkv.shape[0], num_q_heads + num_kv_heads)
        grads, _ = bench.qk_reference(torch, qkv, q_weight, k_weight, grad_q,
                                      grad_k, num_q_heads, num_kv_heads)
        return (out(grads["dqkv"], qkv), out(grads["dqw"], q_weight),
                out(grads["dkw"], k_weight))

    return types.SimpleNamespace(
        row_norm=row_norm, row_norm_backward=row_norm_backward,
        qk_norm=qk_norm, qk_norm_backward=qk_norm_backward)


def fake_triton():
    """triton_kernels' backward API in torch: f32 math, the rows split over
    `programs` programs, each writing its row of the partial sums."""
    module = types.ModuleType("triton_kernels")

    def backward_shape(n, rows, sms):
        return n, 1, 4, max(1, min(rows, 5))

    def rows_backward(dy, x, w, mean, rstd, dres, dx, dw_partials,
                      db_partials):
        x, dy, w = x.float(), dy.float(), w.float()
        xhat = ((x - mean[:, None]) if mean is not None else x) * rstd[:, None]
        g = dy * w
        c = (g * xhat).mean(-1, keepdim=True)
        grad = g - xhat * c
        if mean is not None:
            grad = grad - g.mean(-1, keepdim=True)
        grad = grad * rstd[:, None]
        if dres is not None:
            grad = grad + dres.float()
        dx.copy_(grad.reshape(dx.shape))
        programs = dw_partials.shape[0]
        per = -(-x.shape[0] // programs)
        for p in range(programs):
            part = slice(p * per, (p + 1) * per)
            dw_partials[p] = (dy[part] * xhat[part]).sum(0)
            if db_partials is not None:
                db_partials[p] = dy[part].sum(0)

    def norm_backward(dy, x, w, mean, rstd, dres, dx, dw_partials,
                      db_partials=None, sms=132):
        rows_backward(dy, x, w, mean, rstd, dres, dx, dw_partials,
                      db_partials)
        dw = dw_partials.sum(0).to(w.dtype)
        if mean is None:
            return dx, dw
        return dx, dw, db_partials.sum(0).to(w.dtype)

    def qk_norm_backward(qkv, dq, dk, qw, kw, q_rstd, k_rstd, q_heads,
                         kv_heads, dqkv, q_partials, k_partials, sms=132):
        t, d = qkv.shape[0], qw.shape[0]
        dqkv[:, (q_heads + kv_heads) * d:].zero_()
        column = 0
        for grad, w, rstd, partials, heads in (
                (dq, qw, q_rstd, q_partials, q_heads),
                (dk, kw, k_rstd, k_partials, kv_heads)):
            x = qkv[:, column:column + heads * d].reshape(-1, d)
            out = torch.empty(t * heads, d, dtype=dqkv.dtype)
            rows_backward(grad.reshape(-1, d), x, w, None, rstd, None, out,
                          partials, None)
            dqkv[:, column:column + heads * d] = out.reshape(t, -1)
            column += heads * d
        return dqkv, q_partials.sum(0).to(qw.dtype), k_partials.sum(0).to(
            kw.dtype)

    module.backward_shape = backward_shape
    module.norm_backward = norm_backward
    module.qk_norm_backward = qk_norm_backward
    return module


def main():
    mutation = next((a for a in sys.argv[1:]
                     if a in ("--unwritten", "--drop-mean")), None)
    argv = [a for a in sys.argv[1:] if a != mutation]
    bench_on_fake.fake_cuda()
    for name in ("tensor", "arange"):
        setattr(torch, name, bench_on_fake.on_host(getattr(torch, name)))
    bench_on_fake.use_tools()
    sys.modules["triton_kernels"] = fake_triton()
    import backward_bench
    # The real schemas (norm_opt registers them at import) are checked by
    # the benchmark; the stand-in computes.
    backward_bench.training_ops = lambda torch: fake_ops(backward_bench,
                                                         mutation)
    backward_bench.CHECK_ROWS = 45
    backward_bench.CHECK_TOKENS = 5
    return backward_bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
