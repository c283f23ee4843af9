#!/usr/bin/python3
"""Generate the Linformer parity fixture tests/fixtures/linformer_attn.safetensors for longctx.

Same conventions as make_xl_fixture.py: seeded numpy RandomState draws in float64, rounded to float32
and back (the file holds exactly the inputs the reference used), reference in float64
(linformer_ref.linformer_attention), stored as F32 with st_io.

Per case c ("a.", "b.", "c."):
  q, k, v, dout [B,T,H,D]  N(0, 1)
  E [P,k,n]                all projections in linformer_ref's numbering, N(0, 0.5)
  scale F32 [1]            1/sqrt(D) rounded to float32 (the reference uses exactly this value)
  out [B,T,H,D], lse [B,H,T], dq, dk, dv [B,T,H,D], dE [P,k,n]   (gradients of sum(out * dout))
Metadata per case: batch, n_head, seq_len, head_dim, k, max_len (= n), share; file: model, cases,
generator. Case a: share none, B2 H2 T5 D3 k4 n7 (n > T: the trailing columns get zero gradient);
case b: headwise, B1 H3 T6 D4 k8 n6 (k > T); case c: kv, B2 H2 T7 D5 k3 n9.

Self-checks before anything is written: gradcheck (float64) of out and lse w.r.t. q, k, v, E for each
sharing mode; an explicit numpy loop formulation; identity projections (k = n = T) equal plain softmax
attention; headwise sharing equals projecting the whole C-wide key/value along the sequence with one
bias-free Linear(n, k) whose weight is cut to its first S columns (the fairseq formulation); every file
read back and recomputed from its own contents before it is renamed into place.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_linformer_fixture.py           # self-checks + write the fixture
  /usr/bin/python3 tests/reference/make_linformer_fixture.py --check   # self-checks only
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture_io  # noqa: E402
import linformer_ref as lr  # noqa: E402
from fixture_io import f32  # noqa: E402

SEED = 20240801
# case -> (B, H, T, D, k, n, share)
CASES = {"a": (2, 2, 5, 3, 4, 7, "none"), "b": (1, 3, 6, 4, 8, 6, "headwise"), "c": (2, 2, 7, 5, 3, 9, "kv")}
MAX_BYTES = 64 * 1024


def reference(x, share, scale):
    """float64 out, lse and gradients of sum(out * dout) w.r.t. q, k, v, E (numpy in and out)."""
    ins = [torch.tensor(x[n], dtype=torch.float64, requires_grad=True) for n in ("q", "k", "v", "E")]
    out, lse = lr.linformer_attention(ins[0], ins[1], ins[2], ins[3], share, scale)
    (out * torch.as_tensor(x["dout"])).sum().backward()
    res = {"out": out.detach().numpy().copy(), "lse": lse.detach().numpy().copy()}
    for n, t in zip(("dq", "dk", "dv", "dE"), ins):
        res[n] = t.grad.numpy().copy()
    return res


def random_case(rng, B, H, T, D, k, n, share):
    P = lr.n_projections(share, H)
    x = {nm: f32(rng.normal(0.0, 1.0, size=(B, T, H, D))) for nm in ("q", "k", "v")}
    x["E"] = f32(rng.normal(0.0, 0.5, size=(P, k, n)))
    x["dout"] = f32(rng.normal(0.0, 1.0, size=(B, T, H, D)))
    return x


# ---------------------------------------------------------------------------------------------- checks

def check_gradcheck():
    rng = np.random.RandomState(1)
    for share in lr.SHARES:
        B, H, T, D, k, n = 2, 2, 4, 3, 3, 6
        x = random_case(rng, B, H, T, D, k, n, share)
        ins = tuple(torch.tensor(x[nm], requires_grad=True) for nm in ("q", "k", "v", "E"))
        assert torch.autograd.gradcheck(lambda *a: lr.linformer_attention(*a, share), ins, eps=1e-6, atol=1e-8,
                                        rtol=1e-6)
        print("  gradcheck linformer_attention ok: share=%s (q, k, v, E; out and lse)" % share)


def loops(x, share, scale):
    """Explicit per-element formulation in numpy."""
    q, k, v, E = x["q"], x["k"], x["v"], x["E"]
    B, T, H, D = q.shape
    K = E.shape[1]
    out = np.zeros_like(q)
    lse = np.zeros((B, H, T))
    for b in range(B):
        for h in range(H):
            e, f = E[lr.key_proj(share, h)], E[lr.value_proj(share, h)]
            kp = np.array([[sum(e[j, s] * k[b, s, h, d] for s in range(T)) for d in range(D)] for j in range(K)])
            vp = np.array([[sum(f[j, s] * v[b, s, h, d] for s in range(T)) for d in range(D)] for j in range(K)])
            for t in range(T):
                sc = [scale * sum(q[b, t, h, d] * kp[j, d] for d in range(D)) for j in range(K)]
                m = max(sc)
                z = sum(math.exp(s - m) for s in sc)
                lse[b, h, t] = m + math.log(z)
                for d in range(D):
                    out[b, t, h, d] = sum(math.exp(sc[j] - m) / z * vp[j, d] for j in range(K))
    return out, lse


def check_loops():
    rng = np.random.RandomState(2)
    for c, (B, H, T, D, k, n, share) in CASES.items():
        x = random_case(rng, B, H, T, D, k, n, share)
        scale = 1.0 / math.sqrt(D)
        res = reference(x, share, scale)
        out, lse = loops(x, share, scale)
        assert np.abs(out - res["out"]).max() < 1e-12 and np.abs(lse - res["lse"]).max() < 1e-12, c
    print("  linformer_attention matches explicit loops (3 cases)")


def check_identity_is_full_attention():
    rng = np.random.RandomState(3)
    for share in lr.SHARES:
        B, H, T, D = 2, 3, 6, 4
        x = random_case(rng, B, H, T, D, T, T, share)
        x["E"] = np.stack([np.eye(T)] * lr.n_projections(share, H))
        q, k, v = (torch.tensor(x[nm]) for nm in ("q", "k", "v"))
        out, lse = lr.linformer_attention(q, k, v, torch.tensor(x["E"]), share)
        sc = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(D)
        want = torch.einsum("bhts,bshd->bthd", torch.softmax(sc, -1), v)
        assert (out - want).abs().max() < 1e-13 and (lse - torch.logsumexp(sc, -1)).abs().max() < 1e-13
    print("  identity projections (k = n = T) give full softmax attention (3 sharing modes)")


def check_headwise_is_sequence_linear():
    """Headwise sharing as a sequence-axis Linear over the whole C-wide key (fairseq's formulation, written
    here independently): keys [B, S, C] -> permute to [B, C, S] -> linear with weight W[:, :S] -> [B, C, k]."""
    rng = np.random.RandomState(4)
    B, H, T, D, k, n = 2, 3, 5, 4, 6, 9
    x = random_case(rng, B, H, T, D, k, n, "headwise")
    q, kk, v, E = (torch.tensor(x[nm]) for nm in ("q", "k", "v", "E"))
    lin_k = torch.nn.Linear(n, k, bias=False).double()
    lin_v = torch.nn.Linear(n, k, bias=False).double()
    with torch.no_grad():
        lin_k.weight.copy_(E[0]), lin_v.weight.copy_(E[1])
    C = H * D
    kp = torch.nn.functional.linear(kk.reshape(B, T, C).permute(0, 2, 1), lin_k.weight[:, :T])   # [B, C, k]
    vp = torch.nn.functional.linear(v.reshape(B, T, C).permute(0, 2, 1), lin_v.weight[:, :T])
    kp = kp.permute(0, 2, 1).reshape(B, k, H, D)
    vp = vp.permute(0, 2, 1).reshape(B, k, H, D)
    sc = torch.einsum("bthd,bjhd->bhtj", q, kp) / math.sqrt(D)
    want = torch.einsum("bhtj,bjhd->bthd", torch.softmax(sc, -1), vp)
    out, _ = lr.linformer_attention(q, kk, v, E, "headwise")
    assert (out - want).abs().max() < 1e-13
    print("  headwise sharing equals a shared sequence-axis Linear(n, k) cut to S columns")


def self_check():
    print("self-check:")
    check_gradcheck()
    check_loops()
    check_identity_is_full_attention()
    check_headwise_is_sequence_linear()


# ---------------------------------------------------------------------------------------------- fixture

def build():
    rng = np.random.RandomState(SEED)
    tensors = []
    meta = {"model": "linformer_attn", "cases": ",".join(CASES),
            "generator": "tests/reference/make_linformer_fixture.py seed=%d torch %s numpy %s"
                         % (SEED, torch.__version__, np.__version__)}
    for c, (B, H, T, D, k, n, share) in CASES.items():
        x = random_case(rng, B, H, T, D, k, n, share)
        scale = float(np.float32(1.0 / math.sqrt(D)))
        res = reference(x, share, scale)
        p = c + "."
        tensors += [(p + nm, "F32", x[nm]) for nm in ("q", "k", "v", "dout", "E")]
        tensors += [(p + "scale", "F32", np.array([scale]))]
        tensors += [(p + nm, "F32", res[nm]) for nm in ("out", "lse", "dq", "dk", "dv", "dE")]
        meta.update({p + "batch": str(B), p + "n_head": str(H), p + "seq_len": str(T), p + "head_dim": str(D),
                     p + "k": str(k), p + "max_len": str(n), p + "share": share})
    return tensors, meta


def verify(path, tensors, meta):
    got, _ = fixture_io.read_back(path, tensors, meta)
    summary = []
    for c, (B, H, T, D, k, n, share) in CASES.items():
        p = c + "."
        x = {nm: got[p + nm].astype(np.float64) for nm in ("q", "k", "v", "dout", "E")}
        res = reference(x, share, float(got[p + "scale"][0]))
        for nm, val in res.items():
            assert np.array_equal(val.astype(np.float32), got[p + nm]), p + nm
        assert np.all(got[p + "dE"][:, :, T:] == 0), "columns past T must get no gradient"
        ins = [torch.tensor(got[p + nm], requires_grad=True) for nm in ("q", "k", "v", "E")]
        out, _ = lr.linformer_attention(*ins, share, float(got[p + "scale"][0]))
        (out * torch.as_tensor(got[p + "dout"])).sum().backward()
        e = max(np.abs(t.grad.numpy() - got[p + nm]).max() / np.abs(got[p + nm]).max()
                for t, nm in zip(ins, ("dq", "dk", "dv", "dE")))
        summary.append("%s (%s): fp32 rel grad err %.1e" % (c, share, e))
    return "; ".join(summary)


def main():
    args = fixture_io.start(__doc__, self_check)
    if args is None:
        return
    path = os.path.join(args.out_dir, "linformer_attn.safetensors")
    tensors, meta = build()
    size, summary = fixture_io.write_checked(path, tensors, meta, lambda p: verify(p, tensors, meta), MAX_BYTES)
    print("wrote %s: %d bytes; %s" % (fixture_io.relpath(path), size, summary))


if __name__ == "__main__":
    main()
