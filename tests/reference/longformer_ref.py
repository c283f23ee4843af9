"""Longformer attention (sliding window + global tokens) in PyTorch, written the Hugging Face way, as the
reference for longctx's `window` attention kind with global tokens (src/attn/window.h).

Follows transformers' LongformerSelfAttention (Beltagy et al. 2020) at dilation 1, with two differences in
form, not in value: the band is held as HF holds it after `_sliding_chunks_query_key_matmul`, one score
per (query, diagonal) in a [B, T, H, 2w+1] tensor, but built with a pad + unfold instead of overlapping
chunks (so T need not be a multiple of the window); and masked entries are -inf instead of finfo.min.
HF counts the attention window over both sides (attention_window = 2w); `w` here is per side, as in longctx.

  queries are scaled by `scale` (HF: 1/sqrt(D)) before the products;
  band:    query t, diagonal j in [0, 2w]: key t - w + j; masked when outside [0, T), when the key is a
           global token (global tokens are removed from every window), and with causal=True when the key
           is after the query (HF has no causal mode; the original CUDA kernel has one);
  global columns: q_t . k_g for each global position g (ordinary q and k), prepended to the band scores
           (HF `_concat_with_global_key_attn_probs`); causal: g <= t only;
  one softmax over [global columns | band]; out_t = P_glob v[pos] + sum_j P_band[j] v[t - w + j];
  global rows: recomputed with the global projections, softmax(scale qg[pos] . kg^T) vg over every key
           (causal: keys <= the row), and written over out at those rows
           (HF `_compute_global_attn_output_from_hidden`).

Tensors are [B, T, H, D] (q, k, v, qg, kg, vg); pos a sorted list of distinct positions; no memory
(M = 0), dilation 1. Returns (out [B,T,H,D], lse [B,H,T], glse [B,H,n]): lse is the log-sum-exp of the
ordinary rows' scaled scores (global rows: +inf, as longctx stores them), glse that of the global rows.
"""
import torch


def band_keys(x, w):
    """x [B, T, H, D] -> [B, T, H, D, 2w+1]: entry j of row t is x[t - w + j] (zero outside [0, T))."""
    padded = torch.nn.functional.pad(x, (0, 0, 0, 0, w, w))  # pad the T dimension by w on both sides
    return padded.unfold(1, 2 * w + 1, 1)


def band_mask(T, w, pos, causal, device=None):
    """[T, 2w+1] bool: True where query t may use diagonal j (key t - w + j)."""
    t = torch.arange(T, device=device)[:, None]
    key = t - w + torch.arange(2 * w + 1, device=device)[None, :]
    ok = (key >= 0) & (key < T)
    is_global = torch.zeros(T + 2 * w, dtype=torch.bool, device=device)
    is_global[torch.as_tensor(list(pos), dtype=torch.long) + w] = True
    ok &= ~is_global[key + w]  # global tokens are removed from the windows
    if causal:
        ok &= key <= t
    return ok


def longformer_attention(q, k, v, qg, kg, vg, pos, w, causal, scale):
    B, T, H, D = q.shape
    pos = [int(p) for p in pos]
    n = len(pos)
    pos_t = torch.as_tensor(pos, dtype=torch.long)
    neg_inf = torch.tensor(float("-inf"), dtype=q.dtype)
    qs = q * scale

    # band scores [B, T, H, 2w+1] and global-column scores [B, T, H, n]
    band = torch.einsum("bthd,bthdj->bthj", qs, band_keys(k, w))
    band = torch.where(band_mask(T, w, pos, causal)[None, :, None, :], band, neg_inf)
    glob = torch.einsum("bthd,bnhd->bthn", qs, k[:, pos_t])
    if causal:
        glob = torch.where((pos_t[None, :] <= torch.arange(T)[:, None])[None, :, None, :], glob, neg_inf)
    scores = torch.cat([glob, band], dim=-1)
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bthn,bnhd->bthd", probs[..., :n], v[:, pos_t])
    out = out + torch.einsum("bthj,bthdj->bthd", probs[..., n:], band_keys(v, w))
    lse = torch.logsumexp(scores, dim=-1).permute(0, 2, 1)  # [B, H, T]

    # global rows: their own projections over all keys
    gscores = torch.einsum("bnhd,bshd->bhns", qg[:, pos_t] * scale, kg)
    if causal:
        gscores = torch.where((torch.arange(T)[None, :] <= pos_t[:, None])[None, None], gscores, neg_inf)
    gout = torch.einsum("bhns,bshd->bnhd", torch.softmax(gscores, dim=-1), vg)
    glse = torch.logsumexp(gscores, dim=-1)  # [B, H, n]

    out = out.index_put((torch.arange(B)[:, None], pos_t[None, :]), gout)  # overwrite the global rows
    is_global = torch.zeros(T, dtype=torch.bool)
    is_global[pos_t] = True
    lse = torch.where(is_global[None, None, :], torch.tensor(float("inf"), dtype=lse.dtype), lse)
    return out, lse, glse
