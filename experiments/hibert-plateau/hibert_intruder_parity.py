#!/usr/bin/env python3
"""Does PyTorch, started from the very weights of a longctx HIBERT checkpoint, learn the sentence intruders as
longctx does (experiments/hibert-plateau/README.md, "The intruder plateau is an onset time")? The checkpoint's sentence vectors are
made word-only (`zero` sets sent.ln_f to 0, so every EOS state is 0 and the document encoder reads the hashed
word vectors alone), and `train` runs the intruder objective on its document encoder, word vectors and head
in PyTorch: longctx's tokens and FNV-1a buckets, pre-LN blocks with tanh GELU and a final LayerNorm, AdamW
(0.9, 0.99), decay on matrices and embeddings, clipping at 1, constant lr, batches of 8 BBC training
documents (64 sentences at most), a quarter of the sentences swapped in from other documents of the batch.
It prints the mean training BCE every 125 steps (the constant predictor's is 0.5623). The same checkpoint
trained by `longctx hibert pretrain --intruders 0.25` with the sentence encoder frozen is the other half of
the comparison (the commands: experiments/hibert-plateau/README.md).
  /usr/bin/python3 experiments/hibert-plateau/hibert_intruder_parity.py zero IN.ckpt OUT.ckpt
  [switches] /usr/bin/python3 experiments/hibert-plateau/hibert_intruder_parity.py train CKPT [STEPS]
  /usr/bin/python3 experiments/hibert-plateau/hibert_intruder_parity.py eval CKPT     (mean BCE over 100 batches of the valid split)
  /usr/bin/python3 experiments/hibert-plateau/hibert_intruder_parity.py replay CKPT BATCHES OUT_DIR CLIP
      (after build/release/experiments/hibert-plateau/hibert_intruder_replay CKPT BATCHES STEPS CLIP OUT_DIR: the same steps here)
train's switches (environment): SEED=N (0); LR=F (1e-3); LOSS_SCALE=F (the loss times F before clipping,
e.g. 1e6 as longctx's --intruder-weight 1e6); INIT=fanin|qk_identity|STD (the document encoder's matrices
redrawn at N(0, 1/fan-in), its query and key projections set to the identity, or its qkv matrices redrawn at
N(0, STD)); IDF=1 (word vectors scaled by their bucket's idf over the training documents); SAVE=OUT.ckpt (the
trained tensors written into a copy of CKPT).
"""
import math
import os
import re
import sys
import time

import numpy as np
import torch
from torch import nn

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
for _d in ("bench", "experiments/hibert-gap", "experiments/hibert-intruders"):  # the probes this one builds on
    sys.path.insert(0, os.path.join(_ROOT, _d))
import hibert_intruder_probe as I  # noqa: E402  (its intruder batches)
import summ_surface_baseline as S  # noqa: E402  (the reader and the sentence rule)

sys.path.insert(0, os.path.join(_ROOT, "tests", "reference"))
import st_io  # noqa: E402  (safetensors reading and writing)

ROOT = "data/bbc-news-summary"


def read_st(path):
    """-> (metadata, tensors by name, the names in file order), with tests/reference/st_io.py's reader"""
    tensors, meta = st_io.read(path)
    return meta, tensors, list(tensors)


def write_st(path, meta, tensors, order):
    st_io.write(path, [(k, "F32", tensors[k]) for k in order], meta)


def fnv1a(word):
    h = 2166136261
    for c in word:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def word_ids(sentence, buckets, max_len):
    return [fnv1a(w) % buckets for w in re.findall(rb"[a-z0-9]+", sentence.encode("utf-8", "replace")[:max_len].lower())]


def bbc_docs(split, buckets, max_len, max_sents):
    paths = sorted(f"{t}/{f}" for t in os.listdir(f"{ROOT}/articles") for f in os.listdir(f"{ROOT}/articles/{t}")
                   if f.endswith(".txt"))
    docs = []
    for i, p in enumerate(paths):
        if (i % 10 == 5) != (split == "valid") or i % 10 == 0:
            continue
        article = S.read(f"{ROOT}/articles/{p}")
        sents = S.sentences(article.split("\n", 1)[1] if "\n" in article else "")
        for c in range(0, len(sents), max_sents):
            docs.append([word_ids(s, buckets, max_len) for s in sents[c:c + max_sents]])
    return docs


class DocModel(nn.Module):
    def __init__(self, t, n_layer, n_head):
        super().__init__()
        self.p = nn.ParameterDict({k.replace(".", "_"): nn.Parameter(torch.tensor(v)) for k, v in t.items()
                                   if k.startswith(("doc.", "head.")) or k == "sent.words"})
        self.n_layer, self.n_head = n_layer, n_head

    def w(self, name):
        return self.p[name.replace(".", "_")]

    def ln(self, x, name):
        return nn.functional.layer_norm(x, x.shape[-1:], self.w(name + ".weight"), self.w(name + ".bias"), 1e-5)

    def lin(self, x, name):
        return nn.functional.linear(x, self.w(name + ".weight"), self.w(name + ".bias"))

    def forward(self, docs):
        """docs: lists of sentences' word id lists -> one logit per sentence place [B, N], the place mask."""
        B, N = len(docs), max(len(d) for d in docs)
        words = self.w("sent.words")
        C = words.shape[1]
        x = torch.zeros(B, N, C)
        mask = torch.zeros(B, N, dtype=torch.bool)
        for b, d in enumerate(docs):
            for i, ids in enumerate(d):
                if ids:
                    x[b, i] = words[torch.tensor(ids)].sum(0) / math.sqrt(len(ids))
                mask[b, i] = True
        x = x + self.w("doc.wpe")[:N][None]
        H, D = self.n_head, C // self.n_head
        for layer in range(self.n_layer):
            pre = f"doc.blocks.{layer}."
            q, k, v = self.lin(self.ln(x, pre + "ln1"), pre + "attn.qkv").split(C, -1)
            q, k, v = (z.view(B, N, H, D).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
            att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
            x = x + self.lin((att @ v).transpose(1, 2).reshape(B, N, C), pre + "attn.proj")
            h = nn.functional.gelu(self.lin(self.ln(x, pre + "ln2"), pre + "ffn.fc1"), approximate="tanh")
            x = x + self.lin(h, pre + "ffn.fc2")
        return self.lin(self.ln(x, "doc.ln_f"), "head")[..., 0], mask


def bce(model, docs, rng):
    """one batch of 8 documents, a quarter of the sentences swapped in from the batch's other documents
    (hibert_intruder_probe.intruder_batch) -> the mean BCE against longctx's labels (1: in its own document)"""
    batch, replaced = I.intruder_batch(docs, rng, 8, in_batch=True)
    return labelled_bce(model, batch, [[1.0 - x for x in lab] for lab in replaced])


def labelled_bce(model, batch, labels):
    """the mean BCE of the model's logits for a batch of documents against per-place labels"""
    logit, mask = model(batch)
    y = torch.zeros_like(logit)
    for b, lab in enumerate(labels):
        y[b, :len(lab)] = torch.tensor(lab, dtype=torch.float)
    return nn.functional.binary_cross_entropy_with_logits(logit[mask], y[mask])


def load(path, split):
    meta, t, order = read_st(path)
    model = DocModel(t, int(meta["doc.n_layer"]), int(meta["doc.n_head"]))
    docs = bbc_docs(split, int(meta["sent.words"]), int(meta["max_sent_len"]), int(meta["max_sents"]))
    return meta, t, order, model, docs


def evaluate(path):
    """the mean BCE of CKPT's document encoder over 100 intruder batches of the valid split"""
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    model, docs = load(path, "valid")[3:]
    with torch.no_grad():
        print(f"{path}: valid intruder BCE {np.mean([bce(model, docs, rng).item() for _ in range(100)]):.4f}")


def train(path, steps):
    torch.set_num_threads(1)
    seed = int(os.environ.get("SEED", "0"))
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    meta, t, order, model, docs = load(path, "train")
    if os.environ.get("IDF"):  # word vectors scaled by their bucket's idf over the training documents
        df, occ = np.zeros(int(meta["sent.words"])), np.zeros(int(meta["sent.words"]))
        for d in docs:
            for w in {w for sent in d for w in sent}:
                df[w] += 1
            for sent in d:
                for w in sent:
                    occ[w] += 1
        idf = np.log(len(docs) / np.maximum(df, 1))
        idf /= np.sqrt((occ * idf ** 2).sum() / occ.sum())
        with torch.no_grad():
            model.w("sent.words").mul_(torch.tensor(idf, dtype=torch.float32)[:, None])
    if os.environ.get("INIT"):  # document encoder matrices redrawn: "fanin" N(0, 1/fan_in), or a std for qkv only
        with torch.no_grad():
            for k, p in model.p.items():
                if k.startswith("doc_blocks") and p.dim() == 2:
                    if os.environ["INIT"] == "fanin":
                        p.normal_(0, p.shape[1] ** -0.5)
                    elif os.environ["INIT"] == "qk_identity" and "qkv" in k:  # queries = keys = the input
                        C = p.shape[1]
                        p[:C] = torch.eye(C)
                        p[C:2 * C] = torch.eye(C)
                    elif "qkv" in k:
                        p.normal_(0, float(os.environ["INIT"]))
    decay = [p for k, p in model.p.items() if p.dim() == 2]
    other = [p for k, p in model.p.items() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=float(os.environ.get("LR", "1e-3")), betas=(0.9, 0.99), eps=1e-8)
    total, t0 = 0.0, time.time()
    scale = float(os.environ.get("LOSS_SCALE", "1"))  # e.g. 1e6: every step clipped, as --intruder-weight 1e6
    for step in range(1, steps + 1):
        loss = bce(model, docs, rng)
        opt.zero_grad()
        (loss * scale).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
        if step % 125 == 0:
            print(f"step {step} ({time.time() - t0:.0f}s) BCE {total / 125:.4f}", flush=True)
            total = 0.0
    if os.environ.get("SAVE"):  # the trained tensors into a copy of the checkpoint, for longctx to evaluate
        for k, v in model.p.items():
            t[next(name for name in t if name.replace(".", "_") == k)] = v.detach().numpy().copy()
        write_st(os.environ["SAVE"], meta, t, order)


def replay(path, batches, out_dir, clip):
    """the steps of build/release/experiments/hibert-plateau/hibert_intruder_replay (its batches and swaps, OUT_DIR/swaps.txt) in
    PyTorch from the same checkpoint; prints both runs' mean BCE every 125 steps and, per tensor, how far
    each run moved it and the cosine between the two moves"""
    torch.set_num_threads(1)
    meta, t, order = read_st(path)
    model = DocModel(t, int(meta["doc.n_layer"]), int(meta["doc.n_head"]))
    docs = bbc_docs("train", int(meta["sent.words"]), int(meta["max_sent_len"]), 10 ** 9)
    decay = [p for k, p in model.p.items() if p.dim() == 2]
    other = [p for k, p in model.p.items() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99), eps=1e-8)
    steps = [[int(x) for x in line.split()] for line in open(f"{out_dir}/swaps.txt")]
    total = 0.0
    for s, (line, swap) in enumerate(zip(open(batches), steps)):
        picked = [docs[int(i)][:int(meta["max_sents"])] for i in line.split()]
        flat = [x for d in picked for x in d]
        source, own = swap[0::2], swap[1::2]
        batch, labels, k = [], [], 0
        for d in picked:
            batch.append([flat[source[k + i]] for i in range(len(d))])
            labels.append(own[k:k + len(d)])
            k += len(d)
        loss = labelled_bce(model, batch, labels)
        opt.zero_grad()
        (loss * 1e6).backward()  # longctx's intruder weight: every step clipped when CLIP > 0
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        total += loss.item()
        if (s + 1) % 125 == 0:
            print(f"pytorch step {s + 1} BCE {total / 125:.4f}", flush=True)
            total = 0.0
    after = np.fromfile(f"{out_dir}/params.bin", dtype=np.float32)
    for line in open(f"{out_dir}/params.txt"):
        name, off, count = line.split()
        if name.replace(".", "_") not in model.p:
            continue
        a = model.w(name).detach().numpy().ravel() - t[name].ravel()
        b = after[int(off):int(off) + int(count)] - t[name].ravel()
        cos = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)
        print(f"{name:30s} moved: pytorch {np.linalg.norm(a):.4e} longctx {np.linalg.norm(b):.4e} cosine {cos:.4f}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "zero":
        meta, t, order = read_st(sys.argv[2])
        t["sent.ln_f.weight"][:] = 0
        t["sent.ln_f.bias"][:] = 0
        write_st(sys.argv[3], meta, t, order)
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "train":
        train(sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 1500)
    elif len(sys.argv) == 6 and sys.argv[1] == "replay":
        replay(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    elif len(sys.argv) == 3 and sys.argv[1] == "eval":
        evaluate(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
