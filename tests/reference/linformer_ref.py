"""PyTorch reference of longctx's `linformer` attention kind (Wang et al. 2020, arXiv 2006.04768).

Definition (per sequence b and head h; S = T keys, no memory, bidirectional only):

  K' = E_h[:, :S] K_h,   V' = F_h[:, :S] V_h            (k x D: keys/values projected along the sequence)
  out = softmax(scale * Q_h K'^T) V'                     (T x D),  lse = logsumexp(scale * Q_h K'^T, -1)

E and F are k x n (n = max_len); shorter inputs use the leading S columns. Sharing (the paper's names):
  none      P = 2H projections: E of head h is projection 2h, F of head h is 2h + 1
  headwise  P = 2: E = projection 0, F = projection 1 for every head
  kv        P = 1: E = F = projection 0 for every head
All projections are one tensor `proj` [P, k, n] in that numbering (the C kind stores the same values
position-major and transposed: element proj[p, j, s] at params[(s * P + p) * k + j]).

Tensors are batch-major [B, T, H, D] as in the C views; lse is [B, H, T]. Importing needs only torch.
"""
import math

import torch

SHARES = ("none", "headwise", "kv")


def n_projections(share, H):
    return {"none": 2 * H, "headwise": 2, "kv": 1}[share]


def key_proj(share, h):
    return 2 * h if share == "none" else 0


def value_proj(share, h):
    return {"none": 2 * h + 1, "headwise": 1, "kv": 0}[share]


def linformer_attention(q, k, v, proj, share, scale=None):
    """q, k, v [B, S, H, D] (S = T), proj [P, k, n] with n >= S. Returns (out [B, T, H, D], lse [B, H, T])."""
    B, S, H, D = k.shape
    if q.shape != k.shape or v.shape != k.shape:
        raise ValueError("q, k, v must all be [B, S, H, D] (no memory rows)")
    if proj.shape[0] != n_projections(share, H) or proj.shape[2] < S:
        raise ValueError("proj must be [%d, k, n >= %d], got %s" % (n_projections(share, H), S, tuple(proj.shape)))
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    E = torch.stack([proj[key_proj(share, h), :, :S] for h in range(H)])     # [H, k, S]
    F = torch.stack([proj[value_proj(share, h), :, :S] for h in range(H)])
    kp = torch.einsum("hjs,bshd->bhjd", E, k)                                  # [B, H, k, D]
    vp = torch.einsum("hjs,bshd->bhjd", F, v)
    scores = torch.einsum("bthd,bhjd->bhtj", q, kp) * scale                   # [B, H, T, k]
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.einsum("bhtj,bhjd->bthd", torch.softmax(scores, dim=-1), vp)
    return out, lse


def xavier_bound(k, n):
    """The C kind's init: xavier-uniform with gain 1/sqrt(2) on a k x n matrix, U(-a, a)."""
    return math.sqrt(3.0 / (k + n))
