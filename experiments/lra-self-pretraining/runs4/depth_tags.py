#!/usr/bin/env python3
"""The first probe of "ListOps: the bracket depth" (run s1): each token of a ListOps TSV (stdin, parentheses dropped or
not) written as TOKEN@DEPTH, its square-bracket depth (capped at 12), so that `--tokens words` gives every
(token, depth) pair its own embedding row. `--bracket-depth` does this inside the classifier since.
usage: python3 depth_tags.py < in.tsv > out.tsv"""
import sys

for i, line in enumerate(sys.stdin):
    if i == 0:
        sys.stdout.write(line)
        continue
    text, label = line.rstrip("\n").split("\t")
    depth, out = 0, []
    for tok in text.replace("(", " ").replace(")", " ").split():
        depth += tok.startswith("[")
        out.append("%s@%d" % (tok, min(depth, 12)))
        depth -= tok == "]"
    sys.stdout.write(" ".join(out) + "\t" + label + "\n")
