#!/usr/bin/env python3
"""backward-bench: norm_opt's backward kernels beside torch's and Triton's.

On one GPU, the backward (training) pass alone of bf16 norms: RMSNorm with
a weight (HF's LlamaRMSNorm), fused residual add + RMSNorm (the gradient of
the sum h = x + r, which is both inputs', from dy and the residual stream's
own gradient dh, and dweight), LayerNorm with weight and bias, and the
per-head QK-Norm of a packed qkv (32 q / 8 k heads of 128, weights); hidden
4096, 8192, 2048, 1024, 5120 and 16384 (libnormjit's backward stages rows
beyond its registers in shared memory; a refusal, where a device lacks the
shared memory, is recorded, not a failure) x 4096 and 16384 rows (tokens
for QK-Norm). At each point, the
median time of
  ours     the backward op alone, torch.ops.norm_opt.row_norm_backward /
           qk_norm_backward on the statistics its forward op saved (where
           those ops are not there as this benchmark calls them:
           torch.autograd.grad of norm_opt's public functions, said so)
  copy     a device copy moving as many bytes as ours must (the roofline)
  triton   a Triton backward in Liger-Kernel's style (triton_kernels.py):
           dx row by row, per-program f32 partial sums of dweight (dbias),
           then a torch sum over the programs
  eager    torch.autograd.grad(retain_graph=True) of the unfused graph: HF's
           LlamaRMSNorm (x.float(), pow, mean, rsqrt, .to(bf16), * w),
           x + r before it, F.layer_norm, the RMSNorm of each q and k head
  compile  the same autograd.grad of torch.compile of that function (its
           forward run once, the backward timed)
The autograd anchors record their forward once per stream (a backward op
runs on its forward's stream, and the CUDA graph captures one stream), then
replay only the backward. Correctness first, in the same run: each of our
kernels and each Triton kernel against a float64 reference on an odd row
count before any timing, then at each point every implementation's dx,
dweight, dbias (QK-Norm: dqkv, dq_weight, dk_weight) on the point's inputs,
outputs NaN-poisoned first (our buffers and Triton's filled; fresh autograd
outputs through the caching allocator, reported), at an explicit bf16
tolerance. A failing kernel's points (ours) or times (an anchor) are not
taken, and the run exits non-zero. Bytes: what ours must move (x or h, dy
[and dh] read, dx written, the weight read, its gradients written, the
saved f32 statistics read, one f32 row of partial sums per SM per
gradient written and read); BW/copy = those bytes per second over the
copy's. Results: a JSON file (written after every point), the table of
report.py and a section of RESULTS.md (report.py --backward).

    backward_bench.py --out backward.json [--budget-s 120] [--quick]
    backward_bench.py --dry-run             # the plan, no torch, no GPU
"""

import argparse
import os
import sys
import time
from typing import Dict, List, NamedTuple, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import norm_bench  # noqa: E402  (the run's machinery; no torch)
import report  # noqa: E402
from norm_bench import describe  # noqa: E402

OPS = ("rms", "add_rms", "layer", "qk")
HIDDEN = (4096, 8192, 2048, 1024, 5120, 16384)  # in the order measured
ROWS = (4096, 16384)
QK_HEADS = (32, 8)     # query, key/value heads
QK_HEAD_DIM = 128
EPS = 1e-6
DTYPE = "bf16"
ELEMENT_BYTES = 2
PLAN_SMS = 132         # the plan's partial rows (an H200's SMs; a run
                       # counts its GPU's)
CHECK_ROWS = 333       # the kernels' float64 check: rows of a row norm,
CHECK_TOKENS = 77      # tokens of QK-Norm (77 x 40 head rows)
ROTATE_FACTOR = 3.0    # buffer sets span this many L2 caches
MAX_SETS = 64
QUICK = dict(hidden=(4096,), rows=(4096,))
# The arguments this benchmark passes to norm_opt's training ops, by name.
OP_ARGUMENTS = {
    "row_norm": ("input", "addend", "weight", "bias", "kind", "eps", "alpha",
                 "weight_offset"),
    "row_norm_backward": ("v", "grad_out", "grad_residual", "weight", "mean",
                          "rstd", "kind", "eps", "alpha", "weight_offset",
                          "addend_dtype", "bias_dtype"),
    "qk_norm": ("qkv", "num_q_heads", "num_kv_heads", "q_weight", "k_weight",
                "eps", "kind", "weight_offset"),
    "qk_norm_backward": ("qkv", "grad_q", "grad_k", "q_weight", "k_weight",
                         "mean", "rstd", "num_q_heads", "num_kv_heads", "eps",
                         "kind", "weight_offset"),
}
OURS_PATHS = {
    "op": "the backward op alone (torch.ops.norm_opt.row_norm_backward / "
          "qk_norm_backward on the statistics of the forward op)",
    "autograd": "torch.autograd.grad(retain_graph=True) of norm_opt's public "
                "functions (its forward run once)",
}
# The gradients each implementation returns, by name (the fused add's
# autograd also gives dr, the same gradient as dx).
GRADS = {"rms": ("dx", "dw"), "add_rms": ("dx", "dw"),
         "layer": ("dx", "dw", "db"), "qk": ("dqkv", "dqw", "dkw")}


def backward_bytes(op: str, hidden: int, rows: int, sms: int = PLAN_SMS,
                   heads=QK_HEADS) -> Dict[str, int]:
    """Bytes one backward must move: `tensors` the row tensors (x or h, dy
    [and dh] read, dx written; QK-Norm: q's and k's columns of qkv, dq and
    dk read, their columns of dqkv written, v's zeros not counted),
    `params` the weights read and their gradients written, `stats` the
    saved f32 statistics read, `partials` one f32 row of partial sums per
    SM per gradient, written and read; `ours` all of them; `copy` the bytes
    the copy anchor reads (it writes as many: their sum is ours)."""
    e = ELEMENT_BYTES
    if op == "qk":
        normed = rows * sum(heads) * hidden * e
        sizes = {"tensors": 3 * normed, "params": 4 * hidden * e,
                 "stats": rows * sum(heads) * 4,
                 "partials": 2 * 2 * sms * hidden * 4}
    else:
        tensor = rows * hidden * e
        grads = 2 if op == "layer" else 1            # dw (and db)
        sizes = {"tensors": (4 if op == "add_rms" else 3) * tensor,
                 "params": (1 + grads) * hidden * e,
                 "stats": rows * 4 * (2 if op == "layer" else 1),
                 "partials": 2 * grads * sms * hidden * 4}
    sizes["ours"] = sum(sizes.values())
    sizes["copy"] = sizes["ours"] // (2 * e) * e
    return sizes


class Point(NamedTuple):
    op: str
    hidden: int        # the head dim for qk
    rows: int          # tokens for qk
    dtype: str = DTYPE

    @property
    def label(self) -> str:
        return report.backward_label(self.as_record())

    @property
    def kernel(self) -> str:
        """Our kernel (one per operation and hidden size)."""
        if self.op == "qk":
            return f"qk H{QK_HEADS[0]}/{QK_HEADS[1]} D{self.hidden}"
        return f"{self.op} h{self.hidden}"

    def as_record(self) -> dict:
        record = self._asdict()
        if self.op == "qk":
            record["heads"] = list(QK_HEADS)
        return record

    def bytes(self, sms: int = PLAN_SMS) -> Dict[str, int]:
        return backward_bytes(self.op, self.hidden, self.rows, sms)


def build_plan(ops=OPS, hidden=HIDDEN, rows=ROWS) -> List[Point]:
    """Every point, in the order they are measured: by hidden size (QK-Norm
    after the first), each operation, each row count."""
    points = []
    for i, h in enumerate(hidden):
        for op in ops:
            if op != "qk":
                points += [Point(op, h, r) for r in rows]
        if i == 0 and "qk" in ops:
            points += [Point("qk", QK_HEAD_DIM, r) for r in rows]
    if not hidden and "qk" in ops:
        points += [Point("qk", QK_HEAD_DIM, r) for r in rows]
    return points


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--out", default="backward-results.json",
                        help="results JSON (written after every point)")
    parser.add_argument("--budget-s", type=float, default=120,
                        help="wall-clock budget of the measurements")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--hidden", default=",".join(map(str, HIDDEN)),
                        help="hidden sizes of the row norms, comma separated")
    parser.add_argument("--rows", default=",".join(map(str, ROWS)),
                        help="rows (QK-Norm: tokens), comma separated")
    parser.add_argument("--anchors",
                        default=",".join(report.BACKWARD_ANCHORS),
                        help="which anchors to time beside ours")
    parser.add_argument("--ours", choices=("auto",) + tuple(OURS_PATHS),
                        default="auto", help="time the backward op alone "
                        "(op), autograd of the public functions, or the op "
                        "where norm_opt has it as this benchmark calls it")
    parser.add_argument("--quick", action="store_true",
                        help=f"a few points only ({QUICK})")
    parser.add_argument("--replays", type=int, default=9)
    parser.add_argument("--target-us", type=float, default=1000.0,
                        help="launches per graph replay fill about this")
    parser.add_argument("--cache-dir", help="libnormjit's disk cache")
    parser.add_argument("--dry-run", "--plan", action="store_true",
                        help="print the plan and exit (no torch, no GPU)")
    args = parser.parse_args(argv)
    if args.quick:
        args.hidden = ",".join(map(str, QUICK["hidden"]))
        args.rows = ",".join(map(str, QUICK["rows"]))
    try:
        args.ops = tuple(o for o in args.ops.split(",") if o)
        args.hidden = tuple(int(h) for h in args.hidden.split(",") if h)
        args.rows = tuple(int(r) for r in args.rows.split(",") if r)
        args.anchors = tuple(a for a in args.anchors.split(",") if a)
    except ValueError as error:
        parser.error(str(error))
    norm_bench.check_known(parser, ("--ops", args.ops, OPS),
                           ("--anchors", args.anchors,
                            report.BACKWARD_ANCHORS))
    if not args.rows or min(args.rows) <= 0:
        parser.error("--rows: expected positive row counts")
    if any(h <= 0 for h in args.hidden) or (
            not args.hidden and set(args.ops) - {"qk"}):
        parser.error("--hidden: expected positive hidden sizes")
    return args


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def print_plan(plan: List[Point], args) -> None:
    kernels = len({p.kernel for p in plan})
    print(f"backward-bench plan: {len(plan)} points, {kernels} "
          f"kernel{'s' if kernels != 1 else ''} of ours; anchors "
          f"{', '.join(('ours',) + args.anchors)}; budget "
          f"{args.budget_s:.0f} s")
    print(f"  {DTYPE}, eps {EPS:g}; the backward alone (dx, dweight[, "
          "dbias]); QK-Norm: per head, "
          f"{QK_HEADS[0]}/{QK_HEADS[1]} heads of {QK_HEAD_DIM}, rows are "
          "tokens; libnormjit's backward keeps rows in registers (bf16 "
          "RMSNorm up to 8192) or stages them in shared memory (up to "
          "16384): a refusal is recorded")
    print("  bytes: ours = x or h, dy [, dh] read + dx written + weight "
          "read, gradients written + saved f32 stats read + f32 partials "
          f"(one row per SM, {PLAN_SMS} here) written and read; copy reads "
          "and writes half of that each")
    for p in plan:
        b = p.bytes()
        print(f"  {p.label:28s} tensors {_mib(b['tensors']):>12s}  ours "
              f"{b['ours']:11d} B  copy {b['copy']:11d} B  "
              f"{report.backward_targets_text(p.op)}")
    print(f"  check: each of our and Triton's kernels against float64 at "
          f"{CHECK_ROWS} rows ({CHECK_TOKENS} tokens for QK-Norm), then every "
          "implementation at every point, outputs NaN-poisoned first; "
          f"{report.BACKWARD_TOLERANCE_TEXT}")


#===------------------------------------------------------------------------===#
# The float64 reference (no GPU needed: the fake test runs it on the host)
#===------------------------------------------------------------------------===#


def _rms64(torch, x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def row_reference(torch, F, kind: str, v, w, dy, dres=None):
    """The gradients of the norm of rows v (RMSNorm times w, or LayerNorm
    with weight w; a bias only shifts y) for the upstream gradient dy, in
    float64 by autograd: (dv [+ dres], dw, db: the sum of dy over the rows),
    float64."""
    f64 = torch.float64
    v64 = v.detach().to(f64).requires_grad_()
    w64 = w.detach().to(f64).requires_grad_()
    dy64 = dy.to(f64)
    with torch.enable_grad():
        if kind == "layer":
            y = F.layer_norm(v64, (v64.shape[-1],), w64, None, EPS)
        else:
            y = _rms64(torch, v64, w64)
        dv, dw = torch.autograd.grad(y, (v64, w64), dy64)
    if dres is not None:
        dv = dv + dres.to(f64)
    return dv, dw, dy64.reshape(-1, dy64.shape[-1]).sum(0)


def row_magnitudes(torch, kind: str, v, w, dy, dres=None):
    """The size of the terms each gradient sums, for the tolerance: dx
    rstd (|g| + |xhat| mean|g xhat| [+ mean|g|]) [+ |dres|] with g = dy w,
    dw the sum over the rows of |dy xhat|, db of |dy|; float64."""
    f64 = torch.float64
    v64, w64, dy64 = v.to(f64), w.to(f64), dy.to(f64)
    d = v64 - v64.mean(-1, keepdim=True) if kind == "layer" else v64
    rstd = torch.rsqrt(d.pow(2).mean(-1, keepdim=True) + EPS)
    xhat = d * rstd
    g = dy64 * w64
    m = rstd * (g.abs() + xhat.abs() * (g * xhat).abs().mean(-1, keepdim=True))
    if kind == "layer":
        m = m + rstd * g.abs().mean(-1, keepdim=True)
    if dres is not None:
        m = m + dres.to(f64).abs()
    flat = (dy64 * xhat).abs().reshape(-1, v64.shape[-1])
    return m, flat.sum(0), dy64.abs().reshape(-1, v64.shape[-1]).sum(0)


def qk_parts(qkv, q_heads: int, kv_heads: int, d: int):
    """q's and k's heads of a packed qkv [T, (Hq + 2 Hkv) D], as views
    [T, H, D]."""
    t = qkv.shape[0]
    return (qkv[:, :q_heads * d].reshape(t, q_heads, d),
            qkv[:, q_heads * d:(q_heads + kv_heads) * d].reshape(
                t, kv_heads, d))


def qk_reference(torch, qkv, qw, kw, dq, dk, q_heads: int, kv_heads: int):
    """The QK-Norm prologue's gradients (RMS of each head times its
    weight) in float64: (dqkv, v's columns zero; dqw; dkw) and their
    terms' sizes (row_magnitudes per head)."""
    f64 = torch.float64
    d = qw.numel()
    grads, sizes = [], []
    for (part, w, g) in zip(qk_parts(qkv, q_heads, kv_heads, d), (qw, kw),
                            (dq, dk)):
        dv, dw, _ = row_reference(torch, None, "rms", part, w, g)
        m, m_dw, _ = row_magnitudes(torch, "rms", part, w, g)
        grads.append((dv, dw))
        sizes.append((m, m_dw))
    t = qkv.shape[0]
    zeros = torch.zeros(t, kv_heads * d, dtype=f64, device=qkv.device)
    dqkv = torch.cat((grads[0][0].reshape(t, -1), grads[1][0].reshape(t, -1),
                      zeros), 1)
    m = torch.cat((sizes[0][0].reshape(t, -1), sizes[1][0].reshape(t, -1),
                   zeros), 1)
    return ({"dqkv": dqkv, "dqw": grads[0][1], "dkw": grads[1][1]},
            {"dqkv": m, "dqw": sizes[0][1], "dkw": sizes[1][1]})


def reference(torch, F, point: Point, s: dict):
    """The float64 gradients of `point` on the inputs of set `s` and the
    sizes of their terms: two dicts by GRADS' names."""
    if point.op == "qk":
        return qk_reference(torch, s["qkv"], s["qw"], s["kw"], s["dq"],
                            s["dk"], *QK_HEADS)
    kind = "layer" if point.op == "layer" else "rms"
    v = s["h"] if point.op == "add_rms" else s["x"]
    dres = s.get("dh")
    dv, dw, db = row_reference(torch, F, kind, v, s["w"], s["dy"], dres)
    m, m_dw, m_db = row_magnitudes(torch, kind, v, s["w"], s["dy"], dres)
    grads, sizes = {"dx": dv, "dw": dw}, {"dx": m, "dw": m_dw}
    if point.op == "layer":
        grads["db"], sizes["db"] = db, m_db
    return grads, sizes


def compare(torch, got: dict, ref: dict, sizes: dict, op: str,
            dtype: str = DTYPE) -> dict:
    """`got` (the gradients by name) against the float64 reference at
    report.BACKWARD_TOLERANCE[dtype]: |g - ref| <= ulps * ulp(ref) +
    magnitude * the size of ref's terms. A gradient missing, NaN or
    outside counts; ok when none does."""
    import attention_bench  # bf16_ulp; imports torch only here
    ulps, magnitude = report.BACKWARD_TOLERANCE[dtype]
    record = {"elements": 0, "bad_elements": 0, "nan_outputs": 0,
              "max_ulps": None, "worst_of_tolerance": None, "missing": [],
              "bad": {}}
    worst_ulps, worst_tol = [], []
    for name in GRADS[op] + (("dr",) if op == "add_rms" else ()):
        if name not in got:
            if name in GRADS[op]:
                record["missing"].append(name)
            continue
        want = ref["dx" if name == "dr" else name]
        size = sizes["dx" if name == "dr" else name]
        have = got[name].detach().reshape(want.shape).double()
        error = (have - want).abs()
        ulp = attention_bench.bf16_ulp(torch, want)
        tolerance = ulps * ulp + magnitude * size
        bad = int((~(error <= tolerance)).sum())
        record["elements"] += want.numel()
        record["bad_elements"] += bad
        record["nan_outputs"] += int(have.isnan().sum())
        if bad:
            record["bad"][name] = bad
        finite = ~error.isnan()
        if finite.any():
            worst_ulps.append(float((error / ulp)[finite].max()))
            worst_tol.append(float((error / tolerance)[finite].max()))
    if worst_ulps:
        record["max_ulps"] = round(max(worst_ulps), 2)
        record["worst_of_tolerance"] = round(max(worst_tol), 4)
    record["ok"] = not record["bad_elements"] and not record["missing"]
    return record


#===------------------------------------------------------------------------===#
# On the device
#===------------------------------------------------------------------------===#


def training_ops(torch):
    """The namespace of norm_opt's training ops (the fake test's stand-in
    replaces this)."""
    return torch.ops.norm_opt


def op_mismatch(torch) -> str:
    """'' where torch.ops.norm_opt has the training ops with the arguments
    this benchmark passes (OP_ARGUMENTS), else what differs."""
    try:
        namespace = torch.ops.norm_opt
        for name, expected in OP_ARGUMENTS.items():
            schema = getattr(namespace, name).default._schema
            names = tuple(a.name for a in schema.arguments)
            if names != expected:
                return (f"{name}({', '.join(names)}): expected "
                        f"({', '.join(expected)})")
    except Exception as error:  # no such op: torch raises AttributeError or
        return describe(error)  # RuntimeError, depending on its version
    return ""


def is_refusal(error: Exception) -> bool:
    """libnormjit's UNSUPPORTED (a backward that does not fit): recorded as
    refused, not as a failure."""
    from norm_opt import NormJitError
    return isinstance(error, NormJitError) and error.status == 3


class Retained:
    """A backward to time again and again: the forward `record()` ->
    (outputs, inputs, grads) run once per stream (autograd runs each
    backward op on its forward's stream, and a CUDA graph captures one
    stream: timing.py warms up and captures on a side stream), then
    autograd.grad(retain_graph=True)."""

    def __init__(self, torch, record):
        self.torch = torch
        self.record = record
        self.graphs = {}

    def __call__(self):
        torch = self.torch
        key = torch.cuda.current_stream().cuda_stream
        graph = self.graphs.get(key)
        if graph is None:
            with torch.enable_grad():
                graph = self.graphs[key] = self.record()
        outputs, inputs, grads = graph
        return torch.autograd.grad(outputs, inputs, grads, retain_graph=True)


class BackwardBench:
    def __init__(self, args, torch, F, triton_kernels):
        self.args = args
        self.torch = torch
        self.F = F
        self.triton = triton_kernels
        self.ops = training_ops(torch)
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.sms = props.multi_processor_count
        self.l2 = norm_bench.l2_bytes(torch)
        self.compiled = {}
        self.kernel_checks = {}   # (impl, kernel) -> the float64 check
        mismatch = op_mismatch(torch) if args.ours != "autograd" else ""
        if args.ours == "op" or (args.ours == "auto" and not mismatch):
            self.ours_path = "op"
        else:
            self.ours_path = "autograd"
        self.ours_note = OURS_PATHS[self.ours_path] + (
            f" (not the op: {mismatch})" if mismatch else "")
        import timing
        self.timing = timing

    # Inputs ------------------------------------------------------------------

    def uniform(self, shape, low, high, plus=None):
        """bf16 in [low, high) (+ plus, in f32 before the rounding)."""
        torch = self.torch
        t = torch.rand(*shape, device="cuda", dtype=torch.float32)
        t = t * (high - low) + low
        if plus is not None:
            t = t + plus.float()
        return t.to(torch.bfloat16)

    def make_set(self, point: Point, seed: int) -> dict:
        """x (and r) in [-2, 2), weights in [0.5, 1.5), a bias in [-1, 1);
        upstream gradients in [-1, 1) plus x / 4 + 1/8 (correlated with the
        row and not centred, so that the projection and mean terms of dx
        matter); the fused add's h = x + r as torch rounds it; the copy's
        buffers."""
        torch = self.torch
        torch.manual_seed(seed)
        h, n = point.hidden, point.rows
        if point.op == "qk":
            hq, hkv = QK_HEADS
            s = {"qkv": self.uniform((n, (hq + 2 * hkv) * h), -2, 2),
                 "qw": self.uniform((h,), 0.5, 1.5),
                 "kw": self.uniform((h,), 0.5, 1.5)}
            q, k = qk_parts(s["qkv"], hq, hkv, h)
            s["dq"] = self.uniform((n, hq, h), -1, 1, q / 4 + 0.125)
            s["dk"] = self.uniform((n, hkv, h), -1, 1, k / 4 + 0.125)
        else:
            s = {"x": self.uniform((n, h), -2, 2),
                 "w": self.uniform((h,), 0.5, 1.5)}
            row = s["x"]
            if point.op == "layer":
                s["b"] = self.uniform((h,), -1, 1)
            if point.op == "add_rms":
                s["r"] = self.uniform((n, h), -2, 2)
                s["h"] = s["x"] + s["r"]
                s["dh"] = self.uniform((n, h), -1, 1)
                row = s["h"]
            s["dy"] = self.uniform((n, h), -1, 1, row / 4 + 0.125)
        elements = point.bytes(self.sms)["copy"] // ELEMENT_BYTES
        s["copy_src"] = self.uniform((elements,), -2, 2)
        s["copy_dst"] = torch.empty_like(s["copy_src"])
        return s

    def make_sets(self, point: Point, seed: int) -> List[dict]:
        count = norm_bench.buffer_sets(point.bytes(self.sms)["ours"], self.l2,
                                       ROTATE_FACTOR, MAX_SETS)
        return [self.make_set(point, seed * MAX_SETS + i)
                for i in range(count)]

    # Implementations ---------------------------------------------------------

    def eager_fn(self, op: str):
        """The unfused forward whose autograd is the anchor: HF's
        LlamaRMSNorm (Qwen3's q_norm and k_norm are the same), x + r before
        it, F.layer_norm."""
        torch, F = self.torch, self.F

        def rms(x, w):
            dtype = x.dtype
            v = x.to(torch.float32)
            variance = v.pow(2).mean(-1, keepdim=True)
            v = v * torch.rsqrt(variance + EPS)
            return w * v.to(dtype)

        if op == "rms":
            return rms
        if op == "layer":
            return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS)
        if op == "add_rms":
            def add_rms(x, r, w):
                h = x + r
                return rms(h, w), h
            return add_rms
        hq, hkv = QK_HEADS

        def qk(qkv, qw, kw):
            q, k = qk_parts(qkv, hq, hkv, qw.shape[0])
            return rms(q, qw), rms(k, kw)
        return qk

    def ours_fn(self, op: str):
        """norm_opt's public functions (autograd through its ops)."""
        import norm_opt
        if op == "rms":
            return lambda x, w: norm_opt.rms_norm(x, w, eps=EPS)
        if op == "layer":
            return lambda x, w, b: norm_opt.layer_norm(x, w, b, eps=EPS)
        if op == "add_rms":
            return lambda x, r, w: norm_opt.fused_add_rms_norm(x, r, w,
                                                               eps=EPS)
        return lambda qkv, qw, kw: norm_opt.qk_norm(
            qkv, QK_HEADS[0], QK_HEADS[1], qw, kw, eps=EPS)

    def forward_fn(self, name: str, op: str):
        if name == "ours":
            return self.ours_fn(op)
        if name == "eager":
            return self.eager_fn(op)
        fn = self.compiled.get(op)
        if fn is None:
            fn = self.compiled[op] = self.torch.compile(self.eager_fn(op),
                                                        dynamic=False)
        return fn

    def autograd_record(self, fn, point: Point, s: dict):
        """record() of Retained: fn on leaves that share the set's storage."""
        names = {"rms": ("x", "w"), "layer": ("x", "w", "b"),
                 "add_rms": ("x", "r", "w"), "qk": ("qkv", "qw", "kw")}
        grads = {"rms": ("dy",), "layer": ("dy",), "add_rms": ("dy", "dh"),
                 "qk": ("dq", "dk")}

        def record():
            leaves = tuple(s[k].detach().requires_grad_()
                           for k in names[point.op])
            outputs = fn(*leaves)
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            return outputs, leaves, tuple(s[k] for k in grads[point.op])
        return record

    def ours_saved(self, point: Point, s: dict) -> dict:
        """The forward op's saved statistics (and h) of set s, once."""
        if "ours_saved" not in s:
            ops = self.ops
            with self.torch.no_grad():
                if point.op == "qk":
                    _, _, mean, rstd = ops.qk_norm(
                        s["qkv"], QK_HEADS[0], QK_HEADS[1], s["qw"], s["kw"],
                        EPS, "rms", 0.0)
                    saved = {"rstd": rstd}
                elif point.op == "add_rms":  # the residual stream is input
                    _, h, _, rstd = ops.row_norm(s["r"], s["x"], s["w"], None,
                                                 "rms", EPS, 1.0, 0.0)
                    saved = {"h": h, "rstd": rstd}
                else:
                    kind = "layer" if point.op == "layer" else "rms"
                    _, _, mean, rstd = ops.row_norm(s["x"], None, s["w"],
                                                    s.get("b"), kind, EPS,
                                                    1.0, 0.0)
                    saved = {"mean": mean if kind == "layer" else None,
                             "rstd": rstd}
            s["ours_saved"] = saved
        return s["ours_saved"]

    def ours_op(self, point: Point, s: dict):
        saved = self.ours_saved(point, s)
        ops = self.ops
        if point.op == "qk":
            return ops.qk_norm_backward(
                s["qkv"], s["dq"], s["dk"], s["qw"], s["kw"], None,
                saved["rstd"], QK_HEADS[0], QK_HEADS[1], EPS, "rms", 0.0)
        if point.op == "add_rms":
            return ops.row_norm_backward(
                saved["h"], s["dy"], s["dh"], s["w"], None, saved["rstd"],
                "rms", EPS, 1.0, 0.0, s["x"].dtype, None)
        layer = point.op == "layer"
        return ops.row_norm_backward(
            s["x"], s["dy"], None, s["w"], saved["mean"], saved["rstd"],
            "layer" if layer else "rms", EPS, 1.0, 0.0, None,
            s["b"].dtype if layer else None)

    def triton_state(self, point: Point, s: dict) -> dict:
        """The Triton backward's saved statistics (f32, computed by torch
        outside the timing, as its forward would save them) and buffers:
        dx (dqkv) and the f32 partials of each gradient."""
        if "triton_state" in s:
            return s["triton_state"]
        torch, t = self.torch, self.triton
        f32 = torch.float32

        def stats(v, layer=False):
            v = v.float()
            mean = v.mean(-1, keepdim=True) if layer else None
            d = v - mean if layer else v
            rstd = torch.rsqrt(d.pow(2).mean(-1) + EPS).reshape(-1)
            return (None if mean is None else mean.reshape(-1).contiguous(),
                    rstd.contiguous())

        def partials(n, rows):
            programs = t.backward_shape(n, rows, self.sms)[3]
            return torch.empty(programs, n, dtype=f32, device="cuda")

        h = point.hidden
        if point.op == "qk":
            hq, hkv = QK_HEADS
            q, k = qk_parts(s["qkv"], hq, hkv, h)
            state = {"q_rstd": stats(q)[1], "k_rstd": stats(k)[1],
                     "dqkv": torch.empty_like(s["qkv"]),
                     "q_partials": partials(h, point.rows * hq),
                     "k_partials": partials(h, point.rows * hkv)}
        else:
            v = s["h"] if point.op == "add_rms" else s["x"]
            mean, rstd = stats(v, point.op == "layer")
            state = {"mean": mean, "rstd": rstd, "dx": torch.empty_like(v),
                     "dw_partials": partials(h, point.rows),
                     "db_partials": (partials(h, point.rows)
                                     if point.op == "layer" else None)}
        s["triton_state"] = state
        return state

    def triton_call(self, point: Point, s: dict):
        st = self.triton_state(point, s)
        t = self.triton
        if point.op == "qk":
            return t.qk_norm_backward(
                s["qkv"], s["dq"], s["dk"], s["qw"], s["kw"], st["q_rstd"],
                st["k_rstd"], QK_HEADS[0], QK_HEADS[1], st["dqkv"],
                st["q_partials"], st["k_partials"], self.sms)
        v = s["h"] if point.op == "add_rms" else s["x"]
        return t.norm_backward(s["dy"], v, s["w"], st["mean"], st["rstd"],
                               s.get("dh"), st["dx"], st["dw_partials"],
                               st["db_partials"], self.sms)

    def calls(self, name: str, point: Point, sets: List[dict]):
        """One zero-argument callable per buffer set."""
        if name == "copy":
            return [lambda s=s: s["copy_dst"].copy_(s["copy_src"])
                    for s in sets]
        if name == "ours" and self.ours_path == "op":
            return [lambda s=s: self.ours_op(point, s) for s in sets]
        if name == "triton":
            return [lambda s=s: self.triton_call(point, s) for s in sets]
        fn = self.forward_fn(name, point.op)
        return [Retained(self.torch, self.autograd_record(fn, point, s))
                for s in sets]

    def named(self, name: str, point: Point, result) -> dict:
        """An implementation's result as GRADS' names."""
        result = tuple(result)
        if name == "ours" and self.ours_path == "op" and point.op != "qk":
            dx, _, dw, db = result  # grad_addend: empty with alpha 1
            result = (dx, dw, db) if point.op == "layer" else (dx, dw)
        names = GRADS[point.op]
        if point.op == "add_rms" and len(result) == 3:  # autograd: dx, dr, dw
            names = ("dx", "dr", "dw")
        return dict(zip(names, result))

    def output_shapes(self, point: Point):
        """(shape, dtype) of each gradient, for the allocator's poison."""
        bf16 = self.torch.bfloat16
        if point.op == "qk":
            width = (QK_HEADS[0] + 2 * QK_HEADS[1]) * point.hidden
            return [((point.rows, width), bf16)] + [((point.hidden,), bf16)] * 2
        return ([((point.rows, point.hidden), bf16)]
                + [((point.hidden,), bf16)] * (len(GRADS[point.op]) - 1))

    # Checks ------------------------------------------------------------------

    def poisoned(self, name: str, point: Point, call, s: dict):
        """call()'s gradients with their outputs NaN first: Triton's buffers
        are filled; fresh outputs (ours, autograd) are taken from blocks of
        their sizes filled with NaN and freed just before (the caching
        allocator hands them back; `poisoned` counts those it did).
        Autograd's forward is recorded by a first call."""
        torch = self.torch
        nan = float("nan")
        if name == "triton":
            state = self.triton_state(point, s)
            for key, t in state.items():
                if key in ("dx", "dqkv") or key.endswith("partials"):
                    if t is not None:
                        t.fill_(nan)
            got = self.named(name, point, call())
            return got, "buffers filled"
        if isinstance(call, Retained):
            call()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        bait = [torch.full(shape, nan, dtype=dtype, device="cuda")
                for shape, dtype in self.output_shapes(point)]
        addresses = {t.data_ptr() for t in bait}
        del bait
        got = self.named(name, point, call())
        torch.cuda.synchronize()
        hits = sum(1 for t in got.values() if t.data_ptr() in addresses)
        return got, f"{hits} of {len(got)}"

    def check(self, name: str, point: Point, s: dict, ref=None) -> dict:
        """One implementation's gradients on set s (poisoned first) against
        the float64 reference (`ref`, or computed here); a first call, the
        build of a kernel of ours, is timed as build_s."""
        torch = self.torch
        call = self.calls(name, point, [s])[0]
        start = time.monotonic()
        if name == "ours":
            call()   # builds the kernels
            torch.cuda.synchronize()
        build_s = time.monotonic() - start
        got, poisoned = self.poisoned(name, point, call, s)
        grads, sizes = ref if ref is not None else reference(torch, self.F,
                                                             point, s)
        record = compare(torch, got, grads, sizes, point.op)
        record["poisoned"] = poisoned
        if name == "ours":
            record["build_s"] = round(build_s, 2)
        return record

    def check_kernel(self, name: str, point: Point) -> dict:
        """A kernel of `point` (ours or Triton's) against float64 at
        CHECK_ROWS rows (CHECK_TOKENS tokens)."""
        rows = CHECK_TOKENS if point.op == "qk" else CHECK_ROWS
        small = point._replace(rows=rows)
        record = {"kernel": point.kernel, "impl": name, "rows": rows}
        try:
            record.update(self.check(name, small, self.make_set(small, 4321)))
        except Exception as error:
            refused = name == "ours" and is_refusal(error)
            record["ok"] = None if refused else False
            record["refused" if record["ok"] is None else "error"] = (
                describe(error))
            self.torch.cuda.synchronize()
        return record

    # Measuring ---------------------------------------------------------------

    def measure_point(self, point: Point, seed: int) -> dict:
        """The point's float64 checks, then ours, the copy and the anchors
        but compile (the second pass)."""
        torch = self.torch
        sizes = point.bytes(self.sms)
        record = dict(point.as_record(), bytes_ours=sizes["ours"],
                      bytes_copy=sizes["copy"], bytes=sizes, times_us={},
                      spread={}, errors={}, checks={},
                      ours_path=self.ours_path)
        ours = self.kernel_checks.get(("ours", point.kernel), {})
        if ours.get("refused"):
            record["refused"] = ours["refused"]
        elif not ours.get("ok"):
            record["not_timed"] = "the float64 check of our kernel failed"
            return record
        sets = self.make_sets(point, seed)
        record["sets"] = len(sets)
        ref = reference(torch, self.F, point, sets[0])
        timed = ["copy"] if "copy" in self.args.anchors else []
        for name in ("ours",) + self.args.anchors:
            if name in ("copy", "compile") or (
                    name == "ours" and record.get("refused")):
                continue
            kernel = self.kernel_checks.get((name, point.kernel))
            if kernel is not None and not kernel.get("ok"):
                record["checks"][name] = {
                    "ok": False, "error": "its kernel failed the float64 "
                    "check"}
                continue
            try:
                check = self.check(name, point, sets[0], ref)
            except Exception as error:
                refused = name == "ours" and is_refusal(error)
                check = {"ok": None if refused else False,
                         "error": describe(error)}
                if refused:
                    record["refused"] = describe(error)
                torch.cuda.synchronize()
            record["checks"][name] = check
            if check.get("ok"):
                timed.append(name)
        del ref
        if not record.get("refused") and not record["checks"]["ours"].get("ok"):
            record["not_timed"] = "our gradients failed the float64 check"
            return record
        for name in ("ours",) + self.args.anchors:
            if name in timed:
                norm_bench.record_timing(
                    torch, record, name,
                    lambda: self.time(self.calls(name, point, sets)))
        return record

    def time(self, calls):
        return self.timing.measure(calls, target_us=self.args.target_us,
                                   replays=self.args.replays)

    def measure_compiled(self, point: Point, record: dict, seed: int) -> None:
        """torch.compile of the eager function at this point's shapes: its
        float64 check (its compiles happen there), then its backward timed."""
        sets = self.make_sets(point, seed)
        try:
            check = self.check("compile", point, sets[0])
        except Exception as error:
            check = {"ok": False, "error": describe(error)}
            self.torch.cuda.synchronize()
        record["checks"]["compile"] = check
        if check.get("ok"):
            norm_bench.record_timing(
                self.torch, record, "compile",
                lambda: self.time(self.calls("compile", point, sets)))


def load_triton(anchors):
    """triton_kernels (None without Triton: that anchor is skipped)."""
    if "triton" not in anchors:
        return None
    try:
        import triton_kernels
        return triton_kernels
    except ImportError as error:
        print(f"backward-bench: no Triton ({error}): that anchor is skipped",
              file=sys.stderr)
        return None


def check_text(check: dict) -> str:
    """A kernel check in one line."""
    if check.get("refused"):
        return f"refused: {check['refused']}"
    if "error" in check:
        return f"FAILED ({check['error']})"
    return ("ok" if check["ok"] else "FAILED") + (
        f" ({check['bad_elements']} of {check['elements']} outside, "
        f"{check['nan_outputs']} NaN, max {check['max_ulps']} ulps, "
        f"{check['worst_of_tolerance']} of the tolerance"
        + (f", build {check['build_s']} s" if "build_s" in check else "")
        + ")")


def failed(results: dict) -> bool:
    """Whether a float64 check failed (a refusal is no failure)."""
    checks = list(results["checks"])
    for point in results["points"]:
        checks += point.get("checks", {}).values()
    return any(c.get("ok") is False for c in checks)


def run(args) -> int:
    plan = build_plan(args.ops, args.hidden, args.rows)
    if args.dry_run:
        print_plan(plan, args)
        return 0
    started = norm_bench.start_torch_run("backward-bench", args.cache_dir)
    if started is None:
        return 1
    torch, F, triton_version, _, _ = started
    triton_kernels = load_triton(args.anchors)
    if triton_kernels is None:
        args.anchors = tuple(a for a in args.anchors if a != "triton")
    bench = BackwardBench(args, torch, F, triton_kernels)
    results = {
        "schema": report.BACKWARD_SCHEMA,
        "environment": norm_bench.environment(torch, triton_version),
        "settings": {"replays": args.replays, "target_us": args.target_us,
                     "eps": EPS, "dtype": DTYPE, "budget_s": args.budget_s,
                     "anchors": list(args.anchors), "sms": bench.sms,
                     "ours_path": bench.ours_path,
                     "ours_note": bench.ours_note,
                     "qk_heads": list(QK_HEADS), "check_rows": CHECK_ROWS,
                     "check_tokens": CHECK_TOKENS,
                     "tolerance": report.BACKWARD_TOLERANCE_TEXT,
                     "rotate_factor": ROTATE_FACTOR, "max_sets": MAX_SETS},
        "checks": [], "points": [], "not_measured": []}

    save = norm_bench.results_writer(results, args.out)
    start = time.monotonic()
    deadline = start + args.budget_s
    print(f"backward-bench: {len(plan)} points on "
          f"{results['environment']['gpu']}; ours timed as {bench.ours_note}"
          "; checking the kernels ...", flush=True)
    kernels = {p.kernel: p for p in plan}.values()
    for name in ("ours", "triton"):
        if name == "triton" and triton_kernels is None:
            continue
        for point in kernels:
            check = bench.check_kernel(name, point)
            if check.get("ok") is False and not norm_bench.device_usable(torch):
                print(f"backward-bench: stopped at {name} {point.kernel}: "
                      f"{check.get('error')}", file=sys.stderr)
                results["checks"].append(check)
                results["not_measured"] += [f"{p.label}: not reached"
                                            for p in plan]
                save()
                return 1
            bench.kernel_checks[(name, point.kernel)] = check
            results["checks"].append(check)
            print(f"  check {name} {point.kernel}: {check_text(check)}",
                  flush=True)
            save()

    def done(index, point, record):
        times = record["times_us"]
        print(f"  [{index + 1}/{len(plan)}] {point.label}: ours "
              f"{times.get('ours', '-')} us, copy {times.get('copy', '-')} "
              f"us, triton {times.get('triton', '-')} us, eager "
              f"{times.get('eager', '-')} us, "
              f"{time.monotonic() - start:.0f} s", flush=True)
        torch.cuda.empty_cache()
    measured, stopped = norm_bench.measure_points(
        torch, plan, lambda index, point: bench.measure_point(point, index),
        results, deadline, save, done, "backward-bench")
    if "compile" in args.anchors and not stopped:
        timed = [m for m in measured if "not_timed" not in m[2]]
        norm_bench.compile_pass(
            timed, lambda index, point, record: bench.measure_compiled(
                point, record, index), results, deadline, save, start)
    results["elapsed_s"] = round(time.monotonic() - start, 1)
    save()
    sys.stdout.write("\n" + report.format_backward_console(results))
    return int(bool(stopped) or failed(results))


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
