#!/usr/bin/env python3
"""A PyTorch probe for experiments/hibert-gap/README.md ("Why the gap"): is the byte-level sentence encoder what keeps HIBERT
below LexRank on BBC News, or the document-level model?

It replaces the sentence encoder by the easiest content representation there is, the mean of hashed
word embeddings (4,096 buckets of the crc32 of each lower-cased [a-z0-9]+ token, width 128), and keeps the
rest of longctx's recipe: a 2-layer pre-LN document encoder (width 128, 4 heads, FFN 512, no dropout) over
those vectors plus sentence positions, a linear head, BCE on the contained labels, AdamW lr 1e-3, weight
decay 0.1, 8 documents a step; documents cut to their first 64 sentences (of at most 64 words). After each
epoch over the 1,780 training documents it scores valid and test like `longctx eval --task summarize`
(top k in document order, ROUGE-1/2/L F1). One thread. Needs PyTorch:
/usr/bin/python3 experiments/hibert-gap/hibert_bag_probe.py [EPOCHS] [BBC_ROOT]
"""
import os
import sys
import time
import zlib

import numpy as np
import torch
from torch import nn

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
for _d in ("bench", "experiments/hibert-gap", "experiments/hibert-intruders"):  # the probes this one builds on
    sys.path.insert(0, os.path.join(_ROOT, _d))
import summ_surface_baseline as S  # noqa: E402  (its reader, sentence rule and ROUGE)

ROOT = "data/bbc-news-summary"  # main: the second argument
BUCKETS, WIDTH, MAX_SENTS, MAX_WORDS = 4096, 128, 64, 64


def load():
    paths = sorted(f"{t}/{f}" for t in os.listdir(f"{ROOT}/articles") for f in os.listdir(f"{ROOT}/articles/{t}")
                   if f.endswith(".txt"))
    docs = []
    for i, p in enumerate(paths):
        article, ref = S.read(f"{ROOT}/articles/{p}"), S.read(f"{ROOT}/summaries/{p}")
        sents = S.sentences(article.split("\n", 1)[1] if "\n" in article else "")[:MAX_SENTS]
        ids = [[zlib.crc32(w.encode()) % BUCKETS for w in S.tokens(s)][:MAX_WORDS] or [0] for s in sents]
        docs.append((i % 10, ids, sents, ref, np.array([float(s in ref) for s in sents])))
    return docs


class BagHibert(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(BUCKETS, WIDTH)
        nn.init.normal_(self.emb.weight, std=0.02)
        self.pos = nn.Embedding(MAX_SENTS, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 4, 512, 0.0, batch_first=True, norm_first=True)
        self.doc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, ids):
        n = max(len(x) for x in ids)
        tok = torch.tensor([x + [0] * (n - len(x)) for x in ids])
        mask = torch.tensor([[1.0] * len(x) + [0.0] * (n - len(x)) for x in ids])
        vec = (self.emb(tok) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.head(self.doc((vec + self.pos(torch.arange(len(ids))))[None])[0])[:, 0]


def rouge(model, docs, part):
    model.eval()
    scores = []
    with torch.no_grad():
        for _, ids, sents, ref, lab in (d for d in docs if d[0] == part):
            top = sorted(np.argsort(-model(ids).numpy(), kind="stable")[:int(lab.sum())])
            c, r = S.tokens(" ".join(sents[j] for j in top)), S.tokens(ref)
            scores.append((S.ngram_f1(c, r, 1), S.ngram_f1(c, r, 2), S.lcs_f1(c, r)))
    model.train()
    return " / ".join(f"{x:.2f}" for x in 100 * np.mean(scores, axis=0))


def finetune(model, docs, epochs, rng, params=None, t0=None):
    """The extraction fine-tuning: BCE on the contained labels, AdamW lr 1e-3, 8 documents a step; each epoch's
    train BCE and valid / test ROUGE printed."""
    train = [d for d in docs if d[0] not in (0, 5)]
    opt = torch.optim.AdamW(params if params is not None else model.parameters(), lr=1e-3, weight_decay=0.1)
    t0, seen = t0 if t0 is not None else time.time(), 0
    for epoch in range(1, epochs + 1):
        total = 0.0
        for i in rng.permutation(len(train)):
            _, ids, _, _, lab = train[i]
            loss = nn.functional.binary_cross_entropy_with_logits(model(ids), torch.tensor(lab, dtype=torch.float32))
            (loss / 8).backward()
            total, seen = total + loss.item(), seen + 1
            if seen % 8 == 0:
                opt.step()
                opt.zero_grad()
        print(f"epoch {epoch} ({time.time() - t0:.0f} s): train BCE {total / len(train):.4f}, "
              f"valid R-1/2/L {rouge(model, docs, 5)}, test {rouge(model, docs, 0)}", flush=True)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    global ROOT
    ROOT = sys.argv[2] if len(sys.argv) > 2 else ROOT
    finetune(BagHibert(), load(), int(sys.argv[1]) if len(sys.argv) > 1 else 12, np.random.default_rng(0))


if __name__ == "__main__":
    main()
