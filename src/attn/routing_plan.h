/* Private to the routing kind (routing.c, routing_plan.c): the geometry of one call, the workspace layout,
 * the routing plan of one (batch, head) and the small vector helpers.
 *
 * Plan of one (b, h), all ints, members in increasing position order:
 *   qsel[C][wq], ksel[C][wk]          the queries / keys of each centroid
 *   qoff[T + 1], qcl[C wq]            for query t: its centroids qcl[qoff[t] .. qoff[t + 1]) (increasing)
 *   koff[S + 1], kcl[C wk]            for key s: its centroids kcl[koff[s] .. koff[s + 1]) (increasing)
 * Workspace (floats): 16 | plans of all (b, h) | delta [B H T] | assignments [B H (T + S)] ints |
 * per-thread scratch. The per-thread scratch serves the top-w selection (score/index pairs), the row
 * passes (stamp array, key or query list, scores, two accumulators) and the centroid sums (doubles). */
#ifndef LC_ATTN_ROUTING_PLAN_H
#define LC_ATTN_ROUTING_PLAN_H

#include <stddef.h>
#include <string.h>

#include "attn/routing.h"

typedef struct {
    int B, H, T, M, S, D, causal, C, wq, wk;
    float scale;
    int list_cap;          /* longest key list of a query / query list of a key */
    size_t plan_ints;      /* ints of one (b, h) plan */
    size_t thread_floats;  /* per-thread scratch */
    size_t plans_off, delta_off, assign_off, threads_off, total; /* workspace offsets, floats */
} rt_geom;

typedef struct {
    int *qsel, *ksel, *qoff, *qcl, *koff, *kcl;
} rt_plan;

rt_geom rt_geom_of(const lc_attn_shape *s, const lc_attn_routing_opts *o, int nthreads);
rt_plan rt_plan_at(const rt_geom *g, float *work, int b, int h);
/* Builds the plans of every (b, h) with centroids cent [H][C][D] (parallel over threads). */
void rt_build_plans(const rt_geom *g, const lc_attn_tensors *t, const float *cent, float *work);
/* The EMA update of live from the snapshot used (see routing.h), parallel, deterministic. */
void rt_update_centroids(const rt_geom *g, const lc_attn_routing_opts *o, const lc_attn_tensors *t, const float *used,
                         float *live, float *work);
float *rt_thread_scratch(const rt_geom *g, float *work, int thread);

static inline const float *rt_row(const lc_view *v, int b, int r, int h, int D) {
    return v->p + (long)b * v->sb + (long)r * v->st + (long)h * D;
}
static inline float *rt_row_w(const lc_view *v, int b, int r, int h, int D) {
    return v->p + (long)b * v->sb + (long)r * v->st + (long)h * D;
}

typedef float rt_v16 __attribute__((vector_size(64)));

static inline float rt_dot(const float *restrict a, const float *restrict b, int D) {
    rt_v16 acc = {0};
    int d = 0;
    for (; d + 16 <= D; d += 16) {
        rt_v16 x, y;
        memcpy(&x, a + d, sizeof x);
        memcpy(&y, b + d, sizeof y);
        acc += x * y;
    }
    float tail = 0;
    for (; d < D; d++) tail += a[d] * b[d];
    float lanes[16];
    memcpy(lanes, &acc, sizeof lanes);
    for (int l = 0; l < 8; l++) lanes[l] += lanes[l + 8];
    for (int l = 0; l < 4; l++) lanes[l] += lanes[l + 4];
    return tail + ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
}

/* y += a x */
static inline void rt_axpy(float *restrict y, float a, const float *restrict x, int D) {
    int d = 0;
    const rt_v16 av = (rt_v16){0} + a;
    for (; d + 16 <= D; d += 16) {
        rt_v16 xv, yv;
        memcpy(&xv, x + d, sizeof xv);
        memcpy(&yv, y + d, sizeof yv);
        yv += av * xv;
        memcpy(y + d, &yv, sizeof yv);
    }
    for (; d < D; d++) y[d] += a * x[d];
}

#endif
