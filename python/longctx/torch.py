"""longctx checkpoints as PyTorch modules: ``longctx.torch.load(path)``.

``load(path)`` reads a longctx checkpoint (safetensors, parsed here with the standard library; no
``safetensors`` package and no C library needed) and returns, by the family its metadata names, a
``torch.nn.Module`` that computes what the C model computes in evaluation. A language model gives a
:class:`LongctxLM`: the logits of the byte after every position (the causal decoder) or of every position
(the masked-LM encoder), and, for a Transformer-XL model, the memory in and out. A classifier gives a
``LongctxClassifier`` (its logits), a HIBERT model a ``LongctxHIBERT`` (sentence scores): their modules,
built from the blocks below, are in longctx.torch_families (and importable from here).

Supported: the vanilla and Transformer-XL models, pre-/post-LN, GELU (tanh approximation) / ReLU, tied
or untied output projection, the masked-LM encoder (bidirectional, mask symbol 256), extra (global)
tokens, reversible layers, feed-forward chunking (changes nothing), queries/keys tied across heads
(``qk_share``), attention modules shared across layers (``attn_share``), and every attention kind whose
pattern the checkpoint fixes, per layer and per head group: ``full`` (with XL ``same_length``),
``window`` (per-head dilation, Longformer global tokens with their own projections), ``block``,
``strided``, ``compressed``, ``bigbird`` (ITC and ETC; the random blocks are re-drawn here exactly as
the C library draws them from the layer's fixed seed: the checkpoint records no plan because the plan
is a pure function of the spec, the layer, the head group and the length), ``linformer`` (its learned
E, F), with Transformer-XL relative positions where the C model has them.

``lsh`` and ``routing`` (whose patterns come from hashing and k-means state) raise
:class:`UnsupportedAttentionError` (a ``NotImplementedError``) naming the kind, instead of computing
something else. Dropout is applied at the C model's sites (embedding, attention output, feed-forward
output) in training mode only, so ``module.eval()`` (the state ``load`` returns) is the C model's
inference; the dropout masks of training differ from the C library's.

The attention is written densely: each head group builds its [queries x keys] mask from the kind's
definition (docs/guides/attention.md), so memory is O(T S) per head (queries are processed in chunks to keep
it bounded); it is a faithful reference, not a fast kernel.
"""
import copy
import json
import math
import mmap
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["load", "read_checkpoint", "LongctxLM", "LongctxClassifier", "LongctxHIBERT", "UnsupportedAttentionError",
           "parse_attention_spec", "bigbird_plan", "sinusoid_table"]

LN_EPS = 1e-5
VOCAB = 256
MASK_TOKEN = 256
_M64 = (1 << 64) - 1
_MAX_GROUP_HEADS = 64  # LC_ATTN_MAX_HEADS: per-head option lists repeat over this many heads
_CHUNK_SCORES = 1 << 24  # scores per query chunk (B x heads x queries x keys) before splitting the queries


class UnsupportedAttentionError(NotImplementedError):
    """An attention kind this loader cannot reproduce (lsh, routing, a kind registered at run time)."""


# ---------------------------------------------------------------------------------------------- file

def read_checkpoint(path, with_optimizer=False):
    """(tensors, metadata) of a longctx safetensors file: tensors maps names to float32 CPU tensors
    (``optim.*`` AdamW moments left out unless with_optimizer), metadata the ``__metadata__`` strings."""
    with open(path, "rb") as f:
        try:  # the AdamW moments (two thirds of a checkpoint) are never read
            raw = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # an empty file, or one mmap cannot map
            raw = f.read()
    try:
        return _parse_safetensors(raw, path, with_optimizer)
    finally:
        if isinstance(raw, mmap.mmap):
            raw.close()


def _parse_safetensors(raw, path, with_optimizer):
    if len(raw) < 8:
        raise ValueError("%s: not a safetensors file (%d bytes)" % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError("%s: header of %d bytes runs past the end of the file" % (path, n))
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name.startswith("optim.") and not with_optimizer:
            continue
        if info.get("dtype") != "F32":
            raise ValueError("%s: tensor %s has dtype %s (longctx writes F32)" % (path, name, info.get("dtype")))
        begin, end = info["data_offsets"]
        shape = [int(s) for s in info["shape"]]
        count = 1
        for s in shape:
            count *= s
        if end - begin != 4 * count or base + end > len(raw):
            raise ValueError("%s: tensor %s: byte range does not match its shape %s" % (path, name, shape))
        if count == 0:
            tensors[name] = torch.zeros(shape)
            continue
        t = torch.frombuffer(bytearray(raw[base + begin:base + end]), dtype=torch.float32)
        if sys.byteorder != "little":
            t = t.byteswap() if hasattr(t, "byteswap") else torch.from_numpy(t.numpy().byteswap())
        tensors[name] = t.reshape(shape)
    return tensors, meta


def _config_from_metadata(meta, path):
    if meta.get("format") != "longctx":
        raise ValueError("%s: not a longctx checkpoint (metadata format=%r)" % (path, meta.get("format")))
    model = meta.get("model")
    if model not in ("vanilla", "xl"):
        raise ValueError("%s: a %s checkpoint, not a language model (longctx.torch.load reads model = vanilla, "
                         "xl, classify or hibert)" % (path, model))

    def i(key, default=None):
        if key not in meta:
            if default is None:
                raise ValueError("%s: metadata key %s is missing" % (path, key))
            return default
        return int(meta[key])

    cfg = {
        "model": model, "vocab": i("vocab"), "n_layer": i("n_layer"), "d_model": i("d_model"),
        "n_head": i("n_head"), "d_ff": i("d_ff"), "seq_len": i("seq_len"), "norm": meta["norm"],
        "activation": meta["activation"], "tied": bool(i("tied")), "dropout": float(meta.get("dropout", "0")),
        "attn": meta.get("attn", "") or "full", "qk_share": i("qk_share", 0), "attn_share": i("attn_share", 0),
        "objective": meta.get("objective", "clm"), "reversible": bool(i("reversible", 0)),
        "ffn_chunk": i("ffn_chunk", 0), "extra_tokens": i("extra_tokens", 0),
        "mem_len": i("mem_len", 0), "clamp_len": i("clamp_len", 0), "same_length": bool(i("same_length", 0)),
        "shared_uv": bool(i("shared_uv", 0)), "memory_rows": i("state.memory_rows", 0),
        "memory_batch": i("state.memory_batch", 0), "step": i("step", 0),
    }
    if cfg["vocab"] != VOCAB:
        raise ValueError("%s: vocab %d (longctx models are byte-level, 256)" % (path, cfg["vocab"]))
    if cfg["norm"] not in ("pre", "post") or cfg["activation"] not in ("gelu", "relu"):
        raise ValueError("%s: norm %r / activation %r" % (path, cfg["norm"], cfg["activation"]))
    if cfg["objective"] not in ("clm", "mlm"):
        raise ValueError("%s: objective %r" % (path, cfg["objective"]))
    if cfg["d_model"] % cfg["n_head"]:
        raise ValueError("%s: d_model %d not divisible by n_head %d" % (path, cfg["d_model"], cfg["n_head"]))
    return cfg


# ---------------------------------------------------------------------------------------- the spec

_KINDS = {
    "full": {},
    "window": {"w": 64, "dil": [1]},
    "block": {"b": 64},
    "strided": {"s": 64},
    "compressed": {"w": 64, "s": 16},
    "bigbird": {"b": 64, "r": -1, "variant": "itc", "g": -1, "seed": 0},
    "linformer": {"k": 256, "share": "headwise"},
}
_UNSUPPORTED = {
    "lsh": "its pattern comes from angular-LSH buckets of the queries (Reformer)",
    "routing": "its pattern comes from the k-means centroids of its kind state (Routing Transformer)",
}


def _parse_group(text, H):
    kind, _, opts = text.partition(":")
    heads = None
    x = kind.find("x")
    if x > 0 and kind[:x].isdigit():
        heads = int(kind[:x])
        if heads < 1 or heads > H:
            raise ValueError("attention spec %r: head count %s is not in 1..%d" % (text, kind[:x], H))
        kind = kind[x + 1:]
    if kind in _UNSUPPORTED:
        raise UnsupportedAttentionError(
            "longctx.torch: attention kind %r is not supported: %s, which this loader does not reproduce "
            "(spec %r); supported kinds: %s" % (kind, _UNSUPPORTED[kind], text, ", ".join(_KINDS)))
    if kind not in _KINDS:
        raise UnsupportedAttentionError("longctx.torch: unknown attention kind %r (spec %r); supported kinds: %s"
                                        % (kind, text, ", ".join(_KINDS)))
    o = {k: (list(v) if isinstance(v, list) else v) for k, v in _KINDS[kind].items()}
    g = {"kind": kind, "heads": heads, "opts": o, "n_global": 0, "global_pos": None}
    for opt in filter(None, opts.split(",")) if opts else []:
        key, eq, value = opt.partition("=")
        if not eq or not key or not value:
            raise ValueError("attention spec %r: option %r is not key=value" % (text, opt))
        if key == "global":
            if "/" in value:
                g["global_pos"] = [int(p) for p in value.split("/")]
                g["n_global"] = len(g["global_pos"])
            else:
                g["n_global"] = int(value)
        elif key not in o:
            raise ValueError("attention spec %r: kind %s has no option %r" % (text, kind, key))
        elif key == "dil":
            o["dil"] = [int(d) for d in value.split("/")]
        elif key in ("variant", "share"):
            o[key] = value
        else:
            o[key] = int(value)
    if g["n_global"] and kind != "window":
        raise ValueError("attention spec %r: global tokens need the window kind" % text)
    return g


def parse_attention_spec(spec, n_layer, n_head):
    """Per layer, the list of head groups of an attention spec string (docs/guides/attention.md), each a dict
    kind, h0, heads, opts, n_global, global_pos. Raises UnsupportedAttentionError for lsh, routing and
    unknown kinds."""
    spec = spec or "full"
    parts = spec.split(";")
    if len(parts) not in (1, n_layer):
        raise ValueError("attention spec %r has %d layer specs for %d layers" % (spec, len(parts), n_layer))
    layers = []
    for part in parts:
        groups = [_parse_group(t, n_head) for t in part.split("+")]
        open_ = [g for g in groups if g["heads"] is None]
        used = sum(g["heads"] for g in groups if g["heads"] is not None)
        if len(open_) > 1:
            raise ValueError("attention spec %r: only one head group may leave out its head count" % part)
        if open_:
            open_[0]["heads"] = n_head - used
            used = n_head
        if used != n_head or any(g["heads"] < 1 for g in groups):
            raise ValueError("attention spec %r: head groups cover %d heads, the model has %d" % (part, used, n_head))
        h0 = 0
        for g in groups:
            g["h0"] = h0
            h0 += g["heads"]
        layers.append(groups)
    if len(layers) == 1:
        layers = [copy.deepcopy(layers[0]) for _ in range(n_layer)]
    return layers


# ------------------------------------------------------------------------- the C library's hashes

def _hash64(x):
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _seed_mix(seed, stream):
    return _hash64(seed ^ _hash64((stream + 0x632BE59BD9B4E019) & _M64))


def _layer_seed(owner):
    """tensors.seed of a layer's head groups come from this (models/lm/lm_forward.c: fixed per layer owner)."""
    return _seed_mix(0x6C6F6E67637478, owner)


# ---------------------------------------------------------------------------------------- bigbird

def _bigbird_random(o):
    return o["r"] if o["r"] >= 0 else (0 if o["variant"] == "etc" else 3)


def _bigbird_globals(o, T):
    if o["variant"] != "etc":
        return 0
    g = o["g"] if o["g"] >= 0 else o["b"]
    return min(g, T)


def bigbird_plan(o, H, T, seed):
    """The random blocks plan[h][i] (sorted, no -1 padding) the C kind draws (src/attn/bigbird.c,
    bb_random_blocks) for H heads at length T with tensors.seed = seed."""
    b, r, itc = o["b"], _bigbird_random(o), o["variant"] != "etc"
    G = _bigbird_globals(o, T)
    rest = T - G
    n = (rest + b - 1) // b if rest > 0 else 0
    lseed = _seed_mix(_seed_mix(seed, 0x6269676269726400), o["seed"] & 0xFFFFFFFF)
    sb0, sb1 = (1, n - 1 if n >= 2 else 1) if itc else (0, n)
    plan = []
    for h in range(H):
        rows = []
        for qb in range(n):
            if not (sb0 <= qb < sb1):
                rows.append([])
                continue
            lo1, hi1, lo2, hi2 = (1 if itc else 0), qb - 2, qb + 2, (n - 2 if itc else n - 1)
            len1 = hi1 - lo1 + 1 if hi1 >= lo1 else 0
            len2 = hi2 - lo2 + 1 if hi2 >= lo2 else 0
            m = len1 + len2
            k = min(r, m)
            stream = _seed_mix(_seed_mix(_seed_mix(lseed, n), h), qb)
            out = []
            for j in range(m - k, m):
                x = _seed_mix(stream, len(out))
                pick = ((x >> 32) * (j + 1)) >> 32
                if pick in out:
                    pick = j
                out.append(pick)
            rows.append(sorted(lo1 + p if p < len1 else lo2 + p - len1 for p in out))
        plan.append(rows)
    return plan


def _bigbird_mask(o, H, T, seed, causal, device):
    """bool [H, T, T]: query t of head h sees key s."""
    b, itc = o["b"], o["variant"] != "etc"
    G = _bigbird_globals(o, T)
    rest = T - G
    n = (rest + b - 1) // b if rest > 0 else 0
    pos = torch.arange(T, device=device)
    blk = torch.where(pos >= G, (pos - G) // b, torch.full_like(pos, -1))
    qb, kb = blk[:, None], blk[None, :]
    base = (qb >= 0) & (kb >= 0) & ((qb - kb).abs() <= 1)
    if itc:
        base = base | (qb == 0) | (qb == n - 1) | (kb == 0) | (kb == n - 1)
    else:
        base = base | (qb < 0) | (kb < 0)
    mask = base.unsqueeze(0).repeat(H, 1, 1)
    plan = bigbird_plan(o, H, T, seed)
    for h in range(H):
        chosen = torch.zeros(n + 1, n + 1, dtype=torch.bool, device=device)
        for i, row in enumerate(plan[h]):
            for k in row:
                chosen[i, k] = True
        mask[h] |= chosen[qb.clamp(min=0).expand(T, T), kb.clamp(min=0).expand(T, T)] & (qb >= 0) & (kb >= 0)
    if causal:
        mask &= (pos[None, :] <= pos[:, None]).unsqueeze(0)
    return mask


# ------------------------------------------------------------------------------------ masks by kind

def _band_mask(group, t, M, S, causal, window, device):
    """bool [heads or 1, Tq, S] for the mask kinds (full, window band, block, strided); t: query indices."""
    kind, o = group["kind"], group["opts"]
    p = (M + t)[:, None]                                   # [Tq, 1] key position of each query
    s = torch.arange(S, device=device)[None, :]            # [1, S]
    dist = p - s
    if kind == "full":
        m = dist >= 0 if causal else torch.ones_like(dist, dtype=torch.bool)
        if window > 0:
            m = m & (dist < window)
        return m[None]
    if kind == "window":
        heads = group["heads"]
        dil = torch.tensor([o["dil"][h % len(o["dil"])] for h in range(group["heads"])], device=device)
        d = dil[:, None, None]
        a = dist[None] if causal else dist[None].abs()
        m = (a >= 0) & (a % d == 0) & (a // d <= o["w"])
        return m.expand(heads, -1, -1)
    if kind == "block":
        b = o["b"]
        if causal:
            start = (p // b) * b
            return ((dist >= 0) & (s >= (start - b).clamp(min=0)))[None]
        return ((p // b) == (s // b))[None]
    if kind == "strided":
        st = o["s"]
        m = dist % st == 0
        if causal:
            m = m & (dist >= 0)
        return m[None]
    raise AssertionError(kind)


def _softmax_rows(scores, mask):
    scores = scores.masked_fill(~mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.nan_to_num(p, nan=0.0)  # a row that sees nothing gets zero output, as the C references


# ------------------------------------------------------------------------------------------ modules

class _Container(nn.Module):
    pass


class FFN(nn.Module):
    def __init__(self, C, Fd, activation):
        super().__init__()
        self.fc1 = nn.Linear(C, Fd)
        self.fc2 = nn.Linear(Fd, C)
        self.activation = activation

    def forward(self, x):
        z = self.fc1(x)
        z = F.gelu(z, approximate="tanh") if self.activation == "gelu" else F.relu(z)
        return self.fc2(z)


class Attention(nn.Module):
    """One attention module's weights (shared by attn_share layers): the fused q/k/v projection (or, with
    qk_share, tied query/key projections ``qk`` and the value projection ``v_proj``, the checkpoint's
    ``attn.v.weight``), the output projection, XL's ``r``, ``u``, ``v``, the global tokens' ``global.qkv``
    and the kinds' parameters ``group{g}.params``."""

    def __init__(self, cfg, groups, owner):
        super().__init__()
        C, H = cfg["d_model"], cfg["n_head"]
        D = C // H
        xl = cfg["model"] == "xl"
        self.C, self.H, self.D, self.owner = C, H, D, owner
        self.qk_share = cfg["qk_share"] if cfg["qk_share"] > 1 else 0
        if self.qk_share:
            G = H // self.qk_share
            self.qk = nn.Linear(C, 2 * G * D, bias=not xl)
            self.v_proj = nn.Linear(C, C, bias=not xl)
        else:
            self.qkv = nn.Linear(C, 3 * C, bias=not xl)
        if xl:
            self.r = nn.Linear(C, C, bias=False)
            if not cfg["shared_uv"]:
                self.u = nn.Parameter(torch.zeros(H, D))
                self.v = nn.Parameter(torch.zeros(H, D))
        self.proj = nn.Linear(C, C, bias=not xl)
        if any(g["n_global"] for g in groups):
            glob = _Container()
            glob.qkv = nn.Linear(C, 3 * C, bias=not xl)
            self.add_module("global", glob)
        for i, g in enumerate(groups):
            if g["kind"] == "linformer":
                n = cfg["seq_len"] + cfg["extra_tokens"]
                P = 2 * g["heads"] if g["opts"]["share"] == "none" else (2 if g["opts"]["share"] == "headwise" else 1)
                box = _Container()
                box.params = nn.Parameter(torch.zeros(n * P * g["opts"]["k"]))
                self.add_module("group%d" % i, box)

    def qkv_weight(self):
        """(weight [3C, C], bias [3C] or None) of the fused projection (expanded from qk/v_proj when tied)."""
        if not self.qk_share:
            return self.qkv.weight, self.qkv.bias
        C, H, D, S = self.C, self.H, self.D, self.qk_share
        GD = (H // S) * D
        wq = torch.cat([self.qk.weight[(h // S) * D:(h // S) * D + D] for h in range(H)])
        wk = torch.cat([self.qk.weight[GD + (h // S) * D:GD + (h // S) * D + D] for h in range(H)])
        w = torch.cat([wq, wk, self.v_proj.weight])
        b = None
        if self.qk.bias is not None:
            bq = torch.cat([self.qk.bias[(h // S) * D:(h // S) * D + D] for h in range(H)])
            bk = torch.cat([self.qk.bias[GD + (h // S) * D:GD + (h // S) * D + D] for h in range(H)])
            b = torch.cat([bq, bk, self.v_proj.bias])
        return w, b


class Block(nn.Module):
    """One layer: its own spec (``groups``), its attention module (the owner's when shared), ln1 (the
    owner's too), ln2 and the feed-forward sublayer."""

    def __init__(self, cfg, groups, ln1, attn, layer, owner):
        super().__init__()
        C = cfg["d_model"]
        self.ln1 = ln1
        self.attn = attn
        self.ln2 = nn.LayerNorm(C, eps=LN_EPS)
        self.ffn = FFN(C, cfg["d_ff"], cfg["activation"])
        self.drop = nn.Dropout(cfg["dropout"])
        self.groups = groups
        self.layer, self.owner = layer, owner
        self.pre = cfg["norm"] == "pre"
        self.causal = cfg["objective"] != "mlm"
        self.xl = cfg["model"] == "xl"
        self.attn_seed = _layer_seed(owner)  # the kinds' fixed seed (an encoder stack's: per layer, set by its owner)
        self._bigbird_cache = {}

    # ---- attention over a [B, S, C] input (memory rows first), queries the last T rows
    def attention(self, a, M, sinus, window, u=None, v=None):
        at = self.attn
        B, S, C = a.shape
        T = S - M
        H, D = at.H, at.D
        w, bias = at.qkv_weight()
        qkv = F.linear(a, w, bias)
        q = qkv[:, M:, :C].reshape(B, T, H, D).transpose(1, 2)        # [B, H, T, D]
        k = qkv[:, :, C:2 * C].reshape(B, S, H, D).transpose(1, 2)    # [B, H, S, D]
        val = qkv[:, :, 2 * C:].reshape(B, S, H, D).transpose(1, 2)
        glob = getattr(at, "global", None)
        qkvg = F.linear(a, glob.qkv.weight, glob.qkv.bias) if glob is not None else None
        rel = None
        if self.xl:
            r = at.r(sinus[:S]).reshape(S, H, D).transpose(0, 1)        # [H, S(dist), D]
            uu = at.u if hasattr(at, "u") else u
            vv = at.v if hasattr(at, "v") else v
            rel = (r, uu, vv)
        scale = 1.0 / math.sqrt(D)
        outs = []
        for gi, g in enumerate(self.groups):
            hs = slice(g["h0"], g["h0"] + g["heads"])
            gq, gk, gv = q[:, hs], k[:, hs], val[:, hs]
            grel = None if rel is None else (rel[0][hs], rel[1][hs], rel[2][hs])
            kind = g["kind"]
            if kind == "linformer":
                out = self._linformer(g, gi, gq, gk, gv, scale)
            elif kind == "compressed":
                out = self._compressed(g, gq, gk, gv, M, scale)
            else:
                out = self._masked(g, gi, gq, gk, gv, grel, M, window, scale)
            if g["n_global"]:
                out = self._global_rows(g, out, qkvg, M, scale, B, S, T)
            outs.append(out)
        y = torch.cat(outs, dim=1).transpose(1, 2).reshape(B, T, C)
        return at.proj(y)

    def _masked(self, g, gi, q, k, v, rel, M, window, scale):
        B, Hg, T, D = q.shape
        S = k.shape[2]
        dev = q.device
        kind = g["kind"]
        if kind == "bigbird":
            if M:
                raise ValueError("bigbird has no memory rows")
            key = (gi, T, str(dev))
            if key not in self._bigbird_cache:
                seed = _seed_mix(self.attn_seed, gi)
                self._bigbird_cache[key] = _bigbird_mask(g["opts"], Hg, T, seed, self.causal, dev)
            full_mask = self._bigbird_cache[key]
        gpos = None
        if g["n_global"]:
            gpos = self._global_positions(g, T)
        chunk = max(1, min(T, _CHUNK_SCORES // max(1, B * Hg * S)))
        outs = []
        for t0 in range(0, T, chunk):
            t = torch.arange(t0, min(T, t0 + chunk), device=dev)
            if kind == "bigbird":
                mask = full_mask[:, t0:t0 + len(t)]
            else:
                mask = _band_mask(g, t, M, S, self.causal, window if kind == "full" else 0, dev)
            if gpos is not None and len(gpos):
                gcols = torch.zeros(S, dtype=torch.bool, device=dev)
                gcols[M + gpos] = True
                extra = gcols[None, :].expand(len(t), S)
                if self.causal:
                    extra = extra & (torch.arange(S, device=dev)[None, :] <= (M + t)[:, None])
                mask = mask | extra[None]
            qc = q[:, :, t0:t0 + len(t)]
            if rel is None:
                scores = torch.matmul(qc, k.transpose(-2, -1)) * scale
            else:
                r, u, vb = rel
                ac = torch.matmul(qc + u[None, :, None, :], k.transpose(-2, -1))
                bd_dist = torch.matmul(qc + vb[None, :, None, :], r.transpose(-2, -1))   # [B, Hg, Tq, S(dist)]
                dist = (M + t)[:, None] - torch.arange(S, device=dev)[None, :]
                idx = dist.clamp(0, S - 1).expand(B, Hg, len(t), S)
                scores = (ac + torch.gather(bd_dist, -1, idx)) * scale
            p = _softmax_rows(scores, mask.unsqueeze(0))
            outs.append(torch.matmul(p, v))
        return torch.cat(outs, dim=2)

    @staticmethod
    def _global_positions(g, T):
        if g["global_pos"] is None:
            return torch.arange(min(g["n_global"], T))
        return torch.tensor([p for p in g["global_pos"] if p < T], dtype=torch.long)

    def _global_rows(self, g, out, qkvg, M, scale, B, S, T):
        """Longformer global rows: softmax(scale qg . kg) vg over every key (causal: up to the row), with
        the global projection, overwriting the rows' band result."""
        gpos = self._global_positions(g, T).to(out.device)
        if not len(gpos):
            return out
        C, D = self.attn.C, self.attn.D
        hs = slice(g["h0"] * D, (g["h0"] + g["heads"]) * D)
        Hg = g["heads"]
        qg = qkvg[:, M + gpos, :C][:, :, hs].reshape(B, len(gpos), Hg, D).transpose(1, 2)
        kg = qkvg[:, :, C:2 * C][:, :, hs].reshape(B, S, Hg, D).transpose(1, 2)
        vg = qkvg[:, :, 2 * C:][:, :, hs].reshape(B, S, Hg, D).transpose(1, 2)
        scores = torch.matmul(qg, kg.transpose(-2, -1)) * scale
        mask = torch.ones(len(gpos), S, dtype=torch.bool, device=out.device)
        if self.causal:
            mask = torch.arange(S, device=out.device)[None, :] <= (M + gpos)[:, None]
        og = torch.matmul(_softmax_rows(scores, mask[None, None]), vg)
        out = out.clone()
        out[:, :, gpos] = og
        return out

    def _compressed(self, g, q, k, v, M, scale):
        B, Hg, T, D = q.shape
        S = k.shape[2]
        dev = q.device
        w, s = g["opts"]["w"], g["opts"]["s"]
        nb = (S + s - 1) // s
        pad = nb * s - S
        sizes = torch.full((nb,), float(s), dtype=q.dtype, device=dev)
        sizes[-1] = s - pad
        kp = F.pad(k, (0, 0, 0, pad)).reshape(B, Hg, nb, s, D).sum(3) / sizes[:, None]
        vp = F.pad(v, (0, 0, 0, pad)).reshape(B, Hg, nb, s, D).sum(3) / sizes[:, None]
        keys = torch.cat([kp, k], dim=2)
        vals = torch.cat([vp, v], dim=2)
        j = torch.arange(nb, device=dev)[None, :]
        sk = torch.arange(S, device=dev)[None, :]
        chunk = max(1, min(T, _CHUNK_SCORES // max(1, B * Hg * (S + nb))))
        outs = []
        for t0 in range(0, T, chunk):
            t = torch.arange(t0, min(T, t0 + chunk), device=dev)
            p = (M + t)[:, None]
            if self.causal:
                raw = (sk <= p) & (sk >= p - w)
                pooled = (j + 1) * s <= p - w
            else:
                raw = (sk >= p - w) & (sk <= p + w)
                pooled = ((j + 1) * s <= p - w) | (j * s > p + w)
            mask = torch.cat([pooled, raw], dim=1)
            scores = torch.matmul(q[:, :, t0:t0 + len(t)], keys.transpose(-2, -1)) * scale
            outs.append(torch.matmul(_softmax_rows(scores, mask[None, None]), vals))
        return torch.cat(outs, dim=2)

    def _linformer(self, g, gi, q, k, v, scale):
        B, Hg, T, D = q.shape
        S = k.shape[2]
        o = g["opts"]
        kk, share = o["k"], o["share"]
        P = 2 * Hg if share == "none" else (2 if share == "headwise" else 1)
        params = getattr(self.attn, "group%d" % gi).params
        n = params.numel() // (P * kk)
        if S > n:
            raise ValueError("linformer: %d positions, the projections have %d" % (S, n))
        E = params.reshape(n, P, kk)[:S]                      # E_p[j][s] = E[s, p, j]
        outs = []
        for h in range(Hg):
            pk = 2 * h if share == "none" else 0
            pv = 2 * h + 1 if share == "none" else (1 if share == "headwise" else 0)
            Kp = torch.matmul(E[:, pk, :].t(), k[:, h])        # [B, kk, D]
            Vp = torch.matmul(E[:, pv, :].t(), v[:, h])
            sc = torch.matmul(q[:, h], Kp.transpose(-2, -1)) * scale
            outs.append(torch.matmul(torch.softmax(sc, dim=-1), Vp))
        return torch.stack(outs, dim=1)

    def forward(self, x, mem, sinus, window, u=None, v=None):
        M = 0 if mem is None else mem.shape[1]
        src = x if M == 0 else torch.cat([mem, x], dim=1)
        if self.pre:
            s1 = x + self.drop(self.attention(self.ln1(src), M, sinus, window, u, v))
            return s1 + self.drop(self.ffn(self.ln2(s1)))
        s1 = self.ln1(x + self.drop(self.attention(src, M, sinus, window, u, v)))
        return self.ln2(s1 + self.drop(self.ffn(s1)))

    # reversible halves (pre-LN, no memory)
    def f_half(self, x):
        return self.drop(self.attention(self.ln1(x), 0, None, 0))

    def g_half(self, y):
        return self.drop(self.ffn(self.ln2(y)))


def _block_parameters(out, blocks, prefix):
    """Adds to dict out the checkpoint names (``{prefix}blocks.{i}.…``, docs/reference/checkpoint.md) of the
    parameters of a list of :class:`Block` (shared attention modules under their owner's names only)."""
    for l, blk in enumerate(blocks):
        p = "%sblocks.%d." % (prefix, l)
        if blk.owner == l:
            at = blk.attn
            out[p + "ln1.weight"], out[p + "ln1.bias"] = blk.ln1.weight, blk.ln1.bias
            if at.qk_share:
                out[p + "attn.qk.weight"] = at.qk.weight
                out[p + "attn.v.weight"] = at.v_proj.weight
                if at.qk.bias is not None:
                    out[p + "attn.qk.bias"] = at.qk.bias
                    out[p + "attn.v.bias"] = at.v_proj.bias
            else:
                out[p + "attn.qkv.weight"] = at.qkv.weight
                if at.qkv.bias is not None:
                    out[p + "attn.qkv.bias"] = at.qkv.bias
            if blk.xl:
                out[p + "attn.r.weight"] = at.r.weight
                if hasattr(at, "u"):
                    out[p + "attn.u"], out[p + "attn.v"] = at.u, at.v
            out[p + "attn.proj.weight"] = at.proj.weight
            if at.proj.bias is not None:
                out[p + "attn.proj.bias"] = at.proj.bias
            glob = getattr(at, "global", None)
            if glob is not None:
                out[p + "attn.global.qkv.weight"] = glob.qkv.weight
                if glob.qkv.bias is not None:
                    out[p + "attn.global.qkv.bias"] = glob.qkv.bias
            for name, mod in at.named_children():
                if name.startswith("group"):
                    out[p + "attn.%s.params" % name] = mod.params
        out[p + "ln2.weight"], out[p + "ln2.bias"] = blk.ln2.weight, blk.ln2.bias
        for fc in ("fc1", "fc2"):
            lin = getattr(blk.ffn, fc)
            out[p + "ffn.%s.weight" % fc], out[p + "ffn.%s.bias" % fc] = lin.weight, lin.bias
    return out


def sinusoid_table(S, C, clamp_len=0, dtype=torch.float32, device=None):
    """Row d = [sin(pos(d) f_k) | cos(pos(d) f_k)], f_k = 10000^(-2k/C), pos(d) = min(d, clamp_len) when
    clamp_len > 0 (computed in float64, then cast, as lc_sinusoid_positions)."""
    pos = torch.arange(S, dtype=torch.float64, device=device)
    if clamp_len > 0:
        pos = pos.clamp(max=float(clamp_len))
    inv = torch.pow(10000.0, -2.0 * torch.arange(C // 2, dtype=torch.float64, device=device) / C)
    ang = torch.outer(pos, inv)
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1).to(dtype)


class LongctxLM(nn.Module):
    """A longctx byte-level language model (vanilla or Transformer-XL; causal decoder or masked-LM encoder).

    ``forward(tokens, memory=None)``: tokens is a [B, T] integer tensor of bytes (0..255; 256 is the mask
    symbol of a masked-LM encoder). A vanilla model returns the logits [B, T, 256]. A Transformer-XL model
    returns ``(logits, new_memory)``: ``memory`` is None (no context) or one [B, M, C] tensor per layer
    (a list, or a stacked [L, B, M, C] tensor): the layer inputs of earlier segments, as the C model keeps
    them; ``new_memory`` holds the last ``mem_len`` rows of concat(memory, this segment's layer inputs),
    detached, ready for the next segment of the same streams. ``saved_memory`` is the checkpoint's
    memory (``state.memory.*``: the training streams' memory when it was saved) or None.
    ``config`` is the checkpoint's configuration (a dict), ``layers`` the parsed attention spec.
    """

    def __init__(self, cfg):
        super().__init__()
        self.config = dict(cfg)
        C, H, L = cfg["d_model"], cfg["n_head"], cfg["n_layer"]
        D = C // H
        self.xl = cfg["model"] == "xl"
        self.mlm = cfg["objective"] == "mlm"
        self.extra = cfg["extra_tokens"]
        self.mem_len = cfg["mem_len"]
        self.clamp_len = cfg["clamp_len"]
        self.same_length = cfg["same_length"]
        self.layers = parse_attention_spec(cfg["attn"], L, H)
        rows = VOCAB + (1 if self.mlm else 0) + self.extra
        self.wte = nn.Parameter(torch.zeros(rows, C))
        self.wpe = None if self.xl else nn.Parameter(torch.zeros(cfg["seq_len"] + self.extra, C))
        self.drop = nn.Dropout(cfg["dropout"])
        share = cfg["attn_share"] if cfg["attn_share"] > 1 else 1
        blocks = []
        for l in range(L):
            owner = l - l % share
            if l == owner:
                ln1 = nn.LayerNorm(C, eps=LN_EPS)
                attn = Attention(cfg, self.layers[l], owner)
            blocks.append(Block(cfg, self.layers[l], ln1, attn, l, owner))
        self.blocks = nn.ModuleList(blocks)
        if self.xl and cfg["shared_uv"]:
            self.u = nn.Parameter(torch.zeros(H, D))
            self.v = nn.Parameter(torch.zeros(H, D))
        else:
            self.u = self.v = None
        self.ln_f = nn.LayerNorm(C, eps=LN_EPS) if cfg["norm"] == "pre" else None
        self.lm_head = None if cfg["tied"] else nn.Linear(C, VOCAB, bias=False)
        self.saved_memory = None
        if cfg["reversible"] and (self.xl or cfg["norm"] != "pre"):
            raise ValueError("reversible layers need a vanilla pre-LN model")

    # checkpoint name -> parameter of this module
    def checkpoint_parameters(self):
        """Dict of the checkpoint's tensor names to this module's parameters (shared ones once)."""
        out = {"wte": self.wte}
        if self.wpe is not None:
            out["wpe"] = self.wpe
        _block_parameters(out, self.blocks, "")
        if self.u is not None:
            out["u"], out["v"] = self.u, self.v
        if self.ln_f is not None:
            out["ln_f.weight"], out["ln_f.bias"] = self.ln_f.weight, self.ln_f.bias
        if self.lm_head is not None:
            out["lm_head.weight"] = self.lm_head.weight
        return out

    def _memory_list(self, memory, B):
        if memory is None:
            return None
        mems = list(memory.unbind(0)) if torch.is_tensor(memory) else list(memory)
        if len(mems) != len(self.blocks):
            raise ValueError("memory: %d layers given, the model has %d" % (len(mems), len(self.blocks)))
        M = mems[0].shape[1]
        for i, m in enumerate(mems):
            if m.dim() != 3 or m.shape[0] != B or m.shape[1] != M or m.shape[2] != self.config["d_model"]:
                raise ValueError("memory of layer %d has shape %s; expected [%d, %d, %d]"
                                 % (i, tuple(m.shape), B, M, self.config["d_model"]))
        return mems if M > 0 else None

    def forward(self, tokens, memory=None):
        if tokens.dim() != 2:
            raise ValueError("tokens must be [B, T], got %s" % (tuple(tokens.shape),))
        tokens = tokens.long()
        B, T = tokens.shape
        C = self.config["d_model"]
        top = VOCAB + (1 if self.mlm else 0)
        if T < 1 or int(tokens.min()) < 0 or int(tokens.max()) >= top:
            raise ValueError("tokens must be in 0..%d" % (top - 1))
        G = self.extra
        if G:
            extra_ids = torch.arange(top, top + G, device=tokens.device).expand(B, G)
            tokens = torch.cat([extra_ids, tokens], dim=1)
        TT = T + G
        h = self.wte[tokens]
        if self.wpe is not None:
            if TT > self.wpe.shape[0]:
                raise ValueError("a vanilla model takes at most %d tokens per sequence, got %d"
                                 % (self.wpe.shape[0] - G, T))
            h = h + self.wpe[:TT]
        mems = None
        if self.xl:
            h = h * math.sqrt(C)
            if memory is not None:
                mems = self._memory_list(memory, B)
        elif memory is not None:
            raise ValueError("a vanilla model has no memory")
        h = self.drop(h)
        sinus = None
        window = 0
        if self.xl:
            M = 0 if mems is None else mems[0].shape[1]
            sinus = sinusoid_table(M + TT, C, self.clamp_len, dtype=h.dtype, device=h.device)
            window = self.mem_len if self.same_length else 0
        new_mems = []
        if self.config["reversible"]:
            y1 = y2 = h
            for blk in self.blocks:
                y1 = y1 + blk.f_half(y2)
                y2 = y2 + blk.g_half(y1)
            h = 0.5 * (y1 + y2)
        else:
            for l, blk in enumerate(self.blocks):
                mem = None if mems is None else mems[l]
                if self.xl:
                    cat = h if mem is None else torch.cat([mem, h], dim=1)
                    keep = min(cat.shape[1], self.mem_len)
                    new_mems.append(cat[:, cat.shape[1] - keep:].detach())
                h = blk(h, mem, sinus, window, self.u, self.v)
        if self.ln_f is not None:
            h = self.ln_f(h)
        h = h[:, G:]
        w_out = self.wte[:VOCAB] if self.lm_head is None else self.lm_head.weight
        logits = torch.matmul(h, w_out.t())
        return (logits, new_mems) if self.xl else logits


def _copy_parameters(path, tensors, params, ignored=()):
    """Copies each checkpoint tensor into its parameter (params: name -> parameter), after checking that
    none is missing or misshapen and that the file holds no other tensor than those and the names starting
    with one of the prefixes in ignored (ValueError naming the file and the tensor)."""
    with torch.no_grad():
        for name, p in params.items():
            if name not in tensors:
                raise ValueError("%s: tensor %s is missing" % (path, name))
            t = tensors[name]
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError("%s: tensor %s has shape %s, expected %s" % (path, name, tuple(t.shape),
                                                                              tuple(p.shape)))
            p.copy_(t)
    stray = [n for n in tensors if n not in params and not n.startswith(tuple(ignored))]
    if stray:
        raise ValueError("%s: tensors this loader does not know: %s" % (path, ", ".join(sorted(stray)[:5])))


def load(path, dtype=torch.float32, device=None):
    """A longctx checkpoint as a PyTorch module in eval mode (parameters in ``dtype`` on ``device``), by the
    family its metadata names: a language model (``model`` = vanilla or xl) as a :class:`LongctxLM`, a
    classifier (``classify``) as a :class:`LongctxClassifier`, a HIBERT model (``hibert``) as a
    :class:`LongctxHIBERT` (longctx.torch_families). Raises UnsupportedAttentionError (a NotImplementedError)
    for checkpoints whose attention includes a kind whose pattern is not fixed by the checkpoint (lsh, routing)
    or unknown, ValueError for files that are not longctx checkpoints of these families or whose tensors do
    not match."""
    tensors, meta = read_checkpoint(path)
    if meta.get("format") == "longctx" and meta.get("model") in ("classify", "hibert"):
        from . import torch_families
        return torch_families._load_family(path, tensors, meta, dtype, device)
    cfg = _config_from_metadata(meta, path)
    model = LongctxLM(cfg)
    _copy_parameters(path, tensors, model.checkpoint_parameters(), ignored=("state.memory.",))
    if cfg["model"] == "xl" and cfg["memory_rows"] > 0:
        model.saved_memory = [tensors["state.memory.%d" % l] for l in range(cfg["n_layer"])]
    model.to(dtype=dtype, device=device)
    if model.saved_memory is not None:
        model.saved_memory = [m.to(dtype=dtype, device=device) for m in model.saved_memory]
    return model.eval()


def __getattr__(name):  # the families' modules, from longctx.torch as the loader returns them
    if name in ("LongctxClassifier", "LongctxHIBERT"):
        from . import torch_families
        return getattr(torch_families, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
