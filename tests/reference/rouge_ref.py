#!/usr/bin/env python3
"""Independent Python reference for longctx's summarization data and evaluation (src/summ), written from
the definitions in docs/results/summarization-protocol.md, not from the C code: ROUGE-1/2/L, the sentence rule, contained labels,
the greedy ROUGE oracle and the BBC News Summary split. Standard library only.

  python3 tests/reference/rouge_ref.py fixtures [DIR]   writes DIR/rouge_cases.tsv and DIR/rouge_oracle.tsv
                                                        (default tests/fixtures), read by tests/test_summary.c
  python3 tests/reference/rouge_ref.py bbc ROOT [SPLIT] prints lead3 / leadk / oracle / greedy ROUGE on a split
                                                        (default test) and corpus counts, to compare with
                                                        `longctx eval --task summarize`

Definitions:
- text files: UTF-8; a file that does not decode as UTF-8 is decoded as Latin-1.
- tokens: the bytes A-Z mapped to a-z, then the maximal runs of [a-z0-9]; nothing else is a token.
- ROUGE-N: multiset intersection of n-gram counts (clipped), P = overlap / candidate n-grams,
  R = overlap / reference n-grams, F1 = 2PR / (P + R) (0 when the overlap is 0).
- ROUGE-L: same with the length of the longest common subsequence of the whole token lists.
- sentences: whitespace runs -> one space, stripped; split after . ! ? when a space then [A-Z"'] follow.
- contained: the sentence is a substring of the reference text as read.
- greedy oracle: from the empty set, add the sentence (earliest on ties) that gives the largest
  ROUGE-1 F1 + ROUGE-2 F1 of the chosen sentences joined in document order by a space; stop when the best
  candidate does not beat the current score by more than 1e-12.
- split: documents sorted by path under articles/; index % 10 == 0 test, == 5 valid, else train.
"""
import os
import random
import re
import sys
from collections import Counter

TOKEN = re.compile(rb"[a-z0-9]+")
SPACE = re.compile(r"[ \t\n\v\f\r]+")
BOUNDARY = re.compile(r"(?<=[.!?]) (?=[A-Z\"'])")
EPS = 1e-12


def tokens(text):
    data = text.encode("utf-8") if isinstance(text, str) else text
    lowered = bytes(b + 32 if 65 <= b <= 90 else b for b in data)
    return [t.decode("ascii") for t in TOKEN.findall(lowered)]


def ngrams(toks, n):
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def prf(overlap, cand, ref):
    p = overlap / cand if cand else 0.0
    r = overlap / ref if ref else 0.0
    f = 2 * p * r / (p + r) if overlap else 0.0
    return p, r, f


def rouge_n(cand, ref, n):
    c, r = ngrams(cand, n), ngrams(ref, n)
    overlap = sum((c & r).values())
    return prf(overlap, sum(c.values()), sum(r.values()))


def lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    return table[len(a)][len(b)]


def rouge(candidate, reference):
    """((P, R, F) of ROUGE-1, ROUGE-2, ROUGE-L), fractions."""
    c, r = tokens(candidate), tokens(reference)
    return rouge_n(c, r, 1), rouge_n(c, r, 2), prf(lcs(c, r), len(c), len(r))


def sentences(text):
    text = SPACE.sub(" ", text).strip(" ")
    return BOUNDARY.split(text) if text else []


def contained(sents, reference):
    return [1 if s and s in reference else 0 for s in sents]


def greedy(sents, reference):
    ref = tokens(reference)
    ref1, ref2 = ngrams(ref, 1), ngrams(ref, 2)
    n1, n2 = sum(ref1.values()), sum(ref2.values())

    def score(chosen):
        c = tokens(" ".join(sents[i] for i in sorted(chosen)))
        f1 = sum((ngrams(c, 1) & ref1).values())
        f2 = sum((ngrams(c, 2) & ref2).values())
        # F1 as 2 o / (c + r), the same value as 2PR / (P + R), computed the way the C side does so
        # near-ties compare alike
        s1 = 2 * f1 / (len(c) + n1) if f1 else 0.0
        s2 = 2 * f2 / (max(len(c) - 1, 0) + n2) if f2 else 0.0
        return s1 + s2

    chosen, current = set(), 0.0
    while True:
        best, best_score = None, 0.0
        for i in range(len(sents)):
            if i in chosen or not tokens(sents[i]):
                continue
            s = score(chosen | {i})
            if best is None or s > best_score + EPS:
                best, best_score = i, s
        if best is None or best_score <= current + EPS:
            break
        chosen.add(best)
        current = best_score
    return [1 if i in chosen else 0 for i in range(len(sents))]


def read_text(path):
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text[1:] if text.startswith("\ufeff") else text


def bbc_documents(root):
    rel = []
    for dirpath, _, files in os.walk(os.path.join(root, "articles")):
        for f in files:
            if f.endswith(".txt") and not f.startswith("."):
                rel.append(os.path.relpath(os.path.join(dirpath, f), os.path.join(root, "articles")))
    rel.sort(key=lambda p: p.encode())
    return rel


def part_of(i):
    return "test" if i % 10 == 0 else "valid" if i % 10 == 5 else "train"


def bbc_document(root, rel):
    article = read_text(os.path.join(root, "articles", rel))
    body = article.split("\n", 1)[1] if "\n" in article else ""
    return sentences(body), read_text(os.path.join(root, "summaries", rel))


def flat(text):
    """A text as one TSV field: tabs and line breaks become spaces (ROUGE tokens do not change)."""
    return re.sub(r"[\t\r\n]", " ", text)


def fmt(x):
    return repr(float(x))


def write_fixtures(outdir):
    rng = random.Random(20240510)
    cases = [
        # hand cases; the same values are worked out by hand in tests/test_summary.c
        ("the cat sat on the mat", "the cat sat on the mat"),
        ("the cat sat on the mat", "a dog ran"),
        ("", "the cat"),
        ("the cat", ""),
        ("...!!", "the cat"),
        ("The CAT, the cat.", "the cat the dog"),
        ("the the the the", "the cat the"),
        ("Profits rose 3.5% to $1.13bn (\u00a3600m).", "profits rose to 1.13bn, 600m"),
        ("caf\u00e9 society", "cafe society caf"),
        ("a b c d e", "e d c b a"),
        ("police killed the gunman", "police kill the gunman"),
        ("the gunman kill police", "police kill the gunman"),
    ]
    words = ["the", "The", "cat", "CAT", "sat", "on", "mat", "a", "dog", "ran", "2005", "bn", "\u00a3", "caf\u00e9"]
    for _ in range(40):
        def text():
            out = []
            for _ in range(rng.randint(0, 25)):
                out.append(rng.choice(words))
                if rng.random() < 0.2:
                    out[-1] += rng.choice([".", ",", "!", "'s", "-"])
            return " ".join(out)
        cases.append((text(), text()))
    root = "data/bbc-news-summary"
    docs = bbc_documents(root) if os.path.isdir(root) else []
    for i in range(5, len(docs), 445)[:5]:
        sents, summary = bbc_document(root, docs[i])
        cases.append((" ".join(sents[:3]), summary))
    with open(os.path.join(outdir, "rouge_cases.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# candidate\treference\tr1_p\tr1_r\tr1_f\tr2_p\tr2_r\tr2_f\trl_p\trl_r\trl_f"
                " (made by tests/reference/rouge_ref.py)\n")
        for cand, ref in cases:
            scores = rouge(cand, ref)
            f.write("\t".join([flat(cand), flat(ref)] + [fmt(x) for s in scores for x in s]) + "\n")

    # greedy oracle cases: sentences drawn from a small vocabulary, the reference partly copies them
    oracle_cases = []
    pool = "a b c d e f g h the of police said".split()
    for _ in range(40):
        sents = [" ".join(rng.choice(pool) for _ in range(rng.randint(1, 7))).capitalize() + "."
                 for _ in range(rng.randint(1, 8))]
        ref_parts = [s for s in sents if rng.random() < 0.4]
        ref_parts += [" ".join(rng.choice(pool) for _ in range(rng.randint(0, 6)))]
        rng.shuffle(ref_parts)
        oracle_cases.append((sents, "".join(ref_parts)))
    for i in range(25, len(docs), 445)[:5]:
        oracle_cases.append(bbc_document(root, docs[i]))
    with open(os.path.join(outdir, "rouge_oracle.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# reference\tsentences joined by ' || '\tgreedy labels\tcontained labels"
                " (made by tests/reference/rouge_ref.py)\n")
        for sents, ref in oracle_cases:
            assert all("||" not in s for s in sents)
            g = "".join(str(x) for x in greedy(sents, ref))
            c = "".join(str(x) for x in contained(sents, ref))
            f.write("\t".join([flat(ref), " || ".join(flat(s) for s in sents), g, c]) + "\n")
    print("wrote %d ROUGE cases and %d oracle cases to %s" % (len(cases), len(oracle_cases), outdir))


def bbc_report(root, split):
    docs = bbc_documents(root)
    counts = Counter(part_of(i) for i in range(len(docs)))
    total_sents = total_contained = 0
    sums = {m: [0.0, 0.0, 0.0] for m in ("lead3", "leadk", "oracle", "greedy")}
    chosen = 0
    for i, rel in enumerate(docs):
        sents, ref = bbc_document(root, rel)
        labels = contained(sents, ref)
        total_sents += len(sents)
        total_contained += sum(labels)
        if part_of(i) != split:
            continue
        chosen += 1
        k = sum(labels)
        picks = {"lead3": [1 if j < 3 else 0 for j in range(len(sents))],
                 "leadk": [1 if j < k else 0 for j in range(len(sents))],
                 "oracle": labels, "greedy": greedy(sents, ref)}
        for m, pick in picks.items():
            cand = " ".join(s for s, p in zip(sents, pick) if p)
            for j, s in enumerate(rouge(cand, ref)):
                sums[m][j] += s[2]
    print("documents %d (test %d, valid %d, train %d), sentences %d, contained %d"
          % (len(docs), counts["test"], counts["valid"], counts["train"], total_sents, total_contained))
    for m, s in sums.items():
        print("%s %s: ROUGE-1 %.4f ROUGE-2 %.4f ROUGE-L %.4f over %d documents"
              % (split, m, *(100 * x / chosen for x in s), chosen))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "fixtures":
        write_fixtures(sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures")
    elif len(sys.argv) >= 3 and sys.argv[1] == "bbc":
        bbc_report(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "test")
    else:
        sys.exit(__doc__)
