"""PyTorch reference of longctx's vanilla byte-level decoder LM.

This module is the executable form of the model definition that the C library implements:

  h = wte[x] + wpe[arange(T)]; h = dropout(h)
  pre-LN  layer:  h = h + dropout(attn(ln1(h)));  h = h + dropout(ffn(ln2(h)))
  post-LN layer:  h = ln1(h + dropout(attn(h)));  h = ln2(h + dropout(ffn(h)))
  attn(a): qkv = a @ Wqkv^T + bqkv; q, k, v = qkv[..., 0:C], qkv[..., C:2C], qkv[..., 2C:3C];
           head j uses columns j*D:(j+1)*D of each; causal softmax(q k^T / sqrt(D)) v per head;
           heads concatenated (head j at columns j*D..); out = y @ Wproj^T + bproj
  ffn(a):  fc2(act(fc1(a))), act = GELU (tanh approximation) or ReLU
  pre-LN only: h = ln_f(h) at the end (post-LN has no ln_f)
  logits = h @ wte^T (tied) or h @ lm_head^T (untied), no bias
  LayerNorm eps 1e-5 with affine weight and bias; loss = mean cross-entropy over all B*T positions.

Parameter names (and the order used in files) are given by param_names(cfg); shapes by
param_shapes(cfg). They coincide with the module's state_dict() keys and order.

The module works in whatever dtype its parameters have (float64 for fixtures, float32 for
benchmarks). Importing this file needs only torch.
"""
import math
from collections import OrderedDict
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 256
LN_EPS = 1e-5


@dataclass
class BlockConfig:
    """What LMConfig and xl_ref.XLConfig share: the block's options, their checks, head_dim, as_dict."""
    n_layer: int = 2
    d_model: int = 16
    n_head: int = 2
    d_ff: int = 40
    seq_len: int = 8
    norm: str = "pre"          # "pre" | "post"
    activation: str = "gelu"   # "gelu" (tanh approximation) | "relu"
    tied: bool = True
    dropout: float = 0.0
    vocab: int = VOCAB

    def __post_init__(self):
        if self.norm not in ("pre", "post"):
            raise ValueError("norm must be 'pre' or 'post', got %r" % (self.norm,))
        if self.activation not in ("gelu", "relu"):
            raise ValueError("activation must be 'gelu' or 'relu', got %r" % (self.activation,))
        if self.d_model % self.n_head != 0:
            raise ValueError("d_model %d not divisible by n_head %d" % (self.d_model, self.n_head))
        if self.vocab != VOCAB:
            raise ValueError("vocab must be 256 (bytes)")
        self.tied = bool(int(self.tied))

    @property
    def head_dim(self):
        return self.d_model // self.n_head

    def as_dict(self):
        return asdict(self)


@dataclass
class LMConfig(BlockConfig):
    """The vanilla model's options: BlockConfig's (seq_len is also the number of learned positions)."""


def param_shapes(cfg):
    """OrderedDict name -> shape, in longctx's canonical order."""
    C, T, V = cfg.d_model, cfg.seq_len, cfg.vocab
    s = OrderedDict()
    s["wte"] = (V, C)
    s["wpe"] = (T, C)
    for i in range(cfg.n_layer):
        p = "blocks.%d." % i
        add_layernorm_shapes(s, p + "ln1", C)
        s[p + "attn.qkv.weight"] = (3 * C, C)
        s[p + "attn.qkv.bias"] = (3 * C,)
        s[p + "attn.proj.weight"] = (C, C)
        s[p + "attn.proj.bias"] = (C,)
        add_ffn_shapes(s, p, cfg)
    add_output_shapes(s, cfg)
    return s


def add_layernorm_shapes(s, name, C):
    """Adds LayerNorm `name`'s weight and bias (C each) to s."""
    s[name + ".weight"] = (C,)
    s[name + ".bias"] = (C,)


def add_ffn_shapes(s, p, cfg):
    """Adds ln2 and the feed-forward sublayer of the block named p ("blocks.i.") to s (both models)."""
    C, F_ = cfg.d_model, cfg.d_ff
    add_layernorm_shapes(s, p + "ln2", C)
    s[p + "ffn.fc1.weight"] = (F_, C)
    s[p + "ffn.fc1.bias"] = (F_,)
    s[p + "ffn.fc2.weight"] = (C, F_)
    s[p + "ffn.fc2.bias"] = (C,)


def add_output_shapes(s, cfg):
    """Adds the final LayerNorm (pre-LN) and the untied output matrix to s (both models)."""
    if cfg.norm == "pre":
        add_layernorm_shapes(s, "ln_f", cfg.d_model)
    if not cfg.tied:
        s["lm_head.weight"] = (cfg.vocab, cfg.d_model)


def param_names(cfg):
    return list(param_shapes(cfg).keys())


def _has_public_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg, attn_impl="math"):
        super().__init__()
        C = cfg.d_model
        self.n_head = cfg.n_head
        self.head_dim = cfg.head_dim
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        # "math": explicit scores, causal mask, torch.softmax (the definition; works in any dtype).
        # "sdpa": torch.nn.functional.scaled_dot_product_attention(is_causal=True) (PyTorch >= 2.0).
        if attn_impl == "auto":
            attn_impl = "sdpa" if _has_public_sdpa() else "math"
        if attn_impl == "sdpa" and not _has_public_sdpa():
            raise RuntimeError("torch %s has no F.scaled_dot_product_attention" % torch.__version__)
        if attn_impl not in ("math", "sdpa"):
            raise ValueError("attn_impl must be math, sdpa or auto")
        self.attn_impl = attn_impl
        # Boolean "future" mask (True above the diagonal); a buffer, not a parameter.
        self.register_buffer("_future", torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, a):
        B, T, C = a.shape
        H, D = self.n_head, self.head_dim
        qkv = self.qkv(a)                                   # [B, T, 3C]
        q, k, v = qkv.split(C, dim=-1)                      # columns 0:C, C:2C, 2C:3C
        q = q.view(B, T, H, D).transpose(1, 2)              # [B, H, T, D]; head j = columns j*D:(j+1)*D
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        if self.attn_impl == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D))   # [B, H, T, T]
            scores = scores.masked_fill(self._future[:T, :T], float("-inf"))
            y = torch.matmul(torch.softmax(scores, dim=-1), v)                     # [B, H, T, D]
        y = y.transpose(1, 2).reshape(B, T, C)              # concat heads: head j at columns j*D..
        return self.proj(y)


class FFN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.activation = cfg.activation

    def forward(self, a):
        z = self.fc1(a)
        z = F.gelu(z, approximate="tanh") if self.activation == "gelu" else F.relu(z)
        return self.fc2(z)


class Block(nn.Module):
    def __init__(self, cfg, attn_impl="math"):
        super().__init__()
        # Registration order fixes the state_dict order: ln1, attn.qkv, attn.proj, ln2, ffn.fc1, ffn.fc2.
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=LN_EPS)
        self.attn = CausalSelfAttention(cfg, attn_impl)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=LN_EPS)
        self.ffn = FFN(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.pre = cfg.norm == "pre"

    def forward(self, h):
        if self.pre:
            h = h + self.drop(self.attn(self.ln1(h)))
            h = h + self.drop(self.ffn(self.ln2(h)))
        else:
            h = self.ln1(h + self.drop(self.attn(h)))
            h = self.ln2(h + self.drop(self.ffn(h)))
        return h


class LongctxParams:
    """Parameters by longctx's names, shared by LM and xl_ref.XL: the training init, export and import in
    the canonical order. A subclass sets self.cfg and `shapes_of`, its module's param_shapes(cfg)."""

    @torch.no_grad()
    def init_weights(self, generator=None):
        """Training init: matrices (wte, wpe, qkv, r, fc1, lm_head) ~ N(0, 0.02); attn.proj.weight and
        ffn.fc2.weight ~ N(0, 0.02/sqrt(2L)); biases and XL's u, v 0; LayerNorm weight 1, bias 0."""
        resid_std = 0.02 / math.sqrt(2 * self.cfg.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("attn.proj.weight") or name.endswith("ffn.fc2.weight"):
                p.normal_(0.0, resid_std, generator=generator)
            elif name.endswith(".bias") or name in ("u", "v") or name.endswith(".u") or name.endswith(".v"):
                p.zero_()
            elif ".ln" in name or name.startswith("ln_f"):   # LayerNorm weights
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02, generator=generator)

    def export_params(self):
        """OrderedDict name -> detached tensor (canonical order)."""
        named = dict(self.named_parameters())
        return OrderedDict((n, named[n].detach()) for n in self.shapes_of(self.cfg))

    def export_grads(self, prefix="grad."):
        """OrderedDict '<prefix><name>' -> gradient (zeros where none was computed), canonical order."""
        named = dict(self.named_parameters())
        out = OrderedDict()
        for n in self.shapes_of(self.cfg):
            p = named[n]
            out[prefix + n] = p.grad.detach() if p.grad is not None else torch.zeros_like(p)
        return out

    @torch.no_grad()
    def import_params(self, params, strict=True):
        """Copy values from a mapping name -> array/tensor (numpy or torch); checks shapes.
        With strict, every parameter must be present, and a longctx parameter name this model does not
        have (a global-token projection, tied Q/K, a kind's parameters) is refused; other extra keys
        (tokens, memories, gradients, moments) are ignored."""
        shapes = self.shapes_of(self.cfg)
        named = dict(self.named_parameters())
        if strict:
            refuse_stray_params(params, shapes)
        for n, shape in shapes.items():
            if n not in params:
                if strict:
                    raise KeyError("missing parameter %s" % n)
                continue
            v = torch.as_tensor(params[n])
            if tuple(v.shape) != tuple(shape):
                raise ValueError("parameter %s: shape %s, expected %s" % (n, tuple(v.shape), shape))
            named[n].copy_(v.to(named[n].dtype))


class LM(LongctxParams, nn.Module):
    """Vanilla byte-level decoder LM. forward(tokens[B,T]) -> logits[B,T,256];
    loss(tokens, targets) -> mean cross-entropy."""
    shapes_of = staticmethod(param_shapes)

    def __init__(self, cfg, attn_impl="math", dtype=torch.float32):
        super().__init__()
        self.cfg = cfg
        C = cfg.d_model
        self.wte = nn.Parameter(torch.empty(cfg.vocab, C))
        self.wpe = nn.Parameter(torch.empty(cfg.seq_len, C))
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg, attn_impl) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(C, eps=LN_EPS) if cfg.norm == "pre" else None
        self.lm_head = None if cfg.tied else nn.Linear(C, cfg.vocab, bias=False)
        self.to(dtype)
        self.init_weights()
        names = [n for n, _ in self.named_parameters()]
        assert names == param_names(cfg), (names, param_names(cfg))

    def forward(self, tokens):
        B, T = tokens.shape
        if T > self.cfg.seq_len:
            raise ValueError("sequence length %d exceeds seq_len %d" % (T, self.cfg.seq_len))
        h = self.wte[tokens] + self.wpe[:T]
        h = self.drop(h)
        for blk in self.blocks:
            h = blk(h)
        if self.ln_f is not None:
            h = self.ln_f(h)
        w_out = self.wte if self.lm_head is None else self.lm_head.weight
        return torch.matmul(h, w_out.t())

    def loss(self, tokens, targets, logits=None):
        if logits is None:
            logits = self(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long())


def refuse_stray_params(params, shapes):
    """ValueError when `params` holds a longctx parameter name (docs/reference/checkpoint.md) outside `shapes`."""
    top = {"wte", "wpe", "ln_f.weight", "ln_f.bias", "lm_head.weight", "u", "v"}
    for n in params:
        if (n.startswith("blocks.") or n in top) and n not in shapes:
            raise ValueError("parameter %s is not part of the model this reference builds" % n)


def config_from_metadata(meta):
    """LMConfig from a fixture's / checkpoint's string metadata; ValueError when it describes anything this
    reference does not implement (st_io.check_reference_metadata)."""
    import st_io  # the references' shared reader, beside this file
    st_io.check_reference_metadata(meta, "vanilla")
    return LMConfig(n_layer=int(meta["n_layer"]), d_model=int(meta["d_model"]), n_head=int(meta["n_head"]),
                    d_ff=int(meta["d_ff"]), seq_len=int(meta["seq_len"]), norm=meta["norm"],
                    activation=meta["activation"], tied=bool(int(meta["tied"])),
                    dropout=float(meta.get("dropout", "0")), vocab=int(meta.get("vocab", "256")))
