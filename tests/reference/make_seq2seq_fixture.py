#!/usr/bin/python3
"""Generate the parity fixtures tests/fixtures/seq2seq_<name>.safetensors for longctx's vanilla
encoder-decoder Transformer (seq2seq_ref.py; docs/guides/seq2seq.md).

Each fixture holds seeded random weights under the C tensor names (encdec_ref.random_params: drawn in
float64, rounded to float32), a few (source, target) byte pairs of different lengths (an empty source and
an empty target among them), and the float64 reference's mean NLL and gradients:

  <param name>                 F32  every parameter (seq2seq_ref.param_shapes order)
  src, tgt                     I32  [total bytes] the pairs' sources / targets one after another
  src_len, tgt_len             I32  [pairs]
  expected.loss                F32  [1] mean NLL per target symbol (bytes and each EOS)
  expected.count               I32  [1] target symbols
  grad.<param name>            F32  gradient of expected.loss
Metadata: pairs, max_src_len, max_tgt_len, norm, activation, tied, enc.* / dec.* (n_layer, d_model,
n_head, d_ff, attn), generator.

Self-checks first (encdec_ref.self_check, torch.autograd.gradcheck of the reference's loss on a tiny
model, greedy decoding against the teacher-forced argmax), then each fixture is written to a temporary
file, read back, recomputed from the file's contents and renamed into place.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_seq2seq_fixture.py [--check] [--only NAME]
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import encdec_ref as ed  # noqa: E402
import fixture_io  # noqa: E402
import seq2seq_ref  # noqa: E402

MAX_BYTES = 300 * 1024


stack = ed.stack
# name -> (config, source/target lengths, seed)
FIXTURES = {
    "pre_gelu_tied": ({"enc": stack(2, 12, 2, 20), "dec": stack(2, 12, 3, 18), "max_src_len": 7, "max_tgt_len": 6,
                       "norm": "pre", "activation": "gelu", "tied": 1}, [(5, 4), (0, 6), (7, 0)], 20240801),
    "post_relu_untied": ({"enc": stack(2, 12, 2, 20, "window:w=2"), "dec": stack(1, 8, 2, 16), "max_src_len": 7,
                          "max_tgt_len": 6, "norm": "post", "activation": "relu", "tied": 0},
                         [(6, 3), (2, 6), (0, 1)], 20240802),
}


def compute(cfg, params, pairs):
    p = ed.leaf_params(params)
    loss, count = seq2seq_ref.nll(p, cfg, pairs)
    loss.backward()
    return float(loss), count, {n: p[n].grad.numpy().copy() for n in params}


def build(name):
    cfg, lens, seed = FIXTURES[name]
    rng = np.random.RandomState(seed)
    params = ed.random_params(seq2seq_ref.param_shapes(cfg), rng)
    pairs = [(rng.randint(0, 256, size=a).tolist(), rng.randint(0, 256, size=b).tolist()) for a, b in lens]
    loss, count, grads = compute(cfg, params, pairs)
    tensors = [(n, "F32", v) for n, v in params.items()]
    tensors += [("src", "I32", np.array(sum((s for s, _ in pairs), []), dtype=np.int64)),
                ("tgt", "I32", np.array(sum((t for _, t in pairs), []), dtype=np.int64)),
                ("src_len", "I32", np.array([a for a, _ in lens])), ("tgt_len", "I32", np.array([b for _, b in lens])),
                ("expected.loss", "F32", np.array([loss])), ("expected.count", "I32", np.array([count]))]
    tensors += [("grad." + n, "F32", g) for n, g in grads.items()]
    meta = {"pairs": str(len(pairs)), "max_src_len": str(cfg["max_src_len"]), "max_tgt_len": str(cfg["max_tgt_len"]),
            "norm": cfg["norm"], "activation": cfg["activation"], "tied": str(cfg["tied"]),
            "generator": "tests/reference/make_seq2seq_fixture.py"}
    meta.update(ed.stack_meta(cfg, ("enc", "dec")))
    return cfg, tensors, meta, loss


def verify(path, cfg, tensors, meta):
    got, _ = fixture_io.read_back(path, tensors, meta)
    params = fixture_io.float64_params(got, seq2seq_ref.param_shapes(cfg))
    pairs = list(zip(fixture_io.split_runs(got["src"].tolist(), got["src_len"].tolist()),
                     fixture_io.split_runs(got["tgt"].tolist(), got["tgt_len"].tolist())))
    loss, count, grads = compute(cfg, params, pairs)
    assert abs(loss - float(got["expected.loss"][0])) < 1e-6 * max(1.0, abs(loss)), loss
    assert count == int(got["expected.count"][0])
    for n, g in grads.items():
        assert np.allclose(g, got["grad." + n], rtol=1e-6, atol=1e-9), n
    return loss


def self_check():
    ed.self_check()
    cfg = {"enc": stack(1, 4, 2, 6), "dec": stack(1, 4, 2, 6, "window:w=1"), "max_src_len": 3, "max_tgt_len": 3,
           "norm": "pre", "activation": "gelu", "tied": 0}
    rng = np.random.RandomState(1)
    params = ed.random_params(seq2seq_ref.param_shapes(cfg), rng)
    names = ["enc.wte", "dec.blocks.0.cross.kv.weight", "dec.head.weight", "enc.blocks.0.attn.qkv.weight"]
    pairs = [([1, 2, 3], [4, 5]), ([], [6])]

    def f(*xs):
        p = ed.leaf_params(params)
        p.update(dict(zip(names, xs)))
        return seq2seq_ref.nll(p, cfg, pairs)[0]
    xs = [torch.tensor(params[n], dtype=torch.float64, requires_grad=True) for n in names]
    assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-6)
    # greedy decoding agrees with the teacher-forced argmax of its own output
    p = ed.leaf_params(params)
    out = seq2seq_ref.greedy(p, cfg, [9, 8], 3)
    ws, wd, wo = seq2seq_ref.embeddings(p)
    enc = ed.encoder_stack(ws[torch.tensor([9, 8, 256])] + p["enc.wpe"][:3], p, "enc.", cfg["enc"], "pre", "gelu")
    inp = torch.tensor([257] + out)
    h = ed.decoder_stack(wd[inp] + p["dec.wpe"][: len(inp)], enc, p, "dec.", cfg["dec"], "pre", "gelu")
    arg = torch.argmax(h @ wo[:257].t(), dim=-1).tolist()
    assert arg[: len(out)] == out and (len(out) == 3 or arg[len(out)] == 256), (arg, out)


def main():
    args = fixture_io.start(__doc__, self_check, FIXTURES)
    if args is None:
        return
    fixture_io.write_fixtures(args, build, verify, "seq2seq_%s.safetensors", MAX_BYTES,
                              lambda path, size, loss: "wrote %s: %d bytes, loss %.9g" % (path, size, loss))


if __name__ == "__main__":
    main()
