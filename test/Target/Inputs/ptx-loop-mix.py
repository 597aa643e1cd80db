"""The instruction mix of the key/value loop of each attention kernel in a
PTX file, as ../shared/REVIEW-KERNELS.md counts it: the natural loop (of a
back edge of the control-flow graph) that holds every mma.sync of the
kernel, each instruction of its blocks once (both sides of a branch inside
it count, so a prefetch's issue-or-commit counts both). One line per
kernel:

  <entry> mma=N ldmatrix=N ... total=N per_mma=R

usage: ptx-loop-mix.py FILE.ptx"""

import re
import sys

CLASSES = [
    ("mma", r"mma\.sync"),
    ("ldmatrix", r"ldmatrix"),
    ("cp_async", r"cp\.async\.(cg|ca)"),
    ("async_sync", r"cp\.async\.(commit|wait)"),
    ("ex2", r"ex2\."),
    ("sincos", r"(sin|cos)\."),
    ("rsqrt", r"rsqrt\."),
    ("fma_f32", r"fma\.\w+\.f32"),
    ("alu_f32", r"(add|sub|mul)\.\w+\.f32"),
    ("max_f32", r"(max|min)(\.\w+)*\.f32"),
    ("cvt", r"cvt\."),
    ("shfl", r"shfl\."),
    ("bar", r"bar\."),
    ("setp", r"setp\."),
    ("selp", r"selp\."),
    ("shared", r"(ld|st)\.shared"),
    ("global", r"(ld|st)\.global"),
    ("branch", r"bra\b"),
    ("int64", r"\w+(\.\w+)*\.[sub]64\b"),
    ("int32", r"\w+(\.\w+)*\.[sub]32\b"),
]


def blocks(body):
    """[(label, [instructions])] of a kernel body in layout order, each
    instruction with its guard predicate, if any."""
    body = re.sub(r"//[^\n]*", "", body)
    result = [(None, [])]
    for piece in re.split(r"(\$L__\w+:)|;", body):
        if not piece or not piece.strip():
            continue
        piece = " ".join(piece.split())
        if re.fullmatch(r"\$L__\w+:", piece):
            result.append((piece[:-1], []))
            continue
        piece = piece.lstrip("{} ")
        if not piece or piece.startswith("."):
            continue
        result[-1][1].append(piece)
    return result


def unguarded(op):
    return re.sub(r"^@!?%p\d+ ", "", op)


def successors(bl):
    index = {label: i for i, (label, _) in enumerate(bl) if label}
    succ = []
    for i, (_, ops) in enumerate(bl):
        out, falls = set(), True
        for op in ops:
            m = re.match(r"(@!?%p\d+ )?bra(\.uni)? (\$L__\w+)$", op)
            if m:
                out.add(index[m.group(3)])
                if not m.group(1):
                    falls = False
            if unguarded(op).startswith("ret"):
                falls = False
        if falls and i + 1 < len(bl):
            out.add(i + 1)
        succ.append(out)
    return succ


def classify(op):
    op = unguarded(op)
    for cls, pattern in CLASSES:
        if re.match(pattern, op):
            return cls
    return "other"


def main():
    ptx = open(sys.argv[1]).read()
    for entry in re.split(r"\.visible \.entry ", ptx)[1:]:
        name = entry.split("(")[0]
        bl = blocks(entry)
        succ = successors(bl)
        mma_blocks = {i for i, (_, ops) in enumerate(bl)
                      if any(classify(o) == "mma" for o in ops)}
        if not mma_blocks:
            continue
        pred = [set() for _ in bl]
        for i, out in enumerate(succ):
            for j in out:
                pred[j].add(i)
        # Dominators, iteratively (blocks unreachable from the entry keep
        # every block).
        everything = set(range(len(bl)))
        dom = [set(everything) for _ in bl]
        dom[0] = {0}
        changed = True
        while changed:
            changed = False
            for n in range(1, len(bl)):
                new = set(everything)
                for p in pred[n]:
                    new &= dom[p]
                new |= {n}
                if new != dom[n]:
                    dom[n], changed = new, True
        # The smallest natural loop (a back edge tail -> header, header
        # dominating tail) with every mma.
        best = None
        for tail, out in enumerate(succ):
            for header in out:
                if header not in dom[tail]:
                    continue
                loop, stack = {header}, [tail]
                while stack:
                    b = stack.pop()
                    if b not in loop:
                        loop.add(b)
                        stack.extend(pred[b])
                if mma_blocks <= loop and (best is None or len(loop) < len(best)):
                    best = loop
        if best is None:
            continue
        counts = {cls: 0 for cls, _ in CLASSES}
        counts["other"] = 0
        total = 0
        for b in sorted(best):
            for op in bl[b][1]:
                total += 1
                counts[classify(op)] += 1
        mix = " ".join(f"{k}={v}" for k, v in counts.items())
        print(f"{name} {mix} total={total} per_mma={total / counts['mma']:.2f}")


if __name__ == "__main__":
    main()
