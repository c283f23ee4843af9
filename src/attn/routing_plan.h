/* Private to the routing kind (routing.c, routing_plan.c): the geometry of one call, the workspace layout,
 * the routing plan of one (batch, head) and a small vector helper.
 *
 * Plan of one (b, h):
 *   qsel[C][wq], ksel[C][wk]   ints: the queries / keys of each centroid, in increasing position order
 *   qmask[T][W], kmask[S][W]   uint64 (W = ceil(C / 64) words): bit c set iff the query / key belongs to c
 * A pair (t, s) of a query and a key that share centroids is scored in the block of the LOWEST centroid
 * they share (so a key reached through several centroids counts once).
 *
 * Workspace (floats): 16 | masks of every (b, h) | member lists of every (b, h) | assignments [B H (T + S)]
 * ints (centroid update) | the block buffers of one (b, h) at a time: running max m, sum l, Delta [T]; row
 * max and sum of a block [R]; gathered K, V, dK, dV [wk][D]; gathered Q, dout, block output [R][D];
 * scores and dP [R][wk]; cosines of the rows with <= 64 centroids [S][64], 1/|x| and best cosine [S] |
 * per-thread scratch (top-w selection pairs, centroid sums in double).
 * R (query rows per block) keeps a score block near 2^18 floats: never a T x S matrix. */
#ifndef LC_ATTN_ROUTING_PLAN_H
#define LC_ATTN_ROUTING_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attn/routing.h"
#include "kernels/vec.h"

typedef struct {
    int B, H, T, M, S, D, causal, C, W, wq, wk, R;
    int threads; /* of the shape: the per-thread scratch is laid out for this many */
    float scale;
    size_t thread_floats; /* per-thread scratch */
    /* workspace offsets in floats */
    size_t masks_off, lists_off, assign_off, m_off, l_off, delta_off, rowm_off, rowl_off, kg_off, vg_off, dkg_off,
        dvg_off, qg_off, dog_off, og_off, sc_off, dp_off, sel_off, inv_off, best_off, threads_off, total;
} rt_geom;

typedef struct {
    int *qsel, *ksel;
    uint64_t *qmask, *kmask;
} rt_plan;

rt_geom rt_geom_of(const lc_attn_shape *s, const lc_attn_routing_opts *o, int nthreads);
rt_plan rt_plan_at(const rt_geom *g, float *work, int b, int h);
/* Builds the plans of every (b, h) with centroids cent [H][C][D]; with assign != 0 also records each
 * query's and key's nearest centroid for rt_update_centroids. */
void rt_build_plans(const rt_geom *g, const lc_attn_tensors *t, const float *cent, int assign, float *work);
/* The EMA update of live from the snapshot used (see routing.h), from the assignments of the last
 * rt_build_plans(assign = 1); parallel, deterministic. */
void rt_update_centroids(const rt_geom *g, const lc_attn_routing_opts *o, const lc_attn_tensors *t, const float *used,
                         float *live, float *work);

/* Whether c is the lowest centroid shared by masks a and b (both W words; bit c is known to be set in both). */
static inline int rt_lowest_common_is(const uint64_t *a, const uint64_t *b, int W, int c) {
    const int word = c >> 6;
    for (int i = 0; i < word; i++)
        if (a[i] & b[i]) return 0;
    const uint64_t below = (c & 63) ? (((uint64_t)1 << (c & 63)) - 1) : 0;
    (void)W;
    return (a[word] & b[word] & below) == 0;
}

/* Whether mask a has a centroid below c. */
static inline int rt_in_lower_centroid(const uint64_t *a, int c) {
    const int word = c >> 6;
    for (int i = 0; i < word; i++)
        if (a[i]) return 1;
    return (c & 63) && (a[word] & (((uint64_t)1 << (c & 63)) - 1)) != 0;
}

/* Whether a and b share any centroid. */
static inline int rt_share_any(const uint64_t *a, const uint64_t *b, int W) {
    for (int i = 0; i < W; i++)
        if (a[i] & b[i]) return 1;
    return 0;
}

/* Row addresses and dot products: lc_view_row (attn.h) and lc_vdot (kernels/vec.h) under short names. */
static inline const float *rt_row(const lc_view *v, int b, int r, int h, int D) { return lc_view_row(v, b, r, h, D); }
static inline float *rt_row_w(const lc_view *v, int b, int r, int h, int D) { return lc_view_row(v, b, r, h, D); }
static inline float rt_dot(const float *a, const float *b, int D) { return lc_vdot(a, b, D); }

#endif
