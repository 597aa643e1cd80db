"""norm_opt's torch layer on the fake driver: which buffers, row counts and
strides each function passes to libnormjit, checked by libnormjit itself
and read back from the fake driver's record of the launch.

No GPU: host tensors stand in for device memory (the fake driver runs no
kernel, it records parameters), so the layer's CUDA-device check is
replaced. Needs torch (any build), NORMJIT_LIBRARY (with the compiler: the
kernels are compiled for the fake device) and NORMJIT_FAKE_CUDA;
NORMJIT_TEST_BUNDLE (normjit-write-test-bundle's) serves the attention
kernels, so that these tests check the layer and the runtime, not the
attention kernel's lowering.
"""

import ctypes
import os
import tempfile
import unittest

try:
    import torch
except ImportError:
    torch = None

import norm_opt
from norm_opt import capi
from fake_driver import FakeLaunch, load_fake

FAKE = os.environ.get("NORMJIT_FAKE_CUDA", "")
BUNDLE = os.environ.get("NORMJIT_TEST_BUNDLE", "")


class FakeDriverCase(unittest.TestCase):
    """norm_opt on the fake driver: host tensors as device memory, the
    launches' records."""

    @classmethod
    def setUpClass(cls):
        from norm_opt import _torch
        cls.layer = _torch
        cls.saved = (_torch._device, _torch.run)
        _torch._device = lambda *tensors: 0
        run = _torch.run
        _torch.run = lambda call, config=None, stream=None: run(call, config, 0)
        cls.fake = load_fake(FAKE)
        cls.cache = tempfile.TemporaryDirectory()
        norm_opt.configure(driver_library=FAKE, tuning=False,
                           cache_dir=cls.cache.name,
                           bundles=[BUNDLE] if BUNDLE else [])

    @classmethod
    def tearDownClass(cls):
        cls.layer._device, cls.layer.run = cls.saved
        norm_opt.configure(driver_library="", tuning=True, bundles=[])
        cls.cache.cleanup()

    def launch(self):
        """(kernel name, parameters) of the last launch."""
        launch = FakeLaunch()
        count = self.fake.fakecuda_launch_count()
        self.assertTrue(self.fake.fakecuda_get_launch(count - 1,
                                                      ctypes.byref(launch)))
        return (launch.kernel.decode(),
                list(launch.params[:launch.num_params]))

    def launches(self, count):
        """[(kernel name, parameters)] of the last `count` launches, in
        launch order."""
        total = self.fake.fakecuda_launch_count()
        self.assertGreaterEqual(total, count)
        records = []
        for index in range(total - count, total):
            launch = FakeLaunch()
            self.assertTrue(self.fake.fakecuda_get_launch(
                index, ctypes.byref(launch)))
            records.append((launch.kernel.decode(),
                            list(launch.params[:launch.num_params])))
        return records

    def rand(self, *shape, dtype=None):
        return torch.randn(*shape).to(dtype or torch.bfloat16)


@unittest.skipUnless(torch is not None and FAKE, "needs torch and "
                     "NORMJIT_FAKE_CUDA")
class TorchLayerTest(FakeDriverCase):
    def test_rms_norm(self):
        x, w = self.rand(5, 4096), self.rand(4096)
        y = norm_opt.rms_norm(x, w, 1e-6)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_rms_h4096_bf16_bf16_"), name)
        self.assertEqual(params, [x.data_ptr(), w.data_ptr(), y.data_ptr(), 5,
                                  4096, 4096])
        self.assertEqual((y.shape, y.dtype), (x.shape, x.dtype))

    def test_rows_strides_and_copies(self):
        w = self.rand(4096)
        wide = self.rand(7, 4160)
        norm_opt.rms_norm(wide[:, :4096], w, 1e-6)
        self.assertEqual(self.launch()[1][3:5], [7, 4160])
        y = norm_opt.rms_norm(self.rand(2, 3, 4096), w, 1e-6)
        self.assertEqual(self.launch()[1][3], 6)
        self.assertEqual(y.shape, (2, 3, 4096))
        transposed = self.rand(4096, 6).t()  # no row stride: copied
        norm_opt.rms_norm(transposed, w, 1e-6)
        self.assertNotEqual(self.launch()[1][0], transposed.data_ptr())
        flat = self.rand(1 + 3 * 4096)
        norm_opt.rms_norm(flat[1:].view(3, 4096), w, 1e-6)
        self.assertIn("_v1_", self.launch()[0])  # 2-byte aligned: scalar
        before = self.fake.fakecuda_launch_count()
        self.assertEqual(norm_opt.rms_norm(self.rand(0, 4096), w).shape,
                         (0, 4096))
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    def test_fused_add_rms_norm(self):
        x, r, w = self.rand(5, 4096), self.rand(5, 4096, dtype=torch.float32), \
            self.rand(4096)
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6)
        name, params = self.launch()
        self.assertIn("_f32_bf16_", name)  # the residual stream stays f32
        # input = residual (scaled by alpha), addend = x.
        self.assertEqual(params[:5], [r.data_ptr(), x.data_ptr(), w.data_ptr(),
                                      y.data_ptr(), h.data_ptr()])
        self.assertEqual((y.dtype, h.dtype), (torch.bfloat16, torch.float32))

    def test_fused_add_rms_norm_in_place(self):
        # vLLM's fused_add_rms_norm: out=x, residual_out=residual.
        x, r, w = self.rand(5, 4096), self.rand(5, 4096), self.rand(4096)
        norm_opt.fused_add_rms_norm(x, r, w, 1e-6)
        separate = self.launch()[0]
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6, out=x,
                                           residual_out=r)
        name, params = self.launch()
        self.assertIs(y, x)
        self.assertIs(h, r)
        self.assertNotEqual(name, separate)  # the in-place kernel
        self.assertEqual(params[:5], [r.data_ptr(), x.data_ptr(), w.data_ptr(),
                                      x.data_ptr(), r.data_ptr()])
        # One of the two in place: a third kernel.
        norm_opt.fused_add_rms_norm(x, r, w, 1e-6, out=x)
        self.assertNotIn(self.launch()[0], (name, separate))
        # Not exactly the rows: refused by libnormjit.
        wide = self.rand(6, 4096)
        self.assertRaisesRegex(
            norm_opt.NormJitError, "output 'output' overlaps buffer 'addend'",
            lambda: norm_opt.fused_add_rms_norm(wide[1:], r, w, 1e-6,
                                                out=wide[:5]))

    @unittest.skipUnless(torch is not None and
                         hasattr(torch, "float8_e4m3fn"), "needs float8")
    def test_fp8_outputs(self):
        x, r, w = self.rand(5, 4096), self.rand(5, 4096), self.rand(4096)
        s = torch.tensor([0.5])
        q, scale = norm_opt.rms_norm_quant(x, w, 1e-6, scale=s)
        name, params = self.launch()
        self.assertIn("_bf16_f8E4M3FN_", name)
        # input, weight, output_scale, output.
        self.assertEqual(params[:4], [x.data_ptr(), w.data_ptr(),
                                      s.data_ptr(), q.data_ptr()])
        self.assertEqual(q.dtype, torch.float8_e4m3fn)
        self.assertIs(scale, s)
        ub = torch.tensor([3.0])
        q, scales, h = norm_opt.rms_norm_quant(
            x, w, 1e-6, residual=r, scale_ub=ub, dtype=torch.float8_e5m2)
        name, params = self.launch()
        self.assertIn("_bf16_f8E5M2_", name)
        # input (the residual stream), addend, weight, scale_ub, output,
        # residual_out, output_scales.
        self.assertEqual(params[:7], [r.data_ptr(), x.data_ptr(), w.data_ptr(),
                                      ub.data_ptr(), q.data_ptr(),
                                      h.data_ptr(), scales.data_ptr()])
        self.assertEqual((scales.shape, scales.dtype),
                         ((5, 1), torch.float32))
        self.assertRaisesRegex(ValueError, "quantize FP8 outputs",
                               lambda: self.layer.prepare_row_norm(
                                   capi.OP_RMS_NORM, x, w, None, 1e-6,
                                   scale=s))
        self.assertRaisesRegex(TypeError, "no FP8 type",
                               lambda: norm_opt.rms_norm_quant(
                                   x, w, dtype=torch.bfloat16))

    def test_fused_add_layer_norm(self):
        x, r = self.rand(5, 1024), self.rand(5, 1024)
        w, b = self.rand(1024), self.rand(1024)
        y, h = norm_opt.fused_add_layer_norm(x, r, w, b, 1e-5, alpha=2.0)
        name, params = self.launch()
        self.assertIn("layer", name)
        # input = residual, addend = x, then weight, bias, y, h.
        self.assertEqual(params[:6], [r.data_ptr(), x.data_ptr(), w.data_ptr(),
                                      b.data_ptr(), y.data_ptr(),
                                      h.data_ptr()])
        self.assertEqual((y.shape, h.shape), ((5, 1024), (5, 1024)))

    def test_layer_norm(self):
        x, w, b = self.rand(5, 1024), self.rand(1024), self.rand(1024)
        y = norm_opt.layer_norm(x, w, b, 1e-5)
        self.assertEqual(self.launch()[1][:4], [x.data_ptr(), w.data_ptr(),
                                                b.data_ptr(), y.data_ptr()])
        y = norm_opt.layer_norm(x, None, None)
        self.assertEqual(self.launch()[1][:3], [x.data_ptr(), y.data_ptr(), 5])

    def test_qk_norm(self):
        qkv = self.rand(3, 48 * 128 + 64)[:, :48 * 128]
        qw, kw = self.rand(128), self.rand(128)
        q, k = norm_opt.qk_norm(qkv, 32, 8, qw, kw)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_qk_rms_d128_bf16_bf16_"), name)
        self.assertEqual(params, [qkv.data_ptr(), qw.data_ptr(), kw.data_ptr(),
                                  q.data_ptr(), k.data_ptr(), 3,
                                  48 * 128 + 64, 4096, 1024])
        self.assertEqual((q.shape, k.shape), ((3, 32, 128), (3, 8, 128)))
        # Gemma 3 (one key/value head, 1 + w) and LayerNorm heads: their own
        # kernels.
        qkv = self.rand(3, 6 * 256)
        qw, kw = self.rand(256), self.rand(256)
        norm_opt.qk_norm(qkv, 4, 1, qw, kw, weight_offset=1.0)
        self.assertTrue(self.launch()[0].startswith("norm_qk_rms_d256_"))
        norm_opt.qk_norm(qkv, 2, 2, qw, kw, layer_norm=True)
        self.assertTrue(self.launch()[0].startswith("norm_qk_mean_var_d256_"))
        # Command R+: a weight row per head, [Hq, D] and [Hkv, D] or flat.
        qkv = self.rand(3, 10 * 128)
        qw, kw = self.rand(6, 128), self.rand(2, 128)
        q, k = norm_opt.qk_norm(qkv, 6, 2, qw, kw, layer_norm=True)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_qk_mean_var_hw_d128_"), name)
        self.assertEqual(params[:3], [qkv.data_ptr(), qw.data_ptr(),
                                      kw.data_ptr()])
        norm_opt.qk_norm(qkv, 6, 2, qw.flatten(), kw.flatten(),
                         layer_norm=True)
        self.assertTrue(self.launch()[0].startswith("norm_qk_mean_var_hw_"))
        with self.assertRaisesRegex(ValueError, r"k_weight: expected 256 "
                                    r"elements \(a row of 128 per head"):
            norm_opt.qk_norm(qkv, 6, 2, qw, self.rand(128), layer_norm=True)
        with self.assertRaisesRegex(ValueError, r"q_weight: expected shape "
                                    r"\(6, 128\), got \(3, 128\)"):
            norm_opt.qk_norm(qkv, 6, 2, self.rand(3, 128), kw)
        qw.requires_grad_(True)
        with self.assertRaisesRegex(NotImplementedError, "row per head have "
                                    "no backward"):
            norm_opt.qk_norm(qkv, 6, 2, qw, kw, layer_norm=True)

    def test_qk_norm_rope(self):
        # Qwen 3 outside attention: QK-Norm, then NeoX RoPE at positions.
        qkv = self.rand(3, 12 * 128)
        qw, kw = self.rand(128), self.rand(128)
        positions = torch.tensor([7, 0, 4096], dtype=torch.int32)
        q, k = norm_opt.qk_norm(qkv, 8, 2, qw, kw, rope="neox",
                                rope_theta=1e6, positions=positions)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_qk_rms_ropeneox128_pos_d128_"),
                        name)
        self.assertEqual(params[:6], [qkv.data_ptr(), qw.data_ptr(),
                                      kw.data_ptr(), positions.data_ptr(),
                                      q.data_ptr(), k.data_ptr()])
        # Llama 4: GPT-J from a cos/sin table, then L2 without weights.
        table = self.rand(64, 128).float()
        norm_opt.qk_norm(qkv, 8, 2, l2=True, rope="gptj", positions=positions,
                         cos_sin_cache=table, rope_first=True)
        name, params = self.launch()
        self.assertTrue(name.startswith(
            "norm_qk_l2_ropegptj128_table_pos_first_d128_"), name)
        self.assertEqual(params[:3], [qkv.data_ptr(), positions.data_ptr(),
                                      table.data_ptr()])
        self.assertIn(64, params)  # rope_table_rows
        # StableLM's partial rotary, rows at their index.
        norm_opt.qk_norm(self.rand(3, 6 * 80), 2, 2, layer_norm=True,
                         rope="neox", rotary_dim=20)
        self.assertTrue(self.launch()[0].startswith(
            "norm_qk_mean_var_ropeneox20_d80_"))
        with self.assertRaisesRegex(ValueError, "rope_first: rotating before "
                                    "the QK-Norm needs rope="):
            norm_opt.qk_norm(qkv, 8, 2, rope_first=True)
        with self.assertRaisesRegex(ValueError, r"positions: expected one "
                                    r"position per token, shape \(3,\)"):
            norm_opt.qk_norm(qkv, 8, 2, rope="neox", positions=positions[:2])
        qw.requires_grad_(True)
        with self.assertRaisesRegex(NotImplementedError, "rope has no "
                                    "backward"):
            norm_opt.qk_norm(qkv, 8, 2, qw, kw, rope="neox")

    def test_fixed_configuration(self):
        from norm_opt import _torch
        call = _torch.prepare_row_norm(capi.OP_RMS_NORM, self.rand(5, 4096),
                                       self.rand(4096), None, 1e-6)
        _torch.run(call, capi.LaunchConfig(8, 128, 4, 1))
        self.assertTrue(self.launch()[0].endswith("_v8_t128_w4_r1"))

    def test_errors(self):
        x, w = self.rand(5, 4096), self.rand(4096)
        qkv = self.rand(3, 48 * 128)
        cases = [
            (lambda: norm_opt.rms_norm(x, self.rand(4095)), ValueError,
             r"weight: expected shape \(4096,\), got \(4095,\)"),
            (lambda: norm_opt.rms_norm(x.double(), None), TypeError,
             "input: dtype torch.float64 is not supported"),
            (lambda: norm_opt.rms_norm(x, w.double()), TypeError,
             "weight: dtype torch.float64"),
            (lambda: norm_opt.layer_norm(x, w, w.float()), TypeError,
             "weight and bias must have one dtype"),
            (lambda: norm_opt.fused_add_rms_norm(x, x[:4], w), ValueError,
             r"residual and x differ in shape: \(4, 4096\) and \(5, 4096\)"),
            (lambda: norm_opt.rms_norm(x, w, out=torch.empty(5, 4096)),
             ValueError, "out: expected"),
            (lambda: norm_opt.qk_norm(qkv, 32, 7), ValueError,
             "does not hold 32 \\+ 2 x 7 heads"),
            (lambda: norm_opt.qk_norm(qkv, 32, 8, w[:128]), ValueError,
             "both q_weight and k_weight"),
            (lambda: norm_opt.rms_norm(x, w, eps=-1.0), norm_opt.NormJitError,
             "eps must be a positive finite number, got -1"),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)

    # The two operations of normjit-write-test-bundle.
    def test_attention(self):
        # q, k, v: column slices of one packed projection, as 3-D views.
        qkv = self.rand(100, 1024)
        q = qkv[:, :512].view(100, 4, 128)
        k = qkv[:, 512:768].view(100, 2, 128)
        v = qkv[:, 768:].view(100, 2, 128)
        cu = torch.tensor([0, 40, 41, 100], dtype=torch.int32)
        with torch.no_grad():
            out = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_attn_causal_d128_h4x2_bf16_"),
                        name)
        self.assertEqual(params, [q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                  cu.data_ptr(), out.data_ptr(), 100, 3,
                                  1024, 1024, 1024, 512])
        self.assertEqual((out.shape, out.dtype), (q.shape, q.dtype))

    def test_attention_qk_norm_and_lse(self):
        # [tokens, heads * head_dim] with head_dim from the weights; one
        # sequence of every token when cu_seqlens is None. The keys are
        # normalized once (K-prepare, k's weight) into a buffer that the
        # attention kernel (q's weight) reads.
        q, k, v = self.rand(7, 256), self.rand(7, 64), self.rand(7, 64)
        qw, kw = self.rand(64), self.rand(64)
        out, lse = norm_opt.attention(q, k, v, qk_norm="rms", q_norm_weight=qw,
                                      k_norm_weight=kw, qk_norm_offset=1.0,
                                      return_lse=True, scale=0.125)
        (kname, kparams), (name, params) = self.launches(2)
        self.assertTrue(kname.startswith("norm_kprep_rms_d64_bf16_bf16_"),
                        kname)
        self.assertEqual(kparams[:2], [k.data_ptr(), kw.data_ptr()])
        prepared = kparams[2]
        self.assertNotIn(prepared, (k.data_ptr(), q.data_ptr(), v.data_ptr()))
        self.assertEqual(kparams[3:], [7, 64, 64])
        self.assertTrue(name.startswith("norm_attn_qkrms_kprep_d64_h4x1_bf16_"),
                        name)
        self.assertEqual(params[:4], [q.data_ptr(), prepared, v.data_ptr(),
                                      qw.data_ptr()])
        self.assertEqual(params[5:], [out.data_ptr(), lse.data_ptr(), 7, 1,
                                      256, 64, 64, 256, 4])
        self.assertEqual((out.shape, lse.shape, lse.dtype),
                         ((7, 256), (7, 4), torch.float32))
        # Command R+'s weights per head ([Hq, D], and the one kv head's
        # [1, D]) and Llama 4's rotation before the norm: their own kernels.
        wq, wk = self.rand(4, 64), self.rand(1, 64)
        norm_opt.attention(q, k, v, qk_norm="layer", q_norm_weight=wq,
                           k_norm_weight=wk, head_dim=64)
        (kname, kparams), (name, params) = self.launches(2)
        # (The one kv head's row per head is its only row.)
        self.assertTrue(kname.startswith("norm_kprep_mean_var_d64_"), kname)
        self.assertEqual(kparams[1], wk.data_ptr())
        self.assertTrue(name.startswith("norm_attn_qkmean_var_hw_kprep_d64_"),
                        name)
        self.assertEqual(params[3], wq.data_ptr())
        # Rotated keys turn by their index within their sequence: K-prepare
        # takes cu_seqlens and the batch.
        norm_opt.attention(q, k, v, qk_norm="l2", rope="neox", rope_first=True,
                           head_dim=64)
        (kname, kparams), (name, _) = self.launches(2)
        self.assertIn("_first", kname)
        self.assertIn("_first", name)
        self.assertEqual(kparams[3:5], [7, 1])  # rows, batch

    def test_k_prepare(self):
        # Qwen 3's keys and their values from a packed projection: RMS,
        # NeoX RoPE by index within each sequence, v copied beside.
        qkv = self.rand(9, 12 * 128)
        k = qkv[:, 1024:1280].view(9, 2, 128)
        v = qkv[:, 1280:1536].view(9, 2, 128)
        kw = self.rand(128)
        cu = torch.tensor([0, 4, 4, 9], dtype=torch.int32)
        k_out, v_out = norm_opt.k_prepare(k, v=v, cu_seqlens=cu, qk_norm="rms",
                                          k_weight=kw, rope="neox",
                                          rope_theta=1e6)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_kprep_rms_ropeneox128_v_d128_"),
                        name)
        self.assertEqual(params, [k.data_ptr(), v.data_ptr(), kw.data_ptr(),
                                  cu.data_ptr(), k_out.data_ptr(),
                                  v_out.data_ptr(), 9, 3, 1536, 1536, 256,
                                  256])
        self.assertEqual((k_out.shape, v_out.shape), (k.shape, v.shape))
        # The rotation alone at explicit positions (no cu_seqlens), and the
        # refusals.
        positions = torch.tensor(range(9), dtype=torch.int32)
        norm_opt.k_prepare(k, rope="gptj", positions=positions)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_kprep_ropegptj128_pos_d128_"),
                        name)
        self.assertEqual(params[:2], [k.data_ptr(), positions.data_ptr()])
        with self.assertRaisesRegex(ValueError, "needs qk_norm=, rope=, or "
                                    "both"):
            norm_opt.k_prepare(k)
        with self.assertRaisesRegex(ValueError, "k_weight needs qk_norm"):
            norm_opt.k_prepare(k, k_weight=kw, rope="neox")

    def test_k_prepare_cache(self):
        # QK-Norm + RoPE + the cache write in one launch: two sequences of 2
        # and 3 new tokens after 3 and 14 cached rows of 16 (the last one's
        # third token dropped by the kernel).
        k, v = self.rand(5, 2, 64), self.rand(5, 2, 64)
        k_cache, v_cache = self.rand(2, 16, 2, 64), self.rand(2, 16, 2, 64)
        lengths = torch.tensor([3, 14], dtype=torch.int32)
        cu = torch.tensor([0, 2, 5], dtype=torch.int32)
        kw = self.rand(64)
        self.assertIsNone(norm_opt.k_prepare_cache(
            k, v, k_cache, v_cache, lengths, cu, qk_norm="rms", k_weight=kw,
            rope="neox", rope_theta=1e6))
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_kprep_rms_ropeneox64_cache_d64_"),
                        name)
        # k, v, k_weight, cu_seqlens, cache_seqlens, k_cache, v_cache; rows,
        # batch, cache_capacity; the strides of k, v, k_cache, v_cache.
        self.assertEqual(params, [k.data_ptr(), v.data_ptr(), kw.data_ptr(),
                                  cu.data_ptr(), lengths.data_ptr(),
                                  k_cache.data_ptr(), v_cache.data_ptr(), 5,
                                  2, 16, 128, 128, 128, 128])
        call = self.layer.prepare_k_prepare(
            k, v=v, cu_seqlens=cu, qk_norm="rms", k_weight=kw, rope="neox",
            cache=(k_cache, v_cache, lengths))
        self.assertEqual((call.desc.kind, call.args.cache_rows, call.outputs),
                         (capi.OP_K_PREPARE, 32, ()))
        self.assertTrue(call.desc.flags & capi.OP_WRITE_CACHE)
        self.assertFalse(call.desc.flags & capi.OP_COPY_V)
        # Without a norm and rope, a plain cache write of one token a
        # sequence (no cu_seqlens), into flat [batch * capacity, Hkv * D]
        # caches.
        flat_k, flat_v = self.rand(32, 128), self.rand(32, 128)
        norm_opt.k_prepare_cache(k[:2], v[:2], flat_k, flat_v, lengths)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_kprep_cache_d64_"), name)
        # k, v, cu_seqlens (the layer's), cache_seqlens, k_cache, v_cache;
        # rows, batch, cache_capacity.
        self.assertEqual(params[:2], [k.data_ptr(), v.data_ptr()])
        self.assertNotEqual(params[2], 0)
        self.assertEqual(params[3:6], [lengths.data_ptr(), flat_k.data_ptr(),
                                       flat_v.data_ptr()])
        self.assertEqual(params[6:9], [2, 2, 16])
        # The refusals, before any launch.
        before = self.fake.fakecuda_launch_count()
        cases = [
            (lambda: norm_opt.k_prepare_cache(k, v, k_cache, v_cache,
                                              lengths), ValueError,
             "k has 5 tokens for 2 sequences: without cu_seqlens each "
             "sequence has one new token"),
            (lambda: norm_opt.k_prepare_cache(k, v, k_cache.half(), v_cache,
                                              lengths, cu), TypeError,
             "the keys are torch.bfloat16, k_cache is torch.float16"),
            (lambda: norm_opt.k_prepare_cache(k, v, k_cache,
                                              self.rand(2, 8, 2, 64),
                                              lengths, cu), ValueError,
             "k_cache has 32 rows, v_cache 16"),
            (lambda: norm_opt.k_prepare_cache(k, v, k_cache, v_cache,
                                              lengths.long(), cu), ValueError,
             "cache_seqlens: expected an int32 tensor"),
            (lambda: norm_opt.k_prepare_cache(k, v, k_cache, v_cache, lengths,
                                              cu.long()), ValueError,
             "cu_seqlens: expected batch \\+ 1 = 3 int32 offsets"),
            (lambda: norm_opt.k_prepare_cache(k, v, self.rand(3, 16, 2, 64),
                                              v_cache, lengths, cu),
             ValueError, r"k_cache: expected \[2, capacity, 2, 64\]"),
        ]
        for run, error, message in cases:
            with self.assertRaisesRegex(error, message):
                run()
        self.assertEqual(self.fake.fakecuda_launch_count(), before)
        # The op's shape function: nothing to return, nothing launched.
        meta = lambda *shape: torch.empty(*shape, dtype=torch.bfloat16,
                                          device="meta")
        torch.ops.norm_opt.k_prepare_cache(
            meta(5, 2, 64), meta(5, 2, 64), meta(2, 16, 2, 64),
            meta(2, 16, 2, 64), torch.empty(2, dtype=torch.int32,
                                            device="meta"),
            None, None, "rms", 1e-6, 0.0, None, "neox", None, 1e6, None,
            None, False)
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    # The op's shape function: what torch.compile's fake tensors see.
    def test_attention_shapes_without_running(self):
        meta = lambda *shape: torch.empty(*shape, dtype=torch.bfloat16,
                                          device="meta")
        before = self.fake.fakecuda_launch_count()
        out, lse = torch.ops.norm_opt.attention(
            meta(9, 8, 64), meta(9, 2, 64), meta(9, 2, 64), None, None, None,
            True, None, None, 1e-6, 0.0, True, None)
        self.assertEqual((out.shape, out.device.type), ((9, 8, 64), "meta"))
        self.assertEqual((lse.shape, lse.dtype), ((9, 8), torch.float32))
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    # rope= to the op desc (no launch); the torch op passes them through.
    def test_attention_rope_desc(self):
        q, k = self.rand(5, 4, 64), self.rand(5, 2, 64)
        fields = lambda call: (call.desc.rope, call.desc.rotary_dim,
                               call.desc.rope_theta)
        prepare = self.layer.prepare_attention
        self.assertEqual(fields(prepare(q, k, k)), (capi.ROPE_NONE, 0, 0.0))
        self.assertEqual(fields(prepare(q, k, k, rope="neox")),
                         (capi.ROPE_NEOX, 0, 10000.0))
        call = prepare(q, k, k, rope="gptj", rotary_dim=32, rope_theta=5e5)
        self.assertEqual(fields(call), (capi.ROPE_GPTJ, 32, 5e5))
        self.assertEqual(call.desc._to_c().struct_size, 120)
        # Llama 4: rotated, then normalized (API 9).
        self.assertFalse(call.desc.flags & capi.OP_ROPE_FIRST)
        call = prepare(q, k, k, qk_norm="l2", rope="neox", rope_first=True)
        self.assertTrue(call.desc.flags & capi.OP_ROPE_FIRST)
        with self.assertRaisesRegex(ValueError, "rope_first: rotating before "
                                    "the QK-Norm needs rope= and qk_norm="):
            prepare(q, k, k, rope="neox", rope_first=True)
        # Command R+: a QK-Norm weight row per head (API 9), [H, D] or flat.
        wq, wk = self.rand(4, 64), self.rand(2, 64)
        for pair in ((wq, wk), (wq.flatten(), wk.flatten())):
            call = prepare(q, k, k, qk_norm="layer", q_norm_weight=pair[0],
                           k_norm_weight=pair[1])
            # q's weights to the attention kernel, k's to the K-prepare
            # that runs before it (API 10).
            keys, = call.before
            self.assertEqual(call.desc.flags & capi.OP_PREPARED_K,
                             capi.OP_PREPARED_K)
            for c in (call, keys):
                self.assertTrue(c.desc.flags & capi.OP_QK_WEIGHT_PER_HEAD)
            self.assertEqual((call.args.tensors[capi.Q_WEIGHT].cols,
                              call.args.tensors[capi.K_WEIGHT].data,
                              keys.args.tensors[capi.K_WEIGHT].cols),
                             (256, None, 128))
            self.assertEqual(call.args.tensors[capi.K].data,
                             keys.outputs[0].data_ptr())
            # Keys in the loop: one kernel with both weights.
            call = prepare(q, k, k, qk_norm="layer", q_norm_weight=pair[0],
                           k_norm_weight=pair[1], prepare_keys=False)
            self.assertEqual((call.before, call.desc.flags &
                              capi.OP_PREPARED_K), ((), 0))
            self.assertEqual((call.args.tensors[capi.Q_WEIGHT].cols,
                              call.args.tensors[capi.K_WEIGHT].cols), (256, 128))
        call = prepare(q, k, k, qk_norm="layer", q_norm_weight=self.rand(64),
                       k_norm_weight=self.rand(64))
        self.assertFalse(call.desc.flags & capi.OP_QK_WEIGHT_PER_HEAD)
        with self.assertRaisesRegex(ValueError, r"k_norm_weight: expected 128 "
                                    r"elements \(a row of 64 per head"):
            prepare(q, k, k, qk_norm="rms", q_norm_weight=wq,
                    k_norm_weight=self.rand(64))
        meta = lambda *shape: torch.empty(*shape, dtype=torch.bfloat16,
                                          device="meta")
        out, _ = torch.ops.norm_opt.attention(
            meta(9, 8, 64), meta(9, 2, 64), meta(9, 2, 64), None, None, None,
            True, None, None, 1e-6, 0.0, False, None, "neox", 32, 5e5)
        self.assertEqual(out.shape, (9, 8, 64))
        out, _ = torch.ops.norm_opt.attention(
            meta(9, 8, 64), meta(9, 2, 64), meta(9, 2, 64), None, None, None,
            True, None, "l2", 1e-6, 0.0, False, None, "neox", None, 5e5, None,
            None, True)
        self.assertEqual(out.shape, (9, 8, 64))

    # The ops' shape functions check positions and the table (meta tensors:
    # no data, no launch).
    def test_rope_inputs_shapes_without_running(self):
        meta = lambda *shape, dtype=torch.bfloat16: torch.empty(
            *shape, dtype=dtype, device="meta")
        positions = meta(9, dtype=torch.int32)
        table = meta(4096, 32, dtype=torch.float32)
        before = self.fake.fakecuda_launch_count()
        out, _ = torch.ops.norm_opt.attention(
            meta(9, 8, 64), meta(9, 2, 64), meta(9, 2, 64), None, None, None,
            True, None, None, 1e-6, 0.0, False, None, "neox", 32, 10000.0,
            positions, table)
        self.assertEqual((out.shape, out.device.type), ((9, 8, 64), "meta"))
        out = torch.ops.norm_opt.attention_decode(
            meta(2, 4, 64), meta(2, 2, 64), meta(2, 2, 64),
            meta(2, 16, 2, 64), meta(2, 16, 2, 64),
            meta(2, dtype=torch.int32), None, None, None, None, None, 1e-6,
            0.0, None, "gptj", None, 10000.0, positions[:2],
            meta(100, 64, dtype=torch.float32))
        self.assertEqual(out.shape, (2, 4, 64))
        self.assertEqual(self.fake.fakecuda_launch_count(), before)
        prefill = lambda table=table, positions=positions, theta=10000.0, \
            rope="neox": torch.ops.norm_opt.attention(
                meta(9, 8, 64), meta(9, 2, 64), meta(9, 2, 64), None, None,
                None, False, None, None, 1e-6, 0.0, False, None, rope,
                None if rope is None else 32, theta, positions, table)
        cases = [
            (lambda: prefill(table=meta(4096, 64, dtype=torch.float32)),
             ValueError, r"cos_sin_cache: expected \[max_position, rotary_dim "
             r"= 32\] \(cos, then sin\), got shape \(4096, 64\)"),
            (lambda: prefill(table=meta(4096, 32)), TypeError,
             "cos_sin_cache: expected float32, got torch.bfloat16"),
            (lambda: prefill(positions=meta(8, dtype=torch.int32)),
             ValueError, r"positions: expected one position per token, "
             r"shape \(9,\), got \(8,\)"),
            (lambda: prefill(positions=meta(9, dtype=torch.int64)),
             TypeError, "positions: expected int32, got torch.int64"),
            (lambda: prefill(theta=5e5), ValueError, "rope_theta: the "
             "cos_sin_cache gives the angles"),
            (lambda: prefill(rope=None), ValueError, "need rope="),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)
        decode = lambda width: torch.ops.norm_opt.attention_decode(
            meta(2, 4, 64), meta(2, 2, 64), meta(2, 2, 64),
            meta(2, 16, 2, 64), meta(2, 16, 2, 64),
            meta(2, dtype=torch.int32), None, None, None, None, None, 1e-6,
            0.0, None, "neox", None, 10000.0, None,
            meta(100, width, dtype=torch.float32))
        self.assertEqual(decode(64).shape, (2, 4, 64))
        with self.assertRaisesRegex(ValueError, "rotary_dim = 64"):
            decode(32)

    # normjit-write-test-bundle's third attention: test_attention's, with
    # neox rotary embeddings at explicit positions from a cos/sin table
    # whose rows are strided (132 floats: a multiple of 4).
    def test_attention_rope_positions_and_table(self):
        qkv = self.rand(100, 1024)
        q = qkv[:, :512].view(100, 4, 128)
        k = qkv[:, 512:768].view(100, 2, 128)
        v = qkv[:, 768:].view(100, 2, 128)
        cu = torch.tensor([0, 40, 41, 100], dtype=torch.int32)
        positions = torch.arange(100, dtype=torch.int32) + 1000
        table = torch.randn(4096, 132)[:, :128]
        call = self.layer.prepare_attention(
            q, k, v, causal=True, cu_seqlens=cu, rope="neox",
            positions=positions, cos_sin_cache=table, prepare_keys=False)
        self.assertEqual(call.desc.flags, capi.OP_CAUSAL |
                         capi.OP_ROPE_POSITIONS | capi.OP_ROPE_TABLE)
        # The table gives the angles: rope_theta 0, as the C API wants.
        self.assertEqual((call.desc.rope, call.desc.rotary_dim,
                          call.desc.rope_theta), (capi.ROPE_NEOX, 0, 0.0))
        self.assertEqual(call.args.rope_table_rows, 4096)
        tensor = call.args.tensors[capi.ROPE_TABLE]
        self.assertEqual((tensor.data, tensor.dtype, tensor.cols,
                          tensor.row_stride),
                         (table.data_ptr(), capi.F32, 128, 132))
        tensor = call.args.tensors[capi.POSITIONS]
        self.assertEqual((tensor.data, tensor.dtype, tensor.cols),
                         (positions.data_ptr(), capi.I32, 100))
        # Served by the bundle: the desc names the bundle's operation.
        from norm_opt import _registry
        self.assertEqual(_registry.get_kernel(0, call.desc).tuning(100).source,
                         "bundle")
        with torch.no_grad():
            out = norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu,
                                     rope="neox", positions=positions,
                                     cos_sin_cache=table)
        (kname, kparams), (name, params) = self.launches(2)
        # K-prepare: k, positions, rope_table, k_out; rows, rope_table_rows;
        # the row strides of k, rope_table, k_out (no cu_seqlens: the keys
        # turn at their positions).
        self.assertTrue(kname.startswith(
            "norm_kprep_ropeneox128_table_pos_d128_bf16_bf16_"), kname)
        prepared = kparams[3]
        self.assertEqual(kparams, [k.data_ptr(), positions.data_ptr(),
                                   table.data_ptr(), prepared, 100, 4096,
                                   1024, 132, 256])
        self.assertTrue(name.startswith(
            "norm_attn_causal_kprep_ropeneox128_table_pos_d128_h4x2_bf16_"),
            name)
        # q, k (prepared), v, cu_seqlens, positions, rope_table, output;
        # rows, batch, rope_table_rows; the row strides of q, k, v,
        # rope_table, output.
        self.assertEqual(params, [q.data_ptr(), prepared, v.data_ptr(),
                                  cu.data_ptr(), positions.data_ptr(),
                                  table.data_ptr(), out.data_ptr(), 100, 3,
                                  4096, 1024, 256, 1024, 132, 512])
        self.assertEqual((out.shape, out.dtype), (q.shape, q.dtype))
        # Positions with no single stride are copied; a one-row table has
        # no row stride to speak of (its width is passed).
        strided = (torch.arange(200, dtype=torch.int32) * 3)[::2]
        norm_opt.attention(q, k, v, causal=True, cu_seqlens=cu, rope="neox",
                           positions=strided, cos_sin_cache=table[:1])
        params = self.launch()[1]
        self.assertNotEqual(params[4], strided.data_ptr())
        self.assertEqual((params[5], params[9], params[13]),
                         (table.data_ptr(), 1, 128))

    # Positions alone (angles from rope_theta) and a table alone (positions
    # by index), with rotary dims below the head dim: compiled for the fake
    # device.
    def test_attention_rope_positions_or_table_alone(self):
        q, k, v = self.rand(7, 4, 64), self.rand(7, 2, 64), self.rand(7, 2, 64)
        positions = torch.tensor([5, 0, 9, 2, 2, 7, 1], dtype=torch.int32)
        out = norm_opt.attention(q, k, v, rope="gptj", rotary_dim=32,
                                 rope_theta=5e5, positions=positions)
        (kname, kparams), (name, params) = self.launches(2)
        self.assertTrue(kname.startswith("norm_kprep_ropegptj32_pos_d64_"),
                        kname)
        self.assertEqual(kparams[:2], [k.data_ptr(), positions.data_ptr()])
        self.assertTrue(name.startswith(
            "norm_attn_kprep_ropegptj32_pos_d64_h4x2_"), name)
        # q, k (prepared), v, cu_seqlens, positions, output; rows, batch;
        # strides.
        self.assertEqual(params[1], kparams[2])
        self.assertEqual(params[4:8], [positions.data_ptr(), out.data_ptr(),
                                       7, 1])
        self.assertEqual(params[8:], [256, 128, 128, 256])
        call = self.layer.prepare_attention(q, k, v, rope="gptj",
                                            rotary_dim=32, rope_theta=5e5,
                                            positions=positions,
                                            prepare_keys=False)
        self.assertEqual((call.desc.flags, call.desc.rope_theta,
                          call.args.rope_table_rows),
                         (capi.OP_ROPE_POSITIONS, 5e5, 0))
        table = torch.randn(64, 48)
        out = norm_opt.attention(q, k, v, causal=True, rope="neox",
                                 rotary_dim=48, cos_sin_cache=table)
        (kname, kparams), (name, params) = self.launches(2)
        # K-prepare turns keys by their index within their sequence: k,
        # cu_seqlens, rope_table, k_out; rows, batch, rope_table_rows.
        self.assertTrue(kname.startswith("norm_kprep_ropeneox48_table_d64_"),
                        kname)
        self.assertEqual(kparams[:2], [k.data_ptr(), params[3]])
        self.assertEqual(kparams[4:7], [7, 1, 64])
        self.assertTrue(name.startswith(
            "norm_attn_causal_kprep_ropeneox48_table_d64_h4x2_"), name)
        # q, k (prepared), v, cu_seqlens, rope_table, output; rows, batch,
        # rope_table_rows; strides of q, k, v, rope_table, output.
        self.assertEqual(params[1], kparams[3])
        self.assertEqual(params[4:9], [table.data_ptr(), out.data_ptr(), 7, 1,
                                       64])
        self.assertEqual(params[9:], [256, 128, 128, 48, 256])

    # Decode (compiled for the fake device: the bundle has no decode
    # kernel): the new tokens, the caches in place as [batch, capacity,
    # heads, head_dim] views, the library's own workspace and semaphores,
    # one new token per sequence without cu_seqlens.
    def test_attention_decode(self):
        q, k, v = self.rand(2, 256), self.rand(2, 128), self.rand(2, 128)
        k_cache, v_cache = self.rand(2, 16, 2, 64), self.rand(2, 16, 2, 64)
        lengths = torch.tensor([3, 0], dtype=torch.int32)
        out = norm_opt.attention_decode(q, k, v, k_cache, v_cache, lengths,
                                        head_dim=64, rope="neox")
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_decode_ropeneox64_d64_h4x2_"
                                        "bf16_"), name)
        self.assertEqual(params[:3], [q.data_ptr(), k.data_ptr(),
                                      v.data_ptr()])
        self.assertEqual(params[4:8], [lengths.data_ptr(), out.data_ptr(),
                                       k_cache.data_ptr(), v_cache.data_ptr()])
        # cu_seqlens, the workspace and the semaphores: the layer's and the
        # library's allocations.
        self.assertTrue(all(params[i] != 0 for i in (3, 8, 9)), params)
        rows, batch, splits, capacity = params[10:14]
        self.assertEqual((rows, batch, capacity), (2, 2, 16))
        self.assertGreaterEqual(splits, 1)
        self.assertEqual(params[14:], [256, 128, 128, 256, 128, 128])
        self.assertEqual((out.shape, out.dtype), (q.shape, q.dtype))
        with self.assertRaisesRegex(ValueError, "one new token"):
            norm_opt.attention_decode(self.rand(3, 256), k, v, k_cache,
                                      v_cache, lengths, head_dim=64)

    # A paged cache (API 12): vLLM's [num_blocks, block_size, Hkv, D] pages
    # through a block table, and SGLang's pages of one row.
    def test_attention_decode_paged(self):
        q, k, v = self.rand(2, 256), self.rand(2, 128), self.rand(2, 128)
        k_cache, v_cache = self.rand(6, 16, 2, 64), self.rand(6, 16, 2, 64)
        lengths = torch.tensor([3, 20], dtype=torch.int32)
        table = torch.tensor([[4, -1, -1], [0, 5, -1]], dtype=torch.int32)
        out = norm_opt.attention_decode(q, k, v, k_cache, v_cache, lengths,
                                        head_dim=64, rope="neox",
                                        block_table=table)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_decode_ropeneox64_p16_d64_h4x2_"
                                        "bf16_"), name)
        # q, k, v, cu_seqlens, cache_seqlens, block_tables, output, k_cache,
        # v_cache, workspace, semaphores; rows, batch, kv_splits,
        # cache_capacity (a table row of 3 pages of 16), cache_blocks; the
        # strides of q, k, v, output, k_cache, v_cache.
        self.assertEqual(params[:3], [q.data_ptr(), k.data_ptr(),
                                      v.data_ptr()])
        self.assertEqual(params[4:9], [lengths.data_ptr(), table.data_ptr(),
                                       out.data_ptr(), k_cache.data_ptr(),
                                       v_cache.data_ptr()])
        rows, batch, splits, capacity, blocks = params[11:16]
        self.assertEqual((rows, batch, capacity, blocks), (2, 2, 48, 6))
        self.assertEqual(params[16:], [256, 128, 128, 256, 128, 128])
        call = self.layer.prepare_attention_decode(
            q, k, v, k_cache, v_cache, lengths, head_dim=64,
            block_table=table)
        self.assertEqual((call.desc.cache_block_size, call.args.cache_rows,
                          call.args.struct_size),
                         (16, 96, ctypes.sizeof(capi._LaunchArgsV12)))
        # SGLang's token pool: flat caches, pages of one row, K-prepare.
        flat_k, flat_v = self.rand(10, 128), self.rand(10, 128)
        pool = torch.tensor([[7, 2, 9, 0], [1, 3, -1, -1]], dtype=torch.int32)
        norm_opt.k_prepare_cache(k, v, flat_k, flat_v, lengths, qk_norm="rms",
                                 head_dim=64, block_table=pool, block_size=1)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_kprep_rms_cache_p1_d64_"), name)
        # k, v, cu_seqlens, cache_seqlens, block_tables, k_cache, v_cache;
        # rows, batch, cache_capacity, cache_blocks.
        self.assertEqual(params[3:7], [lengths.data_ptr(), pool.data_ptr(),
                                       flat_k.data_ptr(), flat_v.data_ptr()])
        self.assertEqual(params[7:11], [2, 2, 4, 10])
        # The refusals, before any launch.
        before = self.fake.fakecuda_launch_count()
        cases = [
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                block_table=table.long()), ValueError,
             r"block_table: expected int32 \[batch = 2, max_blocks\]"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                block_table=table[:1]), ValueError,
             r"block_table: expected int32 \[batch = 2, max_blocks\]"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                block_table=table, block_size=8), ValueError,
             r"k_cache: expected \[num_blocks, 8, 2, 64\]"),
            (lambda: norm_opt.attention_decode(
                q, k, v, flat_k, flat_v, lengths, head_dim=64,
                block_table=table, block_size=24), ValueError,
             "must be a power of two in \\[1, 256\\]"),
            (lambda: norm_opt.attention_decode(
                q, k, v, flat_k, flat_v, lengths, head_dim=64,
                block_table=table), ValueError,
             "block_table: give block_size with a 2-D cache"),
            (lambda: norm_opt.attention_decode(
                q, k, v, flat_k, flat_v, lengths, head_dim=64,
                block_table=table, block_size=4), ValueError,
             "k_cache: 10 rows are not whole pages of 4"),
            (lambda: norm_opt.attention_decode(
                q, k, v, flat_k, flat_v, lengths, head_dim=64,
                block_size=1), ValueError,
             "block_size pages a cache: pass block_table too"),
        ]
        for call, error, message in cases:
            with self.assertRaisesRegex(error, message):
                call()
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    # An FP8 cache (API 12): e4m3 bytes (vLLM's uint8) with k_scale and
    # v_scale, one or one per kv head.
    # FlashInfer's ragged page table (API 13): kv_indices in block_table,
    # kv_indptr beside it, the lengths from kv_last_page_len.
    def test_attention_decode_ragged_pages(self):
        q, k, v = self.rand(2, 256), self.rand(2, 128), self.rand(2, 128)
        k_cache, v_cache = self.rand(6, 16, 2, 64), self.rand(6, 16, 2, 64)
        indices = torch.tensor([4, 0, 5], dtype=torch.int32)
        indptr = torch.tensor([0, 1, 3], dtype=torch.int32)
        # The tables hold the new token: 4 and 21 rows, so 3 and 20 before.
        last = torch.tensor([4, 5], dtype=torch.int32)
        lengths = norm_opt.cache_seqlens_from_last_page_len(indptr, last, 16)
        self.assertEqual(lengths.dtype, torch.int32)
        self.assertEqual(lengths.tolist(), [3, 20])
        two = torch.tensor([0, 2, 3], dtype=torch.int32)
        self.assertEqual(norm_opt.cache_seqlens_from_last_page_len(
            indptr, last, 16, two).tolist(), [2, 20])
        empty = torch.tensor([0, 0, 3], dtype=torch.int32)
        self.assertEqual(norm_opt.cache_seqlens_from_last_page_len(
            empty, last, 16).tolist(), [0, 36])
        call = self.layer.prepare_attention_decode(
            q, k, v, k_cache, v_cache, lengths, head_dim=64,
            block_table=indices, kv_indptr=indptr)
        self.assertEqual(call.desc.cache_block_size, 16)
        self.assertTrue(call.desc.flags & capi.OP_PAGE_INDPTR)
        self.assertEqual(call.args.struct_size,
                         ctypes.sizeof(capi._LaunchArgs))
        tensors = call.args.tensors
        self.assertEqual((tensors[capi.BLOCK_TABLES].data,
                          tensors[capi.BLOCK_TABLES].cols),
                         (indices.data_ptr(), 3))
        self.assertEqual((tensors[capi.PAGE_INDPTR].data,
                          tensors[capi.PAGE_INDPTR].cols),
                         (indptr.data_ptr(), 3))
        call = self.layer.prepare_k_prepare(
            k, v=v, qk_norm="rms", head_dim=64,
            cache=(k_cache, v_cache, lengths, indices, None, None, indptr))
        self.assertTrue(call.desc.flags & capi.OP_PAGE_INDPTR)
        self.assertEqual(call.args.tensors[capi.PAGE_INDPTR].data,
                         indptr.data_ptr())
        before = self.fake.fakecuda_launch_count()
        cases = [
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                block_table=indices.view(1, 3), kv_indptr=indptr),
             ValueError, r"block_table: with kv_indptr, FlashInfer's "
             r"kv_indices: expected int32 \[pages\]"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                block_table=indices, kv_indptr=indptr[:2]), ValueError,
             r"kv_indptr: expected int32 \[batch \+ 1 = 3\]"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                kv_indptr=indptr), ValueError,
             "kv_indptr: FlashInfer's page table takes block_table"),
            (lambda: norm_opt.cache_seqlens_from_last_page_len(
                indptr, last[:1], 16), ValueError,
             r"kv_last_page_len: expected int32 \[batch = 2\]"),
        ]
        for call, error, message in cases:
            with self.assertRaisesRegex(error, message):
                call()
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    def test_attention_decode_fp8_cache(self):
        q, k, v = self.rand(2, 256), self.rand(2, 128), self.rand(2, 128)
        k_cache = torch.zeros(2, 16, 2, 64, dtype=torch.uint8)
        v_cache = torch.zeros(2, 16, 2, 64, dtype=torch.uint8)
        lengths = torch.tensor([3, 0], dtype=torch.int32)
        k_scale = torch.tensor([0.02, 0.01])
        v_scale = torch.tensor([0.03, 0.05])
        out = norm_opt.attention_decode(q, k, v, k_cache, v_cache, lengths,
                                        head_dim=64, k_scale=k_scale,
                                        v_scale=v_scale)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_decode_fp8h_d64_h4x2_bf16_"),
                        name)
        # q, k, v, cu_seqlens, cache_seqlens, k_scale, v_scale, output,
        # k_cache, v_cache, ...
        self.assertEqual(params[4:10], [lengths.data_ptr(), k_scale.data_ptr(),
                                        v_scale.data_ptr(), out.data_ptr(),
                                        k_cache.data_ptr(),
                                        v_cache.data_ptr()])
        call = self.layer.prepare_attention_decode(
            q, k, v, k_cache, v_cache, lengths, head_dim=64,
            k_scale=k_scale[:1], v_scale=v_scale[:1])
        self.assertEqual(call.desc.flags & (capi.OP_FP8_CACHE |
                                            capi.OP_CACHE_SCALE_PER_HEAD),
                         capi.OP_FP8_CACHE)
        self.assertEqual(call.args.tensors[capi.K_CACHE].dtype, capi.F8E4M3FN)
        # K-prepare into the same caches.
        norm_opt.k_prepare_cache(k, v, k_cache, v_cache, lengths,
                                 qk_norm="rms", head_dim=64, k_scale=k_scale,
                                 v_scale=v_scale)
        name, _ = self.launch()
        self.assertTrue(name.startswith("norm_kprep_rms_cache_fp8h_d64_"), name)
        before = self.fake.fakecuda_launch_count()
        cases = [
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64), TypeError,
             "the keys are torch.bfloat16, k_cache is torch.uint8"),
            (lambda: norm_opt.attention_decode(
                q, k, v, self.rand(2, 16, 2, 64), self.rand(2, 16, 2, 64),
                lengths, head_dim=64, k_scale=k_scale, v_scale=v_scale),
             TypeError, "k_cache: an FP8 cache"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                k_scale=k_scale), ValueError, "v_scale: expected a float32"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                k_scale=torch.ones(3), v_scale=torch.ones(3)), ValueError,
             r"k_scale: expected a float32 scale, one or one per kv head \(2\)"),
            (lambda: norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, head_dim=64,
                k_scale=k_scale, v_scale=v_scale[:1]), ValueError,
             "k_scale and v_scale: one count for both"),
        ]
        for call, error, message in cases:
            with self.assertRaisesRegex(error, message):
                call()
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    # Decode with positions (not the cache lengths) and a Llama-sized table.
    def test_attention_decode_rope_positions_and_table(self):
        q, k, v = self.rand(2, 256), self.rand(2, 128), self.rand(2, 128)
        k_cache, v_cache = self.rand(2, 16, 2, 64), self.rand(2, 16, 2, 64)
        lengths = torch.tensor([3, 0], dtype=torch.int32)
        cu = torch.arange(3, dtype=torch.int32)
        positions = torch.tensor([131000, 17], dtype=torch.int32)
        table = torch.randn(131072, 64)
        out = norm_opt.attention_decode(q, k, v, k_cache, v_cache, lengths, cu,
                                        head_dim=64, rope="neox",
                                        positions=positions,
                                        cos_sin_cache=table)
        name, params = self.launch()
        self.assertTrue(name.startswith(
            "norm_decode_ropeneox64_table_pos_d64_h4x2_bf16_"), name)
        # q, k, v, cu_seqlens, cache_seqlens, positions, rope_table, output,
        # k_cache, v_cache, workspace, semaphores; rows, batch, kv_splits,
        # cache_capacity, rope_table_rows; the strides of q, k, v,
        # rope_table, output, k_cache, v_cache.
        self.assertEqual(params[:8], [q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                      cu.data_ptr(), lengths.data_ptr(),
                                      positions.data_ptr(), table.data_ptr(),
                                      out.data_ptr()])
        self.assertEqual(params[8:10], [k_cache.data_ptr(),
                                        v_cache.data_ptr()])
        rows, batch, splits, capacity, table_rows = params[12:17]
        self.assertEqual((rows, batch, capacity, table_rows), (2, 2, 16,
                                                               131072))
        self.assertEqual(params[17:], [256, 128, 128, 64, 256, 128, 128])
        call = self.layer.prepare_attention_decode(
            q, k, v, k_cache, v_cache, lengths, cu, head_dim=64, rope="neox",
            positions=positions, cos_sin_cache=table)
        self.assertEqual((call.desc.kind, call.desc.flags, call.desc.rope_theta,
                          call.args.rope_table_rows, call.args.cache_rows),
                         (capi.OP_ATTENTION_DECODE, capi.OP_ROPE_POSITIONS |
                          capi.OP_ROPE_TABLE, 0.0, 131072, 32))
        self.assertIs(call.keep[-4], table)  # kept alive until the launch
        with self.assertRaisesRegex(ValueError, r"positions: expected one "
                                    r"position per token, shape \(2,\)"):
            norm_opt.attention_decode(q, k, v, k_cache, v_cache, lengths,
                                      head_dim=64, rope="neox",
                                      positions=positions[:1])

    # torch.ops.norm_opt.attention_decode (which norm_opt.attention_decode
    # calls, above: its caches are the caller's, never copies): meta tensors
    # reach its shape function, never the driver.
    def test_attention_decode_op_without_running(self):
        meta = lambda *shape: torch.empty(*shape, dtype=torch.bfloat16,
                                          device="meta")
        before = self.fake.fakecuda_launch_count()
        out = torch.ops.norm_opt.attention_decode(
            meta(2, 4, 64), meta(2, 2, 64), meta(2, 2, 64),
            meta(2, 16, 2, 64), meta(2, 16, 2, 64),
            torch.empty(2, dtype=torch.int32, device="meta"), None, None,
            None, None, "rms", 1e-6, 0.0, None, "neox", None, 1e6)
        self.assertEqual((out.shape, out.dtype, out.device.type),
                         ((2, 4, 64), torch.bfloat16, "meta"))
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    def test_attention_errors(self):
        q, k = self.rand(5, 4, 64), self.rand(5, 2, 64)
        positions = torch.arange(5, dtype=torch.int32)
        table = torch.randn(16, 64)
        cases = [
            (lambda: norm_opt.attention(q.clone().requires_grad_(), k, k),
             RuntimeError, "forward only"),
            (lambda: norm_opt.attention(q.flatten(1), k.flatten(1),
                                        k.flatten(1)), ValueError,
             "needs head_dim="),
            (lambda: norm_opt.attention(q, k, k, qk_norm="bad"), ValueError,
             "qk_norm: expected None, 'rms', 'l2' or 'layer'"),
            (lambda: norm_opt.attention(
                q, k, k, cu_seqlens=torch.tensor([0, 5])), ValueError,
             "cu_seqlens: expected an int32 tensor"),
            (lambda: norm_opt.attention(q, k.half(), k), TypeError,
             "attention takes one dtype"),
            (lambda: norm_opt.attention(q, k[:4], k), ValueError,
             "share cu_seqlens"),
            (lambda: norm_opt.attention(q, self.rand(5, 3, 64),
                                        self.rand(5, 3, 64)),
             norm_opt.NormJitError, "divide"),
            (lambda: norm_opt.attention(q, k, k, rope="llama"), ValueError,
             "rope: expected None, 'neox' or 'gptj', got 'llama'"),
            (lambda: norm_opt.attention(q, k, k, rotary_dim=32), ValueError,
             "rotary_dim and rope_theta need rope='neox' or 'gptj'"),
            (lambda: norm_opt.attention(q, k, k, rope_theta=5e5), ValueError,
             "rotary_dim and rope_theta need rope='neox' or 'gptj'"),
            # 0 would be the C API's default, not what was asked for.
            (lambda: norm_opt.attention(q, k, k, rope="neox", rotary_dim=0),
             ValueError, "rotary_dim: expected a positive number"),
            (lambda: norm_opt.attention(q, k, k, rope="gptj", rope_theta=0),
             ValueError, "rope_theta: expected a positive frequency base"),
            # Rotary positions and tables.
            (lambda: norm_opt.attention(q, k, k, positions=positions),
             ValueError, "positions and cos_sin_cache need rope='neox' or "
             "'gptj'"),
            (lambda: norm_opt.attention(q, k, k, cos_sin_cache=table),
             ValueError, "positions and cos_sin_cache need rope"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        positions=positions.long()),
             TypeError, r"positions: expected int32, got torch.int64 "
             r"\(convert with positions.to\(torch.int32\)\)"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        positions=positions[None]),
             ValueError, r"positions: expected one position per token, "
             r"shape \(5,\), got \(1, 5\)"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=table,
                                        rope_theta=5e5), ValueError,
             r"rope_theta: the cos_sin_cache gives the angles; leave "
             r"rope_theta at its default \(got 500000.0\)"),
            # (0, the C API's "unset", is refused as any other theta.)
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=table, rope_theta=0),
             ValueError, "rope_theta: the cos_sin_cache gives the angles"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=table.double()),
             TypeError, "cos_sin_cache: expected float32, got torch.float64"),
            (lambda: norm_opt.attention(q, k, k, rope="neox", rotary_dim=32,
                                        cos_sin_cache=table), ValueError,
             r"cos_sin_cache: expected \[max_position, rotary_dim = 32\]"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=table[0]), ValueError,
             r"got shape \(64,\)"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=table[:0]), ValueError,
             "cos_sin_cache: expected at least one position"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=torch.randn(64, 10).t()),
             ValueError, "cos_sin_cache: the last dimension must be "
             r"contiguous and the row stride a multiple of 4 floats, got "
             r"strides \(1, 10\)"),
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=torch.randn(
                                            10, 66)[:, :64]), ValueError,
             r"row stride a multiple of 4 floats, got strides \(66, 1\)"),
            # libnormjit's: the table is read in 16-byte quads.
            (lambda: norm_opt.attention(q, k, k, rope="neox",
                                        cos_sin_cache=torch.randn(
                                            1 + 10 * 64)[1:].view(10, 64)),
             norm_opt.NormJitError, "buffer 'rope_table' at 0x[0-9a-f]+ is "
             "not aligned to the 16 bytes"),
            # libnormjit's rules, before any kernel is built.
            (lambda: norm_opt.attention(q, k, k, rope="neox", rotary_dim=25),
             norm_opt.NormJitError, "neox rotary embeddings need an even "
             r"rotary dim from 2 to the head dim \(64\), got 25"),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)
        with torch.no_grad():  # grad off: inputs may require it
            self.assertRaisesRegex(
                norm_opt.NormJitError, "divide",
                lambda: norm_opt.attention(q.clone().requires_grad_(),
                                           self.rand(5, 3, 64),
                                           self.rand(5, 3, 64)))



# Training (API 6): the forward kernels with their saved statistics, and
# the backward launches (a backward row kernel, then the library's column
# sums of its f32 partials into the weight and bias gradients) autograd
# makes, with the buffers, rows and strides each gets. No kernel runs: the
# gradients' values are the fake driver's garbage, their pointers are
# checked. torch.autograd.grad returns the backward's own tensors.
@unittest.skipUnless(torch is not None and FAKE, "needs torch and "
                     "NORMJIT_FAKE_CUDA")
class TrainingTest(FakeDriverCase):
    def rand(self, *shape, dtype=None):
        return super().rand(*shape, dtype=dtype).requires_grad_()

    def assertColumnSum(self, record, partials, gradient, hidden):
        name, params = record
        self.assertTrue(name.startswith(f"norm_colsum_h{hidden}_f32_"), name)
        # partials, the gradient; the partial rows, their stride.
        self.assertEqual(params[0], partials)
        self.assertEqual(params[1], gradient.data_ptr())
        self.assertGreaterEqual(params[2], 1)
        self.assertEqual(params[3], hidden)

    def test_rms_norm_training(self):
        x, w = self.rand(5, 4096), self.rand(4096)
        y = norm_opt.rms_norm(x, w, 1e-6)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_rms_h4096_bf16_bf16_"), name)
        # input, weight, output, saved_rstd (f32 [5, 1], the library's
        # kernel rows one each); rows; strides of input, output, rstd.
        rstd = params[3]
        self.assertEqual(params, [x.data_ptr(), w.data_ptr(), y.data_ptr(),
                                  rstd, 5, 4096, 4096, 1])
        self.assertIsNotNone(y.grad_fn)
        g = torch.randn(5, 4096).to(torch.bfloat16)
        before = self.fake.fakecuda_launch_count()
        dx, dw = torch.autograd.grad(y, (x, w), g)
        self.assertEqual(self.fake.fakecuda_launch_count(), before + 2)
        (name, params), colsum = self.launches(2)
        self.assertTrue(name.startswith("norm_rms_bwd_h4096_bf16_bf16_"), name)
        # input (v = x), grad_output, weight, saved_rstd (the forward's),
        # grad_input, weight_grad_partials (the library's); rows; strides of
        # input, grad_output, rstd, grad_input, partials.
        self.assertEqual(params[:5], [x.data_ptr(), g.data_ptr(), w.data_ptr(),
                                      rstd, dx.data_ptr()])
        self.assertNotIn(params[5], (0, dw.data_ptr()))
        self.assertEqual(params[6:], [5, 4096, 4096, 1, 4096, 4096])
        self.assertColumnSum(colsum, params[5], dw, 4096)
        self.assertEqual((dx.shape, dx.dtype, dw.shape, dw.dtype),
                         (x.shape, x.dtype, w.shape, w.dtype))
        # The op itself: fresh outputs, the same kernels.
        out, residual, mean, saved = torch.ops.norm_opt.row_norm(
            x.detach(), None, w.detach(), None, "rms", 1e-6)
        self.assertEqual((residual.numel(), mean.numel(), saved.shape,
                          saved.dtype), (0, 0, (5, 1), torch.float32))
        self.assertEqual(self.launch()[1][2:4], [out.data_ptr(),
                                                 saved.data_ptr()])
        # Served by the bundle (normjit-write-test-bundle's training specs).
        from norm_opt import _registry
        forward = capi.OpDesc(hidden=4096, flags=capi.OP_WEIGHT |
                              capi.OP_SAVE_STATS)
        backward, = _registry.get_backward_descs(0, forward)
        for desc in (forward, backward):
            self.assertEqual(_registry.get_kernel(0, desc).tuning(5).source,
                             "bundle", desc)

    def test_fused_add_rms_norm_training(self):
        # The residual stream f32, x bf16, DeepNorm's alpha: the backward
        # writes the residual's gradient (alpha dv, f32) and x's (dv, bf16).
        x, r, w = self.rand(5, 4096), self.rand(5, 4096, dtype=torch.float32), \
            self.rand(4096)
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6, alpha=2.0,
                                           weight_offset=1.0)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_rms_add_h4096_f32_bf16_"), name)
        # input = residual, addend = x, weight, output, residual_out, rstd.
        self.assertEqual(params[:5], [r.data_ptr(), x.data_ptr(), w.data_ptr(),
                                      y.data_ptr(), h.data_ptr()])
        rstd = params[5]
        gy = torch.randn(5, 4096).to(torch.bfloat16)
        gh = torch.randn(5, 4096)
        dx, dr, dw = torch.autograd.grad((y, h), (x, r, w), (gy, gh))
        (name, params), colsum = self.launches(2)
        self.assertTrue(name.startswith("norm_rms_bwd_add_h4096_f32_bf16_"),
                        name)
        # input (v = h), grad_output, residual_grad, weight, saved_rstd,
        # grad_input (the residual's), addend_grad (x's), partials.
        self.assertEqual(params[:7], [h.data_ptr(), gy.data_ptr(),
                                      gh.data_ptr(), w.data_ptr(), rstd,
                                      dr.data_ptr(), dx.data_ptr()])
        self.assertEqual(params[8], 5)
        self.assertColumnSum(colsum, params[7], dw, 4096)
        self.assertEqual((dr.dtype, dx.dtype, dw.dtype),
                         (torch.float32, torch.bfloat16, torch.bfloat16))
        # The kernel's operation: alpha and the offset as given.
        from norm_opt import _registry
        self.assertIn(capi.OpDesc(
            hidden=4096, input_type=capi.F32, flags=capi.OP_WEIGHT |
            capi.OP_ADDEND | capi.OP_RESIDUAL_OUT | capi.OP_BACKWARD,
            alpha=2.0, weight_offset=1.0),
            [key[1] for key in _registry._kernels])
        # alpha 1: grad_input is x's gradient too (no addend_grad buffer),
        # cast to x's dtype. h's gradient unused: the backward of a norm
        # without the residual stream's gradient (materialized zeros where
        # torch passes them).
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6)
        dx, dr = torch.autograd.grad(y, (x, r), gy)
        (name, params), _ = self.launches(2)
        self.assertEqual(params[0], h.data_ptr())
        self.assertIn(dr.data_ptr(), params)
        self.assertEqual((dr.dtype, dx.dtype), (torch.float32, torch.bfloat16))

    def test_layer_norm_training(self):
        x, w, b = self.rand(5, 1024), self.rand(1024), self.rand(1024)
        y = norm_opt.layer_norm(x, w, b, 1e-5)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_layer_h1024_bf16_bf16_"), name)
        # input, weight, bias, output, saved_mean, saved_rstd; rows;
        # strides of input, output, mean, rstd.
        mean, rstd = params[4:6]
        self.assertEqual(params[:4], [x.data_ptr(), w.data_ptr(), b.data_ptr(),
                                      y.data_ptr()])
        self.assertEqual(params[6:], [5, 1024, 1024, 1, 1])
        g = torch.randn(5, 1024).to(torch.bfloat16)
        dx, dw, db = torch.autograd.grad(y, (x, w, b), g)
        (name, params), wsum, bsum = self.launches(3)
        self.assertTrue(name.startswith("norm_layer_bwd_h1024_"), name)
        # input, grad_output, weight, saved_mean, saved_rstd, grad_input,
        # weight and bias partials.
        self.assertEqual(params[:6], [x.data_ptr(), g.data_ptr(), w.data_ptr(),
                                      mean, rstd, dx.data_ptr()])
        self.assertColumnSum(wsum, params[6], dw, 1024)
        self.assertColumnSum(bsum, params[7], db, 1024)
        # Weightless: no weight, no gradient sums.
        y = norm_opt.layer_norm(x, None, None)
        dx, = torch.autograd.grad(y, x, g)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_layer_bwd_h1024_"), name)
        self.assertEqual(params[:2], [x.data_ptr(), g.data_ptr()])
        self.assertEqual(params[4:6], [dx.data_ptr(), 5])

    # QK-Norm: the prologue saves one rstd per head ([tokens, Hq + Hkv]);
    # the backward is two per-head row kernels, q heads then k heads, each
    # reading its columns of qkv and of the statistics and writing its
    # columns of grad_qkv (v's are zero), each with its weight's sum.
    def test_qk_norm_training(self):
        qkv = self.rand(3, 48 * 128 + 64)[:, :48 * 128]
        qw, kw = self.rand(128), self.rand(128)
        q, k = norm_opt.qk_norm(qkv, 32, 8, qw, kw)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_qk_rms_d128_bf16_bf16_"), name)
        rstd = params[5]
        self.assertEqual(params[:5], [qkv.data_ptr(), qw.data_ptr(),
                                      kw.data_ptr(), q.data_ptr(),
                                      k.data_ptr()])
        self.assertEqual(params[6:], [3, 48 * 128 + 64, 4096, 1024, 40])
        gq = torch.randn(3, 32, 128).to(torch.bfloat16)
        gk = torch.randn(3, 8, 128).to(torch.bfloat16)
        dqkv, dqw, dkw = torch.autograd.grad((q, k), (qkv, qw, kw), (gq, gk))
        (qname, qp), qsum, (kname, kp), ksum = self.launches(4)
        self.assertTrue(qname.startswith("norm_rms_bwd_h4096_"), qname)
        self.assertTrue(kname.startswith("norm_rms_bwd_h1024_"), kname)
        # input (qkv's q or k columns), grad_output, weight, saved_rstd (its
        # columns), grad_input (grad_qkv's columns), partials; rows; strides
        # of input, grad_output, rstd, grad_input, partials.
        self.assertEqual(qp[:5], [qkv.data_ptr(), gq.data_ptr(), qw.data_ptr(),
                                  rstd, dqkv.data_ptr()])
        self.assertEqual(qp[6:], [3, 48 * 128 + 64, 4096, 40, 48 * 128, 128])
        self.assertEqual(kp[:5], [qkv.data_ptr() + 2 * 4096, gk.data_ptr(),
                                  kw.data_ptr(), rstd + 4 * 32,
                                  dqkv.data_ptr() + 2 * 4096])
        self.assertEqual(kp[6:], [3, 48 * 128 + 64, 1024, 40, 48 * 128, 128])
        self.assertColumnSum(qsum, qp[5], dqw, 128)
        self.assertColumnSum(ksum, kp[5], dkw, 128)
        self.assertEqual(dqkv.shape, qkv.shape)
        self.assertTrue(bool((dqkv[:, 40 * 128:] == 0).all()),
                        "v's columns got a gradient")
        # Gemma 3: one key/value head (a plain row of 256), 1 + w. The op
        # without k's gradient: one launch and its sum, k's columns and
        # weight gradient zero.
        qkv = self.rand(2, 6 * 256).detach()
        qw, kw = self.rand(256).detach(), self.rand(256).detach()
        q, k, mean, rstd = torch.ops.norm_opt.qk_norm(qkv, 4, 1, qw, kw, 1e-6,
                                                      "rms", 1.0)
        self.assertEqual((mean.numel(), rstd.shape), (0, (2, 5)))
        before = self.fake.fakecuda_launch_count()
        gq = torch.randn(2, 4, 256).to(q.dtype)
        dqkv, dqw, dkw = torch.ops.norm_opt.qk_norm_backward(
            qkv, gq, None, qw, kw, None, rstd, 4, 1, 1e-6, "rms", 1.0)
        self.assertEqual(self.fake.fakecuda_launch_count(), before + 2)
        (name, params), qsum = self.launches(2)
        self.assertTrue(name.startswith("norm_rms_bwd_h1024_"), name)
        self.assertEqual(params[:5], [qkv.data_ptr(), gq.data_ptr(),
                                      qw.data_ptr(), rstd.data_ptr(),
                                      dqkv.data_ptr()])
        self.assertColumnSum(qsum, params[5], dqw, 256)
        self.assertTrue(bool((dkw == 0).all()))
        self.assertTrue(bool((dqkv[:, 4 * 256:] == 0).all()))
        # k's alone: a row of one head, from its statistics' column 4.
        dqkv, dqw, dkw = torch.ops.norm_opt.qk_norm_backward(
            qkv, None, gq[:, :1], qw, kw, None, rstd, 4, 1, 1e-6, "rms", 1.0)
        name, params = self.launches(2)[0]
        self.assertTrue(name.startswith("norm_rms_bwd_h256_"), name)
        self.assertEqual(params[3:5], [rstd.data_ptr() + 4 * 4,
                                       dqkv.data_ptr() + 2 * 1024])
        self.assertTrue(bool((dqw == 0).all()))
        self.assertTrue(bool((dqkv[:, :1024] == 0).all()))
        self.assertTrue(bool((dqkv[:, 5 * 256:] == 0).all()))

    def test_training_errors(self):
        x, w = self.rand(5, 4096), self.rand(4096)
        cases = [
            (lambda: norm_opt.rms_norm(x, w, out=torch.empty(5, 4096)),
             RuntimeError, "out=, residual_out=, q_out= and k_out= are not "
             "differentiable"),
            (lambda: norm_opt.rms_norm(x.double(), None), TypeError,
             "input: dtype torch.float64 is not supported"),
            (lambda: norm_opt.rms_norm(x, self.rand(4095)), ValueError,
             r"weight: expected shape \(4096,\), got \(4095,\)"),
            (lambda: norm_opt.fused_add_rms_norm(x, x[:4], w), ValueError,
             r"input and addend differ in shape: \(4, 4096\) and "
             r"\(5, 4096\)"),
            (lambda: torch.ops.norm_opt.row_norm(x, None, w, None, "l1", 1e-6),
             ValueError, "kind: expected 'rms' or 'layer', got 'l1'"),
            (lambda: torch.ops.norm_opt.row_norm(x, None, w, None, "rms", 1e-6,
                                                 2.0),
             ValueError, r"alpha \(2.0\) scales the input of a sum"),
            (lambda: norm_opt.qk_norm(self.rand(3, 48 * 128), 32, 8,
                                      q_weight=w[:128]), ValueError,
             "both q_weight and k_weight"),
            (lambda: torch.ops.norm_opt.row_norm_backward(
                x, x, None, w, None, torch.empty(4, 1), "rms", 1e-6, 1.0, 0.0,
                None, None), ValueError,
             r"rstd: expected 5 rows of 1 saved statistics, got shape "
             r"\(4, 1\)"),
            (lambda: torch.ops.norm_opt.row_norm_backward(
                x, x, None, w, None, torch.empty(5, 1).half(), "rms", 1e-6,
                1.0, 0.0, None, None), TypeError, "rstd: expected the float32 "
             "statistics the forward saved"),
            # libnormjit's: rows longer than its backward kernels hold, at
            # the backward.
            (lambda: norm_opt.rms_norm(self.rand(2, 20480), None).sum()
             .backward(), norm_opt.NormJitError, "h20480"),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)
        # Attention stays forward only.
        q, k = self.rand(5, 4, 64), self.rand(5, 2, 64)
        with self.assertRaisesRegex(RuntimeError, "forward only"):
            norm_opt.attention(q, k, k)

    # No rows: nothing launched, the parameters' gradients zero (sums over
    # no rows).
    def test_training_without_rows(self):
        x, w, b = self.rand(0, 1024), self.rand(1024), self.rand(1024)
        before = self.fake.fakecuda_launch_count()
        y = norm_opt.layer_norm(x, w, b)
        dx, dw, db = torch.autograd.grad(y, (x, w, b), torch.randn(0, 1024).to(
            torch.bfloat16))
        self.assertEqual(self.fake.fakecuda_launch_count(), before)
        self.assertEqual(dx.shape, (0, 1024))
        self.assertTrue(bool((dw == 0).all()) and bool((db == 0).all()))

    # The training ops on meta tensors: their shape functions, never the
    # driver, also through autograd.
    def test_training_ops_without_running(self):
        meta = lambda *shape, dtype=torch.bfloat16: torch.empty(
            *shape, dtype=dtype, device="meta", requires_grad=True)
        before = self.fake.fakecuda_launch_count()
        x, r, w = meta(7, 4096), meta(7, 4096, dtype=torch.float32), meta(4096)
        y, h = norm_opt.fused_add_rms_norm(x, r, w, alpha=2.0)
        (y.float().sum() + h.sum()).backward()
        self.assertEqual((x.grad.shape, x.grad.dtype, r.grad.dtype,
                          w.grad.shape, x.grad.device.type),
                         ((7, 4096), torch.bfloat16, torch.float32, (4096,),
                          "meta"))
        qkv = meta(9, 6 * 64)
        q, k = norm_opt.qk_norm(qkv, 4, 1, meta(64), meta(64))
        (q.sum() + k.sum()).backward()
        self.assertEqual(qkv.grad.shape, (9, 6 * 64))
        self.assertEqual(self.fake.fakecuda_launch_count(), before)


if __name__ == "__main__":
    unittest.main()
