"""PyTorch reference of longctx's HIBERT (Zhang, Wei and Zhou 2019; docs/reference/hibert.md), written from the paper
and the documented model, one sentence and one document at a time (no packing), float64.

  sentence encoder: sentence i's bytes, truncated to max_sent_len, then EOS (256); a masked sentence reads
    MASK (257) for each of its bytes; x = sent.wte[sym] + sent.wpe[position]; encoder_stack (encdec_ref);
    the sentence vector is the final hidden state of the EOS row.
  document encoder: the vectors of a document's sentences in order (through doc.proj when the widths
    differ) + doc.wpe[sentence position]; encoder_stack -> d_k per sentence.
  extraction: logit_k = head.weight . d_k + head.bias; loss = mean binary cross-entropy over sentences.
  pre-training: each sentence has an action (0 unselected, 1 masked, 2 replaced by sentence `source` of
    its document, 3 kept) and the encoders read the masked / replaced view; each selected sentence k is
    regenerated from its original bytes b (truncated): decoder input BOS (257) + b, targets b + EOS,
    x_t = dec.wte[in_t] + dec.wpe[t] + P(d_k) (P = dec.proj when the widths differ, else identity);
    decoder_stack cross-attending to all rows d of k's document; logits = h dec.wte[0:257]^T;
    loss = mean NLL over every target of every selected sentence.
"""
import torch
import torch.nn.functional as F

import encdec_ref as ed

EOS, MASK, BOS = 256, 257, 257
UNSELECTED, MASKED, REPLACED, KEPT = 0, 1, 2, 3


def param_shapes(cfg):
    """name -> shape under longctx's names. cfg: sent, doc, dec (dicts n_layer, d_model, n_head, d_ff,
    attn), max_sent_len, max_sents, norm."""
    s, d, x = cfg["sent"], cfg["doc"], cfg["dec"]
    Cs, Cd, Cx = s["d_model"], d["d_model"], x["d_model"]
    pre = cfg["norm"] == "pre"
    out = {"sent.wte": (258, Cs), "sent.wpe": (cfg["max_sent_len"] + 1, Cs)}
    out.update(ed.block_shapes("sent.", s["n_layer"], Cs, s["d_ff"]))
    if pre:
        out["sent.ln_f.weight"], out["sent.ln_f.bias"] = (Cs,), (Cs,)
    if Cs != Cd:
        out["doc.proj.weight"], out["doc.proj.bias"] = (Cd, Cs), (Cd,)
    out["doc.wpe"] = (cfg["max_sents"], Cd)
    out.update(ed.block_shapes("doc.", d["n_layer"], Cd, d["d_ff"]))
    if pre:
        out["doc.ln_f.weight"], out["doc.ln_f.bias"] = (Cd,), (Cd,)
    out["head.weight"], out["head.bias"] = (1, Cd), (1,)
    out["dec.wte"], out["dec.wpe"] = (258, Cx), (cfg["max_sent_len"] + 1, Cx)
    if Cx != Cd:
        out["dec.proj.weight"], out["dec.proj.bias"] = (Cx, Cd), (Cx,)
    out.update(ed.block_shapes("dec.", x["n_layer"], Cx, x["d_ff"], C_enc=Cd))
    if pre:
        out["dec.ln_f.weight"], out["dec.ln_f.bias"] = (Cx,), (Cx,)
    return out


def encode(p, cfg, docs, action=None, source=None):
    """docs: list of documents, each a list of sentences (bytes). action/source: per document, per sentence
    (None: every sentence as it is). Returns a list of [n_j, C_doc] document encoder outputs."""
    norm, act, L = cfg["norm"], cfg["activation"], cfg["max_sent_len"]
    out = []
    for j, doc in enumerate(docs):
        vecs = []
        for i in range(len(doc)):
            a = action[j][i] if action else UNSELECTED
            seen = doc[source[j][i]] if a == REPLACED else doc[i]
            seen = seen[:L]
            sym = [MASK] * len(seen) if a == MASKED else list(seen)
            sym = torch.tensor(sym + [EOS], dtype=torch.long)
            x = p["sent.wte"][sym] + p["sent.wpe"][: len(sym)]
            h = ed.encoder_stack(x, p, "sent.", cfg["sent"], norm, act)
            vecs.append(h[-1])
        v = torch.stack(vecs)
        if "doc.proj.weight" in p:
            v = ed.linear(v, p, "doc.proj")
        v = v + p["doc.wpe"][: len(doc)]
        out.append(ed.encoder_stack(v, p, "doc.", cfg["doc"], norm, act))
    return out


def extract(p, cfg, docs, labels):
    """(mean BCE, scores [sentences] in document order)."""
    d = torch.cat(encode(p, cfg, docs))
    z = ed.linear(d, p, "head").squeeze(1)
    y = torch.tensor([l for doc in labels for l in doc], dtype=z.dtype)
    return F.binary_cross_entropy_with_logits(z, y, reduction="mean"), z


def pretrain(p, cfg, docs, action, source):
    """(mean NLL per target symbol, number of targets)."""
    enc = encode(p, cfg, docs, action, source)
    L = cfg["max_sent_len"]
    total, count = 0.0, 0
    for j, doc in enumerate(docs):
        for k, sent in enumerate(doc):
            if action[j][k] == UNSELECTED:
                continue
            b = list(sent[:L])
            inp = torch.tensor([BOS] + b, dtype=torch.long)
            tgt = torch.tensor(b + [EOS], dtype=torch.long)
            dk = enc[j][k]
            if "dec.proj.weight" in p:
                dk = ed.linear(dk.unsqueeze(0), p, "dec.proj").squeeze(0)
            x = p["dec.wte"][inp] + p["dec.wpe"][: len(inp)] + dk
            h = ed.decoder_stack(x, enc[j], p, "dec.", cfg["dec"], cfg["norm"], cfg["activation"])
            logits = h @ p["dec.wte"][: EOS + 1].t()
            total = total + F.cross_entropy(logits, tgt, reduction="sum")
            count += len(tgt)
    return total / count, count
