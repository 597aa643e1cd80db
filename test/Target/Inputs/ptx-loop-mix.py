"""The instruction mix of the key/value loop of each attention kernel in a
PTX file, as ../shared/REVIEW-KERNELS.md counts it: the innermost natural
loops (of back edges of the control-flow graph) that hold mma.sync, counted
along one iteration: the longest path from a loop's header to its back edge
(so a prefetch counts its issue, not its empty commit) that selects no
score to -inf, the tile without a mask. One line per kernel, the masked
tile's total (the longest such path with the mask; the unmasked one's
where every tile is masked) last:

  <entry> mma=N ldmatrix=N ... total=N per_mma=R masked=N

With --without=CLASS[,CLASS...] only paths that issue no instruction of
those classes count: decode's whole tile of cached keys, without the new
keys' QK-Norm, rotation and append and without zero-filled copies
(--without=sincos,rsqrt,st_global,cp_async_fill).

With --with=CLASS[,CLASS...] only paths that issue an instruction of each
of those classes count (a paged tile whose lookups branch: the path that
copies, --with=cp_async).

With --shortest the shortest such path is counted (decode's tile of cached
keys: no new keys to normalize, rotate and append).

usage: ptx-loop-mix.py [--without=CLASSES] [--with=CLASSES] [--shortest]
                       FILE.ptx"""

import re
import sys

CLASSES = [
    ("mma", r"mma\.sync"),
    ("ldmatrix", r"ldmatrix"),
    # Copies with a source size (zero fill past a ragged tile's rows).
    ("cp_async_fill", r"cp\.async\.(cg|ca)\.\S+ \[[^]]*\], \[[^]]*\], \d+, "),
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
    ("ld_global", r"ld\.global"),
    ("st_global", r"st\.global"),
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
        # A branch ends a basic block: what follows a guarded one runs only
        # when it falls through.
        if re.match(r"@!?%p\d+ bra\b", piece):
            result.append((None, []))
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
    args = sys.argv[1:]
    without, required, pick = set(), set(), max
    while args and args[0].startswith("--"):
        option = args.pop(0)
        if option.startswith("--without="):
            without = set(option[len("--without="):].split(","))
        elif option.startswith("--with="):
            required = set(option[len("--with="):].split(","))
        elif option == "--shortest":
            pick = min
        else:
            sys.exit(f"unknown option {option}")
    ptx = open(args[0]).read()
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
        # The innermost natural loops (a back edge tail -> header, header
        # dominating tail) that hold mma.sync: the key/value loop, or its
        # two halves, tiles without and with the mask.
        loops = []
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
                if loop & mma_blocks:
                    loops.append((header, loop))
        loops = [(h, l) for h, l in loops
                 if not any(o < l and o & mma_blocks for _, o in loops)]
        if not loops:
            continue

        def masks(b):
            return any(re.match(r"selp\.f32 .*0fFF800000", unguarded(o))
                       for o in bl[b][1])

        # One iteration of each: the paths from its header through its
        # blocks to a back edge, without taking one; the best (longest, or
        # shortest) for each kind of tile, by dynamic programming over the
        # loop's acyclic body (branches split blocks, so enumerating the
        # paths would take exponential time). A path's state: the required
        # classes it has issued and whether it masks.
        issues = [{classify(o) for o in ops} for _, ops in bl]
        required_list = sorted(required)

        def state_of(b, state):
            seen, masked = state
            for i, cls in enumerate(required_list):
                if cls in issues[b]:
                    seen |= 1 << i
            return seen, masked or masks(b)

        best = {}  # (masked) -> (size, path)
        for header, loop in loops:
            # Topological order of the loop's body from its header (edges
            # back to the header, or to a block already on the DFS stack,
            # are not followed).
            order, visited, on_stack = [], set(), set()

            def dfs(b):
                visited.add(b)
                on_stack.add(b)
                for n in succ[b]:
                    if n != header and n in loop and n not in visited:
                        dfs(n)
                on_stack.discard(b)
                order.append(b)

            sys.setrecursionlimit(max(10000, 4 * len(bl)))
            dfs(header)
            order.reverse()
            position = {b: i for i, b in enumerate(order)}
            # table[b][state] = (size, path) of the best path from the
            # header through b.
            table = {b: {} for b in order}
            if not issues[header] & without:
                start = state_of(header, (0, False))
                table[header][start] = (len(bl[header][1]), (header,))
            for b in order:
                for state, (size_b, path) in table[b].items():
                    for n in succ[b]:
                        if n == header:
                            if state[0] != (1 << len(required_list)) - 1:
                                continue
                            kind = state[1]
                            if kind not in best or pick(
                                    best[kind][0], size_b) != best[kind][0]:
                                best[kind] = (size_b, path)
                            continue
                        if (n not in loop or position.get(n, -1) <= position[b]
                                or issues[n] & without):
                            continue
                        new_state = state_of(n, state)
                        candidate = (size_b + len(bl[n][1]), path + (n,))
                        old = table[n].get(new_state)
                        if old is None or pick(old[0], candidate[0]) != old[0]:
                            table[n][new_state] = candidate
        if not best:
            sys.exit(f"{name}: no iteration of its loop meets the options")
        tile = best.get(False, best.get(True))[1]
        masked_size = best.get(True, best.get(False))[0]
        counts = {cls: 0 for cls, _ in CLASSES}
        counts["other"] = 0
        total = 0
        for b in tile:
            for op in bl[b][1]:
                total += 1
                counts[classify(op)] += 1
        mix = " ".join(f"{k}={v}" for k, v in counts.items())
        print(f"{name} {mix} total={total} per_mma={total / counts['mma']:.2f} "
              f"masked={masked_size}")


if __name__ == "__main__":
    main()
