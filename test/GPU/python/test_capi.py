"""norm_opt's ctypes layer against libnormjit, without a GPU.

Environment: NORMJIT_LIBRARY (libnormjit.so), NORMJIT_FAKE_CUDA (the fake
driver, libnormjit-fake-cuda.so) and NORMJIT_TEST_BUNDLE (a bundle with
RMSNorm bf16 h4096, written by normjit-write-test-bundle). The fake driver
records launches instead of running them; its controls are called through
ctypes on the same library instance libnormjit loaded.
"""

import ctypes
import os
import re
import subprocess
import sys
import unittest

import norm_opt
from norm_opt import capi
from fake_driver import FakeLaunch, load_fake

FAKE = os.environ.get("NORMJIT_FAKE_CUDA", "")
BUNDLE = os.environ.get("NORMJIT_TEST_BUNDLE", "")
HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                      os.pardir, os.pardir, "runtime", "normjit.h")
HIDDEN = 4096
RMS = capi.OpDesc(kind=capi.OP_RMS_NORM, hidden=HIDDEN, flags=capi.OP_WEIGHT)


class NoTorchTest(unittest.TestCase):
    def test_import_needs_no_torch(self):
        code = ("import sys, norm_opt; norm_opt.capi.OpDesc(hidden=8); "
                "print('torch' in sys.modules)")
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True).stdout
        self.assertEqual(out.strip(), "False")

    def test_missing_library(self):
        with self.assertRaises(norm_opt.NormJitError) as caught:
            capi.Library("/nonexistent/libnormjit.so")
        self.assertIsNone(caught.exception.status)
        self.assertIn("/nonexistent/libnormjit.so", str(caught.exception))

    def test_not_libnormjit(self):
        with self.assertRaises(norm_opt.NormJitError) as caught:
            capi.Library(FAKE)
        self.assertIn("lacks normjit_status_name", str(caught.exception))

    def test_no_driver(self):
        with self.assertRaises(norm_opt.NormJitError) as caught:
            capi.Context(driver_library="/nonexistent/libcuda.so.1")
        error = caught.exception
        self.assertEqual(error.status, capi.ERROR_NO_DRIVER)
        self.assertEqual(error.status_name, "no CUDA driver")
        self.assertIn("cannot load the CUDA driver '/nonexistent/libcuda.so.1'",
                      error.message)

    # normjit_launch_args: the header's API 6 size (34 tensors, cache_rows
    # and rope_table_rows) and API 5's (24 tensors, then the two counts), and
    # the oldest layout that holds a launch's buffers.
    def test_launch_args_sizes(self):
        with open(HEADER) as header:
            text = header.read()
        define = lambda name: int(re.search(r"#define %s (\d+)" % name,
                                            text).group(1))
        self.assertEqual(ctypes.sizeof(capi._LaunchArgs),
                         define("NORMJIT_LAUNCH_ARGS_SIZE_V13"))
        self.assertEqual(ctypes.sizeof(capi._LaunchArgsV12),
                         define("NORMJIT_LAUNCH_ARGS_SIZE_V12"))
        self.assertEqual(ctypes.sizeof(capi._LaunchArgsV10),
                         define("NORMJIT_LAUNCH_ARGS_SIZE_V10"))
        self.assertEqual(ctypes.sizeof(capi._LaunchArgsV8),
                         define("NORMJIT_LAUNCH_ARGS_SIZE_V8"))
        self.assertEqual(ctypes.sizeof(capi._LaunchArgsV6),
                         define("NORMJIT_LAUNCH_ARGS_SIZE_V6"))
        self.assertEqual(ctypes.sizeof(capi._LaunchArgsV5),
                         define("NORMJIT_LAUNCH_ARGS_SIZE_V5"))
        for name in ("POSITIONS", "ROPE_TABLE", "GRAD_OUTPUT", "RESIDUAL_GRAD",
                     "SAVED_MEAN", "SAVED_RSTD", "GRAD_INPUT", "ADDEND_GRAD",
                     "WEIGHT_GRAD_PARTIALS", "BIAS_GRAD_PARTIALS",
                     "WEIGHT_GRAD", "BIAS_GRAD", "OUTPUT_SCALE", "SCALE_UB",
                     "OUTPUT_SCALES", "K_OUT", "V_OUT", "BLOCK_TABLES",
                     "K_SCALE", "V_SCALE", "PAGE_INDPTR"):
            self.assertEqual(getattr(capi, name), int(re.search(
                r"NORMJIT_%s = (\d+)" % name, text).group(1)), name)
        for name in ("ROPE_POSITIONS", "ROPE_TABLE", "SAVE_STATS", "BACKWARD",
                     "PER_HEAD_WEIGHT", "OUTPUT_OVER_INPUT",
                     "OUTPUT_OVER_ADDEND", "RESIDUAL_OVER_INPUT",
                     "RESIDUAL_OVER_ADDEND", "OUTPUT_SCALE_STATIC",
                     "OUTPUT_SCALE_PER_TOKEN", "SCALE_UB", "ROPE_FIRST",
                     "QK_WEIGHT_PER_HEAD", "PREPARED_K", "COPY_V", "WRITE_CACHE",
                     "FP8_CACHE", "CACHE_SCALE_PER_HEAD", "PAGE_INDPTR"):
            self.assertEqual(getattr(capi, "OP_" + name), 1 << int(re.search(
                r"#define NORMJIT_OP_%s \(1u << (\d+)\)" % name,
                text).group(1)), name)
        self.assertEqual(capi.NUM_BUFFERS, int(re.search(
            r"NORMJIT_NUM_BUFFERS = (\d+)", text).group(1)))
        buffer = capi.Buffer(0x10000, capi.BF16, 8)
        sizes = [capi.make_launch_args({slot: buffer}).struct_size
                 for slot in (capi.INPUT, capi.V, capi.K_CACHE,
                              capi.ROPE_TABLE, capi.GRAD_OUTPUT,
                              capi.BIAS_GRAD, capi.OUTPUT_SCALES,
                              capi.V_OUT, capi.BLOCK_TABLES,
                              capi.PAGE_INDPTR)]
        self.assertEqual(sizes, [define("NORMJIT_LAUNCH_ARGS_SIZE_V1"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V3"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V5"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V5"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V6"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V6"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V8"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V10"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V12"),
                                 define("NORMJIT_LAUNCH_ARGS_SIZE_V13")])
        args = capi.make_launch_args({capi.K_CACHE: buffer}, cache_rows=64)
        self.assertEqual(args.cache_rows, 64)
        # API 5's counts follow its 24 tensors, API 6's its 34.
        self.assertEqual(type(args).cache_rows.offset, 8 + 24 * 32)
        args = capi.make_launch_args({capi.ROPE_TABLE: buffer},
                                     rope_table_rows=4096)
        self.assertEqual(args.rope_table_rows, 4096)
        self.assertEqual(args.struct_size, define("NORMJIT_LAUNCH_ARGS_SIZE_V5"))
        args = capi.make_launch_args({capi.SAVED_RSTD: buffer}, cache_rows=3)
        self.assertEqual((args.cache_rows, type(args).cache_rows.offset,
                          args.tensors[capi.SAVED_RSTD].cols),
                         (3, 8 + 34 * 32, 8))
        self.assertEqual(ctypes.string_at(ctypes.addressof(args) + 8 + 34 * 32,
                                          8), (3).to_bytes(8, "little"))
        with self.assertRaises(ValueError):
            capi.make_launch_args({}, cache_rows=-1)
        with self.assertRaises(ValueError):
            capi.make_launch_args({}, rope_table_rows=-1)

    def test_launch_config_suffix(self):
        self.assertEqual(capi.LaunchConfig(8, 128, 4, 1).suffix, "v8_t128_w4_r1")

    # _OpDesc is normjit.h's normjit_op_desc field by field, and its sizes
    # are the header's (which libnormjit asserts its sizeof against).
    def test_op_desc_layout_is_the_headers(self):
        with open(HEADER) as header:
            text = header.read()
        body = re.search(r"typedef struct normjit_op_desc \{(.*?)\} "
                         r"normjit_op_desc;", text, re.S).group(1)
        types = {"uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32,
                 "int64_t": ctypes.c_int64, "double": ctypes.c_double}
        fields = [(name, types[kind]) for kind, name in
                  re.findall(r"^\s*(\w+) (\w+);", body, re.M)]
        self.assertEqual(capi._OpDesc._fields_, fields)
        define = lambda name: int(re.search(r"#define %s (\d+)" % name,
                                            text).group(1))
        self.assertEqual(ctypes.sizeof(capi._OpDesc),
                         define("NORMJIT_OP_DESC_SIZE_V3"))
        self.assertEqual(capi._OP_DESC_SIZE_V1,
                         define("NORMJIT_OP_DESC_SIZE_V1"))
        ropes = [int(re.search(r"NORMJIT_ROPE_%s = (\d+)" % name, text)
                     .group(1)) for name in ("NONE", "NEOX", "GPTJ")]
        self.assertEqual(ropes, [capi.ROPE_NONE, capi.ROPE_NEOX,
                                 capi.ROPE_GPTJ])

    # A desc is as long as its last field that is not the default, so that
    # older libraries read it: API 1's 88 bytes, 100 with rope alone.
    def test_op_desc_size_follows_its_fields(self):
        attention = capi.OpDesc(kind=capi.OP_ATTENTION, hidden=128,
                                num_q_heads=4, num_kv_heads=2)
        sizes = [d._to_c().struct_size for d in (
            attention, attention._replace(scale=0.5),
            attention._replace(rope=capi.ROPE_NEOX),
            attention._replace(rope=capi.ROPE_GPTJ, rotary_dim=64),
            attention._replace(rope=capi.ROPE_NEOX, rope_theta=5e5))]
        self.assertEqual(sizes, [88, 96, 100, 112, 120])
        c = attention._replace(rope=capi.ROPE_GPTJ, rotary_dim=64,
                               rope_theta=5e5)._to_c()
        self.assertEqual((c.kind, c.hidden, c.num_kv_heads, c.rope,
                          c.cache_block_size, c.rotary_dim, c.rope_theta),
                         (capi.OP_ATTENTION, 128, 2, capi.ROPE_GPTJ, 0, 64,
                          5e5))


@unittest.skipUnless(FAKE and BUNDLE, "needs NORMJIT_FAKE_CUDA and "
                     "NORMJIT_TEST_BUNDLE")
class FakeDriverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = load_fake(FAKE)
        cls.fake.fakecuda_reset()
        cls.context = capi.Context(driver_library=FAKE, bundles=[BUNDLE],
                                   disk_cache=False)
        cls.kernel = cls.context.kernel(RMS)

    @classmethod
    def tearDownClass(cls):
        cls.context.close()

    def launch_args(self, x=0x10000, w=0x20000, y=0x30000, x_stride=0):
        return capi.make_launch_args({
            capi.INPUT: capi.Buffer(x, capi.BF16, HIDDEN, x_stride),
            capi.WEIGHT: capi.Buffer(w, capi.BF16, HIDDEN),
            capi.OUTPUT: capi.Buffer(y, capi.BF16, HIDDEN),
        })

    def last_launch(self) -> FakeLaunch:
        launch = FakeLaunch()
        count = self.fake.fakecuda_launch_count()
        self.assertTrue(self.fake.fakecuda_get_launch(count - 1,
                                                      ctypes.byref(launch)))
        return launch

    def test_launch_passes_buffers_rows_strides_and_stream(self):
        stream = ctypes.c_void_p()
        self.assertEqual(self.fake.cuStreamCreate(ctypes.byref(stream), 0), 0)
        self.kernel.launch(self.launch_args(x_stride=HIDDEN + 64), 7,
                           stream=stream.value)
        launch = self.last_launch()
        self.assertTrue(launch.kernel.startswith(b"norm_rms_h4096_bf16_bf16_"))
        self.assertIn(b"_v8_", launch.kernel)
        self.assertEqual(list(launch.params[:6]),
                         [0x10000, 0x20000, 0x30000, 7, HIDDEN + 64, HIDDEN])
        self.assertEqual(launch.stream, stream.value)
        self.fake.cuStreamDestroy_v2(stream)
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.kernel.launch(self.launch_args(), 7, stream=stream.value)
        self.assertEqual(caught.exception.status, capi.ERROR_DRIVER)
        self.assertIn("CUDA_ERROR_INVALID_HANDLE", caught.exception.message)

    def test_zero_rows_launch_nothing(self):
        before = self.fake.fakecuda_launch_count()
        self.kernel.launch(capi.make_launch_args({}), 0)
        self.assertEqual(self.fake.fakecuda_launch_count(), before)

    def test_launch_errors_carry_the_message(self):
        args = capi.make_launch_args({
            capi.INPUT: capi.Buffer(0x10000, capi.BF16, HIDDEN),
            capi.OUTPUT: capi.Buffer(0x30000, capi.BF16, HIDDEN)})
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.kernel.launch(args, 4)
        self.assertEqual(caught.exception.status, capi.ERROR_INVALID_ARGUMENT)
        self.assertIn("buffer 'weight' is null", str(caught.exception))
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.kernel.launch(self.launch_args(x=0x10001), 4)
        self.assertEqual(caught.exception.status, capi.ERROR_MISALIGNED)
        self.assertIn("buffer 'input' at 0x10001 is not aligned",
                      caught.exception.message)
        with self.assertRaises(ValueError):
            capi.make_launch_args({capi.NUM_BUFFERS: capi.Buffer(1, 0, 1)})

    def test_misaligned_by_an_element_runs_the_scalar_variant(self):
        self.kernel.launch(self.launch_args(x=0x10002), 3)
        self.assertIn(b"_v1_", self.last_launch().kernel)

    def test_bundle_plans(self):
        info = self.kernel.tuning(100)
        self.assertEqual(info.source, "bundle")
        self.assertEqual(info.candidates, ())
        self.assertEqual(info.config, self.kernel.config(100))

    def test_fixed_configuration(self):
        planned = self.kernel.config(1 << 20)
        fixed = self.context.kernel(RMS, config=planned, refuse_misaligned=True)
        self.assertEqual(fixed.config(1), planned)
        self.assertEqual(fixed.tuning(1).source, "fixed")
        fixed.launch(self.launch_args(), 1)
        self.assertTrue(self.last_launch().kernel.endswith(
            planned.suffix.encode()))
        with self.assertRaises(norm_opt.NormJitError) as caught:
            fixed.launch(self.launch_args(x=0x10002), 1)
        self.assertEqual(caught.exception.status, capi.ERROR_MISALIGNED)
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.context.kernel(RMS, config=capi.LaunchConfig(8, 1024, 32, 1))
        self.assertIn("v8_t1024_w32_r1 for rms_norm h4096 bf16: launch "
                      "configuration leaves threads without work",
                      str(caught.exception))

    def test_invalid_operation(self):
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.context.kernel(RMS._replace(hidden=0))
        self.assertEqual(caught.exception.status, capi.ERROR_INVALID_ARGUMENT)
        self.assertIn("hidden size must be in [1, 16777216], got 0",
                      str(caught.exception))
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.context.kernel(RMS._replace(flags=1 << 31))
        self.assertIn("normjit_op_desc.flags: unknown bits", str(caught.exception))

    def test_kernel_not_in_bundle(self):
        """A runtime-only library cannot build what no bundle holds; a full
        one compiles it (and the fake driver loads the PTX)."""
        try:
            kernel = self.context.kernel(RMS._replace(hidden=1000),
                                         tune=False)
        except norm_opt.NormJitError as error:
            self.assertEqual(error.status, capi.ERROR_NOT_FOUND)
            self.assertIn("is in no kernel bundle", error.message)
        else:
            self.assertEqual(kernel.tuning(1).source, "heuristic")

    # Kernels of every kind the runtime normalizes compile and launch (an
    # elementwise add once failed: its eps, reset to 0, was refused), or, in
    # a runtime-only library, are in no bundle.
    def test_every_kind_builds(self):
        bf16 = lambda address, n: capi.Buffer(address, capi.BF16, n)
        cases = [
            (capi.OpDesc(kind=capi.OP_ELEMENTWISE, hidden=HIDDEN,
                         flags=capi.OP_ADDEND | capi.OP_RESIDUAL_OUT),
             {capi.INPUT: bf16(0x10000, HIDDEN),
              capi.ADDEND: bf16(0x20000, HIDDEN),
              capi.OUTPUT: bf16(0x30000, HIDDEN),
              capi.RESIDUAL_OUT: bf16(0x40000, HIDDEN)}),
            # Gemma 3's QK-Norm with one KV head, LayerNorm statistic.
            (capi.OpDesc(kind=capi.OP_QK_NORM, hidden=256, num_q_heads=4,
                         num_kv_heads=1, weight_offset=1.0,
                         flags=capi.OP_WEIGHT | capi.OP_QK_MEAN_VAR),
             {capi.QKV: bf16(0x10000, 6 * 256),
              capi.Q_WEIGHT: bf16(0x20000, 256),
              capi.K_WEIGHT: bf16(0x30000, 256),
              capi.Q: bf16(0x40000, 4 * 256),
              capi.K: bf16(0x50000, 256)}),
        ]
        for desc, buffers in cases:
            try:
                kernel = self.context.kernel(desc, tune=False)
            except norm_opt.NormJitError as error:
                self.assertEqual(error.status, capi.ERROR_NOT_FOUND, error)
                continue
            self.assertEqual(kernel.tuning(1).source, "heuristic")
            kernel.launch(capi.make_launch_args(buffers), 3)
            self.assertTrue(self.last_launch().kernel.endswith(
                kernel.config(3).suffix.encode()))

    def test_pdl_context_launches_programmatically(self):
        # API 7: the context's kernels are built for programmatic dependent
        # launch (names end in _pdl) and launched with programmatic stream
        # serialization; its bundles are not used.
        context = capi.Context(driver_library=FAKE, bundles=[BUNDLE],
                               disk_cache=False, tuning=False, pdl=True,
                               log_level=0)
        try:
            kernel = context.kernel(RMS)
        except norm_opt.NormJitError as error:  # a runtime without compiler
            self.assertEqual(error.status, capi.ERROR_NOT_FOUND, error)
            return
        kernel.launch(self.launch_args(), 3)
        launch = self.last_launch()
        self.assertTrue(launch.kernel.endswith(b"_pdl"), launch.kernel)
        self.assertEqual(launch.programmatic, 1)
        self.kernel.launch(self.launch_args(), 3)
        self.assertEqual(self.last_launch().programmatic, 0)
        context.close()

    # Attention from the bundle (normjit-write-test-bundle's causal GQA
    # operation): the grid, block and parameters the signature prescribes.
    ATTENTION = capi.OpDesc(kind=capi.OP_ATTENTION, hidden=128, num_q_heads=4,
                            num_kv_heads=2, flags=capi.OP_CAUSAL)

    def attention_args(self, change=None):
        """q, k and v as column slices of one packed qkv (row stride 1024),
        three sequences; `change` replaces buffers (None removes one)."""
        bf16 = lambda address, n, stride=0: capi.Buffer(address, capi.BF16, n,
                                                        stride)
        buffers = {capi.Q: bf16(0x100000, 512, 1024),
                   capi.K: bf16(0x100400, 256, 1024),
                   capi.V: bf16(0x100600, 256, 1024),
                   capi.CU_SEQLENS: capi.Buffer(0x200000, capi.I32, 4),
                   capi.OUTPUT: bf16(0x300000, 512)}
        buffers.update(change or {})
        return capi.make_launch_args(
            {slot: b for slot, b in buffers.items() if b is not None})

    def test_attention_launch(self):
        self.assertEqual(self.context.library.api_version, 13)
        kernel = self.context.kernel(self.ATTENTION)
        config = kernel.config(100)
        self.assertEqual((config.vector, config.threads_per_row), (8, 16))
        self.assertEqual(config.rows_per_cta, 16 * config.warps)
        self.assertGreater(config.block_n, 0)
        self.assertTrue(config.suffix.endswith(
            f"_n{config.block_n}_s{config.stages}"))
        self.assertEqual(kernel.tuning(100).config, config)
        kernel.launch(self.attention_args(), 100)
        launch = self.last_launch()
        self.assertTrue(launch.kernel.startswith(
            b"norm_attn_causal_d128_h4x2_bf16_"), launch.kernel)
        self.assertTrue(launch.kernel.endswith(config.suffix.encode()))
        tiles = -(-100 // config.rows_per_cta)
        self.assertEqual(list(launch.grid), [4 * (tiles + 3), 1, 1])
        self.assertEqual(launch.block[0], 32 * config.warps)
        self.assertEqual(launch.num_params, 11)
        self.assertEqual(list(launch.params[:11]),
                         [0x100000, 0x100400, 0x100600, 0x200000, 0x300000,
                          100, 3, 1024, 1024, 1024, 512])
        fixed = self.context.kernel(self.ATTENTION, config=config)
        self.assertEqual(fixed.config(1), config)

    def test_attention_refusals(self):
        kernel = self.context.kernel(self.ATTENTION)
        bf16 = lambda address, n, stride=0: capi.Buffer(address, capi.BF16, n,
                                                        stride)
        cases = [
            ({capi.CU_SEQLENS: None}, capi.ERROR_INVALID_ARGUMENT,
             "buffer 'cu_seqlens' is null"),
            ({capi.CU_SEQLENS: capi.Buffer(0x200000, capi.I32, 1)},
             capi.ERROR_INVALID_ARGUMENT, "at least 2"),
            ({capi.CU_SEQLENS: capi.Buffer(0x200000, capi.F32, 4)},
             capi.ERROR_INVALID_ARGUMENT,
             "buffer 'cu_seqlens' is f32, the operation expects i32"),
            ({capi.Q: capi.Buffer(0x100000, capi.I32, 512, 1024)},
             capi.ERROR_INVALID_ARGUMENT,
             "buffer 'q' is i32, the operation expects bf16"),
            ({capi.Q: bf16(0x100002, 512, 1024)}, capi.ERROR_MISALIGNED,
             "attention has no scalar variant: align the pointers and row "
             "strides (in bytes) of q, k, v and output to 16 bytes"),
            ({capi.OUTPUT: bf16(0x100400, 512, 1024)},
             capi.ERROR_INVALID_ARGUMENT,
             "output 'output' overlaps buffer 'k'"),
            ({capi.V: bf16(0x100600, 264, 1024)}, capi.ERROR_INVALID_ARGUMENT,
             "buffer 'v' has 264 elements per row, the operation expects "
             "256"),
            ({capi.LSE: capi.Buffer(0x400000, capi.F32, 4)},
             capi.ERROR_INVALID_ARGUMENT,
             "the operation has no 'lse' buffer"),
        ]
        before = self.fake.fakecuda_launch_count()
        for change, status, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(norm_opt.NormJitError) as caught:
                    kernel.launch(self.attention_args(change), 100)
                self.assertEqual(caught.exception.status, status)
                self.assertIn(message, caught.exception.message)
        self.assertEqual(self.fake.fakecuda_launch_count(), before)
        for desc, message in [
                (self.ATTENTION._replace(num_kv_heads=3), "heads"),
                (self.ATTENTION._replace(hidden=100), "head dim"),
                (self.ATTENTION._replace(scale=-1.0), "scale"),
                (RMS._replace(flags=capi.OP_WEIGHT | capi.OP_CAUSAL),
                 "apply to NORMJIT_OP_ATTENTION only"),
                (self.ATTENTION._replace(input_type=capi.I32),
                 "NORMJIT_I32 is only the dtype of the cu_seqlens buffer"),
                # Rotary embeddings (refused before compiling anything: the
                # kernel generator has none yet).
                (self.ATTENTION._replace(rope=capi.ROPE_NEOX, rotary_dim=25),
                 "attention: neox rotary embeddings need an even rotary dim "
                 "from 2 to the head dim (128), got 25"),
                (self.ATTENTION._replace(rope=capi.ROPE_GPTJ, rope_theta=1.0),
                 "attention: rope_theta must not be 1"),
                (RMS._replace(rope=capi.ROPE_NEOX),
                 "normjit_op_desc: scale, NORMJIT_OP_CAUSAL and "
                 "NORMJIT_OP_WRITE_LSE apply to NORMJIT_OP_ATTENTION only, "
                 "rope and NORMJIT_OP_ROPE_* to attention, "
                 "NORMJIT_OP_QK_NORM and NORMJIT_OP_K_PREPARE"),
                (self.ATTENTION._replace(rotary_dim=64),
                 "normjit_op_desc: rotary_dim, rope_theta, "
                 "NORMJIT_OP_ROPE_POSITIONS, NORMJIT_OP_ROPE_TABLE and "
                 "NORMJIT_OP_ROPE_FIRST need rope"),
                (self.ATTENTION._replace(rope=3),
                 "normjit_op_desc.rope is 3, not a normjit_rope")]:
            with self.subTest(message=message):
                with self.assertRaises(norm_opt.NormJitError) as caught:
                    self.context.kernel(desc)
                self.assertEqual(caught.exception.status,
                                 capi.ERROR_INVALID_ARGUMENT)
                self.assertIn(message, caught.exception.message)

    # normjit_op_desc_get_backward (API 6): the library's backward descs of
    # a forward one, and its refusal, as NormJitError.
    def test_backward_descs(self):
        forward = capi.OpDesc(hidden=HIDDEN, flags=capi.OP_WEIGHT |
                              capi.OP_SAVE_STATS | capi.OP_SKIP,
                              weight_offset=1.0)
        (backward,) = self.context.backward_descs(forward)
        # The same operation with BACKWARD, without the Sandwich skip.
        self.assertEqual(backward, forward._replace(
            flags=capi.OP_WEIGHT | capi.OP_BACKWARD))
        qk = capi.OpDesc(kind=capi.OP_QK_NORM, hidden=128, num_q_heads=32,
                         num_kv_heads=1, flags=capi.OP_WEIGHT |
                         capi.OP_SAVE_STATS)
        q, k = self.context.library.backward_descs(qk)
        self.assertEqual((q.kind, q.hidden, q.groups, q.flags),
                         (capi.OP_RMS_NORM, 32 * 128, 32, capi.OP_WEIGHT |
                          capi.OP_BACKWARD | capi.OP_PER_HEAD_WEIGHT))
        # One key/value head: a plain row of one head.
        self.assertEqual((k.hidden, k.groups, k.flags),
                         (128, 1, capi.OP_WEIGHT | capi.OP_BACKWARD))
        with self.assertRaises(norm_opt.NormJitError) as caught:
            self.context.backward_descs(capi.OpDesc(
                kind=capi.OP_ELEMENTWISE, hidden=HIDDEN,
                flags=capi.OP_ADDEND))
        self.assertEqual(caught.exception.status, capi.ERROR_UNSUPPORTED)
        self.assertTrue(caught.exception.message)

    # Row kernels' launch arguments are the 14-tensor layout of API 1 and 2
    # (no docstring: the lit test reads unittest's one-line output).
    def test_row_kernels_keep_the_api1_launch_args(self):
        args = self.launch_args()
        self.assertEqual(args.struct_size, 8 + 14 * 32)
        self.kernel.launch(args, 2)
        self.assertEqual(self.last_launch().params[3], 2)
        self.assertEqual(RMS._to_c().struct_size, 88)

    def test_kernels_outlive_their_context(self):
        context = capi.Context(driver_library=FAKE, bundles=[BUNDLE],
                               disk_cache=False)
        kernel = context.kernel(RMS)
        context.close()
        context.close()  # idempotent
        kernel.launch(self.launch_args(), 2)
        with self.assertRaises(norm_opt.NormJitError):
            context.kernel(RMS)

    def test_registry_caches_one_context_per_device(self):
        norm_opt.configure(driver_library=FAKE, bundles=[BUNDLE])
        try:
            self.assertIs(norm_opt.get_context(0), norm_opt.get_context(0))
            from norm_opt import _registry
            self.assertIs(_registry.get_kernel(0, RMS),
                          _registry.get_kernel(0, RMS))
            with self.assertRaises(norm_opt.NormJitError) as caught:
                norm_opt.get_context(5)
            self.assertEqual(caught.exception.status, capi.ERROR_NO_DEVICE)
        finally:
            norm_opt.configure(driver_library="", bundles=[])


if __name__ == "__main__":
    unittest.main()
