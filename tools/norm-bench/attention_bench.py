#!/usr/bin/env python3
"""attention-bench: norm_opt.attention's prefill beside what a user would run.

On one GPU, causal bf16 prefill at head dim 128 with Qwen3-like heads (32
query / 8 key-value heads, and 32 / 32), batch 4 x 4096 tokens and 1 x 16384,
two variants: QK-Norm (RMS, weights, eps 1e-6) and QK-Norm + RoPE (neox,
theta 1e6). At each point, the median time of
  ours     norm_opt.attention: QK-Norm (+ RoPE) and attention in one launch,
           on packed tokens [B*T, heads*D] with cu_seqlens (varlen)
  sdpa     F.scaled_dot_product_attention alone, on q and k normalized (and
           rotated) beforehand, untimed
  eager    F.rms_norm of each head of q and k, RoPE (HF's rotate_half in f32,
           then cast to bf16), then SDPA
  compile  torch.compile of eager (static shapes)
each on its natural layout: the anchors take contiguous [B, H, T, D], ours
contiguous [B*T, H*D], the same values; no layout transpose is timed for
anyone. Before timing, each of our kernels is checked against a float64
reference of the unfused graph (varlen, poisoned output); at each point our
output (poisoned first) is compared with eager's. A failed check marks the
point and skips its timing. FLOPs are FlashAttention's convention, 4 B Hq T^2
D / 2 for causal (the QK-Norm and RoPE prologue not counted). Results: a
JSON file (written after every point), the table of report.py and a section
of RESULTS.md (report.py --attention).

    attention_bench.py --out attention.json [--budget-s 120] [--quick]
    attention_bench.py --dry-run               # the plan, no torch, no GPU
"""

import argparse
import json
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

VARIANTS = ("qknorm", "qknorm_rope")
HEADS = ((32, 8), (32, 32))        # query, key/value heads
SHAPES = ((4, 4096), (1, 16384))   # batch, tokens per sequence
HEAD_DIM = 128
EPS = 1e-6
ROPE_THETA = 1e6
CHECK_SEQLENS = (300, 211)         # the float64 check: varlen, 2 sequences
AGREE_LIMIT = 1e-2                 # ||ours - eager|| / ||eager|| at a point
QUICK = dict(shapes=((4, 4096),), heads=((32, 8),))
# shared/ANCHORS.md (H200, 2026-11-30): causal bf16 D=128, 32 heads, QK-Norm
# RMS without RoPE. The targets: no slower than compile, then than sdpa.
REFERENCE_US = {(4, 4096): {"sdpa": 1042, "eager": 1583, "compile": 1158},
                (1, 16384): {"sdpa": 3831, "eager": 4331, "compile": 3921}}


def causal_flops(batch: int, heads: int, seqlen: int, head_dim: int) -> int:
    """FlashAttention's count for causal attention: two matrix products of
    2 T^2 D per head, halved by the mask."""
    return 4 * batch * heads * seqlen * seqlen * head_dim // 2


class Point(NamedTuple):
    variant: str
    batch: int
    seqlen: int
    q_heads: int
    kv_heads: int
    head_dim: int = HEAD_DIM

    @property
    def label(self) -> str:
        return report.attention_label(self._asdict())

    @property
    def kernel(self) -> str:
        """Our kernel (one per variant and heads: tokens are its rows)."""
        return f"{self.variant} H{self.q_heads}/{self.kv_heads}"

    @property
    def tokens(self) -> int:
        return self.batch * self.seqlen

    @property
    def rope(self) -> bool:
        return self.variant == "qknorm_rope"

    @property
    def flops(self) -> int:
        return causal_flops(self.batch, self.q_heads, self.seqlen,
                            self.head_dim)


def build_plan(variants=VARIANTS, heads=HEADS, shapes=SHAPES) -> List[Point]:
    """Every point, in the order they are measured (QK-Norm first)."""
    return [Point(v, b, t, hq, hkv) for v in variants for hq, hkv in heads
            for b, t in shapes]


def _pairs(text: str, sep: str):
    return tuple(tuple(int(x) for x in item.split(sep))
                 for item in text.split(",") if item)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--out", default="attention-results.json",
                        help="results JSON (written after every point)")
    parser.add_argument("--budget-s", type=float, default=120,
                        help="wall-clock budget of the measurements")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--heads", default=",".join(f"{q}/{k}"
                                                    for q, k in HEADS),
                        help="query/key-value heads, comma separated")
    parser.add_argument("--shapes", default=",".join(f"{b}x{t}"
                                                     for b, t in SHAPES),
                        help="batch x tokens per sequence, comma separated")
    parser.add_argument("--anchors", default=",".join(report.ATTENTION_ANCHORS),
                        help="which anchors to time beside ours")
    parser.add_argument("--quick", action="store_true",
                        help=f"a few points only ({QUICK})")
    parser.add_argument("--replays", type=int, default=9)
    parser.add_argument("--target-us", type=float, default=3000.0,
                        help="launches per graph replay fill about this")
    parser.add_argument("--cache-dir", help="libnormjit's disk cache")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and exit (no torch, no GPU)")
    args = parser.parse_args(argv)
    if args.quick:
        args.shapes = ",".join(f"{b}x{t}" for b, t in QUICK["shapes"])
        args.heads = ",".join(f"{q}/{k}" for q, k in QUICK["heads"])
    try:
        args.variants = tuple(v for v in args.variants.split(",") if v)
        args.anchors = tuple(a for a in args.anchors.split(",") if a)
        args.heads = _pairs(args.heads, "/")
        args.shapes = _pairs(args.shapes, "x")
    except ValueError as error:
        parser.error(str(error))
    norm_bench.check_known(
        parser, ("--variants", args.variants, VARIANTS),
        ("--anchors", args.anchors, report.ATTENTION_ANCHORS))
    if any(len(h) != 2 or min(h) <= 0 or h[0] % h[1] for h in args.heads):
        parser.error("--heads: expected Hq/Hkv, Hkv dividing Hq")
    if any(len(s) != 2 or min(s) <= 0 for s in args.shapes):
        parser.error("--shapes: expected BxT, both positive")
    return args


def print_plan(plan: List[Point], args) -> None:
    by_variant = {}
    for p in plan:
        by_variant[p.variant] = by_variant.get(p.variant, 0) + 1
    kernels = sorted({p.kernel for p in plan})
    print(f"attention-bench plan: {len(plan)} points "
          f"({', '.join(f'{v} {n}' for v, n in by_variant.items())}), "
          f"{len(kernels)} kernels to build; anchors "
          f"{', '.join(('ours',) + args.anchors)}; budget {args.budget_s:.0f} s")
    print(f"  causal bf16 D={HEAD_DIM}; QK-Norm rms eps {EPS:g} with weights; "
          f"rope neox theta {ROPE_THETA:g}; flops = 4*B*Hq*T^2*D/2")
    for p in plan:
        print(f"  {p.label:34s} tokens {p.tokens:6d}  flops {p.flops:14d} "
              f"({p.flops / 1e12:.3f} TFLOP)")
    print(f"  check: each kernel against float64 at seqlens "
          f"{','.join(map(str, CHECK_SEQLENS))} (varlen, poisoned output); "
          f"tolerance {report.ATTENTION_TOLERANCE}")
    for (b, t), times in REFERENCE_US.items():
        flops = causal_flops(b, 32, t, HEAD_DIM)
        print(f"  ANCHORS.md B{b} T{t} H32: " + ", ".join(
            f"{name} {us} us ({flops / (us * 1e6):.1f} TFLOP/s)"
            for name, us in times.items()))


#===------------------------------------------------------------------------===#
# On the device
#===------------------------------------------------------------------------===#


def rope_tables(torch, seqlen: int, dim: int, theta: float):
    """HF's cos and sin [T, D] (cat(freqs, freqs)), in f32, computed in f64.
    Outside the timing: a model computes them once per forward."""
    inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64,
                                       device="cuda") / dim)
    freqs = torch.arange(seqlen, dtype=torch.float64,
                         device="cuda")[:, None] * inv_freq[None]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().float(), emb.sin().float()


def normalize_reference(torch, x, w, heads):
    """RMS-normalize each head of token rows x times w in float64, rounded to
    bf16: [tokens, heads, D] float64."""
    d = w.numel()
    x = x.to(torch.float64).view(-1, heads, d)
    x = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + EPS)
    return (x * w.to(torch.float64)).to(torch.bfloat16).to(torch.float64)


def rotate_reference(torch, x, positions):
    """RoPE neox (theta ROPE_THETA) of [tokens, heads, D] float64 by each
    token's position, in float64, rounded to bf16."""
    f64 = torch.float64
    d = x.size(-1)
    half = d // 2
    freq = ROPE_THETA ** (-2 * torch.arange(half, dtype=f64,
                                            device=x.device) / d)
    angle = positions.to(f64)[:, None, None] * freq
    c, s = angle.cos(), angle.sin()
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * c - b * s, b * c + a * s), -1).to(
        torch.bfloat16).to(f64)


def reference(torch, q, k, v, qw, kw, cu_seqlens, q_heads, kv_heads, rope):
    """The unfused graph in float64, as norm_opt.attention documents it:
    RMS-normalize each head of q and k times its weight, round to bf16;
    rotate (neox) by the position within the sequence, round to bf16; causal
    attention per sequence in float64. Returns (out, sum_j p_j |v_j|), both
    [tokens, Hq, D] float64."""
    d = qw.numel()
    f64 = torch.float64
    positions = torch.cat([torch.arange(int(e - s), device=q.device)
                           for s, e in zip(cu_seqlens[:-1], cu_seqlens[1:])])

    def prologue(x, w, heads):
        x = normalize_reference(torch, x, w, heads)
        return rotate_reference(torch, x, positions) if rope else x

    qn, kn = prologue(q, qw, q_heads), prologue(k, kw, kv_heads)
    vv = v.to(f64).view(-1, kv_heads, d)
    out = torch.empty_like(qn)
    magnitude = torch.empty_like(qn)
    group = q_heads // kv_heads
    for s, e in zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist()):
        qs = qn[s:e].transpose(0, 1)
        ks = kn[s:e].transpose(0, 1).repeat_interleave(group, 0)
        vs = vv[s:e].transpose(0, 1).repeat_interleave(group, 0)
        scores = qs @ ks.transpose(-1, -2) / d ** 0.5
        mask = torch.ones(e - s, e - s, dtype=torch.bool,
                          device=q.device).triu(1)
        p = scores.masked_fill(mask, float("-inf")).softmax(-1)
        out[s:e] = (p @ vs).transpose(0, 1)
        magnitude[s:e] = (p @ vs.abs()).transpose(0, 1)
    return out, magnitude


def bf16_ulp(torch, x):
    """The spacing of bf16 numbers at |x| (subnormals: 2^-133)."""
    _, exponent = torch.frexp(x.abs().clamp_min(2.0 ** -126))
    return torch.ldexp(torch.ones_like(x), exponent - 8)


class AttentionBench:
    def __init__(self, args, torch, F, norm_torch, registry):
        self.args = args
        self.torch = torch
        self.F = F
        self.ours = norm_torch
        self.registry = registry
        self.compiled = {}
        self.checks = {}   # kernel -> the float64 check's record
        import timing
        self.timing = timing
        self.gqa = "enable_gqa"
        try:
            x = torch.zeros(1, 2, 1, 16, dtype=torch.bfloat16, device="cuda")
            F.scaled_dot_product_attention(x, x[:, :1], x[:, :1],
                                           enable_gqa=True)
        except Exception:  # torch < 2.5: TypeError
            self.gqa = "repeat_interleave (timed)"

    # Inputs ------------------------------------------------------------------

    def make_inputs(self, point: Point, seqlens, seed: int) -> dict:
        """Packed q, k, v [tokens, heads * D] in [-2, 2), weights in [-2, 2),
        cu_seqlens; for the anchors (equal seqlens only) the same values as
        [B, H, T, D], and the RoPE tables."""
        torch = self.torch
        torch.manual_seed(seed)
        d, tokens = point.head_dim, sum(seqlens)

        def rand(*shape):
            return (torch.rand(*shape, device="cuda") * 4 - 2).to(
                torch.bfloat16)

        s = {"q": rand(tokens, point.q_heads * d),
             "k": rand(tokens, point.kv_heads * d),
             "v": rand(tokens, point.kv_heads * d),
             "qw": rand(d), "kw": rand(d)}
        offsets = [0]
        for n in seqlens:
            offsets.append(offsets[-1] + n)
        s["cu_seqlens"] = torch.tensor(offsets, dtype=torch.int32,
                                       device="cuda")
        if len(set(seqlens)) == 1:
            b, t = len(seqlens), seqlens[0]
            for name, heads in (("q", point.q_heads), ("k", point.kv_heads),
                                ("v", point.kv_heads)):
                s[name + "4"] = s[name].view(b, t, heads, d).transpose(
                    1, 2).contiguous()
            if point.rope:
                s["cos"], s["sin"] = rope_tables(torch, t, d, ROPE_THETA)
        return s

    # Implementations ---------------------------------------------------------

    def sdpa(self, q, k, v, causal=True):
        if self.gqa == "enable_gqa":
            return self.F.scaled_dot_product_attention(
                q, k, v, is_causal=causal, enable_gqa=q.size(1) != k.size(1))
        group = q.size(1) // k.size(1)
        if group > 1:
            k = k.repeat_interleave(group, 1)
            v = v.repeat_interleave(group, 1)
        return self.F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def prologue_fn(self, rope: bool):
        """Eager QK-Norm (+ RoPE) of [B, H, T, D] q and k."""
        F = self.F

        def rotate(x, cos, sin):  # HF's apply_rotary_pos_emb, in f32
            xf = x.float()
            half = xf.size(-1) // 2
            rotated = self.torch.cat((-xf[..., half:], xf[..., :half]), -1)
            return (xf * cos + rotated * sin).to(x.dtype)

        def prologue(q, k, qw, kw, cos=None, sin=None):
            d = q.size(-1)
            q = F.rms_norm(q, (d,), qw, EPS)
            k = F.rms_norm(k, (d,), kw, EPS)
            if rope:
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            return q, k
        return prologue

    def eager_fn(self, rope: bool):
        prologue = self.prologue_fn(rope)

        def eager(q, k, v, qw, kw, cos=None, sin=None):
            q, k = prologue(q, k, qw, kw, cos, sin)
            return self.sdpa(q, k, v)
        return eager

    def eager_args(self, point: Point, s: dict):
        extra = (s["cos"], s["sin"]) if point.rope else ()
        return (s["q4"], s["k4"], s["v4"], s["qw"], s["kw"]) + extra

    def prepare_ours(self, point: Point, s: dict):
        rope = dict(rope="neox", rope_theta=ROPE_THETA) if point.rope else {}
        return self.ours.prepare_attention(
            s["q"], s["k"], s["v"], causal=True, cu_seqlens=s["cu_seqlens"],
            qk_norm="rms", q_norm_weight=s["qw"], k_norm_weight=s["kw"],
            qk_norm_eps=EPS, head_dim=point.head_dim, **rope)

    def calls(self, name: str, point: Point, s: dict):
        """A zero-argument callable (one buffer set: every working set here
        is several times the L2 cache)."""
        if name == "ours":
            call = self.prepare_ours(point, s)
            return lambda: self.ours.run(call)
        if name == "sdpa":
            if "qn4" not in s:  # normalized (and rotated) q and k, untimed
                extra = (s["cos"], s["sin"]) if point.rope else ()
                s["qn4"], s["kn4"] = self.prologue_fn(point.rope)(
                    s["q4"], s["k4"], s["qw"], s["kw"], *extra)
            return lambda: self.sdpa(s["qn4"], s["kn4"], s["v4"])
        if name == "eager":
            fn, args = self.eager_fn(point.rope), self.eager_args(point, s)
            return lambda: fn(*args)
        if name == "compile":
            fn = self.compiled.get(point.rope)
            if fn is None:
                fn = self.torch.compile(self.eager_fn(point.rope),
                                        dynamic=False)
                self.compiled[point.rope] = fn
            args = self.eager_args(point, s)
            return lambda: fn(*args)
        raise ValueError(name)

    # Checks ------------------------------------------------------------------

    def check_kernel(self, point: Point) -> dict:
        """Our kernel of `point` against the float64 reference, at
        CHECK_SEQLENS, output poisoned first. Its first launch builds it
        (compile and tune): timed as build_s."""
        torch = self.torch
        s = self.make_inputs(point, CHECK_SEQLENS, seed=1234)
        call = self.prepare_ours(point, s)
        start = time.monotonic()
        self.ours.run(call)  # builds (and tunes) the kernel
        torch.cuda.synchronize()
        build_s = time.monotonic() - start
        out = call.outputs[0]
        out.fill_(float("nan"))
        self.ours.run(call)
        ref, magnitude = reference(torch, s["q"], s["k"], s["v"], s["qw"],
                                   s["kw"], s["cu_seqlens"], point.q_heads,
                                   point.kv_heads, point.rope)
        got = out.view_as(ref).double()
        error = (got - ref).abs()
        ulp = bf16_ulp(torch, ref)
        tolerance = 8 * ulp + 2.0 ** -8 * magnitude
        written = ~got.isnan()
        record = {"kernel": point.kernel, "seqlens": list(CHECK_SEQLENS),
                  "elements": error.numel(),
                  "nan_outputs": int((~written).sum()),
                  "bad_elements": int((~(error <= tolerance)).sum()),
                  "max_ulps": None, "worst_of_tolerance": None,
                  "rel_error": float((got - ref).nan_to_num(float("inf"))
                                     .norm() / ref.norm()),
                  "build_s": round(build_s, 2)}
        record["ok"] = record["bad_elements"] == 0
        if written.any():
            record["max_ulps"] = float((error / ulp)[written].max())
            record["worst_of_tolerance"] = float(
                (error / tolerance)[written].max())
        return record

    def agreement(self, point: Point, s: dict) -> dict:
        """Our output at the point (poisoned first) against eager's."""
        torch = self.torch
        call = self.prepare_ours(point, s)
        start = time.monotonic()
        self.ours.run(call)  # may tune this row count: before the poison
        torch.cuda.synchronize()
        first_s = time.monotonic() - start
        call.outputs[0].fill_(float("nan"))
        self.ours.run(call)
        want = self.eager_fn(point.rope)(*self.eager_args(point, s))
        want = want.transpose(1, 2).reshape(call.outputs[0].shape).float()
        got = call.outputs[0].float()
        nan = int(got.isnan().sum())
        rel = float((got - want).nan_to_num(float("inf")).norm() / want.norm())
        torch.cuda.synchronize()
        return {"ok": nan == 0 and rel <= AGREE_LIMIT, "nan_outputs": nan,
                "rel_error": rel, "limit": AGREE_LIMIT,
                "first_call_s": round(first_s, 2)}

    # Measuring ---------------------------------------------------------------

    def time(self, call):
        return self.timing.measure([call], target_us=self.args.target_us,
                                   replays=self.args.replays)

    def sdpa_kernel(self, call) -> Optional[str]:
        """The CUDA kernel SDPA spends most of its time in (which backend)."""
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                call()
                self.torch.cuda.synchronize()
            events = [(getattr(e, "device_time_total", None)
                       or getattr(e, "cuda_time_total", 0), e.key)
                      for e in prof.key_averages()
                      if not e.key.startswith("aten::")]
            return max(events)[1][:120] if events else None
        except Exception:  # informative only
            return None

    def measure_point(self, point: Point, seed: int) -> dict:
        """The point's checks, then ours and the anchors but compile."""
        record = dict(point._asdict(), tokens=point.tokens, flops=point.flops,
                      times_us={}, spread={}, errors={}, gqa=self.gqa)
        check = self.checks.get(point.kernel)
        record["check"] = check
        if check is None or not check["ok"]:
            record["not_timed"] = "the float64 check of our kernel failed"
            return record
        s = self.make_inputs(point, (point.seqlen,) * point.batch, seed)
        try:
            record["agreement"] = self.agreement(point, s)
        except Exception as error:
            record["errors"]["agreement"] = describe(error)
            self.torch.cuda.synchronize()
        if not record.get("agreement", {}).get("ok"):
            record["not_timed"] = "our output disagrees with eager's"
            return record
        kernel = self.registry.get_kernel(
            self.torch.cuda.current_device(), self.prepare_ours(point, s).desc)
        record["config"] = kernel.config(point.tokens).suffix
        record["plan_source"] = kernel.tuning(point.tokens).source
        for name in ("ours",) + self.args.anchors:
            if name != "compile":  # the second pass
                norm_bench.record_timing(
                    self.torch, record, name,
                    lambda: self.time(self.calls(name, point, s)))
        if "sdpa" in self.args.anchors:
            record["sdpa_kernel"] = self.sdpa_kernel(
                self.calls("sdpa", point, s))
        return record

    def measure_compiled(self, point: Point, record: dict, seed: int) -> None:
        """torch.compile of eager at this point's shapes (its compile happens
        in the warm-up, outside the timing)."""
        s = self.make_inputs(point, (point.seqlen,) * point.batch, seed)
        norm_bench.record_timing(
            self.torch, record, "compile",
            lambda: self.time(self.calls("compile", point, s)))


def run(args) -> int:
    plan = build_plan(args.variants, args.heads, args.shapes)
    if args.dry_run:
        print_plan(plan, args)
        return 0
    started = norm_bench.start_torch_run("attention-bench", args.cache_dir)
    if started is None:
        return 1
    torch, F, triton_version, norm_torch, registry = started
    bench = AttentionBench(args, torch, F, norm_torch, registry)
    results = {
        "schema": report.ATTENTION_SCHEMA,
        "environment": norm_bench.environment(torch, triton_version),
        "settings": {"replays": args.replays, "target_us": args.target_us,
                     "eps": EPS, "rope_theta": ROPE_THETA,
                     "budget_s": args.budget_s, "anchors": list(args.anchors),
                     "gqa": bench.gqa, "check_seqlens": list(CHECK_SEQLENS),
                     "tolerance": report.ATTENTION_TOLERANCE,
                     "agree_limit": AGREE_LIMIT},
        "checks": [], "points": [], "not_measured": []}

    save = norm_bench.results_writer(results, args.out)
    start = time.monotonic()
    deadline = start + args.budget_s
    print(f"attention-bench: {len(plan)} points on "
          f"{results['environment']['gpu']}; checking our kernels ...",
          flush=True)
    for point in {p.kernel: p for p in plan}.values():
        try:
            check = bench.check_kernel(point)
        except Exception as error:
            check = {"kernel": point.kernel, "ok": False,
                     "error": describe(error)}
            if not norm_bench.device_usable(torch):
                print(f"attention-bench: stopped at {point.kernel}: {error}",
                      file=sys.stderr)
                results["checks"].append(check)
                results["not_measured"] += [f"{p.label}: not reached"
                                            for p in plan]
                save()
                return 1
        bench.checks[point.kernel] = check
        results["checks"].append(check)
        print(f"  check {point.kernel}: {'ok' if check['ok'] else 'FAILED'} "
              f"(max {check.get('max_ulps')} ulps, build "
              f"{check.get('build_s')} s)", flush=True)
        save()

    def done(index, point, record):
        print(f"  [{index + 1}/{len(plan)}] {point.label}: ours "
              f"{record['times_us'].get('ours', '-')} us, sdpa "
              f"{record['times_us'].get('sdpa', '-')} us, "
              f"{time.monotonic() - start:.0f} s", flush=True)
        torch.cuda.empty_cache()
    measured, stopped = norm_bench.measure_points(
        torch, plan, lambda index, point: bench.measure_point(point, index),
        results, deadline, save, done, "attention-bench")
    timed = [m for m in measured if "not_timed" not in m[2]]
    status = int(stopped or len(timed) < len(measured) or not all(
        c["ok"] for c in results["checks"]))
    if "compile" in args.anchors and not stopped:
        norm_bench.compile_pass(
            timed, lambda index, point, record: bench.measure_compiled(
                point, record, index), results, deadline, save, start)
    results["elapsed_s"] = round(time.monotonic() - start, 1)
    save()
    sys.stdout.write("\n" + report.format_attention_console(results))
    return status


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
