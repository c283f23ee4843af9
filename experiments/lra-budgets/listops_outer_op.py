"""How far the outermost operator alone goes on ListOps: predict, for each test sequence, the most frequent
label among training sequences with the same outermost operator (the first [MIN / [MAX / [MED / [SM token
of the printed sequence). experiments/lra-hour/README.md quotes it to explain why ~36% is what LRA's models reach and why a
kind whose [CLS] sees the first 64 tokens learns it quickly. Plain python3.
usage: python3 experiments/lra-budgets/listops_outer_op.py TRAIN.tsv TEST.tsv [N_TRAIN]   (files written by `longctx listops`)"""
import collections
import sys


def rows(path, limit=None):
    with open(path) as f:
        f.readline()  # header: Source, Target
        for i, line in enumerate(f):
            if limit is not None and i >= limit:
                break
            source, target = line.rstrip("\r\n").split("\t")
            yield source.split(), target


def outer(tokens):
    return next(t for t in tokens if t.startswith("["))


def main(train, test, n_train=30000):
    by_op = collections.defaultdict(collections.Counter)
    for tokens, label in rows(train, n_train):
        by_op[outer(tokens)][label] += 1
    guess = {op: c.most_common(1)[0][0] for op, c in by_op.items()}
    hits = total = 0
    for tokens, label in rows(test):
        total += 1
        hits += guess[outer(tokens)] == label
    for op in sorted(by_op):
        c = by_op[op]
        print(f"{op:5s} {sum(c.values()):6d} training rows, most frequent label {guess[op]} "
              f"({100 * c[guess[op]] / sum(c.values()):.1f}%)")
    print(f"outermost operator -> its most frequent label: {100 * hits / total:.2f}% of {total} test rows")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 30000)
