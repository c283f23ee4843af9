"""PyTorch reference of the encoder-decoder pieces that HIBERT (hibert_ref.py) and the vanilla
encoder-decoder Transformer (seq2seq_ref.py) are made of, written from Vaswani et al. (2017) and
longctx's documented tensor layout (docs/reference/checkpoint.md, src/nn/nn.h), one unpadded sequence at a time.

Parameters are a dict name -> tensor under longctx's names; `pre` is a name prefix ("sent.", "dec.").

  encoder block (bidirectional self-attention; `mask` [T,T] bool, True = visible):
    pre-LN:  h = x + attn(ln1(x));  out = h + ffn(ln2(h))
    post-LN: h = ln1(x + attn(x));  out = ln2(h + ffn(h))
  decoder block (causal self-attention; cross-attention to encoder rows `enc` [S, C_enc], all visible):
    pre-LN:  s1 = x + attn(ln1(x)); sc = s1 + cross(ln_cross(s1), enc); out = sc + ffn(ln2(sc))
    post-LN: h1 = ln1(x + attn(x)); hc = ln_cross(h1 + cross(h1, enc)); out = ln2(hc + ffn(hc))
  attn(a):  qkv = a Wqkv^T + b; q, k, v = columns [0,C), [C,2C), [2C,3C); head h = columns h*D..;
            softmax(q k^T / sqrt(D) over visible keys) v; heads concatenated; proj
  cross(a, e): q = a Wq^T + bq; kv = e Wkv^T + bkv (keys = columns [0,C), values [C,2C)); as attn; proj
  ffn(a):   fc2(act(fc1(a))), act = GELU (tanh approximation) | ReLU;  LayerNorm eps 1e-5
  a stack:  blocks, then ln_f for pre-LN.

Attention specs the reference expresses: "full" (or "") and "window:w=W" (keys within W positions:
|i - j| <= W bidirectional, 0 <= i - j <= W causal).
"""
import math
import re

import torch
import torch.nn.functional as F

LN_EPS = 1e-5


def layer_norm(x, p, name):
    return F.layer_norm(x, (x.shape[-1],), p[name + ".weight"], p[name + ".bias"], LN_EPS)


def linear(x, p, name):
    y = x @ p[name + ".weight"].t()
    b = p.get(name + ".bias")
    return y if b is None else y + b


def visible(spec, T, causal, S=None):
    """Boolean [T, S] mask of the keys each query sees under an attention spec."""
    S = T if S is None else S
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(S).unsqueeze(0)
    m = torch.ones(T, S, dtype=torch.bool)
    if causal:
        m &= j <= i
    spec = spec or "full"
    if spec != "full":
        w = re.fullmatch(r"window:w=(\d+)", spec)
        if not w:
            raise ValueError("the reference implements full and window:w=W attention, not %r" % spec)
        m &= (i - j).abs() <= int(w.group(1))
    return m


def heads_attention(q, k, v, n_head, mask=None):
    """q [T, C], k, v [S, C] -> [T, C]: per head softmax(q k^T / sqrt(D)) v over the mask's keys."""
    T, C = q.shape
    D = C // n_head
    q = q.view(T, n_head, D).transpose(0, 1)
    k = k.view(-1, n_head, D).transpose(0, 1)
    v = v.view(-1, n_head, D).transpose(0, 1)
    s = q @ k.transpose(1, 2) / math.sqrt(D)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T, C)


def self_attn(x, p, pre, n_head, mask):
    qkv = linear(x, p, pre + "attn.qkv")
    C = x.shape[-1]
    return linear(heads_attention(qkv[:, :C], qkv[:, C:2 * C], qkv[:, 2 * C:], n_head, mask), p, pre + "attn.proj")


def cross_attn(x, enc, p, pre, n_head):
    C = x.shape[-1]
    q = linear(x, p, pre + "cross.q")
    kv = linear(enc, p, pre + "cross.kv")
    return linear(heads_attention(q, kv[:, :C], kv[:, C:], n_head), p, pre + "cross.proj")


def ffn(x, p, pre, activation):
    z = linear(x, p, pre + "ffn.fc1")
    z = F.gelu(z, approximate="tanh") if activation == "gelu" else F.relu(z)
    return linear(z, p, pre + "ffn.fc2")


def encoder_block(x, p, pre, n_head, norm, activation, mask):
    if norm == "pre":
        h = x + self_attn(layer_norm(x, p, pre + "ln1"), p, pre, n_head, mask)
        return h + ffn(layer_norm(h, p, pre + "ln2"), p, pre, activation)
    h = layer_norm(x + self_attn(x, p, pre, n_head, mask), p, pre + "ln1")
    return layer_norm(h + ffn(h, p, pre, activation), p, pre + "ln2")


def decoder_block(x, enc, p, pre, n_head, norm, activation, mask):
    if norm == "pre":
        s1 = x + self_attn(layer_norm(x, p, pre + "ln1"), p, pre, n_head, mask)
        sc = s1 + cross_attn(layer_norm(s1, p, pre + "ln_cross"), enc, p, pre, n_head)
        return sc + ffn(layer_norm(sc, p, pre + "ln2"), p, pre, activation)
    h1 = layer_norm(x + self_attn(x, p, pre, n_head, mask), p, pre + "ln1")
    hc = layer_norm(h1 + cross_attn(h1, enc, p, pre, n_head), p, pre + "ln_cross")
    return layer_norm(hc + ffn(hc, p, pre, activation), p, pre + "ln2")


def encoder_stack(x, p, pre, st, norm, activation):
    """x [T, C] (embedded) -> final hidden state [T, C]. st: dict n_layer, n_head, attn."""
    mask = visible(st["attn"], x.shape[0], causal=False)
    for i in range(st["n_layer"]):
        x = encoder_block(x, p, "%sblocks.%d." % (pre, i), st["n_head"], norm, activation, mask)
    return layer_norm(x, p, pre + "ln_f") if norm == "pre" else x


def decoder_stack(x, enc, p, pre, st, norm, activation):
    """x [T, C] (embedded decoder input), enc [S, C_enc] -> final hidden state [T, C]."""
    mask = visible(st["attn"], x.shape[0], causal=True)
    for i in range(st["n_layer"]):
        x = decoder_block(x, enc, p, "%sblocks.%d." % (pre, i), st["n_head"], norm, activation, mask)
    return layer_norm(x, p, pre + "ln_f") if norm == "pre" else x


def block_shapes(pre, n_layer, C, F_, C_enc=None):
    """name -> shape of a stack's blocks (with the decoder's cross-attention when C_enc is given) and, the
    caller adds ln_f. Order as longctx lists them: every layer's block tensors, then every layer's cross."""
    s = {}
    for i in range(n_layer):
        b = "%sblocks.%d." % (pre, i)
        s[b + "ln1.weight"], s[b + "ln1.bias"] = (C,), (C,)
        s[b + "attn.qkv.weight"], s[b + "attn.qkv.bias"] = (3 * C, C), (3 * C,)
        s[b + "attn.proj.weight"], s[b + "attn.proj.bias"] = (C, C), (C,)
        s[b + "ln2.weight"], s[b + "ln2.bias"] = (C,), (C,)
        s[b + "ffn.fc1.weight"], s[b + "ffn.fc1.bias"] = (F_, C), (F_,)
        s[b + "ffn.fc2.weight"], s[b + "ffn.fc2.bias"] = (C, F_), (C,)
    for i in range(n_layer if C_enc else 0):
        b = "%sblocks.%d." % (pre, i)
        s[b + "ln_cross.weight"], s[b + "ln_cross.bias"] = (C,), (C,)
        s[b + "cross.q.weight"], s[b + "cross.q.bias"] = (C, C), (C,)
        s[b + "cross.kv.weight"], s[b + "cross.kv.bias"] = (2 * C, C_enc), (2 * C,)
        s[b + "cross.proj.weight"], s[b + "cross.proj.bias"] = (C, C), (C,)
    return s


def random_params(shapes, rng):
    """float64 numpy parameters rounded to float32 (the fixtures' convention): LayerNorm weights 1 + N(0, 0.1),
    biases N(0, 0.1), everything else N(0, 0.3), drawn in the order of `shapes`."""
    import numpy as np
    out = {}
    for name, shape in shapes.items():
        is_ln = re.search(r"(ln\d|ln_f|ln_cross)\.weight$", name) is not None
        if is_ln:
            v = 1.0 + rng.normal(0.0, 0.1, size=shape)
        elif name.endswith(".bias"):
            v = rng.normal(0.0, 0.1, size=shape)
        else:
            v = rng.normal(0.0, 0.3, size=shape)
        out[name] = v.astype(np.float32).astype(np.float64)
    return out


def stack(n_layer, d_model, n_head, d_ff, attn="full"):
    """One stack's config (the fixture scripts' tables)."""
    return {"n_layer": n_layer, "d_model": d_model, "n_head": n_head, "d_ff": d_ff, "attn": attn}


def stack_meta(cfg, sides):
    """The checkpoint metadata of cfg's stacks `sides` ("enc", "dec", ...): "side.field" -> the value as text."""
    return {"%s.%s" % (side, k): str(v) for side in sides for k, v in cfg[side].items()}


def leaf_params(params):
    """name -> float64 torch leaf requiring grad."""
    return {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in params.items()}


def self_check():
    """The attention core against torch's multi-head attention (bidirectional and cross), the window mask."""
    g = torch.Generator().manual_seed(0)
    T, S, C, H = 5, 4, 6, 2
    q, k, v = (torch.randn(n, C, generator=g, dtype=torch.float64) for n in (T, S, S))
    mha = torch.nn.MultiheadAttention(C, H, bias=False, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(C, dtype=torch.float64).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(C, dtype=torch.float64))
    want, _ = mha(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1))
    assert torch.allclose(heads_attention(q, k, v, H), want.squeeze(1), atol=1e-12)
    m = visible("window:w=1", 4, causal=False)
    assert m.tolist() == [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    assert visible("window:w=1", 3, causal=True).tolist() == [[1, 0, 0], [1, 1, 0], [0, 1, 1]]
