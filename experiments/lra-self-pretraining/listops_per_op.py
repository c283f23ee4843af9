#!/usr/bin/env python3
"""A ListOps model's accuracy by the tree's outermost operator (experiments/lra-self-pretraining, "ListOps: the
bracket depth").
usage: longctx predict --ckpt MODEL --tsv FILE.tsv > PRED; python3 listops_per_op.py FILE.tsv PRED"""
import collections
import sys

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
pred = [line.strip() for line in open(sys.argv[2])]
if len(rows) != len(pred):
    sys.exit("%s has %d rows, %s %d predictions" % (sys.argv[1], len(rows), sys.argv[2], len(pred)))
total, right = collections.Counter(), collections.Counter()
for (text, label), p in zip(rows, pred):
    op = next(w for w in text.split() if w.startswith("["))[1:]
    total[op] += 1
    right[op] += p == label
for op in sorted(total):
    print("%-3s %5d  %.3f" % (op, total[op], right[op] / total[op]))
print("all %5d  %.4f" % (len(rows), sum(right.values()) / len(rows)))
