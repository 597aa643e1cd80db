#!/usr/bin/env python3
"""Feeds norm-opt truncated and corrupted copies of the test inputs.

Every .mlir file under --inputs (split at `// -----` like -split-input-file)
is a seed; so is its generic form, printed by norm-opt itself, so that
generic-only corruptions (operandSegmentSizes, property values) are tried
too. From each seed the script derives deterministic mutants (truncations at
several cut points, byte flips, insertions, deletions, token swaps, number,
dimension, element-type and segment-size changes) and samples --max-runs of them. For each
--pipeline (extra norm-opt arguments; plain parsing by default) it runs
norm-opt on the seeds and the sample with a timeout and checks that it exits
with 0 or 1: never a signal, an abort, a sanitizer report or a hang.
Offending inputs are written to --out with the command that reproduces them.

    mutate-and-run.py --norm-opt build/bin/norm-opt --inputs test \\
        --exclude test/Robustness --out /tmp/robust \\
        --pipeline= --pipeline=--canonicalize
"""

import argparse
import concurrent.futures
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
import zlib

SPLIT_MARKER = re.compile(rb"^// -----\s*$", re.MULTILINE)
TOKEN = re.compile(
    rb'"[^"\n]*"|0x[0-9A-Fa-f]+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?'
    rb"|[%@#^!]?[A-Za-z_][\w.$-]*|%\d+|->|\S"
)
INTEGER = re.compile(rb"(?<![\w.])-?\d+(?![\w.])")
DIMENSION = re.compile(rb"(?<=[<x])(\d+|\?)(?=x)")
ELEMENT_TYPE = re.compile(rb"(?<=x)(f32|f16|bf16)(?=>)")
SEGMENTS = re.compile(rb"(operandSegmentSizes = array<i32)((?::[^>]*)?)>")

# Things that are plausible in norm IR and likely to hit verifier corners.
INTERESTING_TOKENS = [
    b"(", b")", b"<", b">", b"{", b"}", b"[", b"]", b",", b":", b"=", b"->",
    b"?", b"%", b"@", b"#", b'"', b"0", b"-1", b"0.0", b"-0.0", b"1.0",
    b"0x7FF8000000000000", b"0x7FF0000000000000", b"0xFFF0000000000000",
    b"9223372036854775807", b"4611686018427387904", b"tensor<?x?xf32>",
    b"tensor<0x8xf32>", b"tensor<8xf32>", b"tensor<?x8xi32>", b"f64", b"f8E4M3FN",
    b"index", b"weight(", b"bias(", b"addend(", b"eps(", b"alpha(",
    b"offset(", b"<rms>", b"<none>", b"#norm.statistic<l2>",
    b"#norm.launch<vector = 8, threads_per_row = 32, warps = 1, rows_per_cta = 1>",
    b"{groups = 0 : i64}", b"{f32_residual}", b"// -----\n",
]
INTERESTING_NUMBERS = [
    b"0", b"1", b"-1", b"2", b"3", b"7", b"31", b"33", b"1024", b"2048",
    b"2147483648", b"4611686018427387904", b"9223372036854775807",
    b"-9223372036854775808",
]


def find_seeds(root, excludes):
    """Yields (name, text) for each split of each .mlir file under root."""
    excludes = {os.path.abspath(e) for e in excludes}
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        if os.path.abspath(directory) in excludes:
            subdirs[:] = []
            continue
        for name in sorted(files):
            if not name.endswith(".mlir"):
                continue
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                data = f.read()
            rel = os.path.relpath(path, root)
            for index, chunk in enumerate(SPLIT_MARKER.split(data)):
                if chunk.strip():
                    yield f"{rel}#{index}", chunk


def generic_form(tool, text, timeout):
    """The generic form of `text`, verified or not, or None."""
    try:
        result = subprocess.run(
            tool + ["--mlir-print-op-generic",
                    "--mlir-very-unsafe-disable-verifier-on-parsing", "-"],
            input=text, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return result.stdout if result.returncode == 0 else None


# Elementary mutations: (rng, data) -> (data, description).

def flip_bit(rng, data):
    if not data:
        return data, "flip(empty)"
    i = rng.randrange(len(data))
    bit = 1 << rng.randrange(8)
    return data[:i] + bytes([data[i] ^ bit]) + data[i + 1:], f"flip@{i}^{bit}"


def insert_token(rng, data):
    i = rng.randrange(len(data) + 1)
    if rng.random() < 0.2:
        token = bytes([rng.randrange(256)])
    else:
        token = rng.choice(INTERESTING_TOKENS)
    return data[:i] + token + data[i:], f"insert@{i}"


def delete_span(rng, data):
    if not data:
        return data, "delete(empty)"
    i = rng.randrange(len(data))
    n = rng.randint(1, 16)
    return data[:i] + data[i + n:], f"delete@{i}+{n}"


def delete_line(rng, data):
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + lines[i + 1:]), f"delete-line@{i}"


def duplicate_line(rng, data):
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i + 1] + lines[i:]), f"dup-line@{i}"


def swap_tokens(rng, data):
    spans = [m.span() for m in TOKEN.finditer(data)]
    if len(spans) < 2:
        return data, "swap(none)"
    (a0, a1), (b0, b1) = sorted(rng.sample(spans, 2))
    swapped = data[:a0] + data[b0:b1] + data[a1:b0] + data[a0:a1] + data[b1:]
    return swapped, f"swap@{a0},{b0}"


def replace_token(rng, data):
    spans = [m.span() for m in TOKEN.finditer(data)]
    if not spans:
        return data, "replace(none)"
    a, b = rng.choice(spans)
    return data[:a] + rng.choice(INTERESTING_TOKENS) + data[b:], f"replace@{a}"


def replace_number(rng, data):
    spans = [m.span() for m in INTEGER.finditer(data)]
    if not spans:
        return replace_token(rng, data)
    a, b = rng.choice(spans)
    return data[:a] + rng.choice(INTERESTING_NUMBERS) + data[b:], f"number@{a}"


def mutate_type(rng, data):
    """Changes a tensor dimension or element type: parses, then verifies."""
    spans = [(m.span(), True) for m in DIMENSION.finditer(data)]
    spans += [(m.span(), False) for m in ELEMENT_TYPE.finditer(data)]
    if not spans:
        return replace_number(rng, data)
    (a, b), is_dim = rng.choice(spans)
    if is_dim:
        new = rng.choice([b"0", b"1", b"3", b"?", b"4096", b"9223372036854775807"])
    else:
        new = rng.choice([b"f32", b"f16", b"bf16", b"f64", b"i32", b"f8E4M3FN"])
    return data[:a] + new + data[b:], f"type@{a}"


def mutate_segments(rng, data):
    """Changes one operandSegmentSizes array: a size, or the array length."""
    matches = list(SEGMENTS.finditer(data))
    if not matches:
        return replace_number(rng, data)
    m = rng.choice(matches)
    sizes = [s.strip() for s in m.group(2).lstrip(b":").split(b",") if s.strip()]
    choice = rng.randrange(4)
    if choice == 0 and sizes:
        sizes[rng.randrange(len(sizes))] = rng.choice([b"0", b"1", b"2", b"-1", b"3"])
    elif choice == 1 and sizes:
        sizes.pop(rng.randrange(len(sizes)))
    elif choice == 2:
        sizes.insert(rng.randrange(len(sizes) + 1), rng.choice([b"0", b"1"]))
    elif sizes:
        i, j = rng.randrange(len(sizes)), rng.randrange(len(sizes))
        sizes[i], sizes[j] = sizes[j], sizes[i]
    body = (b": " + b", ".join(sizes)) if sizes else b""
    new = m.group(1) + body + b">"
    return data[:m.start()] + new + data[m.end():], f"segments@{m.start()}"


MUTATIONS = [flip_bit, insert_token, delete_span, delete_line, duplicate_line,
             swap_tokens, replace_token, replace_number, mutate_type,
             mutate_type]


def mutants(name, data, truncations, count, seed, generic):
    """Yields (description, data): `truncations` cut points (every other one
    at the end of a token), then `count` stacks of one to three mutations."""
    rng = random.Random(seed ^ zlib.crc32(name.encode()))
    ends = [m.end() for m in TOKEN.finditer(data)]
    for i in range(truncations):
        if i % 2 and ends:
            cut = rng.choice(ends)
        else:
            cut = rng.randrange(len(data) + 1)
        yield f"truncate@{cut}", data[:cut]
    for _ in range(count):
        mutated, steps = data, []
        for _ in range(rng.randint(1, 3)):
            if generic and rng.random() < 0.4:
                mutation = mutate_segments
            else:
                mutation = rng.choice(MUTATIONS)
            mutated, step = mutation(rng, mutated)
            steps.append(step)
        yield "+".join(steps), mutated


SANITIZER_REPORT = re.compile(
    rb"ERROR: (Address|Leak|Memory|Thread|UndefinedBehavior)Sanitizer"
    rb"|runtime error: |PLEASE submit a bug report|Stack dump:")


def classify(returncode, stderr):
    """'ok', or what went wrong."""
    if returncode is None:
        return "timeout"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    if SANITIZER_REPORT.search(stderr):
        return "sanitizer report"
    if returncode not in (0, 1):
        return f"exit {returncode}"
    return "ok"


def run_one(tool, data, timeout):
    try:
        result = subprocess.run(tool + ["-"], input=data,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, b""
    return result.returncode, result.stderr


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--norm-opt", required=True, help="the tool to run")
    parser.add_argument("--inputs", required=True,
                        help="folder whose .mlir files are the seeds")
    parser.add_argument("--exclude", action="append", default=[],
                        help="folder under --inputs to skip (repeatable)")
    parser.add_argument("--out", required=True,
                        help="folder for the inputs that fail the check")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--truncations", type=int, default=3,
                        help="truncated copies per seed")
    parser.add_argument("--mutants", type=int, default=8,
                        help="randomly corrupted copies per seed")
    parser.add_argument("--max-seeds", type=int,
                        default=int(os.environ.get("NORM_ROBUSTNESS_SEEDS", 200)),
                        help="sample this many seeds (default: "
                             "$NORM_ROBUSTNESS_SEEDS or 200); 0 takes all")
    parser.add_argument("--max-runs", type=int,
                        default=int(os.environ.get("NORM_ROBUSTNESS_RUNS", 300)),
                        help="sample this many mutants (default: "
                             "$NORM_ROBUSTNESS_RUNS or 300); 0 runs all")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds per run")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--pipeline", action="append",
                        help="extra norm-opt arguments, one shell-quoted "
                             "string per pipeline (repeatable; default: none)")
    args = parser.parse_args()
    pipelines = [shlex.split(p) for p in (args.pipeline or [""])]
    # Progress lines and failure reports interleave in the order written.
    sys.stdout.reconfigure(line_buffering=True)

    # A sanitizer finding must end the process with a signal, not exit 1.
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        current = os.environ.get(var, "")
        if "abort_on_error" not in current:
            os.environ[var] = ":".join(filter(None, [current, "abort_on_error=1"]))

    start = time.monotonic()
    seeds = list(find_seeds(args.inputs, args.exclude))
    if args.max_seeds and len(seeds) > args.max_seeds:
        seeds = random.Random(args.seed).sample(seeds, args.max_seeds)
    generic = []
    for name, text in seeds:
        printed = generic_form([args.norm_opt], text, args.timeout)
        if printed:
            generic.append((name + ":generic", printed))

    # Seeds run as they are; mutants are sampled.
    cases = [(name, "seed", text) for name, text in seeds]
    candidates = []
    for name, text in seeds + generic:
        is_generic = name.endswith(":generic")
        for how, data in mutants(name, text, args.truncations, args.mutants,
                                 args.seed, is_generic):
            candidates.append((name, how, data))
    if args.max_runs and len(candidates) > args.max_runs:
        candidates = random.Random(args.seed).sample(candidates, args.max_runs)
    cases += candidates
    print(f"robustness: {len(seeds)} seeds, {len(generic)} generic forms, "
          f"{len(candidates)} mutants")

    failures = []
    for extra in pipelines:
        tool = [args.norm_opt] + extra
        outcomes = {}
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = [pool.submit(run_one, tool, data, args.timeout)
                       for _, _, data in cases]
            for (name, how, data), future in zip(cases, futures):
                returncode, stderr = future.result()
                verdict = classify(returncode, stderr)
                key = verdict if verdict != "ok" else (
                    "accepted" if returncode == 0 else "rejected")
                outcomes[key] = outcomes.get(key, 0) + 1
                if verdict != "ok":
                    failures.append((tool, name, how, data, verdict, stderr))
        counts = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
        print(f"robustness: norm-opt {' '.join(extra) or '(parse only)'}: "
              f"{len(cases)} runs: {counts}")
    print(f"robustness: {time.monotonic() - start:.1f} s")
    if not failures:
        return 0
    os.makedirs(args.out, exist_ok=True)
    for index, (tool, name, how, data, verdict, stderr) in enumerate(failures):
        path = os.path.join(args.out, f"failure-{index:03d}.mlir")
        with open(path, "wb") as f:
            f.write(data)
        command = " ".join(shlex.quote(t) for t in tool + [path])
        with open(path + ".log", "wb") as f:
            f.write(f"# from {name} by {how}: {verdict}\n# {command}\n".encode())
            f.write(stderr[-8000:])
        print(f"FAIL ({verdict}): {command}  # from {name} by {how}",
              file=sys.stderr)
    print(f"robustness: {len(failures)} runs failed; inputs and logs in "
          f"{args.out}", file=sys.stderr)
    return 1

if __name__ == "__main__":
    sys.exit(main())
