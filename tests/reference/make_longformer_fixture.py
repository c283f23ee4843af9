#!/usr/bin/python3
"""Generate the Longformer parity fixture tests/fixtures/longformer_attn.safetensors for longctx's `window`
attention kind with global tokens (tests/test_attn_global.c reads it).

Same conventions as make_xl_fixture.py: seeded numpy RandomState draws in float64, rounded to float32 and
back (the file holds exactly the inputs the reference used), reference computed in float64
(longformer_ref.longformer_attention, Hugging Face style), stored as F32 (integers as I32) with st_io.

Cases "bi." (bidirectional, as Hugging Face) and "causal.", each:
  q, k, v, qg, kg, vg, dout   F32 [B,T,H,D]   N(0,1)
  pos     I32 [n]   global positions (sorted; 2 of them, position 0 included)
  w       I32 [1]   keys per side (HF attention_window = 2w)
  causal  I32 [1]
  scale   F32 [1]   1/sqrt(D) rounded to float32; the reference uses exactly this value
  out     F32 [B,T,H,D]
  lse     F32 [B,H,T]   log-sum-exp of the ordinary rows' scaled scores, +inf on global rows
  glse    F32 [B,H,n]   log-sum-exp of the global rows' scaled scores
  dq, dk, dv, dqg, dkg, dvg   F32 [B,T,H,D]   gradients of sum(out * dout)
  bi:     B=2 H=2 T=13 D=4 w=2 pos=[0, 7] (7 lies inside the bands of rows 5..9)
  causal: B=1 H=3 T=11 D=5 w=3 pos=[0, 6]
Dilation 1, no memory (M = 0).

Before writing, self-checks: torch.autograd.gradcheck of the reference (float64, all six inputs, several
shapes); the reference against a plain per-element numpy implementation of the definition (out, lse, glse);
then the file is written to a temporary path, read back with st_io.read, compared exactly, recomputed from
its own contents, and renamed into place.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_longformer_fixture.py           # self-checks + write the fixture
  /usr/bin/python3 tests/reference/make_longformer_fixture.py --check   # self-checks only
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture_io  # noqa: E402
import longformer_ref  # noqa: E402
from fixture_io import f32  # noqa: E402

SEED = 20240801
MAX_BYTES = 64 * 1024
# case -> (B, H, T, D, w, causal, pos)
CASES = {"bi": (2, 2, 13, 4, 2, False, [0, 7]), "causal": (1, 3, 11, 5, 3, True, [0, 6])}
INPUTS = ("q", "k", "v", "qg", "kg", "vg")
GRADS = ("dq", "dk", "dv", "dqg", "dkg", "dvg")


def reference(x, pos, w, causal, scale):
    """float64 out, lse, glse and the gradients of sum(out * dout); x: dict of numpy inputs and dout."""
    ins = [torch.tensor(x[n], dtype=torch.float64, requires_grad=True) for n in INPUTS]
    out, lse, glse = longformer_ref.longformer_attention(*ins, pos, w, causal, scale)
    (out * torch.as_tensor(x["dout"], dtype=torch.float64)).sum().backward()
    res = {"out": out.detach().numpy(), "lse": lse.detach().numpy(), "glse": glse.detach().numpy()}
    res.update({g: t.grad.numpy() for g, t in zip(GRADS, ins)})
    return res


def loop_reference(x, pos, w, causal, scale):
    """The definition element by element (numpy, float64): ordinary rows see their band plus the global keys
    (each key once; causal: keys <= the row), global rows see every key (causal: <= the row) with qg, kg, vg."""
    q, k, v, qg, kg, vg = (x[n] for n in INPUTS)
    B, T, H, D = q.shape
    out = np.zeros_like(q)
    lse = np.zeros((B, H, T))
    glse = np.zeros((B, H, len(pos)))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                is_g = t in pos
                keys = [s for s in range(T) if (not causal or s <= t) and (is_g or abs(s - t) <= w or s in pos)]
                qq, kk, vv = (qg, kg, vg) if is_g else (q, k, v)
                sc = np.array([scale * np.dot(qq[b, t, h], kk[b, s, h]) for s in keys])
                m = sc.max()
                p = np.exp(sc - m)
                out[b, t, h] = (p[:, None] * vv[b, keys, h]).sum(0) / p.sum()
                if is_g:
                    glse[b, h, pos.index(t)] = m + math.log(p.sum())
                    lse[b, h, t] = math.inf
                else:
                    lse[b, h, t] = m + math.log(p.sum())
    return out, lse, glse


def random_inputs(rng, B, H, T, D):
    x = {n: f32(rng.normal(0.0, 1.0, size=(B, T, H, D))) for n in INPUTS}
    x["dout"] = f32(rng.normal(0.0, 1.0, size=(B, T, H, D)))
    return x


def self_check():
    rng = np.random.RandomState(7)
    # gradcheck: out, glse and the finite part of lse
    for (B, H, T, D, w, causal, pos) in [(1, 2, 7, 3, 1, False, [0, 4]), (2, 1, 6, 2, 2, True, [0, 1, 5]),
                                         (1, 1, 5, 2, 3, False, [2])]:
        ins = [torch.tensor(rng.normal(size=(B, T, H, D)), dtype=torch.float64, requires_grad=True) for _ in INPUTS]

        def f(*xs):
            out, lse, glse = longformer_ref.longformer_attention(*xs, pos, w, causal, 0.6)
            return out, glse, torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)

        assert torch.autograd.gradcheck(f, ins, eps=1e-6, atol=1e-8, rtol=1e-6), (B, H, T, D, w, causal, pos)
    # against the element-by-element definition
    shapes = [c for c in CASES.values()] + [(1, 2, 9, 3, 1, True, [0, 3, 4]), (2, 1, 8, 2, 10, False, [0, 7]),
                                            (1, 1, 10, 3, 2, False, list(range(0, 10, 2))),
                                            (1, 2, 1, 3, 1, True, [0])]
    for (B, H, T, D, w, causal, pos) in shapes:
        x = random_inputs(rng, B, H, T, D)
        res = reference(x, pos, w, causal, 0.45)
        out, lse, glse = loop_reference(x, pos, w, causal, 0.45)
        assert np.allclose(res["out"], out, rtol=1e-12, atol=1e-12), (T, w, causal, pos)
        assert np.array_equal(np.isinf(res["lse"]), np.isinf(lse))
        fin = ~np.isinf(lse)
        assert np.allclose(res["lse"][fin], lse[fin], rtol=1e-12, atol=1e-12)
        assert np.allclose(res["glse"], glse, rtol=1e-12, atol=1e-12)
    print("self-checks passed (gradcheck, element-by-element definition)")


def generator_string():
    return "tests/reference/make_longformer_fixture.py seed=%d torch %s numpy %s" % (SEED, torch.__version__,
                                                                                    np.__version__)


def build_fixture():
    rng = np.random.RandomState(SEED)
    tensors = []
    meta = {"model": "longformer_attn", "cases": ",".join(CASES), "generator": generator_string()}
    for c, (B, H, T, D, w, causal, pos) in CASES.items():
        x = random_inputs(rng, B, H, T, D)
        scale = float(np.float32(1.0 / math.sqrt(D)))
        res = reference(x, pos, w, causal, scale)
        p = c + "."
        tensors += [(p + n, "F32", x[n]) for n in INPUTS + ("dout",)]
        tensors += [(p + "pos", "I32", np.array(pos)), (p + "w", "I32", np.array([w])),
                    (p + "causal", "I32", np.array([int(causal)])), (p + "scale", "F32", np.array([scale]))]
        tensors += [(p + n, "F32", res[n]) for n in ("out", "lse", "glse") + GRADS]
        meta.update({p + "batch": str(B), p + "n_head": str(H), p + "seq_len": str(T), p + "head_dim": str(D),
                     p + "w": str(w), p + "causal": str(int(causal)), p + "global": ",".join(map(str, pos))})
    return tensors, meta


def verify_file(path, tensors, meta):
    got, _ = fixture_io.read_back(path, tensors, meta)
    summary = []
    for c in CASES:
        p = c + "."
        x = {n: got[p + n].astype(np.float64) for n in INPUTS + ("dout",)}
        pos = [int(i) for i in got[p + "pos"]]
        w, causal, scale = int(got[p + "w"][0]), bool(got[p + "causal"][0]), float(got[p + "scale"][0])
        res = reference(x, pos, w, causal, scale)
        for n, val in res.items():
            assert np.array_equal(val.astype(np.float32), got[p + n]), p + n
        # informative: a float32 PyTorch run against the stored float64 results
        ins = [torch.tensor(got[p + n], requires_grad=True) for n in INPUTS]
        out, _, _ = longformer_ref.longformer_attention(*ins, pos, w, causal, scale)
        (out * torch.as_tensor(got[p + "dout"])).sum().backward()
        e = max(np.abs(t.grad.numpy() - got[p + n]).max() / np.abs(got[p + n]).max() for t, n in zip(ins, GRADS))
        summary.append("%s: fp32 out err %.1e, rel grad err %.1e"
                       % (c, np.abs(out.detach().numpy() - got[p + "out"]).max(), e))
    return "; ".join(summary)


def main():
    args = fixture_io.start(__doc__, self_check)
    if args is None:
        return
    path = os.path.join(args.out_dir, "longformer_attn.safetensors")
    tensors, meta = build_fixture()
    size, summary = fixture_io.write_checked(path, tensors, meta, lambda p: verify_file(p, tensors, meta), MAX_BYTES)
    print("wrote %s: %d bytes; %s" % (fixture_io.relpath(path), size, summary))


if __name__ == "__main__":
    main()
