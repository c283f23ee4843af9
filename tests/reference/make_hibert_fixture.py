#!/usr/bin/python3
"""Generate the parity fixtures tests/fixtures/hibert_<name>.safetensors for longctx's HIBERT
(hibert_ref.py; docs/reference/hibert.md): the whole encoder-decoder, extraction and masked-sentence pre-training.

Each fixture holds seeded random weights under the C tensor names (encdec_ref.random_params), three
documents of 3, 2 and 4 sentences of different lengths (an empty one, one longer than max_sent_len),
every pre-training action (masked, replaced, kept, unselected) given explicitly, labels, and the float64
reference's results:

  <param name>              F32  every parameter
  sent_bytes                I32  [total bytes] the sentences one after another (before truncation)
  sent_len, action, source, labels   I32 [sentences] (source: index inside the document)
  n_sents                   I32  [documents]
  extract.loss              F32  [1] mean binary cross-entropy;  extract.scores F32 [sentences]
  extract.grad.<param>      F32  its gradient
  pretrain.loss             F32  [1] mean NLL per target symbol; pretrain.count I32 [1]
  pretrain.grad.<param>     F32  its gradient
Metadata: max_sent_len, max_sents, norm, activation, sent.* / doc.* / dec.* (n_layer, d_model, n_head,
d_ff, attn), generator.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_hibert_fixture.py [--check] [--only NAME]
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import encdec_ref as ed  # noqa: E402
import fixture_io  # noqa: E402
import hibert_ref as hr  # noqa: E402

MAX_BYTES = 160 * 1024
U, M, R, K = hr.UNSELECTED, hr.MASKED, hr.REPLACED, hr.KEPT


stack = ed.stack
LENS = [[5, 0, 8], [7, 11], [3, 1, 6, 4]]
ACTION = [[R, M, U], [U, K], [M, U, R, K]]
SOURCE = [[2, 1, 2], [0, 1], [0, 1, 0, 3]]
FIXTURES = {
    "pre_gelu_widths": ({"sent": stack(2, 8, 2, 16), "doc": stack(2, 12, 2, 16), "dec": stack(2, 8, 2, 12),
                         "max_sent_len": 8, "max_sents": 5, "norm": "pre", "activation": "gelu"}, 20240811),
    "post_relu_window": ({"sent": stack(1, 8, 2, 12, "window:w=2"), "doc": stack(2, 8, 2, 12, "window:w=1"),
                          "dec": stack(1, 8, 2, 12, "window:w=3"), "max_sent_len": 8, "max_sents": 5,
                          "norm": "post", "activation": "relu"}, 20240812),
}


def compute(cfg, params, docs, labels):
    out = {}
    for what in ("extract", "pretrain"):
        p = ed.leaf_params(params)
        if what == "extract":
            loss, z = hr.extract(p, cfg, docs, labels)
            out["extract.scores"] = z.detach().numpy().copy()
        else:
            loss, count = hr.pretrain(p, cfg, docs, ACTION, SOURCE)
            out["pretrain.count"] = count
        loss.backward()
        out[what + ".loss"] = float(loss)
        out[what + ".grads"] = {n: (p[n].grad if p[n].grad is not None else torch.zeros_like(p[n])).numpy().copy()
                                for n in params}
    return out


def build(name):
    cfg, seed = FIXTURES[name]
    rng = np.random.RandomState(seed)
    params = ed.random_params(hr.param_shapes(cfg), rng)
    docs = [[rng.randint(0, 256, size=n).tolist() for n in doc] for doc in LENS]
    labels = [rng.randint(0, 2, size=len(doc)).tolist() for doc in LENS]
    r = compute(cfg, params, docs, labels)
    flat = lambda xs: np.array([v for doc in xs for v in doc], dtype=np.int64)  # noqa: E731
    tensors = [(n, "F32", v) for n, v in params.items()]
    tensors += [("sent_bytes", "I32", flat([s for doc in docs for s in doc])), ("sent_len", "I32", flat(LENS)),
                ("n_sents", "I32", np.array([len(d) for d in LENS])), ("action", "I32", flat(ACTION)),
                ("source", "I32", flat(SOURCE)), ("labels", "I32", flat(labels)),
                ("extract.loss", "F32", np.array([r["extract.loss"]])), ("extract.scores", "F32", r["extract.scores"]),
                ("pretrain.loss", "F32", np.array([r["pretrain.loss"]])),
                ("pretrain.count", "I32", np.array([r["pretrain.count"]]))]
    for what in ("extract", "pretrain"):
        tensors += [("%s.grad.%s" % (what, n), "F32", g) for n, g in r[what + ".grads"].items()]
    meta = {"max_sent_len": str(cfg["max_sent_len"]), "max_sents": str(cfg["max_sents"]), "norm": cfg["norm"],
            "activation": cfg["activation"], "generator": "tests/reference/make_hibert_fixture.py"}
    meta.update(ed.stack_meta(cfg, ("sent", "doc", "dec")))
    return cfg, tensors, meta, r


def verify(path, cfg, tensors, meta):
    got, _ = fixture_io.read_back(path, tensors, meta)
    params = fixture_io.float64_params(got, hr.param_shapes(cfg))
    sents = fixture_io.split_runs(got["sent_bytes"].tolist(), got["sent_len"].tolist())
    docs = fixture_io.split_runs(sents, got["n_sents"].tolist())
    labels = fixture_io.split_runs(got["labels"].tolist(), got["n_sents"].tolist())
    r = compute(cfg, params, docs, labels)
    for what in ("extract", "pretrain"):
        assert abs(r[what + ".loss"] - float(got[what + ".loss"][0])) < 1e-6 * max(1.0, r[what + ".loss"]), what
        for n, g in r[what + ".grads"].items():
            assert np.allclose(g, got["%s.grad.%s" % (what, n)], rtol=1e-6, atol=1e-9), (what, n)
    return r


def self_check():
    ed.self_check()
    # gradcheck of both losses on a tiny model, through every stack
    cfg = {"sent": stack(1, 4, 2, 6), "doc": stack(1, 6, 2, 6, "window:w=1"), "dec": stack(1, 4, 2, 6),
           "max_sent_len": 3, "max_sents": 3, "norm": "pre", "activation": "gelu"}
    rng = np.random.RandomState(3)
    params = ed.random_params(hr.param_shapes(cfg), rng)
    docs, labels = [[[1, 2], [], [3, 4, 5, 6]]], [[1, 0, 1]]
    action, source = [[M, R, K]], [[0, 0, 2]]
    names = ["sent.wte", "doc.proj.weight", "doc.wpe", "dec.blocks.0.cross.kv.weight", "dec.proj.weight", "head.weight"]

    def f(*xs):
        p = ed.leaf_params(params)
        p.update(dict(zip(names, xs)))
        return hr.extract(p, cfg, docs, labels)[0] + hr.pretrain(p, cfg, docs, action, source)[0]
    xs = [torch.tensor(params[n], dtype=torch.float64, requires_grad=True) for n in names]
    assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-6)
    # a masked sentence is seen as MASK symbols only: its bytes reach the extraction scores of no view
    p = ed.leaf_params(params)
    a = hr.encode(p, cfg, [[[1, 2], [7], [3]]], [[M, U, U]], [[0, 1, 2]])[0]
    b = hr.encode(p, cfg, [[[9, 9], [7], [3]]], [[M, U, U]], [[0, 1, 2]])[0]
    assert torch.equal(a, b)


def main():
    args = fixture_io.start(__doc__, self_check, FIXTURES)
    if args is None:
        return
    fixture_io.write_fixtures(args, build, verify, "hibert_%s.safetensors", MAX_BYTES, lambda path, size, r: (
        "wrote %s: %d bytes, extraction BCE %.9g, pre-training NLL %.9g over %d targets"
        % (path, size, r["extract.loss"], r["pretrain.loss"], r["pretrain.count"])))


if __name__ == "__main__":
    main()
