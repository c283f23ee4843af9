#!/usr/bin/env python3
"""A surface-feature baseline for extractive summarization on BBC News (docs/results/summarization.md).

Logistic regression on 22 features of a sentence that need no model of its words: its position (one-hot
for the first 8, relative position, last), its length in words (7 bins), whether it holds a double quote,
starts with one, holds " said" or a digit. Trained by full-batch gradient descent on the train split's
contained labels; evaluated like `longctx eval --task summarize`: the top k scored sentences (k = the
number of contained reference sentences) in document order, ROUGE-1/2/L F1 averaged over documents, with
the mean tokens of the picks and the share of the picks that are contained.
It reads the corpus with the same rules as src/summ (sentence rule, split, Latin-1 fallback) and scores
with its own ROUGE (tokens [a-z0-9]+ after lower-casing; ROUGE-L one LCS over the whole sequences).

Two more rows explain what the labels reward (experiments/hibert-gap/README.md):
  --centrality   adds 3 content features: mean cosine similarity of the sentence's word counts to the other
                 sentences' (LexRank's graph degree), mean document frequency of its words over the
                 document's largest, cosine similarity to the title's words;
  --frequency    no training: score a sentence by the mean document frequency (over the largest) of its
                 words outside a short stop list, the classic word-frequency summarizer.
  --lexrank      no training: LexRank (Erkan and Radev 2004) with a threshold, as its paper defines it:
                 idf-modified cosine between the document's sentences (idf over the train split's
                 articles), an edge where it exceeds 0.1, PageRank with damping 0.85 on the degree-
                 normalized graph (power iteration to 1e-8), scores compared as float32 with the
                 earlier sentence first on a tie: the definition of `longctx eval --task summarize --method lexrank`, implemented
                 independently (tests/cli_summary_test.sh compares the two); not the implementation
                 behind the issue's 68.7 / 58.5 / 44.2.
Needs numpy: /usr/bin/python3 bench/summ_surface_baseline.py [--centrality | --frequency | --lexrank] [BBC_ROOT]
"""
import collections
import os
import re
import sys

import numpy as np

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
CENTRALITY, FREQUENCY, LEXRANK = "--centrality" in sys.argv, "--frequency" in sys.argv, "--lexrank" in sys.argv
ROOT = ARGS[0] if ARGS else "data/bbc-news-summary"
STOP = set("the a an of to in and or is are was were be been for on at by with from that this it its as he she they "
           "we i you his her their our but not have has had will would said says".split())


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


def cosine(a, b):
    num = sum(v * b[w] for w, v in a.items() if w in b)
    den = np.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return num / den if den else 0.0


def frequency_scores(sents):
    """Mean document frequency (over the largest) of the sentence's words outside STOP."""
    words = [[w for w in tokens(s) if w not in STOP] for s in sents]
    tf = collections.Counter(w for ws in words for w in ws)
    top = max(tf.values()) if tf else 1
    return np.array([np.mean([tf[w] / top for w in ws]) if ws else 0.0 for ws in words])


def lexrank_scores(sents, idf, threshold=0.1, damping=0.85):
    """LexRank with a threshold: stationary distribution of the random walk on the sentences' graph."""
    bags = [collections.Counter(tokens(s)) for s in sents]
    vec = [{w: c * idf.get(w, idf[None]) for w, c in b.items()} for b in bags]
    n = len(sents)
    adj = np.array([[float(cosine(vec[i], vec[j]) > threshold) for j in range(n)] for i in range(n)])
    deg = adj.sum(1, keepdims=True)  # >= 1: every non-empty sentence links to itself
    walk = np.divide(adj, deg, out=np.full_like(adj, 1.0 / n), where=deg > 0)
    p = np.full(n, 1.0 / n)
    for _ in range(1000):
        nxt = (1 - damping) / n + damping * walk.T @ p
        if np.abs(nxt - p).sum() < 1e-8:
            return nxt
        p = nxt
    return p


def centrality(sents, title):
    bags = [collections.Counter(tokens(s)) for s in sents]
    tf = collections.Counter(w for s in sents for w in tokens(s))
    top, tb = max(tf.values()) if tf else 1, collections.Counter(tokens(title))
    rows = []
    for j, b in enumerate(bags):
        others = [cosine(b, c) for k, c in enumerate(bags) if k != j]
        freq = np.mean([tf[w] for w in b.elements()]) / top if b else 0.0
        rows.append([np.mean(others) if others else 0.0, freq, cosine(b, tb)])
    return np.array(rows)


def features(sents, title):
    n, rows = len(sents), []
    for j, s in enumerate(sents):
        w = len(s.split())
        f = [1.0] + [float(j == k) for k in range(8)] + [j / n, float(j == n - 1)]
        f += [float(lo <= w < hi) for lo, hi in [(0, 10), (10, 15), (15, 20), (20, 25), (25, 30), (30, 40), (40, 1 << 30)]]
        f += [float('"' in s), float(s.startswith('"')), float(" said" in s), float(bool(re.search(r"\d", s)))]
        rows.append(f)
    return np.concatenate([np.array(rows), centrality(sents, title)], 1) if CENTRALITY else np.array(rows)


def main():
    paths = sorted(f"{t}/{f}" for t in os.listdir(f"{ROOT}/articles") for f in os.listdir(f"{ROOT}/articles/{t}")
                   if f.endswith(".txt"))
    docs = []
    for i, p in enumerate(paths):
        article, ref = read(f"{ROOT}/articles/{p}"), read(f"{ROOT}/summaries/{p}")
        title, body = article.split("\n", 1) if "\n" in article else (article, "")
        sents = sentences(body)
        docs.append((i % 10, sents, ref, np.array([float(s in ref) for s in sents]), features(sents, title)))
    train = [d for d in docs if d[0] not in (0, 5)]
    df = collections.Counter(w for d in train for w in set(tokens(" ".join(d[1]))))
    idf = {w: np.log(len(train) / c) for w, c in df.items()}
    idf[None] = np.log(len(train))  # a word no training article has
    x = np.concatenate([d[4] for d in train])
    y = np.concatenate([d[3] for d in train])
    mu, sd = x[:, 1:].mean(0), x[:, 1:].std(0) + 1e-9  # standardized (the constant column kept)
    norm = lambda f: np.concatenate([f[:, :1], (f[:, 1:] - mu) / sd], 1)
    w, xn = np.zeros(x.shape[1]), norm(x)
    for _ in range(0 if FREQUENCY or LEXRANK else 3000):
        w -= 0.5 * xn.T @ (1 / (1 + np.exp(-xn @ w)) - y) / len(y)
    if not (FREQUENCY or LEXRANK):
        p = 1 / (1 + np.exp(-xn @ w))
        print(f"train BCE {-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)):.4f} (label entropy "
              f"{-(y.mean() * np.log(y.mean()) + (1 - y.mean()) * np.log(1 - y.mean())):.4f})")
    for part, name in [(5, "valid"), (0, "test")]:
        scores = []
        for _, sents, ref, lab, f in (d for d in docs if d[0] == part):
            k = int(lab.sum())
            score = (frequency_scores(sents) if FREQUENCY else lexrank_scores(sents, idf) if LEXRANK else
                     norm(f) @ w)
            if LEXRANK:  # as the C (lc_top_k): compared as float32, the earlier sentence first on a tie
                score = score.astype(np.float32)
            top = sorted(np.argsort(-score, kind="stable")[:k])
            c, r = tokens(" ".join(sents[j] for j in top)), tokens(ref)
            scores.append((ngram_f1(c, r, 1), ngram_f1(c, r, 2), lcs_f1(c, r), len(c), lab[top].mean()))
        r1, r2, rl, picked, share = np.mean(scores, axis=0) * [100, 100, 100, 1, 1]
        print(f"{name} ({len(scores)} docs): ROUGE-1 {r1:.2f} ROUGE-2 {r2:.2f} ROUGE-L {rl:.2f} "
              f"(picks: {picked:.1f} tokens, {share:.3f} contained)")


if __name__ == "__main__":
    main()
