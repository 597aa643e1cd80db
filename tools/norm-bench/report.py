#!/usr/bin/env python3
"""Tables from a norm-bench results file (JSON, written by norm_bench.py).

    report.py results.json                       # the console table
    report.py results.json --markdown RESULTS.md [--checks checks.json]
    report.py [results.json] --attention attention.json [--markdown F]
    report.py [results.json] [--attention F] --decode decode.json [--markdown F]
    report.py [results.json] [...] --backward backward.json [--markdown F]

Needs no torch and no GPU: the device run writes the JSON, this turns it
into the table printed at the end of the run and into RESULTS.md. Every
number comes from the file; a point or anchor the run did not measure is
shown as "-" and listed with the reason.

Columns: copy and ours in microseconds (medians of CUDA-graph replays);
"BW/copy": our bytes per second over the copy's (a copy of one input-sized
tensor counts its read and its write); "<anchor>/ours": the anchor's time
over ours (above 1: ours is faster); "pick/best": the time of the
configuration the autotuner picked over the fastest candidate it tried,
both re-timed at this row count. Prefill attention (attention_bench.py):
each time in microseconds with its TFLOP/s (4 B Hq T^2 D / 2 per time),
"<anchor>/ours" as above, and whether ours met the targets (no slower than
torch.compile, then than SDPA alone, in the same run). Decode attention
(decode_bench.py): times in microseconds, "BW/copy" as above over the bytes
of one step, "<anchor>/ours", and the targets (at least 1.2x faster than
the unfused eager step; at least 80% of copy bandwidth at cache lengths of
8K and more). Backward (backward_bench.py): times in microseconds,
"BW/copy" over the bytes the backward must move, "<anchor>/ours", and the
targets (at least 90% of copy bandwidth, 85% for the per-head QK-Norm; at
least 1.2x faster than torch.compile's backward and than the Triton one).
"""

import argparse
import json
import sys
from typing import Dict, List, Optional

SCHEMA = 1
ANCHORS = ("eager", "compile", "triton")
OP_TITLES = {
    "rms": "RMSNorm",
    "layer": "LayerNorm (weight and bias)",
    "add_rms": "fused add + RMSNorm (writes y and the new residual)",
    "add_layer": "fused add + LayerNorm (weight and bias; writes y and the "
                 "new residual)",
    "qk": "QK-Norm prologue (packed qkv, 32 query / 8 key-value heads; "
          "rows are tokens)",
    "add_rms_fp8": "fused add + RMSNorm, e4m3 output with a static scale "
                   "(writes q and the new residual; anchors: the norm, then "
                   "divide, clamp and cast)",
    "add_rms_fp8_token": "fused add + RMSNorm, e4m3 output with per-token "
                         "scales (writes q, the new residual and the scales)",
}
TUNER_LIMIT = 1.03  # the pick within 3% of the best candidate


def not_measured_line(results: dict, where: str) -> List[str]:
    """The summary line of the entries a run could not measure, if any."""
    missing = results.get("not_measured", [])
    return ([f"not measured: {len(missing)} entries (see {where})"]
            if missing else [])


def load(path: str, schema: int = SCHEMA) -> dict:
    with open(path) as f:
        results = json.load(f)
    if results.get("schema") != schema:
        raise ValueError(f"{path}: schema {results.get('schema')!r}, "
                         f"expected {schema}")
    return results


def _time(point: dict, name: str) -> Optional[float]:
    value = point.get("times_us", {}).get(name)
    return value if isinstance(value, (int, float)) and value > 0 else None


def bandwidth_fraction(point: dict) -> Optional[float]:
    """Our bytes per second over the copy's."""
    ours, copy = _time(point, "ours"), _time(point, "copy")
    if not ours or not copy:
        return None
    return (point["bytes_ours"] / ours) / (2 * point["bytes_copy"] / copy)


def anchor_ratio(point: dict, anchor: str) -> Optional[float]:
    ours, other = _time(point, "ours"), _time(point, anchor)
    return other / ours if ours and other else None


def tuner_ratio(point: dict) -> Optional[float]:
    tuner = point.get("tuner") or {}
    pick, best = tuner.get("pick_us"), tuner.get("best_us")
    return pick / best if pick and best else None


def _fmt(value: Optional[float], spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def _rows_label(point: dict) -> str:
    if point["kernel_rows"] != point["rows"]:
        return f"{point['rows']}x{point['kernel_rows'] // point['rows']}"
    return str(point["rows"])


def _row(point: dict) -> List[str]:
    bw = bandwidth_fraction(point)
    cells = [point["op"], point["dtype"], str(point["hidden"]),
             _rows_label(point), _fmt(_time(point, "copy"), ".2f"),
             _fmt(_time(point, "ours"), ".2f"),
             _fmt(None if bw is None else 100 * bw, ".0f", "%")]
    cells += [_fmt(anchor_ratio(point, a), ".2f") for a in ANCHORS]
    cells.append(_fmt(tuner_ratio(point), ".3f"))
    flags = []
    if point.get("check") and not point["check"].get("ok", True):
        flags.append("WRONG")
    if point.get("check_triton") and not point["check_triton"].get("ok", True):
        flags.append("TRITON WRONG")
    if point.get("errors"):
        flags.append("errors")
    cells.append(point.get("config", "-") + (" " + ",".join(flags)
                                             if flags else ""))
    return cells


HEADER = ["op", "dtype", "hidden", "rows", "copy us", "ours us", "BW/copy",
          "eager/ours", "compile/ours", "triton/ours", "pick/best", "config"]


def _widths(rows: List[List[str]]) -> List[int]:
    return [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]


def summarize(results: dict) -> List[str]:
    """Headline lines: correctness of ours, the tuner check, what is missing."""
    points = results.get("points", [])
    lines = []
    wrong = [p for p in points if p.get("check") and not p["check"]["ok"]]
    checked = [p for p in points if p.get("check")]
    lines.append(f"ours vs eager outputs: {len(checked) - len(wrong)} of "
                 f"{len(checked)} measured points agree"
                 + (": MISMATCH at " + ", ".join(
                     f"{p['op']} {p['dtype']} h{p['hidden']} rows {p['rows']}"
                     for p in wrong[:5]) + " (left out of the statistics "
                     "below)" if wrong else ""))
    ratios = [(tuner_ratio(p), p) for p in points if tuner_ratio(p)]
    if ratios:
        worst, at = max(ratios, key=lambda r: r[0])
        over = sum(1 for r, _ in ratios if r > TUNER_LIMIT)
        lines.append(
            f"autotuner: pick/best <= {TUNER_LIMIT:.2f} at "
            f"{len(ratios) - over} of {len(ratios)} points; worst "
            f"{worst:.3f} ({at['op']} {at['dtype']} h{at['hidden']} "
            f"rows {_rows_label(at)}: picked {at['tuner']['pick']}, best "
            f"{at['tuner']['best']})")
    else:
        lines.append("autotuner: not measured")
    # A kernel whose output disagreed with eager's has no speed to report.
    right = [p for p in points if not p.get("check") or p["check"]["ok"]]
    measured = [p for p in right if _time(p, "ours")]
    fractions = [bandwidth_fraction(p) for p in measured
                 if bandwidth_fraction(p)]
    large = [bandwidth_fraction(p) for p in measured
             if p["bytes_copy"] >= 64 << 20 and bandwidth_fraction(p)]
    if fractions:
        lines.append(f"ours: {len(measured)} points measured; bandwidth / "
                     f"copy median {100 * sorted(fractions)[len(fractions) // 2]:.0f}%"
                     + (f", at >= 64 MiB inputs {100 * min(large):.0f}-"
                        f"{100 * max(large):.0f}%" if large else ""))
    for anchor in ANCHORS:
        values = sorted(r for r in (anchor_ratio(p, anchor) for p in right)
                        if r)
        if values:
            lines.append(f"{anchor}/ours: median {values[len(values) // 2]:.2f}, "
                         f"range {values[0]:.2f}-{values[-1]:.2f} over "
                         f"{len(values)} points")
    lines += not_measured_line(results, "the results file")
    return lines


# --short: what fits at the end of a device run's output.
SHORT_HIDDEN = (128, 4096, 8192, 16384)


def is_short(point: dict) -> bool:
    return point["dtype"] == "bf16" and point["hidden"] in SHORT_HIDDEN and (
        point["op"] not in ("layer", "add_layer") or point["hidden"] == 4096)


def _text_table(rows: List[List[str]], first_right: int) -> List[str]:
    """Aligned columns: numbers (from `first_right` to the one before the
    last) to the right, a rule under the header."""
    widths = _widths(rows)
    out = []
    for i, row in enumerate(rows):
        out.append("  ".join(cell.rjust(w) if first_right <= j < len(row) - 1
                             else cell.ljust(w) for j, (cell, w) in
                             enumerate(zip(row, widths))).rstrip())
        if i == 0:
            out.append("-" * len(out[0]))
    return out


def format_console(results: dict, short: bool = False) -> str:
    points = [p for p in results.get("points", []) if not short or is_short(p)]
    out = _text_table([HEADER] + [_row(p) for p in points], 2)
    if short:
        out.append(f"({len(points)} of {len(results.get('points', []))} "
                   "points shown: bf16, hidden " +
                   ", ".join(map(str, SHORT_HIDDEN)) + "; all in the "
                   "results file and RESULTS.md)")
    out += [""] + summarize(results)
    return "\n".join(out) + "\n"


#===------------------------------------------------------------------------===#
# Prefill attention (attention_bench.py's results)
#===------------------------------------------------------------------------===#

ATTENTION_SCHEMA = "attention/1"  # not the row results' SCHEMA
ATTENTION_ANCHORS = ("sdpa", "eager", "compile")
# The targets, in order: no slower than torch.compile of QK-Norm +
# SDPA, then no slower than SDPA alone.
ATTENTION_TARGETS = ("compile", "sdpa")
ATTENTION_TOLERANCE = "|out - ref| <= 8 ulp_bf16(ref) + 2^-8 sum_j p_j |v_j|"
ATTENTION_HEADER = (["point", "ours us (TFLOP/s)"]
                    + [f"{a} us (TFLOP/s)" for a in ATTENTION_ANCHORS]
                    + [f"{a}/ours" for a in ATTENTION_ANCHORS]
                    + [f"<= {a}" for a in ATTENTION_TARGETS] + ["notes"])


def attention_label(point: dict) -> str:
    return (f"{point['variant']} B{point['batch']} T{point['seqlen']} "
            f"H{point['q_heads']}/{point['kv_heads']}")


def tflops(point: dict, name: str) -> Optional[float]:
    us = _time(point, name)
    return point["flops"] / (us * 1e6) if us else None


def target_met(point: dict, anchor: str) -> Optional[bool]:
    ratio = anchor_ratio(point, anchor)
    return None if ratio is None else ratio >= 1.0


def _attention_flags(point: dict) -> List[str]:
    flags = []
    if not (point.get("check") or {}).get("ok", False):
        flags.append("WRONG (float64 check)")
    elif point.get("agreement") and not point["agreement"].get("ok", True):
        flags.append("DISAGREES with eager")
    if point.get("not_timed"):
        flags.append("not timed")
    if point.get("errors"):
        flags.append("errors")
    return flags


def _attention_row(point: dict) -> List[str]:
    cells = [attention_label(point)]
    for name in ("ours",) + ATTENTION_ANCHORS:
        us, rate = _time(point, name), tflops(point, name)
        cells.append("-" if us is None else f"{us:.1f} ({rate:.0f})")
    cells += [_fmt(anchor_ratio(point, a), ".2f") for a in ATTENTION_ANCHORS]
    for anchor in ATTENTION_TARGETS:
        met = target_met(point, anchor)
        cells.append("-" if met is None else "met" if met else "missed")
    notes = [point["config"]] if point.get("config") else []
    cells.append(" ".join(notes + _attention_flags(point)) or "-")
    return cells


def summarize_attention(results: dict) -> List[str]:
    checks = results.get("checks", [])
    failed = [c for c in checks if not c.get("ok")]
    ulps = [c["max_ulps"] for c in checks if c.get("max_ulps") is not None]
    lines = [f"float64 checks ({ATTENTION_TOLERANCE}): "
             f"{len(checks) - len(failed)} of {len(checks)} kernels within "
             "tolerance"
             + (f", max {max(ulps):.1f} bf16 ulps" if ulps else "")
             + (": FAILED " + ", ".join(c["kernel"] for c in failed)
                if failed else "")]
    points = results.get("points", [])
    for anchor in ATTENTION_TARGETS:
        verdicts = [target_met(p, anchor) for p in points]
        judged = [v for v in verdicts if v is not None]
        lines.append(f"target: ours no slower than {anchor}: met at "
                     f"{sum(judged)} of {len(judged)} measured points")
    lines += not_measured_line(results, "below or the results file")
    return lines


def _format_console(results: dict, header, row, summarize) -> str:
    """One table of a results file's points and its summary lines."""
    rows = [header] + [row(p) for p in results.get("points", [])]
    out = _text_table(rows, 1) + [""] + summarize(results)
    return "\n".join(out) + "\n"


def format_attention_console(results: dict) -> str:
    return _format_console(results, ATTENTION_HEADER, _attention_row,
                           summarize_attention)


def attention_markdown(results: dict) -> List[str]:
    settings = results.get("settings", {})
    gqa = settings.get("gqa", "?")
    out = ["## Prefill attention (causal, bf16, head dim 128)", "",
           f"Medians of {settings.get('replays', '?')} CUDA-graph replays "
           f"(about {settings.get('target_us', '?')} us of launches each, "
           "after warm-up; one buffer set: every working set is several "
           "times the L2 cache). ours: `norm_opt.attention` with QK-Norm "
           f"(RMS, weights, eps {settings.get('eps', '?')}) and, for "
           f"qknorm_rope, RoPE (neox, theta {settings.get('rope_theta', '?')}) "
           "in one launch, on packed tokens [B*T, H*D] with cu_seqlens. "
           "sdpa: `F.scaled_dot_product_attention(is_causal=True)` alone on "
           "q and k normalized (and rotated) beforehand; eager: "
           "`F.rms_norm` of each head of q and k, RoPE (HF's rotate_half in "
           "f32, then bf16; cos/sin tables made outside the timing), SDPA; "
           "compile: `torch.compile` of eager (static shapes). The anchors "
           "take contiguous [B, H, T, D]: each runs on its natural layout, "
           "the same values, and no layout transpose is timed for anyone. "
           f"GQA in SDPA: {gqa}. TFLOP/s = 4 B Hq T^2 D / 2 / time "
           "(FlashAttention's causal convention; the prologue not counted). "
           "Ratios are the anchor's time over ours: above 1, ours is faster; "
           "a target is met when ours is no slower than that anchor in this "
           "run (shared/ANCHORS.md, H200, 32 heads, QK-Norm: at B=4 T=4096 "
           "compile 1158 us, sdpa 1042 us; at B=1 T=16384 3921 and 3831 us).",
           "", f"Before timing, each kernel against a float64 reference of "
           "the unfused graph (norm, round to bf16, RoPE, round to bf16, "
           "attention in float64) at sequence lengths "
           f"{settings.get('check_seqlens', '?')}, output NaN-poisoned first; "
           f"tolerance {ATTENTION_TOLERANCE}. At each point our output "
           "(poisoned) against eager's: ||ours - eager|| / ||eager|| <= "
           f"{settings.get('agree_limit', '?')}. A failed check marks the "
           "point and skips its timing.", "",
           "| kernel | max bf16 ulps | worst / tolerance | outside | "
           "unwritten | build s | verdict |", "|---|---|---|---|---|---|---|"]
    for c in results.get("checks", []):
        verdict = "ok" if c.get("ok") else f"FAILED {c.get('error', '')}"
        out.append(f"| {c['kernel']} | {_fmt(c.get('max_ulps'), '.1f')} | "
                   f"{_fmt(c.get('worst_of_tolerance'), '.3f')} | "
                   f"{c.get('bad_elements', '-')} | {c.get('nan_outputs', '-')}"
                   f" | {_fmt(c.get('build_s'), '.1f')} | {verdict.strip()} |")
    out += ["", "| " + " | ".join(ATTENTION_HEADER) + " |",
            "|" + "---|" * len(ATTENTION_HEADER)]
    out += ["| " + " | ".join(_attention_row(p)) + " |"
            for p in results.get("points", [])]
    out += [""] + [f"- {line}" for line in summarize_attention(results)]
    out += [f"- not measured: {m}" for m in results.get("not_measured", [])]
    out += [f"- {attention_label(p)}, {k}: {v}"
            for p in results.get("points", [])
            for k, v in p.get("errors", {}).items()]
    return out


#===------------------------------------------------------------------------===#
# Decode attention (decode_bench.py's results)
#===------------------------------------------------------------------------===#

DECODE_SCHEMA = "decode/1"
DECODE_ANCHORS = ("copy", "sdpa", "eager", "compile")
# The targets: at least 1.2x faster than the unfused step (eager) at
# every point; at least 80% of copy bandwidth at cache lengths >= 8K.
DECODE_SPEEDUP = 1.2
DECODE_BANDWIDTH = 0.8
DECODE_BANDWIDTH_MIN_LENGTH = 8192
DECODE_K_TOLERANCE = ("|k - ref| <= 2 ulp_bf16(ref) + ulp_bf16(n_i) + "
                      "ulp_bf16(n_pair(i)), n: normalized k before RoPE")
_DECODE_TIMES = ("ours", "copy", "sdpa", "eager", "compile")
_DECODE_RATIOS = ("sdpa", "eager", "compile")
DECODE_HEADER = ([f"{n} us" for n in _DECODE_TIMES] + ["BW/copy"]
                 + [f"{a}/ours" for a in _DECODE_RATIOS]
                 + [f">= {DECODE_SPEEDUP}x eager",
                    f">= {DECODE_BANDWIDTH:.0%} copy"])
DECODE_HEADER = ["point"] + DECODE_HEADER + ["notes"]


def decode_label(point: dict) -> str:
    return (f"B{point['batch']} L{point['length']} "
            f"H{point['q_heads']}/{point['kv_heads']}")


def decode_targets_text(length: int) -> str:
    """The targets a point of this cache length is judged by."""
    return f"targets: eager/ours >= {DECODE_SPEEDUP}" + (
        f", BW/copy >= {DECODE_BANDWIDTH:.0%}"
        if length >= DECODE_BANDWIDTH_MIN_LENGTH else "")


def decode_speedup_met(point: dict) -> Optional[bool]:
    ratio = anchor_ratio(point, "eager")
    return None if ratio is None else ratio >= DECODE_SPEEDUP


def decode_bandwidth_met(point: dict) -> Optional[bool]:
    """None where not measured or where the target does not apply."""
    if point["length"] < DECODE_BANDWIDTH_MIN_LENGTH:
        return None
    fraction = bandwidth_fraction(point)
    return None if fraction is None else fraction >= DECODE_BANDWIDTH


def _verdict(met: Optional[bool], applies: bool = True) -> str:
    if not applies:
        return "n/a"
    return "-" if met is None else "met" if met else "missed"


def _bandwidth_summary(points: List[dict]) -> List[str]:
    """The median and range of ours' bandwidth / copy over the points that
    have both (none without)."""
    fractions = sorted(f for f in map(bandwidth_fraction, points) if f)
    if not fractions:
        return []
    return [f"ours: bandwidth / copy median "
            f"{100 * fractions[len(fractions) // 2]:.0f}%, range "
            f"{100 * fractions[0]:.0f}-{100 * fractions[-1]:.0f}% "
            f"over {len(fractions)} points"]


def _timing_cells(label: str, point: dict, times, ratios) -> List[str]:
    """A point's label, its times, its bandwidth / copy and its ratios to
    the anchors: the first cells of a decode or backward row."""
    cells = [label] + [_fmt(_time(point, n), ".1f") for n in times]
    bw = bandwidth_fraction(point)
    cells.append(_fmt(None if bw is None else 100 * bw, ".0f", "%"))
    return cells + [_fmt(anchor_ratio(point, a), ".2f") for a in ratios]


def _decode_row(point: dict) -> List[str]:
    cells = _timing_cells(decode_label(point), point, _DECODE_TIMES,
                          _DECODE_RATIOS)
    cells.append(_verdict(decode_speedup_met(point)))
    cells.append(_verdict(decode_bandwidth_met(point), point["length"] >=
                          DECODE_BANDWIDTH_MIN_LENGTH))
    notes = [point["config"]] if point.get("config") else []
    cells.append(" ".join(notes + _attention_flags(point)) or "-")
    return cells


def _check_verdict(check: dict) -> str:
    return "ok" if check.get("ok") else (
        "FAILED " + check.get("error", "")).strip()


def summarize_decode(results: dict) -> List[str]:
    checks = results.get("checks", [])
    failed = [c for c in checks if not c.get("ok")]
    ulps = [c["max_ulps"] for c in checks if c.get("max_ulps") is not None]
    k_ulps = [c["k_max_ulps"] for c in checks
              if c.get("k_max_ulps") is not None]
    lines = [f"float64 checks (output {ATTENTION_TOLERANCE}; appended k "
             f"{DECODE_K_TOLERANCE}; appended v exact; other cache rows "
             f"unchanged): {len(checks) - len(failed)} of {len(checks)} "
             "kernels within tolerance"
             + (f", max {max(ulps):.1f} bf16 ulps" if ulps else "")
             + (f", appended k max {max(k_ulps):.1f} ulps" if k_ulps else "")
             + (": FAILED " + ", ".join(c["kernel"] for c in failed)
                if failed else "")]
    points = results.get("points", [])
    judged = [v for v in map(decode_speedup_met, points) if v is not None]
    lines.append(f"target: ours >= {DECODE_SPEEDUP}x faster than eager (the "
                 f"unfused step): met at {sum(judged)} of {len(judged)} "
                 "measured points")
    judged = [v for v in map(decode_bandwidth_met, points) if v is not None]
    lines.append(f"target: ours >= {DECODE_BANDWIDTH:.0%} of copy bandwidth "
                 f"at cache lengths >= {DECODE_BANDWIDTH_MIN_LENGTH}: met at "
                 f"{sum(judged)} of {len(judged)} measured points")
    lines += _bandwidth_summary(points)
    lines += not_measured_line(results, "below or the results file")
    return lines


def format_decode_console(results: dict) -> str:
    return _format_console(results, DECODE_HEADER, _decode_row, summarize_decode)


def decode_markdown(results: dict) -> List[str]:
    settings = results.get("settings", {})
    out = ["## Decode attention (bf16, head dim 128, one new token per "
           "sequence)", "",
           f"Medians of {settings.get('replays', '?')} CUDA-graph replays "
           f"(about {settings.get('target_us', '?')} us of launches each, "
           "after warm-up), buffer sets rotated until they span "
           f"{settings.get('rotate_factor', '?')}x the L2 cache. L is the "
           "cache length before the step (the new token attends to L + 1 "
           f"keys; capacity L + {settings.get('headroom', '?')}). ours: "
           "`norm_opt.attention_decode` with QK-Norm (RMS, weights, eps "
           f"{settings.get('eps', '?')}), RoPE (neox, theta "
           f"{settings.get('rope_theta', '?')}), the append of k and v to "
           "caches [B, capacity, Hkv, D] and split-KV attention in one "
           "launch. copy: a device copy of the cache rows the step reads "
           "(K and V). sdpa: `F.scaled_dot_product_attention` alone over "
           "the cache's first L + 1 rows, q normalized and rotated and the "
           "new row written beforehand; eager (the unfused step): "
           "`F.rms_norm` of each head of q and k, RoPE (HF's rotate_half in "
           "f32, then bf16), `index_copy_` of k and v into caches [B, Hkv, "
           "capacity, D] (HF's StaticCache), SDPA over the first L + 1 "
           "rows; compile: `torch.compile` of eager (static shapes). "
           f"GQA in SDPA: {settings.get('gqa', '?')}. BW/copy: our bytes "
           "(q, the new k and v, the cache rows read, the two rows written, "
           "the output, each once) per second over the copy's (its read "
           "and its write). Ratios are the anchor's time over ours: above "
           f"1, ours is faster. Targets: eager/ours >= {DECODE_SPEEDUP} at "
           f"every point; BW/copy >= {DECODE_BANDWIDTH:.0%} at L >= "
           f"{DECODE_BANDWIDTH_MIN_LENGTH} (n/a below).", "",
           "Before timing, the kernel against a float64 reference of the "
           "step (norm, round to bf16, RoPE at the cache length, round to "
           "bf16, append, attention in float64) at cache lengths "
           f"{settings.get('check_lengths', '?')} (capacity "
           f"{settings.get('check_capacity', '?')}), the output and the "
           "cache rows past each length NaN-poisoned first: output "
           f"{ATTENTION_TOLERANCE}; appended k {DECODE_K_TOLERANCE}; "
           "appended v bit-exact; every other cache row unchanged. At each "
           "point our output and appended rows (poisoned) against eager's: "
           "||ours - eager|| / ||eager|| <= "
           f"{settings.get('agree_limit', '?')}, v rows equal. A failed "
           "check marks the point and skips its timing.", "",
           "| kernel | max bf16 ulps | worst / tolerance | outside | "
           "unwritten | bad k rows | bad v rows | other rows changed | "
           "build s | verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in results.get("checks", []):
        out.append(f"| {c['kernel']} | {_fmt(c.get('max_ulps'), '.1f')} | "
                   f"{_fmt(c.get('worst_of_tolerance'), '.3f')} | "
                   f"{c.get('bad_elements', '-')} | "
                   f"{c.get('nan_outputs', '-')} | "
                   f"{c.get('bad_k_rows', '-')} | {c.get('bad_v_rows', '-')}"
                   f" | {c.get('cache_disturbed', '-')} | "
                   f"{_fmt(c.get('build_s'), '.1f')} | {_check_verdict(c)} |")
    out += ["", "| " + " | ".join(DECODE_HEADER) + " |",
            "|" + "---|" * len(DECODE_HEADER)]
    out += ["| " + " | ".join(_decode_row(p)) + " |"
            for p in results.get("points", [])]
    out += [""] + [f"- {line}" for line in summarize_decode(results)]
    out += [f"- not measured: {m}" for m in results.get("not_measured", [])]
    out += [f"- {decode_label(p)}, {k}: {v}"
            for p in results.get("points", [])
            for k, v in p.get("errors", {}).items()]
    return out


#===------------------------------------------------------------------------===#
# Backward (backward_bench.py's results)
#===------------------------------------------------------------------------===#

BACKWARD_SCHEMA = "backward/1"
BACKWARD_ANCHORS = ("copy", "triton", "eager", "compile")
BACKWARD_IMPLS = ("ours", "triton", "eager", "compile")   # checked
BACKWARD_OPS = {
    "rms": "RMSNorm (weight; eager: HF's LlamaRMSNorm)",
    "add_rms": "fused residual add + RMSNorm (dx = dr from dy and the "
               "residual stream's gradient dh; dweight)",
    "layer": "LayerNorm (weight and bias)",
    "qk": "QK-Norm per head (packed qkv, q and k heads of 128, weights; "
          "rows are tokens)",
}
# The targets ([3/5] Training), at every measured point: ours at
# >= 90% of copy bandwidth (the per-head QK-Norm 85%) and >= 1.2x faster
# than torch.compile's backward and than the Triton one.
BACKWARD_BANDWIDTH = 0.90
BACKWARD_QK_BANDWIDTH = 0.85
BACKWARD_SPEEDUP = 1.2
BACKWARD_SPEEDUP_OVER = ("compile", "triton")
# |g - ref| <= ulps * ulp(ref) + magnitude * m, per dtype.
BACKWARD_TOLERANCE = {"bf16": (2, 2.0 ** -7)}
BACKWARD_TOLERANCE_TEXT = (
    "bf16: |g - ref| <= 2 ulp_bf16(ref) + 2^-7 m, m the size of ref's "
    "terms (dx: rstd (|g_i| + |xhat_i| mean|g xhat| [+ mean|g|]) "
    "[+ |dh_i|], g = dy w; dw: sum |dy xhat|; db: sum |dy|)")
_BACKWARD_TIMES = ("ours", "copy", "triton", "eager", "compile")
_BACKWARD_RATIOS = ("triton", "eager", "compile")
BACKWARD_HEADER = (["point"] + [f"{n} us" for n in _BACKWARD_TIMES]
                   + ["BW/copy"] + [f"{a}/ours" for a in _BACKWARD_RATIOS]
                   + [f">= {BACKWARD_BANDWIDTH:.0%} copy (qk "
                      f"{BACKWARD_QK_BANDWIDTH:.0%})"]
                   + [f">= {BACKWARD_SPEEDUP}x {a}"
                      for a in BACKWARD_SPEEDUP_OVER] + ["notes"])


def backward_label(point: dict) -> str:
    if point["op"] == "qk":
        heads = point.get("heads", ["?", "?"])
        return (f"qk H{heads[0]}/{heads[1]} D{point['hidden']} tokens "
                f"{point['rows']}")
    return f"{point['op']} h{point['hidden']} rows {point['rows']}"


def backward_bandwidth_target(op: str) -> float:
    return BACKWARD_QK_BANDWIDTH if op == "qk" else BACKWARD_BANDWIDTH


def backward_targets_text(op: str) -> str:
    """The targets a point of this operation is judged by."""
    return (f"targets: BW/copy >= {backward_bandwidth_target(op):.0%}, "
            + ", ".join(f"{a}/ours" for a in BACKWARD_SPEEDUP_OVER)
            + f" >= {BACKWARD_SPEEDUP}")


def backward_bandwidth_met(point: dict) -> Optional[bool]:
    fraction = bandwidth_fraction(point)
    return None if fraction is None else (
        fraction >= backward_bandwidth_target(point["op"]))


def backward_speedup_met(point: dict, anchor: str) -> Optional[bool]:
    ratio = anchor_ratio(point, anchor)
    return None if ratio is None else ratio >= BACKWARD_SPEEDUP


def _backward_flags(point: dict, width: Optional[int]) -> List[str]:
    flags = []
    if point.get("refused"):
        text = point["refused"]
        if width and len(text) > width:
            text = text[:width - 3] + "..."
        flags.append(f"refused: {text}")
    checks = point.get("checks", {})
    if checks.get("ours", {}).get("ok") is False or (
            point.get("not_timed") and "ours" not in checks):
        flags.append("WRONG (float64 check)")
    for name in BACKWARD_IMPLS[1:]:
        if checks.get(name, {}).get("ok") is False:
            flags.append(f"{name.upper()} WRONG")
    if point.get("not_timed"):
        flags.append("not timed")
    if point.get("errors"):
        flags.append("errors")
    return flags


def _backward_row(point: dict, width: Optional[int] = 60) -> List[str]:
    cells = _timing_cells(backward_label(point), point, _BACKWARD_TIMES,
                          _BACKWARD_RATIOS)
    cells.append(_verdict(backward_bandwidth_met(point)))
    cells += [_verdict(backward_speedup_met(point, a))
              for a in BACKWARD_SPEEDUP_OVER]
    cells.append(" ".join(_backward_flags(point, width)) or "-")
    return cells


def _check_counts(checks: List[dict]) -> str:
    ok = sum(1 for c in checks if c.get("ok") is True)
    refused = sum(1 for c in checks if c.get("ok") is None)
    return (f"{ok} of {len(checks)}"
            + (f" ({refused} refused)" if refused else ""))


def summarize_backward(results: dict) -> List[str]:
    settings = results.get("settings", {})
    checks = results.get("checks", [])
    parts = []
    for name in ("ours", "triton"):
        mine = [c for c in checks if c.get("impl") == name]
        if mine:
            ulps = [c["max_ulps"] for c in mine
                    if c.get("max_ulps") is not None]
            parts.append(f"{name} {_check_counts(mine)}"
                         + (f" (max {max(ulps):.1f} bf16 ulps)" if ulps
                            else ""))
    failed = [f"{c.get('impl')} {c.get('kernel')}" for c in checks
              if c.get("ok") is False]
    lines = [f"float64 checks ({settings.get('tolerance', BACKWARD_TOLERANCE_TEXT)}"
             f"): kernels within tolerance: {'; '.join(parts) or 'none'}"
             + (": FAILED " + ", ".join(failed) if failed else "")]
    points = results.get("points", [])
    parts, failed = [], []
    for name in BACKWARD_IMPLS:
        mine = [(p, p["checks"][name]) for p in points
                if name in p.get("checks", {})]
        if mine:
            parts.append(f"{name} {_check_counts([c for _, c in mine])}")
            failed += [f"{name} at {backward_label(p)}" for p, c in mine
                       if c.get("ok") is False]
    lines.append("at the points: " + ("; ".join(parts) or "none checked")
                 + (": FAILED " + ", ".join(failed[:8])
                    + (" ..." if len(failed) > 8 else "") if failed else ""))
    judged = [v for v in map(backward_bandwidth_met, points) if v is not None]
    lines.append(f"target: ours >= {BACKWARD_BANDWIDTH:.0%} of copy "
                 f"bandwidth (QK-Norm {BACKWARD_QK_BANDWIDTH:.0%}): met at "
                 f"{sum(judged)} of {len(judged)} measured points")
    for anchor in BACKWARD_SPEEDUP_OVER:
        judged = [v for v in (backward_speedup_met(p, anchor) for p in points)
                  if v is not None]
        lines.append(f"target: ours >= {BACKWARD_SPEEDUP}x faster than "
                     f"{anchor}: met at {sum(judged)} of {len(judged)} "
                     "measured points")
    lines += _bandwidth_summary(points)
    if settings.get("ours_note"):
        lines.append(f"ours timed as {settings['ours_note']}")
    refused = sorted({p["hidden"] for p in points if p.get("refused")})
    if refused:
        count = sum(1 for p in points if p.get("refused"))
        lines.append(f"refused by ours: {count} point{'s' if count != 1 else ''}"
                     f" (hidden {', '.join(map(str, refused))})")
    lines += not_measured_line(results, "below or the results file")
    return lines


def format_backward_console(results: dict) -> str:
    return _format_console(results, BACKWARD_HEADER, _backward_row,
                           summarize_backward)


def backward_markdown(results: dict) -> List[str]:
    settings = results.get("settings", {})
    heads = settings.get("qk_heads", ["?", "?"])
    out = ["## Backward (training)", "",
           f"bf16, eps {settings.get('eps', '?')}; the backward alone, "
           f"medians of {settings.get('replays', '?')} CUDA-graph replays "
           f"(about {settings.get('target_us', '?')} us of launches each, "
           "after warm-up), buffer sets rotated until they span "
           f"{settings.get('rotate_factor', '?')}x the L2 cache. ours: "
           f"{settings.get('ours_note', '?')}. copy: a device copy of as "
           "many bytes as ours must move (it reads half and writes half). "
           "triton: a Triton backward in Liger-Kernel's style "
           "(`triton_kernels.py`: dx row by row, per-program f32 partial "
           "sums of dweight and dbias, then a torch sum), on statistics "
           "torch computed beforehand. eager: `torch.autograd.grad("
           "retain_graph=True)` of the unfused graph (HF's LlamaRMSNorm: "
           "x.float(), pow, mean, rsqrt, .to(bf16), * w; x + r before it; "
           "`F.layer_norm`; that RMSNorm on each q and k head of a packed "
           f"qkv, {heads[0]}/{heads[1]} heads); compile: the same of "
           "`torch.compile` of that function (static shapes; the forward "
           "run once, the backward timed). The autograd anchors record "
           "their forward once per stream and replay only the backward. "
           "Bytes: x or h, dy (and dh) read, dx written, the weight read, "
           "its gradients written, the saved f32 statistics read, one f32 "
           f"row of partial sums per SM ({settings.get('sms', '?')}) per "
           "gradient written and read; BW/copy = (those bytes / our time) "
           "/ (2 x the copy's bytes / its time). Ratios are the anchor's "
           "time over ours: above 1, ours is faster. Targets, at every "
           f"point: BW/copy >= {BACKWARD_BANDWIDTH:.0%} "
           f"({BACKWARD_QK_BANDWIDTH:.0%} for QK-Norm); compile/ours and "
           f"triton/ours >= {BACKWARD_SPEEDUP}.", "",
           "Before timing, each of our kernels and each Triton kernel "
           f"against a float64 reference at {settings.get('check_rows', '?')}"
           f" rows ({settings.get('check_tokens', '?')} tokens for "
           "QK-Norm), then at each point every implementation's gradients "
           "(NaN-poisoned first: our and Triton's buffers filled, fresh "
           "outputs taken from NaN-filled blocks the caching allocator hands "
           "back, counted as 'poisoned'); tolerance "
           f"{settings.get('tolerance', BACKWARD_TOLERANCE_TEXT)}. A failed "
           "check marks the point (ours: not timed) or the anchor (its time "
           "not taken); a refusal of ours is recorded as such.", "",
           "| kernel | impl | rows | max bf16 ulps | worst / tolerance | "
           "outside | NaN | poisoned | build s | verdict |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for c in results.get("checks", []):
        verdict = ("refused: " + c["refused"] if c.get("refused") else
                   _check_verdict(c))
        out.append(f"| {c.get('kernel')} | {c.get('impl')} | "
                   f"{c.get('rows', '-')} | {_fmt(c.get('max_ulps'), '.1f')} "
                   f"| {_fmt(c.get('worst_of_tolerance'), '.3f')} | "
                   f"{c.get('bad_elements', '-')} | "
                   f"{c.get('nan_outputs', '-')} | {c.get('poisoned', '-')} "
                   f"| {_fmt(c.get('build_s'), '.1f')} | {verdict} |")
    for op, title in BACKWARD_OPS.items():
        points = [p for p in results.get("points", []) if p["op"] == op]
        if not points:
            continue
        out += ["", f"### {title}", "", "| " + " | ".join(BACKWARD_HEADER)
                + " |", "|" + "---|" * len(BACKWARD_HEADER)]
        out += ["| " + " | ".join(_backward_row(p, None)) + " |"
                for p in points]
    out += [""] + [f"- {line}" for line in summarize_backward(results)]
    out += [f"- not measured: {m}" for m in results.get("not_measured", [])]
    for p in results.get("points", []):
        out += [f"- {backward_label(p)}, {k}: {v}"
                for k, v in p.get("errors", {}).items()]
        out += [f"- {backward_label(p)}, {name} check: {c['error']}"
                for name, c in p.get("checks", {}).items() if c.get("error")]
    return out


def _environment_lines(env: Dict[str, str]) -> List[str]:
    keys = [("gpu", "GPU"), ("sms", "SMs"), ("l2_mib", "L2 (MiB)"),
            ("driver", "driver"), ("cuda", "CUDA (PyTorch's)"),
            ("torch", "PyTorch"), ("triton", "Triton"), ("python", "Python"),
            ("libnormjit", "libnormjit"), ("commit", "commit"),
            ("date", "date (UTC)")]
    return [f"| {label} | {env.get(key, 'unknown')} |" for key, label in keys]


def format_markdown(results: Optional[dict], checks: Optional[dict] = None,
                    attention: Optional[dict] = None,
                    decode: Optional[dict] = None,
                    backward: Optional[dict] = None) -> str:
    """RESULTS.md: the row kernels' tables (results), then the prefill
    attention section (attention), the decode section (decode) and the
    backward section (backward); each may be None (not measured)."""
    env = (results or attention or decode or backward or {}).get(
        "environment", {})
    out = ["# norm-bench results", "",
           "Written by `tools/norm-bench/report.py` from the results files of "
           "one device run of `tools/gpu-check.sh`; regenerate, do not edit.",
           "", "| | |", "|---|---|"] + _environment_lines(env)
    if checks:
        out += ["", "## Correctness (this run)", ""]
        out += [f"- {name}: {entry}" for name, entry in checks.items()]
    if results is not None:
        out += [""] + _row_kernels_markdown(results)
    else:
        out += ["", "## Row kernels", "", "Not measured in this run."]
    out += [""] + (attention_markdown(attention) if attention is not None
                   else ["## Prefill attention", "", "Not measured in this "
                         "run."])
    out += [""] + (decode_markdown(decode) if decode is not None
                   else ["## Decode attention", "", "Not measured in this "
                         "run."])
    out += [""] + (backward_markdown(backward) if backward is not None
                   else ["## Backward (training)", "", "Not measured in "
                         "this run."])
    return "\n".join(out) + "\n"


def _row_kernels_markdown(results: dict) -> List[str]:
    settings = results.get("settings", {})
    out = ["## Method", "",
            f"Medians of {settings.get('replays', '?')} CUDA-graph replays "
            f"(about {settings.get('target_us', '?')} us of launches each, "
            "after warm-up), inputs rotated among "
            "buffer sets when a working set fits in "
            f"{settings.get('rotate_factor', '?')}x the L2 cache; eps "
            f"{settings.get('eps', '?')}; random inputs in [-2, 2). 'copy' is "
            "a device-to-device copy of one input-sized tensor. Anchors: "
            "torch eager (`F.rms_norm`, `F.layer_norm`, `x + r` then "
            "`F.rms_norm`), `torch.compile` of the same functions (static "
            "shapes), and a Triton kernel with one program per row "
            "(BLOCK = next_pow2(hidden), fp32 math). Hidden 128 rows are "
            "per-head rows: 32 per token. Ratios are the anchor's time over "
            "ours: above 1, ours is faster. pick/best re-times every "
            "candidate the autotuner tried, at the measured row count.", ""]
    out += ["## Summary", ""] + [f"- {line}" for line in summarize(results)]
    for op, title in OP_TITLES.items():
        points = [p for p in results.get("points", []) if p["op"] == op]
        if not points:
            continue
        out += ["", f"## {title}", "",
                "| " + " | ".join(HEADER[1:]) + " |",
                "|" + "---|" * (len(HEADER) - 1)]
        for point in points:
            out.append("| " + " | ".join(_row(point)[1:]) + " |")
    missing = results.get("not_measured", [])
    if missing:
        out += ["", "## Not measured", ""]
        out += [f"- {m}" for m in missing[:200]]
        if len(missing) > 200:
            out.append(f"- ... and {len(missing) - 200} more")
    errors = [(p, k, v) for p in results.get("points", [])
              for k, v in p.get("errors", {}).items()]
    if errors:
        out += ["", "## Errors", ""]
        out += [f"- {p['op']} {p['dtype']} h{p['hidden']} rows "
                f"{_rows_label(p)}, {k}: {v}" for p, k, v in errors[:100]]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="?",
                        help="results JSON from norm_bench.py")
    parser.add_argument("--attention", help="results JSON from "
                        "attention_bench.py (its table, a RESULTS.md section)")
    parser.add_argument("--decode", help="results JSON from "
                        "decode_bench.py (its table, a RESULTS.md section)")
    parser.add_argument("--backward", help="results JSON from "
                        "backward_bench.py (its table, a RESULTS.md section)")
    parser.add_argument("--markdown", help="write RESULTS.md here")
    parser.add_argument("--checks", help="JSON of correctness results "
                        "(gpu-check.sh) to include")
    parser.add_argument("--short", action="store_true",
                        help="print a subset of the points (bf16, hidden "
                        f"{', '.join(map(str, SHORT_HIDDEN))})")
    args = parser.parse_args(argv)
    if not (args.results or args.attention or args.decode or args.backward):
        parser.error("give a results file, --attention FILE, --decode FILE "
                     "or several (--backward FILE too)")
    try:
        results = load(args.results) if args.results else None
        attention = (load(args.attention, ATTENTION_SCHEMA)
                     if args.attention else None)
        decode = load(args.decode, DECODE_SCHEMA) if args.decode else None
        backward = (load(args.backward, BACKWARD_SCHEMA) if args.backward
                    else None)
        checks = None
        if args.checks:
            with open(args.checks) as f:
                checks = json.load(f)
    except (OSError, ValueError) as error:
        print(f"report.py: {error}", file=sys.stderr)
        return 1
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(format_markdown(results, checks, attention, decode,
                                    backward))
    tables = []
    if results is not None:
        tables.append(format_console(results, args.short))
    if attention is not None:
        tables.append(format_attention_console(attention))
    if decode is not None:
        tables.append(format_decode_console(decode))
    if backward is not None:
        tables.append(format_backward_console(backward))
    sys.stdout.write("\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
