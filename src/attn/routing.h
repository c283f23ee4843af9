/* The `routing` attention kind (Routing Transformer, Roy et al. 2020): online k-means routing of queries
 * and keys to C centroids per head; each query attends to the keys routed to the same centroids.
 *
 * Clustering uses q and k as given (the interface does not require shared Q/K), normalised to unit length:
 * q^_t = q_t / |q_t|, k^_s = k_s / |k_s|. Per head h and centroid c (unit vectors mu_{h,c}):
 *   Q_c = the w queries with the largest q^ . mu_c,  K_c = the w keys (of all S = M + T) with the largest
 *   k^ . mu_c  (balanced top-w membership as the paper; ties go to the lower position; w = option window,
 *   default ceil(S / C), clamped to T for queries and to S for keys).
 * Query t (key position M + t) sees key s iff
 *   s == M + t  (every query always sees itself, so no row is empty), or
 *   t in Q_c and s in K_c for some c, and, when causal, s <= M + t.
 * A query in several clusters gets one softmax over the union of their keys (each key counted once).
 * Scores scale * q.k; out and lse as in the full kind. Backward writes dq, dk, dv (all S rows; keys no
 * query sees get 0). Memory rows (M > 0) are supported, causal and bidirectional. Not supported (the caps
 * refuse them): relative positions, shape.window, global tokens.
 *
 * State (tensors.state, state_floats = 2 H C D): two centroid sets [2][H][C][D], unit rows.
 *   live     (floats [0, H C D)):      the centroids; what checkpoints must keep;
 *   snapshot (floats [H C D, 2 H C D)): a copy of live taken at the start of every forward; forward and
 *            backward route with it. Backward therefore uses exactly the centroids its forward used even
 *            though forward has already moved live on; the workspace may be reused between the two.
 * state_init draws each live centroid as a normalised vector of N(0, 1) draws from the seed and copies it
 * to the snapshot.
 *
 * Centroid update (forward only, when tensors.train != 0; never by gradient, never in backward): every
 * normalised query and key of the batch is assigned to its nearest snapshot centroid of its head (largest
 * dot product; ties to the lower index). For a centroid with n > 0 assigned vectors:
 *   live_c = normalise(decay * snapshot_c + (1 - decay) * (sum of its assigned vectors) / n)
 * (option decay, default 0.999); a centroid with none keeps its value.
 *
 * Cost O((T + S) C D) for the routing plus O(sum over centroids of wq wk D) for the blocks (about
 * O(S w D) when balanced), all big products through lc_gemm. Workspace linear in the length: the plans
 * of every (b, h) (O(B H (T + S)) ints), the gathered blocks of one centroid (O(w D)), score blocks of about
 * 2^18 floats, never a T x S matrix. Results are identical for any thread count. */
#ifndef LC_ATTN_ROUTING_H
#define LC_ATTN_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#include "attn/attn.h"

typedef struct {
    int clusters; /* C >= 1; 0 = auto (the default): lc_attn_routing_auto_clusters of the planned length */
    int window;   /* w: members per centroid; 0 = ceil(S / C) (default) */
    float decay;  /* EMA decay of the centroids in [0, 1] (default 0.999) */
} lc_attn_routing_opts;

extern const lc_attn_kind lc_attn_routing;

/* clusters=auto: the largest power of two C with C * C <= max_len keys (at least 1, at most 4096), so each
 * centroid gathers about sqrt(S) members and the cost per token grows as sqrt(S) (Roy et al. 2020). */
int lc_attn_routing_auto_clusters(int max_len);
size_t lc_attn_routing_state_floats(const void *opts, int H, int D);
void lc_attn_routing_state_init(float *state, const void *opts, int H, int D, uint64_t seed);
size_t lc_attn_routing_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_routing_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_routing_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);

/* Members per centroid for a shape: *wq queries and *wk keys (C = opts->clusters). */
void lc_attn_routing_members_per_centroid(const lc_attn_shape *s, const lc_attn_routing_opts *o, int *wq, int *wk);

/* The routing the kind uses for head h of sequence b with centroids cent ([H][C][D] of the group, e.g. the
 * snapshot half of the state after a forward): qsel[c * wq + j] and ksel[c * wk + j], each centroid's
 * members in increasing position order. Computed exactly as forward does (it plans every head, in an
 * allocated workspace); 0, or -1 when out of memory. For tests and diagnostics. */
int lc_attn_routing_members(const lc_attn_shape *s, const lc_attn_routing_opts *o, const lc_attn_tensors *t,
                            const float *cent, int b, int h, int *qsel, int *ksel);

#endif
