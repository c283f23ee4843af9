#!/usr/bin/env python3
"""What a fine-tuned HIBERT checkpoint picks on the BBC splits, and how ROUGE moves when the ranking favours
long sentences (experiments/hibert-greedy/README.md, "Greedy labels and long sentences").

For the valid and test splits: the checkpoint's ROUGE-1/2/L with the top k sentences (k = the contained
reference sentences, as `longctx eval --task summarize`), the tokens its picks hold, the share of its picks
that are contained in the reference, and the same ROUGE when sentence i is ranked by
    logit_i + BETA * ln(1 + tokens_i)
for each BETA given (BETA = 0 is the checkpoint's own ranking). The logits come from
`longctx summarize --scores`; ROUGE, the sentence rule and the split from tests/reference/rouge_ref.py, the
independent Python implementation the C tests are checked against.

    /usr/bin/python3 experiments/hibert-greedy/hibert_picks.py CKPT [BETA ...]    (from the repository root, after `make`)

`--labels` instead compares the two label rules of fine-tuning on the train split: sentences per article that
are contained, greedy (the ROUGE oracle of `--labels greedy`) and both, and the mean tokens of each kind.
"""
import math
import os
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")  # as if in bench/: paths from the repository root
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import rouge_ref as R  # noqa: E402

ROOT = os.path.join(HERE, "..", "data", "bbc-news-summary")
BIN = os.environ.get("LONGCTX", os.path.join(HERE, "..", "longctx"))


def split_docs(split):
    """Each document of the split: (sentences, reference, labels, logits)."""
    rels = [r for i, r in enumerate(R.bbc_documents(ROOT)) if R.part_of(i) == split]
    files = [os.path.join(ROOT, "articles", r) for r in rels]
    out = subprocess.run([BIN, "summarize", "--ckpt", CKPT, "--title", "--scores", "--threads", "1"] + files,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    logits = []
    for line in out:
        if line.startswith("==> "):
            logits.append([])
        elif line:
            logits[-1].append(float(line.split("\t")[0]))
    docs = []
    for rel, lg in zip(rels, logits):
        sents, ref = R.bbc_document(ROOT, rel)
        if len(sents) != len(lg):
            sys.exit("%s: %d sentences here, %d scores from longctx" % (rel, len(sents), len(lg)))
        docs.append((sents, R.tokens(ref), R.contained(sents, ref), lg, [R.tokens(s) for s in sents]))
    return docs


def score(docs, beta):
    """Mean ROUGE-1/2/L F1 (%), picked tokens and contained share of the picks, ranking by logit + beta ln(1+n)."""
    tot = [0.0] * 5
    for sents, ref, labels, lg, toks in docs:
        k = sum(labels)
        key = [lg[i] + beta * math.log1p(len(toks[i])) for i in range(len(sents))]
        pick = sorted(sorted(range(len(sents)), key=lambda i: (-key[i], i))[:k])
        cand = [w for i in pick for w in toks[i]]
        r1, r2 = R.rouge_n(cand, ref, 1)[2], R.rouge_n(cand, ref, 2)[2]
        rl = R.prf(R.lcs(cand, ref), len(cand), len(ref))[2]
        for j, x in enumerate((100 * r1, 100 * r2, 100 * rl, len(cand), sum(labels[i] for i in pick) / k)):
            tot[j] += x
    return [x / len(docs) for x in tot]


def label_rules():
    n = [0.0] * 7  # articles, contained, greedy, both; tokens of contained, greedy, all sentences
    for i, rel in enumerate(R.bbc_documents(ROOT)):
        if R.part_of(i) != "train":
            continue
        sents, ref = R.bbc_document(ROOT, rel)
        c, g, t = R.contained(sents, ref), R.greedy(sents, ref), [len(R.tokens(x)) for x in sents]
        for j, x in enumerate((1, sum(c), sum(g), sum(a & b for a, b in zip(c, g)))):
            n[j] += x
        n[4] += sum(x for x, a in zip(t, c) if a)
        n[5] += sum(x for x, a in zip(t, g) if a)
        n[6] += sum(t) / len(t)
    print("train articles %d: per article %.2f contained, %.2f greedy, %.2f both; tokens per contained sentence "
          "%.1f, per greedy one %.1f, per sentence of an article %.1f (mean over articles)" %
          (n[0], n[1] / n[0], n[2] / n[0], n[3] / n[0], n[4] / n[1], n[5] / n[2], n[6] / n[0]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--labels":
        sys.exit(label_rules())
    CKPT = sys.argv[1]
    betas = [float(b) for b in sys.argv[2:]] or [0.0]
    data = {s: split_docs(s) for s in ("valid", "test")}
    print("beta\tsplit\tROUGE-1\tROUGE-2\tROUGE-L\tpicked tokens\tcontained share")
    for b in betas:
        for s in ("valid", "test"):
            r = score(data[s], b)
            print("%g\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.3f" % (b, s, r[0], r[1], r[2], r[3], r[4]), flush=True)
