#!/usr/bin/env python3
"""Tables from a norm-bench results file (JSON, written by norm_bench.py).

    report.py results.json                       # the console table
    report.py results.json --markdown RESULTS.md [--checks checks.json]

Needs no torch and no GPU: the device run writes the JSON, this turns it
into the table printed at the end of the run and into RESULTS.md. Every
number comes from the file; a point or anchor the run did not measure is
shown as "-" and listed with the reason.

Columns: copy and ours in microseconds (medians of CUDA-graph replays);
"BW/copy": our bytes per second over the copy's (a copy of one input-sized
tensor counts its read and its write); "<anchor>/ours": the anchor's time
over ours (above 1: ours is faster); "pick/best": the time of the
configuration the autotuner picked over the fastest candidate it tried,
both re-timed at this row count.
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
}
TUNER_LIMIT = 1.03  # the pick within 3% of the best candidate


def load(path: str) -> dict:
    with open(path) as f:
        results = json.load(f)
    if results.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {results.get('schema')!r}, "
                         f"expected {SCHEMA}")
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
    missing = results.get("not_measured", [])
    if missing:
        lines.append(f"not measured: {len(missing)} entries (see the results "
                     "file)")
    return lines


# --short: what fits at the end of a device run's output.
SHORT_HIDDEN = (128, 4096, 8192, 16384)


def is_short(point: dict) -> bool:
    return point["dtype"] == "bf16" and point["hidden"] in SHORT_HIDDEN and (
        point["op"] not in ("layer", "add_layer") or point["hidden"] == 4096)


def format_console(results: dict, short: bool = False) -> str:
    points = [p for p in results.get("points", []) if not short or is_short(p)]
    rows = [HEADER] + [_row(p) for p in points]
    widths = _widths(rows)
    out = []
    for i, row in enumerate(rows):
        out.append("  ".join(cell.rjust(w) if 1 < j < len(row) - 1 else
                             cell.ljust(w) for j, (cell, w) in
                             enumerate(zip(row, widths))).rstrip())
        if i == 0:
            out.append("-" * len(out[0]))
    if short:
        out.append(f"({len(points)} of {len(results.get('points', []))} "
                   "points shown: bf16, hidden " +
                   ", ".join(map(str, SHORT_HIDDEN)) + "; all in the "
                   "results file and RESULTS.md)")
    out += [""] + summarize(results)
    return "\n".join(out) + "\n"


def _environment_lines(env: Dict[str, str]) -> List[str]:
    keys = [("gpu", "GPU"), ("sms", "SMs"), ("l2_mib", "L2 (MiB)"),
            ("driver", "driver"), ("cuda", "CUDA (PyTorch's)"),
            ("torch", "PyTorch"), ("triton", "Triton"), ("python", "Python"),
            ("libnormjit", "libnormjit"), ("commit", "commit"),
            ("date", "date (UTC)")]
    return [f"| {label} | {env.get(key, 'unknown')} |" for key, label in keys]


def format_markdown(results: dict, checks: Optional[dict] = None) -> str:
    env = results.get("environment", {})
    settings = results.get("settings", {})
    out = ["# norm-bench results", "",
           "Written by `tools/norm-bench/report.py` from the results file of "
           "one device run of `tools/gpu-check.sh`; regenerate, do not edit.",
           "", "| | |", "|---|---|"] + _environment_lines(env)
    out += ["", "## Method", "",
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
    if checks:
        out += ["## Correctness (this run)", ""]
        for name, entry in checks.items():
            out.append(f"- {name}: {entry}")
        out.append("")
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
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", help="results JSON from norm_bench.py")
    parser.add_argument("--markdown", help="write RESULTS.md here")
    parser.add_argument("--checks", help="JSON of correctness results "
                        "(gpu-check.sh) to include")
    parser.add_argument("--short", action="store_true",
                        help="print a subset of the points (bf16, hidden "
                        f"{', '.join(map(str, SHORT_HIDDEN))})")
    args = parser.parse_args(argv)
    try:
        results = load(args.results)
        checks = None
        if args.checks:
            with open(args.checks) as f:
                checks = json.load(f)
    except (OSError, ValueError) as error:
        print(f"report.py: {error}", file=sys.stderr)
        return 1
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(format_markdown(results, checks))
    sys.stdout.write(format_console(results, args.short))
    return 0


if __name__ == "__main__":
    sys.exit(main())
