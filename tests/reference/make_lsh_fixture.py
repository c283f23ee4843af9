#!/usr/bin/python3
"""Generate the LSH attention parity fixture tests/fixtures/lsh_attn.safetensors for longctx.

Same conventions as make_xl_fixture.py: seeded numpy RandomState draws in float64, rounded to float32
and back (so the file holds exactly the inputs the reference used), reference computed in float64
(lsh_ref.lsh_attention), stored as F32 (integers as I32) with st_io. The rotations are drawn here and
stored: the C side runs lc_attn_lsh_forward_with / backward_with on them.

Per case "<c>." (metadata `cases` lists them):
  config    I32 [8]  B, H, T, D, causal, buckets, hashes, chunk
  scale     F32 [1]  1/sqrt(D) rounded to float32 (the reference uses exactly this value)
  q, v, dout           F32 [B,T,H,D]  N(0,1)
  rotations            F32 [hashes,H,D,buckets/2]  N(0,1)
  buckets              I32 [B,H,hashes,T]  argmax([qR ; -qR]); every argmax wins by at least MARGIN
                       (draws are repeated with the next seed until it does), so float32 agrees
  out [B,T,H,D], lse [B,H,T], dq, dv [B,T,H,D]  (gradients of sum(out * dout); dk is 0 by definition)
Cases: a: causal, chunk not dividing T (short last chunk) and the wrap-around; b: bidirectional, three
rounds; c: causal, a single chunk; d: bidirectional, four rounds, chunk 5.

The informative float32 PyTorch error printed at the end is large (~4e-3) in case a: rows that see only
themselves have lse_r = -1e5 in every round, and float32 exp(lse_r - lse) near -1e5 is off by ~0.4%
(the C kernel combines rounds relative to their maximum and stays exact there).

Before writing anything the script runs its self-checks (see self_check), then writes the fixture to a
temporary file, reads it back with st_io.read, verifies it exactly, and renames it into place.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_lsh_fixture.py           # self-checks + write the fixture
  /usr/bin/python3 tests/reference/make_lsh_fixture.py --check   # self-checks only
  /usr/bin/python3 tests/reference/make_lsh_fixture.py --out-dir DIR   # write DIR/lsh_attn.safetensors
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture_io  # noqa: E402
import lsh_ref  # noqa: E402
from fixture_io import f32  # noqa: E402

MAX_BYTES = 64 * 1024
SEED = 20240801
MARGIN = 1e-3
# case -> (B, H, T, D, causal, buckets, hashes, chunk)
CASES = {
    "a": (2, 2, 13, 5, 1, 4, 2, 4),
    "b": (1, 3, 16, 8, 0, 6, 3, 4),
    "c": (1, 2, 9, 4, 1, 2, 1, 16),
    "d": (1, 1, 24, 16, 0, 8, 4, 5),
}


def margin_of(q, rot):
    """Smallest gap between the largest and the second largest projection over all rows and rounds."""
    proj = lsh_ref.projections(torch.as_tensor(q), torch.as_tensor(rot)).numpy()
    top2 = np.sort(proj, axis=-1)[..., -2:]
    return float((top2[..., 1] - top2[..., 0]).min())


def draw_case(B, H, T, D, hashes, buckets, seed):
    """Inputs of one case; redraws with seed + 1, + 2, ... until every argmax wins by MARGIN."""
    while True:
        rng = np.random.RandomState(seed)
        x = {n: f32(rng.normal(0.0, 1.0, size=shape)) for n, shape in
             [("q", (B, T, H, D)), ("v", (B, T, H, D)), ("dout", (B, T, H, D)),
              ("rotations", (hashes, H, D, buckets // 2))]}
        if margin_of(x["q"], x["rotations"]) > MARGIN:
            return x, seed
        seed += 1


def reference(x, causal, chunk, scale):
    q = torch.tensor(x["q"], requires_grad=True)
    v = torch.tensor(x["v"], requires_grad=True)
    out, lse, buckets = lsh_ref.lsh_attention(q, v, torch.as_tensor(x["rotations"]), chunk, causal, scale)
    (out * torch.as_tensor(x["dout"])).sum().backward()
    return {"out": out.detach().numpy(), "lse": lse.detach().numpy(), "dq": q.grad.numpy(), "dv": v.grad.numpy(),
            "buckets": buckets.numpy().astype(np.int32)}


# ---------------------------------------------------------------------------------------------
# Self-checks


def check_against_loops():
    """The tensor version against the explicit loops, on the fixture shapes and a few more."""
    shapes = list(CASES.values()) + [(1, 2, 7, 3, 1, 2, 3, 2), (2, 1, 10, 4, 0, 4, 2, 10), (1, 1, 1, 3, 1, 2, 2, 4),
                                      (1, 1, 1, 3, 0, 2, 1, 1), (1, 2, 12, 3, 0, 6, 2, 3)]
    worst = 0.0
    for i, (B, H, T, D, causal, nb, nh, c) in enumerate(shapes):
        rng = np.random.RandomState(7 + i)
        q, v = rng.normal(size=(B, T, H, D)), rng.normal(size=(B, T, H, D))
        rot = rng.normal(size=(nh, H, D, nb // 2))
        out, lse, bk = lsh_ref.lsh_attention(torch.as_tensor(q), torch.as_tensor(v), torch.as_tensor(rot), c, causal, 0.6)
        out2, lse2 = lsh_ref.lsh_attention_loops(q, v, bk.numpy(), c, causal, 0.6)
        e = max(np.abs(out.numpy() - out2).max(), np.abs(lse.numpy() - lse2).max() / 1e5)
        assert e < 1e-12, (i, e)
        worst = max(worst, e)
    print("  tensor version == explicit loops on %d shapes, max err %.1e" % (len(shapes), worst))


def check_gradcheck():
    """torch.autograd.gradcheck of out and lse w.r.t. q and v (buckets held fixed)."""
    for causal in (0, 1):
        for (B, H, T, D, nb, nh, c) in [(1, 2, 7, 3, 4, 2, 2), (2, 1, 6, 2, 2, 3, 4), (1, 1, 5, 3, 2, 2, 8)]:
            rng = np.random.RandomState(11 + T + causal)
            q = torch.tensor(rng.normal(size=(B, T, H, D)), requires_grad=True)
            v = torch.tensor(rng.normal(size=(B, T, H, D)), requires_grad=True)
            rot = torch.as_tensor(rng.normal(size=(nh, H, D, nb // 2)))
            bk = lsh_ref.hash_buckets(q.detach(), rot)

            def f(qq, vv):
                out, lse, _ = lsh_ref.lsh_attention(qq, vv, rot, c, causal, 0.7, buckets=bk)
                return out, lse

            assert torch.autograd.gradcheck(f, (q, v), eps=1e-6, atol=1e-7, rtol=1e-5)
    print("  gradcheck of out and lse w.r.t. q, v: ok (6 shapes, causal and bidirectional)")


def check_single_bucket_is_dense():
    """Zero rotations (every position in bucket 0) and one chunk: dense shared-QK attention with the self
    mask; with n rounds the output is the same and lse is log(n) higher."""
    B, H, T, D = 2, 2, 9, 4
    rng = np.random.RandomState(5)
    q, v = torch.as_tensor(rng.normal(size=(B, T, H, D))), torch.as_tensor(rng.normal(size=(B, T, H, D)))
    k = lsh_ref.normalise_keys(q)
    for causal in (0, 1):
        z = 0.5 * torch.einsum("bthd,bshd->bhts", q, k)
        eye = torch.eye(T, dtype=torch.bool)
        z = torch.where(eye, torch.full_like(z, lsh_ref.SELF_LOGIT), z)
        if causal:
            z = z.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), -math.inf)
        want = torch.einsum("bhts,bshd->bthd", torch.softmax(z, -1), v)
        for nh in (1, 3):
            rot = torch.zeros(nh, H, D, 1)
            out, lse, bk = lsh_ref.lsh_attention(q, v, rot, 16, causal, 0.5)
            assert int(bk.abs().max()) == 0
            assert (out - want).abs().max() < 1e-12
            assert (lse - torch.logsumexp(z, -1) - math.log(nh)).abs().max() < 1e-9
    print("  one bucket, one chunk == dense shared-QK attention with the self mask (out; lse + log n)")


def check_wrap_and_chunks():
    """The key sets by hand: T = 5, chunk 2, identity order (all in one bucket): chunks {0,1} {2,3} {4};
    query 0 sees the last chunk {4} and {0, 1}; query 4 sees {2, 3} and {4}. Equal keys: the output is
    the mean of the values of the visible keys other than the query itself (itself when alone)."""
    T, D = 5, 2
    q = torch.zeros(1, T, 1, D, dtype=torch.float64)
    q[..., 0] = 1.0  # all keys equal: every visible key but self gets the same weight
    v = torch.arange(T, dtype=torch.float64).reshape(1, T, 1, 1).expand(1, T, 1, D).clone()
    out, _, _ = lsh_ref.lsh_attention(q, v, torch.zeros(1, 1, D, 1), 2, 0, 1.0)
    got = out[0, :, 0, 0].tolist()
    want = [(4 + 1) / 2, (4 + 0) / 2, (0 + 1 + 3) / 3, (0 + 1 + 2) / 3, (2 + 3) / 2]
    assert np.allclose(got, want), (got, want)
    out, _, _ = lsh_ref.lsh_attention(q, v, torch.zeros(1, 1, D, 1), 2, 1, 1.0)
    got = out[0, :, 0, 0].tolist()
    want = [0.0, 0.0, (0 + 1) / 2, (0 + 1 + 2) / 3, (2 + 3) / 2]
    assert np.allclose(got, want), (got, want)
    print("  chunks, wrap-around and masks on a hand-checked example")


def self_check():
    print("self-check:")
    check_against_loops()
    check_gradcheck()
    check_single_bucket_is_dense()
    check_wrap_and_chunks()


# ---------------------------------------------------------------------------------------------
# The fixture


def build_fixture():
    tensors = []
    seeds = []
    for i, (c, (B, H, T, D, causal, nb, nh, chunk)) in enumerate(CASES.items()):
        x, seed = draw_case(B, H, T, D, nh, nb, SEED + 100 * i)
        seeds.append("%s=%d" % (c, seed))
        scale = float(np.float32(1.0 / math.sqrt(D)))
        res = reference(x, causal, chunk, scale)
        p = c + "."
        tensors += [(p + "config", "I32", np.array([B, H, T, D, causal, nb, nh, chunk])),
                    (p + "scale", "F32", np.array([scale]))]
        tensors += [(p + n, "F32", x[n]) for n in ("q", "v", "dout", "rotations")]
        tensors += [(p + "buckets", "I32", res["buckets"])]
        tensors += [(p + n, "F32", res[n]) for n in ("out", "lse", "dq", "dv")]
    meta = {"model": "lsh_attn", "cases": ",".join(CASES), "generator":
            "tests/reference/make_lsh_fixture.py seeds %s torch %s numpy %s" % (" ".join(seeds), torch.__version__,
                                                                                 np.__version__)}
    return tensors, meta


def verify(path, tensors, meta):
    got, _ = fixture_io.read_back(path, tensors, meta)
    summary = []
    for c in CASES:
        p = c + "."
        B, H, T, D, causal, nb, nh, chunk = (int(z) for z in got[p + "config"])
        x = {n: got[p + n].astype(np.float64) for n in ("q", "v", "dout", "rotations")}
        res = reference(x, causal, chunk, float(got[p + "scale"][0]))
        for n in ("out", "lse", "dq", "dv"):
            assert np.array_equal(res[n].astype(np.float32), got[p + n]), p + n
        assert np.array_equal(res["buckets"], got[p + "buckets"])
        # informative: float32 PyTorch against the float64 reference
        q32 = torch.tensor(got[p + "q"], requires_grad=True)
        v32 = torch.tensor(got[p + "v"], requires_grad=True)
        out, _, bk = lsh_ref.lsh_attention(q32, v32, torch.as_tensor(got[p + "rotations"]), chunk, causal,
                                           float(got[p + "scale"][0]))
        (out * torch.as_tensor(got[p + "dout"])).sum().backward()
        e = max(np.abs(t.grad.numpy() - got[p + n]).max() / np.abs(got[p + n]).max()
                for t, n in ((q32, "dq"), (v32, "dv")))
        assert np.array_equal(bk.numpy(), got[p + "buckets"]), "float32 buckets differ"
        summary.append("%s: fp32 out err %.1e, rel grad err %.1e" % (c, np.abs(out.detach().numpy() - got[p + "out"]).max(), e))
    return "; ".join(summary)


def main():
    torch.set_default_dtype(torch.float64)
    args = fixture_io.start(__doc__, self_check)
    if args is None:
        return
    path = os.path.join(args.out_dir, "lsh_attn.safetensors")
    tensors, meta = build_fixture()
    size, summary = fixture_io.write_checked(path, tensors, meta, lambda p: verify(p, tensors, meta), MAX_BYTES)
    print("wrote %s (%d bytes): %s" % (fixture_io.relpath(path), size, summary))


if __name__ == "__main__":
    main()
