#!/usr/bin/env python3
"""norm-bench: libnormjit's kernels beside what a user would pick instead.

On one GPU, for each operation (RMSNorm, LayerNorm, fused add + RMSNorm, the
QK-Norm prologue, fused add + LayerNorm, fused add + RMSNorm with an e4m3
output, static or per-token scales), dtype, hidden size and row count, the
median time of
  copy     a device-to-device copy of one input-sized tensor (the roofline)
  ours     libnormjit's kernel through norm_opt (ctypes, the C API)
  eager    torch: F.rms_norm / F.layer_norm / x + r then either (FP8:
           then divide by the scale, clamp, cast: the unfused quantize)
  compile  torch.compile of the same functions (static shapes)
  triton   a single-pass Triton kernel, one program per row (none for FP8)
and, for ours, every configuration the autotuner tried, re-timed at the
measured row count (pick/best). Each point also compares our output with
eager's. The run is budgeted: points go in priority order (bf16 first, the
anchor hidden sizes first) and what the budget leaves out is listed as not
measured. torch.compile, whose compiles take seconds each, is measured in a
second pass with the time the first leaves. Results: a JSON file (written
after every point) and the table of report.py.

    norm_bench.py --out results.json [--budget-s 240] [--quick]
    norm_bench.py --dry-run                # the plan, no GPU needed
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, NamedTuple, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import report  # noqa: E402

OPS = ("add_rms", "rms", "layer", "qk", "add_layer", "add_rms_fp8",
       "add_rms_fp8_token")
# Fused add + RMSNorm with an e4m3 output: static scale (vLLM's
# rms_norm_static_fp8_quant), per-token scales (its dynamic_per_token).
FP8_OPS = {"add_rms_fp8": "static", "add_rms_fp8_token": "per_token"}
FP8_MAX = 448.0
ADD_OPS = ("add_rms", "add_layer") + tuple(FP8_OPS)  # y and the residual
LAYER_OPS = ("layer", "add_layer")      # weight and bias
HIDDEN = (4096, 8192, 7168, 128, 2048, 16384, 1024, 5120, 769, 3001)
ANCHOR_HIDDEN = (4096, 8192, 7168, 128, 2048, 16384)  # those of ANCHORS.md
ROWS = (1, 128, 4096, 16384)
DTYPES = ("bf16", "f16")
HEADS_PER_TOKEN = 32   # hidden-128 rows are per-head rows
QK_HEADS = (32, 8)     # query, key/value heads of the QK-Norm prologue
QK_HEAD_DIM = 128
EPS = 1e-6
QUICK = dict(hidden=(4096, 128, 769), rows=(1, 4096), dtypes=("bf16",))
# The tensors of a buffer set the eager and compiled functions take.
EAGER_ARGS = {"rms": ("x", "w"), "layer": ("x", "w", "b"),
              "add_rms": ("x", "r", "w"), "add_layer": ("x", "r", "w", "b"),
              "qk": ("qkv", "qw", "kw"), "add_rms_fp8": ("x", "r", "w", "s"),
              "add_rms_fp8_token": ("x", "r", "w")}
# The buffers the Triton anchor writes, in the order eager returns them.
TRITON_OUTPUTS = {"rms": ("y",), "layer": ("y",), "add_rms": ("y", "h"),
                  "add_layer": ("y", "h"), "qk": ("q", "k")}


class Point(NamedTuple):
    op: str
    dtype: str
    hidden: int       # the head dim for qk
    rows: int         # tokens
    kernel_rows: int  # rows the kernel normalizes per launch argument

    @property
    def label(self) -> str:
        return f"{self.op} {self.dtype} h{self.hidden} rows {self.rows}"

    def bytes(self) -> Dict[str, int]:
        """Bytes of one input-sized tensor (the copy) and what our kernel
        moves (each input read once, each output written once)."""
        if self.op == "qk":
            normed = self.rows * sum(QK_HEADS) * self.hidden * 2
            return {"copy": normed, "ours": 2 * normed + 4 * self.hidden}
        tensor = self.kernel_rows * self.hidden * 2
        params = (2 if self.op in LAYER_OPS else 1) * self.hidden * 2
        if self.op in FP8_OPS:  # x, r, h; q of one byte; per-token scales
            scales = 4 * self.kernel_rows if FP8_OPS[self.op] == "per_token" \
                else 4
            return {"copy": tensor,
                    "ours": 3 * tensor + tensor // 2 + params + scales}
        tensors = 4 if self.op in ADD_OPS else 2
        return {"copy": tensor, "ours": tensors * tensor + params}


def build_plan(ops=OPS, hidden=HIDDEN, rows=ROWS, dtypes=DTYPES) -> List[Point]:
    """Every point, in the order they are measured."""
    points = []
    for dtype in dtypes:
        for anchors_first in (True, False):
            for op in ops:
                for h in hidden:
                    if (h in ANCHOR_HIDDEN) != anchors_first:
                        continue
                    if op == "qk" and h != QK_HEAD_DIM:
                        continue
                    for r in rows:
                        per_head = op != "qk" and h == 128
                        points.append(Point(op, dtype, h, r,
                                            r * HEADS_PER_TOKEN if per_head
                                            else r))
    return points


def check_known(parser, *options) -> None:
    """parser.error for values of (option, values, known) not in known."""
    for name, values, known in options:
        unknown = [v for v in values if v not in known]
        if unknown:
            parser.error(f"{name}: unknown {', '.join(unknown)} (known: "
                         f"{', '.join(known)})")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--out", default="norm-bench-results.json",
                        help="results JSON (written after every point)")
    parser.add_argument("--markdown", help="also write RESULTS.md here")
    parser.add_argument("--checks", help="correctness results (JSON) for "
                        "the markdown")
    parser.add_argument("--budget-s", type=float, default=240,
                        help="wall-clock budget of the measurements")
    parser.add_argument("--tuner-share", type=float, default=0.3,
                        help="at most this share of the budget for re-timing "
                        "the tuner's candidates; torch.compile (compiles "
                        "included) gets what the first pass leaves")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--hidden", default=",".join(map(str, HIDDEN)))
    parser.add_argument("--rows", default=",".join(map(str, ROWS)))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--anchors", default="copy,eager,compile,triton",
                        help="which anchors to time beside ours")
    parser.add_argument("--quick", action="store_true",
                        help=f"a few points only ({QUICK})")
    parser.add_argument("--no-tuner-check", action="store_true")
    parser.add_argument("--replays", type=int, default=9)
    parser.add_argument("--target-us", type=float, default=200.0,
                        help="launches per graph replay fill about this")
    parser.add_argument("--rotate-factor", type=float, default=3.0,
                        help="rotate buffer sets until the sets span this "
                        "many times the L2 cache")
    parser.add_argument("--max-sets", type=int, default=64)
    parser.add_argument("--cache-dir", help="libnormjit's disk cache (a fresh "
                        "one makes every kernel tune in this process)")
    parser.add_argument("--bundle", action="append", default=[],
                        help="serve kernels from this bundle (runtime-only "
                        "libnormjit); repeatable")
    parser.add_argument("--no-tune", action="store_true",
                        help="heuristic configurations")
    parser.add_argument("--build-threads", type=int, default=4,
                        help="operations built (compiled, tuned) at once")
    parser.add_argument("--triton-warmers", type=int, default=4,
                        help="processes compiling the Triton anchors "
                        "meanwhile")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and exit (no torch, no GPU)")
    args = parser.parse_args(argv)
    if args.quick:
        args.hidden = ",".join(map(str, QUICK["hidden"]))
        args.rows = ",".join(map(str, QUICK["rows"]))
        args.dtypes = ",".join(QUICK["dtypes"])
    try:
        args.ops = tuple(o for o in args.ops.split(",") if o)
        args.hidden = tuple(int(h) for h in args.hidden.split(",") if h)
        args.rows = tuple(int(r) for r in args.rows.split(",") if r)
        args.dtypes = tuple(d for d in args.dtypes.split(",") if d)
        args.anchors = tuple(a for a in args.anchors.split(",") if a)
    except ValueError as error:
        parser.error(str(error))
    check_known(parser, ("--ops", args.ops, OPS),
                ("--dtypes", args.dtypes, DTYPES),
                ("--anchors", args.anchors, ("copy",) + report.ANCHORS))
    if any(h <= 0 for h in args.hidden) or any(r <= 0 for r in args.rows):
        parser.error("hidden sizes and row counts must be positive")
    return args


def print_plan(plan: List[Point], args) -> None:
    by_op = {}
    for p in plan:
        by_op[p.op] = by_op.get(p.op, 0) + 1
    kernels = {(p.op, p.dtype, p.hidden) for p in plan}
    print(f"norm-bench plan: {len(plan)} points "
          f"({', '.join(f'{op} {n}' for op, n in by_op.items())}), "
          f"{len(kernels)} kernels to build; anchors "
          f"{', '.join(('ours',) + args.anchors)}; budget {args.budget_s:.0f} s")
    for p in plan:
        sizes = p.bytes()
        print(f"  {p.label:40s} kernel rows {p.kernel_rows:7d}  input "
              f"{sizes['copy'] / 2**20:9.3f} MiB")


#===------------------------------------------------------------------------===#
# On the device
#===------------------------------------------------------------------------===#


def environment(torch, triton_version: Optional[str]) -> Dict[str, object]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    driver = "unknown"
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip() or driver
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "gpu": props.name, "sms": props.multi_processor_count,
        "l2_mib": round(getattr(props, "L2_cache_size", 0) / 2**20, 1),
        "driver": driver, "cuda": torch.version.cuda, "torch": torch.__version__,
        "triton": triton_version or "not available",
        "python": platform.python_version(),
        "libnormjit": os.environ.get("NORMJIT_LIBRARY", "(default search)"),
        "commit": os.environ.get("NORM_GIT_COMMIT", "unknown"),
        # libnormjit's PTX target: the device's unless NORMJIT_CHIP asks
        # for sm_90a (the Hopper attention kernel).
        "chip": os.environ.get("NORMJIT_CHIP") or "the device's",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M"),
    }


def l2_bytes(torch) -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return getattr(props, "L2_cache_size", 50 << 20) or 50 << 20


def buffer_sets(working: int, l2: int, factor: float, max_sets: int) -> int:
    """How many buffer sets of `working` bytes each to rotate among so that
    they span `factor` times the L2 cache (at most max_sets)."""
    if working >= factor * l2:
        return 1
    return max(1, min(max_sets, math.ceil(factor * l2 / working)))


class Bench:
    def __init__(self, args, torch, F, norm_torch, registry, triton_kernels):
        self.args = args
        self.torch = torch
        self.F = F
        self.ours = norm_torch
        self.registry = registry
        self.triton = triton_kernels
        self.device = torch.cuda.current_device()
        self.l2 = l2_bytes(torch)
        self.dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
        self.compiled = {}
        self.tuner_s = 0.0
        import timing
        self.timing = timing

    # Inputs ------------------------------------------------------------------

    def sets(self, point: Point) -> int:
        return buffer_sets(point.bytes()["ours"], self.l2,
                           self.args.rotate_factor, self.args.max_sets)

    def make_set(self, point: Point) -> dict:
        torch = self.torch
        dtype = self.dtypes[point.dtype]

        def rand(*shape):
            return (torch.rand(*shape, device="cuda", dtype=torch.float32) * 4
                    - 2).to(dtype)

        h = point.hidden
        if point.op == "qk":
            hq, hkv = QK_HEADS
            qkv = rand(point.rows, (hq + 2 * hkv) * h)
            s = {"qkv": qkv, "qw": rand(h), "kw": rand(h),
                 "q": torch.empty(point.rows, hq, h, dtype=dtype, device="cuda"),
                 "k": torch.empty(point.rows, hkv, h, dtype=dtype,
                                  device="cuda")}
            s["copy_src"] = qkv[:, :(hq + hkv) * h].contiguous()
        else:
            n = point.kernel_rows
            s = {"x": rand(n, h), "w": rand(h), "y": torch.empty(
                n, h, dtype=dtype, device="cuda")}
            if point.op in LAYER_OPS:
                s["b"] = rand(h)
            if point.op in ADD_OPS:
                s["r"] = rand(n, h)
                s["h"] = torch.empty(n, h, dtype=dtype, device="cuda")
            if point.op in FP8_OPS:
                s["q"] = torch.empty(n, h, dtype=torch.float8_e4m3fn,
                                     device="cuda")
                s["s"] = torch.tensor([0.01], device="cuda")
                s["scales"] = torch.empty(n, 1, device="cuda")
            s["copy_src"] = s["x"]
        s["copy_dst"] = torch.empty_like(s["copy_src"])
        return s

    # Implementations ---------------------------------------------------------

    def eager_fn(self, op: str):
        F = self.F
        if op == "rms":
            return lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS)
        if op == "layer":
            return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS)
        if op == "add_rms":
            def add_rms(x, r, w):
                h = x + r
                return F.rms_norm(h, (h.shape[-1],), w, EPS), h
            return add_rms
        if op == "add_layer":
            def add_layer(x, r, w, b):
                h = x + r
                return F.layer_norm(h, (h.shape[-1],), w, b, EPS), h
            return add_layer
        torch = self.torch
        if op == "add_rms_fp8":  # the norm, then quantize (static scale)
            def add_rms_fp8(x, r, w, s):
                h = x + r
                y = F.rms_norm(h.float(), (h.shape[-1],), w.float(), EPS)
                q = (y / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
                return q, h
            return add_rms_fp8
        if op == "add_rms_fp8_token":  # vLLM's per-token reference
            def add_rms_fp8_token(x, r, w):
                h = x + r
                y = F.rms_norm(h.float(), (h.shape[-1],), w.float(), EPS)
                scales = (y.abs().amax(-1, keepdim=True) / FP8_MAX).clamp(
                    min=1 / (FP8_MAX * 512))
                q = (y / scales).clamp(-FP8_MAX, FP8_MAX).to(
                    torch.float8_e4m3fn)
                return q, h, scales
            return add_rms_fp8_token
        hq, hkv = QK_HEADS

        def qk(qkv, qw, kw):
            d = qw.shape[0]
            t = qkv.shape[0]
            q = qkv[:, :hq * d].view(t, hq, d)
            k = qkv[:, hq * d:(hq + hkv) * d].view(t, hkv, d)
            return F.rms_norm(q, (d,), qw, EPS), F.rms_norm(k, (d,), kw, EPS)
        return qk

    def calls(self, name: str, point: Point, sets: List[dict]):
        """One zero-argument callable per buffer set."""
        op = point.op
        keys = EAGER_ARGS[op]
        if name == "copy":
            return [lambda s=s: s["copy_dst"].copy_(s["copy_src"]) for s in sets]
        if name == "eager":
            fn = self.eager_fn(op)
            return [lambda s=s: fn(*(s[k] for k in keys)) for s in sets]
        if name == "compile":
            fn = self.compiled.get(op)
            if fn is None:
                fn = self.torch.compile(self.eager_fn(op), dynamic=False)
                self.compiled[op] = fn
            return [lambda s=s: fn(*(s[k] for k in keys)) for s in sets]
        if name == "triton":
            t = self.triton
            if op == "rms":
                return [lambda s=s: t.rms_norm(s["x"], s["w"], EPS, s["y"])
                        for s in sets]
            if op == "layer":
                return [lambda s=s: t.layer_norm(s["x"], s["w"], s["b"], EPS,
                                                 s["y"]) for s in sets]
            if op in ADD_OPS:
                return [lambda s=s: t.add_norm(s["x"], s["r"], s["w"],
                                               s.get("b"), EPS, s["y"], s["h"])
                        for s in sets]
            return [lambda s=s: t.qk_norm(s["qkv"], s["qw"], s["kw"],
                                          QK_HEADS[0], QK_HEADS[1], EPS,
                                          s["q"], s["k"]) for s in sets]
        raise ValueError(name)

    def prepare_ours(self, point: Point, s: dict):
        if point.op == "qk":
            return self.ours.prepare_qk_norm(
                s["qkv"], QK_HEADS[0], QK_HEADS[1], s["qw"], s["kw"], EPS,
                q_out=s["q"], k_out=s["k"])
        from norm_opt import capi
        kind = (capi.OP_LAYER_NORM if point.op in LAYER_OPS
                else capi.OP_RMS_NORM)
        if point.op in FP8_OPS:
            static = FP8_OPS[point.op] == "static"
            return self.ours.prepare_row_norm(
                kind, s["r"], s["w"], None, EPS, addend=s["x"], out=s["q"],
                residual_out=s["h"], out_dtype=self.torch.float8_e4m3fn,
                scale=s["s"] if static else None,
                scales=None if static else s["scales"])
        if point.op in ADD_OPS:
            return self.ours.prepare_row_norm(
                kind, s["r"], s["w"], s.get("b"), EPS, addend=s["x"],
                out=s["y"], residual_out=s["h"])
        return self.ours.prepare_row_norm(kind, s["x"], s["w"], s.get("b"),
                                          EPS, out=s["y"])

    def our_calls(self, prepared, config=None):
        torch = self.torch
        kernel = self.registry.get_kernel(self.device, prepared[0].desc, config)

        def launcher(call):
            return lambda: kernel.launch(
                call.args, call.rows, torch.cuda.current_stream().cuda_stream)
        return [launcher(call) for call in prepared], kernel

    # Measuring ---------------------------------------------------------------

    def time(self, calls) -> "object":
        return self.timing.measure(calls, target_us=self.args.target_us,
                                   replays=self.args.replays)

    def check(self, point: Point, s: dict, prepared) -> dict:
        """Our outputs against eager's, on the first set."""
        return self.compare(point, s, prepared.outputs,
                            lambda: self.ours.run(prepared))

    def check_triton(self, point: Point, s: dict) -> dict:
        """The Triton anchor's outputs against eager's: a ratio to a wrong
        kernel means nothing."""
        return self.compare(point, s, [s[k] for k in TRITON_OUTPUTS[point.op]],
                            self.calls("triton", point, [s])[0])

    def compare(self, point: Point, s: dict, outputs, run) -> dict:
        """`outputs`, poisoned, then written by `run`, against eager's."""
        torch = self.torch
        for out in outputs:
            out.fill_(float("nan"))
        run()
        want = self.eager_fn(point.op)(*(s[k] for k in EAGER_ARGS[point.op]))
        want = want if isinstance(want, tuple) else (want,)
        tol = {"bf16": 1 / 128, "f16": 1 / 1024}[point.dtype]
        worst, bad, unwritten = 0.0, 0, 0
        for got, ref in zip(outputs, want):
            ref = ref.reshape(got.shape).double()
            error = (got.double() - ref).abs()
            if got.dtype == getattr(torch, "float8_e4m3fn", None):
                # Both round y's f32 value: one e4m3 step apart at most
                # (per-token scales differ in their last bits).
                step = torch.exp2(torch.floor(torch.log2(
                    ref.abs().clamp(min=2.0 ** -6))) - 3)
                bad += int((~(error <= step)).sum())
            else:
                bad += int((~(error <= 2 * tol * (1 + ref.abs()))).sum())
            unwritten += int(got.isnan().sum())  # still the poison
            relative = error / (1 + ref.abs())
            finite = relative[torch.isfinite(relative)]
            if finite.numel():
                worst = max(worst, float(finite.max()))
        return {"ok": bad == 0, "bad_elements": bad, "nan_outputs": unwritten,
                "max_rel_error": worst}

    def measure_point(self, point: Point, deadline: float) -> dict:
        args = self.args
        sizes = point.bytes()
        record = {"op": point.op, "dtype": point.dtype, "hidden": point.hidden,
                  "rows": point.rows, "kernel_rows": point.kernel_rows,
                  "bytes_copy": sizes["copy"], "bytes_ours": sizes["ours"],
                  "sets": self.sets(point), "times_us": {}, "spread": {},
                  "errors": {}}
        sets = [self.make_set(point) for _ in range(record["sets"])]
        prepared = [self.prepare_ours(point, s) for s in sets]

        def attempt(name, function):
            record_timing(self.torch, record, name, function)

        kernel = None
        try:
            our_calls, kernel = self.our_calls(prepared)
            record["config"] = kernel.config(point.kernel_rows).suffix
        except Exception as error:  # no kernel: the anchors still run
            record["errors"]["ours"] = f"{type(error).__name__}: {error}"[:400]
        if kernel is not None:
            try:
                record["check"] = self.check(point, sets[0], prepared[0])
            except Exception as error:
                record["errors"]["check"] = f"{type(error).__name__}: {error}"[:400]
                self.torch.cuda.synchronize()
        if kernel is not None:
            attempt("ours", lambda: self.time(our_calls))
        for name in args.anchors:
            if name == "triton" and point.op not in TRITON_OUTPUTS:
                continue  # no Triton anchor for FP8 outputs
            if name != "compile":  # the second pass
                attempt(name, lambda: self.time(self.calls(name, point, sets)))
        if "triton" in record["times_us"]:
            try:
                record["check_triton"] = self.check_triton(point, sets[0])
            except Exception as error:
                record["errors"]["check_triton"] = (
                    f"{type(error).__name__}: {error}"[:400])
                self.torch.cuda.synchronize()
        if kernel is not None and not args.no_tuner_check:
            self.tuner_check(point, prepared, kernel, record, deadline)
        return record

    def measure_compiled(self, point: Point, record: dict) -> None:
        """torch.compile of the eager function at this point's shapes (its
        compile happens in the warm-up, outside the timing)."""
        sets = [self.make_set(point) for _ in range(record["sets"])]
        record_timing(self.torch, record, "compile",
                      lambda: self.time(self.calls("compile", point, sets)))

    def tuner_check(self, point, prepared, kernel, record, deadline):
        args = self.args
        info = kernel.tuning(point.kernel_rows)
        record["plan_source"] = info.source
        candidates = [c for c in info.candidates if c.microseconds >= 0]
        if info.source != "tuned" or not candidates:
            record.setdefault("not_measured", []).append(
                f"tuner check: the plan came from the {info.source}")
            return
        if self.tuner_s >= args.tuner_share * args.budget_s or (
                time.monotonic() >= deadline):  # noqa: E129
            record.setdefault("not_measured", []).append(
                "tuner check: its share of the budget is spent")
            return
        start = time.monotonic()
        timed = []
        for candidate in candidates:
            try:
                calls, _ = self.our_calls(prepared, candidate.config)
                timed.append({"config": candidate.config.suffix,
                              "tuner_us": round(candidate.microseconds, 3),
                              "us": round(self.time(calls).us, 3)})
            except Exception as error:
                timed.append({"config": candidate.config.suffix,
                              "error": f"{type(error).__name__}: {error}"[:200]})
                self.torch.cuda.synchronize()
        self.tuner_s += time.monotonic() - start
        ok = [t for t in timed if "us" in t]
        pick = next((t for t in ok if t["config"] == info.config.suffix), None)
        best = min(ok, key=lambda t: t["us"]) if ok else None
        record["tuner"] = {
            "tuned_rows": info.tuned_rows, "pick": info.config.suffix,
            "best": best["config"] if best else None,
            "pick_us": pick["us"] if pick else None,
            "best_us": best["us"] if best else None, "candidates": timed}

    def build_kernels(self, plan: List[Point]) -> Dict[tuple, str]:
        """Builds (compiles, tunes, loads) every operation of the plan before
        anything is captured, several at once (ctypes drops the GIL), while
        other processes compile the Triton anchors into Triton's cache
        (compiles only: no kernel of theirs disturbs the tuner's timing)."""
        first = {}
        for p in plan:
            first.setdefault((p.op, p.dtype, p.hidden), p)
        warmers = []
        if self.triton is not None and "triton" in self.args.anchors:
            specs = [f"{op}:{dtype}:{hidden}" + (
                ":%d:%d" % QK_HEADS if op == "qk" else "")
                for op, dtype, hidden in first if op in TRITON_OUTPUTS]
            count = max(1, min(self.args.triton_warmers, len(specs)))
            for i in range(count):
                warmers.append(subprocess.Popen(
                    [sys.executable, os.path.join(HERE, "triton_kernels.py"),
                     "--warm", repr(EPS)] + specs[i::count],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    text=True))

        def build(point):
            try:
                s = self.make_set(point._replace(rows=1, kernel_rows=1))
                self.registry.get_kernel(self.device,
                                         self.prepare_ours(point, s).desc)
                return None
            except Exception as error:
                return f"{type(error).__name__}: {error}"[:400]

        with ThreadPoolExecutor(self.args.build_threads) as pool:
            errors = dict(zip(first, pool.map(build, first.values())))
        self.torch.cuda.synchronize()
        for warmer in warmers:  # a warm cache only saves time: never wait long
            try:
                _, stderr = warmer.communicate(timeout=60)
                if warmer.returncode:
                    print(f"norm-bench: Triton warm-up failed: "
                          f"{stderr.strip()[-300:]}", file=sys.stderr)
            except subprocess.TimeoutExpired:
                warmer.kill()
        return {f"{op} {dtype} h{h}": e for (op, dtype, h), e in errors.items()
                if e}


def describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"[:400]


def record_timing(torch, record: dict, name: str, function) -> None:
    """function() (a timing.Timing) into record's times_us and spread (and
    methods, when not a graph), or its error into errors: the run goes on."""
    try:
        timing = function()
        record["times_us"][name] = round(timing.us, 3)
        record["spread"][name] = round(timing.spread, 3)
        if timing.method != "graph":
            record.setdefault("methods", {})[name] = timing.method
    except Exception as error:
        record["errors"][name] = describe(error)
        torch.cuda.synchronize()


def results_writer(results: dict, path: str):
    """save(): the results JSON, written whole (a run cut short keeps it)."""
    def save():
        with open(path + ".tmp", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(path + ".tmp", path)
    return save


def measure_points(torch, plan, measure, results: dict, deadline: float,
                   save, done, tag: str):
    """The first pass: record = measure(index, point) for each point in
    order while the budget lasts, into results["points"], then done(index,
    point, record) and save(); what is left out goes to not_measured. A
    failure that leaves the device unusable (a kernel fault leaves the CUDA
    context so) stops the pass. Returns ([(index, point, record)], status)."""
    measured = []
    for index, point in enumerate(plan):
        if time.monotonic() >= deadline:
            results["not_measured"].append(f"{point.label}: time budget")
            continue
        try:
            record = measure(index, point)
        except Exception as error:
            results["not_measured"].append(f"{point.label}: {describe(error)}")
            if device_usable(torch):
                continue
            print(f"{tag}: stopped at {point.label}: {error}", file=sys.stderr)
            results["not_measured"] += [f"{p.label}: not reached"
                                        for p in plan[index + 1:]]
            save()
            return measured, 1
        results["points"].append(record)
        measured.append((index, point, record))
        done(index, point, record)
        save()
    return measured, 0


def compile_pass(measured, measure, results: dict, deadline: float, save,
                 start: float) -> None:
    """The second pass: torch.compile, whose compiles take seconds each,
    measure(index, point, record) over `measured` with the time left."""
    for count, (index, point, record) in enumerate(measured):
        if time.monotonic() >= deadline:
            results["not_measured"] += [f"{p.label}: compile: time budget"
                                        for _, p, _ in measured[count:]]
            return
        measure(index, point, record)
        print(f"  compile {point.label}: "
              f"{record['times_us'].get('compile', '-')} us, "
              f"{time.monotonic() - start:.0f} s", flush=True)
        save()


def device_usable(torch) -> bool:
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2
    except Exception:
        return False


def start_torch_run(name: str, cache_dir):
    """What an attention benchmark needs before its first point: torch, its
    functional module, Triton's version (None without it) and norm_opt's
    torch layer and registry, configured and with the recompile limits
    raised; None (a message printed) without a CUDA device."""
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        print(f"{name}: no CUDA device", file=sys.stderr)
        return None
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    import norm_opt
    from norm_opt import _registry, _torch as norm_torch
    raise_recompile_limits(torch)
    norm_opt.configure(cache_dir=cache_dir)
    return torch, F, triton_version, norm_torch, _registry


def raise_recompile_limits(torch) -> None:
    """Every shape compiles anew (static shapes): no recompile limit."""
    try:
        import torch._dynamo
        for name in ("cache_size_limit", "recompile_limit",
                     "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 4096)
    except ImportError:  # no torch.compile: that anchor will record errors
        pass


def run(args) -> int:
    plan = build_plan(args.ops, args.hidden, args.rows, args.dtypes)
    if args.dry_run:
        print_plan(plan, args)
        return 0
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        print("norm-bench: no CUDA device", file=sys.stderr)
        return 1
    try:
        import triton_kernels
        triton_version = triton_kernels.version()
    except ImportError as error:
        triton_kernels, triton_version = None, None
        print(f"norm-bench: no Triton ({error}): that anchor is skipped",
              file=sys.stderr)
    import norm_opt
    from norm_opt import _registry, _torch as norm_torch
    raise_recompile_limits(torch)
    norm_opt.configure(cache_dir=args.cache_dir, bundles=args.bundle,
                       tuning=not args.no_tune)
    # FP8 points need torch's float8 dtypes (torch >= 2.1): said, not
    # failed point by point.
    skipped = []
    if not hasattr(torch, "float8_e4m3fn"):
        skipped = [p for p in plan if p.op in FP8_OPS]
        plan = [p for p in plan if p.op not in FP8_OPS]
        print(f"norm-bench: torch {torch.__version__} has no float8_e4m3fn: "
              f"{len(skipped)} FP8 points skipped", file=sys.stderr)
    anchors = tuple(a for a in args.anchors
                    if a != "triton" or triton_kernels is not None)
    args.anchors = anchors
    results = {
        "schema": report.SCHEMA,
        "environment": environment(torch, triton_version),
        "settings": {"replays": args.replays, "target_us": args.target_us,
                     "rotate_factor": args.rotate_factor,
                     "max_sets": args.max_sets, "eps": EPS,
                     "budget_s": args.budget_s, "anchors": list(anchors),
                     "tuning": not args.no_tune, "bundles": args.bundle},
        "points": [], "not_measured": [
            f"{p.label}: torch {torch.__version__} has no float8_e4m3fn "
            "(FP8 needs torch >= 2.1)" for p in skipped]}

    save = results_writer(results, args.out)
    start = time.monotonic()
    deadline = start + args.budget_s
    bench = Bench(args, torch, F, norm_torch, _registry, triton_kernels)
    print(f"norm-bench: {len(plan)} points on {results['environment']['gpu']}; "
          "building our kernels ...", flush=True)
    build_errors = bench.build_kernels(plan)
    results["build_s"] = round(time.monotonic() - start, 1)
    results["build_errors"] = build_errors
    print(f"norm-bench: built in {results['build_s']} s"
          + (f", {len(build_errors)} failed" if build_errors else ""),
          flush=True)
    save()

    def done(index, point, record):
        for reason in record.pop("not_measured", []):
            results["not_measured"].append(f"{point.label}: {reason}")
        ours = record["times_us"].get("ours")
        print(f"  [{index + 1}/{len(plan)}] {point.label}: ours "
              f"{ours if ours else '-'} us ({record.get('config', '-')}), "
              f"{time.monotonic() - start:.0f} s", flush=True)
    measured, status = measure_points(
        torch, plan, lambda index, point: bench.measure_point(point, deadline),
        results, deadline, save, done, "norm-bench")
    # Second pass: torch.compile with the time that is left, fused add +
    # RMSNorm first.
    if "compile" in anchors and status == 0:
        compile_pass(sorted(measured, key=lambda m: m[1].op != "add_rms"),
                     lambda index, point, record: bench.measure_compiled(
                         point, record), results, deadline, save, start)
    results["elapsed_s"] = round(time.monotonic() - start, 1)
    save()
    if args.markdown:
        checks = None
        if args.checks and os.path.exists(args.checks):
            with open(args.checks) as f:
                checks = json.load(f)
        with open(args.markdown, "w") as f:
            f.write(report.format_markdown(results, checks))
    sys.stdout.write("\n" + report.format_console(results))
    return status


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
