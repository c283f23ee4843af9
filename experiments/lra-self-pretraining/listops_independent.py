#!/usr/bin/env python3
"""A ListOps split drawn by the project's independent Python implementation (tests/reference/listops_ref.py: its
sampler, printer and evaluator, written from the task's definition, not from the C generator), with LRA's
bounds: depth at most 10, at most 10 arguments, 500 < length < 2000, no duplicates. A check of a ListOps model
on trees the C generator never wrote (experiments/lra-self-pretraining, "ListOps: the bracket depth").
usage: python3 listops_independent.py N SEED OUT.tsv"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
import listops_ref as ref  # noqa: E402


def main():
    n, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    seen, rows = set(), []
    while len(rows) < n:
        tree = ref.draw(rng, 1, 10, 10)
        length = ref.measure(tree)[0]
        if not 500 < length < 2000:
            continue
        text = ref.show(tree)
        if text in seen:
            continue
        seen.add(text)
        rows.append("%s\t%d" % (text, ref.value(tree)))
    with open(out, "w") as f:
        f.write("Source\tTarget\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
