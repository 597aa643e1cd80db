"""norm_opt's training path on a GPU: forward and backward of the row norms,
fused add + norm (DeepNorm's alpha, Gemma's offset), weightless norms and
QK-Norm per head, through autograd and through norm_opt.nn's modules,
against float64 references (autograd in float64 at the kernels' own
rounding points) and against torch autograd of the unfused graph.

Tolerances are per dtype (|got - round(want)| <= tol * (1 + |round(want)|),
tol twice test_torch.py's for gradients, which round twice; four times
against torch, whose own roundings differ); NaN never passes. The outputs
the ops allocate are poisoned through the caching allocator: before each
case the blocks they will get are filled with NaN and freed, so an element
a kernel does not write stays NaN. Heuristic kernels (tuning off).

Environment: NORMJIT_LIBRARY (libnormjit.so with its compiler);
NORM_REQUIRE_GPU=1 fails instead of skipping without torch or a device.
"""

import os
import unittest

try:
    import torch
    import torch.nn.functional as F
    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # the suite is skipped
    torch = None
    HAVE_CUDA = False

import norm_opt
if torch is not None:
    import norm_opt.nn  # noqa: F401
    # The training ops' tests that need no device run here too (the device
    # run has the torch their compile test is for).
    from test_torch_train_ops import (AutogradTest, CompileTest,  # noqa: F401
                                      ModuleTest, SchemaTest)

if os.environ.get("NORM_REQUIRE_GPU") == "1" and not HAVE_CUDA:
    raise SystemExit("test_torch_train.py: NORM_REQUIRE_GPU=1, but torch or a "
                     "CUDA device is missing")

TOLERANCE = {"torch.bfloat16": 1 / 128, "torch.float16": 1 / 1024,
             "torch.float32": 2e-5}
SEED = int(os.environ.get("NORM_TEST_SEED", "1234"))
# 12288 and 16384: rows staged in shared memory by the backward.
HIDDEN = (768, 1000, 4096, 5120, 8192, 12288, 16384)
ROWS = (1, 7, 4096)


def poison(*specs):
    """Fills with NaN, then frees, blocks of each (shape, dtype): the
    caching allocator hands them to the next allocations of those sizes."""
    blocks = [torch.full(shape, float("nan"), dtype=dtype, device="cuda")
              for shape, dtype in specs for _ in range(2)]
    del blocks


@unittest.skipUnless(HAVE_CUDA, "needs torch and a CUDA device")
class TrainCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        norm_opt.configure(tuning=False)

    @classmethod
    def tearDownClass(cls):
        norm_opt.configure(tuning=True)

    def setUp(self):
        torch.manual_seed(SEED)

    def rand(self, *shape, dtype=torch.bfloat16, scale=2.0, grad=True):
        t = ((torch.rand(*shape, device="cuda", dtype=torch.float64) * 2 - 1)
             * scale).to(dtype)
        return t.requires_grad_(grad)

    def assertClose(self, got, want64, name, factor=1.0):
        """|got - round(want)| <= factor * tol * (1 + |round(want)|); NaN
        never passes."""
        self.assertEqual(tuple(got.shape), tuple(want64.shape), name)
        want = want64.to(got.dtype).double()
        error = (got.double() - want).abs()
        limit = factor * TOLERANCE[str(got.dtype)] * (1 + want.abs())
        bad = ~(error <= limit)
        if bad.any():
            index = tuple(int(i) for i in bad.nonzero()[0])
            self.fail(f"{name}: {int(bad.sum())} of {got.numel()} elements "
                      f"off, first at {index}: got {got[index].item()}, "
                      f"expected {want[index].item()}")


def rms64(v, w, eps, offset=0.0):
    y = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)
    return y * (w + offset) if w is not None else y


def layer64(v, w, b, eps):
    mean = v.mean(-1, keepdim=True)
    y = (v - mean) * torch.rsqrt((v - mean).pow(2).mean(-1, keepdim=True)
                                 + eps)
    if w is not None:
        y = y * w
    return y + b if b is not None else y


def grads64(function, inputs, grads):
    """Gradients of function(*inputs in float64) wrt the inputs (None ones
    skipped), the output gradients in float64."""
    leaves = [None if t is None else t.detach().double().requires_grad_()
              for t in inputs]
    outs = function(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    present = [t for t in leaves if t is not None]
    got = torch.autograd.grad(outs, present, [g.double() for g in grads])
    it = iter(got)
    return [None if t is None else next(it) for t in leaves], [
        o.detach() for o in outs]


class RowNormTest(TrainCase):
    def check(self, kind, dtype, hidden, rows, weight=True, bias=False,
              offset=0.0):
        eps = 1e-6 if kind == "rms" else 1e-5
        x = self.rand(rows, hidden, dtype=dtype)
        w = self.rand(hidden, dtype=dtype) if weight else None
        b = self.rand(hidden, dtype=dtype) if bias else None
        g = self.rand(rows, hidden, dtype=dtype, scale=1.0, grad=False)
        poison(((rows, hidden), dtype), ((hidden,), dtype))
        if kind == "rms":
            y = norm_opt.rms_norm(x, w, eps, weight_offset=offset)
            reference = lambda x, w: rms64(x, w, eps, offset)
            torch_y = lambda x, w: F.rms_norm(x, (hidden,), None if w is None
                                              else w + offset, eps)
        else:
            y = norm_opt.layer_norm(x, w, b, eps)
            reference = lambda x, w, b: layer64(x, w, b, eps)
            torch_y = lambda x, w, b: F.layer_norm(x, (hidden,), w, b, eps)
        inputs = [x, w] + ([b] if kind == "layer" else [])
        wanted = [t for t in inputs if t is not None]
        got = torch.autograd.grad(y, wanted, g)
        want, (y64,) = grads64(reference, inputs, [g])
        self.assertClose(y, y64, "y")
        want = [t for t in want if t is not None]
        for name, a, e in zip(("dx", "dw", "db"), got, want):
            self.assertClose(a, e, name, factor=2)
        # torch autograd of the unfused graph, in the input dtype.
        torch_inputs = [None if t is None else t.detach().requires_grad_()
                        for t in inputs]
        torch_out = torch_y(*torch_inputs)
        torch_got = torch.autograd.grad(torch_out, [
            t for t in torch_inputs if t is not None], g)
        self.assertClose(y, torch_out.double(), "y vs torch", factor=4)
        for name, a, e in zip(("dx", "dw", "db"), got, torch_got):
            self.assertClose(a, e.double(), name + " vs torch", factor=4)

    def test_rms_norm(self):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            for hidden in HIDDEN:
                if dtype == torch.float32 and hidden in (5120, 12288):
                    continue  # f32: registers (4096) and staged (16384)
                for rows in ROWS:
                    with self.subTest(dtype=dtype, hidden=hidden, rows=rows):
                        self.check("rms", dtype, hidden, rows)

    def test_rms_norm_gemma_offset_and_weightless(self):
        for hidden in (768, 4096):
            for rows in (7, 4096):
                with self.subTest(hidden=hidden, rows=rows, gemma=True):
                    self.check("rms", torch.bfloat16, hidden, rows,
                               offset=1.0)
                with self.subTest(hidden=hidden, rows=rows, weight=False):
                    self.check("rms", torch.bfloat16, hidden, rows,
                               weight=False)

    def test_layer_norm(self):
        for dtype in (torch.bfloat16, torch.float16):
            for hidden in HIDDEN:
                for rows in ROWS:
                    with self.subTest(dtype=dtype, hidden=hidden, rows=rows):
                        self.check("layer", dtype, hidden, rows, bias=True)
        for rows in (1, 4096):
            with self.subTest(dtype=torch.float32, rows=rows):
                self.check("layer", torch.float32, 1000, rows, bias=True)
            with self.subTest(affine="none", rows=rows):
                self.check("layer", torch.bfloat16, 5120, rows, weight=False)

    def check_fused_add(self, dtype, residual_dtype, hidden, rows, alpha,
                        offset=0.0):
        eps = 1e-6
        x = self.rand(rows, hidden, dtype=dtype)
        r = self.rand(rows, hidden, dtype=residual_dtype)
        w = self.rand(hidden, dtype=dtype)
        gy = self.rand(rows, hidden, dtype=dtype, scale=1.0, grad=False)
        gh = self.rand(rows, hidden, dtype=residual_dtype, scale=1.0,
                       grad=False)
        poison(((rows, hidden), dtype), ((rows, hidden), residual_dtype),
               ((hidden,), dtype))
        y, h = norm_opt.fused_add_rms_norm(x, r, w, eps, alpha=alpha,
                                           weight_offset=offset)
        dx, dr, dw = torch.autograd.grad((y, h), (x, r, w), (gy, gh))
        # h as the kernel's prologue rounds it: f32(alpha * r) + x, rounded
        # (alpha 1: torch's own add, bit for bit).
        h_want = r.detach().float() * alpha + x.detach().float()
        if alpha == 1.0:
            self.assertTrue(torch.equal(h.detach(), h_want.to(residual_dtype)),
                            "residual differs from x + residual")
        self.assertClose(h.detach(), h_want.double(), "residual")
        # The norm's gradient at the h the kernel wrote, plus h's own.
        v = h.detach().double().requires_grad_()
        w64 = w.detach().double().requires_grad_()
        y64 = rms64(v, w64, eps, offset)
        dv, dw64 = torch.autograd.grad(y64, (v, w64), gy.double())
        dv = dv + gh.double()
        self.assertClose(y, y64.detach(), "y")
        self.assertClose(dr, alpha * dv, "d residual", factor=2)
        self.assertClose(dx, dv, "dx", factor=2)
        self.assertClose(dw, dw64, "dw", factor=2)
        # torch autograd of add then norm.
        tx, tr, tw = (t.detach().requires_grad_() for t in (x, r, w))
        th = (tr * alpha + tx).to(residual_dtype)
        ty = F.rms_norm(th.to(dtype), (hidden,), tw + offset, eps)
        tdx, tdr, tdw = torch.autograd.grad((ty, th), (tx, tr, tw), (gy, gh))
        self.assertClose(dx, tdx.double(), "dx vs torch", factor=4)
        self.assertClose(dr, tdr.double(), "dr vs torch", factor=4)
        self.assertClose(dw, tdw.double(), "dw vs torch", factor=4)

    def test_fused_add_rms_norm(self):
        for hidden in HIDDEN:
            for rows in ROWS:
                with self.subTest(hidden=hidden, rows=rows):
                    self.check_fused_add(torch.bfloat16, torch.bfloat16,
                                         hidden, rows, 1.0)

    def test_deepnorm_alpha_f32_residual_gemma(self):
        for hidden in (1000, 4096):
            for rows in (7, 4096):
                with self.subTest(hidden=hidden, rows=rows):
                    self.check_fused_add(torch.bfloat16, torch.float32,
                                         hidden, rows, 1.75)
                    self.check_fused_add(torch.float16, torch.float16, hidden,
                                         rows, 2.0 ** 0.25, offset=1.0)

    def test_deterministic(self):
        # The weight gradient's sums run in a fixed order: the same bits.
        x, w = self.rand(4096, 4096), self.rand(4096)
        g = self.rand(4096, 4096, scale=1.0, grad=False)
        first = torch.autograd.grad(norm_opt.rms_norm(x, w), (x, w), g)
        second = torch.autograd.grad(norm_opt.rms_norm(x, w), (x, w), g)
        for a, b in zip(first, second):
            self.assertTrue(torch.equal(a.view(torch.int16),
                                        b.view(torch.int16)))


class QKNormTest(TrainCase):
    def check(self, dtype, hq, hkv, d, tokens, kind="rms", offset=0.0,
              weights=True, extra=0):
        width = (hq + 2 * hkv) * d
        base = self.rand(tokens, width + extra, dtype=dtype)
        qkv = base[:, :width]
        qw = self.rand(d, dtype=dtype) if weights else None
        kw = self.rand(d, dtype=dtype) if weights else None
        gq = self.rand(tokens, hq, d, dtype=dtype, scale=1.0, grad=False)
        gk = self.rand(tokens, hkv, d, dtype=dtype, scale=1.0, grad=False)
        poison(((tokens, width), dtype), ((d,), dtype))
        q, k = norm_opt.qk_norm(qkv, hq, hkv, qw, kw, 1e-6,
                                l2=kind == "l2", layer_norm=kind == "layer",
                                weight_offset=offset)
        wanted = [base] + ([qw, kw] if weights else [])
        got = torch.autograd.grad((q, k), wanted, (gq, gk))

        def reference(qkv, qw, kw):
            heads = qkv[:, :width].reshape(tokens, hq + 2 * hkv, d)
            def norm(x, w):
                if kind == "l2":
                    y = x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + 1e-6)
                elif kind == "layer":
                    c = x - x.mean(-1, keepdim=True)
                    y = c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) +
                                        1e-6)
                else:
                    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
                                        1e-6)
                return y * (w + offset) if w is not None else y
            return (norm(heads[:, :hq], qw),
                    norm(heads[:, hq:hq + hkv], kw))

        want, (q64, k64) = grads64(reference, [base, qw, kw], [gq, gk])
        self.assertClose(q, q64, "q")
        self.assertClose(k, k64, "k")
        self.assertClose(got[0], want[0], "d qkv", factor=2)
        self.assertTrue(bool((got[0][:, (hq + hkv) * d:] == 0).all()),
                        "v's columns (and past the view) got a gradient")
        if weights:
            self.assertClose(got[1], want[1], "d q_weight", factor=2)
            self.assertClose(got[2], want[2], "d k_weight", factor=2)

    def test_per_head(self):
        for dtype in (torch.bfloat16, torch.float16):
            for heads in ((32, 8, 128), (16, 16, 64), (8, 1, 256)):
                for tokens in (1, 7, 4096):
                    with self.subTest(dtype=dtype, heads=heads, tokens=tokens):
                        self.check(dtype, *heads, tokens)

    def test_gemma3_layer_l2_weightless_strided(self):
        self.check(torch.bfloat16, 4, 1, 256, 37, offset=1.0)
        self.check(torch.bfloat16, 12, 12, 64, 41, kind="layer")
        self.check(torch.bfloat16, 4, 2, 64, 50, kind="l2", weights=False)
        self.check(torch.bfloat16, 32, 8, 128, 100, extra=256)


class ModuleGpuTest(TrainCase):
    def test_modules_train_like_torchs(self):
        hidden = 4096
        ours = norm_opt.nn.RMSNorm(hidden, eps=1e-6, device="cuda",
                                   dtype=torch.bfloat16)
        ref = norm_opt.nn.LayerNorm(hidden, device="cuda",
                                    dtype=torch.bfloat16)
        torch_ln = torch.nn.LayerNorm(hidden, device="cuda",
                                      dtype=torch.bfloat16)
        with torch.no_grad():
            torch_ln.weight.normal_()
            torch_ln.bias.normal_()
        ref.load_state_dict(torch_ln.state_dict())
        x = self.rand(3, 7, hidden)
        g = self.rand(3, 7, hidden, scale=1.0, grad=False)
        ref(x).backward(g)
        xt = x.detach().requires_grad_()
        torch_ln(xt).backward(g)
        self.assertClose(x.grad, xt.grad.double(), "dx vs LayerNorm",
                         factor=4)
        self.assertClose(ref.weight.grad, torch_ln.weight.grad.double(),
                         "dw vs LayerNorm", factor=4)
        self.assertClose(ref.bias.grad, torch_ln.bias.grad.double(),
                         "db vs LayerNorm", factor=4)
        if hasattr(torch.nn, "RMSNorm"):
            torch_rms = torch.nn.RMSNorm(hidden, eps=1e-6, device="cuda",
                                         dtype=torch.bfloat16)
            ours.load_state_dict(torch_rms.state_dict())
            x.grad = None
            ours(x).backward(g)
            xt.grad = None
            torch_rms(xt).backward(g)
            self.assertClose(x.grad, xt.grad.double(), "dx vs RMSNorm",
                             factor=4)
            self.assertClose(ours.weight.grad, torch_rms.weight.grad.double(),
                             "dw vs RMSNorm", factor=4)
        block = norm_opt.nn.FusedAddRMSNorm(hidden, eps=1e-6, device="cuda",
                                            dtype=torch.bfloat16)
        residual = self.rand(3, 7, hidden)
        normed, new = block(x, residual)
        self.assertTrue(torch.equal(new.detach(), (x + residual).detach()))
        (normed.float().sum() + new.float().sum()).backward()
        self.assertIsNotNone(block.weight.grad)

    def test_host_tensors_refused(self):
        with self.assertRaisesRegex(ValueError, "CUDA tensors"):
            norm_opt.nn.RMSNorm(64)(torch.randn(2, 64, requires_grad=True))


if __name__ == "__main__":
    unittest.main()
