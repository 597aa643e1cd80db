"""norm_opt on a GPU: every torch entry point against a float64 reference and
against torch's own functions.

Outputs are poisoned (NaN) and sit between NaN guard elements that must stay
bit-identical; inputs are fresh random values for every case; tolerances
are per output dtype. The sweep runs heuristic kernels (tuning off, so that
it compiles quickly); TunedKernelsTest runs tuned ones; test_torch_ops.py's
tests (the torch.library ops, no device needed) run here too.

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
# The torch.library ops' tests, which need no device, run here too: the
# device run has the torch its compile test is for.
from test_torch_ops import DecodeOpTest  # noqa: F401

if os.environ.get("NORM_REQUIRE_GPU") == "1" and not HAVE_CUDA:
    raise SystemExit("test_torch.py: NORM_REQUIRE_GPU=1, but torch or a CUDA "
                     "device is missing")

GUARD = 64  # elements on each side of every output
TOLERANCE = {"torch.bfloat16": 1 / 128, "torch.float16": 1 / 1024,
             "torch.float32": 2e-5}
SEED = int(os.environ.get("NORM_TEST_SEED", "1234"))


def tolerance(dtype) -> float:
    return TOLERANCE[str(dtype)]


def guarded(shape, dtype):
    """(tensor of `shape` poisoned with NaN, the whole buffer with guards)."""
    count = 1
    for size in shape:
        count *= size
    buffer = torch.full((count + 2 * GUARD,), float("nan"), dtype=dtype,
                        device="cuda")
    return buffer[GUARD:GUARD + count].view(shape), buffer


def bits(tensor):
    return tensor.view({1: torch.int8, 2: torch.int16}.get(
        tensor.element_size(), torch.int32))


class Case(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(SEED)

    def rand(self, *shape, dtype=None, scale=2.0):
        """Uniform in [-scale, scale), bf16 unless said otherwise."""
        return (torch.rand(*shape, device="cuda", dtype=torch.float64) * 2 - 1
                ).mul_(scale).to(dtype or torch.bfloat16)

    def assertGuards(self, buffer, name):
        poison = torch.full((GUARD,), float("nan"), dtype=buffer.dtype,
                            device="cuda")
        for side, part in (("before", buffer[:GUARD]),
                           ("after", buffer[-GUARD:])):
            self.assertTrue(torch.equal(bits(part), bits(poison)),
                            f"{name}: guard {side} the output overwritten")

    def assertClose(self, got, want64, name, factor=1.0):
        """|got - round(want)| <= tol * (1 + |round(want)|) everywhere; NaN
        (an unwritten element) never passes."""
        want = want64.to(got.dtype).double()
        error = (got.double() - want).abs()
        limit = factor * tolerance(got.dtype) * (1 + want.abs())
        bad = ~(error <= limit)
        if bad.any():
            index = tuple(int(i) for i in bad.nonzero()[0])
            self.fail(f"{name}: {int(bad.sum())} of {got.numel()} elements "
                      f"off, first at {index}: got {got[index].item()}, "
                      f"expected {want[index].item()}")


def rms_reference(x64, w64, eps):
    y = x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + eps)
    return y * w64 if w64 is not None else y


def layer_reference(x64, w64, b64, eps):
    mean = x64.mean(-1, keepdim=True)
    var = (x64 - mean).pow(2).mean(-1, keepdim=True)
    y = (x64 - mean) / torch.sqrt(var + eps)
    if w64 is not None:
        y = y * w64
    return y + b64 if b64 is not None else y


class HeuristicCase(Case):
    """Tuning off: every new operation compiles its heuristic configuration
    only, so that a sweep over many of them stays quick."""

    @classmethod
    def setUpClass(cls):
        norm_opt.configure(tuning=False)

    @classmethod
    def tearDownClass(cls):
        norm_opt.configure(tuning=True)


# FP8 formats: (largest finite value, fraction bits, smallest normal).
FP8 = {"torch.float8_e4m3fn": (448.0, 3, 2.0 ** -6),
       "torch.float8_e5m2": (57344.0, 2, 2.0 ** -14)}


def fp8_half_spacing(dtype, value64):
    """Half the distance between FP8 neighbours around |value64|: the most a
    correctly rounded result may be off."""
    _, fraction, smallest = FP8[str(dtype)]
    magnitude = value64.abs().clamp(min=smallest)
    return torch.exp2(torch.floor(torch.log2(magnitude)) - fraction) / 2


@unittest.skipUnless(HAVE_CUDA and hasattr(torch, "float8_e4m3fn"),
                     "needs torch with float8 and a CUDA device")
class Fp8Test(HeuristicCase):
    """rms_norm_quant / layer_norm_quant against float64 references
    quantized the same way: within half an FP8 spacing (plus the f32 error
    of y, far below it), saturated, guards intact."""

    def assertQuantized(self, q, want64, name):
        max_value = FP8[str(q.dtype)][0]
        want = want64.clamp(-max_value, max_value)
        limit = fp8_half_spacing(q.dtype, want) + 1e-5 * (1 + want.abs())
        error = (q.double() - want).abs()
        bad = ~(error <= limit)
        if bad.any():
            index = tuple(int(i) for i in bad.nonzero()[0])
            self.fail(f"{name}: {int(bad.sum())} of {q.numel()} elements off, "
                      f"first at {index}: got {q[index].item()}, expected "
                      f"{want[index].item()}")

    def test_static_scale(self):
        for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            for hidden in (768, 4096, 5120, 16384):
                for rows in (0, 1, 777):
                    with self.subTest(dtype=dtype, hidden=hidden, rows=rows):
                        x = self.rand(rows, hidden)
                        w = self.rand(hidden)
                        # Small enough that the largest outputs saturate.
                        s = torch.tensor([1 / 150], device="cuda")
                        q, q_buffer = guarded((rows, hidden), dtype)
                        got, scale = norm_opt.rms_norm_quant(
                            x, w, 1e-6, scale=s, dtype=dtype, out=q)
                        self.assertIs(got, q)
                        self.assertIs(scale, s)
                        self.assertGuards(q_buffer, "q")
                        want = rms_reference(x.double(), w.double(), 1e-6)
                        self.assertQuantized(q, want / s.double(), "q")

    def test_per_token_scales_with_residual_and_bound(self):
        for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            for hidden in (768, 4096, 8192, 16384):
                for bound in (None, 2.0):
                    with self.subTest(dtype=dtype, hidden=hidden, bound=bound):
                        rows = 333
                        x, r = self.rand(rows, hidden), self.rand(rows, hidden)
                        w, b = self.rand(hidden), self.rand(hidden)
                        ub = (torch.tensor([bound], device="cuda")
                              if bound is not None else None)
                        q, scales, h = norm_opt.layer_norm_quant(
                            x, w, b, 1e-5, residual=r, scale_ub=ub,
                            dtype=dtype)
                        self.assertTrue(torch.equal(bits(h), bits(x + r)))
                        y = layer_reference(h.double(), w.double(),
                                            b.double(), 1e-5)
                        max_value = FP8[str(dtype)][0]
                        amax = y.abs().amax(-1, keepdim=True)
                        if ub is not None:
                            amax = amax.clamp(max=bound)
                        want_scales = (amax / max_value).clamp(
                            min=1 / (max_value * 512))
                        self.assertEqual(scales.shape, (rows, 1))
                        self.assertTrue(torch.allclose(
                            scales.double(), want_scales, rtol=1e-4, atol=0),
                            "per-token scales")
                        self.assertQuantized(q, y / scales.double(), "q")

    def test_matches_torchs_unfused_quantization(self):
        # torch's own norm, divide, clamp and cast: the same bytes but for
        # values within the f32 error of a rounding midpoint.
        dtype = torch.float8_e4m3fn
        x, w = self.rand(1000, 4096), self.rand(4096)
        s = torch.tensor([0.01], device="cuda")
        q, _ = norm_opt.rms_norm_quant(x, w, 1e-6, scale=s, dtype=dtype)
        y = F.rms_norm(x.float(), (4096,), w.float(), 1e-6)
        torch_q = (y / s).clamp(-448, 448).to(dtype)
        differ = (bits(q) != bits(torch_q)).sum().item()
        self.assertLessEqual(differ, q.numel() // 1000)


@unittest.skipUnless(HAVE_CUDA, "needs torch and a CUDA device")
class SweepTest(HeuristicCase):
    """Heuristic kernels over hidden sizes, row counts and dtypes."""

    HIDDEN = (1, 33, 128, 769, 1152, 3001, 4096, 8192, 16384)
    ROWS = (0, 1, 5, 1000)

    def test_rms_norm(self):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            for hidden in self.HIDDEN:
                for rows in self.ROWS:
                    with self.subTest(dtype=dtype, hidden=hidden, rows=rows):
                        x = self.rand(rows, hidden, dtype=dtype)
                        w = self.rand(hidden, dtype=dtype)
                        y, buffer = guarded((rows, hidden), dtype)
                        got = norm_opt.rms_norm(x, w, 1e-6, out=y)
                        self.assertIs(got, y)
                        self.assertGuards(buffer, "rms_norm")
                        self.assertClose(y, rms_reference(
                            x.double(), w.double(), 1e-6), "rms_norm")
                        self.assertClose(y, F.rms_norm(
                            x, (hidden,), w, 1e-6).double(), "vs F.rms_norm",
                            factor=2)

    def test_layer_norm(self):
        for dtype in (torch.bfloat16, torch.float16):
            for hidden in (33, 769, 4096, 8192):
                for rows in (0, 1, 1000):
                    for affine in ("none", "weight", "weight+bias"):
                        with self.subTest(dtype=dtype, hidden=hidden,
                                          rows=rows, affine=affine):
                            x = self.rand(rows, hidden, dtype=dtype) + 0.5
                            w = (self.rand(hidden, dtype=dtype)
                                 if affine != "none" else None)
                            b = (self.rand(hidden, dtype=dtype)
                                 if affine == "weight+bias" else None)
                            y, buffer = guarded((rows, hidden), dtype)
                            norm_opt.layer_norm(x, w, b, 1e-5, out=y)
                            self.assertGuards(buffer, "layer_norm")
                            self.assertClose(y, layer_reference(
                                x.double(), None if w is None else w.double(),
                                None if b is None else b.double(), 1e-5),
                                "layer_norm")
                            self.assertClose(y, F.layer_norm(
                                x, (hidden,), w, b, 1e-5).double(),
                                "vs F.layer_norm", factor=2)

    def check_fused_add(self, layer: bool, hidden_sizes):
        """fused_add_rms_norm / fused_add_layer_norm against float64 and
        torch's add then norm, guards around both outputs."""
        eps = 1e-5 if layer else 1e-6
        for dtype in (torch.bfloat16, torch.float16):
            for hidden in hidden_sizes:
                for rows in (0, 1, 777):
                    with self.subTest(dtype=dtype, hidden=hidden, rows=rows):
                        x = self.rand(rows, hidden, dtype=dtype)
                        r = self.rand(rows, hidden, dtype=dtype) + 0.5
                        w = self.rand(hidden, dtype=dtype)
                        b = self.rand(hidden, dtype=dtype) if layer else None
                        y, y_buffer = guarded((rows, hidden), dtype)
                        h, h_buffer = guarded((rows, hidden), dtype)
                        if layer:
                            norm_opt.fused_add_layer_norm(
                                x, r, w, b, eps, out=y, residual_out=h)
                            want = layer_reference(h.double(), w.double(),
                                                   b.double(), eps)
                            torch_y = F.layer_norm(x + r, (hidden,), w, b, eps)
                        else:
                            norm_opt.fused_add_rms_norm(x, r, w, eps, out=y,
                                                        residual_out=h)
                            want = rms_reference(h.double(), w.double(), eps)
                            torch_y = F.rms_norm(x + r, (hidden,), w, eps)
                        self.assertGuards(y_buffer, "y")
                        self.assertGuards(h_buffer, "residual")
                        # The residual is torch's own add, bit for bit.
                        self.assertTrue(torch.equal(bits(h), bits(x + r)),
                                        "residual differs from x + residual")
                        self.assertClose(y, want, "y")
                        self.assertClose(y, torch_y.double(),
                                         "vs torch's add then norm", factor=2)

    def test_fused_add_rms_norm(self):
        self.check_fused_add(False, (128, 769, 4096, 7168, 16384))

    def test_fused_add_layer_norm(self):
        self.check_fused_add(True, (769, 4096, 16384))

    def test_deepnorm_alpha(self):
        x = self.rand(300, 2048)
        r = self.rand(300, 2048)
        w = self.rand(2048)
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6, alpha=1.75)
        # h = round(f32(alpha * residual) + x), as the kernel's prologue.
        h_want = ((r.float() * 1.75) + x.float()).double()
        self.assertClose(h, h_want, "residual")
        self.assertClose(y, rms_reference(h.double(), w.double(), 1e-6), "y")

    def test_qk_norm(self):
        for dtype in (torch.bfloat16, torch.float16):
            for (hq, hkv, d) in ((32, 8, 128), (16, 16, 64), (8, 1, 256)):
                for tokens in (0, 1, 300):
                    for weights in (True, False):
                        with self.subTest(dtype=dtype, heads=(hq, hkv, d),
                                          tokens=tokens, weights=weights):
                            self.check_qk(dtype, hq, hkv, d, tokens, weights)

    def check_qk(self, dtype, hq, hkv, d, tokens, weights, extra=0):
        width = (hq + 2 * hkv) * d
        qkv = self.rand(tokens, width + extra, dtype=dtype)[:, :width]
        qw = self.rand(d, dtype=dtype) if weights else None
        kw = self.rand(d, dtype=dtype) if weights else None
        q_out, q_buffer = guarded((tokens, hq, d), dtype)
        k_out, k_buffer = guarded((tokens, hkv, d), dtype)
        q, k = norm_opt.qk_norm(qkv, hq, hkv, qw, kw, 1e-6, q_out=q_out,
                                k_out=k_out)
        self.assertGuards(q_buffer, "q")
        self.assertGuards(k_buffer, "k")
        heads = qkv.double().view(tokens, hq + 2 * hkv, d)
        q_want = rms_reference(heads[:, :hq], qw.double() if weights else None,
                               1e-6)
        k_want = rms_reference(heads[:, hq:hq + hkv],
                               kw.double() if weights else None, 1e-6)
        self.assertClose(q, q_want, "q")
        self.assertClose(k, k_want, "k")
        q_torch = F.rms_norm(qkv[:, :hq * d].view(tokens, hq, d), (d,), qw,
                             1e-6)
        self.assertClose(q, q_torch.double(), "q vs F.rms_norm", factor=2)

    def test_qk_norm_strided_rows(self):
        self.check_qk(torch.bfloat16, 32, 8, 128, 100, True, extra=256)

    def test_qk_norm_gemma3_and_layer_norm(self):
        # Gemma 3 1B: 4 query heads and one key/value head of 256, (1 + w)
        # weights; ViT-22B-style LayerNorm per head.
        qkv = self.rand(37, (4 + 2 * 1) * 256)
        qw, kw = self.rand(256), self.rand(256)
        q, k = norm_opt.qk_norm(qkv, 4, 1, qw, kw, 1e-6, weight_offset=1.0)
        heads = qkv.double().view(37, 6, 256)
        self.assertClose(q, rms_reference(heads[:, :4], qw.double() + 1, 1e-6),
                         "q gemma")
        self.assertClose(k, rms_reference(heads[:, 4:5], kw.double() + 1,
                                          1e-6), "k gemma")
        qkv = self.rand(41, (12 + 2 * 12) * 64)
        qw, kw = self.rand(64), self.rand(64)
        q, k = norm_opt.qk_norm(qkv, 12, 12, qw, kw, 1e-5, layer_norm=True)
        heads = qkv.double().view(41, 36, 64)
        self.assertClose(q, F.layer_norm(heads[:, :12], (64,), qw.double(),
                                         None, 1e-5), "q layer")
        self.assertClose(k, F.layer_norm(heads[:, 12:24], (64,), kw.double(),
                                         None, 1e-5), "k layer")

    def test_qk_norm_l2(self):
        qkv = self.rand(50, (4 + 2 * 2) * 64)
        q, k = norm_opt.qk_norm(qkv, 4, 2, eps=1e-6, l2=True)
        heads = qkv.double().view(50, 8, 64)
        want = heads / torch.sqrt(heads.pow(2).sum(-1, keepdim=True) + 1e-6)
        self.assertClose(q, want[:, :4], "q")
        self.assertClose(k, want[:, 4:6], "k")


@unittest.skipUnless(HAVE_CUDA, "needs torch and a CUDA device")
class LayoutTest(HeuristicCase):
    """Strides, offsets, shapes, streams and graphs."""

    def check_rms(self, x, w):
        y = norm_opt.rms_norm(x, w, 1e-6)
        self.assertEqual(y.shape, x.shape)
        self.assertClose(y, rms_reference(x.double(), w.double(), 1e-6),
                         "rms_norm")

    def test_strided_rows(self):
        wide = self.rand(100, 4096 + 64)
        self.check_rms(wide[:, :4096], self.rand(4096))
        self.check_rms(wide[:, 8:4096 + 8], self.rand(4096))  # +16 bytes

    def test_misaligned_storage_runs_the_scalar_variant(self):
        flat = self.rand(1 + 37 * 4096)
        self.check_rms(flat[1:].view(37, 4096), self.rand(4096))

    def test_leading_dimensions(self):
        self.check_rms(self.rand(2, 3, 5, 1024), self.rand(1024))
        self.check_rms(self.rand(1024), self.rand(1024))
        # No single row stride: copied to contiguous rows.
        self.check_rms(self.rand(8, 6, 512).transpose(0, 1), self.rand(512))
        # Last dimension not contiguous: copied as well.
        self.check_rms(self.rand(512, 64).t(), self.rand(512))

    def test_side_stream(self):
        x, w = self.rand(4096, 4096), self.rand(4096)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            y = norm_opt.rms_norm(x, w, 1e-6)
        torch.cuda.current_stream().wait_stream(stream)
        self.assertClose(y, rms_reference(x.double(), w.double(), 1e-6), "y")

    def test_cuda_graph_capture_and_replay(self):
        x, r, w = self.rand(256, 4096), self.rand(256, 4096), self.rand(4096)
        norm_opt.fused_add_rms_norm(x, r, w, 1e-6)  # build before capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6)
        for _ in range(2):
            x.copy_(self.rand(256, 4096))
            r.copy_(self.rand(256, 4096))
            y.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(bits(h), bits(x + r)))
            self.assertClose(y, rms_reference(h.double(), w.double(), 1e-6),
                             "y after replay")

    def test_errors(self):
        w = self.rand(64)
        with self.assertRaisesRegex(ValueError, "CUDA tensors"):
            norm_opt.rms_norm(torch.ones(4, 64), w.cpu())
        with self.assertRaisesRegex(ValueError, r"weight: expected shape \(64,\)"):
            norm_opt.rms_norm(self.rand(4, 64), self.rand(65))
        with self.assertRaisesRegex(TypeError, "float64 is not supported"):
            norm_opt.rms_norm(self.rand(4, 64, dtype=torch.float64), None)
        with self.assertRaisesRegex(ValueError, "does not hold"):
            norm_opt.qk_norm(self.rand(4, 102), 2, 1)  # 102 % (2 + 2 x 1)
        with self.assertRaisesRegex(ValueError, "both q_weight and k_weight"):
            norm_opt.qk_norm(self.rand(4, 4 * 64), 2, 1, q_weight=w)
        with self.assertRaisesRegex(TypeError, "one dtype"):
            norm_opt.layer_norm(self.rand(4, 64), w, w.float())
        # libnormjit's own checks come back as NormJitError.
        with self.assertRaises(norm_opt.NormJitError) as caught:
            norm_opt.rms_norm(self.rand(4, 64), w, eps=-1.0)
        self.assertIn("eps must be a positive finite number", str(caught.exception))

    def test_default_eps_is_torchs(self):
        x, w = self.rand(8, 256), self.rand(256)
        self.assertClose(norm_opt.rms_norm(x, w), F.rms_norm(x, (256,), w).double(),
                         "eps None", factor=2)


@unittest.skipUnless(HAVE_CUDA, "needs torch and a CUDA device")
class DecodeCompileTest(HeuristicCase):
    """torch.ops.norm_opt.attention_decode under torch.compile: one op, the
    same output and cache rows as the eager call (the float64 check of the
    kernel itself is decode_bench.py's)."""

    def test_compiled_matches_eager_and_writes_the_caches(self):
        if not hasattr(torch, "compile"):
            self.skipTest("no torch.compile")
        batch, capacity, dim = 3, 256, 128
        lengths = torch.tensor([0, 100, 255], dtype=torch.int32,
                               device="cuda")
        q, k, v = (self.rand(batch, heads * dim) for heads in (8, 2, 2))
        qw, kw = self.rand(dim), self.rand(dim)
        caches = self.rand(2, batch, capacity, 2, dim)
        rows, at = torch.arange(batch, device="cuda"), lengths.long()
        caches[:, rows, at] = float("nan")

        def step(q, k, v, k_cache, v_cache):
            return norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, qk_norm="rms",
                q_norm_weight=qw, k_norm_weight=kw, head_dim=dim,
                rope="neox", rope_theta=1e6)

        eager_caches = caches.clone()
        with torch.no_grad():
            want = step(q, k, v, eager_caches[0], eager_caches[1])
            got = torch.compile(step, fullgraph=True)(q, k, v, caches[0],
                                                      caches[1])
        torch.cuda.synchronize()
        self.assertFalse(bool(eager_caches[:, rows, at].isnan().any()),
                         "the eager call appended no rows")
        self.assertTrue(torch.equal(bits(got), bits(want)))
        self.assertTrue(torch.equal(bits(caches), bits(eager_caches)),
                        "the compiled call's cache writes differ")


def llama3_cos_sin_cache(max_position, rotary_dim, device, theta=500000.0,
                         factor=8.0, low_freq_factor=1.0,
                         high_freq_factor=4.0, original_max_position=8192):
    """Llama 3.1's scaled rotary frequencies as vLLM's and FlashInfer's
    cos_sin_cache: float32 [max_position, rotary_dim], row p cos(p f_i) then
    sin(p f_i) (computed in float64)."""
    import math
    f64 = torch.float64
    inv_freq = theta ** (-torch.arange(0, rotary_dim, 2, dtype=f64,
                                       device=device) / rotary_dim)
    wavelen = 2 * math.pi / inv_freq
    smooth = (original_max_position / wavelen - low_freq_factor) / (
        high_freq_factor - low_freq_factor)
    freq = torch.where(
        wavelen > original_max_position / low_freq_factor, inv_freq / factor,
        torch.where(wavelen < original_max_position / high_freq_factor,
                    inv_freq, (1 - smooth) * inv_freq / factor +
                    smooth * inv_freq))
    angles = torch.arange(max_position, dtype=f64, device=device)[:, None] * (
        freq[None])
    return torch.cat((angles.cos(), angles.sin()), -1).float()


def rotate_by_table(x, table, positions):
    """neox rotary embeddings of [tokens, heads, D] bf16 by the float32
    table's row at each token's position, in float64, rounded to bf16 (the
    kernel's rounding point): float64. Positions outside the table give NaN
    rows, as the kernel's."""
    x = x.double()
    rotary_dim = table.size(1)
    half = rotary_dim // 2
    inside = (positions >= 0) & (positions < table.size(0))
    rows = table.double()[positions.long().clamp(0, table.size(0) - 1)]
    rows[~inside] = float("nan")
    c, s = rows[:, None, :half], rows[:, None, half:]
    a, b = x[..., :half], x[..., half:rotary_dim]
    return torch.cat((a * c - b * s, b * c + a * s, x[..., rotary_dim:]),
                     -1).to(torch.bfloat16).double()


def attention_reference(q, k, v, cu_seqlens, causal=True):
    """Attention of [tokens, heads, D] float64 per sequence, the causal mask
    by index within it, scale 1 / sqrt(D): (out, sum_j p_j |v_j|), float64
    [tokens, Hq, D]."""
    d = q.size(-1)
    group = q.size(1) // k.size(1)
    out = torch.empty_like(q)
    magnitude = torch.empty_like(q)
    bounds = cu_seqlens.tolist()
    for s, e in zip(bounds[:-1], bounds[1:]):
        qs = q[s:e].transpose(0, 1)
        ks = k[s:e].transpose(0, 1).repeat_interleave(group, 0)
        vs = v[s:e].double().transpose(0, 1).repeat_interleave(group, 0)
        scores = qs @ ks.transpose(-1, -2) / d ** 0.5
        if causal:
            mask = torch.ones(e - s, e - s, dtype=torch.bool,
                              device=q.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        p = scores.softmax(-1)
        out[s:e] = (p @ vs).transpose(0, 1)
        magnitude[s:e] = (p @ vs.abs()).transpose(0, 1)
    return out, magnitude


def bf16_ulp(x):
    _, exponent = torch.frexp(x.abs().clamp_min(2.0 ** -126))
    return torch.ldexp(torch.ones_like(x), exponent - 8)


@unittest.skipUnless(HAVE_CUDA, "needs torch and a CUDA device")
class RopeTableTest(HeuristicCase):
    """Attention and decode attention with a Llama 3.1-scaled cos_sin_cache
    at explicit positions against float64 references that rotate by the
    same float32 table (attention_bench.py's tolerance: 8 bf16 ulps of the
    output plus 2^-8 of sum_j p_j |v_j|, P's bf16 rounding)."""

    device = "cuda"
    MAX_POSITION = 32768

    def setUp(self):
        super().setUp()
        self.table = llama3_cos_sin_cache(self.MAX_POSITION, 128, self.device)

    def tensor(self, *shape, scale=2.0):
        """Uniform in [-scale, scale), bf16."""
        return (torch.rand(*shape, device=self.device, dtype=torch.float64)
                * 2 - 1).mul_(scale).to(torch.bfloat16)

    def positions(self, values):
        return torch.tensor(values, dtype=torch.int32, device=self.device)

    def assertAttention(self, got, want, magnitude, name, rows=None):
        """Within the tolerance everywhere (or in `rows` of tokens); NaN
        never passes."""
        got = got.double().view_as(want)
        if rows is not None:
            got, want, magnitude = got[rows], want[rows], magnitude[rows]
        error = (got - want).abs()
        bad = ~(error <= 8 * bf16_ulp(want) + 2.0 ** -8 * magnitude)
        if bad.any():
            index = tuple(int(i) for i in bad.nonzero()[0])
            self.fail(f"{name}: {int(bad.sum())} of {got.numel()} elements "
                      f"off, first at {index}: got {got[index].item()}, "
                      f"expected {want[index].item()}")

    def test_chunked_prefill_at_positions(self):
        # Three sequences: a chunk that continues at position 9000 (past
        # the original 8192: the scaled frequencies matter), one from 0,
        # and one token at 20000.
        seqlens, starts = (37, 100, 1), (9000, 0, 20000)
        cu = torch.tensor([0, 37, 137, 138], dtype=torch.int32,
                          device=self.device)
        positions = self.positions([p + i for n, p in zip(seqlens, starts)
                                    for i in range(n)])
        q, k, v = (self.tensor(138, heads, 128) for heads in (8, 2, 2))
        with torch.no_grad():
            got = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu,
                                     rope="neox", positions=positions,
                                     cos_sin_cache=self.table)
        torch.cuda.synchronize()
        want, magnitude = attention_reference(
            rotate_by_table(q, self.table, positions),
            rotate_by_table(k, self.table, positions), v, cu)
        self.assertAttention(got, want, magnitude, "prefill")
        # Scores depend on position differences only, so consecutive
        # positions check the table's rows more than the positions: these
        # are out of order. The rotations move with them, the mask stays by
        # index; the table's rows 132 floats apart.
        wide = torch.full((self.MAX_POSITION, 132), float("nan"),
                          device=self.device)
        wide[:, :128] = self.table
        shuffled = positions[torch.randperm(138, device=self.device)]
        with torch.no_grad():
            got = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu,
                                     rope="neox", positions=shuffled,
                                     cos_sin_cache=wide[:, :128])
        want, magnitude = attention_reference(
            rotate_by_table(q, self.table, shuffled),
            rotate_by_table(k, self.table, shuffled), v, cu)
        self.assertAttention(got, want, magnitude, "shuffled positions")

    def test_table_of_rope_theta_agrees_with_rope_theta(self):
        # An unscaled table (factor 1) at each token's index: the rotation
        # rope_theta computes.
        table = llama3_cos_sin_cache(512, 64, self.device, theta=10000.0,
                                     factor=1.0)
        cu = torch.tensor([0, 300, 511], dtype=torch.int32, device=self.device)
        index = torch.cat([torch.arange(300), torch.arange(211)]).to(
            torch.int32).to(self.device)
        q, k, v = (self.tensor(511, heads, 64) for heads in (4, 4, 4))
        with torch.no_grad():
            by_table = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu,
                                          rope="neox", cos_sin_cache=table)
            by_theta = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu,
                                          rope="neox", positions=index)
        want, magnitude = attention_reference(
            rotate_by_table(q, table, index), rotate_by_table(k, table, index),
            v, cu)
        self.assertAttention(by_table, want, magnitude, "table by index")
        self.assertAttention(by_theta, want, magnitude, "theta at positions")

    def test_positions_outside_the_table_give_nan_rows(self):
        # The last token of each sequence is outside the table (no key after
        # it within its sequence sees its NaN key).
        cu = torch.tensor([0, 20, 50], dtype=torch.int32, device=self.device)
        values = list(range(100, 120)) + list(range(30))
        values[19], values[49] = self.MAX_POSITION, -1
        positions = self.positions(values)
        q, k, v = (self.tensor(50, heads, 128) for heads in (4, 1, 1))
        with torch.no_grad():
            got = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu,
                                     rope="neox", positions=positions,
                                     cos_sin_cache=self.table)
        torch.cuda.synchronize()
        outside = torch.zeros(50, dtype=torch.bool, device=self.device)
        outside[[19, 49]] = True
        self.assertTrue(bool(got[outside].isnan().all()),
                        "a position outside the table rotated to a number")
        want, magnitude = attention_reference(
            rotate_by_table(q, self.table, positions),
            rotate_by_table(k, self.table, positions), v, cu)
        self.assertAttention(got, want, magnitude, "inside the table",
                             rows=~outside)

    def test_decode_at_positions(self):
        # One new token per sequence, rotated at its position (not its
        # cache length); the rows past the new ones are NaN (never read).
        batch, capacity = 3, 64
        lengths = [0, 17, 40]
        cache_seqlens = self.positions(lengths)
        positions = self.positions([5, 30000, 12345])
        q, k, v = (self.tensor(batch, heads, 128) for heads in (8, 2, 2))
        caches = self.tensor(2, batch, capacity, 2, 128)
        for b, n in enumerate(lengths):
            caches[:, b, n:] = float("nan")
        k_cache, v_cache = caches[0], caches[1]
        old_k, old_v = k_cache.clone(), v_cache.clone()
        with torch.no_grad():
            got = norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, cache_seqlens, rope="neox",
                positions=positions, cos_sin_cache=self.table)
        torch.cuda.synchronize()
        qr = rotate_by_table(q, self.table, positions)
        kr = rotate_by_table(k, self.table, positions)
        for b, n in enumerate(lengths):
            with self.subTest(sequence=b):
                keys = torch.cat((old_k[b, :n].double(), kr[b:b + 1]))
                values = torch.cat((old_v[b, :n], v[b:b + 1]))
                cu = torch.tensor([0, n + 1], dtype=torch.int32)
                # The new token is the last of its sequence: it sees all.
                queries = torch.cat((torch.zeros_like(keys[:n]).repeat(
                    1, 4, 1), qr[b:b + 1]))
                want, magnitude = attention_reference(queries, keys, values,
                                                      cu)
                self.assertAttention(got[b:b + 1], want[n:], magnitude[n:],
                                     "decode")
                # The appended rows: k rotated (to within a bf16 rounding),
                # v as given; the rest of the cache untouched.
                self.assertClose(k_cache[b, n], kr[b], "appended k")
                self.assertTrue(torch.equal(bits(v_cache[b, n]), bits(v[b])))
                for cache, old in ((k_cache, old_k), (v_cache, old_v)):
                    self.assertTrue(torch.equal(bits(cache[b, :n]),
                                                bits(old[b, :n])))
                    self.assertTrue(bool(cache[b, n + 1:].isnan().all()))


@unittest.skipUnless(HAVE_CUDA, "needs torch and a CUDA device")
class TunedKernelsTest(Case):
    """Tuned kernels (each row bucket's winner) at the row counts that pick
    each bucket, and the tuner's report."""

    def test_tuned_rms_norm_every_bucket(self):
        norm_opt.configure(tuning=True)
        for hidden in (2048, 7168):
            w = self.rand(hidden)
            for rows in (1, 64, 1000, 5000):
                with self.subTest(hidden=hidden, rows=rows):
                    x = self.rand(rows, hidden)
                    y, buffer = guarded((rows, hidden), torch.bfloat16)
                    norm_opt.rms_norm(x, w, 1e-6, out=y)
                    self.assertGuards(buffer, "y")
                    self.assertClose(y, rms_reference(x.double(), w.double(),
                                                      1e-6), "y")
        from norm_opt import _registry
        kernel = _registry.get_kernel(
            torch.cuda.current_device(),
            norm_opt.OpDesc(hidden=7168, flags=norm_opt.capi.OP_WEIGHT))
        info = kernel.tuning(5000)
        self.assertIn(info.source, ("tuned", "tuning cache"))
        if info.source == "tuned":
            timed = [c for c in info.candidates if c.microseconds >= 0]
            self.assertTrue(timed)
            best = min(timed, key=lambda c: c.microseconds)
            self.assertEqual(best.config, info.config)


if __name__ == "__main__":
    unittest.main()
