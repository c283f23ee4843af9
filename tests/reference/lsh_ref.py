"""PyTorch reference of longctx's `lsh` attention kind (Reformer's shared-QK LSH attention, src/attn/lsh.h).

Layout as lc_attn_tensors: q, v, dout [B, T, H, D]; lse [B, H, T]; rotations [hashes, H, D, buckets/2];
buckets [B, H, hashes, T]. No memory rows (M = 0); tensors.k is not used (keys are the normalised q).

Definition (what the C kernel computes):
  k_t = q_t / sqrt(|q_t|^2 + D * 1e-6)                      (Hugging Face's length-and-dimension norm)
  bucket[r, t] = argmax([q_t R_r ; -q_t R_r])                (first index on ties)
  per round r: positions sorted by (bucket, position); sorted rows cut into chunks of c (the last one
  shorter when c does not divide T); a query sees its own chunk and the previous one (the first chunk's
  previous is the last; a single chunk is its own previous, counted once);
  masks by original position: causal removes keys after the query; the query's own key has the
  logit -1e5 (not -inf); other logits scale * q_t . k_s;
  out_r, lse_r: softmax over the visible keys and its log-sum-exp;
  lse = logsumexp_r lse_r; out = sum_r exp(lse_r - lse) out_r.
Differences from Hugging Face's ReformerAttention, on purpose: the scores are multiplied by `scale`
(Hugging Face: 1, its keys already carry the 1/sqrt(D) of the norm), chunks need not divide T, and a
single chunk is not attended twice (Hugging Face concatenates the chunk with itself; the output is the
same, lse is log 2 higher).

lsh_attention is written with tensors (sort, gather, reshape into chunks, roll for the previous chunk);
lsh_attention_loops is the same definition with explicit Python loops (numpy float64), used by the
fixture script's self-checks.
"""
import math

import numpy as np
import torch

SELF_LOGIT = -1e5
NORM_EPS = 1e-6


def normalise_keys(q):
    """k = q / sqrt(|q|^2 + D eps) over the last dimension."""
    d = q.shape[-1]
    return q / torch.sqrt((q * q).sum(-1, keepdim=True) + d * NORM_EPS)


def projections(q, rotations):
    """[q R ; -q R] per round: q [B,T,H,D], rotations [nh,H,D,half] -> [B,H,nh,T,2 half]."""
    proj = torch.einsum("bthd,rhdk->bhrtk", q, rotations.to(q.dtype))
    return torch.cat([proj, -proj], dim=-1)


def hash_buckets(q, rotations):
    """Buckets [B,H,nh,T] (int64): the argmax of the projections."""
    return torch.argmax(projections(q, rotations), dim=-1)


def lsh_attention(q, v, rotations, chunk, causal, scale, buckets=None):
    """out [B,T,H,D], lse [B,H,T], buckets [B,H,nh,T]. Differentiable in q and v (the buckets are
    piecewise constant; pass them to hold them fixed)."""
    B, T, H, D = q.shape
    nh = rotations.shape[0]
    if buckets is None:
        buckets = hash_buckets(q.detach(), rotations)
    buckets = buckets.to(torch.int64)
    k = normalise_keys(q)
    pos = torch.arange(T, dtype=torch.int64)
    perm = torch.argsort(buckets * T + pos, dim=-1)  # keys are distinct: the sort is stable by construction
    c = chunk
    nc = (T + c - 1) // c
    pad = nc * c - T

    def sort(x):  # [B,T,H,D] -> [B,H,nh,T,D] in each round's sorted order, padded to nc * c rows
        xh = x.permute(0, 2, 1, 3).unsqueeze(2).expand(B, H, nh, T, D)
        xs = torch.gather(xh, 3, perm.unsqueeze(-1).expand(B, H, nh, T, D))
        return torch.nn.functional.pad(xs, (0, 0, 0, pad)).reshape(B, H, nh, nc, c, D)

    sq, sk, sv = sort(q), sort(k), sort(v)
    spos = torch.nn.functional.pad(perm, (0, pad), value=-1).reshape(B, H, nh, nc, c)
    if nc > 1:  # previous chunk (rolled: the first chunk's previous is the last), then the own chunk
        keys = torch.cat([torch.roll(sk, 1, dims=3), sk], dim=4)
        vals = torch.cat([torch.roll(sv, 1, dims=3), sv], dim=4)
        kpos = torch.cat([torch.roll(spos, 1, dims=3), spos], dim=4)
    else:
        keys, vals, kpos = sk, sv, spos
    logits = scale * torch.einsum("bhrnid,bhrnjd->bhrnij", sq, keys)
    qp, kp = spos.unsqueeze(-1), kpos.unsqueeze(-2)
    valid = kp >= 0
    if causal:
        valid = valid & ((kp <= qp) | (qp < 0))  # padding query rows keep some key (they are dropped)
    logits = torch.where(kp == qp, torch.full_like(logits, SELF_LOGIT), logits)
    logits = torch.where(valid, logits, torch.full_like(logits, -math.inf))
    lse_s = torch.logsumexp(logits, dim=-1)
    out_s = torch.einsum("bhrnij,bhrnjd->bhrnid", torch.softmax(logits, dim=-1), vals)
    lse_s = lse_s.reshape(B, H, nh, nc * c)[..., :T]
    out_s = out_s.reshape(B, H, nh, nc * c, D)[:, :, :, :T]
    undo = torch.argsort(perm, dim=-1)
    lse_r = torch.gather(lse_s, 3, undo)
    out_r = torch.gather(out_s, 3, undo.unsqueeze(-1).expand(B, H, nh, T, D))
    lse = torch.logsumexp(lse_r, dim=2)  # [B,H,T]
    w = torch.exp(lse_r - lse.unsqueeze(2))
    out = (w.unsqueeze(-1) * out_r).sum(2)  # [B,H,T,D]
    return out.permute(0, 2, 1, 3), lse, buckets


def lsh_attention_loops(q, v, buckets, chunk, causal, scale):
    """The same definition with explicit loops (numpy float64): out [B,T,H,D], lse [B,H,T]."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    buckets = np.asarray(buckets)
    B, T, H, D = q.shape
    nh = buckets.shape[2]
    out = np.zeros_like(q)
    lse = np.zeros((B, H, T))
    nc = (T + chunk - 1) // chunk
    for b in range(B):
        for h in range(H):
            k = np.zeros((T, D))
            for t in range(T):
                k[t] = q[b, t, h] / math.sqrt(float(q[b, t, h] @ q[b, t, h]) + D * NORM_EPS)
            out_r = np.zeros((nh, T, D))
            lse_r = np.zeros((nh, T))
            for r in range(nh):
                order = sorted(range(T), key=lambda t: (int(buckets[b, h, r, t]), t))
                for s in range(T):
                    p = order[s]
                    ck = s // chunk
                    idx = []
                    if nc > 1:
                        prev = (ck - 1) % nc
                        idx += list(range(prev * chunk, min(T, (prev + 1) * chunk)))
                    idx += list(range(ck * chunk, min(T, (ck + 1) * chunk)))
                    z, ks = [], []
                    for j in idx:
                        pk = order[j]
                        if causal and pk > p:
                            continue
                        z.append(SELF_LOGIT if pk == p else scale * float(q[b, p, h] @ k[pk]))
                        ks.append(pk)
                    z = np.array(z)
                    m = z.max()
                    e = np.exp(z - m)
                    out_r[r, p] = (e[:, None] * v[b, ks, h]).sum(0) / e.sum()
                    lse_r[r, p] = m + math.log(e.sum())
            for t in range(T):
                m = lse_r[:, t].max()
                L = m + math.log(np.exp(lse_r[:, t] - m).sum())
                lse[b, h, t] = L
                out[b, t, h] = (np.exp(lse_r[:, t] - L)[:, None] * out_r[:, t]).sum(0)
    return out, lse
