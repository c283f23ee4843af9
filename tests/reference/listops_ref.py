#!/usr/bin/env python3
"""Independent Python reference for longctx's ListOps data (src/lra), written from the task definition in
experiments/lra-data/README.md (Long Range Arena's ListOps), not from the C code. Standard library only.

  python3 tests/reference/listops_ref.py fixture [PATH]  writes PATH (default tests/fixtures/listops_ref.tsv):
                                                        hand-made and randomly drawn (Source, Target) pairs,
                                                        read by tests/test_lra_data.c
  python3 tests/reference/listops_ref.py check FILE...  checks a TSV written by `longctx listops` (header, every
                                                        Target against this evaluator, LRA's length bounds,
                                                        depth, arguments, no duplicate) and prints statistics

Definitions:
- operators MIN, MAX, MED (median; for an even count the integer part of the mean of the two middle
  values), SM (sum modulo 10); values 0..9.
- printing: an operator with arguments a1..ak is the left-folded pairs ((((op, a1), a2) ... ak), ']') and a
  pair (x, y) prints as '( x y )', so MAX(2, 9) is '( ( ( [MAX 2 ) 9 ) ] )'.
- length: operators + values + closing brackets (parentheses not counted); LRA keeps 500 < length < 2000.
- sampling (for the fixture's random trees): the root at depth 1; below the maximum depth a node is an
  operator with probability 0.25 (else a value, uniform 0..9); an operator has uniform 2..max_args
  arguments and a uniform operator; a node at the maximum depth is a value.

The evaluator here parses the printed string into the nested pairs and folds them back, a different route
from the C evaluator's frame stack, so agreement checks both.
"""
import hashlib
import random
import statistics
import sys
from collections import Counter

OPS = ("[MIN", "[MAX", "[MED", "[SM")
END = "]"


def apply(op, args):
    if op == "[MIN":
        return min(args)
    if op == "[MAX":
        return max(args)
    if op == "[MED":
        return int(statistics.median(args))
    return sum(args) % 10


# ---------------------------------------------------------------------------------------- printing
def show(node):
    """node: an int, or (op, [children]). Returns the printed string."""
    if isinstance(node, int):
        return str(node)
    op, kids = node
    s = op
    for kid in kids:  # fold: the pair (s, kid)
        s = "( " + s + " " + show(kid) + " )"
    return "( " + s + " " + END + " )"


def value(node):
    if isinstance(node, int):
        return node
    op, kids = node
    return apply(op, [value(k) for k in kids])


def measure(node, depth=1):
    """(length, depth, [argument counts], Counter of operators) of a tree."""
    if isinstance(node, int):
        return 1, depth, [], Counter()
    op, kids = node
    length, deepest, args, ops = 2, depth, [len(kids)], Counter([op])
    for k in kids:
        l, d, a, o = measure(k, depth + 1)
        length += l
        deepest = max(deepest, d)
        args += a
        ops += o
    return length, deepest, args, ops


# ---------------------------------------------------------------------------------------- reading
def parse_pairs(text):
    """The printed string as nested pairs: '( x y )' -> (x, y); tokens other than parentheses as strings."""
    toks = text.split()
    pos = 0

    def item():
        nonlocal pos
        if pos >= len(toks):
            raise ValueError("ends early")
        t = toks[pos]
        pos += 1
        if t != "(":
            if t == ")":
                raise ValueError("unexpected ')'")
            return t
        left = item()
        right = item()
        if pos >= len(toks) or toks[pos] != ")":
            raise ValueError("a pair must end with ')'")
        pos += 1
        return (left, right)

    tree = item()
    if pos != len(toks):
        raise ValueError("text after the expression")
    return tree


def evaluate(text):
    """Value of a printed sequence, and the tree (op, [children]) it denotes."""

    def unfold(p):
        # A pair is either (open application, argument) or (open application, ']'); an open application
        # is (operator, first argument) or (open application, next argument).
        if isinstance(p, str):
            if p.isdigit() and len(p) == 1:
                return int(p)
            raise ValueError("bad token %r" % p)
        left, right = p
        if right != END:
            raise ValueError("an operator must end with ']'")
        args = []
        while isinstance(left, tuple):
            left, arg = left
            args.append(unfold(arg))
        if left not in OPS:
            raise ValueError("bad operator %r" % left)
        return (left, args[::-1])

    tree = unfold(parse_pairs(text))
    return value(tree), tree


# ---------------------------------------------------------------------------------------- drawing
def draw(rng, depth, max_depth, max_args):
    if depth < max_depth and rng.random() <= 0.25:
        k = rng.randint(2, max_args)
        kids = [draw(rng, depth + 1, max_depth, max_args) for _ in range(k)]
        return (rng.choice(OPS), kids)
    return rng.randrange(10)


HAND = [
    # (source, value, note)
    ("( ( ( [MAX 2 ) 9 ) ] )", 9, "MAX(2, 9): the example of the task text"),
    ("( ( ( [MIN 2 ) 9 ) ] )", 2, "MIN"),
    ("( ( ( ( ( [MED 1 ) 2 ) 3 ) 4 ) ] )", 2, "MED even count: (2 + 3) / 2 = 2.5 -> 2"),
    ("( ( ( [MED 0 ) 9 ) ] )", 4, "MED even count: 4.5 -> 4"),
    ("( ( ( [MED 7 ) 8 ) ] )", 7, "MED even count: 7.5 -> 7"),
    ("( ( ( ( [MED 9 ) 1 ) 5 ) ] )", 5, "MED odd count, unsorted"),
    ("( ( ( ( ( [MED 3 ) 3 ) 8 ) 8 ) ] )", 5, "MED even count with repeats: 5.5 -> 5"),
    ("( ( ( ( [SM 9 ) 9 ) 9 ) ] )", 7, "SM wraps: 27 % 10"),
    ("( ( ( [SM 5 ) 5 ) ] )", 0, "SM to zero"),
    ("7", 7, "a lone value"),
    ("( ( ( [MAX ( ( ( [MIN 4 ) 6 ) ] ) ) 3 ) ] )", 4, "nested first argument"),
    ("( ( ( ( ( ( ( ( ( ( ( [SM 1 ) 2 ) 3 ) 4 ) 5 ) 6 ) 7 ) 8 ) 9 ) 9 ) ] )", 4, "ten arguments: 54 % 10"),
]


def fixture(path):
    rows = [(s, v) for s, v, _ in HAND]
    for s, v, note in HAND:
        got, _ = evaluate(s)
        assert got == v, (s, got, v, note)
    rng = random.Random(20240917)
    seen = set(s for s, _ in rows)
    small = big = 0
    # random trees of every size: 40 short ones (any length) and 4 of LRA's lengths (500 < length < 2000)
    while small < 40 or big < 4:
        tree = draw(rng, 1, 10, 10)
        length = measure(tree)[0]
        s = show(tree)
        if s in seen or isinstance(tree, int):
            continue
        if 500 < length < 2000 and big < 4:
            big += 1
        elif length <= 200 and small < 40:
            small += 1
        else:
            continue
        seen.add(s)
        v, back = evaluate(s)
        assert back == tree and v == value(tree)
        rows.append((s, v))
    with open(path, "w") as f:
        f.write("Source\tTarget\n")
        for s, v in rows:
            f.write("%s\t%d\n" % (s, v))
    print("wrote %s: %d rows (%d hand-made, %d drawn)" % (path, len(rows), len(HAND), len(rows) - len(HAND)))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def check(paths):
    ok = True
    sources = {}  # sha256 of each source -> where it was first seen
    dups = 0
    lengths, depths, labels, ops, args = [], Counter(), Counter(), Counter(), Counter()
    for path in paths:
        with open(path, newline="") as f:
            lines = f.read().split("\n")
        if lines[-1] == "":
            lines.pop()
        if lines[0] != "Source\tTarget":
            print("%s: header %r" % (path, lines[0]))
            ok = False
        for i, line in enumerate(lines[1:], start=2):
            src, tgt = line.split("\t")
            v, tree = evaluate(src)
            length, depth, a, o = measure(tree)
            where = "%s:%d" % (path, i)
            if int(tgt) != v:
                print("%s: Target %s, evaluates to %d" % (where, tgt, v))
                ok = False
            if not 500 < length < 2000 or depth > 10 or min(a) < 2 or max(a) > 10:
                print("%s: length %d depth %d arguments %d..%d" % (where, length, depth, min(a), max(a)))
                ok = False
            key = hashlib.sha256(src.encode()).digest()
            if key in sources:
                print("%s: duplicate of %s" % (where, sources[key]))
                dups += 1
                ok = False
            sources[key] = where
            lengths.append(length)
            depths[depth] += 1
            labels[v] += 1
            ops += o
            args.update(a)
    n = len(lengths)
    print("sequences %d in %d file(s), duplicates (within and across the files): %d" % (n, len(paths), dups))
    print("length: min %d, p10 %d, p25 %d, median %d, p75 %d, p90 %d, max %d, mean %.1f" % (
        min(lengths), pct(lengths, 0.1), pct(lengths, 0.25), pct(lengths, 0.5), pct(lengths, 0.75),
        pct(lengths, 0.9), max(lengths), sum(lengths) / n))
    edges = [500, 750, 1000, 1250, 1500, 1750, 2000]
    hist = ["%d-%d: %.1f%%" % (lo + 1, hi - 1 if hi == 2000 else hi,
                                100.0 * sum(lo < x <= hi and x < 2000 for x in lengths) / n)
            for lo, hi in zip(edges, edges[1:])]
    print("length histogram: " + ", ".join(hist))
    print("depth: " + ", ".join("%d: %.1f%%" % (d, 100.0 * depths[d] / n) for d in sorted(depths)))
    tot = sum(ops.values())
    print("operators: " + ", ".join("%s %.2f%%" % (op[1:], 100.0 * ops[op] / tot) for op in OPS) +
          " (%d in all)" % tot)
    tota = sum(args.values())
    print("arguments per operator: " + ", ".join("%d: %.2f%%" % (k, 100.0 * args[k] / tota) for k in sorted(args)))
    print("labels: " + ", ".join("%d: %.2f%%" % (v, 100.0 * labels[v] / n) for v in range(10)))
    return ok


def main(argv):
    if len(argv) >= 2 and argv[1] == "fixture":
        fixture(argv[2] if len(argv) > 2 else "tests/fixtures/listops_ref.tsv")
        return 0
    if len(argv) >= 3 and argv[1] == "check":
        return 0 if check(argv[2:]) else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
