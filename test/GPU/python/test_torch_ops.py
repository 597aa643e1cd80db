"""norm_opt's torch.library ops without libnormjit: the schemas (decode
attention's caches marked written; both ops' optional rotary positions and
cos/sin table), the shape functions on meta tensors (and their checks of
the positions and the table),
and torch.compile(fullgraph=True) tracing decode attention as one op whose
cache writes survive functionalization.

Needs torch (any build; torch.compile's tests skip where it is missing or
lacks auto_functionalized). No library, no device: the compiled run goes to
host tensors with the launch replaced by a stand-in that writes the output
and the appended rows as the kernel would (marker values).
"""

import importlib
import unittest

try:
    import torch
except ImportError:
    torch = None

import norm_opt


def _can_compile_mutating_ops() -> bool:
    if torch is None or not hasattr(torch, "compile"):
        return False
    try:
        for module in ("torch._higher_order_ops.auto_functionalize",
                       "torch._dynamo.backends.common", "functorch.compile"):
            importlib.import_module(module)
        return True
    except ImportError:
        return False


@unittest.skipUnless(torch is not None, "needs torch")
class DecodeOpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from norm_opt import _torch
        cls.layer = _torch
        cls.op = torch.ops.norm_opt.attention_decode.default

    def inputs(self, device, batch=2, capacity=16, q_heads=4, kv_heads=2,
               dim=64):
        def rand(*shape):
            return torch.randn(*shape).to(torch.bfloat16).to(device)
        return {"q": rand(batch, q_heads * dim),
                "k": rand(batch, kv_heads * dim),
                "v": rand(batch, kv_heads * dim),
                "k_cache": rand(batch, capacity, kv_heads, dim),
                "v_cache": rand(batch, capacity, kv_heads, dim),
                "lengths": torch.tensor([3, 0][:batch] + [1] * (batch - 2),
                                        dtype=torch.int32).to(device),
                "cu": torch.arange(batch + 1, dtype=torch.int32).to(device)}

    def test_schema_marks_the_caches_written(self):
        args = {a.name: a for a in self.op._schema.arguments}
        written = sorted(name for name, a in args.items()
                         if a.alias_info is not None and a.alias_info.is_write)
        self.assertEqual(written, ["k_cache", "v_cache"])
        # Two distinct alias sets: the caches are not one tensor.
        sets = [tuple(sorted(args[n].alias_info.before_set)) for n in written]
        self.assertNotEqual(sets[0], sets[1])
        returns = self.op._schema.returns
        self.assertEqual(len(returns), 1)
        self.assertIsNone(returns[0].alias_info)  # new, aliases no input
        self.assertTrue(self.op._schema.is_mutable)
        # Prefill attention writes nothing it is given.
        prefill = torch.ops.norm_opt.attention.default._schema
        self.assertFalse(prefill.is_mutable)

    def test_shape_function_on_meta_tensors(self):
        # No launch: a launch would need CUDA tensors and refuse these.
        s = self.inputs("meta")
        out = torch.ops.norm_opt.attention_decode(
            s["q"], s["k"], s["v"], s["k_cache"], s["v_cache"], s["lengths"],
            None, None, None, None, None, 1e-6, 0.0, 64)
        self.assertEqual((out.shape, out.dtype, out.device.type),
                         ((2, 256), torch.bfloat16, "meta"))
        q3 = s["q"].view(2, 4, 64)
        out = torch.ops.norm_opt.attention_decode(
            q3, s["k"].view(2, 2, 64), s["v"].view(2, 2, 64), s["k_cache"],
            s["v_cache"], s["lengths"], s["cu"], None, None, 0.125, "rms",
            1e-6, 0.0, None, "neox", 32, 1e6)
        self.assertEqual(out.shape, (2, 4, 64))
        self.assertIsNot(out, s["k_cache"])
        with self.assertRaisesRegex(ValueError, "needs head_dim="):
            torch.ops.norm_opt.attention_decode(
                s["q"], s["k"], s["v"], s["k_cache"], s["v_cache"],
                s["lengths"], None, None, None, None, None, 1e-6, 0.0, None)

    # API 5's rotary inputs: the last two arguments of both ops, optional
    # with default None (calls without them, above, stay valid).
    def test_schemas_take_positions_and_a_rope_table(self):
        for op in (self.op, torch.ops.norm_opt.attention.default):
            with self.subTest(op=str(op)):
                args = op._schema.arguments
                # Decode's paged cache (API 12) and ragged table (API 13)
                # after them, defaulted too.
                if op is self.op:
                    self.assertEqual([(a.name, str(a.type), a.default_value)
                                      for a in args[-5:]],
                                     [("block_table", "Optional[Tensor]",
                                       None),
                                      ("block_size", "Optional[int]", None),
                                      ("k_scale", "Optional[Tensor]", None),
                                      ("v_scale", "Optional[Tensor]", None),
                                      ("kv_indptr", "Optional[Tensor]",
                                       None)])
                    args = args[:-5]
                # API 9's rope_first last, defaulted: older callers' argument
                # lists still bind.
                self.assertEqual((args[-1].name, str(args[-1].type),
                                  args[-1].default_value),
                                 ("rope_first", "bool", False))
                args = args[:-1]
                self.assertEqual([a.name for a in args[-2:]],
                                 ["positions", "cos_sin_cache"])
                for a in args[-2:]:
                    self.assertEqual(str(a.type), "Optional[Tensor]")
                    self.assertIsNone(a.default_value)
                    self.assertIsNone(a.alias_info)  # read, never written
                self.assertEqual([a.name for a in args[-5:-2]],
                                 ["rope", "rotary_dim", "rope_theta"])

    def test_shape_function_checks_positions_and_the_table(self):
        s = self.inputs("meta")
        table = lambda width: torch.empty(4096, width, dtype=torch.float32,
                                          device="meta")
        positions = torch.empty(2, dtype=torch.int32, device="meta")
        decode = lambda positions, table, rotary_dim=None: (
            torch.ops.norm_opt.attention_decode(
                s["q"], s["k"], s["v"], s["k_cache"], s["v_cache"],
                s["lengths"], None, None, None, None, None, 1e-6, 0.0, 64,
                "neox", rotary_dim, 10000.0, positions, table))
        self.assertEqual(decode(positions, table(64)).shape, (2, 256))
        self.assertEqual(decode(None, table(32), 32).shape, (2, 256))
        with self.assertRaisesRegex(ValueError, r"cos_sin_cache: expected "
                                    r"\[max_position, rotary_dim = 64\] "
                                    r"\(cos, then sin\), got shape "
                                    r"\(4096, 128\)"):
            decode(positions, table(128))
        with self.assertRaisesRegex(ValueError, "rotary_dim = 32"):
            decode(None, table(64), 32)
        with self.assertRaisesRegex(TypeError, "positions: expected int32"):
            decode(positions.long(), None)
        q = s["q"].view(2, 4, 64)
        kv = s["k"].view(2, 2, 64)
        prefill = lambda width: torch.ops.norm_opt.attention(
            q, kv, kv, None, None, None, True, None, None, 1e-6, 0.0, False,
            None, "gptj", None, 10000.0, positions, table(width))
        self.assertEqual(prefill(64)[0].shape, (2, 4, 64))
        with self.assertRaisesRegex(ValueError, "rotary_dim = 64"):
            prefill(48)

    def with_stand_in(self):
        """The launch replaced: the output all 1, and the appended rows
        (at each sequence's cache length) 7 in k_cache and 5 in v_cache,
        written into the caches the op was given. Returns the calls."""
        calls = []
        saved = (self.layer.run, self.layer._device)

        def run(call, config=None, stream=None):
            k_cache, v_cache, lengths = call.keep[-3:]
            calls.append(call)
            call.outputs[0].fill_(1.0)
            rows = torch.arange(lengths.numel())
            k_cache[rows, lengths.long()] = 7.0
            v_cache[rows, lengths.long()] = 5.0
            return call.outputs
        self.layer.run, self.layer._device = run, lambda *tensors: 0
        self.addCleanup(lambda: setattr(self.layer, "run", saved[0]))
        self.addCleanup(lambda: setattr(self.layer, "_device", saved[1]))
        return calls

    def assertAppended(self, s, before_k, before_v):
        rows = torch.arange(s["lengths"].numel())
        at = s["lengths"].long()
        self.assertTrue(bool((s["k_cache"][rows, at] == 7).all()))
        self.assertTrue(bool((s["v_cache"][rows, at] == 5).all()))
        before_k[rows, at] = 7.0
        before_v[rows, at] = 5.0
        self.assertTrue(torch.equal(s["k_cache"], before_k))
        self.assertTrue(torch.equal(s["v_cache"], before_v))

    def test_eager_call_writes_the_callers_caches(self):
        calls = self.with_stand_in()
        s = self.inputs("cpu")
        before_k, before_v = s["k_cache"].clone(), s["v_cache"].clone()
        with torch.no_grad():
            out = norm_opt.attention_decode(
                s["q"], s["k"], s["v"], s["k_cache"], s["v_cache"],
                s["lengths"], s["cu"], head_dim=64, rope="neox")
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0].keep[-3].data_ptr(), s["k_cache"].data_ptr())
        self.assertTrue(bool((out == 1).all()))
        self.assertAppended(s, before_k, before_v)

    @unittest.skipUnless(_can_compile_mutating_ops(), "needs torch.compile "
                         "with auto_functionalized")
    def test_compile_fullgraph_keeps_one_op_and_its_cache_writes(self):
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd
        calls = self.with_stand_in()
        dynamo_graphs, aot_graphs = [], []

        def forward_compiler(gm, example_inputs):
            aot_graphs.append(gm)
            return make_boxed_func(gm.forward)

        def backend(gm, example_inputs):
            dynamo_graphs.append(gm)
            return aot_autograd(fw_compiler=forward_compiler)(gm,
                                                              example_inputs)

        def step(q, k, v, k_cache, v_cache, lengths, cu, qw, kw):
            out = norm_opt.attention_decode(
                q, k, v, k_cache, v_cache, lengths, cu, qk_norm="rms",
                q_norm_weight=qw, k_norm_weight=kw, rope="neox",
                rope_theta=1e6)
            return out * 2

        torch._dynamo.reset()
        compiled = torch.compile(step, backend=backend, fullgraph=True)
        s = self.inputs("cpu")
        weights = torch.ones(64, dtype=torch.bfloat16)
        before_k, before_v = s["k_cache"].clone(), s["v_cache"].clone()
        with torch.no_grad():
            out = compiled(s["q"], s["k"], s["v"], s["k_cache"], s["v_cache"],
                           s["lengths"], s["cu"], weights, weights)
        self.assertEqual(len(dynamo_graphs), 1)  # fullgraph: no break
        ops = [n for n in dynamo_graphs[0].graph.nodes
               if "norm_opt.attention_decode" in str(n.target)]
        self.assertEqual(len(ops), 1, dynamo_graphs[0].code)
        code = "\n".join(g.code for g in aot_graphs)
        # Functionalization saw the writes (a pure op would be called as is).
        self.assertIn("auto_functionalized", code)
        self.assertIn("norm_opt.attention_decode", code)
        self.assertEqual(len(calls), 1)
        self.assertEqual((out.shape, out.dtype), ((2, 256), torch.bfloat16))
        self.assertTrue(bool((out == 2).all()))
        self.assertAppended(s, before_k, before_v)


if __name__ == "__main__":
    unittest.main()
