#!/usr/bin/python3
"""PyTorch side of `longctx bench attn`: the same attention written the way PyTorch code usually writes it,
timed forward + backward on CPU. One JSON line per (kind, length), with the fields of the C side:

  {"impl": "pytorch", "kind": SPEC, "len": T, "batch": B, "heads": H, "head_dim": D, "causal": 0|1,
   "threads": N, "reps": R, "fwd_ms": .., "bwd_ms": .., "us_per_token": .., "peak_bytes": ..,
   "maxrss_bytes": .., "torch": version}

or, when a case cannot run, {"impl": "pytorch", "kind": .., "len": .., "skipped": "why"}.

Kinds (SPEC as in longctx's --kind; only these option keys are read):
  full                  dense attention: the B x H x T x T score matrix, a causal mask, softmax, P v.
  window:w=W[,global=G] Longformer (Beltagy et al. 2020) in the style of Hugging Face's LongformerSelfAttention:
                        q and k cut into overlapping chunks of 2W (stride W), one batched product per chunk,
                        the chunk products rearranged into a banded [B*H, T, 2W+1] score matrix (keys t-W..t+W),
                        global keys as extra columns in front, one softmax, the band multiplied back with
                        v cut into chunks of 3W, and the G global rows recomputed over every key with their
                        own projections qg, kg, vg, overwriting those rows. Causal: the whole band is still
                        computed and its upper half masked (the usual way with this layout), and global keys
                        after the query are masked. T must be a multiple of 2W (HF pads to it).
  bigbird:b=B[,r=R]     BigBird ITC block-sparse (Zaheer et al. 2020) in the blocked-gather style of HF's
                        BigBirdBlockSparseAttention: queries in blocks of B; the first and last query blocks
                        are global (dense rows over every key); every other block gathers its key blocks
                        (i-1, i, i+1, the first and the last block, R random ones) into one tensor and does a
                        batched product; causal: positions after the query masked. T must be a multiple of B.

Inputs are q, k, v (and qg, kg, vg for global tokens) of shape [B, T, H, D] (the C side's layout) with
requires_grad; the timed forward includes the reshapes the implementation does; the timed backward is
out.backward(dout). The masks that depend only on the shape (band edges, causal, the random plan) are
built once before timing. Each (kind, length) runs in a fresh child process: peak_bytes is its max RSS
minus its RSS just before the inputs are created (so it counts inputs, gradients, saved activations and
temporaries, not the torch library); maxrss_bytes is the whole child's max RSS.

  /usr/bin/python3 bench/torch_attn.py --kind window:w=256 --len 4096,16384 --threads 2
  /usr/bin/python3 bench/torch_attn.py --self-test     # each kind against a dense masked reference
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def parse_spec(spec):
    """'window:w=256,global=2' -> ('window', {'w': 256, 'global': 2})."""
    name, _, rest = spec.partition(":")
    opts = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError("option '%s' of '%s' is not key=value" % (item, spec))
        opts[key] = int(value)
    if name not in ("full", "window", "bigbird"):
        raise ValueError("kind '%s' has no PyTorch version here (full, window, bigbird)" % name)
    return name, opts


# ---------------------------------------------------------------- full

def full_forward(q, k, v, causal, scale):
    """q, k, v [B, T, H, D] -> out [B, T, H, D] through the dense score matrix."""
    qh, kh, vh = (x.transpose(1, 2) for x in (q, k, v))  # [B, H, T, D]
    scores = torch.matmul(qh, kh.transpose(-1, -2)) * scale
    if causal:
        T = q.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu_(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), vh).transpose(1, 2)


# ---------------------------------------------------------------- Longformer window + global

def overlapping_chunks(x, w):
    """[BH, T, D] -> [BH, T/w - 1, 2w, D]: windows of 2w rows starting every w rows (a view)."""
    bh, t, d = x.shape
    x = x.contiguous()
    return x.as_strided((bh, t // w - 1, 2 * w, d), (t * d, w * d, d, 1))


def chunk_band(scores, w):
    """Chunk products [BH, C, 2w, 2w] (C = T/w - 1) -> band [BH, T, 2w+1], entry (t, j) = score of key
    t - w + j; keys outside [0, T) are -inf. Row x of a chunk keeps columns x - w .. x + w (a skewed view
    of the chunk padded by w on both sides)."""
    bh, c, two_w, _ = scores.shape
    padded = F.pad(scores, (w, w), value=float("-inf")).contiguous()  # [BH, C, 2w, 4w]
    row = 4 * w
    diag = padded.as_strided((bh, c, two_w, 2 * w + 1), (c * two_w * row, two_w * row, row + 1, 1))
    # a query in block a (rows a*w .. a*w + w - 1) takes keys t-w..t from chunk a-1 (its second half) and
    # t+1..t+w from chunk a (its first half); block 0 and the last block use chunk 0 / C-1 and the padding
    lower = torch.cat((diag[:, :1, :w, : w + 1], diag[:, :, w:, : w + 1]), dim=1)  # [BH, C+1, w, w+1]
    upper = torch.cat((diag[:, :, :w, w + 1 :], diag[:, -1:, w:, w + 1 :]), dim=1)  # [BH, C+1, w, w]
    return torch.cat((lower, upper), dim=-1).reshape(bh, (c + 1) * w, 2 * w + 1)


def band_times_values(probs, v, w):
    """probs [BH, T, 2w+1] (band layout), v [BH, T, D] -> [BH, T, D]: v cut into chunks of 3w rows starting
    every w rows, the band of each block of w queries skewed into a [w, 3w] matrix."""
    bh, t, d = v.shape
    nb = t // w
    p = probs.reshape(bh, nb, w, 2 * w + 1)
    p = F.pad(p, (0, w)).reshape(bh, nb, w * (3 * w + 1))[:, :, : w * 3 * w].reshape(bh, nb, w, 3 * w)
    vp = F.pad(v, (0, 0, w, w)).contiguous()  # [BH, T + 2w, D]
    vc = vp.as_strided((bh, nb, 3 * w, d), ((t + 2 * w) * d, w * d, d, 1))
    return torch.einsum("bcwk,bckd->bcwd", p, vc).reshape(bh, t, d)


def window_masks(T, w, G, causal):
    """Additive masks built once: band [T, 2w+1] (keys outside [0, T), global keys (counted in their own
    columns), future keys when causal) and global columns [T, G] (causal: keys after the query)."""
    t = torch.arange(T)[:, None]
    key = t - w + torch.arange(2 * w + 1)[None, :]
    bad = (key < G) | (key >= T)
    if causal:
        bad |= key > t
    band = torch.zeros(T, 2 * w + 1).masked_fill_(bad, float("-inf"))
    glob = torch.zeros(T, G)
    if causal and G:
        glob.masked_fill_(torch.arange(G)[None, :] > t, float("-inf"))
    grow = torch.zeros(G, T)
    if causal and G:
        grow.masked_fill_(torch.arange(T)[None, :] > torch.arange(G)[:, None], float("-inf"))
    return band, glob, grow


def window_forward(q, k, v, glob_qkv, w, G, causal, scale, masks):
    B, T, H, D = q.shape
    band_mask, glob_mask, grow_mask = masks
    qh = (q * scale).transpose(1, 2).reshape(B * H, T, D)
    kh = k.transpose(1, 2).reshape(B * H, T, D)
    vh = v.transpose(1, 2).reshape(B * H, T, D)
    chunk_scores = torch.einsum("bcxd,bcyd->bcxy", overlapping_chunks(qh, w), overlapping_chunks(kh, w))
    scores = chunk_band(chunk_scores, w) + band_mask  # [BH, T, 2w+1]
    if G:
        g_scores = torch.matmul(qh, kh[:, :G].transpose(1, 2)) + glob_mask  # [BH, T, G]
        scores = torch.cat((g_scores, scores), dim=-1)
    probs = torch.softmax(scores, dim=-1)
    out = band_times_values(probs[:, :, G:], vh, w)
    if G:
        out = out + torch.matmul(probs[:, :, :G], vh[:, :G])
        qg, kg, vg = glob_qkv  # the global rows: own projections, every key
        qgh = (qg[:, :G] * scale).transpose(1, 2).reshape(B * H, G, D)
        kgh = kg.transpose(1, 2).reshape(B * H, T, D)
        vgh = vg.transpose(1, 2).reshape(B * H, T, D)
        g_probs = torch.softmax(torch.matmul(qgh, kgh.transpose(1, 2)) + grow_mask, dim=-1)
        out = torch.cat((torch.matmul(g_probs, vgh), out[:, G:]), dim=1)
    return out.reshape(B, H, T, D).transpose(1, 2)


# ---------------------------------------------------------------- BigBird ITC

def bigbird_plan(n, H, r, seed):
    """Key blocks of the middle query blocks 1..n-2: [H, n-2, 5 + r] = i-1, i, i+1, 0, n-1, r random
    blocks drawn from 1..n-2 without the window (fewer when there are not enough: -1 = none)."""
    rng = np.random.default_rng(seed)
    plan = np.full((H, max(n - 2, 0), 5 + r), -1, dtype=np.int64)
    for h in range(H):
        for i in range(1, n - 1):
            cand = [c for c in range(1, n - 1) if abs(c - i) > 1]
            rand = sorted(rng.choice(cand, size=min(r, len(cand)), replace=False)) if cand and r else []
            plan[h, i - 1, :5 + len(rand)] = [i - 1, i, i + 1, 0, n - 1] + list(rand)
    return plan


def bigbird_masks(T, b, plan, causal):
    """Additive mask [H, n-2, b, (5+r) b] for the gathered keys: missing random blocks, the window blocks
    that are also global (blocks 1 and n-2 see block 0 / n-1 twice) and, causal, keys after the query."""
    H, m, nk = plan.shape
    idx = torch.from_numpy(plan)
    bad = idx < 0
    bad[:, :, 3] |= idx[:, :, 0] == 0  # block 1: window block 0 is the global block 0
    bad[:, :, 4] |= idx[:, :, 2] == m + 1  # block n-2: window block n-1 is the global block n-1
    bad = bad[:, :, None, :, None].expand(H, m, b, nk, b)
    if causal:
        qpos = (torch.arange(1, m + 1)[:, None] * b + torch.arange(b)[None, :])  # [m, b]
        kpos = idx.clamp(min=0)[:, :, :, None] * b + torch.arange(b)  # [H, m, nk, b]
        bad = bad | (kpos[:, :, None, :, :] > qpos[None, :, :, None, None])
    mask = torch.zeros(H, m, b, nk, b).masked_fill_(bad, float("-inf"))
    return idx.clamp(min=0), mask.reshape(H, m, b, nk * b)


def bigbird_forward(q, k, v, b, causal, scale, idx, mask):
    B, T, H, D = q.shape
    n = T // b
    qh = (q * scale).transpose(1, 2)  # [B, H, T, D]
    kh, vh = k.transpose(1, 2), v.transpose(1, 2)
    # global query blocks 0 and n-1: dense rows over every key
    g_rows = torch.cat((qh[:, :, :b], qh[:, :, T - b:]), dim=2)  # [B, H, 2b, D]
    g_scores = torch.matmul(g_rows, kh.transpose(-1, -2))
    if causal:
        qpos = torch.cat((torch.arange(b), torch.arange(T - b, T)))
        g_scores = g_scores.masked_fill(torch.arange(T)[None, :] > qpos[:, None], float("-inf"))
    g_out = torch.matmul(torch.softmax(g_scores, dim=-1), vh)
    if n <= 2:
        return g_out.transpose(1, 2)
    # middle blocks: gather their key blocks, one batched product
    kb, vb = kh.reshape(B, H, n, b, D), vh.reshape(B, H, n, b, D)
    heads = torch.arange(H)[:, None, None]
    k_g = kb[:, heads, idx].reshape(B, H, n - 2, -1, D)  # [B, H, n-2, (5+r) b, D]
    v_g = vb[:, heads, idx].reshape(B, H, n - 2, -1, D)
    q_mid = qh[:, :, b:T - b].reshape(B, H, n - 2, b, D)
    s = torch.matmul(q_mid, k_g.transpose(-1, -2)) + mask
    mid = torch.matmul(torch.softmax(s, dim=-1), v_g).reshape(B, H, (n - 2) * b, D)
    out = torch.cat((g_out[:, :, :b], mid, g_out[:, :, b:]), dim=2)
    return out.transpose(1, 2)


# ---------------------------------------------------------------- driver

def make_case(spec, T, B, H, D, causal, seed=0):
    """Returns (inputs with requires_grad, forward(inputs) -> out)."""
    name, o = parse_spec(spec)
    scale = 1.0 / math.sqrt(D)
    gen = torch.Generator().manual_seed(seed)
    n_in = 6 if name == "window" and o.get("global", 0) else 3
    inputs = [torch.randn(B, T, H, D, generator=gen).requires_grad_() for _ in range(n_in)]
    if name == "full":
        return inputs, lambda x: full_forward(x[0], x[1], x[2], causal, scale)
    if name == "window":
        w, G = o.get("w", 64), o.get("global", 0)
        if T % (2 * w):
            raise ValueError("window: T = %d is not a multiple of 2w = %d (HF pads to it)" % (T, 2 * w))
        if G > T:
            raise ValueError("window: global=%d exceeds T" % G)
        masks = window_masks(T, w, G, causal)
        return inputs, lambda x: window_forward(x[0], x[1], x[2], x[3:], w, G, causal, scale, masks)
    b, r = o.get("b", 64), o.get("r", 3)
    if T % b or T // b < 2:
        raise ValueError("bigbird: T = %d is not a multiple of b = %d with at least 2 blocks" % (T, b))
    idx, mask = bigbird_masks(T, b, bigbird_plan(T // b, H, r, seed), causal)
    return inputs, lambda x: bigbird_forward(x[0], x[1], x[2], b, causal, scale, idx, mask)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_one(args, spec, T):
    torch.set_num_threads(args.threads)
    base = rss_bytes()
    try:
        inputs, forward = make_case(spec, T, args.batch, args.heads, args.head_dim, args.causal)
    except ValueError as e:
        return {"skipped": str(e)}
    dout = torch.randn(args.batch, T, args.heads, args.head_dim)
    fwd, bwd, spent = [], [], 0.0
    while len(fwd) < args.reps and (not fwd or spent < args.max_seconds):
        for x in inputs:
            x.grad = None
        t0 = time.perf_counter()
        out = forward(inputs)
        t1 = time.perf_counter()
        out.backward(dout)
        t2 = time.perf_counter()
        fwd.append(t1 - t0), bwd.append(t2 - t1)
        spent += t2 - t0
        del out
    finite = all(bool(torch.isfinite(x.grad).all()) for x in inputs)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    fwd_ms, bwd_ms = 1e3 * statistics.median(fwd), 1e3 * statistics.median(bwd)
    return {"reps": len(fwd), "fwd_ms": round(fwd_ms, 3), "bwd_ms": round(bwd_ms, 3),
            "us_per_token": round(1e3 * (fwd_ms + bwd_ms) / (args.batch * T), 4),
            "peak_bytes": maxrss - base, "maxrss_bytes": maxrss, "finite": int(finite)}


def estimated_bytes(spec, T, B, H, D):
    """A rough lower bound on what the case allocates (to skip what cannot fit)."""
    name, o = parse_spec(spec)
    f = 4
    if name == "full":
        return 4 * B * H * T * T * f  # scores, masked scores, probabilities, their gradient
    if name == "window":
        w = o.get("w", 64)
        return 6 * B * H * T * 2 * w * f + 20 * B * T * H * D * f
    b, r = o.get("b", 64), o.get("r", 3)
    return 4 * B * H * T * (5 + r) * b * f + 2 * B * H * (T // b) * (5 + r) * b * D * f


def self_test():
    """Each kind against a dense masked reference (double precision), outputs and input gradients."""
    torch.manual_seed(0)
    failures = 0
    for spec, T, causal in [("window:w=8", 64, 0), ("window:w=8", 64, 1), ("window:w=8,global=3", 64, 0),
                            ("window:w=8,global=3", 64, 1), ("bigbird:b=8,r=2", 96, 0),
                            ("bigbird:b=8,r=2", 96, 1), ("bigbird:b=8,r=3", 24, 1), ("full", 40, 1)]:
        B, H, D = 2, 3, 5
        name, o = parse_spec(spec)
        inputs, forward = make_case(spec, T, B, H, D, causal, seed=1)
        inputs = [x.detach().double().requires_grad_() for x in inputs]
        scale = 1.0 / math.sqrt(D)
        # visibility [H, T, T] of the pattern, as the C kinds define it
        t = torch.arange(T)[:, None]
        s = torch.arange(T)[None, :]
        G = o.get("global", 0) if name == "window" else 0
        if name == "window":
            vis = ((s - t).abs() <= o["w"]) | (s < G)
            vis = vis[None].expand(H, T, T).clone()
        elif name == "bigbird":
            b = o["b"]
            n = T // b
            vis = torch.zeros(H, T, T, dtype=torch.bool)
            plan = bigbird_plan(n, H, o["r"], 1)
            for h in range(H):
                for i in range(n):
                    rows = slice(i * b, (i + 1) * b)
                    if i in (0, n - 1):
                        vis[h, rows, :] = True
                        continue
                    for blk in plan[h, i - 1]:
                        if blk >= 0:
                            vis[h, rows, blk * b:(blk + 1) * b] = True
        else:
            vis = torch.ones(H, T, T, dtype=torch.bool)
        if causal:
            vis &= (s <= t)[None]

        def reference(x):
            q, k, v = (y.transpose(1, 2) for y in x[:3])
            sc = torch.matmul(q, k.transpose(-1, -2)) * scale
            out = torch.matmul(torch.softmax(sc.masked_fill(~vis, float("-inf")), -1), v)
            if G:
                qg, kg, vg = (y.transpose(1, 2) for y in x[3:])
                gs = torch.matmul(qg[:, :, :G], kg.transpose(-1, -2)) * scale
                gvis = torch.ones(G, T, dtype=torch.bool) if not causal else (s <= torch.arange(G)[:, None])
                gout = torch.matmul(torch.softmax(gs.masked_fill(~gvis, float("-inf")), -1), vg)
                out = torch.cat((gout, out[:, :, G:]), dim=2)
            return out.transpose(1, 2)

        dout = torch.randn(B, T, H, D, dtype=torch.float64)
        got = forward(inputs)
        got.backward(dout)
        grads = [x.grad.clone() for x in inputs]
        for x in inputs:
            x.grad = None
        want = reference(inputs)
        want.backward(dout)
        err = max([float((got - want).abs().max())] + [float((g - x.grad).abs().max()) for g, x in zip(grads, inputs)])
        ok = err < 1e-9
        failures += not ok
        print("%s %-22s T=%-3d causal=%d max abs err %.2e" % ("ok  " if ok else "FAIL", spec, T, causal, err))
    print("torch_attn self-test: %d failed" % failures)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", default="window:w=256", help="one spec: full, window:w=W[,global=G], bigbird:b=B[,r=R]")
    ap.add_argument("--len", default="4096,16384")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--causal", type=int, choices=[0, 1], default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="stop repeating a case after this long")
    ap.add_argument("--max-gb", type=float, default=8.0, help="skip cases estimated to need more memory")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # child: one length
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    try:
        parse_spec(args.kind)
        lens = [int(x) for x in args.len.split(",")]
    except ValueError as e:
        print("torch_attn.py: error: %s" % e, file=sys.stderr)
        return 2
    head = {"impl": "pytorch", "kind": args.kind}
    if args.one:
        res = run_one(args, args.kind, lens[0])
        print(json.dumps(res))
        return 0
    for T in lens:
        row = dict(head, len=T, batch=args.batch, heads=args.heads, head_dim=args.head_dim, causal=args.causal,
                   threads=args.threads, torch=torch.__version__)
        need = estimated_bytes(args.kind, T, args.batch, args.heads, args.head_dim)
        if need > args.max_gb * 2**30:
            row["skipped"] = "needs at least %.1f GB (--max-gb %g)" % (need / 2**30, args.max_gb)
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--one", "--kind", args.kind, "--len", str(T)]
            for flag in ("heads", "head_dim", "batch", "causal", "threads", "reps", "max_seconds"):
                cmd += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode:
                row["skipped"] = "failed (exit %d): %s" % (p.returncode, p.stderr.strip().splitlines()[-1:])
            else:
                row.update(json.loads(p.stdout.strip().splitlines()[-1]))
        print(json.dumps(row))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
