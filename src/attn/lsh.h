/* The `lsh` attention kind: Reformer's shared-QK attention over hashed buckets (Kitaev et al. 2020).
 *
 * Keys are the queries normalised to unit length, k_s = q_s / sqrt(|q_s|^2 + D * 1e-6) (Hugging Face's
 * length-and-dimension norm with its epsilon 1e-6); the kernel reads tensors.q and never tensors.k.
 * Values come from tensors.v. Per round r (hashes rounds) and head h a Gaussian rotation R[r][h]
 * (D x buckets/2) gives every position a bucket argmax([qR ; -qR]) (first index on ties; the argmax of q
 * and of the normalised key are the same). Positions are sorted stably by (bucket, position) and the
 * sorted sequence cut into chunks of c rows (the last one shorter when c does not divide T). A query
 * sees the keys of its own chunk and of the previous one, the first chunk's previous being the last
 * (Hugging Face's wrap-around; with a single chunk it is the chunk itself, counted once). Masks by
 * original position: causal (key <= query) removes keys; a query's own key scores -1e5 (the literal
 * logit, as Hugging Face; not -inf), so a token attends to itself only when nothing else is visible.
 * Keys in other buckets of the same chunks are not masked (Hugging Face), and a (query, key) pair met
 * in several rounds counts once per round (no duplicate correction, as Hugging Face).
 *   round r:  out_r = softmax(scale q k^T) v over the visible keys, lse_r its log-sum-exp
 *   combined: lse = logsumexp_r lse_r,  out = sum_r exp(lse_r - lse) out_r
 * The combination equals one softmax over the concatenated (round, key) lists with log-sum-exp lse, so
 * forward saves only the combined lse[B*H*T] and backward recomputes everything else (rotations,
 * buckets, sort) from q, the seed and the rotations; the workspace need not persist between the calls.
 * A row whose every round saw only itself (out = v, lse = -1e5 + log(hashes)) is recognised by its
 * lse below LC_ATTN_LSH_SELF_ONLY_BELOW, which keeps its gradient exact despite float rounding.
 *
 * Backward writes dq (query path plus the key path through the normalisation), dv, and dk = 0 for all
 * S rows when tensors.dk.p is not NULL (k and dk may be NULL views: a model needs no key projection).
 * Memory M must be 0; no relative positions, same_length window or global tokens (check() rejects).
 * Rotations are never stored: lc_attn_lsh_rotations draws them from (tensors.seed, opts seed, round,
 * head) with a counter-based hash, identically in forward and backward.
 * Scores are scale * q . k (Hugging Face multiplies by 1: its keys already carry the 1/sqrt(D); pass
 * scale = 1 to match it). A model with several lsh head groups in a layer should give them different
 * seeds (opts seed, or a tensors.seed mixed with the group): rotations depend on the head index within
 * the group.
 * Cost O(B H T hashes (c D + D buckets/2)) time; workspace O(B H T hashes) plus per-thread chunk tiles
 * O(c (c + D) + buckets) and the rotations; no T x T matrix. */
#ifndef LC_ATTN_LSH_H
#define LC_ATTN_LSH_H

#include <stdint.h>

#include "attn/attn.h"

typedef struct {
    int buckets; /* per round, even, >= 2 (default 32) */
    int hashes;  /* rounds, 1..LC_ATTN_LSH_MAX_HASHES (default 2) */
    int chunk;   /* c >= 1 (default 64) */
    int seed;    /* offset mixed into tensors.seed, >= 0 (default 0) */
} lc_attn_lsh_opts;

#define LC_ATTN_LSH_MAX_HASHES 8
#define LC_ATTN_LSH_SELF_LOGIT (-1e5f)
#define LC_ATTN_LSH_SELF_ONLY_BELOW (-5e4f)
#define LC_ATTN_LSH_NORM_EPS 1e-6f /* per dimension: k = q / sqrt(|q|^2 + D * eps) */

extern const lc_attn_kind lc_attn_lsh;
size_t lc_attn_lsh_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_lsh_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_lsh_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);

/* Rotations of a group of H heads: hashes * H * D * (buckets/2) floats, laid out [round][head][d][j],
 * N(0, 1) by Box-Muller from lc_hash_uniform of a stream mixed from (seed, o->seed, round, head). The
 * kind uses seed = tensors.seed. */
size_t lc_attn_lsh_rotation_floats(const lc_attn_lsh_opts *o, int H, int D);
void lc_attn_lsh_rotations(const lc_attn_lsh_opts *o, int H, int D, uint64_t seed, float *rot);

/* Forward and backward with explicit rotations (layout above; tests and the PyTorch fixtures). `work`
 * as sized by lc_attn_lsh_workspace (the rotation part of it is then unused). */
void lc_attn_lsh_forward_with(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t,
                              const float *rot, float *work);
void lc_attn_lsh_backward_with(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t,
                               const float *rot, float *work);

/* The buckets forward uses, buckets[((b*H + h)*hashes + r)*T + t], from t->q and the rotations. */
void lc_attn_lsh_buckets(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t,
                         const float *rot, float *work, int *buckets);

#endif
