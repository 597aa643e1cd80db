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


@unittest.skipUnless(torch is not None and FAKE, "needs torch and "
                     "NORMJIT_FAKE_CUDA")
class TorchLayerTest(unittest.TestCase):
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

    def rand(self, *shape, dtype=None):
        return torch.randn(*shape).to(dtype or torch.bfloat16)

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
        # sequence of every token when cu_seqlens is None.
        q, k, v = self.rand(7, 256), self.rand(7, 64), self.rand(7, 64)
        qw, kw = self.rand(64), self.rand(64)
        out, lse = norm_opt.attention(q, k, v, qk_norm="rms", q_norm_weight=qw,
                                      k_norm_weight=kw, qk_norm_offset=1.0,
                                      return_lse=True, scale=0.125)
        name, params = self.launch()
        self.assertTrue(name.startswith("norm_attn_qkrms_d64_h4x1_bf16_"), name)
        self.assertEqual(params[:5], [q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                      qw.data_ptr(), kw.data_ptr()])
        self.assertEqual(params[6:], [out.data_ptr(), lse.data_ptr(), 7, 1,
                                      256, 64, 64, 256, 4])
        self.assertEqual((out.shape, lse.shape, lse.dtype),
                         ((7, 256), (7, 4), torch.float32))

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
        meta = lambda *shape: torch.empty(*shape, dtype=torch.bfloat16,
                                          device="meta")
        out, _ = torch.ops.norm_opt.attention(
            meta(9, 8, 64), meta(9, 2, 64), meta(9, 2, 64), None, None, None,
            True, None, None, 1e-6, 0.0, False, None, "neox", 32, 5e5)
        self.assertEqual(out.shape, (9, 8, 64))

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
            # libnormjit's rules, before any kernel is built.
            (lambda: norm_opt.attention(q, k, k, rope="neox", rotary_dim=24),
             norm_opt.NormJitError, "neox rotary embeddings need a rotary "
             r"dim that is a multiple of 16 from 16 to the head dim \(64\), "
             "got 24"),
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


if __name__ == "__main__":
    unittest.main()
