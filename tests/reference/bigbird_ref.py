"""PyTorch reference of longctx's `bigbird` attention kind (src/attn/bigbird.h), ITC and ETC.

Layout: q, k, v [B, T, H, D] (no memory rows), plan int [H, n, r] (random key blocks per query block,
-1 = none), out [B, T, H, D], lse [B, H, T].

Pattern (n blocks of b positions; the last may be short):
  itc: blocks start at 0, n = ceil(T / b). Blocks 0 and n-1 are global: their queries see every key and
       every query sees their keys. Any other query block i sees blocks i-1, i, i+1, plan[h, i, :] and the
       two global blocks.
  etc: the first G positions are global tokens (see every key, seen by every query); the blocks start at
       G, n = ceil((T - G) / b); query block i sees blocks i-1, i, i+1, plan[h, i, :] and the G tokens.
  causal: the same, intersected with key <= query.

`attention` is the usual dense formulation: the [H, T, T] mask built from the plan, masked scores,
softmax (float64 in the fixtures), autograd for the gradients. `attention_blocked` is an independent
formulation that gathers each query block's keys (as Hugging Face's block-sparse code does) and is only
used by the self-checks.
"""
import numpy as np
import torch

ITC, ETC = "itc", "etc"


def n_blocks(T, b, variant, G):
    rest = T - (G if variant == ETC else 0)
    return max(0, -(-rest // b))


def candidates(i, n, variant):
    """Blocks query block i may draw at random: neither window nor (itc) global."""
    lo, hi = (1, n - 2) if variant == ITC else (0, n - 1)
    return [k for k in range(lo, hi + 1) if abs(k - i) > 1]


def is_sparse_block(i, n, variant):
    return variant == ETC or 0 < i < n - 1


def random_plan(rng, H, n, r, variant):
    """A plan drawn with numpy: min(r, m) distinct candidates per sparse block, sorted, -1 padded."""
    plan = -np.ones((H, n, r), dtype=np.int32)
    for h in range(H):
        for i in range(n):
            if not is_sparse_block(i, n, variant):
                continue
            c = candidates(i, n, variant)
            pick = sorted(rng.permutation(c)[:r].tolist()) if c else []
            plan[h, i, :len(pick)] = pick
    return plan


def visible_mask(T, b, variant, G, plan, causal):
    """bool tensor [H, T, T]: mask[h, t, s] = query t of head h sees key s (vectorised)."""
    H, n, r = plan.shape
    G = G if variant == ETC else 0
    pos = torch.arange(T)
    blk = torch.where(pos >= G, (pos - G) // b, torch.full_like(pos, -1))  # -1: etc global token
    qb, kb = blk[:, None], blk[None, :]
    window = (qb >= 0) & (kb >= 0) & ((qb - kb).abs() <= 1)
    if variant == ITC:
        glob = (qb == 0) | (qb == n - 1) | (kb == 0) | (kb == n - 1)
    else:
        glob = (qb < 0) | (kb < 0)
    base = window | glob
    mask = base.unsqueeze(0).repeat(H, 1, 1)
    p = torch.as_tensor(plan, dtype=torch.long)
    for h in range(H):
        # chosen[i, k]: query block i drew key block k
        chosen = torch.zeros(n, n + 1, dtype=torch.bool)
        idx = torch.where(p[h] >= 0, p[h], torch.full_like(p[h], n))
        chosen.scatter_(1, idx, True)
        chosen = chosen[:, :n]
        q_ok, k_ok = (qb >= 0).expand(T, T), (kb >= 0).expand(T, T)
        rnd = chosen[qb.clamp(min=0).expand(T, T), kb.clamp(min=0).expand(T, T)] & q_ok & k_ok
        if variant == ITC:  # global query blocks draw nothing
            rnd &= ((qb > 0) & (qb < n - 1)).expand(T, T)
        mask[h] |= rnd
    if causal:
        mask &= (pos[None, :] <= pos[:, None]).unsqueeze(0)
    return mask


def visible_mask_loops(T, b, variant, G, plan, causal):
    """The same mask, element by element from the definition (self-checks)."""
    H, n, r = plan.shape
    G = G if variant == ETC else 0
    m = np.zeros((H, T, T), dtype=bool)
    for h in range(H):
        for t in range(T):
            for s in range(T):
                if causal and s > t:
                    continue
                if t < G or s < G:
                    m[h, t, s] = True
                    continue
                qb, kb = (t - G) // b, (s - G) // b
                if variant == ITC and (qb in (0, n - 1) or kb in (0, n - 1)):
                    m[h, t, s] = True
                elif abs(qb - kb) <= 1 or (is_sparse_block(qb, n, variant) and kb in plan[h, qb].tolist()):
                    m[h, t, s] = True
    return torch.as_tensor(m)


def attention(q, k, v, plan, b, variant, G, causal, scale):
    """Dense masked attention: (out [B,T,H,D], lse [B,H,T]); differentiable in q, k, v."""
    B, T, H, D = q.shape
    mask = visible_mask(T, b, variant, G, plan, causal)
    scores = torch.einsum("bthd,bshd->bhts", q, k) * scale
    scores = scores.masked_fill(~mask.unsqueeze(0), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    prob = torch.exp(scores - lse.unsqueeze(-1))
    out = torch.einsum("bhts,bshd->bthd", prob, v)
    return out, lse


def attention_blocked(q, k, v, plan, b, variant, G, causal, scale):
    """Block-gather formulation: each query block (or global row range) attends to the concatenation of
    its key blocks, as in block-sparse implementations. Same result as `attention` (self-checks)."""
    B, T, H, D = q.shape
    n = n_blocks(T, b, variant, G)
    G = G if variant == ETC else 0
    out = torch.zeros_like(q)
    lse = torch.zeros(B, H, T, dtype=q.dtype)

    def span(i):
        return G + i * b, min(G + (i + 1) * b, T)

    def attend(h, rows, keys):
        qs = q[:, rows, h]                       # [B, R, D]
        ks, vs = k[:, keys, h], v[:, keys, h]    # [B, K, D]
        sc = torch.einsum("brd,bkd->brk", qs, ks) * scale
        if causal:
            allowed = torch.as_tensor(keys)[None, :] <= torch.as_tensor(rows)[:, None]
            sc = sc.masked_fill(~allowed.unsqueeze(0), float("-inf"))
        l = torch.logsumexp(sc, dim=-1)
        out[:, rows, h] = torch.einsum("brk,bkd->brd", torch.exp(sc - l.unsqueeze(-1)), vs)
        lse[:, h, rows] = l

    for h in range(H):
        all_keys = list(range(T))
        if G:
            attend(h, list(range(G)), all_keys)
        for i in range(n):
            rows = list(range(*span(i)))
            if not is_sparse_block(i, n, variant):
                attend(h, rows, all_keys)
                continue
            blocks = {i - 1, i, i + 1} | {int(x) for x in plan[h, i] if x >= 0}
            if variant == ITC:
                blocks |= {0, n - 1}
            keys = list(range(G)) + [s for kb in sorted(blocks) if 0 <= kb < n for s in range(*span(kb))]
            attend(h, rows, keys)
    return out, lse
