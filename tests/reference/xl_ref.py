"""PyTorch reference of longctx's Transformer-XL byte-level LM (segment recurrence + relative positions).

This module is the executable form of the model definition that the C library implements
(Dai et al. 2019, "Transformer-XL"; the relative-attention variant of the original code's
RelPartialLearnableMultiHeadAttn, with longctx's naming and an optional final LayerNorm):

  h = wte[x] * sqrt(C)                        (no position table; dropout after it)
  layer i, input h [B, T, C], memory mem[i] [B, M, C] (M = 0 on the first segment):
    cat = concat(mem[i], h) along time          [B, S, C], S = M + T
    a   = ln1(cat) (pre-LN, memory rows too) | cat (post-LN)
    qkv = a @ Wqkv^T (no bias); q = rows M..S-1 of columns [0,C); k, v = columns [C,2C), [2C,3C), all S rows
    R[d] = [sin(pos(d) * inv_freq) | cos(pos(d) * inv_freq)], d = 0..S-1, inv_freq[k] = 10000^(-2k/C),
           pos(d) = min(d, clamp_len) if clamp_len > 0 else d;  r = R @ Wr^T  [S, C]
    head h (columns h*D..(h+1)*D of q, k, v, r):
      score[i, j] = ((q_i + u_h) . k_j + (q_i + v_h) . r[M + i - j]) / sqrt(D)
      visible iff j <= M + i  and (same_length == 0 or j > M + i - mem_len)
      att = softmax over visible j of score, times v
    out = concat_heads(att) @ Wproj^T (no bias)
    pre-LN:  s1 = h + out;        h' = s1 + ffn(ln2(s1))
    post-LN: s1 = ln1(h + out);   h' = ln2(s1 + ffn(s1))
    ffn(z) = fc2(act(fc1(z))), act = GELU (tanh approximation) | ReLU
    new_mem[i] = last mem_len rows of concat(mem[i], h) (h = this layer's INPUT), detached
  pre-LN: h = ln_f(h);  logits = h @ wte^T (tied) | h @ lm_head^T (untied)
  loss = mean cross-entropy over the B*T positions; LayerNorm eps 1e-5.

u, v ([H, D]) are per layer (blocks.i.attn.u / .v) when shared_uv = 0, or one pair shared by all
layers (top-level u / v) when shared_uv = 1 (the original code's untie_r = False).

Parameter names and the canonical order used in files are given by param_names(cfg), shapes by
param_shapes(cfg). NOTE: unlike lm_ref, the module's named_parameters()/state_dict() order is NOT
the canonical order (top-level wte/u/v come before the blocks there); always use param_names(),
export_params() and import_params(), which use the canonical order.

The module works in the dtype of its parameters (float64 for fixtures). It needs torch and lm_ref.py
beside it (the feed-forward sublayer, LayerNorm's eps, and export / import by names are the vanilla
model's).
"""
import math
from collections import OrderedDict
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from lm_ref import (FFN, LN_EPS, BlockConfig, LongctxParams,  # beside this file
                    add_ffn_shapes, add_layernorm_shapes, add_output_shapes)


@dataclass
class XLConfig(BlockConfig):
    """lm_ref.BlockConfig's options (seq_len: the segment length T, nominal; forward accepts any T), then:"""
    d_ff: int = 32
    mem_len: int = 8           # memory rows kept per layer
    clamp_len: int = 0         # 0 = off; else relative distances are clamped to clamp_len
    same_length: bool = False  # each query sees at most mem_len keys (itself included)
    shared_uv: bool = False    # one (u, v) pair for all layers

    def __post_init__(self):
        super().__post_init__()
        if self.d_model % 2 != 0:
            raise ValueError("d_model must be even (sin | cos halves of the relative embedding)")
        if self.mem_len < 0 or self.clamp_len < 0:
            raise ValueError("mem_len and clamp_len must be >= 0")
        self.same_length = bool(int(self.same_length))
        self.shared_uv = bool(int(self.shared_uv))
        if self.same_length and self.mem_len < 1:
            raise ValueError("same_length needs mem_len >= 1 (otherwise no key would be visible)")

    @property
    def window(self):
        """Attention window passed to rel_attention: mem_len with same_length, else 0 (none)."""
        return self.mem_len if self.same_length else 0

    def metadata(self, batch):
        """The fixture/checkpoint metadata strings for this config (without 'generator')."""
        return {"n_layer": str(self.n_layer), "d_model": str(self.d_model), "n_head": str(self.n_head),
                "d_ff": str(self.d_ff), "seq_len": str(self.seq_len), "mem_len": str(self.mem_len),
                "clamp_len": str(self.clamp_len), "same_length": "1" if self.same_length else "0",
                "shared_uv": "1" if self.shared_uv else "0", "norm": self.norm,
                "activation": self.activation, "tied": "1" if self.tied else "0", "vocab": str(self.vocab),
                "batch": str(batch), "model": "xl", "dropout": "%g" % self.dropout}


def param_shapes(cfg):
    """OrderedDict name -> shape, in longctx's canonical order."""
    C, V, H, D = cfg.d_model, cfg.vocab, cfg.n_head, cfg.head_dim
    s = OrderedDict()
    s["wte"] = (V, C)
    for i in range(cfg.n_layer):
        p = "blocks.%d." % i
        add_layernorm_shapes(s, p + "ln1", C)
        s[p + "attn.qkv.weight"] = (3 * C, C)
        s[p + "attn.r.weight"] = (C, C)
        if not cfg.shared_uv:
            s[p + "attn.u"] = (H, D)
            s[p + "attn.v"] = (H, D)
        s[p + "attn.proj.weight"] = (C, C)
        add_ffn_shapes(s, p, cfg)
    if cfg.shared_uv:
        s["u"] = (H, D)
        s["v"] = (H, D)
    add_output_shapes(s, cfg)
    return s


def param_names(cfg):
    return list(param_shapes(cfg).keys())


# ---- relative positions ------------------------------------------------------------------------


def rel_positions(S, clamp_len=0, dtype=torch.float64, device=None):
    """pos(d) for distances d = 0..S-1 (float tensor [S])."""
    pos = torch.arange(S, dtype=dtype, device=device)
    if clamp_len > 0:
        pos = pos.clamp(max=float(clamp_len))
    return pos


def sinusoid_table(S, C, clamp_len=0, dtype=torch.float64, device=None):
    """R [S, C]: row d = [sin(pos(d) * inv_freq) | cos(pos(d) * inv_freq)], inv_freq[k] = 1/10000^(2k/C),
    k = 0..C/2-1 (halves, not interleaved). Row d is distance d (not the original code's reversed order)."""
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, C, 2, dtype=dtype, device=device) / C))
    ang = torch.outer(rel_positions(S, clamp_len, dtype, device), inv_freq)
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1)


def visible_mask(T, M, causal=True, window=0, device=None):
    """Bool [T, S], S = M + T: True where query i (0..T-1) may attend key j (0..S-1).
    causal: j <= M + i; window W > 0: additionally j > M + i - W (at most W keys, itself included)."""
    S = M + T
    dist = M + torch.arange(T, device=device)[:, None] - torch.arange(S, device=device)[None, :]
    vis = torch.ones(T, S, dtype=torch.bool, device=device)
    if causal:
        vis &= dist >= 0
    if window > 0:
        vis &= dist < window
    return vis


def rel_attention(q, k, v, r, u, vb, M, causal=True, same_length_window=0, scale=None):
    """Transformer-XL relative attention core on per-head tensors.

    q [B, T, H, D]; k, v [B, S, H, D] with S = M + T (the M memory rows first);
    r [S, H, D] the projected relative embeddings, row d = distance d (d = 0..S-1);
    u, vb [H, D] the content and position biases (the paper's u and v; vb avoids clashing with values).
    score[b,h,i,j] = scale * ((q[b,i,h] + u[h]) . k[b,j,h] + (q[b,i,h] + vb[h]) . r[M+i-j, h]),
    scale = 1/sqrt(D) unless given; keys with j > M+i (causal) or j <= M+i-W (window W > 0) are -inf.
    Returns (out [B, T, H, D], lse [B, H, T]) with lse the log-sum-exp over j of the scaled, masked
    scores. causal must be True: r holds non-negative distances only (a non-causal query would need
    r[M+i-j] for j > M+i).
    """
    if not causal:
        raise ValueError("relative attention needs causal=True (r covers distances 0..S-1 only)")
    B, T, H, D = q.shape
    S = k.shape[1]
    if S != M + T or tuple(k.shape) != (B, S, H, D) or tuple(v.shape) != (B, S, H, D):
        raise ValueError("shapes: q %s k %s v %s M %d" % (tuple(q.shape), tuple(k.shape), tuple(v.shape), M))
    if r.shape[0] < S or tuple(r.shape[1:]) != (H, D):
        raise ValueError("r must be [>=S, H, D], got %s" % (tuple(r.shape),))
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    qh = q.permute(0, 2, 1, 3)                             # [B, H, T, D]
    kh = k.permute(0, 2, 1, 3)                             # [B, H, S, D]
    vh = v.permute(0, 2, 1, 3)
    rh = r[:S].permute(1, 0, 2)                            # [H, S(dist), D]
    ac = torch.matmul(qh + u[None, :, None, :], kh.transpose(-2, -1))          # [B, H, T, S(key)]
    bd_dist = torch.matmul(qh + vb[None, :, None, :], rh.transpose(-2, -1))    # [B, H, T, S(dist)]
    dist = M + torch.arange(T, device=q.device)[:, None] - torch.arange(S, device=q.device)[None, :]
    idx = dist.clamp(0, S - 1).expand(B, H, T, S)
    bd = torch.gather(bd_dist, -1, idx)                    # bd[..., i, j] = bd_dist[..., i, M+i-j]
    score = (ac + bd) * scale
    vis = visible_mask(T, M, causal, same_length_window, device=q.device)
    score = score.masked_fill(~vis, float("-inf"))
    lse = torch.logsumexp(score, dim=-1)                   # [B, H, T]
    p = torch.exp(score - lse[..., None])
    out = torch.matmul(p, vh).permute(0, 2, 1, 3)          # [B, T, H, D]
    return out, lse


# ---- modules -----------------------------------------------------------------------------------


class RelMultiHeadAttn(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, H, D = cfg.d_model, cfg.n_head, cfg.head_dim
        self.cfg = cfg
        # Registration order = canonical order within the block: qkv, r, u, v, proj.
        self.qkv = nn.Linear(C, 3 * C, bias=False)
        self.r = nn.Linear(C, C, bias=False)
        if not cfg.shared_uv:
            self.u = nn.Parameter(torch.empty(H, D))
            self.v = nn.Parameter(torch.empty(H, D))
        else:
            self.u = None
            self.v = None
        self.proj = nn.Linear(C, C, bias=False)

    def forward(self, a, M, u=None, v=None):
        """a [B, S, C] (memory rows then segment rows, already normalized for pre-LN)."""
        B, S, C = a.shape
        T = S - M
        H, D = self.cfg.n_head, self.cfg.head_dim
        u = self.u if self.u is not None else u
        vb = self.v if self.v is not None else v
        qkv = self.qkv(a)                                               # [B, S, 3C]
        q = qkv[:, M:, 0:C].reshape(B, T, H, D)
        k = qkv[:, :, C:2 * C].reshape(B, S, H, D)
        val = qkv[:, :, 2 * C:3 * C].reshape(B, S, H, D)
        R = sinusoid_table(S, C, self.cfg.clamp_len, dtype=a.dtype, device=a.device)
        r = self.r(R).reshape(S, H, D)
        y, _ = rel_attention(q, k, val, r, u, vb, M, causal=True, same_length_window=self.cfg.window)
        return self.proj(y.reshape(B, T, C))


class XLBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=LN_EPS)
        self.attn = RelMultiHeadAttn(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=LN_EPS)
        self.ffn = FFN(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.pre = cfg.norm == "pre"

    def forward(self, h, mem, u=None, v=None):
        M = mem.shape[1]
        cat = torch.cat([mem, h], dim=1)
        if self.pre:
            s1 = h + self.drop(self.attn(self.ln1(cat), M, u, v))
            return s1 + self.drop(self.ffn(self.ln2(s1)))
        s1 = self.ln1(h + self.drop(self.attn(cat, M, u, v)))
        return self.ln2(s1 + self.drop(self.ffn(s1)))


class XL(LongctxParams, nn.Module):
    """Transformer-XL byte-level LM. forward(tokens [B,T], mems) -> (logits [B,T,256], new_mems);
    mems is None (empty memory) or a list of n_layer tensors [B, M, C]; new_mems are detached.
    init_weights, export_params, export_grads and import_params come from lm_ref.LongctxParams."""
    shapes_of = staticmethod(param_shapes)

    def __init__(self, cfg, dtype=torch.float32):
        super().__init__()
        self.cfg = cfg
        C, H, D = cfg.d_model, cfg.n_head, cfg.head_dim
        self.wte = nn.Parameter(torch.empty(cfg.vocab, C))
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([XLBlock(cfg) for _ in range(cfg.n_layer)])
        if cfg.shared_uv:
            self.u = nn.Parameter(torch.empty(H, D))
            self.v = nn.Parameter(torch.empty(H, D))
        else:
            self.u = None
            self.v = None
        self.ln_f = nn.LayerNorm(C, eps=LN_EPS) if cfg.norm == "pre" else None
        self.lm_head = None if cfg.tied else nn.Linear(C, cfg.vocab, bias=False)
        self.to(dtype)
        self.init_weights()
        names = sorted(n for n, _ in self.named_parameters())
        assert names == sorted(param_names(cfg)), (names, param_names(cfg))

    def init_mems(self, batch):
        C = self.cfg.d_model
        return [self.wte.new_zeros(batch, 0, C) for _ in range(self.cfg.n_layer)]

    def forward(self, tokens, mems=None):
        B, T = tokens.shape
        C = self.cfg.d_model
        if mems is None:
            mems = self.init_mems(B)
        if len(mems) != self.cfg.n_layer:
            raise ValueError("need %d memories, got %d" % (self.cfg.n_layer, len(mems)))
        h = self.drop(self.wte[tokens] * math.sqrt(C))
        new_mems = []
        for i, blk in enumerate(self.blocks):
            mem = mems[i]
            if mem.shape[0] != B or mem.shape[2] != C or mem.shape[1] != mems[0].shape[1]:
                raise ValueError("memory %d has shape %s" % (i, tuple(mem.shape)))
            if self.cfg.mem_len > 0:
                new_mems.append(torch.cat([mem, h], dim=1)[:, -self.cfg.mem_len:].detach())
            else:
                new_mems.append(h.new_zeros(B, 0, C))
            h = blk(h, mem, self.u, self.v)
        if self.ln_f is not None:
            h = self.ln_f(h)
        w_out = self.wte if self.lm_head is None else self.lm_head.weight
        return torch.matmul(h, w_out.t()), new_mems

    @staticmethod
    def loss_from_logits(logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long())


def config_from_metadata(meta):
    """XLConfig from a fixture's / checkpoint's string metadata; ValueError when it describes anything this
    reference does not implement (st_io.check_reference_metadata)."""
    import st_io  # the references' shared reader, beside this file
    st_io.check_reference_metadata(meta, "xl")
    return XLConfig(n_layer=int(meta["n_layer"]), d_model=int(meta["d_model"]), n_head=int(meta["n_head"]),
                    d_ff=int(meta["d_ff"]), seq_len=int(meta["seq_len"]), mem_len=int(meta["mem_len"]),
                    clamp_len=int(meta.get("clamp_len", "0")), same_length=bool(int(meta.get("same_length", "0"))),
                    shared_uv=bool(int(meta.get("shared_uv", "0"))), norm=meta["norm"],
                    activation=meta["activation"], tied=bool(int(meta["tied"])),
                    dropout=float(meta.get("dropout", "0")), vocab=int(meta.get("vocab", "256")))
