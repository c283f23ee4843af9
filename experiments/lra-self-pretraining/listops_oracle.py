#!/usr/bin/env python3
"""What a ListOps model that evaluates only the top k levels of each tree would score (experiments/lra-self-pretraining,
"ListOps: the bracket depth"). Every node deeper than k is replaced by the most frequent value of its operator over
the file; with "no SM" every sum modulo 10 also gets that value (a model that never learns SM). Also: a model
right on MAX, MIN and MED at every depth and at chance on SM, and the same bounds per root operator.
usage: python3 listops_oracle.py FILE.tsv   (longctx listops output; parentheses or not)"""
import collections
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
import listops_ref as ref  # noqa: E402


def parse(toks):
    pos = 0

    def node():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if not t.startswith("["):
            return int(t)
        args = []
        while toks[pos] != "]":
            args.append(node())
        pos += 1
        return (t[1:], args)
    return node()


def value(op, v):
    return ref.apply("[" + op, v)  # the independent evaluator's operators


def evaluate(n, k=99, sm=True, mode=None, rng=None):
    """The tree's value with nodes below depth k (root: depth 0) at their operator's mode, SM at its mode (sm
    False) or at chance (rng)."""
    if isinstance(n, int):
        return n
    op, args = n
    if k == 0:
        return mode[op]
    v = [evaluate(a, k - 1, sm, mode, rng) for a in args]
    if op == "SM" and rng:
        return rng.randrange(10)
    if op == "SM" and not sm:
        return mode["SM"]
    return value(op, v)


def main():
    rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
    trees = [(parse(s.replace("(", " ").replace(")", " ").split()), int(t)) for s, t in rows]
    counts = collections.defaultdict(collections.Counter)

    def collect(n):
        if isinstance(n, int):
            return n
        v = value(n[0], [collect(a) for a in n[1]])
        counts[n[0]][v] += 1
        return v
    for tr, t in trees:
        assert collect(tr) == t, "a label differs from the tree's value"
    mode = {op: c.most_common(1)[0][0] for op, c in counts.items()}

    def acc(sub, **kw):
        return sum(evaluate(tr, mode=mode, **kw) == t for tr, t in sub) / len(sub)
    print("%d trees; the most frequent value of each operator: %s" % (len(trees), mode))
    print("right on MAX, MIN, MED, chance on SM: %.4f" % acc(trees, rng=random.Random(0)))
    print("k  all     no SM")
    for k in range(0, 6):
        print("%d  %.4f  %.4f" % (k, acc(trees, k=k), acc(trees, k=k, sm=False)))
    for op in ("MAX", "MIN", "MED", "SM"):
        sub = [x for x in trees if x[0][0] == op]
        print("root %-3s %4d trees: k=1 %.3f (no SM %.3f), k=2 %.3f (%.3f)" % (
            op, len(sub), acc(sub, k=1), acc(sub, k=1, sm=False), acc(sub, k=2), acc(sub, k=2, sm=False)))


if __name__ == "__main__":
    main()
