/* The `routing` attention kind (routing.h): options, state, and the attention passes over the routing
 * plan built by routing_plan.c.
 *
 * Forward: copy live centroids to the snapshot, build the plan from the snapshot, then one task per query
 * row: gather its keys (itself, then the keys of each of its centroids in centroid order; a per-thread
 * stamp array drops duplicates and, when causal, keys after the query stop each sorted list), scores,
 * softmax, out and lse. With train != 0 the centroids are then updated (routing_plan.c).
 * Backward (deterministic, no atomics), Delta_t = dout_t . out_t:
 *   one task per query row:  dq_t = scale sum_s dS(t,s) k_s over the same key list as forward;
 *   one task per key row:    dv_s = sum_t P(t,s) dout_t, dk_s = scale sum_t dS(t,s) q_t over the queries
 *                            that see s (the query at s itself, then the members of each centroid of s);
 * with P = exp(scale q.k - lse) and dS = P (dout.v - Delta) recomputed. */
#include "attn/routing.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/routing_plan.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/fastmath.h"

static void routing_opts_init(void *opts, int H) {
    lc_attn_routing_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->clusters = 8;
    o->window = 0;
    o->decay = 0.999f;
    (void)H;
}

static int routing_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_routing_opts *o = opts;
    (void)H;
    if (strcmp(key, "clusters") == 0) return lc_attn_opt_int(key, value, 1, 4096, &o->clusters, err, errlen);
    if (strcmp(key, "window") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->window, err, errlen);
    if (strcmp(key, "decay") == 0) return lc_attn_opt_float(key, value, 0.0, 1.0, &o->decay, err, errlen);
    return lc_attn_opt_unknown(&lc_attn_routing, key, err, errlen);
}

static int routing_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                         size_t errlen) {
    const lc_attn_routing_opts *o = opts;
    if (o->clusters < 1) return snprintf(err, errlen, "routing: clusters=%d must be >= 1", o->clusters), -1;
    if (o->window < 0) return snprintf(err, errlen, "routing: window=%d must be >= 1", o->window), -1;
    if (!(o->decay >= 0.0f && o->decay <= 1.0f))
        return snprintf(err, errlen, "routing: decay=%g must be in [0, 1]", (double)o->decay), -1;
    if (s->relpos) return snprintf(err, errlen, "routing: relative positions are not supported"), -1;
    if (s->window) return snprintf(err, errlen, "routing: same_length / window is not supported"), -1;
    if (global) return snprintf(err, errlen, "routing: global tokens are not supported"), -1;
    if ((double)s->B * s->H * ((double)s->M + 2.0 * s->T) >= (double)INT_MAX)
        return snprintf(err, errlen, "routing: B*H*(M+2T) must stay below 2^31"), -1;
    return 0;
}

size_t lc_attn_routing_state_floats(const void *opts, int H, int D) {
    const lc_attn_routing_opts *o = opts;
    return 2 * (size_t)H * (size_t)o->clusters * (size_t)D;
}

/* Live centroids: normalised N(0, 1) vectors drawn in order h, c, d; the snapshot is a copy. */
void lc_attn_routing_state_init(float *state, const void *opts, int H, int D, uint64_t seed) {
    const lc_attn_routing_opts *o = opts;
    const size_t n = (size_t)H * o->clusters;
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        float *mu = state + i * D;
        double n2 = 0;
        for (;;) {
            n2 = 0;
            for (int d = 0; d < D; d++) mu[d] = lc_rng_normal(&rng), n2 += (double)mu[d] * mu[d];
            if (n2 > 0) break;
        }
        const double inv = 1.0 / sqrt(n2);
        for (int d = 0; d < D; d++) mu[d] = (float)(mu[d] * inv);
    }
    memcpy(state + n * D, state, sizeof(float) * n * D);
}

size_t lc_attn_routing_workspace(const lc_attn_shape *s, const void *opts, int nthreads) {
    if (nthreads < 1) nthreads = 1;
    return rt_geom_of(s, opts, nthreads).total;
}

static void check_args(const lc_attn_shape *s, const lc_attn_routing_opts *o, const lc_attn_tensors *t) {
    assert(o && o->clusters >= 1 && o->window >= 0);
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(!s->window && !t->rel && !t->global);
    assert(t->state);
    (void)s, (void)o, (void)t;
}

/* Row scratch of one thread: stamp [max(T, S)] ints, list [cap] ints, scores [cap], two D accumulators. */
typedef struct {
    int *stamp, *list;
    float *scores, *acc_a, *acc_b;
} rt_rows;

static size_t round16(size_t n) { return (n + 15) / 16 * 16; }

static rt_rows rows_of(const rt_geom *g, float *work, int thread) {
    float *base = rt_thread_scratch(g, work, thread);
    const size_t N = round16((size_t)(g->T > g->S ? g->T : g->S > 0 ? g->S : 1)), L = round16((size_t)g->list_cap);
    rt_rows r;
    r.stamp = (int *)base;
    r.list = (int *)(base + N);
    r.scores = base + N + L;
    r.acc_a = base + N + 2 * L;
    r.acc_b = r.acc_a + round16((size_t)g->D);
    const int n = g->T > g->S ? g->T : g->S;
    for (int i = 0; i < n; i++) r.stamp[i] = -1;
    return r;
}

/* The keys query `row` of (b, h) sees, in a fixed order; returns the count. id: the row's unique id. */
static int keys_of(const rt_geom *g, const rt_plan *p, int row, int id, const rt_rows *r) {
    const int pos = g->M + row;
    int n = 0;
    r->list[n++] = pos;
    r->stamp[pos] = id;
    for (int ci = p->qoff[row]; ci < p->qoff[row + 1]; ci++) {
        const int *keys = p->ksel + (size_t)p->qcl[ci] * g->wk;
        for (int j = 0; j < g->wk; j++) {
            const int s = keys[j];
            if (g->causal && s > pos) break;
            if (r->stamp[s] != id) r->stamp[s] = id, r->list[n++] = s;
        }
    }
    return n;
}

/* The queries that see key s of (b, h), in a fixed order; returns the count. id: the key's unique id. */
static int queries_of(const rt_geom *g, const rt_plan *p, int s, int id, const rt_rows *r) {
    int n = 0;
    if (s >= g->M) r->list[n++] = s - g->M, r->stamp[s - g->M] = id;
    for (int ci = p->koff[s]; ci < p->koff[s + 1]; ci++) {
        const int *queries = p->qsel + (size_t)p->kcl[ci] * g->wq;
        for (int j = 0; j < g->wq; j++) {
            const int t = queries[j];
            if (g->causal && g->M + t < s) continue;
            if (r->stamp[t] != id) r->stamp[t] = id, r->list[n++] = t;
        }
    }
    return n;
}

static void forward_row(const rt_geom *g, const lc_attn_tensors *t, const rt_plan *p, int b, int h, int row, int id,
                        const rt_rows *r) {
    const int D = g->D, n = keys_of(g, p, row, id, r);
    const float *q = rt_row(&t->q, b, row, h, D);
    float max = -INFINITY;
    for (int j = 0; j < n; j++) {
        const float sc = g->scale * rt_dot(q, rt_row(&t->k, b, r->list[j], h, D), D);
        r->scores[j] = sc;
        max = sc > max ? sc : max;
    }
    float sum = 0;
    for (int j = 0; j < n; j++) r->scores[j] = lc_expf(r->scores[j] - max);
    for (int j = 0; j < n; j++) sum += r->scores[j];
    memset(r->acc_a, 0, sizeof(float) * (size_t)D);
    for (int j = 0; j < n; j++) rt_axpy(r->acc_a, r->scores[j], rt_row(&t->v, b, r->list[j], h, D), D);
    const float inv = 1.0f / sum; /* n >= 1: the query sees itself */
    float *out = rt_row_w(&t->out, b, row, h, D);
    for (int e = 0; e < D; e++) out[e] = r->acc_a[e] * inv;
    t->lse[((long)b * g->H + h) * g->T + row] = max + logf(sum);
}

void lc_attn_routing_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_routing_opts *o = opts;
    check_args(s, o, t);
    const int nthreads = lc_get_threads();
    const rt_geom g = rt_geom_of(s, o, nthreads);
    const size_t cent = (size_t)g.H * g.C * g.D;
    float *live = t->state, *used = t->state + cent;
    memcpy(used, live, sizeof(float) * cent);
    if (g.S == 0) return;
    rt_build_plans(&g, t, used, work);
    const long rows = (long)g.B * g.H * g.T;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
        const rt_rows r = rows_of(&g, work, lc_thread_id());
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (long i = 0; i < rows; i++) {
            const int row = (int)(i % g.T), h = (int)(i / g.T % g.H), b = (int)(i / g.T / g.H);
            const rt_plan p = rt_plan_at(&g, work, b, h);
            forward_row(&g, t, &p, b, h, row, (int)i, &r);
        }
    }
    if (t->train) rt_update_centroids(&g, o, t, used, live, work);
}

static void dq_row(const rt_geom *g, const lc_attn_tensors *t, const rt_plan *p, const float *delta, int b, int h,
                   int row, int id, const rt_rows *r) {
    const int D = g->D, n = keys_of(g, p, row, id, r);
    const long li = ((long)b * g->H + h) * g->T + row;
    const float *q = rt_row(&t->q, b, row, h, D), *dout = rt_row(&t->dout, b, row, h, D);
    const float lse = t->lse[li], dl = delta[li];
    memset(r->acc_a, 0, sizeof(float) * (size_t)D);
    for (int j = 0; j < n; j++) {
        const int s = r->list[j];
        const float *k = rt_row(&t->k, b, s, h, D);
        const float prob = lc_expf(g->scale * rt_dot(q, k, D) - lse);
        rt_axpy(r->acc_a, prob * (rt_dot(dout, rt_row(&t->v, b, s, h, D), D) - dl), k, D);
    }
    float *dq = rt_row_w(&t->dq, b, row, h, D);
    for (int e = 0; e < D; e++) dq[e] = g->scale * r->acc_a[e];
}

static void dkv_row(const rt_geom *g, const lc_attn_tensors *t, const rt_plan *p, const float *delta, int b, int h,
                    int key, int id, const rt_rows *r) {
    const int D = g->D, n = queries_of(g, p, key, id, r);
    const long r0 = ((long)b * g->H + h) * g->T;
    const float *k = rt_row(&t->k, b, key, h, D), *v = rt_row(&t->v, b, key, h, D);
    memset(r->acc_a, 0, sizeof(float) * (size_t)D);
    memset(r->acc_b, 0, sizeof(float) * (size_t)D);
    for (int j = 0; j < n; j++) {
        const int row = r->list[j];
        const float *q = rt_row(&t->q, b, row, h, D), *dout = rt_row(&t->dout, b, row, h, D);
        const float prob = lc_expf(g->scale * rt_dot(q, k, D) - t->lse[r0 + row]);
        rt_axpy(r->acc_b, prob, dout, D);
        rt_axpy(r->acc_a, prob * (rt_dot(dout, v, D) - delta[r0 + row]), q, D);
    }
    float *dk = rt_row_w(&t->dk, b, key, h, D), *dv = rt_row_w(&t->dv, b, key, h, D);
    for (int e = 0; e < D; e++) dk[e] = g->scale * r->acc_a[e], dv[e] = r->acc_b[e];
}

void lc_attn_routing_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_routing_opts *o = opts;
    check_args(s, o, t);
    const int nthreads = lc_get_threads();
    const rt_geom g = rt_geom_of(s, o, nthreads);
    if (g.S == 0) return;
    const float *used = t->state + (size_t)g.H * g.C * g.D;
    rt_build_plans(&g, t, used, work);
    float *delta = work + g.delta_off;
    const long rows = (long)g.B * g.H * g.T, keys = (long)g.B * g.H * g.S;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
        const int me = lc_thread_id();
        rt_rows r = rows_of(&g, work, me);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long i = 0; i < rows; i++) {
            const int row = (int)(i % g.T), h = (int)(i / g.T % g.H), b = (int)(i / g.T / g.H);
            const float *dout = rt_row(&t->dout, b, row, h, g.D), *out = rt_row(&t->out, b, row, h, g.D);
            double sum = 0;
            for (int e = 0; e < g.D; e++) sum += (double)dout[e] * out[e];
            delta[i] = (float)sum;
        }
        /* the implicit barrier of omp for: delta is complete */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (long i = 0; i < rows; i++) {
            const int row = (int)(i % g.T), h = (int)(i / g.T % g.H), b = (int)(i / g.T / g.H);
            const rt_plan p = rt_plan_at(&g, work, b, h);
            dq_row(&g, t, &p, delta, b, h, row, (int)i, &r);
        }
        r = rows_of(&g, work, me); /* stamps now mark query rows: start afresh */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (long i = 0; i < keys; i++) {
            const int key = (int)(i % g.S), h = (int)(i / g.S % g.H), b = (int)(i / g.S / g.H);
            const rt_plan p = rt_plan_at(&g, work, b, h);
            dkv_row(&g, t, &p, delta, b, h, key, (int)i, &r);
        }
    }
}

const lc_attn_kind lc_attn_routing = {
    .name = "routing",
    .options_help = "clusters=<centroids per head, default 8> window=<members per centroid, default ceil(S/C)> "
                    "decay=<centroid EMA decay, default 0.999>",
    .opts_size = sizeof(lc_attn_routing_opts),
    .opts_init = routing_opts_init,
    .opts_set = routing_opts_set,
    .check = routing_check,
    .workspace_floats = lc_attn_routing_workspace,
    .forward = lc_attn_routing_forward,
    .backward = lc_attn_routing_backward,
    .state_floats = lc_attn_routing_state_floats,
    .state_init = lc_attn_routing_state_init,
};
