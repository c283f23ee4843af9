#!/usr/bin/env python3
"""Which difference between the PyTorch intruder probe (experiments/hibert-intruders/hibert_intruder_probe.py, which learns sentence
intruders on BBC News) and longctx's HIBERT (which did not) stops the learning? experiments/hibert-words/README.md, "Hashed word
vectors". Pre-trains the probe's word-level model on intruders alone (BBC train split, rate 0.25) and prints
the mean training BCE every 125 steps (the constant predictor's is about 0.562); no fine-tuning.
Switches (environment variables, any combination):
  STEPS=N (1000)  BATCH=N (16)  SEED=N (0)
  INIT002=1  longctx's initialisation for the document encoder and heads: N(0, 0.02) matrices, residual
             projections N(0, 0.01), zero biases (PyTorch's defaults are about 2.5 to 3 times larger)
  SQRTN=1    sentence vector = sum of word vectors / sqrt(word count), as longctx's --sent-words (else the mean)
  CONST=F    add one fixed random vector of norm about F * sqrt(128) to every sentence vector: the shared part
             that longctx's trained EOS states carry (F = 1.2 matches a share of the mean of about 0.59)
  OURS=1     longctx's document encoder otherwise too: GELU, a final LayerNorm, AdamW betas (0.9, 0.99),
             gradient clipping at 1 (with INIT002's initialisation)
  INBATCH=1  intruders come from the other documents of the batch (as longctx's swaps), not from the pool
  SYN=DIR    documents from DIR/*.txt instead of BBC (MAKE_SYN=DIR writes the synthetic corpus of experiments/hibert-words/README.md
             there and exits: 2,000 documents of 8 to 20 sentences of 6 to 14 words, each word from the
             document's own 40-word vocabulary with probability 0.5, else from 5,000 random 3-8 letter words)
  TAG=text   a label for the output lines
Needs PyTorch: /usr/bin/python3 experiments/hibert-words/hibert_intruder_variants.py (from the repository root)
"""
import glob
import os
import sys
import time
import zlib

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
for _d in ("bench", "experiments/hibert-gap", "experiments/hibert-intruders"):  # the probes this one builds on
    sys.path.insert(0, os.path.join(_ROOT, _d))
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import hibert_bag_probe as P  # noqa: E402
import hibert_intruder_probe as I  # noqa: E402

ENV = os.environ.get
STEPS = int(ENV("STEPS", "1000"))
BATCH = int(ENV("BATCH", "16"))
SEED = int(ENV("SEED", "0"))


def longctx_init(module):
    for name, p in module.named_parameters():
        if p.dim() == 2:
            nn.init.normal_(p, std=0.01 if ("out_proj" in name or "linear2" in name) else 0.02)
        elif "norm" not in name:
            nn.init.zeros_(p)


def make_synthetic(out):
    import random
    r = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(r.choice(letters) for _ in range(r.randint(3, 8))) for _ in range(5000)]
    os.makedirs(out, exist_ok=True)
    for d in range(2000):
        own = r.sample(vocab, 40)
        sents = []
        for _ in range(r.randint(8, 20)):
            words = [r.choice(own) if r.random() < 0.5 else r.choice(vocab) for _ in range(r.randint(6, 14))]
            sents.append(" ".join(words).capitalize() + ".")
        with open(os.path.join(out, f"d{d:04d}.txt"), "w") as f:
            f.write(" ".join(sents) + "\n")


def main():
    if ENV("MAKE_SYN"):
        make_synthetic(ENV("MAKE_SYN"))
        return
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    pool = [d[1] for d in P.load() if d[0] not in (0, 5)]
    if ENV("SYN"):
        pool = []
        for fn in sorted(glob.glob(os.path.join(ENV("SYN"), "*.txt"))):
            sents = I.S.sentences(open(fn).read().strip())[:64]
            pool.append([[zlib.crc32(w.encode()) % P.BUCKETS for w in I.S.tokens(x)][:64] or [0] for x in sents])
    model = I.Model()
    if ENV("INIT002"):
        longctx_init(model.doc)
        for h in (model.ihead, model.head):
            nn.init.normal_(h.weight, std=0.02)
            nn.init.zeros_(h.bias)
    const = None
    if ENV("CONST"):
        const = torch.randn(P.WIDTH, generator=torch.Generator().manual_seed(5)) * float(ENV("CONST"))
    if ENV("OURS"):
        layer = nn.TransformerEncoderLayer(P.WIDTH, 4, 512, 0.0, batch_first=True, norm_first=True, activation="gelu")
        model.doc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(P.WIDTH), enable_nested_tensor=False)
        longctx_init(model.doc)

    def encode(tok, wm, sm):
        count = wm.sum(2, keepdim=True).clamp(min=1)
        vec = (model.emb(tok) * wm[..., None]).sum(2) / count
        if ENV("SQRTN"):
            vec = vec * count.sqrt()
        if const is not None:
            vec = vec + const
        return model.doc(vec + model.pos(torch.arange(tok.shape[1]))[None], src_key_padding_mask=~sm)

    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1,
                            betas=(0.9, 0.99) if ENV("OURS") else (0.9, 0.999))
    total, t0 = 0.0, time.time()
    for step in range(1, STEPS + 1):
        loss = I.intruder_loss(model, encode, pool, rng, BATCH, bool(ENV("INBATCH")))[3]
        opt.zero_grad()
        loss.backward()
        if ENV("OURS"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
        if step % 125 == 0:
            print(f"{ENV('TAG', '')} step {step} ({time.time() - t0:.0f}s) BCE {total / 125:.4f}", flush=True)
            total = 0.0


if __name__ == "__main__":
    main()
