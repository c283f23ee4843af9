"""The classifier and HIBERT checkpoints as PyTorch modules: what ``longctx.torch.load(path)`` returns for a
checkpoint whose metadata says ``model = classify`` (:class:`LongctxClassifier`) or ``model = hibert``
(:class:`LongctxHIBERT`). Both are built from longctx.torch's blocks and attention (every kind the language
model's loader reproduces; lsh and routing raise UnsupportedAttentionError), as bidirectional encoder stacks
over sequences of different lengths: the C models pack them and run the attention once per group of equal
lengths, which is what :class:`EncoderStack` does here, so any mix of lengths gives the C model's numbers.
In eval mode (the state ``load`` returns) the outputs are the C model's inference: the classifier's logits
(``longctx predict --probs`` is their softmax), HIBERT's sentence scores (``longctx summarize --scores``).
HIBERT's sentence decoder of pre-training (``dec.*``) is not loaded.
"""
import ctypes
import re

import torch
import torch.nn as nn

from ._family import with_protos
from .torch import (LN_EPS, Attention, Block, _block_parameters, _copy_parameters, _seed_mix,
                    parse_attention_spec)

__all__ = ["LongctxClassifier", "LongctxHIBERT", "EncoderStack", "summary_features"]

_CLASSIFY_ATTN_STREAM = 0x636C617373696679  # "classify" (src/models/classify/classify.c: st->attn_stream)
_HIBERT_ATTN_STREAM = 0x6869626572740000    # LC_HIBERT_ATTN_STREAM (src/models/hibert/hibert.h), + 0 sentence, + 1 doc
_WORD_CLS, _WORD_UNK, _WORD_FIRST = 1, 2, 4  # include/longctx/lra.h
_HIBERT_EOS = 256
_SUMMARY_FEATURES = 4  # LC_SUMMARY_FEATURES: position, length, LexRank centrality, word frequency


def _int(path, meta, key, default=None):
    """Integer metadata key (default None: required)."""
    if key not in meta:
        if default is None:
            raise ValueError("%s: metadata key %s is missing" % (path, key))
        return default
    return int(meta[key])


def _stack_config(path, meta, prefix, seq_len, attn_share=0):
    """A vanilla bidirectional block config (lc_stack_config) from the metadata keys {prefix}n_layer, ..."""
    def i(key):
        return _int(path, meta, prefix + key)

    cfg = {"model": "vanilla", "objective": "mlm", "n_layer": i("n_layer"), "d_model": i("d_model"),
           "n_head": i("n_head"), "d_ff": i("d_ff"), "attn": meta.get(prefix + "attn", "") or "full",
           "norm": meta.get("norm"), "activation": meta.get("activation"), "dropout": float(meta.get("dropout", "0")),
           "seq_len": seq_len, "extra_tokens": 0, "qk_share": 0, "attn_share": attn_share, "shared_uv": False}
    if cfg["norm"] not in ("pre", "post") or cfg["activation"] not in ("gelu", "relu"):
        raise ValueError("%s: norm %r / activation %r" % (path, cfg["norm"], cfg["activation"]))
    if min(cfg["n_layer"], cfg["d_model"], cfg["n_head"], cfg["d_ff"]) < 1 or cfg["d_model"] % cfg["n_head"]:
        raise ValueError("%s: %sd_model %d, n_head %d" % (path, prefix, cfg["d_model"], cfg["n_head"]))
    return cfg


class EncoderStack(nn.Module):
    """A bidirectional stack of longctx blocks (the C library's src/nn/enc_stack.c): positions ``wpe``, the
    blocks (layer l's kinds seeded from ``attn_stream`` and l), the final LayerNorm ``ln_f`` (pre-LN).
    ``forward(rows)``: a list of [T_i, C] inputs (embeddings without positions) -> the list of final hidden
    states, each sequence alone (sequences of one length run as one batch)."""

    def __init__(self, cfg, layers, attn_stream):
        super().__init__()
        C = cfg["d_model"]
        self.config = dict(cfg)
        self.layers = layers
        self.wpe = nn.Parameter(torch.zeros(cfg["seq_len"], C))
        self.drop = nn.Dropout(cfg["dropout"])
        share = cfg["attn_share"] if cfg["attn_share"] > 1 else 1
        blocks = []
        for l in range(cfg["n_layer"]):
            owner = l - l % share
            if l == owner:
                ln1 = nn.LayerNorm(C, eps=LN_EPS)
                attn = Attention(cfg, layers[l], owner)
            blk = Block(cfg, layers[l], ln1, attn, l, owner)
            blk.attn_seed = _seed_mix(attn_stream, l)  # lc_stack_block_ctx: fixed per layer, not per owner
            blocks.append(blk)
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = nn.LayerNorm(C, eps=LN_EPS) if cfg["norm"] == "pre" else None

    def checkpoint_parameters(self, prefix, out):
        out[prefix + "wpe"] = self.wpe
        _block_parameters(out, self.blocks, prefix)
        if self.ln_f is not None:
            out[prefix + "ln_f.weight"], out[prefix + "ln_f.bias"] = self.ln_f.weight, self.ln_f.bias
        return out

    def forward(self, rows):
        out = [None] * len(rows)
        by_len = {}
        for i, x in enumerate(rows):
            if x.shape[0] > self.wpe.shape[0]:
                raise ValueError("a sequence of %d rows; the stack has %d positions" % (x.shape[0], self.wpe.shape[0]))
            by_len.setdefault(x.shape[0], []).append(i)
        for T, idx in by_len.items():
            h = self.drop(torch.stack([rows[i] for i in idx]) + self.wpe[:T])
            for blk in self.blocks:
                h = blk(h, None, None, 0)
            if self.ln_f is not None:
                h = self.ln_f(h)
            for k, i in enumerate(idx):
                out[i] = h[k]
        return out


def _unescape(line):
    """A word or label of the checkpoint's text form (lc_lra_buf_put_escaped: bytes outside printable ASCII
    as \\xHH) as bytes."""
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), line.encode("utf-8"))


def _text_lines(path, meta, key, magic):
    """The lines after the header `magic ...` of metadata key (classify.labels, classify.words)."""
    text = meta.get(key)
    if text is None:
        raise ValueError("%s: metadata key %s is missing" % (path, key))
    lines = text.split("\n")
    head = lines[0].split()
    if head[:2] != [magic, "1"]:
        raise ValueError("%s: metadata key %s is not a %s text" % (path, key, magic))
    return head, [_unescape(t) for t in lines[1:] if t]


def _as_bytes(text, what):
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray)):
        return bytes(text)
    raise TypeError("%s must be str or bytes, got %s" % (what, type(text).__name__))


class LongctxClassifier(nn.Module):
    """A longctx sequence classifier (``longctx train --task classify``; docs/guides/classify.md): the
    masked-LM encoder over ``[CLS]`` and the tokens (bytes or words, at most ``max_len``; ``[CLS]`` a global
    token of every window group), pooled (the ``[CLS]`` row, or each feature's mean or maximum over every row),
    then the head (dense, ReLU, dense). ``forward(inputs)``: a list of texts (str, UTF-8, or bytes; tokenized as the model was
    trained), a list of token-id sequences, or a [B, T] integer tensor -> the logits [N, n_classes].
    ``predict_proba(inputs)`` (their softmax: the C model's probabilities) and ``predict(inputs)`` (labels);
    ``labels`` are the class names in the model's order, ``config`` the checkpoint's configuration."""

    def __init__(self, cfg, labels, words=None):
        super().__init__()
        self.config = dict(cfg)
        self.labels = list(labels)
        self.words = words  # bytes -> id (a words model)
        enc = cfg["encoder"]
        layers = parse_attention_spec(enc["attn"], enc["n_layer"], enc["n_head"])
        for groups in layers:  # [CLS] is position 0: a global token of every group that takes global tokens
            for g in groups:
                if g["kind"] != "window":
                    continue
                if g["global_pos"] is None:
                    g["n_global"] = max(g["n_global"], 1)
                elif 0 not in g["global_pos"]:
                    g["global_pos"] = [0] + g["global_pos"]
                    g["n_global"] += 1
        C = enc["d_model"]
        Dh = cfg["d_hidden"] or C
        self.cls_token = _WORD_CLS if cfg["tokens"] == "words" else 257
        self.wte = nn.Parameter(torch.zeros(cfg["vocab"] if cfg["tokens"] == "words" else 258, C))
        D = cfg["bracket_depth"]
        self.wde = nn.Parameter(torch.zeros(D, C)) if D else None  # the bracket-depth rows (longctx's extension)
        self.encoder = EncoderStack(enc, layers, _CLASSIFY_ATTN_STREAM)
        self.dense = nn.Linear(C, Dh)
        self.out = nn.Linear(Dh, cfg["n_classes"])

    def checkpoint_parameters(self):
        """Dict of the checkpoint's tensor names to this module's parameters (shared ones once)."""
        out = {"wte": self.wte}
        if self.wde is not None:
            out["wde"] = self.wde
        self.encoder.checkpoint_parameters("", out)
        out["cls.dense.weight"], out["cls.dense.bias"] = self.dense.weight, self.dense.bias
        out["cls.out.weight"], out["cls.out.bias"] = self.out.weight, self.out.bias
        return out

    def tokenize(self, text):
        """The token ids of a text (str or bytes) as the C model reads them: its bytes, or its
        whitespace-separated words' ids (unknown words: 2; the words ( and ) skipped with drop_parens), at
        most max_len."""
        return self._tokens(text)[0]

    def _tokens(self, text):
        """(ids, depths): the tokens and each one's square-bracket depth (lc_classify_tokens)."""
        b = _as_bytes(text, "text")
        if self.words is None:
            toks = [b[k:k + 1] for k in range(len(b))]
        else:
            toks = [w for w in b.split() if not (self.config["drop_parens"] and w in (b"(", b")"))]
        ids, depth, d = [], [], 0
        for t in toks[:self.config["max_len"]]:
            opens, closes = t[:1] == b"[", t[:1] == b"]"
            d += opens
            ids.append(t[0] if self.words is None else self.words.get(t, _WORD_UNK))
            depth.append(d)
            d -= closes and d > 0
        return ids, depth

    def _sequences(self, inputs):
        if self.wde is not None:
            if torch.is_tensor(inputs) or any(not isinstance(x, (str, bytes, bytearray)) for x in inputs):
                raise TypeError("a model with bracket depths (bracket_depth %d) reads texts, not token ids"
                                % self.config["bracket_depth"])
            return [tuple(torch.tensor(v, dtype=torch.long) for v in self._tokens(x)) for x in inputs]
        if torch.is_tensor(inputs):
            if inputs.dim() != 2:
                raise ValueError("token ids must be [B, T], got %s" % (tuple(inputs.shape),))
            return [row[:self.config["max_len"]] for row in inputs.long()]
        if isinstance(inputs, (str, bytes)):
            raise TypeError("inputs must be a list of texts or token-id sequences, not one %s" % type(inputs).__name__)
        seqs = []
        for x in inputs:
            if isinstance(x, (str, bytes, bytearray)):
                seqs.append(torch.tensor(self.tokenize(x), dtype=torch.long))
            else:
                seqs.append(torch.as_tensor(x, dtype=torch.long).reshape(-1)[:self.config["max_len"]])
        return seqs

    def forward(self, inputs):
        seqs = self._sequences(inputs)
        V = self.config["vocab"]
        dev = self.wte.device
        rows = []
        for i, s in enumerate(seqs):
            s, depth = s if isinstance(s, tuple) else (s, None)
            if len(s) and (int(s.min()) < 0 or int(s.max()) >= V):
                raise ValueError("example %d: token ids must be in 0..%d" % (i, V - 1))
            ids = torch.cat([torch.tensor([self.cls_token]), s.cpu()]).to(dev)
            x = self.wte[ids]
            if depth is not None:
                top = self.wde.shape[0] - 1
                x = x + self.wde[torch.cat([torch.tensor([0]), depth.clamp(0, top)]).to(dev)]
            rows.append(x)
        hidden = self.encoder(rows)
        if self.config["pool"] == "cls":
            pooled = torch.stack([h[0] for h in hidden])
        elif self.config["pool"] == "max":
            pooled = torch.stack([h.max(0).values for h in hidden])
        else:
            pooled = torch.stack([h.mean(0) for h in hidden])
        return self.out(torch.relu(self.dense(pooled)))

    def predict_proba(self, inputs):
        """The class probabilities [N, n_classes] (softmax of the logits), in ``labels``' order."""
        return torch.softmax(self.forward(inputs), dim=-1)

    def predict(self, inputs):
        """The predicted label (a str of ``labels``) of each input."""
        return [self.labels[int(k)] for k in self.forward(inputs).argmax(-1)]


# lc_summary_features, prototyped on first use
_summary_lib = with_protos({"lc_summary_features": (ctypes.c_int, [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                                                   ctypes.c_int, ctypes.POINTER(ctypes.c_float)])})


def summary_features(sentences, features=_SUMMARY_FEATURES):
    """The first ``features`` (1..4) of the sentence features a HIBERT head with ``head.features`` > 0 reads, for a
    document's sentences: position 1/(1+i), log(1 + tokens)/4, n times the LexRank centrality, word frequency
    over the mean (``lc_summary_features`` of include/longctx/summary.h), computed by the C library (longctx's
    ctypes binding loads liblongctx.so), as a float32 tensor [n, features]."""
    from ._lib import call

    _summary_lib()
    data = [_as_bytes(s, "sentence") for s in sentences]
    if any(b"\0" in s for s in data):
        raise ValueError("a sentence holds a NUL byte")
    n = len(data)
    F = int(features)
    out = (ctypes.c_float * max(1, n * F))()
    call("lc_summary_features", (ctypes.c_char_p * max(1, n))(*data), n, F, out)
    return torch.tensor(list(out)[:n * F], dtype=torch.float32).reshape(n, F)


def _word_buckets(sentence, max_len, buckets):
    """The sent.words buckets of a sentence's words (src/models/hibert/hibert_words.c: runs of ASCII letters
    and digits of its first max_len bytes, lower-cased, FNV-1a 32 modulo buckets)."""
    out = []
    for w in re.findall(rb"[a-z0-9]+", sentence[:max_len].lower()):
        h = 2166136261
        for c in w:
            h = ((h ^ c) * 16777619) & 0xFFFFFFFF
        out.append(h % buckets)
    return out


class LongctxHIBERT(nn.Module):
    """A longctx HIBERT model (``longctx hibert pretrain|finetune``; docs/reference/hibert.md): the sentence
    encoder (each sentence's first max_sent_len bytes, then EOS; the EOS row's final state), the hashed word
    vectors when ``sent.words`` > 0 (the EOS states centred on their document's mean, plus each sentence's
    words' vectors over the square root of their count), the document encoder (projected when the widths
    differ, plus sentence positions) and the extraction head: one logit per sentence, plus
    ``head.features`` . the sentence's features when the head reads features.

    ``forward(sentences, features=None)``: one document as a list of sentences (str, UTF-8, or bytes) -> its
    scores [n] (float, the module's dtype), as the C model scores a document: one with more than max_sents
    sentences in chunks of max_sents, each alone. ``features``: [n, head_features] (None: ``summary_features``
    of each chunk, as the C library computes them; needs liblongctx.so). ``longctx.Model.load(path)
    .sentence_scores(text)`` gives the sentences the C model splits a text into, and the same scores."""

    def __init__(self, cfg):
        super().__init__()
        self.config = dict(cfg)
        s, d = cfg["sent"], cfg["doc"]
        Cs, Cd = s["d_model"], d["d_model"]
        self.wte = nn.Parameter(torch.zeros(258, Cs))
        self.words = nn.Parameter(torch.zeros(cfg["sent_words"], Cs)) if cfg["sent_words"] else None
        self.sent = EncoderStack(s, parse_attention_spec(s["attn"], s["n_layer"], s["n_head"]), _HIBERT_ATTN_STREAM)
        self.doc = EncoderStack(d, parse_attention_spec(d["attn"], d["n_layer"], d["n_head"]),
                                _HIBERT_ATTN_STREAM + 1)
        self.proj = nn.Linear(Cs, Cd) if Cs != Cd else None
        self.head = nn.Linear(Cd, 1)
        F = cfg["head_features"]
        self.head_features = nn.Parameter(torch.zeros(1, F)) if F else None

    def checkpoint_parameters(self):
        """Dict of the checkpoint's tensor names to this module's parameters (shared ones once)."""
        out = {"sent.wte": self.wte}
        if self.words is not None:
            out["sent.words"] = self.words
        self.sent.checkpoint_parameters("sent.", out)
        if self.proj is not None:
            out["doc.proj.weight"], out["doc.proj.bias"] = self.proj.weight, self.proj.bias
        self.doc.checkpoint_parameters("doc.", out)
        out["head.weight"], out["head.bias"] = self.head.weight, self.head.bias
        if self.head_features is not None:
            out["head.features"] = self.head_features
        return out

    def _chunk(self, sents, feats):
        L = self.config["max_sent_len"]
        dev = self.wte.device
        rows = [self.wte[torch.tensor(list(b[:L]) + [_HIBERT_EOS], device=dev)] for b in sents]
        vec = torch.stack([h[-1] for h in self.sent(rows)])  # the EOS rows
        if self.words is not None:
            vec = vec - vec.mean(0, keepdim=True)
            add = []
            for b in sents:
                ids = _word_buckets(b, L, self.config["sent_words"])
                add.append(self.words[ids].sum(0) / len(ids) ** 0.5 if ids else torch.zeros_like(vec[0]))
            vec = vec + torch.stack(add)
        if self.proj is not None:
            vec = self.proj(vec)
        z = self.head(self.doc([vec])[0])[:, 0]
        if self.head_features is not None:
            z = z + feats.to(z) @ self.head_features[0]
        return z

    def forward(self, sentences, features=None):
        if isinstance(sentences, (str, bytes)):
            raise TypeError("sentences must be a list of the document's sentences, not one %s"
                            % type(sentences).__name__)
        sents = [_as_bytes(t, "sentence") for t in sentences]
        F = self.config["head_features"]
        if not sents:
            raise ValueError("a document needs at least one sentence")
        if features is not None:
            features = torch.as_tensor(features)
            if F == 0 or tuple(features.shape) != (len(sents), F):
                raise ValueError("features: shape %s; the head reads [%d, %d]" % (tuple(features.shape), len(sents), F))
        N = self.config["max_sents"]
        out = []
        for c0 in range(0, len(sents), N):
            chunk = sents[c0:c0 + N]
            feats = None
            if F:
                if features is not None:
                    feats = features[c0:c0 + N]
                elif F > _SUMMARY_FEATURES:
                    raise ValueError("the head reads %d features a sentence; give them (summary_features makes at "
                                     "most %d)" % (F, _SUMMARY_FEATURES))
                else:
                    feats = summary_features(chunk, F)
            out.append(self._chunk(chunk, feats))
        return torch.cat(out)


def _classifier_config(path, meta):
    def i(key, default=None):
        return _int(path, meta, key, default)

    cfg = {"max_len": i("max_len"), "tokens": meta.get("tokens"), "vocab": i("vocab"), "n_classes": i("n_classes"),
           "d_hidden": i("d_hidden"), "pool": meta.get("pool"), "objective": meta.get("objective", "labels"),
           "step": i("step", 0), "bracket_depth": i("bracket_depth", 0),
           "drop_parens": meta.get("drop_parens", "keep") == "drop"}
    if cfg["tokens"] not in ("bytes", "words") or cfg["pool"] not in ("cls", "mean", "max"):
        raise ValueError("%s: tokens %r / pool %r" % (path, cfg["tokens"], cfg["pool"]))
    cfg["encoder"] = _stack_config(path, meta, "", cfg["max_len"] + 1, i("attn_share", 0))
    return cfg


def _hibert_config(path, meta):
    def i(key, default=None):
        return _int(path, meta, key, default)

    cfg = {"max_sent_len": i("max_sent_len"), "max_sents": i("max_sents"), "sent_words": i("sent.words", 0),
           "head_features": i("head.features", 0), "stage": meta.get("stage"), "step": i("step", 0)}
    cfg["sent"] = _stack_config(path, meta, "sent.", cfg["max_sent_len"] + 1)
    cfg["doc"] = _stack_config(path, meta, "doc.", cfg["max_sents"])
    return cfg


def _load_family(path, tensors, meta, dtype, device):
    """longctx.torch.load's part for the classify and hibert families (tensors and metadata already read)."""
    if meta["model"] == "classify":
        cfg = _classifier_config(path, meta)
        _, labels = _text_lines(path, meta, "classify.labels", "longctx-labels")
        words = None
        if cfg["tokens"] == "words":
            head, vocab = _text_lines(path, meta, "classify.words", "longctx-words")
            if head[2:3] != [str(_WORD_FIRST)]:
                raise ValueError("%s: classify.words reserves %s ids, not %d" % (path, head[2:3], _WORD_FIRST))
            words = {w: _WORD_FIRST + k for k, w in enumerate(vocab)}
        model = LongctxClassifier(cfg, [b.decode("utf-8", "replace") for b in labels], words)
        ignored = ()
    else:
        model = LongctxHIBERT(_hibert_config(path, meta))
        ignored = ("dec.",)
    _copy_parameters(path, tensors, model.checkpoint_parameters(), ignored)
    return model.to(dtype=dtype, device=device).eval()
