#!/usr/bin/env python3
"""Independent reference for longctx's stemmed ROUGE (`eval --task summarize --rouge stem`,
lc_rouge_score_stem, lc_porter_stem): built on NLTK's PorterStemmer in its default mode (NLTK_EXTENSIONS)
and Google's rouge-score tokenization, not on the C code. Needs python3-nltk (and numpy for LexRank); the
fixtures it writes are committed, so the C tests need neither.

  python3 tests/reference/rouge_stem_ref.py fixtures [DIR]   writes DIR/porter_words.tsv (words and NLTK's
        stems) and DIR/rouge_stem_cases.tsv (candidate, reference, stemmed P/R/F of ROUGE-1/2/L), read by
        tests/test_summary.c (default DIR tests/fixtures)
  LONGCTX=./longctx python3 tests/reference/rouge_stem_ref.py bbc [CKPT] [SPLIT] > tests/fixtures/rouge_stem_bbc.tsv
        the stemmed (and unstemmed) ROUGE of Lead-3, LexRank and CKPT's summaries (default
        models/hibert-bbc.safetensors) over a BBC split (default test), read by tests/cli_summary_test.sh

Definitions (rouge-score's tokenize with use_stemmer=True): lower-case the text, replace every run of
characters other than [a-z0-9] by a space, split, replace each token of more than 3 characters by
PorterStemmer().stem(token); ROUGE-1/2/L as tests/reference/rouge_ref.py (clipped n-gram counts, LCS of the
whole token lists, F1 = 2PR / (P + R), corpus score = the mean of the documents' F1). The sentence rule,
split and contained labels are rouge_ref.py's. Picks: Lead-3 the first 3 sentences; LexRank the top k
(k = contained sentences) by bench/summ_surface_baseline.py's numpy LexRank (idf over the train split,
threshold 0.1, damping 0.85, ranked as float32, the earlier sentence first on a tie); the checkpoint's top
k by the logits of `longctx summarize --scores` (the model runs in C; only its picks are taken).
"""
import os
import random
import re
import subprocess
import sys

from nltk.stem.porter import PorterStemmer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rouge_ref as R  # noqa: E402

STEMMER = PorterStemmer()  # NLTK_EXTENSIONS, as rouge-score's
NON_ALNUM = re.compile(r"[^a-z0-9]+")


def stem_tokens(text):
    toks = NON_ALNUM.sub(" ", text.lower()).split()
    return [STEMMER.stem(t) if len(t) > 3 else t for t in toks]


def rouge_stem(candidate, reference):
    c, r = stem_tokens(candidate), stem_tokens(reference)
    return R.rouge_n(c, r, 1), R.rouge_n(c, r, 2), R.prf(R.lcs(c, r), len(c), len(r))


HAND_WORDS = """caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized
hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci
digitizer conformabli radicalli differentli vileli analogousli vietnamization predication operator feudalism
decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative formalize electriciti
electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible irritant
replacement adjustment dependent adoption homologou communism activate angulariti homologous effective bowdlerize
probate rate cease controll roll dies flies died spied dying lying tying news innings outings cannings howe proceed
exceed succeed enjoy generously archaeology geology theology hopefully fully syzygy toy yyyy yay ayyy boyy eyes
skies says traditionally finally agreement replacement cement generalization ies eed ied sses ing ed oed oing
abcing 13bn 2005 1990s 600m g8 mp3s""".split()


def write_fixtures(outdir):
    root = os.path.join(HERE, "..", "..", "data", "bbc-news-summary")
    docs = R.bbc_documents(root)
    words = set(HAND_WORDS)
    for i, rel in enumerate(docs):  # every distinct token of the test split's articles and summaries
        if R.part_of(i) == "test":
            sents, ref = R.bbc_document(root, rel)
            words.update(NON_ALNUM.sub(" ", (" ".join(sents) + " " + ref).lower()).split())
    with open(os.path.join(outdir, "porter_words.tsv"), "w", encoding="ascii", newline="\n") as f:
        f.write("# word\tNLTK PorterStemmer().stem(word) (made by tests/reference/rouge_stem_ref.py)\n")
        for w in sorted(words):
            f.write("%s\t%s\n" % (w, STEMMER.stem(w)))
    rng = random.Random(20261205)
    cases = [("The cats were running quickly.", "A cat runs quick"),
             ("Generously, the agreements were finalised", "general agreement finalized"),
             ("news of dying", "the news: they died"), ("", "cats"), ("cats", ""), ("Ties tie", "tied ties")]
    test = [rel for i, rel in enumerate(docs) if R.part_of(i) == "test"]
    for rel in rng.sample(test, 20):
        sents, ref = R.bbc_document(root, rel)
        pick = sorted(rng.sample(range(len(sents)), min(len(sents), rng.randint(1, 4))))
        cases.append((" ".join(sents[j] for j in pick), ref))
    with open(os.path.join(outdir, "rouge_stem_cases.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# candidate\treference\tstemmed r1_p\tr1_r\tr1_f\tr2_p\tr2_r\tr2_f\trl_p\trl_r\trl_f"
                " (made by tests/reference/rouge_stem_ref.py)\n")
        for cand, ref in cases:
            scores = rouge_stem(cand, ref)
            f.write("\t".join([R.flat(cand), R.flat(ref)] + [R.fmt(x) for s in scores for x in s]) + "\n")
    print("wrote %d words and %d cases to %s" % (len(words), len(cases), outdir), file=sys.stderr)


def bbc(ckpt, split):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
    import numpy as np
    from summ_surface_baseline import lexrank_scores, tokens as surface_tokens  # noqa: F401
    root = os.path.join(HERE, "..", "..", "data", "bbc-news-summary")
    rels = R.bbc_documents(root)
    train = [R.bbc_document(root, r)[0] for i, r in enumerate(rels) if R.part_of(i) == "train"]
    df = {}
    for sents in train:
        for w in set(R.tokens(" ".join(sents))):
            df[w] = df.get(w, 0) + 1
    idf = {w: np.log(len(train) / c) for w, c in df.items()}
    idf[None] = np.log(len(train))
    chosen = [r for i, r in enumerate(rels) if R.part_of(i) == split]
    binary = os.environ.get("LONGCTX", os.path.join(HERE, "..", "..", "longctx"))
    out = subprocess.run([binary, "summarize", "--ckpt", ckpt, "--title", "--scores", "--threads", "1"]
                         + [os.path.join(root, "articles", r) for r in chosen],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    logits = []
    for line in out:
        if line.startswith("==> "):
            logits.append([])
        elif line:
            logits[-1].append(float(line.split("\t")[0]))
    sums = {m: [0.0] * 6 for m in ("lead3", "lexrank", "ckpt")}
    for rel, lg in zip(chosen, logits):
        sents, ref = R.bbc_document(root, rel)
        assert len(sents) == len(lg), rel
        k = sum(R.contained(sents, ref))
        lex = lexrank_scores(sents, idf).astype(np.float32)
        picks = {"lead3": list(range(min(3, len(sents)))),
                 "lexrank": sorted(np.argsort(-lex, kind="stable")[:k]),
                 "ckpt": sorted(sorted(range(len(sents)), key=lambda i: (-lg[i], i))[:k])}
        for m, pick in picks.items():
            cand = " ".join(sents[j] for j in pick)
            plain, stem = R.rouge(cand, ref), rouge_stem(cand, ref)
            for j in range(3):
                sums[m][j] += plain[j][2]
                sums[m][3 + j] += stem[j][2]
    print("# method\tsplit\tdocs\trouge1\trouge2\trougeL\trouge1_stem\trouge2_stem\trougeL_stem"
          " (made by tests/reference/rouge_stem_ref.py bbc %s %s; NLTK PorterStemmer, tokens longer than 3)"
          % (os.path.relpath(ckpt), split))
    for m, s in sums.items():
        print("\t".join([m, split, str(len(chosen))] + ["%.4f" % (100 * x / len(chosen)) for x in s]))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "fixtures":
        write_fixtures(sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "fixtures"))
    elif len(sys.argv) >= 2 and sys.argv[1] == "bbc":
        bbc(sys.argv[2] if len(sys.argv) > 2 else "models/hibert-bbc.safetensors",
            sys.argv[3] if len(sys.argv) > 3 else "test")
    else:
        sys.exit(__doc__)
