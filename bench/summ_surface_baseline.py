#!/usr/bin/env python3
"""A surface-feature baseline for extractive summarization on BBC News (docs/hibert.md, "Results").

Logistic regression on 22 features of a sentence that need no model of its words: its position (one-hot
for the first 8, relative position, last), its length in words (7 bins), whether it holds a double quote,
starts with one, holds " said" or a digit. Trained by full-batch gradient descent on the train split's
contained labels; evaluated like `longctx eval --task summarize`: the top k scored sentences (k = the
number of contained reference sentences) in document order, ROUGE-1/2/L F1 averaged over documents.
It reads the corpus with the same rules as src/summ (sentence rule, split, Latin-1 fallback) and scores
with its own ROUGE (tokens [a-z0-9]+ after lower-casing; ROUGE-L one LCS over the whole sequences).
Needs numpy: /usr/bin/python3 bench/summ_surface_baseline.py [BBC_ROOT]
"""
import collections
import os
import re
import sys

import numpy as np

ROOT = sys.argv[1] if len(sys.argv) > 1 else "data/bbc-news-summary"


def read(path):
    raw = open(path, "rb").read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def sentences(body):
    text = re.sub(r"[ \t\n\v\f\r]+", " ", body).strip()
    out, start = [], 0
    for m in re.finditer(r"[.!?] (?=[A-Z\"'])", text):
        out.append(text[start:m.start() + 1])
        start = m.end()
    out.append(text[start:])
    return [s for s in out if s]


def tokens(s):
    return re.findall(r"[a-z0-9]+", s.lower())


def ngram_f1(c, r, n):
    cg = collections.Counter(tuple(c[i:i + n]) for i in range(len(c) - n + 1))
    rg = collections.Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
    total = sum(cg.values()) + sum(rg.values())
    return 2 * sum((cg & rg).values()) / total if total else 0.0


def lcs_f1(c, r):
    if not c or not r:
        return 0.0
    prev = [0] * (len(r) + 1)
    for x in c:
        cur = [0]
        for j, y in enumerate(r):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return 2 * prev[-1] / (len(c) + len(r))


def features(sents):
    n, rows = len(sents), []
    for j, s in enumerate(sents):
        w = len(s.split())
        f = [1.0] + [float(j == k) for k in range(8)] + [j / n, float(j == n - 1)]
        f += [float(lo <= w < hi) for lo, hi in [(0, 10), (10, 15), (15, 20), (20, 25), (25, 30), (30, 40), (40, 1 << 30)]]
        f += [float('"' in s), float(s.startswith('"')), float(" said" in s), float(bool(re.search(r"\d", s)))]
        rows.append(f)
    return np.array(rows)


def main():
    paths = sorted(f"{t}/{f}" for t in os.listdir(f"{ROOT}/articles") for f in os.listdir(f"{ROOT}/articles/{t}")
                   if f.endswith(".txt"))
    docs = []
    for i, p in enumerate(paths):
        article, ref = read(f"{ROOT}/articles/{p}"), read(f"{ROOT}/summaries/{p}")
        sents = sentences(article.split("\n", 1)[1] if "\n" in article else "")
        docs.append((i % 10, sents, ref, np.array([float(s in ref) for s in sents])))
    train = [d for d in docs if d[0] not in (0, 5)]
    x = np.concatenate([features(d[1]) for d in train])
    y = np.concatenate([d[3] for d in train])
    w = np.zeros(x.shape[1])
    for _ in range(3000):
        w -= 0.5 * x.T @ (1 / (1 + np.exp(-x @ w)) - y) / len(y)
    p = 1 / (1 + np.exp(-x @ w))
    print(f"train BCE {-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)):.4f} (label entropy "
          f"{-(y.mean() * np.log(y.mean()) + (1 - y.mean()) * np.log(1 - y.mean())):.4f})")
    for part, name in [(5, "valid"), (0, "test")]:
        scores = []
        for _, sents, ref, lab in (d for d in docs if d[0] == part):
            k = int(lab.sum())
            top = sorted(np.argsort(-(features(sents) @ w), kind="stable")[:k])
            c, r = tokens(" ".join(sents[j] for j in top)), tokens(ref)
            scores.append((ngram_f1(c, r, 1), ngram_f1(c, r, 2), lcs_f1(c, r)))
        r1, r2, rl = 100 * np.mean(scores, axis=0)
        print(f"{name} ({len(scores)} docs): ROUGE-1 {r1:.2f} ROUGE-2 {r2:.2f} ROUGE-L {rl:.2f}")


if __name__ == "__main__":
    main()
