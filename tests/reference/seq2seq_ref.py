"""PyTorch reference of longctx's vanilla encoder-decoder Transformer over bytes (Vaswani et al. 2017;
docs/guides/seq2seq.md), one pair at a time (no packing), float64.

  encoder: the source bytes then EOS (256); x = Ws[sym] + enc.wpe[position]; encoder_stack (encdec_ref).
  decoder: input BOS (257) + the target bytes, targets the bytes + EOS; x = Wd[in] + dec.wpe[position];
           decoder_stack cross-attending to every encoder row of its own source;
           logits = h Wo[0:257]^T.
  tied: Ws = Wd = Wo = `wte` [258, C]; untied: Ws = `enc.wte` [257, C_enc], Wd = `dec.wte` [258, C_dec],
        Wo = `dec.head.weight` [257, C_dec].
  loss: mean NLL over every target symbol of every pair.
"""
import torch
import torch.nn.functional as F

import encdec_ref as ed

EOS, BOS = 256, 257


def param_shapes(cfg):
    """name -> shape under longctx's names, in its order. cfg: enc, dec (dicts n_layer, d_model, n_head,
    d_ff, attn), max_src_len, max_tgt_len, norm, tied."""
    e, d = cfg["enc"], cfg["dec"]
    Ce, Cd = e["d_model"], d["d_model"]
    pre, tied = cfg["norm"] == "pre", cfg["tied"]
    s = {"wte": (258, Ce)} if tied else {"enc.wte": (257, Ce)}
    s["enc.wpe"] = (cfg["max_src_len"] + 1, Ce)
    s.update(ed.block_shapes("enc.", e["n_layer"], Ce, e["d_ff"]))
    if pre:
        s["enc.ln_f.weight"], s["enc.ln_f.bias"] = (Ce,), (Ce,)
    if not tied:
        s["dec.wte"] = (258, Cd)
    s["dec.wpe"] = (cfg["max_tgt_len"] + 1, Cd)
    s.update(ed.block_shapes("dec.", d["n_layer"], Cd, d["d_ff"], C_enc=Ce))
    if pre:
        s["dec.ln_f.weight"], s["dec.ln_f.bias"] = (Cd,), (Cd,)
    if not tied:
        s["dec.head.weight"] = (257, Cd)
    return s


def embeddings(p):
    """(source, decoder input, output) embedding matrices."""
    if "wte" in p:
        return p["wte"], p["wte"], p["wte"]
    return p["enc.wte"], p["dec.wte"], p["dec.head.weight"]


def nll(p, cfg, pairs):
    """pairs: list of (source bytes, target bytes). Returns (mean NLL per target symbol, count)."""
    ws, wd, wo = embeddings(p)
    total, count = 0.0, 0
    for src, tgt in pairs:
        sym = torch.tensor(list(src) + [EOS], dtype=torch.long)
        enc = ed.encoder_stack(ws[sym] + p["enc.wpe"][: len(sym)], p, "enc.", cfg["enc"], cfg["norm"],
                               cfg["activation"])
        inp = torch.tensor([BOS] + list(tgt), dtype=torch.long)
        out = torch.tensor(list(tgt) + [EOS], dtype=torch.long)
        h = ed.decoder_stack(wd[inp] + p["dec.wpe"][: len(inp)], enc, p, "dec.", cfg["dec"], cfg["norm"],
                             cfg["activation"])
        total = total + F.cross_entropy(h @ wo[: EOS + 1].t(), out, reduction="sum")
        count += len(out)
    return total / count, count


def greedy(p, cfg, src, max_len):
    """Greedy decoding from BOS until EOS or max_len bytes (the lowest symbol on a tie)."""
    ws, wd, wo = embeddings(p)
    sym = torch.tensor(list(src) + [EOS], dtype=torch.long)
    enc = ed.encoder_stack(ws[sym] + p["enc.wpe"][: len(sym)], p, "enc.", cfg["enc"], cfg["norm"], cfg["activation"])
    out = []
    while len(out) < max_len:
        inp = torch.tensor([BOS] + out, dtype=torch.long)
        h = ed.decoder_stack(wd[inp] + p["dec.wpe"][: len(inp)], enc, p, "dec.", cfg["dec"], cfg["norm"],
                             cfg["activation"])
        nxt = int(torch.argmax(h[-1] @ wo[: EOS + 1].t()))
        if nxt == EOS:
            break
        out.append(nxt)
    return out
