"""norm_opt's training ops without libnormjit or a device: the schemas of
torch.ops.norm_opt.row_norm, row_norm_backward, qk_norm and
qk_norm_backward (functional: nothing written, nothing aliased), their
shape functions on meta tensors and the errors they raise, autograd's
wiring (which op autograd runs, what it saves and passes, which gradient
goes to which input), the modules of norm_opt.nn (torch's constructor
arguments, state dicts of torch.nn.RMSNorm and LayerNorm loading, refusals
of what the kernels cannot do), and torch.compile(fullgraph=True) tracing
forward and backward as the ops (skipped where torch.compile or
torch.library.register_autograd is missing).

Needs torch (any build). No library, no device: autograd's wiring runs on
host tensors with the launch replaced by a stand-in that records each
prepared call and fills each output buffer with a marker value of its slot
(the backward's gradients 3 + n, 5, 7 + n, 11 for the n-th backward
launch), and with libnormjit's backward descs replaced by the forward desc
with OP_BACKWARD (what the stand-in needs: the real derivation is
test_capi.py's and test_torch_fake.py's business).
"""

import importlib
import inspect
import unittest

try:
    import torch
except ImportError:
    torch = None

import norm_opt
from norm_opt import capi
if torch is not None:
    import norm_opt.nn  # noqa: F401

BF16 = None if torch is None else torch.bfloat16


def meta(*shape, dtype=None, grad=False):
    return torch.empty(*shape, dtype=dtype or BF16, device="meta",
                       requires_grad=grad)


def _can_compile_training() -> bool:
    if torch is None or not hasattr(torch, "compile") or not hasattr(
            torch.library, "register_autograd"):
        return False
    try:
        for module in ("torch._dynamo.backends.common", "functorch.compile"):
            importlib.import_module(module)
        return True
    except ImportError:
        return False


class StandIn:
    """Replaces norm_opt's launch (and device check, and libnormjit's
    backward descs) while active; `calls` are the prepared calls, in
    order."""

    # What forward and backward launches write.
    MARKS = {capi.OUTPUT: 1.0, capi.RESIDUAL_OUT: 2.0, capi.Q: 1.0,
             capi.K: -1.0, capi.SAVED_RSTD: 0.5, capi.SAVED_MEAN: 0.25}
    BACKWARD_MARKS = {capi.ADDEND_GRAD: 5.0, capi.BIAS_GRAD: 11.0}

    def __init__(self, case: unittest.TestCase):
        from norm_opt import _torch, _train
        self.calls, self.forwards = [], []
        self.backward_launches = 0
        saved = [(_torch, "run", _torch.run), (_torch, "_device",
                                                _torch._device),
                 (_train, "get_backward_descs", _train.get_backward_descs)]
        for module, name, value in saved:
            case.addCleanup(setattr, module, name, value)
        _torch.run = self.run
        _torch._device = lambda *tensors: 0
        _train.get_backward_descs = self.backward_descs

    def backward_descs(self, device, forward):
        self.forwards.append(forward)
        flags = (forward.flags & ~(capi.OP_SAVE_STATS | capi.OP_SKIP)) | (
            capi.OP_BACKWARD)
        if forward.kind != capi.OP_QK_NORM:
            return (forward._replace(flags=flags),)
        d = forward.hidden
        return tuple(capi.OpDesc(hidden=heads * d, groups=heads,
                                 flags=flags & capi.OP_WEIGHT |
                                 capi.OP_BACKWARD)
                     for heads in (forward.num_q_heads, forward.num_kv_heads))

    @staticmethod
    def region(call, slot):
        """The elements of buffer `slot` of a call, a view into the output
        tensor that holds them."""
        t = call.args.tensors[slot]
        two_d = slot not in (capi.WEIGHT_GRAD, capi.BIAS_GRAD)
        rows = call.rows if two_d else 1
        stride = (t.row_stride or t.cols) if two_d else t.cols
        for out in call.outputs:
            start = out.data_ptr()
            if out.numel() and start <= t.data < start + out.numel() * (
                    out.element_size()):
                offset = (t.data - start) // out.element_size()
                return torch.as_strided(out, (rows, t.cols), (stride, 1),
                                        out.storage_offset() + offset)
        raise AssertionError(f"buffer {slot} is in no output of the call")

    def run(self, call, config=None, stream=None):
        self.calls.append(call)
        marks = dict(self.MARKS)
        if call.desc.flags & capi.OP_BACKWARD:
            marks = dict(self.BACKWARD_MARKS)
            marks[capi.GRAD_INPUT] = 3.0 + self.backward_launches
            marks[capi.WEIGHT_GRAD] = 7.0 + self.backward_launches
            self.backward_launches += 1
        if call.rows:
            for slot, mark in marks.items():
                if call.args.tensors[slot].data:
                    self.region(call, slot).fill_(mark)
        return call.outputs

    @staticmethod
    def address(call, slot):
        return call.args.tensors[slot].data or 0


@unittest.skipUnless(torch is not None, "needs torch")
class SchemaTest(unittest.TestCase):
    OPS = {"row_norm": (["input", "addend", "weight", "bias", "kind", "eps",
                         "alpha", "weight_offset"], 4),
           "row_norm_backward": (["v", "grad_out", "grad_residual", "weight",
                                  "mean", "rstd", "kind", "eps", "alpha",
                                  "weight_offset", "addend_dtype",
                                  "bias_dtype"], 4),
           "qk_norm": (["qkv", "num_q_heads", "num_kv_heads", "q_weight",
                        "k_weight", "eps", "kind", "weight_offset"], 4),
           "qk_norm_backward": (["qkv", "grad_q", "grad_k", "q_weight",
                                 "k_weight", "mean", "rstd", "num_q_heads",
                                 "num_kv_heads", "eps", "kind",
                                 "weight_offset"], 3)}

    def test_schemas_are_functional(self):
        for name, (arguments, returns) in self.OPS.items():
            with self.subTest(op=name):
                schema = getattr(torch.ops.norm_opt, name).default._schema
                self.assertEqual([a.name for a in schema.arguments], arguments)
                self.assertFalse(schema.is_mutable)
                for a in schema.arguments:
                    self.assertIsNone(a.alias_info, a.name)
                self.assertEqual(len(schema.returns), returns)
                for r in schema.returns:
                    self.assertIsNone(r.alias_info)  # fresh, aliases nothing
                    self.assertEqual(str(r.type), "Tensor")

    def test_row_norm_shape_function(self):
        op = torch.ops.norm_opt.row_norm
        out, residual, mean, rstd = op(meta(2, 3, 512), None, meta(512), None,
                                       "rms", 1e-6)
        self.assertEqual((out.shape, out.dtype, out.device.type),
                         ((2, 3, 512), BF16, "meta"))
        self.assertEqual((residual.shape, mean.shape), ((0,), (0,)))
        self.assertEqual((rstd.shape, rstd.dtype), ((2, 3, 1), torch.float32))
        # The sum keeps the input's dtype (the residual stream), out takes
        # the addend's; LayerNorm saves its mean too.
        out, residual, mean, rstd = op(
            meta(7, 768, dtype=torch.float32), meta(7, 768), meta(768),
            meta(768), "layer", 1e-5, 2.0, 0.0)
        self.assertEqual((out.dtype, residual.shape, residual.dtype),
                         (BF16, (7, 768), torch.float32))
        self.assertEqual((mean.shape, mean.dtype, rstd.shape),
                         ((7, 1), torch.float32, (7, 1)))
        cases = [
            (lambda: op(meta(7, 768), None, None, None, "group", 1e-6),
             ValueError, "kind: expected 'rms' or 'layer', got 'group'"),
            (lambda: op(meta(7, 768), None, None, None, "rms", 1e-6, 2.0),
             ValueError, r"alpha \(2.0\) scales the input of a sum: it needs "
             "an addend"),
            (lambda: op(meta(7, 768), None, meta(767), None, "rms", 1e-6),
             ValueError, r"weight: expected shape \(768,\), got \(767,\)"),
            (lambda: op(meta(7, 768), meta(6, 768), None, None, "rms", 1e-6),
             ValueError, r"input and addend differ in shape: \(7, 768\) and "
             r"\(6, 768\)"),
            (lambda: op(meta(7, 768, dtype=torch.float64), None, None, None,
                        "rms", 1e-6), TypeError,
             "input: dtype torch.float64 is not supported"),
            (lambda: op(meta(768), None, meta(768), meta(768, dtype=torch.float32),
                        "layer", 1e-5), TypeError,
             "weight and bias must have one dtype"),
            (lambda: op(meta(()), None, None, None, "rms", 1e-6), ValueError,
             "input: expected"),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)

    def test_row_norm_backward_shape_function(self):
        op = torch.ops.norm_opt.row_norm_backward
        rstd = meta(5, 1, dtype=torch.float32)
        gi, ga, gw, gb = op(meta(5, 1000, dtype=torch.float32), meta(5, 1000),
                            meta(5, 1000, dtype=torch.float32), meta(1000),
                            None, rstd, "rms", 1e-6, 2.0, 1.0, BF16, None)
        self.assertEqual((gi.shape, gi.dtype), ((5, 1000), torch.float32))
        self.assertEqual((ga.shape, ga.dtype), ((5, 1000), BF16))
        self.assertEqual((gw.shape, gw.dtype, gb.numel()), ((1000,), BF16, 0))
        # alpha 1: grad_input is the addend's gradient too; bias only.
        gi, ga, gw, gb = op(meta(5, 1000), meta(5, 1000), None, None, rstd,
                            rstd, "layer", 1e-5, 1.0, 0.0, BF16,
                            torch.float16)
        self.assertEqual((ga.numel(), gw.numel(), gb.shape, gb.dtype),
                         (0, 0, (1000,), torch.float16))
        cases = [
            (lambda: op(meta(5, 1000), meta(5, 1000), None, None, None, rstd,
                        "layer", 1e-5, 1.0, 0.0, None, None), ValueError,
             "mean: the saved statistics of the forward are needed"),
            (lambda: op(meta(5, 1000), meta(5, 1000), None, None, None,
                        meta(4, 1, dtype=torch.float32), "rms", 1e-6, 1.0,
                        0.0, None, None), ValueError,
             r"rstd: expected 5 rows of 1 saved statistics, got shape "
             r"\(4, 1\)"),
            (lambda: op(meta(5, 1000), meta(5, 1000), None, None, None,
                        meta(5, 1), "rms", 1e-6, 1.0, 0.0, None, None),
             TypeError, "rstd: expected the float32 statistics"),
            (lambda: op(meta(5, 1000), meta(5, 999), None, None, None, rstd,
                        "rms", 1e-6, 1.0, 0.0, None, None), ValueError,
             "v and grad_out differ in shape"),
            (lambda: op(meta(5, 1000), meta(5, 1000), meta(5, 1000), None,
                        None, rstd, "rms", 1e-6, 1.0, 0.0, None, None),
             ValueError, "grad_residual: a residual stream's gradient needs "
             "an addend"),
            (lambda: op(meta(5, 1000), meta(5, 1000), None, meta(1000), None,
                        rstd, "rms", 1e-6, 1.0, 0.0, None, torch.float32),
             TypeError, "weight and bias must have one dtype"),
            (lambda: op(meta(5, 1000), meta(5, 1000), None, None, None, rstd,
                        "rms", 1e-6, 1.0, 0.0, torch.float64, None), TypeError,
             "addend: dtype torch.float64 is not supported"),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)

    def test_qk_norm_shape_functions(self):
        q, k, mean, rstd = torch.ops.norm_opt.qk_norm(
            meta(9, (8 + 2 * 2) * 64), 8, 2, meta(64), meta(64), 1e-6,
            "layer", 1.0)
        self.assertEqual((q.shape, k.shape), ((9, 8, 64), (9, 2, 64)))
        self.assertEqual((mean.shape, rstd.shape, rstd.dtype),
                         ((9, 10), (9, 10), torch.float32))
        q, k, mean, rstd = torch.ops.norm_opt.qk_norm(
            meta(2, 3, 6 * 128), 4, 1, None, None, 1e-6, "l2", 0.0)
        self.assertEqual((q.shape, k.shape, mean.numel(), rstd.shape),
                         ((2, 3, 4, 128), (2, 3, 1, 128), 0, (2, 3, 5)))
        dqkv, dqw, dkw = torch.ops.norm_opt.qk_norm_backward(
            meta(9, 12 * 64), meta(9, 8, 64), None, meta(64), meta(64), None,
            meta(9, 10, dtype=torch.float32), 8, 2, 1e-6, "rms", 0.0)
        self.assertEqual((dqkv.shape, dqw.shape, dkw.shape),
                         ((9, 12 * 64), (64,), (64,)))
        cases = [
            (lambda: torch.ops.norm_opt.qk_norm(meta(9, 100), 8, 2, None, None,
                                                1e-6, "rms", 0.0),
             ValueError, r"does not hold 8 \+ 2 x 2 heads"),
            (lambda: torch.ops.norm_opt.qk_norm(meta(9, 768), 8, 2, meta(64),
                                                None, 1e-6, "rms", 0.0),
             ValueError, "give both q_weight and k_weight, or neither"),
            (lambda: torch.ops.norm_opt.qk_norm(meta(9, 768), 8, 2, None, None,
                                                1e-6, "mean", 0.0),
             ValueError, "kind: expected 'rms', 'l2' or 'layer'"),
            (lambda: torch.ops.norm_opt.qk_norm_backward(
                meta(9, 768), meta(9, 2, 64), None, None, None, None,
                meta(9, 10, dtype=torch.float32), 8, 2, 1e-6, "rms", 0.0),
             ValueError, r"grad_q: expected shape \(9, 8, 64\)"),
            (lambda: torch.ops.norm_opt.qk_norm_backward(
                meta(9, 768), None, None, None, None, None,
                meta(9, 8, dtype=torch.float32), 8, 2, 1e-6, "rms", 0.0),
             ValueError, "rstd: expected 9 rows of 10 saved statistics"),
        ]
        for call, error, message in cases:
            with self.subTest(message=message):
                self.assertRaisesRegex(error, message, call)


@unittest.skipUnless(torch is not None, "needs torch")
class AutogradTest(unittest.TestCase):
    """Which ops autograd runs, with what, and where their outputs go."""

    def rand(self, *shape, dtype=None):
        return torch.randn(*shape).to(dtype or BF16).requires_grad_()

    def test_meta_tensors(self):
        # Shapes and dtypes of every gradient, through the shape functions.
        x, r, w = (meta(7, 4096, grad=True),
                   meta(7, 4096, dtype=torch.float32, grad=True),
                   meta(4096, grad=True))
        y, h = norm_opt.fused_add_rms_norm(x, r, w, alpha=2.0)
        self.assertIsNotNone(y.grad_fn)
        dx, dr, dw = torch.autograd.grad((y, h), (x, r, w),
                                         (torch.ones_like(y),
                                          torch.ones_like(h)))
        self.assertEqual([(g.shape, g.dtype, g.device.type) for g in
                          (dx, dr, dw)],
                         [((7, 4096), BF16, "meta"),
                          ((7, 4096), torch.float32, "meta"),
                          ((4096,), BF16, "meta")])
        b = meta(4096, grad=True)
        y = norm_opt.layer_norm(x, None, b)
        dx, db = torch.autograd.grad(y.sum(), (x, b))
        self.assertEqual((dx.shape, db.shape), ((7, 4096), (4096,)))
        qkv = meta(3, 5, 6 * 64, grad=True)
        qw = meta(64, grad=True)
        q, k = norm_opt.qk_norm(qkv, 4, 1, qw, meta(64), weight_offset=1.0)
        dqkv, dqw = torch.autograd.grad((q.sum(), k.sum()), (qkv, qw))
        self.assertEqual((dqkv.shape, dqw.shape), ((3, 5, 6 * 64), (64,)))
        # Without grad: no graph (and norm_opt.rms_norm would launch, which
        # meta tensors refuse).
        with torch.no_grad():
            out = torch.ops.norm_opt.row_norm(x, None, w, None, "rms", 1e-6)
        self.assertIsNone(out[0].grad_fn)
        with self.assertRaisesRegex(ValueError, "norm_opt runs on CUDA "
                                    "tensors; got a tensor on meta"):
            with torch.no_grad():
                norm_opt.rms_norm(x, w)

    def test_rms_norm(self):
        stand_in = StandIn(self)
        x, w = self.rand(5, 1000), self.rand(1000)
        y = norm_opt.rms_norm(x, w, 1e-6, weight_offset=1.0)
        forward, = stand_in.calls
        self.assertEqual((forward.desc.kind, forward.desc.flags,
                          forward.desc.weight_offset, forward.desc.eps),
                         (capi.OP_RMS_NORM, capi.OP_WEIGHT |
                          capi.OP_SAVE_STATS, 1.0, 1e-6))
        self.assertTrue(bool((y == 1).all()))
        g = torch.randn(5, 1000).to(BF16)
        dx, dw = torch.autograd.grad(y, (x, w), g)
        _, backward = stand_in.calls
        # The backward of the forward that ran, with its saved rstd.
        self.assertEqual(stand_in.forwards, [forward.desc])
        self.assertEqual(backward.desc.flags, capi.OP_WEIGHT |
                         capi.OP_BACKWARD)
        address = StandIn.address
        self.assertEqual([address(backward, s) for s in (
            capi.INPUT, capi.GRAD_OUTPUT, capi.WEIGHT, capi.SAVED_RSTD)],
            [x.data_ptr(), g.data_ptr(), w.data_ptr(),
             address(forward, capi.SAVED_RSTD)])
        self.assertEqual(address(backward, capi.RESIDUAL_GRAD), 0)
        self.assertTrue(bool((dx == 3).all()) and bool((dw == 7).all()))

    def test_fused_add_deepnorm(self):
        stand_in = StandIn(self)
        x, r, w = self.rand(4, 512), self.rand(4, 512, dtype=torch.float32), \
            self.rand(512)
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6, alpha=2.0)
        forward, = stand_in.calls
        self.assertEqual((forward.desc.alpha, forward.desc.input_type,
                          forward.desc.addend_type, forward.desc.output_type),
                         (2.0, capi.F32, capi.BF16, capi.BF16))
        self.assertTrue(bool((h == 2).all()) and h.dtype == torch.float32)
        gy, gh = torch.randn(4, 512).to(BF16), torch.randn(4, 512)
        dx, dr, dw = torch.autograd.grad((y, h), (x, r, w), (gy, gh))
        backward = stand_in.calls[-1]
        address = StandIn.address
        # v is the residual stream the forward wrote; h's gradient is added.
        self.assertEqual([address(backward, s) for s in (
            capi.INPUT, capi.GRAD_OUTPUT, capi.RESIDUAL_GRAD)],
            [h.data_ptr(), gy.data_ptr(), gh.data_ptr()])
        self.assertEqual(stand_in.forwards[0].flags & capi.OP_RESIDUAL_OUT,
                         capi.OP_RESIDUAL_OUT)
        # grad_input (alpha dv) is the residual's, addend_grad (dv) x's.
        self.assertTrue(bool((dr == 3).all()) and bool((dx == 5).all()))
        self.assertEqual((dr.dtype, dx.dtype), (torch.float32, BF16))
        self.assertTrue(bool((dw == 7).all()))
        # alpha 1: no addend_grad; x's gradient is grad_input, cast.
        y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6)
        dx, dr = torch.autograd.grad((y, h), (x, r), (gy, gh))
        backward = stand_in.calls[-1]
        self.assertEqual(address(backward, capi.ADDEND_GRAD), 0)
        self.assertTrue(bool((dx == 4).all()) and bool((dr == 4).all()))
        self.assertEqual(dx.dtype, BF16)

    def test_layer_norm(self):
        stand_in = StandIn(self)
        x, w, b = self.rand(3, 768), self.rand(768), self.rand(768)
        y = norm_opt.layer_norm(x, w, b, 1e-5)
        dx, dw, db = torch.autograd.grad(y.float().sum(), (x, w, b))
        forward, backward = stand_in.calls
        self.assertEqual(backward.desc.flags, capi.OP_WEIGHT | capi.OP_BIAS |
                         capi.OP_BACKWARD)
        for slot in (capi.SAVED_MEAN, capi.SAVED_RSTD):
            self.assertEqual(StandIn.address(backward, slot),
                             StandIn.address(forward, slot))
        self.assertTrue(bool((db == 11).all()) and bool((dw == 7).all()))
        # Only the bias: its dtype gives the parameters' type.
        b32 = b.detach().float().requires_grad_()
        y = norm_opt.layer_norm(x, None, b32)
        dx, db = torch.autograd.grad(y.float().sum(), (x, b32))
        self.assertEqual(db.dtype, torch.float32)
        self.assertEqual(stand_in.calls[-1].desc.param_type, capi.F32)
        self.assertEqual(stand_in.calls[-1].desc.flags, capi.OP_BIAS |
                         capi.OP_BACKWARD)

    def test_qk_norm(self):
        stand_in = StandIn(self)
        qkv = self.rand(3, (4 + 2 * 2) * 64 + 32)
        packed = qkv[:, :8 * 64]
        qw, kw = self.rand(64), self.rand(64)
        q, k = norm_opt.qk_norm(packed, 4, 2, qw, kw, weight_offset=1.0)
        forward, = stand_in.calls
        self.assertEqual(forward.desc.flags, capi.OP_WEIGHT |
                         capi.OP_SAVE_STATS)
        gq, gk = torch.randn(3, 4, 64).to(BF16), torch.randn(3, 2, 64).to(BF16)
        dqkv, dqw, dkw = torch.autograd.grad((q, k), (qkv, qw, kw), (gq, gk))
        _, first, second = stand_in.calls
        address = StandIn.address
        rstd = address(forward, capi.SAVED_RSTD)
        # q heads then k heads: their columns of qkv, of the statistics and
        # of grad_qkv.
        self.assertEqual([address(first, s) for s in (
            capi.INPUT, capi.GRAD_OUTPUT, capi.WEIGHT, capi.SAVED_RSTD)],
            [packed.data_ptr(), gq.data_ptr(), qw.data_ptr(), rstd])
        self.assertEqual([address(second, s) for s in (
            capi.INPUT, capi.GRAD_OUTPUT, capi.WEIGHT, capi.SAVED_RSTD)],
            [packed.data_ptr() + 2 * 256, gk.data_ptr(), kw.data_ptr(),
             rstd + 4 * 4])
        stats = first.args.tensors[capi.SAVED_RSTD]
        self.assertEqual((stats.cols, stats.row_stride), (4, 6))
        self.assertEqual(first.args.tensors[capi.INPUT].row_stride, 8 * 64 + 32)
        # grad_qkv: 3 in q's columns, 4 in k's, 0 in v's and in the columns
        # qkv's view leaves out.
        self.assertEqual(dqkv.shape, qkv.shape)
        self.assertTrue(bool((dqkv[:, :256] == 3).all()))
        self.assertTrue(bool((dqkv[:, 256:384] == 4).all()))
        self.assertTrue(bool((dqkv[:, 384:] == 0).all()))
        self.assertTrue(bool((dqw == 7).all()) and bool((dkw == 8).all()))

    def test_outputs_given_are_not_differentiable(self):
        StandIn(self)
        x, w = self.rand(5, 64), self.rand(64)
        message = "out=, residual_out=, q_out= and k_out= are not differentiable"
        with self.assertRaisesRegex(RuntimeError, message):
            norm_opt.rms_norm(x, w, out=torch.empty(5, 64, dtype=BF16))
        with self.assertRaisesRegex(RuntimeError, message):
            norm_opt.fused_add_rms_norm(x, x, w, residual_out=torch.empty(
                5, 64, dtype=BF16))
        with torch.no_grad():  # grad off: written as asked, one launch
            out = torch.empty(5, 64, dtype=BF16)
            self.assertIs(norm_opt.rms_norm(x, w, out=out), out)


def _torch_module(name):
    return getattr(torch.nn, name, None) if torch is not None else None


@unittest.skipUnless(torch is not None, "needs torch")
class ModuleTest(unittest.TestCase):
    def test_rms_norm_is_torchs(self):
        module = norm_opt.nn.RMSNorm(4096, dtype=BF16)
        self.assertEqual([n for n, _ in module.named_parameters()], ["weight"])
        self.assertEqual((module.weight.shape, module.weight.dtype),
                         ((4096,), BF16))
        self.assertTrue(bool((module.weight == 1).all()))
        self.assertIsNone(module.eps)
        self.assertIsNone(norm_opt.nn.RMSNorm(64, elementwise_affine=False)
                          .weight)
        block = norm_opt.nn.FusedAddRMSNorm(4096, dtype=BF16)
        with torch.no_grad():
            block.weight.normal_()
        module.load_state_dict(block.state_dict())
        self.assertTrue(torch.equal(module.weight, block.weight))

    def test_rms_norm_loads_torchs_state_dict(self):
        module = norm_opt.nn.RMSNorm(4096, dtype=BF16)
        reference = _torch_module("RMSNorm")
        if reference is None:
            self.skipTest("this torch has no torch.nn.RMSNorm")
        theirs = list(inspect.signature(reference).parameters)
        ours = list(inspect.signature(norm_opt.nn.RMSNorm).parameters)
        self.assertEqual(ours[:len(theirs)], theirs)
        torch_norm = reference(4096, eps=1e-6, dtype=BF16)
        with torch.no_grad():
            torch_norm.weight.normal_()
        module.load_state_dict(torch_norm.state_dict())
        self.assertTrue(torch.equal(module.weight, torch_norm.weight))
        back = reference(4096, dtype=BF16)
        back.load_state_dict(norm_opt.nn.FusedAddRMSNorm(4096, dtype=BF16)
                             .state_dict())

    def test_layer_norm_is_torchs(self):
        torch_norm = torch.nn.LayerNorm(768)
        with torch.no_grad():
            torch_norm.weight.normal_()
            torch_norm.bias.normal_()
        module = norm_opt.nn.LayerNorm(768)
        self.assertEqual([n for n, _ in module.named_parameters()],
                         ["weight", "bias"])
        self.assertTrue(bool((module.weight == 1).all()) and
                        bool((module.bias == 0).all()))
        module.load_state_dict(torch_norm.state_dict())
        self.assertTrue(torch.equal(module.bias, torch_norm.bias))
        torch_norm.load_state_dict(norm_opt.nn.LayerNorm(768).state_dict())
        self.assertTrue(bool((torch_norm.weight == 1).all()))
        self.assertIsNone(norm_opt.nn.LayerNorm(768, bias=False).bias)
        self.assertEqual(len(list(norm_opt.nn.LayerNorm(
            768, elementwise_affine=False).parameters())), 0)
        # torch's arguments in torch's order (bias since torch 2.1).
        theirs = list(inspect.signature(torch.nn.LayerNorm).parameters)
        ours = list(inspect.signature(norm_opt.nn.LayerNorm).parameters)
        self.assertEqual([name for name in ours if name in theirs], theirs)
        self.assertEqual(ours[:3], ["normalized_shape", "eps",
                                    "elementwise_affine"])

    def test_forward_calls(self):
        stand_in = StandIn(self)
        x = torch.randn(2, 3, 8, 64).to(BF16)
        # eps None: torch.finfo(x.dtype).eps at the call, as torch's; the
        # trailing normalized_shape flattened into one row.
        module = norm_opt.nn.RMSNorm((8, 64), dtype=BF16, weight_offset=1.0)
        y = module(x)
        call = stand_in.calls[-1]
        self.assertEqual((call.desc.hidden, call.rows, call.desc.eps,
                          call.desc.weight_offset),
                         (512, 6, torch.finfo(BF16).eps, 1.0))
        self.assertEqual(StandIn.address(call, capi.WEIGHT),
                         module.weight.data_ptr())
        self.assertEqual(y.shape, x.shape)
        module = norm_opt.nn.LayerNorm(64, eps=1e-3, bias=False, dtype=BF16)
        module(x)
        call = stand_in.calls[-1]
        self.assertEqual((call.desc.kind, call.desc.flags & 3, call.desc.eps),
                         (capi.OP_LAYER_NORM, capi.OP_WEIGHT, 1e-3))
        block = norm_opt.nn.FusedAddRMSNorm(64, eps=1e-6, alpha=1.5,
                                            dtype=BF16)
        residual = torch.randn(2, 3, 8, 64)
        normed, new_residual = block(x, residual)
        call = stand_in.calls[-1]
        # input = the residual stream (f32 here), addend = x.
        self.assertEqual([StandIn.address(call, s) for s in (capi.INPUT,
                                                             capi.ADDEND)],
                         [residual.data_ptr(), x.data_ptr()])
        self.assertEqual((call.desc.alpha, normed.dtype, new_residual.dtype,
                          new_residual.shape),
                         (1.5, BF16, torch.float32, residual.shape))
        # Trained: the weight's gradient from the backward op.
        block.weight.requires_grad_(True)
        normed, new_residual = block(x, residual)
        normed.float().sum().backward()
        self.assertTrue(bool((block.weight.grad == 7).all()))

    def test_refusals(self):
        # Nothing falls back: host tensors, float64, shapes.
        module = norm_opt.nn.RMSNorm(64)
        with self.assertRaisesRegex(ValueError, "norm_opt runs on CUDA "
                                    "tensors"):
            module(torch.randn(4, 64, requires_grad=True))
        with self.assertRaisesRegex(ValueError, "norm_opt runs on CUDA "
                                    "tensors"):
            with torch.no_grad():
                module(torch.randn(4, 64))
        StandIn(self)
        with self.assertRaisesRegex(TypeError, "float64 is not supported"):
            module(torch.randn(4, 64, dtype=torch.float64))
        with self.assertRaisesRegex(ValueError, r"RMSNorm: input of shape "
                                    r"\(4, 63\) does not end in "
                                    r"normalized_shape \(64,\)"):
            module(torch.randn(4, 63))
        with self.assertRaisesRegex(ValueError, "normalized_shape: expected "
                                    "positive sizes"):
            norm_opt.nn.LayerNorm(())
        with self.assertRaisesRegex(ValueError, "weight_offset shifts a "
                                    "weight"):
            norm_opt.nn.RMSNorm(64, elementwise_affine=False,
                                weight_offset=1.0)


@unittest.skipUnless(_can_compile_training(), "needs torch.compile and "
                     "torch.library.register_autograd")
class CompileTest(unittest.TestCase):
    def test_compile_fullgraph_traces_forward_and_backward_as_the_ops(self):
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd
        stand_in = StandIn(self)
        dynamo_graphs, forward_graphs, backward_graphs = [], [], []

        def compiler(graphs):
            def compile(gm, example_inputs):
                graphs.append(gm)
                return make_boxed_func(gm.forward)
            return compile

        def backend(gm, example_inputs):
            dynamo_graphs.append(gm)
            return aot_autograd(fw_compiler=compiler(forward_graphs),
                                bw_compiler=compiler(backward_graphs))(
                                    gm, example_inputs)

        def step(x, r, w, qkv, qw, kw):
            y, h = norm_opt.fused_add_rms_norm(x, r, w, 1e-6, alpha=2.0)
            z = norm_opt.layer_norm(h, w, None, 1e-5)
            q, k = norm_opt.qk_norm(qkv, 4, 2, qw, kw)
            return (y.float().sum() + z.float().sum() + q.float().sum() +
                    k.float().sum())

        def inputs():
            torch.manual_seed(0)
            bf = lambda *shape: torch.randn(*shape).to(BF16).requires_grad_()
            return (bf(5, 256), torch.randn(5, 256).requires_grad_(),
                    bf(256), bf(5, 8 * 64), bf(64), bf(64))

        torch._dynamo.reset()
        eager_inputs = inputs()
        step(*eager_inputs).backward()
        eager_launches = len(stand_in.calls)
        compiled_inputs = inputs()
        loss = torch.compile(step, backend=backend, fullgraph=True)(
            *compiled_inputs)
        loss.backward()
        # The compiled step launches what the eager one does: three
        # forwards, two row backwards and QK-Norm's two.
        self.assertEqual(eager_launches, 7)
        self.assertEqual(len(stand_in.calls), 2 * eager_launches)
        self.assertEqual(len(dynamo_graphs), 1)  # fullgraph: no break
        targets = [str(n.target) for n in dynamo_graphs[0].graph.nodes]
        self.assertEqual(sum("norm_opt.row_norm" in t for t in targets), 2,
                         dynamo_graphs[0].code)
        self.assertEqual(sum("norm_opt.qk_norm" in t for t in targets), 1)
        forward = "\n".join(g.code for g in forward_graphs)
        backward = "\n".join(g.code for g in backward_graphs)
        self.assertIn("norm_opt.row_norm.default", forward)
        self.assertIn("norm_opt.qk_norm.default", forward)
        self.assertNotIn("norm_opt.row_norm_backward", forward)
        self.assertEqual(backward.count("norm_opt.row_norm_backward.default"),
                         2, backward)
        self.assertEqual(backward.count("norm_opt.qk_norm_backward.default"),
                         1)
        for eager, compiled in zip(eager_inputs, compiled_inputs):
            self.assertEqual((compiled.grad.shape, compiled.grad.dtype),
                             (eager.grad.shape, eager.grad.dtype))


if __name__ == "__main__":
    unittest.main()
