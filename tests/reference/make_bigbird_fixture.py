#!/usr/bin/python3
"""Generate the BigBird attention parity fixtures tests/fixtures/bigbird_{itc,etc}.safetensors for longctx.

Same conventions as make_xl_fixture.py: seeded numpy RandomState draws in float64 rounded to float32
and back (the files hold exactly the inputs the reference used), reference in float64 (bigbird_ref),
stored as F32 (integers as I32) with st_io.

Each file: one variant, shared inputs, and the bidirectional and causal results:
  q, k, v, dout     F32 [B, T, H, D]   N(0, 1)
  scale             F32 [1]            1/sqrt(D) rounded to float32 (the reference uses exactly this)
  plan              I32 [H, n, r]      random key blocks per query block, drawn with numpy (not the C
                                       kind's seeded plan: the C test passes this plan explicitly)
  <c>.out           F32 [B, T, H, D]   c = bidirectional | causal
  <c>.lse           F32 [B, H, T]
  <c>.dq, <c>.dk, <c>.dv  F32 [B, T, H, D]  gradients of sum(out * dout)
Metadata: batch, n_head, seq_len, head_dim, block, random, variant, globals (etc), cases, generator.
Shapes: B=2 H=2 T=147 D=8 b=16 r=2 (T not a multiple of b; itc n=10, etc g=5 n=9 with a short last block).

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_bigbird_fixture.py            # self-checks + both fixtures
  /usr/bin/python3 tests/reference/make_bigbird_fixture.py --check    # self-checks only
  /usr/bin/python3 tests/reference/make_bigbird_fixture.py --only itc # one fixture (itc|etc)
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bigbird_ref as bb  # noqa: E402
import fixture_io  # noqa: E402
from fixture_io import f32  # noqa: E402

MAX_BYTES = 300 * 1024

# variant -> (B, H, T, D, b, r, G, seed)
FIXTURES = {"itc": (2, 2, 147, 8, 16, 2, 0, 20240801), "etc": (2, 2, 147, 8, 16, 2, 5, 20240802)}
CASES = ("bidirectional", "causal")


def reference(x, plan, b, variant, G, causal, scale):
    """float64 out, lse and gradients of sum(out * dout) w.r.t. q, k, v (numpy in and out)."""
    ins = [torch.tensor(x[n], dtype=torch.float64, requires_grad=True) for n in ("q", "k", "v")]
    out, lse = bb.attention(*ins, plan, b, variant, G, causal, scale)
    (out * torch.as_tensor(x["dout"])).sum().backward()
    res = {"out": out.detach().numpy().copy(), "lse": lse.detach().numpy().copy()}
    for n, t in zip(("dq", "dk", "dv"), ins):
        res[n] = t.grad.numpy().copy()
    return res


# ---------------------------------------------------------------------------------------------
# Self-checks


def check_masks():
    """The vectorised mask equals the element-by-element definition; global rows and columns are full;
    every query sees itself; random blocks are never window or global blocks."""
    n_cases = 0
    for variant in (bb.ITC, bb.ETC):
        for T, b, G, r in ((1, 4, 0, 2), (7, 3, 2, 1), (40, 3, 5, 2), (53, 5, 1, 3), (30, 30, 4, 3), (64, 4, 9, 0)):
            if variant == bb.ETC and G >= T:
                continue
            n = bb.n_blocks(T, b, variant, G)
            plan = bb.random_plan(np.random.RandomState(T + b), 2, n, r, variant)
            for h in range(2):
                for i in range(n):
                    for kb in plan[h, i]:
                        if kb >= 0:
                            assert kb in bb.candidates(i, n, variant), (variant, T, b, i, kb)
            for causal in (False, True):
                m = bb.visible_mask(T, b, variant, G, plan, causal)
                assert torch.equal(m, bb.visible_mask_loops(T, b, variant, G, plan, causal)), (variant, T, b, G, causal)
                assert bool(m.diagonal(dim1=1, dim2=2).all())
                glob = range(G) if variant == bb.ETC else [p for p in range(T) if p < b or p >= (n - 1) * b]
                for p in glob:
                    assert bool(m[:, p, : p + 1].all()) and bool(m[:, p:, p].all())
                    if not causal:
                        assert bool(m[:, p, :].all()) and bool(m[:, :, p].all())
                n_cases += 1
    print("  mask == definition, globals full, diagonal set, random blocks valid: %d cases" % n_cases)


def check_blocked_matches_dense():
    """The dense masked formulation equals the block-gather formulation (float64)."""
    err = 0.0
    for variant in (bb.ITC, bb.ETC):
        for (B, H, T, D, b, r, G) in ((2, 2, 147, 8, 16, 2, 5), (1, 3, 61, 5, 4, 3, 7), (1, 1, 9, 4, 16, 1, 3)):
            rng = np.random.RandomState(T)
            n = bb.n_blocks(T, b, variant, G)
            plan = bb.random_plan(rng, H, n, r, variant)
            q, k, v = (torch.as_tensor(rng.normal(size=(B, T, H, D))) for _ in range(3))
            for causal in (False, True):
                o1, l1 = bb.attention(q, k, v, plan, b, variant, G, causal, 0.4)
                o2, l2 = bb.attention_blocked(q, k, v, plan, b, variant, G, causal, 0.4)
                err = max(err, (o1 - o2).abs().max().item(), (l1 - l2).abs().max().item())
    assert err < 1e-12, err
    print("  dense masked attention == block-gather attention (itc/etc, causal 0/1): max err %.1e" % err)


def check_gradcheck():
    for variant, G in ((bb.ITC, 0), (bb.ETC, 3)):
        for causal in (False, True):
            rng = np.random.RandomState(5)
            B, H, T, D, b, r = 1, 2, 23, 3, 3, 1
            n = bb.n_blocks(T, b, variant, G)
            plan = bb.random_plan(rng, H, n, r, variant)
            ins = tuple(torch.tensor(rng.normal(size=(B, T, H, D)), requires_grad=True) for _ in range(3))

            def f(q, k, v):
                out, lse = bb.attention(q, k, v, plan, b, variant, G, causal, 0.7)
                return out, lse

            assert torch.autograd.gradcheck(f, ins, eps=1e-6, atol=1e-7, rtol=1e-5)
    print("  gradcheck of out and lse w.r.t. q, k, v (itc/etc, causal 0/1)")


def check_sparse_at_fixture_shapes():
    """The fixtures must exercise the sparsity: some causally possible pairs are hidden."""
    for name, (B, H, T, D, b, r, G, seed) in FIXTURES.items():
        n = bb.n_blocks(T, b, name, G)
        plan = bb.random_plan(np.random.RandomState(seed), H, n, r, name)
        m = bb.visible_mask(T, b, name, G, plan, False)
        frac = m.double().mean().item()
        assert 0.2 < frac < 0.9, (name, frac)
        print("  %s fixture shape: n=%d blocks, %.0f%% of the pairs visible (bidirectional)" % (name, n, 100 * frac))


def self_check():
    print("self-check:")
    check_masks()
    check_blocked_matches_dense()
    check_gradcheck()
    check_sparse_at_fixture_shapes()


# ---------------------------------------------------------------------------------------------
# Fixtures


def build(name):
    B, H, T, D, b, r, G, seed = FIXTURES[name]
    rng = np.random.RandomState(seed)
    n = bb.n_blocks(T, b, name, G)
    plan = bb.random_plan(rng, H, n, r, name)
    x = {k: f32(rng.normal(0.0, 1.0, size=(B, T, H, D))) for k in ("q", "k", "v", "dout")}
    scale = float(np.float32(1.0 / math.sqrt(D)))
    tensors = [(k, "F32", x[k]) for k in ("q", "k", "v", "dout")]
    tensors += [("scale", "F32", np.array([scale])), ("plan", "I32", plan)]
    for causal, c in enumerate(CASES):
        res = reference(x, plan, b, name, G, bool(causal), scale)
        tensors += [("%s.%s" % (c, k), "F32", res[k]) for k in ("out", "lse", "dq", "dk", "dv")]
    meta = {"batch": str(B), "n_head": str(H), "seq_len": str(T), "head_dim": str(D), "block": str(b),
            "random": str(r), "variant": name, "globals": str(G), "cases": ",".join(CASES),
            "generator": "tests/reference/make_bigbird_fixture.py seed=%d torch %s numpy %s"
                         % (seed, torch.__version__, np.__version__)}
    return tensors, meta


def verify(path, name, tensors, meta):
    """Read back, compare exactly, recompute from the file's own contents; returns a summary."""
    got, _ = fixture_io.read_back(path, tensors, meta)
    B, H, T, D, b, r, G, seed = FIXTURES[name]
    x = {k: got[k].astype(np.float64) for k in ("q", "k", "v", "dout")}
    scale = float(got["scale"][0])
    summary = []
    for causal, c in enumerate(CASES):
        res = reference(x, got["plan"], b, name, G, bool(causal), scale)
        for k, val in res.items():
            assert np.array_equal(val.astype(np.float32), got["%s.%s" % (c, k)]), (c, k)
        # informative: a float32 PyTorch computation against the float64 reference
        ins = [torch.tensor(got[k], requires_grad=True) for k in ("q", "k", "v")]
        out, lse = bb.attention(*ins, got["plan"], b, name, G, bool(causal), scale)
        (out * torch.as_tensor(got["dout"])).sum().backward()
        e = max(np.abs(t.grad.numpy() - got["%s.%s" % (c, k)]).max() / np.abs(got["%s.%s" % (c, k)]).max()
                for t, k in zip(ins, ("dq", "dk", "dv")))
        summary.append("%s: fp32 out err %.1e, rel grad err %.1e"
                       % (c, np.abs(out.detach().numpy() - got[c + ".out"]).max(), e))
    return "; ".join(summary)


def main():
    args = fixture_io.start(__doc__, self_check, FIXTURES)
    if args is None:
        return
    for name in args.names:
        path = os.path.join(args.out_dir, "bigbird_%s.safetensors" % name)
        tensors, meta = build(name)
        size, summary = fixture_io.write_checked(path, tensors, meta, lambda p: verify(p, name, tensors, meta),
                                                 MAX_BYTES)
        print("wrote %s: %d bytes; %s" % (fixture_io.relpath(path), size, summary))


if __name__ == "__main__":
    main()
