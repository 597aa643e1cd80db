#!/usr/bin/env python3
"""decode-bench: norm_opt.attention_decode beside the unfused decode step.

On one GPU, one decode step (one new token per sequence) of bf16 attention
at head dim 128 with Qwen3-like heads (32 query / 8 key-value), QK-Norm
(RMS, weights, eps 1e-6) and RoPE (neox, theta 1e6), batch 1, 8 and 64 x
cache lengths 1K, 4K, 8K, 16K and 32K (the tokens in the cache before the
step; the new token attends to length + 1). At each point, the median time of
  ours     norm_opt.attention_decode: QK-Norm, RoPE, the cache append and
           split-KV attention in one launch; caches [B, capacity, Hkv, D]
  copy     a device copy of the cache bytes the step reads (K and V rows)
  sdpa     F.scaled_dot_product_attention alone over the cache (GQA), q
           normalized and rotated and the new row written beforehand
  eager    the unfused step: F.rms_norm of each head of q and k, RoPE (HF's
           rotate_half in f32, then bf16), index_copy_ of k and v into
           caches [B, Hkv, capacity, D] (HF's StaticCache), SDPA over the
           cache's first length + 1 rows
  compile  torch.compile of eager (static shapes)
each on its natural layout, the same values. Before timing, our kernel
against a float64 reference of the step (the output and the appended cache
rows; output and unused cache rows NaN-poisoned); at each point our output
and appended rows (poisoned first) against eager's. A failed check marks the
point and skips its timing. Bandwidth: our bytes (q, the new k and v, the
cache rows read, the two rows written, the output) per second over the
copy's (read + write). Results: a JSON file (written after every point),
the table of report.py and a section of RESULTS.md (report.py --decode).

    decode_bench.py --out decode.json [--budget-s 90] [--quick]
    decode_bench.py --dry-run               # the plan, no torch, no GPU
"""

import argparse
import math
import os
import sys
import time
from typing import Dict, List, NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import attention_bench  # noqa: E402  (the prefill benchmark's helpers)
import norm_bench  # noqa: E402  (the run's machinery; no torch)
import report  # noqa: E402
from attention_bench import EPS, ROPE_THETA, bf16_ulp  # noqa: E402
from norm_bench import describe  # noqa: E402

BATCHES = (1, 8, 64)
LENGTHS = (1024, 4096, 8192, 16384, 32768)  # cache rows before the step
HEADS = (32, 8)              # query, key/value heads
HEAD_DIM = 128
ELEMENT_BYTES = 2            # bf16
HEADROOM = 64                # capacity = length + HEADROOM rows per sequence
CHECK_LENGTHS = (0, 129, 2047)   # the float64 check: 3 sequences
CHECK_CAPACITY = 2112
AGREE_LIMIT = attention_bench.AGREE_LIMIT
ROTATE_FACTOR = 3.0          # buffer sets span this many L2 caches
MAX_SETS = 64
QUICK = dict(batches=(1, 64), lengths=(1024, 16384))


def decode_bytes(batch: int, length: int, q_heads: int, kv_heads: int,
                 head_dim: int = HEAD_DIM) -> Dict[str, int]:
    """Bytes one step moves: `cache` the K and V rows it reads, `ours` all
    it reads and writes once (q, the new k and v, the cache rows, the two
    new rows, the output), `copy` what the copy anchor reads (and writes)."""
    row = kv_heads * head_dim * ELEMENT_BYTES   # one token's K (or V) row
    cache = 2 * batch * length * row
    new = 2 * batch * row                      # the new k and v
    q = batch * q_heads * head_dim * ELEMENT_BYTES
    return {"cache": cache, "new_rows": new, "q_out": 2 * q,
            "ours": cache + 2 * new + 2 * q, "copy": cache}


class Point(NamedTuple):
    batch: int
    length: int
    q_heads: int
    kv_heads: int
    head_dim: int = HEAD_DIM

    @property
    def label(self) -> str:
        return report.decode_label(self._asdict())

    @property
    def kernel(self) -> str:
        """Our kernel (one per heads: the new tokens are its rows)."""
        return f"decode H{self.q_heads}/{self.kv_heads}"

    @property
    def capacity(self) -> int:
        return self.length + HEADROOM

    def bytes(self) -> Dict[str, int]:
        return decode_bytes(self.batch, self.length, self.q_heads,
                            self.kv_heads, self.head_dim)


def build_plan(batches=BATCHES, lengths=LENGTHS,
               heads=(HEADS,)) -> List[Point]:
    """Every point, in the order they are measured."""
    return [Point(b, n, hq, hkv) for hq, hkv in heads for b in batches
            for n in lengths]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--out", default="decode-results.json",
                        help="results JSON (written after every point)")
    parser.add_argument("--budget-s", type=float, default=90,
                        help="wall-clock budget of the measurements")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)))
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)),
                        help="cache lengths before the step, comma separated")
    parser.add_argument("--heads", default=f"{HEADS[0]}/{HEADS[1]}",
                        help="query/key-value heads, comma separated")
    parser.add_argument("--anchors", default=",".join(report.DECODE_ANCHORS),
                        help="which anchors to time beside ours")
    parser.add_argument("--quick", action="store_true",
                        help=f"a few points only ({QUICK})")
    parser.add_argument("--replays", type=int, default=9)
    parser.add_argument("--target-us", type=float, default=2000.0,
                        help="launches per graph replay fill about this")
    parser.add_argument("--cache-dir", help="libnormjit's disk cache")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and exit (no torch, no GPU)")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches = ",".join(map(str, QUICK["batches"]))
        args.lengths = ",".join(map(str, QUICK["lengths"]))
    try:
        args.batches = tuple(int(b) for b in args.batches.split(",") if b)
        args.lengths = tuple(int(n) for n in args.lengths.split(",") if n)
        args.heads = attention_bench._pairs(args.heads, "/")
        args.anchors = tuple(a for a in args.anchors.split(",") if a)
    except ValueError as error:
        parser.error(str(error))
    norm_bench.check_known(parser, ("--anchors", args.anchors,
                                    report.DECODE_ANCHORS))
    if any(len(h) != 2 or min(h) <= 0 or h[0] % h[1] for h in args.heads):
        parser.error("--heads: expected Hq/Hkv, Hkv dividing Hq")
    if not args.batches or min(args.batches) <= 0:
        parser.error("--batches: expected positive batch sizes")
    if not args.lengths or min(args.lengths) < 0:
        parser.error("--lengths: expected cache lengths >= 0")
    return args


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def print_plan(plan: List[Point], args) -> None:
    kernels = len({p.kernel for p in plan})
    print(f"decode-bench plan: {len(plan)} points, {kernels} "
          f"kernel{'s' if kernels != 1 else ''} to build; anchors "
          f"{', '.join(('ours',) + args.anchors)}; budget "
          f"{args.budget_s:.0f} s")
    print(f"  bf16 D={HEAD_DIM}, one new token per sequence; QK-Norm rms eps "
          f"{EPS:g} with weights; rope neox theta {ROPE_THETA:g}; capacity = "
          f"length + {HEADROOM}")
    print("  bytes: ours = q + new k, v + cache rows read + 2 new rows + out; "
          "copy = the cache rows (read and written)")
    for p in plan:
        b = p.bytes()
        print(f"  {p.label:18s} cache {_mib(b['cache']):>12s}  ours "
              f"{b['ours']:11d} B  copy {b['copy']:11d} B  "
              f"{report.decode_targets_text(p.length)}")
    print(f"  check: our kernel against float64 at cache lengths "
          f"{','.join(map(str, CHECK_LENGTHS))} (capacity {CHECK_CAPACITY}; "
          "output and unused cache rows poisoned); output "
          f"{report.ATTENTION_TOLERANCE}; appended k "
          f"{report.DECODE_K_TOLERANCE}; appended v exact; other rows "
          "unchanged")


#===------------------------------------------------------------------------===#
# On the device
#===------------------------------------------------------------------------===#


def decode_reference(torch, q, k, v, qw, kw, k_cache, v_cache, lengths,
                     q_heads, kv_heads):
    """The unfused step in float64, as norm_opt.attention_decode documents
    it for one new token per sequence: q and k RMS-normalized per head
    times their weights and rounded to bf16, rotated (neox) by the token's
    position (its sequence's cache length) and rounded to bf16; the new k
    and v appended; attention over the cache's rows up to and including the
    new one, in float64. k_cache and v_cache are the caches before the step,
    [B, capacity, Hkv, D]. Returns (out and sum_j p_j |v_j|, [B, Hq, D];
    the appended k rows, [B, Hkv, D], and their k before rotation), float64."""
    f64 = torch.float64
    d = qw.numel()
    positions = lengths.to(torch.int64)
    qn = attention_bench.rotate_reference(
        torch, attention_bench.normalize_reference(torch, q, qw, q_heads),
        positions)
    kn = attention_bench.normalize_reference(torch, k, kw, kv_heads)
    kr = attention_bench.rotate_reference(torch, kn, positions)
    vv = v.to(f64).view(-1, kv_heads, d)
    out = torch.empty_like(qn)
    magnitude = torch.empty_like(qn)
    group = q_heads // kv_heads
    for b, n in enumerate(lengths.tolist()):
        keys = torch.cat((k_cache[b, :n].to(f64), kr[b:b + 1]))
        values = torch.cat((v_cache[b, :n].to(f64), vv[b:b + 1]))
        keys = keys.transpose(0, 1).repeat_interleave(group, 0)
        values = values.transpose(0, 1).repeat_interleave(group, 0)
        p = (qn[b][:, None] @ keys.transpose(-1, -2) / d ** 0.5).softmax(-1)
        out[b] = (p @ values)[:, 0]
        magnitude[b] = (p @ values.abs())[:, 0]
    return out, magnitude, kr, kn


def k_row_tolerance(torch, ref, normalized):
    """DECODE_K_TOLERANCE: 2 ulp of the rotated value plus one ulp of each
    normalized element the rotation mixes into it (a rounding of the norm
    that may differ by one ulp in f32)."""
    half = normalized.size(-1) // 2
    pair = torch.cat((normalized[..., half:], normalized[..., :half]), -1)
    return (2 * bf16_ulp(torch, ref) + bf16_ulp(torch, normalized)
            + bf16_ulp(torch, pair))


def same_bits(torch, a, b):
    """Elementwise bit equality of two bf16 tensors (NaN equals NaN)."""
    return a.view(torch.int16) == b.view(torch.int16)


class DecodeBench(attention_bench.AttentionBench):
    """The prefill benchmark's anchors (SDPA and its GQA, the eager QK-Norm
    and RoPE), timing and checks, for one decode step."""

    def __init__(self, args, torch, F, norm_torch, registry):
        super().__init__(args, torch, F, norm_torch, registry)
        self.l2 = norm_bench.l2_bytes(torch)
        self.compiled = None

    # Inputs ------------------------------------------------------------------

    def rand(self, *shape):
        """bf16 in [-2, 2), made in bf16 (no f32 copy of a large cache)."""
        return self.torch.empty(*shape, dtype=self.torch.bfloat16,
                                device="cuda").uniform_(-2, 2)

    def make_inputs(self, point: Point, lengths, capacity: int, seed: int,
                    anchors: bool = True) -> dict:
        """Ours: q [B, Hq*D], k and v [B, Hkv*D], the caches [B, capacity,
        Hkv, D], cache_seqlens, cu_seqlens. The anchors (equal lengths
        only): the same q, k, v as [B, H, 1, D] views, caches [B, Hkv,
        capacity, D] with the same rows, the position, the RoPE row at it,
        the copy's source and destination."""
        torch = self.torch
        torch.manual_seed(seed)
        b, d = len(lengths), point.head_dim
        hq, hkv = point.q_heads, point.kv_heads
        s = {"q": self.rand(b, hq * d), "k": self.rand(b, hkv * d),
             "v": self.rand(b, hkv * d), "qw": self.rand(d),
             "kw": self.rand(d),
             "k_cache": self.rand(b, capacity, hkv, d),
             "v_cache": self.rand(b, capacity, hkv, d),
             "lengths": torch.tensor(list(lengths), dtype=torch.int32,
                                     device="cuda"),
             "cu_seqlens": torch.arange(b + 1, dtype=torch.int32,
                                        device="cuda")}
        if anchors and len(set(lengths)) == 1:
            n = lengths[0]
            s["length"] = n
            s["q4"] = s["q"].view(b, hq, 1, d)
            s["k4"] = s["k"].view(b, hkv, 1, d)
            s["v4"] = s["v"].view(b, hkv, 1, d)
            s["ak_cache"] = s["k_cache"].transpose(1, 2).contiguous()
            s["av_cache"] = s["v_cache"].transpose(1, 2).contiguous()
            s["pos"] = torch.tensor([n], dtype=torch.int64, device="cuda")
            cos, sin = attention_bench.rope_tables(torch, n + 1, d,
                                                   ROPE_THETA)
            s["cos"], s["sin"] = cos[n:].contiguous(), sin[n:].contiguous()
            elements = point.bytes()["copy"] // ELEMENT_BYTES
            s["copy_src"] = self.rand(elements)
            s["copy_dst"] = torch.empty_like(s["copy_src"])
        return s

    def make_sets(self, point: Point, seed: int) -> List[dict]:
        count = norm_bench.buffer_sets(point.bytes()["ours"], self.l2,
                                       ROTATE_FACTOR, MAX_SETS)
        return [self.make_inputs(point, (point.length,) * point.batch,
                                 point.capacity, seed * MAX_SETS + i)
                for i in range(count)]

    # Implementations ---------------------------------------------------------

    def eager_fn(self, rope: bool = True):
        prologue = self.prologue_fn(rope)

        def step(q, k, v, qw, kw, cos, sin, k_cache, v_cache, pos, length):
            q, k = prologue(q, k, qw, kw, cos, sin)
            k_cache.index_copy_(2, pos, k)
            v_cache.index_copy_(2, pos, v)
            return self.sdpa(q, k_cache[:, :, :length + 1],
                             v_cache[:, :, :length + 1], causal=False)
        return step

    def eager_args(self, point, s: dict):
        return (s["q4"], s["k4"], s["v4"], s["qw"], s["kw"], s["cos"],
                s["sin"], s["ak_cache"], s["av_cache"], s["pos"], s["length"])

    def prepare_ours(self, point, s: dict):
        return self.ours.prepare_attention_decode(
            s["q"], s["k"], s["v"], s["k_cache"], s["v_cache"], s["lengths"],
            s["cu_seqlens"], qk_norm="rms", q_norm_weight=s["qw"],
            k_norm_weight=s["kw"], qk_norm_eps=EPS, head_dim=point.head_dim,
            rope="neox", rope_theta=ROPE_THETA)

    def decode_calls(self, name: str, point: Point, sets: List[dict]):
        """One zero-argument callable per buffer set."""
        if name == "ours":
            prepared = [self.prepare_ours(point, s) for s in sets]
            return [lambda c=c: self.ours.run(c) for c in prepared]
        if name == "copy":
            return [lambda s=s: s["copy_dst"].copy_(s["copy_src"])
                    for s in sets]
        if name == "sdpa":
            for s in sets:  # q normalized and rotated, the row written
                if "qn4" not in s:
                    s["qn4"] = self.prologue_fn(True)(
                        s["q4"], s["k4"], s["qw"], s["kw"], s["cos"],
                        s["sin"])[0]
                    self.eager_fn()(*self.eager_args(point, s))
            n = point.length + 1
            return [lambda s=s: self.sdpa(s["qn4"], s["ak_cache"][:, :, :n],
                                          s["av_cache"][:, :, :n],
                                          causal=False) for s in sets]
        if name == "eager":
            fn = self.eager_fn()
            return [lambda s=s: fn(*self.eager_args(point, s)) for s in sets]
        if name == "compile":
            if self.compiled is None:
                self.compiled = self.torch.compile(self.eager_fn(),
                                                   dynamic=False)
            fn = self.compiled
            return [lambda s=s: fn(*self.eager_args(point, s)) for s in sets]
        raise ValueError(name)

    # Checks ------------------------------------------------------------------

    def check_kernel(self, point: Point) -> dict:
        """Our kernel of `point` against the float64 reference at
        CHECK_LENGTHS: the output (poisoned first), the appended k and v
        rows, and every other cache row (the rows past each sequence's
        length poisoned: the kernel may neither read them into the output
        nor write them). Its first launch builds it: timed as build_s."""
        torch = self.torch
        s = self.make_inputs(point, CHECK_LENGTHS, CHECK_CAPACITY, seed=1234,
                             anchors=False)
        for b, n in enumerate(CHECK_LENGTHS):
            s["k_cache"][b, n:] = float("nan")
            s["v_cache"][b, n:] = float("nan")
        before_k, before_v = s["k_cache"].clone(), s["v_cache"].clone()
        call = self.prepare_ours(point, s)
        start = time.monotonic()
        self.ours.run(call)  # builds the kernel
        torch.cuda.synchronize()
        build_s = time.monotonic() - start
        s["k_cache"].copy_(before_k)
        s["v_cache"].copy_(before_v)
        out = call.outputs[0]
        out.fill_(float("nan"))
        self.ours.run(call)
        ref, magnitude, ref_k, normalized_k = decode_reference(
            torch, s["q"], s["k"], s["v"], s["qw"], s["kw"], before_k,
            before_v, s["lengths"], point.q_heads, point.kv_heads)
        got = out.view_as(ref).double()
        error = (got - ref).abs()
        ulp = bf16_ulp(torch, ref)
        tolerance = 8 * ulp + 2.0 ** -8 * magnitude
        written = ~got.isnan()
        rows = torch.arange(len(CHECK_LENGTHS), device=s["lengths"].device)
        positions = s["lengths"].long()
        k_rows = s["k_cache"][rows, positions].double()
        v_rows = s["v_cache"][rows, positions]
        k_error = (k_rows - ref_k).abs()
        k_ok = k_error <= k_row_tolerance(torch, ref_k, normalized_k)
        v_ok = same_bits(torch, v_rows, s["v"].view_as(v_rows))
        # Every other row as it was (the appended ones excluded).
        others_k = same_bits(torch, s["k_cache"], before_k)
        others_v = same_bits(torch, s["v_cache"], before_v)
        others_k[rows, positions] = True
        others_v[rows, positions] = True
        record = {"kernel": point.kernel, "lengths": list(CHECK_LENGTHS),
                  "capacity": CHECK_CAPACITY, "elements": error.numel(),
                  "nan_outputs": int((~written).sum()),
                  "bad_elements": int((~(error <= tolerance)).sum()),
                  "bad_k_rows": int((~k_ok).sum()),
                  "bad_v_rows": int((~v_ok).sum()),
                  "cache_disturbed": int((~others_k).sum() +
                                         (~others_v).sum()),
                  "max_ulps": None, "worst_of_tolerance": None,
                  "k_max_ulps": None,
                  "rel_error": float((got - ref).nan_to_num(float("inf"))
                                     .norm() / ref.norm()),
                  "build_s": round(build_s, 2)}
        record["ok"] = not any(record[key] for key in (
            "bad_elements", "bad_k_rows", "bad_v_rows", "cache_disturbed"))
        if written.any():
            record["max_ulps"] = float((error / ulp)[written].max())
            record["worst_of_tolerance"] = float(
                (error / tolerance)[written].max())
        finite = ~k_rows.isnan()
        if finite.any():
            record["k_max_ulps"] = float(
                (k_error / bf16_ulp(torch, ref_k))[finite].max())
        return record

    def agreement(self, point: Point, s: dict) -> dict:
        """At the point, our output and appended rows (poisoned first)
        against eager's (on its own caches, which hold the same rows)."""
        torch = self.torch
        n = point.length
        call = self.prepare_ours(point, s)
        start = time.monotonic()
        self.ours.run(call)
        torch.cuda.synchronize()
        first_s = time.monotonic() - start
        out = call.outputs[0]
        for t in (out, s["k_cache"][:, n], s["v_cache"][:, n]):
            t.fill_(float("nan"))
        self.ours.run(call)
        want = self.eager_fn()(*self.eager_args(point, s))
        want = want.reshape(out.shape).float()

        def rel(got, ref):
            got, ref = got.float(), ref.float()
            return float((got - ref).nan_to_num(float("inf")).norm()
                         / ref.norm())
        v_equal = same_bits(torch, s["v_cache"][:, n], s["av_cache"][:, :, n])
        record = {"nan_outputs": int(out.isnan().sum()),
                  "rel_error": rel(out, want),
                  "k_rows_rel_error": rel(s["k_cache"][:, n],
                                          s["ak_cache"][:, :, n]),
                  "v_rows_equal": bool(v_equal.all()),
                  "limit": AGREE_LIMIT, "first_call_s": round(first_s, 2)}
        record["ok"] = (record["nan_outputs"] == 0 and record["v_rows_equal"]
                        and record["rel_error"] <= AGREE_LIMIT
                        and record["k_rows_rel_error"] <= AGREE_LIMIT)
        torch.cuda.synchronize()
        return record

    # Measuring ---------------------------------------------------------------

    def measure_point(self, point: Point, seed: int) -> dict:
        """The point's checks, then ours and the anchors but compile."""
        sizes = point.bytes()
        record = dict(point._asdict(), capacity=point.capacity,
                      bytes_ours=sizes["ours"], bytes_copy=sizes["copy"],
                      times_us={}, spread={}, errors={}, gqa=self.gqa)
        check = self.checks.get(point.kernel)
        record["check"] = check
        if check is None or not check["ok"]:
            record["not_timed"] = "the float64 check of our kernel failed"
            return record
        sets = self.make_sets(point, seed)
        record["sets"] = len(sets)
        try:
            record["agreement"] = self.agreement(point, sets[0])
        except Exception as error:
            record["errors"]["agreement"] = describe(error)
            self.torch.cuda.synchronize()
        if not record.get("agreement", {}).get("ok"):
            record["not_timed"] = "our output disagrees with eager's"
            return record
        kernel = self.registry.get_kernel(
            self.torch.cuda.current_device(),
            self.prepare_ours(point, sets[0]).desc)
        record["config"] = kernel.config(point.batch).suffix
        record["plan_source"] = kernel.tuning(point.batch).source
        for name in ("ours",) + self.args.anchors:
            if name != "compile":  # the second pass
                norm_bench.record_timing(
                    self.torch, record, name,
                    lambda: self.time(self.decode_calls(name, point, sets)))
        if "sdpa" in self.args.anchors:
            sdpa = self.decode_calls("sdpa", point, sets[:1])[0]
            record["sdpa_kernel"] = self.sdpa_kernel(sdpa)
        return record

    def time(self, calls):
        return self.timing.measure(calls, target_us=self.args.target_us,
                                   replays=self.args.replays)

    def measure_compiled(self, point: Point, record: dict, seed: int) -> None:
        """torch.compile of eager at this point's shapes (its compile happens
        in the warm-up, outside the timing)."""
        sets = self.make_sets(point, seed)
        norm_bench.record_timing(
            self.torch, record, "compile",
            lambda: self.time(self.decode_calls("compile", point, sets)))


def run(args) -> int:
    plan = build_plan(args.batches, args.lengths, args.heads)
    if args.dry_run:
        print_plan(plan, args)
        return 0
    started = norm_bench.start_torch_run("decode-bench", args.cache_dir)
    if started is None:
        return 1
    torch, F, triton_version, norm_torch, registry = started
    bench = DecodeBench(args, torch, F, norm_torch, registry)
    results = {
        "schema": report.DECODE_SCHEMA,
        "environment": norm_bench.environment(torch, triton_version),
        "settings": {"replays": args.replays, "target_us": args.target_us,
                     "eps": EPS, "rope_theta": ROPE_THETA,
                     "budget_s": args.budget_s, "anchors": list(args.anchors),
                     "gqa": bench.gqa, "headroom": HEADROOM,
                     "check_lengths": list(CHECK_LENGTHS),
                     "check_capacity": CHECK_CAPACITY,
                     "tolerance": report.ATTENTION_TOLERANCE,
                     "k_tolerance": report.DECODE_K_TOLERANCE,
                     "agree_limit": AGREE_LIMIT,
                     "rotate_factor": ROTATE_FACTOR, "max_sets": MAX_SETS},
        "checks": [], "points": [], "not_measured": []}

    save = norm_bench.results_writer(results, args.out)
    start = time.monotonic()
    deadline = start + args.budget_s
    print(f"decode-bench: {len(plan)} points on "
          f"{results['environment']['gpu']}; checking our kernels ...",
          flush=True)
    for point in {p.kernel: p for p in plan}.values():
        try:
            check = bench.check_kernel(point)
        except Exception as error:
            check = {"kernel": point.kernel, "ok": False,
                     "error": describe(error)}
            if not norm_bench.device_usable(torch):
                print(f"decode-bench: stopped at {point.kernel}: {error}",
                      file=sys.stderr)
                results["checks"].append(check)
                results["not_measured"] += [f"{p.label}: not reached"
                                            for p in plan]
                save()
                return 1
        bench.checks[point.kernel] = check
        results["checks"].append(check)
        print(f"  check {point.kernel}: {'ok' if check['ok'] else 'FAILED'} "
              f"(max {check.get('max_ulps')} ulps, appended k "
              f"{check.get('k_max_ulps')} ulps, build {check.get('build_s')} "
              "s)", flush=True)
        save()

    def done(index, point, record):
        times = record["times_us"]
        print(f"  [{index + 1}/{len(plan)}] {point.label}: ours "
              f"{times.get('ours', '-')} us, copy {times.get('copy', '-')} "
              f"us, eager {times.get('eager', '-')} us, "
              f"{time.monotonic() - start:.0f} s", flush=True)
        torch.cuda.empty_cache()
    measured, stopped = norm_bench.measure_points(
        torch, plan, lambda index, point: bench.measure_point(point, index),
        results, deadline, save, done, "decode-bench")
    timed = [m for m in measured if "not_timed" not in m[2]]
    status = int(stopped or len(timed) < len(measured) or not all(
        c["ok"] for c in results["checks"]))
    if "compile" in args.anchors and not stopped:
        # One compile per point: cache length 8K first (where both targets
        # apply), then the lengths nearest to it, each over the batches.
        timed.sort(key=lambda m: (abs(math.log2(max(m[1].length, 1) / 8192)),
                                  m[1].batch))
        norm_bench.compile_pass(
            timed, lambda index, point, record: bench.measure_compiled(
                point, record, index), results, deadline, save, start)
    results["elapsed_s"] = round(time.monotonic() - start, 1)
    save()
    sys.stdout.write("\n" + report.format_decode_console(results))
    return status


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
