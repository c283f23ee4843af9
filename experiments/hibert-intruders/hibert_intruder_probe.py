#!/usr/bin/env python3
"""A PyTorch probe for experiments/hibert-intruders/README.md: does a sentence-intruder pre-training objective give the document
encoder the centrality signal that BBC's extraction labels follow?

Model: experiments/hibert-gap/hibert_bag_probe.py's (mean of hashed word embeddings as the sentence vector, a 2-layer
pre-LN document encoder of width 128, a linear head). Pre-training: each sentence of a document is, with
probability RATE, replaced by a random sentence of another document; a second linear head predicts which
sentences were replaced (BCE). A sentence that shares its document's vocabulary is hard to call an
intruder, so the objective asks the document encoder for the overlap of each sentence with the rest of
its document. Fine-tuning then trains the extraction head (BCE on the contained labels) from those
weights, and each epoch prints valid / test ROUGE like `longctx eval --task summarize`.
/usr/bin/python3 experiments/hibert-intruders/hibert_intruder_probe.py PRE_STEPS FT_EPOCHS [imdb|bbc|both]
"""
import gzip
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
import summ_surface_baseline as S  # noqa: E402
import hibert_bag_probe as P  # noqa: E402

P.ROOT = "data/bbc-news-summary"

RATE, BATCH = 0.25, 16


def ids_of(sents):
    return [[zlib.crc32(w.encode()) % P.BUCKETS for w in S.tokens(s)][:P.MAX_WORDS] or [0] for s in sents]


def imdb_docs():
    docs = []
    for name in ("data/imdb/train.tsv.gz", "data/imdb/val.tsv.gz"):
        with gzip.open(name, "rt", encoding="utf-8") as f:
            next(f)
            for line in f:
                text = line.rstrip("\n").split("\t")[-1].replace("<br />", " ")
                sents = S.sentences(text)[:P.MAX_SENTS]
                if len(sents) >= 4:
                    docs.append(ids_of(sents))
    return docs


def batch_tensors(docs):
    """docs: lists of sentence id lists -> (tok [B, N, W], word mask, sentence mask)."""
    n = max(len(d) for d in docs)
    w = max(len(s) for d in docs for s in d)
    tok = torch.zeros(len(docs), n, w, dtype=torch.long)
    wm = torch.zeros(len(docs), n, w)
    sm = torch.zeros(len(docs), n, dtype=torch.bool)
    for b, d in enumerate(docs):
        for i, s in enumerate(d):
            tok[b, i, :len(s)] = torch.tensor(s)
            wm[b, i, :len(s)] = 1
            sm[b, i] = True
    return tok, wm, sm


def intruder_batch(pool, rng, batch, in_batch=False):
    """batch documents drawn from pool; each sentence, with probability RATE, replaced by a random sentence of
    a random pool document (in_batch: of another document of the batch). -> (documents, labels: 1 = replaced)"""
    picked = [pool[i] for i in rng.integers(0, len(pool), batch)]
    corrupt, labels = [], []
    for k, d in enumerate(picked):
        out, lab = [], []
        for s in d:
            if rng.random() < RATE:
                other = picked[(k + 1 + rng.integers(0, batch - 1)) % batch] if in_batch else pool[rng.integers(0, len(pool))]
                out.append(other[rng.integers(0, len(other))])
                lab.append(1.0)
            else:
                out.append(s)
                lab.append(0.0)
        corrupt.append(out)
        labels.append(lab)
    return corrupt, labels


def intruder_loss(model, encode, pool, rng, batch, in_batch=False):
    """One intruder batch through encode(tok, wm, sm) and the intruder head -> (logits, labels, sentence mask,
    mean BCE)."""
    corrupt, labels = intruder_batch(pool, rng, batch, in_batch)
    tok, wm, sm = batch_tensors(corrupt)
    logit = model.ihead(encode(tok, wm, sm))[..., 0]
    y = torch.zeros_like(logit)
    for b, lab in enumerate(labels):
        y[b, :len(lab)] = torch.tensor(lab)
    return logit, y, sm, nn.functional.binary_cross_entropy_with_logits(logit[sm], y[sm])


class Model(P.BagHibert):
    def __init__(self):
        super().__init__()
        self.ihead = nn.Linear(P.WIDTH, 1)
        # the bag probe's nn.Embedding default puts positions at N(0, 1) and words at N(0, 0.02): the
        # sentence's content would be a rounding error beside its position; here content leads, as in
        # longctx (a LayerNorm'd sentence vector plus positions at N(0, 0.02))
        nn.init.normal_(self.emb.weight, std=1.0)
        nn.init.normal_(self.pos.weight, std=0.02)

    def encode(self, tok, wm, sm):
        vec = (self.emb(tok) * wm[..., None]).sum(2) / wm.sum(2, keepdim=True).clamp(min=1)
        x = vec + self.pos(torch.arange(tok.shape[1]))[None]
        return self.doc(x, src_key_padding_mask=~sm)

    def forward(self, ids):
        tok, wm, sm = batch_tensors([ids])
        return self.head(self.encode(tok, wm, sm))[0, :, 0]


def main():
    pre_steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    ft_epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    source = sys.argv[3] if len(sys.argv) > 3 else "both"
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    docs = P.load()
    train = [d for d in docs if d[0] not in (0, 5)]
    pool = []
    if source in ("imdb", "both"):
        pool += imdb_docs()
    if source in ("bbc", "both"):
        pool += [d[1] for d in train]
    model = Model()
    t0 = time.time()
    if pre_steps:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
        total, hits = 0.0, 0
        for step in range(1, pre_steps + 1):
            logit, y, sm, loss = intruder_loss(model, model.encode, pool, rng, BATCH)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            hits += ((logit[sm] > 0).float() == y[sm]).float().mean().item()
            if step % 250 == 0:
                print(f"pre step {step} ({time.time() - t0:.0f} s): intruder BCE {total / 250:.4f} "
                      f"acc {hits / 250:.3f}", flush=True)
                total, hits = 0.0, 0
    if os.environ.get("FT_FREEZE_EMB"):
        model.emb.weight.requires_grad_(False)
    P.finetune(model, docs, ft_epochs, rng, [p for p in model.parameters() if p.requires_grad], t0)


if __name__ == "__main__":
    main()
